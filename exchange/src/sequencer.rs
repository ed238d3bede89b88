//! The sequencer: one thread owns the engine; callers send commands over a
//! bounded channel and await the outcome. Each batch is applied, written to
//! the command log as one synced RocksDB batch (group commit), and only then
//! acknowledged and published. On start the log is replayed, which rebuilds
//! books, balances and id counters exactly.

use std::sync::mpsc::{
    Receiver, RecvTimeoutError, SyncSender, TryRecvError, TrySendError, sync_channel,
};
use std::sync::{Arc, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::{broadcast, oneshot};
use weiport_storage::{JournalEntry, StorageError, Store};

use crate::catalog::Catalog;
use crate::engine::{Command, Engine, Event};
use crate::history::{Changes, Recorder};
use crate::now_ms;
use crate::view::{BookSnapshot, MarketView, View};

mod records;
mod replay;
mod replication;
mod snapshot;

use replay::{Replayed, replay};

use records::{from_record, to_record};
pub use replication::{Deposed, Replication, Role};
pub use snapshot::FORMAT as SNAPSHOT_FORMAT;

/// Most commands written in one group commit.
const MAX_BATCH: usize = 1024;

/// Why a command could not be sequenced.
#[derive(Debug, thiserror::Error)]
pub enum SequencerError {
    /// The log could not be read or written.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The log holds something this build cannot replay.
    #[error("command log entry {sequence} cannot be replayed: {reason}")]
    Corrupt {
        /// Its sequence number.
        sequence: u64,
        /// Why.
        reason: &'static str,
    },
    /// The stored history could not be read to sum its candles.
    #[error(transparent)]
    History(#[from] crate::history::HistoryError),
    /// The engine thread stopped; nothing more is accepted.
    #[error("the exchange engine has stopped")]
    Stopped,
    /// The command log could not be written (a full disk): the command was
    /// not applied, and commands are refused until the store takes writes again.
    #[error("the command log cannot be written now; the command was not applied")]
    Unwritable,
    /// Another process appended to the replicated journal: this one is no
    /// longer the primary, and the command was not applied.
    #[error("this process is no longer the exchange's primary; the command was not applied")]
    Deposed,
    /// This process follows the primary's journal and sequences nothing itself.
    #[error("this process follows the exchange's primary; send commands to the primary")]
    Following,
    /// This process leads: it sequences commands and applies no journal entries.
    #[error("this process leads the exchange; it applies no journal entries")]
    Leading,
}

/// What an acknowledged command did.
#[derive(Debug)]
pub struct Outcome {
    /// Its place in the command log (0 for a refused command, which is not logged).
    pub sequence: u64,
    /// Its engine time (none for credits and debits).
    pub time_ms: Option<u64>,
    /// The engine's events (a refusal is one `Rejected`).
    pub events: Vec<Event>,
    /// What it changed in the history.
    pub changes: Changes,
}

impl Outcome {
    /// Whether the command was accepted (and logged).
    pub fn accepted(&self) -> bool {
        !matches!(self.events.first(), Some(Event::Rejected(_)))
    }
}

/// A consumer of what the exchange commits: the read side, the published
/// feed, and whatever else follows the exchange (streams, deposits).
///
/// Called on the engine thread once a group commit is durable, with its
/// accepted outcomes in log order, before any of their callers is answered:
/// a sink sees every accepted command exactly once and in order, and a
/// client that got its answer reads its own write. It must be quick and must
/// not fail; slow work belongs on the sink's own thread.
pub trait Sink: Send {
    /// Sees the read side as the replayed log left it, once, before the
    /// first batch: where the sink's own state starts.
    fn opened(&mut self, _view: &View) {}

    /// Takes one durable batch's accepted outcomes.
    fn committed(&mut self, outcomes: &[Arc<Outcome>]);
}

/// The in-memory read side, kept current by the engine thread.
struct ViewSink(Arc<RwLock<View>>);

impl Sink for ViewSink {
    fn committed(&mut self, outcomes: &[Arc<Outcome>]) {
        let mut view = self
            .0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for outcome in outcomes {
            view.apply(outcome.time_ms, &outcome.events, &outcome.changes);
        }
    }
}

/// The feed behind [`Sequencer::subscribe`].
impl Sink for broadcast::Sender<Arc<Outcome>> {
    fn committed(&mut self, outcomes: &[Arc<Outcome>]) {
        for outcome in outcomes {
            // No subscriber is not an error: the feed is for whoever listens.
            let _ = self.send(outcome.clone());
        }
    }
}

/// State the engine thread and its handle both reach.
type Shared<T> = Arc<std::sync::Mutex<T>>;

struct Request {
    command: Command,
    reply: Reply,
    /// The sequence the primary gave it, for a command from the journal
    /// (applied as it was, at its own time); `None` for a client's.
    sequenced: Option<u64>,
}

/// How the engine thread runs.
#[derive(Debug, Clone, Copy)]
pub struct EngineSettings {
    /// The account trading fees go to.
    pub fee_account: u64,
    /// Commands queued for the engine before submitters wait.
    pub capacity: usize,
    /// Commands between snapshots of its state (0: none).
    pub snapshot_every: u64,
}

/// Handle to the engine thread.
pub struct Sequencer {
    catalog: Arc<Catalog>,
    /// Set while this process follows another's journal: clients' commands
    /// are refused here before they reach the engine thread, which holds
    /// the role itself and refuses them again.
    following: Arc<std::sync::atomic::AtomicBool>,
    /// Whose commands the engine applies; changed by [`Sequencer::lead`]
    /// and [`Sequencer::follow`], and by the engine thread when it is deposed.
    role: Shared<Role>,
    /// Woken when the engine thread finds another process appended to the
    /// journal: it follows from then on.
    deposed: Arc<tokio::sync::Notify>,
    /// Commands between snapshots (0: none).
    snapshots: Arc<std::sync::atomic::AtomicU64>,
    /// What the last snapshot's copy cost the engine, µs (0: none yet).
    snapshot_pause: Arc<std::sync::atomic::AtomicU64>,
    /// The snapshot the engine started from (0: the whole log replayed).
    started_from: u64,
    view: Arc<RwLock<View>>,
    requests: Option<SyncSender<Request>>,
    events: broadcast::Sender<Arc<Outcome>>,
    thread: Option<JoinHandle<Engine>>,
}

impl Sequencer {
    /// Replays the command log of `store` into a new engine over the catalog's markets
    /// and starts the engine thread with a queue of `capacity` commands.
    pub fn start(
        store: Store,
        catalog: Arc<Catalog>,
        fee_account: u64,
        capacity: usize,
    ) -> Result<Self, SequencerError> {
        Self::start_with(store, catalog, fee_account, capacity, Vec::new())
    }

    /// Like [`Sequencer::start`], with `sinks` fed every batch committed from
    /// now on (after the read side and the published feed; the replayed log
    /// is not fed to them).
    pub fn start_with(
        store: Store,
        catalog: Arc<Catalog>,
        fee_account: u64,
        capacity: usize,
        sinks: Vec<Box<dyn Sink>>,
    ) -> Result<Self, SequencerError> {
        let settings = EngineSettings {
            fee_account,
            capacity,
            snapshot_every: 0,
        };
        Self::start_replicated(store, catalog, settings, sinks, Role::Alone)
    }

    /// Like [`Sequencer::start_with`], in `role`: leading, each batch made
    /// durable through the journal before it is written here and
    /// acknowledged; following, only the journal's commands applied.
    pub fn start_replicated(
        store: Store,
        catalog: Arc<Catalog>,
        settings: EngineSettings,
        sinks: Vec<Box<dyn Sink>>,
        role: Role,
    ) -> Result<Self, SequencerError> {
        let EngineSettings {
            fee_account,
            capacity,
            snapshot_every,
        } = settings;
        crate::history::build_coarse_candles(&store, &catalog)?;
        let Replayed {
            engine,
            recorder,
            view,
            next,
            clock,
            snapshot_at,
        } = replay(&store, &catalog, fee_account)?;
        let view = Arc::new(RwLock::new(view));
        let (requests, receiver) = sync_channel(capacity.max(1));
        let (events, _) = broadcast::channel(4096);
        let mut all: Vec<Box<dyn Sink>> =
            vec![Box::new(ViewSink(view.clone())), Box::new(events.clone())];
        all.extend(sinks);
        {
            let view = view
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            for sink in &mut all {
                sink.opened(&view);
            }
        }
        let callers = tokio::runtime::Handle::try_current().ok();
        let following = Arc::new(std::sync::atomic::AtomicBool::new(role.follows()));
        let role = Arc::new(std::sync::Mutex::new(role));
        let deposed = Arc::new(tokio::sync::Notify::new());
        let duty = Duty {
            role: role.clone(),
            following: following.clone(),
            deposed: deposed.clone(),
        };
        let snapshot_every = Arc::new(std::sync::atomic::AtomicU64::new(snapshot_every));
        let (snapshot_view, snapshots) = (view.clone(), snapshot_every.clone());
        let snapshot_pause = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let paused = snapshot_pause.clone();
        let thread = std::thread::Builder::new()
            .name("weiport-engine".into())
            .spawn(move || {
                schedule_for_throughput();
                let log = Log {
                    store,
                    next,
                    clock,
                    fee_account,
                    snapshots: snapshot::Snapshots {
                        every: snapshot_every,
                        at: snapshot_at,
                        view: snapshot_view,
                        writer: snapshot::Writer::default(),
                        paused,
                    },
                };
                run(engine, recorder, log, all, receiver, callers, duty)
            })
            .expect("spawning the engine thread");
        Ok(Self {
            catalog,
            following,
            role,
            deposed,
            snapshots,
            snapshot_pause,
            started_from: snapshot_at,
            view,
            requests: Some(requests),
            events,
            thread: Some(thread),
        })
    }

    /// Applies `command` and returns its events once they are durable.
    pub async fn submit(&self, command: Command) -> Result<Arc<Outcome>, SequencerError> {
        if self.following.load(std::sync::atomic::Ordering::Acquire) {
            return Err(SequencerError::Following);
        }
        self.send(command, None)
            .await?
            .await
            .map_err(|_| SequencerError::Stopped)?
    }

    /// Whether this process follows another's journal.
    pub fn is_following(&self) -> bool {
        self.following.load(std::sync::atomic::Ordering::Acquire)
    }

    /// `command` in the command log's byte layout (for sending it to the
    /// process that sequences).
    pub fn encode_command(&self, command: &Command) -> Vec<u8> {
        to_record(&self.catalog, command).encode()
    }

    /// Inverse of [`Sequencer::encode_command`].
    pub fn decode_command(&self, bytes: &[u8]) -> Result<Command, SequencerError> {
        let record = weiport_storage::CommandRecord::decode(bytes)?;
        from_record(&self.catalog, 0, record)
    }

    /// Leads from now on: clients' commands are sequenced and each batch
    /// replicated through `replication` before it is acknowledged.
    pub fn lead(&self, replication: Box<dyn Replication>) {
        *self.role.lock().unwrap_or_else(|e| e.into_inner()) = Role::Leads(replication);
        self.following
            .store(false, std::sync::atomic::Ordering::Release);
    }

    /// Follows from now on: clients' commands are refused, nothing is replicated.
    pub fn follow(&self) {
        self.following
            .store(true, std::sync::atomic::Ordering::Release);
        *self.role.lock().unwrap_or_else(|e| e.into_inner()) = Role::Follows;
    }

    /// The sequence of the snapshot this engine started from (0: it
    /// replayed the whole log).
    pub fn started_from(&self) -> u64 {
        self.started_from
    }

    /// How long the engine stopped to copy its state for the last snapshot
    /// (none taken yet: `None`). The rest of a snapshot's work is another
    /// thread's.
    pub fn snapshot_pause(&self) -> Option<Duration> {
        match self
            .snapshot_pause
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            0 => None,
            micros => Some(Duration::from_micros(micros)),
        }
    }

    /// Writes a snapshot every `commands` commands from now on (0: never).
    pub fn snapshot_every(&self, commands: u64) {
        self.snapshots
            .store(commands, std::sync::atomic::Ordering::Relaxed);
    }

    /// Completes once the engine has found another process appending to
    /// the journal (at once if it has since the last call): it follows
    /// from then on, and whoever plays the role must catch up.
    pub async fn deposed(&self) {
        self.deposed.notified().await;
    }

    /// Applies commands the primary sequenced (a journal entry), as they
    /// were: the same sequences, the same times, so the books, balances,
    /// ids and history come out identical. Returns once they are durable here.
    pub async fn apply_sequenced(&self, entry: JournalEntry) -> Result<(), SequencerError> {
        let mut answers = Vec::with_capacity(entry.commands.len());
        for (offset, record) in entry.commands.into_iter().enumerate() {
            let sequence = entry.first_sequence + offset as u64;
            let command = from_record(&self.catalog, sequence, record)?;
            answers.push(self.send(command, Some(sequence)).await?);
        }
        for answer in answers {
            let outcome = answer.await.map_err(|_| SequencerError::Stopped)??;
            if !outcome.accepted() {
                return Err(SequencerError::Corrupt {
                    sequence: outcome.sequence,
                    reason: "the primary accepted it and this engine refuses it",
                });
            }
        }
        Ok(())
    }

    /// Queues a command for the engine thread; its answer to come.
    async fn send(
        &self,
        command: Command,
        sequenced: Option<u64>,
    ) -> Result<oneshot::Receiver<Result<Arc<Outcome>, SequencerError>>, SequencerError> {
        let (reply, answer) = oneshot::channel();
        let requests = self
            .requests
            .as_ref()
            .ok_or(SequencerError::Stopped)?
            .clone();
        let request = Request {
            command,
            reply,
            sequenced,
        };
        match requests.try_send(request) {
            Ok(()) => {}
            // The queue is bounded: when it is full the caller waits here, on
            // a blocking thread, instead of memory growing.
            Err(TrySendError::Full(request)) => {
                tokio::task::spawn_blocking(move || requests.send(request).map_err(drop))
                    .await
                    .map_err(|_| SequencerError::Stopped)?
                    .map_err(|()| SequencerError::Stopped)?;
            }
            Err(TrySendError::Disconnected(_)) => return Err(SequencerError::Stopped),
        }
        Ok(answer)
    }

    /// The read side, current with every acknowledged command.
    pub fn view(&self) -> std::sync::RwLockReadGuard<'_, View> {
        self.view
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The book of `market` at its latest update, to read without holding
    /// the view (none for an unknown market).
    pub fn book(&self, market: crate::catalog::MarketId) -> Option<Arc<BookSnapshot>> {
        self.view().market(market).map(MarketView::book)
    }

    /// Every acknowledged command's events, in sequence order.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Outcome>> {
        self.events.subscribe()
    }

    /// Stops accepting commands, finishes the queued ones and returns the engine.
    pub fn shutdown(mut self) -> Option<Engine> {
        self.requests = None;
        self.thread.take()?.join().ok()
    }
}

