//! Snapshots: the engine, the history's recorder and the read side written
//! together at one command sequence, so a restart reads them and replays
//! only the commands after it. The engine thread copies the three between
//! batches (it holds all of them then) and goes on; a writer thread of its
//! own encodes the copy and stores it. The store chooses the bytes.

use std::sync::{Arc, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use weiport_storage::Store;

use crate::catalog::Catalog;
use crate::engine::{Engine, EngineImage};
use crate::history::Recorder;
use crate::view::{View, ViewImage};

use super::Log;

/// The snapshot's shape. Raised whenever a type written in it changes
/// (a field, a variant, their order: the bytes name none of them): a
/// snapshot of another format is not read, the log is replayed.
pub const FORMAT: u32 = 2;

/// The three at one sequence, copied.
#[derive(Serialize, Deserialize)]
pub(super) struct Image {
    engine: EngineImage,
    recorder: Recorder,
    view: ViewImage,
}

impl Image {
    /// Copies the state after the log's last command, into `spare`'s
    /// memory when given (an earlier image).
    pub(super) fn take(
        engine: &mut Engine,
        recorder: &mut Recorder,
        view: &View,
        spare: Option<Self>,
    ) -> Self {
        let (engine_spare, recorder_spare) = match spare {
            Some(spare) => (Some(spare.engine), Some(spare.recorder)),
            None => (None, None),
        };
        Self {
            engine: engine.image(engine_spare),
            recorder: recorder.copy(recorder_spare),
            view: view.image(),
        }
    }
}

/// The thread writing the latest snapshot, while it runs, and the image it
/// wrote, kept for the next copy to reuse. One at a time: a later snapshot
/// is never overwritten by an earlier one. Dropping it waits for the
/// write, so an engine that stops leaves its last snapshot whole.
#[derive(Default)]
pub(super) struct Writer {
    thread: Option<JoinHandle<Image>>,
    spare: Option<Image>,
}

impl Writer {
    /// Whether a snapshot is still being written.
    pub(super) fn busy(&self) -> bool {
        self.thread
            .as_ref()
            .is_some_and(|thread| !thread.is_finished())
    }

    /// The last image written (or warmed), whose memory the next copy
    /// reuses.
    pub(super) fn spare(&mut self) -> Option<Image> {
        self.wait();
        self.spare.take()
    }

    /// Keeps `image` as the next copy's memory without writing it: taken
    /// where a pause costs nobody (at start), so the first snapshot under
    /// load copies into memory already mapped.
    pub(super) fn keep(&mut self, image: Image) {
        self.spare = Some(image);
    }

    /// Writes `image`, the state after command `sequence`, on a thread of
    /// its own; `copied` is what taking it cost the engine.
    pub(super) fn write(&mut self, store: &Store, image: Image, sequence: u64, copied: Duration) {
        self.wait();
        let store = store.clone();
        let spawned = std::thread::Builder::new()
            .name("weiport-snapshot".into())
            .spawn(move || {
                run_in_the_background();
                write(&store, &image, sequence, copied);
                image
            });
        match spawned {
            Ok(thread) => self.thread = Some(thread),
            Err(error) => {
                tracing::warn!(%error, sequence, "no thread to write the exchange snapshot")
            }
        }
    }

    fn wait(&mut self) {
        if let Some(thread) = self.thread.take() {
            self.spare = thread.join().ok();
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.wait();
    }
}

/// Lowers the calling thread to nice 19: encoding a large image takes a
/// core for tens of milliseconds, which at the default priority the engine
/// and the request workers shared with it. Not `SCHED_IDLE`: with it more
/// commands waited 3–4 ms during a write (p99 of commands one by one 4 ms
/// against 1 ms, measured on two cores). A refusal changes nothing else.
fn run_in_the_background() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `setpriority` takes plain integers; who 0 names the
        // calling thread (Linux keeps a nice value per thread).
        let result = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 19) };
        if result != 0 {
            tracing::debug!(
                error = %std::io::Error::last_os_error(),
                "the snapshot writer keeps the default priority"
            );
        }
    }
}

