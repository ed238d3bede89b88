//! Snapshots: the engine, the history's recorder and the read side written
//! together at one command sequence, so a restart reads them and replays
//! only the commands after it. Written by the engine thread between
//! batches (it holds all three then); the store chooses the bytes.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use weiport_storage::Store;

use crate::catalog::Catalog;
use crate::engine::{Engine, EngineImage, StoredEngine};
use crate::history::Recorder;
use crate::view::View;

/// The snapshot's shape. Raised whenever a type written in it changes
/// meaning: a snapshot of another format is not read, the log is replayed.
pub const FORMAT: u32 = 1;

#[derive(Serialize)]
struct Image<'a> {
    engine: EngineImage<'a>,
    recorder: &'a Recorder,
    view: &'a View,
}

#[derive(Deserialize)]
struct Stored {
    engine: StoredEngine,
    recorder: Recorder,
    view: View,
}

/// The state a snapshot gave back, at `sequence`.
pub(super) struct Restored {
    pub(super) engine: Engine,
    pub(super) recorder: Recorder,
    pub(super) view: View,
    pub(super) sequence: u64,
}

/// Writes the state after command `sequence` as the store's snapshot.
pub(super) fn write(
    store: &Store,
    engine: &Engine,
    recorder: &Recorder,
    view: &View,
    sequence: u64,
) {
    let started = std::time::Instant::now();
    let image = Image {
        engine: engine.image(),
        recorder,
        view,
    };
    match store.put_exchange_snapshot(FORMAT, sequence, &image) {
        Ok(bytes) => tracing::info!(
            sequence,
            bytes,
            elapsed = ?started.elapsed(),
            "exchange snapshot written"
        ),
        // A missing snapshot costs a longer replay, nothing else.
        Err(error) => tracing::warn!(%error, sequence, "writing the exchange snapshot failed"),
    }
}

/// The store's snapshot as an engine, recorder and read side, if it has
/// one this build reads, over today's catalog, and the log reaches it.
/// One that does not fit is dropped (logged): the log is replayed whole.
pub(super) fn read(store: &Store, catalog: &Arc<Catalog>, fee_account: u64) -> Option<Restored> {
    let dropped = |why: &dyn std::fmt::Display| {
        tracing::warn!(%why, "the exchange snapshot is not used; replaying the whole command log");
        let _ = store.drop_exchange_snapshot();
        None
    };
    let (sequence, stored) = match store.exchange_snapshot::<Stored>(FORMAT) {
        Ok(Some(found)) => found,
        Ok(None) => return None,
        Err(error) => return dropped(&error),
    };
    match store.last_command_sequence() {
        Ok(last) if last >= sequence => {}
        Ok(_) => return dropped(&"it is ahead of the command log"),
        Err(error) => return dropped(&error),
    }
    let markets = catalog.markets().count();
    if stored.view.sequence != sequence
        || stored.view.markets.len() != markets
        || stored.recorder.markets() != markets
    {
        return dropped(&"its parts disagree with each other or with the markets");
    }
    let engine = match Engine::from_image(catalog.clone(), fee_account, stored.engine) {
        Ok(engine) => engine,
        Err(error) => return dropped(&error),
    };
    Some(Restored {
        engine,
        recorder: stored.recorder,
        view: stored.view,
        sequence,
    })
}