impl Drop for Sequencer {
    fn drop(&mut self) {
        self.requests = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Puts the calling thread under `SCHED_BATCH`: the kernel then no longer lets
/// the engine, woken by the first command of a batch, preempt the request
/// worker that is still reading the rest of it. Without it, on a busy core
/// the two take turns per order (a context switch for most orders, measured);
/// with it the worker runs until it waits for the network and the engine finds
/// the whole batch queued. A refusal (a restricted sandbox) changes nothing else.
fn schedule_for_throughput() {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 0 };
        // SAFETY: `sched_setscheduler` reads the parameter block it is given,
        // which lives for the call; pid 0 names the calling thread.
        let result = unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &param) };
        if result != 0 {
            tracing::debug!(
                error = %std::io::Error::last_os_error(),
                "the engine thread keeps the default scheduling policy"
            );
        }
    }
}

/// The durable side of the engine thread.
struct Log {
    store: Store,
    /// Sequence number of the next command.
    next: u64,
    /// Engine time: wall-clock ms (or, following, the primary's), never going backwards.
    clock: u64,
    /// The engine's fee account, for rebuilding it.
    fee_account: u64,
    snapshots: snapshot::Snapshots,
}

type Reply = oneshot::Sender<Result<Arc<Outcome>, SequencerError>>;