fn write(store: &Store, image: &Image, sequence: u64, copied: Duration) {
    let started = Instant::now();
    match store.put_exchange_snapshot(FORMAT, sequence, image) {
        Ok(bytes) => tracing::info!(
            sequence,
            bytes,
            copied = ?copied,
            written = ?started.elapsed(),
            "exchange snapshot written"
        ),
        // A missing snapshot costs a longer replay, nothing else.
        Err(error) => tracing::warn!(%error, sequence, "writing the exchange snapshot failed"),
    }
}

/// When the engine thread writes its next snapshot, and the read side it
/// writes with the engine.
pub(super) struct Snapshots {
    pub(super) every: Arc<std::sync::atomic::AtomicU64>,
    /// The sequence of the last one (written or read at start).
    pub(super) at: u64,
    pub(super) view: Arc<RwLock<View>>,
    pub(super) writer: Writer,
    /// Where the last copy's cost is told ([`super::Sequencer::snapshot_pause`]).
    pub(super) paused: Arc<std::sync::atomic::AtomicU64>,
}

/// Writes a snapshot when `every` commands have come since the last one
/// and the one before is written (else it waits for a later batch).
/// Between batches the engine, the recorder and the read side agree: all
/// three stand after the log's last command. The engine waits only for the
/// copy; the writer's thread encodes and stores it.
pub(super) fn if_due(log: &mut Log, engine: &mut Engine, recorder: &mut Recorder) {
    let every = log
        .snapshots
        .every
        .load(std::sync::atomic::Ordering::Relaxed);
    let last = log.next - 1;
    if every == 0 || last < log.snapshots.at.saturating_add(every) || log.snapshots.writer.busy() {
        return;
    }
    let started = std::time::Instant::now();
    let image = take_image(log, engine, recorder);
    let copied = started.elapsed();
    let micros = u64::try_from(copied.as_micros()).unwrap_or(u64::MAX).max(1);
    log.snapshots
        .paused
        .store(micros, std::sync::atomic::Ordering::Relaxed);
    log.snapshots.writer.write(&log.store, image, last, copied);
    log.snapshots.at = last;
}

/// Copies the engine, the recorder and the read side for a snapshot.
fn take_image(log: &mut Log, engine: &mut Engine, recorder: &mut Recorder) -> Image {
    let spare = log.snapshots.writer.spare();
    let view = log
        .snapshots
        .view
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    Image::take(engine, recorder, &view, spare)
}

/// Takes a copy only to keep its memory for the first snapshot's, when
/// snapshots are on: done at start, before any client waits on the engine.
pub(super) fn warm(log: &mut Log, engine: &mut Engine, recorder: &mut Recorder) {
    let every = log
        .snapshots
        .every
        .load(std::sync::atomic::Ordering::Relaxed);
    if every > 0 && !log.snapshots.writer.busy() {
        let image = take_image(log, engine, recorder);
        log.snapshots.writer.keep(image);
    }
}

