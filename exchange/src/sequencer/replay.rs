//! Rebuilding the engine, the history's recorder and the read side from
//! the store: its snapshot, when it has one that fits, then the command
//! log after it.

use std::sync::Arc;

use weiport_storage::Store;

use super::records::from_record;
use super::{SequencerError, snapshot};
use crate::catalog::Catalog;
use crate::engine::Engine;
use crate::history::Recorder;
use crate::view::View;

pub(super) struct Replayed {
    pub(super) engine: Engine,
    pub(super) recorder: Recorder,
    pub(super) view: View,
    /// Sequence number of the next command.
    pub(super) next: u64,
    /// The latest engine time in the log.
    pub(super) clock: u64,
    /// The sequence of the snapshot it started from (0: none).
    pub(super) snapshot_at: u64,
}

/// Replays the command log of `store` into a new engine, recorder and read
/// side — from its snapshot on, when it has one that fits — writing the
/// history rows a log older than the history tables lacks.
pub(super) fn replay(
    store: &Store,
    catalog: &Arc<Catalog>,
    fee_account: u64,
) -> Result<Replayed, SequencerError> {
    let (mut engine, mut recorder, mut view, after) =
        match snapshot::read(store, catalog, fee_account) {
            Some(restored) => {
                tracing::info!(
                    sequence = restored.sequence,
                    "exchange state read from its snapshot; replaying the commands after it"
                );
                let snapshot::Restored {
                    engine,
                    recorder,
                    view,
                    sequence,
                } = restored;
                (engine, recorder, view, sequence)
            }
            None => (
                Engine::new(catalog.clone(), fee_account),
                Recorder::new(catalog),
                View::new(catalog),
                0,
            ),
        };
    // History rows are written with their commands; a log older than
    // the history tables gets its missing rows written now.
    let recorded = store.exchange_history_sequence()?;
    let mut backfill = store.exchange_batch();
    let mut backfilled = 0u64;
    let mut next = after + 1;
    let mut events = Vec::new();
    let mut clock = engine.time_ms();
    for item in store.commands_after(after) {
        let (sequence, record) = item?;
        let command = from_record(catalog, sequence, record)?;
        clock = clock.max(command.time_ms().unwrap_or(0));
        events.clear();
        engine.apply_into(command.clone(), &mut events);
        let changes = recorder.record(&command, &events);
        if sequence > recorded {
            changes.write(catalog, &mut backfill);
            backfill.set_history_sequence(sequence);
            backfilled += 1;
            if backfilled.is_multiple_of(10_000) {
                std::mem::replace(&mut backfill, store.exchange_batch()).commit()?;
            }
        }
        view.apply(command.time_ms(), &events, &changes);
        next = sequence + 1;
    }
    if backfilled > 0 {
        backfill.commit()?;
        tracing::info!(
            commands = backfilled,
            "exchange history written for older log entries"
        );
    }
    Ok(Replayed {
        engine,
        recorder,
        view,
        next,
        clock,
        snapshot_at: after,
    })
}