/// A committed batch's answers, sent when dropped: by the task that carries
/// them, or where that task is dropped unrun (its runtime shutting down), so
/// no caller of a durable command is left without its outcome.
struct Answers(Vec<(Reply, Arc<Outcome>)>);

impl Drop for Answers {
    fn drop(&mut self) {
        for (reply, outcome) in self.0.drain(..) {
            let _ = reply.send(Ok(outcome));
        }
    }
}

/// The engine thread's part of the role: what it is, and whom it tells
/// when it finds itself deposed.
struct Duty {
    role: Shared<Role>,
    following: Arc<std::sync::atomic::AtomicBool>,
    deposed: Arc<tokio::sync::Notify>,
}

/// Answers a committed batch's callers. With the callers' runtime at hand the
/// answers go out from one task on it: a wake from this thread that finds a
/// worker parked costs a syscall, and the woken worker takes the core from
/// the engine, answers one caller and parks again, so answering each caller
/// from here took turns with the workers several times per batch (measured).
fn answer(callers: Option<&tokio::runtime::Handle>, answers: Answers) {
    match callers {
        Some(runtime) => drop(runtime.spawn(async move { drop(answers) })),
        None => drop(answers),
    }
}

fn run(
    mut engine: Engine,
    mut recorder: Recorder,
    mut log: Log,
    mut sinks: Vec<Box<dyn Sink>>,
    receiver: Receiver<Request>,
    callers: Option<tokio::runtime::Handle>,
    duty: Duty,
) -> Engine {
    // A long replay at start is written at once: the next start is short.
    snapshot::if_due(&mut log, &mut engine, &mut recorder);
    snapshot::warm(&mut log, &mut engine, &mut recorder);
    while let Ok(first) = receiver.recv() {
        // The workers go first: they are writing the answers of the batch
        // just committed and reading those clients' next orders, which would
        // otherwise wait a whole commit. With nothing else to run this
        // returns at once; under load the group commit about doubles (fewer
        // syncs per order, and each sync no longer waits for the core).
        std::thread::yield_now();
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match receiver.try_recv() {
                Ok(request) => batch.push(request),
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
            }
        }
        log.clock = log.clock.max(now_ms());
        let mut write = log.store.exchange_batch();
        let mut outcomes = Vec::with_capacity(batch.len());
        let mut replies = Vec::with_capacity(batch.len());
        // Held for the whole batch: a change of role waits for it, so a
        // client's command is never made durable here alone while leading
        // or following.
        let mut role = duty.role.lock().unwrap_or_else(|e| e.into_inner());
        let mut sequence = log.next;
        let mut entry = JournalEntry {
            first_sequence: log.next,
            commands: Vec::new(),
        };
        for Request {
            mut command,
            reply,
            sequenced,
        } in batch
        {
            let refused = match (&*role, sequenced) {
                (Role::Follows, None) => Some(SequencerError::Following),
                (Role::Leads(_), Some(_)) => Some(SequencerError::Leading),
                _ => None,
            };
            if let Some(refused) = refused {
                let _ = reply.send(Err(refused));
                continue;
            }
            match sequenced {
                None => command.set_time(log.clock),
                Some(given) if given == sequence => {
                    log.clock = log.clock.max(command.time_ms().unwrap_or(0));
                }
                Some(given) => {
                    let _ = reply.send(Err(SequencerError::Corrupt {
                        sequence: given,
                        reason: "the journal's command does not follow this log",
                    }));
                    continue;
                }
            }
            let record = to_record(engine.catalog(), &command);
            let events = engine.apply(command.clone());
            let changes = recorder.record(&command, &events);
            let mut outcome = Outcome {
                sequence: 0,
                time_ms: command.time_ms(),
                events,
                changes,
            };
            // Refused commands change nothing, so the log skips them.
            if outcome.accepted() {
                write.append_command(sequence, &record);
                if let Role::Leads(_) = &*role {
                    entry.commands.push(record);
                }
                outcome.changes.write(engine.catalog(), &mut write);
                outcome.sequence = sequence;
                sequence += 1;
            }
            replies.push((reply, Arc::new(outcome)));
        }
        write.set_history_sequence(sequence - 1);
        // Replicated first: the local log is never ahead of the journal.
        let replicated = match &mut *role {
            Role::Leads(replication) if sequence != log.next => replication.replicate(&entry),
            _ => Ok(()),
        };
        if replicated.is_err() {
            tracing::error!(
                "the journal has moved on without this process: refusing the batch's {} commands; another process is the primary",
                replies.len()
            );
            for (reply, _) in replies {
                let _ = reply.send(Err(SequencerError::Deposed));
            }
            // Following until whoever plays the role has caught up with
            // the journal and, holding the lease, leads again.
            *role = Role::Follows;
            duty.following
                .store(true, std::sync::atomic::Ordering::Release);
            duty.deposed.notify_one();
            // The disk holds only what the journal has: the engine is
            // rebuilt from it at once, ready for the journal's entries.
            match replay(&log.store, engine.catalog(), log.fee_account) {
                Ok(rebuilt) => {
                    (engine, recorder, log.next) = (rebuilt.engine, rebuilt.recorder, rebuilt.next);
                }
                Err(error) => {
                    tracing::error!(%error, "rebuilding the engine from the command log failed");
                    return engine;
                }
            }
            continue;
        }
        let written = if sequence == log.next {
            Ok(()) // all refused: nothing to make durable
        } else {
            write.commit()
        };
        if written.is_err() && matches!(&*role, Role::Leads(_)) {
            // The journal has the batch and this disk does not: this
            // process's log can no longer follow it by sequence. It stops;
            // a restart catches up from the journal.
            tracing::error!(
                "the command log cannot be written after the batch was replicated: stopping the engine; restart to catch up from the journal"
            );
            for (reply, _) in replies {
                let _ = reply.send(Err(SequencerError::Unwritable));
            }
            return engine;
        }
        if let Err(error) = written {
            // Memory is now ahead of disk: acknowledge nothing, and rebuild
            // the engine from what is durable once the store takes writes.
            tracing::error!(%error, "writing the command log failed (disk full?): none of the batch's {} commands was applied; refusing commands until the store takes writes again", replies.len());
            for (reply, _) in replies {
                let _ = reply.send(Err(SequencerError::Unwritable));
            }
            match recover(&log, engine.catalog(), &receiver) {
                Some(rebuilt) => {
                    (engine, recorder, log.next) = (rebuilt.engine, rebuilt.recorder, rebuilt.next);
                }
                None => return engine,
            }
            continue;
        }
        log.next = sequence;
        outcomes.extend(
            replies
                .iter()
                .filter(|(_, outcome)| outcome.accepted())
                .map(|(_, outcome)| outcome.clone()),
        );
        if !outcomes.is_empty() {
            for sink in &mut sinks {
                sink.committed(&outcomes);
            }
        }
        answer(callers.as_ref(), Answers(replies));
        snapshot::if_due(&mut log, &mut engine, &mut recorder);
    }
    engine
}