/// The state a snapshot gave back, at `sequence`.
pub(super) struct Restored {
    pub(super) engine: Engine,
    pub(super) recorder: Recorder,
    pub(super) view: View,
    pub(super) sequence: u64,
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
    let (sequence, stored) = match store.exchange_snapshot::<Image>(FORMAT) {
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
    let view = View::from_image(stored.view, stored.recorder.open_orders());
    let Some(view) = view.filter(|view| {
        view.sequence == sequence
            && view.markets.len() == markets
            && stored.recorder.markets() == markets
    }) else {
        return dropped(&"its parts disagree with each other or with the markets");
    };
    let engine = match Engine::from_image(catalog.clone(), fee_account, stored.engine) {
        Ok(engine) => engine,
        Err(error) => return dropped(&error),
    };
    Some(Restored {
        engine,
        recorder: stored.recorder,
        view,
        sequence,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::tests::{ETH, FEES, USDT, a, engine, limit, order, two_markets};
    use crate::engine::{Command, Event};
    use crate::order::{OrderType, Side, TimeInForce, Trigger};

    /// An engine, recorder and read side after a few commands of each kind
    /// that leaves state behind: resting orders (one partly filled, one
    /// with a client id), a conditional order waiting, a withdrawal.
    fn state() -> (Engine, Recorder, View) {
        let catalog = two_markets();
        let (mut engine, mut recorder, mut view) =
            (engine(), Recorder::new(&catalog), View::new(&catalog));
        let mut stop = order(Side::Sell, OrderType::StopLoss, TimeInForce::Gtc, "1", None);
        stop.trigger = Some(Trigger {
            stop_price: Some(a("1500")),
            trailing_delta: None,
        });
        let mut named = limit(Side::Buy, "2", "1990");
        named.client_order_id = Some("mine-1".into());
        let placed = [
            (1, limit(Side::Buy, "1", "2000")),
            (2, limit(Side::Sell, "0.4", "2000")),
            (2, limit(Side::Sell, "3", "2100")),
            (1, named),
            (2, stop),
        ];
        let mut commands: Vec<Command> = placed
            .into_iter()
            .enumerate()
            .map(|(n, (account, order))| Command::Place {
                account,
                order,
                time_ms: 1_000 + n as u64,
            })
            .collect();
        commands.push(Command::Withdraw {
            account: 1,
            asset: ETH,
            amount: a("1"),
            fee: a("0.01"),
            client_id: Some("out".into()),
            destination: [7; 20],
            requested_ms: 2_000,
            network: 0,
        });
        commands.push(Command::Credit {
            account: 3,
            asset: USDT,
            amount: a("5"),
        });
        for command in commands {
            let events = engine.apply(command.clone());
            assert!(
                !matches!(events.first(), Some(Event::Rejected(_))),
                "{events:?}"
            );
            let changes = recorder.record(&command, &events);
            view.apply(command.time_ms(), &events, &changes);
        }
        (engine, recorder, view)
    }

    fn fnv1a(bytes: &[u8]) -> u64 {
        bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
            (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
        })
    }

    #[test]
    fn an_image_reads_back_as_the_state_it_was_taken_of() {
        let (mut engine, mut recorder, view) = state();
        let image = Image::take(&mut engine, &mut recorder, &view, None);
        let written = postcard::to_stdvec(&image).unwrap();
        let read: Image = postcard::from_bytes(&written).unwrap();
        let restored_view = View::from_image(read.view, read.recorder.open_orders()).unwrap();
        let restored = Engine::from_image(two_markets(), FEES, read.engine).unwrap();
        assert_eq!(restored.snapshot(), engine.snapshot());
        let json = |view: &View| serde_json::to_value(view).unwrap();
        assert_eq!(json(&restored_view), json(&view));
        assert_eq!(restored_view.accounts[&1].open.len(), 2);
    }

    /// The bytes name no field and no variant: a type written in a snapshot
    /// that changes shape reads as garbage, or fails, under the old format
    /// number. This pins the bytes of one state; when it fails, raise
    /// [`FORMAT`] and pin the new bytes.
    #[test]
    fn the_bytes_of_a_snapshot_are_those_of_its_format() {
        let (mut engine, mut recorder, view) = state();
        let image = Image::take(&mut engine, &mut recorder, &view, None);
        let bytes = postcard::to_stdvec(&image).unwrap();
        assert_eq!(
            (FORMAT, bytes.len(), fnv1a(&bytes)),
            (2, 1143, 15_543_840_571_796_072_989),
            "the snapshot's bytes changed: raise FORMAT and pin them"
        );
    }
}