/// How often a store that refused the log is probed while commands wait.
const PROBE_EVERY: Duration = Duration::from_millis(500);

/// After a failed commit: refuses every command that arrives until a probe
/// write to the store succeeds, then replays the log into a fresh engine and
/// recorder (the read side and the sinks only ever saw durable batches, so
/// they need nothing). `None` when the sequencer is shut down meanwhile.
fn recover(log: &Log, catalog: &Arc<Catalog>, receiver: &Receiver<Request>) -> Option<Replayed> {
    let mut probes = 0u64;
    loop {
        let deadline = std::time::Instant::now() + PROBE_EVERY;
        loop {
            let wait = deadline.saturating_duration_since(std::time::Instant::now());
            match receiver.recv_timeout(wait) {
                Ok(Request { reply, .. }) => {
                    let _ = reply.send(Err(SequencerError::Unwritable));
                }
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => return None,
            }
        }
        probes += 1;
        // Rewriting the history mark with its own value changes nothing
        // but needs a synced write to go through.
        let mut probe = log.store.exchange_batch();
        probe.set_history_sequence(log.next - 1);
        if let Err(error) = probe.commit() {
            if probes.is_multiple_of(20) {
                tracing::error!(%error, "the command log still cannot be written; commands are refused");
            }
            continue;
        }
        match replay(&log.store, catalog, log.fee_account) {
            Ok(replayed) => {
                if replayed.next != log.next {
                    // RocksDB writes a batch whole or not at all; a failed
                    // write that still landed would show here.
                    tracing::error!(
                        durable = replayed.next - 1,
                        expected = log.next - 1,
                        "the command log ends elsewhere than the engine's last commit; the durable log wins"
                    );
                }
                tracing::info!(
                    commands = replayed.next - 1,
                    "the command log takes writes again; the engine was rebuilt from it and accepts commands"
                );
                return Some(replayed);
            }
            Err(error) => {
                tracing::error!(%error, "replaying the command log failed; retrying");
            }
        }
    }
}

#[cfg(test)]
mod tests;
