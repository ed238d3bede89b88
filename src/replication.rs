//! The exchange's replicated journal wired to its engine: the catch-up of
//! this process's command log from the journal before the engine starts,
//! and the engine thread's appends.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Context;
use futures::StreamExt;
use weiport_exchange::sequencer::{Deposed, Replication, Sequencer};
use weiport_journal::{Journal, JournalConfig, JournalError, LeaseState};
use weiport_storage::{CommandRecord, JournalEntry, Store};

/// Commands per entry when a local log is first copied into an empty journal.
const SEED_BATCH: usize = 1024;

/// Opens the journal at `urls`.
pub async fn open_journal(urls: &[String], timeout: Duration) -> anyhow::Result<Journal> {
    let config = JournalConfig {
        urls: urls.to_vec(),
        stream: "WEIPORT_EXCHANGE".into(),
        replicas: urls.len().min(3),
        timeout,
    };
    // Servers started with this process may still be electing the
    // JetStream leader: a minute to answer, then the start fails.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        match Journal::open(&config).await {
            Ok(journal) => return Ok(journal),
            Err(error @ JournalError::ServerTooOld { .. }) => return Err(error.into()),
            Err(error) if tokio::time::Instant::now() < deadline => {
                tracing::warn!(%error, "the exchange's journal does not answer yet; retrying");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(error) => {
                return Err(error).context("opening the exchange's journal (cluster.nats_urls)");
            }
        }
    }
}

/// Brings `store`'s command log level with the journal: the commands the
/// journal has and the log lacks are written to it (a fresh data dir takes
/// the whole history); a log older than an empty journal is copied into it.
/// The journal's last sequence, where this process's appends continue.
pub async fn catch_up(journal: &Journal, store: &Store, writer: &str) -> anyhow::Result<u64> {
    let last = journal.last_sequence().await?;
    let local = store.last_command_sequence()?;
    if last == 0 {
        return seed(journal, store, writer).await;
    }
    let mut entries = journal.entries(1).await?;
    let mut journal_commands = 0;
    let mut copied = 0;
    while let Some(next) = entries.next().await {
        let (sequence, bytes) = next?;
        let entry = JournalEntry::decode(&bytes).context("a journal entry")?;
        let end = entry.first_sequence + entry.commands.len() as u64;
        anyhow::ensure!(
            entry.first_sequence == journal_commands + 1,
            "journal entry {sequence} starts at command {}, after command {journal_commands}",
            entry.first_sequence
        );
        journal_commands = end - 1;
        if journal_commands > local {
            let skip = local.saturating_sub(entry.first_sequence - 1) as usize;
            let tail = JournalEntry {
                first_sequence: entry.first_sequence + skip as u64,
                commands: entry.commands[skip..].to_vec(),
            };
            store.append_replicated(&tail)?;
            copied += tail.commands.len();
        }
        if sequence >= last {
            break;
        }
    }
    anyhow::ensure!(
        local <= journal_commands,
        "the data dir's command log holds {local} commands, the journal {journal_commands}: this log was not made through the journal"
    );
    tracing::info!(
        entries = last,
        commands = journal_commands,
        copied,
        "command log caught up with the journal"
    );
    Ok(last)
}

/// Copies a local log into an empty journal (the exchange becoming replicated).
async fn seed(journal: &Journal, store: &Store, writer: &str) -> anyhow::Result<u64> {
    let commands: Vec<(u64, CommandRecord)> = store.commands().collect::<Result<_, _>>()?;
    let mut last = 0;
    for chunk in commands.chunks(SEED_BATCH) {
        let entry = JournalEntry {
            first_sequence: chunk[0].0,
            commands: chunk.iter().map(|(_, command)| command.clone()).collect(),
        };
        let id = format!("{writer}-{}", entry.first_sequence);
        last = journal.append(last, &id, entry.encode().into()).await?;
    }
    if !commands.is_empty() {
        tracing::info!(
            commands = commands.len(),
            entries = last,
            "the local command log copied into the empty journal"
        );
    }
    Ok(last)
}

/// The engine thread's side: each batch appended after the journal's last
/// known entry, retried (under the same id) until the servers take it.
pub struct JournalReplication {
    journal: Journal,
    runtime: tokio::runtime::Handle,
    last: u64,
    writer: String,
    status: std::sync::Arc<ClusterStatus>,
}

impl JournalReplication {
    /// Appends after the entry the log caught up to, as this run's writer.
    pub fn new(joined: &Joined, runtime: tokio::runtime::Handle) -> Self {
        Self {
            journal: joined.journal.clone(),
            runtime,
            last: joined.caught_up,
            writer: joined.writer.clone(),
            status: joined.status.clone(),
        }
    }
}

impl Replication for JournalReplication {
    fn replicate(&mut self, entry: &JournalEntry) -> Result<(), Deposed> {
        let id = format!("{}-{}", self.writer, entry.first_sequence);
        let bytes = bytes::Bytes::from(entry.encode());
        let mut attempts = 0u32;
        loop {
            let appended =
                self.runtime
                    .block_on(self.journal.append(self.last, &id, bytes.clone()));
            match appended {
                Ok(sequence) => {
                    self.last = sequence;
                    self.status
                        .applied_entry
                        .store(sequence, std::sync::atomic::Ordering::Release);
                    return Ok(());
                }
                Err(JournalError::Fenced { expected, last }) => {
                    tracing::error!(
                        expected,
                        last,
                        "the journal moved on: another process appended"
                    );
                    return Err(Deposed);
                }
                Err(error) => {
                    // Nothing is acknowledged until the journal has it:
                    // the batch waits, and so do the commands behind it.
                    if attempts.is_multiple_of(50) {
                        tracing::warn!(%error, "the journal does not take the batch yet; retrying");
                    }
                    attempts += 1;
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
    }
}

/// This process's part in a replicated exchange, as `/admin/cluster` shows it.
pub struct ClusterStatus {
    /// This process's name.
    pub node: String,
    following: std::sync::atomic::AtomicBool,
    /// The last journal entry applied here (following) or appended (leading).
    applied_entry: std::sync::atomic::AtomicU64,
    lease: weiport_journal::Lease,
    /// Whether this process leads, for the parts that run only on the primary.
    leading: tokio::sync::watch::Sender<bool>,
    /// The lease's holder and the journal's last entry, as last read by
    /// [`ClusterStatus::observe`] (metrics and the status page read them
    /// without waiting on the journal).
    observed: std::sync::Mutex<(Option<String>, u64)>,
}

impl ClusterStatus {
    /// The answer of `GET /admin/cluster`.
    pub async fn report(&self, applied_command: u64) -> serde_json::Value {
        use std::sync::atomic::Ordering;
        let primary = self.lease.current().await.ok().flatten();
        let role = if self.following.load(Ordering::Acquire) {
            "follower"
        } else {
            "primary"
        };
        serde_json::json!({
            "node": self.node,
            "role": role,
            "primary": primary.map(|p| p.holder),
            "appliedEntry": self.applied_entry.load(Ordering::Acquire),
            "appliedSequence": applied_command,
        })
    }

    /// The lease's holder and the journal's last entry, as last observed.
    pub fn observed(&self) -> (Option<String>, u64) {
        self.observed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The entry last applied (following) or appended (leading).
    pub fn applied_entry(&self) -> u64 {
        self.applied_entry.load(Ordering::Acquire)
    }

    /// Reads the lease's holder and the journal's last entry every `every`,
    /// for as long as the runtime runs; a read that fails keeps the last.
    pub fn observe(self: &Arc<Self>, journal: Journal, every: Duration) {
        let status = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tick.tick().await;
                let Some(status) = status.upgrade() else {
                    break;
                };
                let holder = status.lease.current().await;
                let last = journal.last_sequence().await;
                let mut observed = status
                    .observed
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if let Ok(holder) = holder {
                    observed.0 = holder.map(|h| h.holder);
                }
                if let Ok(last) = last {
                    observed.1 = last;
                }
            }
        });
    }

    /// Whether this process follows.
    pub fn following(&self) -> bool {
        self.following.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Whether this process leads, now and as it changes.
    pub fn leading(&self) -> tokio::sync::watch::Receiver<bool> {
        self.leading.subscribe()
    }

    fn set_following(&self, following: bool) {
        self.following.store(following, Ordering::Release);
        self.leading.send_replace(!following);
    }
}

/// A replicated exchange at start: the journal, this process's role, and
/// where its log stands.
pub struct Joined {
    /// The journal.
    pub journal: Journal,
    /// Role and progress.
    pub status: std::sync::Arc<ClusterStatus>,
    /// The journal's last entry when the log caught up.
    pub caught_up: u64,
    /// This run's writer id.
    pub writer: String,
}

/// Takes the primary's lease if it is free (or lapsed): this process then
/// leads; otherwise it follows the holder.
pub async fn join(
    journal: Journal,
    node: &str,
    address: &str,
    writer: String,
    lease_ttl: Duration,
    caught_up: u64,
) -> anyhow::Result<Joined> {
    let lease = journal.lease("primary", node, address, lease_ttl).await?;
    let following = match lease.acquire().await? {
        LeaseState::Held { .. } => false,
        LeaseState::HeldBy(holder) => {
            tracing::info!(primary = %holder.holder, "following the exchange's primary");
            true
        }
    };
    let status = std::sync::Arc::new(ClusterStatus {
        node: node.to_owned(),
        following: std::sync::atomic::AtomicBool::new(following),
        applied_entry: std::sync::atomic::AtomicU64::new(caught_up),
        lease,
        leading: tokio::sync::watch::channel(!following).0,
        observed: std::sync::Mutex::new((None, caught_up)),
    });
    Ok(Joined {
        journal,
        status,
        caught_up,
        writer,
    })
}

/// This process's part, played until it stops: leading while it holds the
/// lease (renewing it every third of its length), following the journal
/// otherwise; a follower that finds the lease lapsed applies the journal to
/// its end, takes the lease and leads; a primary that finds it taken
/// follows (the journal's fencing already kept it from appending).
pub async fn play_role(
    journal: Journal,
    sequencer: Arc<Sequencer>,
    status: Arc<ClusterStatus>,
    writer: String,
) {
    let mut term = 0u32;
    loop {
        if status.following() {
            follow(&journal, &sequencer, &status).await;
            term += 1;
            let last = status.applied_entry.load(Ordering::Acquire);
            let replication = JournalReplication {
                journal: journal.clone(),
                runtime: tokio::runtime::Handle::current(),
                last,
                writer: format!("{writer}-{term}"),
                status: status.clone(),
            };
            sequencer.lead(Box::new(replication));
            status.set_following(false);
            tracing::warn!(
                entry = last,
                commands = sequencer.view().sequence,
                "took the primary's lease: this process leads the exchange"
            );
        } else {
            lead(&status, &sequencer).await;
            sequencer.follow();
            status.set_following(true);
        }
    }
}

/// Renews the lease until another process holds it, or until the engine
/// finds the journal moved on without it (a primary whose lease lapsed
/// appended first): either way this process must follow the journal
/// before it may lead again.
async fn lead(status: &ClusterStatus, sequencer: &Sequencer) {
    let every = status.lease.ttl() / 3;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = sequencer.deposed() => {
                tracing::warn!("the journal moved on without this process: following it to its end");
                return;
            }
        }
        match status.lease.acquire().await {
            Ok(LeaseState::Held { .. }) => {}
            Ok(LeaseState::HeldBy(holder)) => {
                tracing::warn!(primary = %holder.holder, "the primary's lease was taken by another process: following it");
                return;
            }
            Err(error) => tracing::warn!(%error, "renewing the primary's lease failed"),
        }
    }
}

/// Applies every journal entry after the last applied, as the primary
/// sequenced it; returns once this process holds the lease and has applied
/// the journal to its end.
async fn follow(journal: &Journal, sequencer: &Sequencer, status: &ClusterStatus) {
    let mut tick = tokio::time::interval(status.lease.ttl() / 3);
    loop {
        let next = status.applied_entry.load(Ordering::Acquire) + 1;
        let entries = match journal.entries(next).await {
            Ok(entries) => entries,
            Err(error) => {
                tracing::warn!(%error, "the journal is unreachable; retrying");
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        let mut entries = std::pin::pin!(entries);
        loop {
            tokio::select! {
                item = entries.next() => match item {
                    Some(Ok((sequence, bytes))) => {
                        // Not applied (the engine was rebuilding, or cannot
                        // read it): read again from the last entry applied.
                        if !apply(sequencer, status, sequence, &bytes).await {
                            break;
                        }
                    }
                    Some(Err(error)) => {
                        tracing::warn!(%error, "reading the journal failed; resuming");
                        break;
                    }
                    None => break,
                },
                _ = tick.tick() => {
                    // Holding the lease but not caught up: it is renewed
                    // while the entries are read, and taken up again next tick.
                    if matches!(status.lease.acquire().await, Ok(LeaseState::Held { .. }))
                        && caught_up(journal, sequencer, status).await
                    {
                        return;
                    }
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// With the lease held: applies what is left of the journal; whether this
/// process is now at its end.
async fn caught_up(journal: &Journal, sequencer: &Sequencer, status: &ClusterStatus) -> bool {
    let Ok(last) = journal.last_sequence().await else {
        return false;
    };
    let next = status.applied_entry.load(Ordering::Acquire) + 1;
    if next > last {
        return true;
    }
    let Ok(entries) = journal.entries(next).await else {
        return false;
    };
    let mut entries = std::pin::pin!(entries);
    while status.applied_entry.load(Ordering::Acquire) < last {
        match entries.next().await {
            Some(Ok((sequence, bytes))) => {
                if !apply(sequencer, status, sequence, &bytes).await {
                    return false;
                }
            }
            _ => return false,
        }
    }
    true
}

/// Applies journal entry `sequence` (the commands this log lacks of it).
async fn apply(sequencer: &Sequencer, status: &ClusterStatus, sequence: u64, bytes: &[u8]) -> bool {
    let entry = match JournalEntry::decode(bytes) {
        Ok(entry) => entry,
        Err(error) => {
            tracing::error!(%error, sequence, "a journal entry this build cannot read: following stopped");
            return false;
        }
    };
    let applied = sequencer.view().sequence;
    let skip = applied.saturating_sub(entry.first_sequence - 1) as usize;
    if skip < entry.commands.len() {
        let tail = JournalEntry {
            first_sequence: entry.first_sequence + skip as u64,
            commands: entry.commands[skip..].to_vec(),
        };
        if let Err(error) = sequencer.apply_sequenced(tail).await {
            tracing::error!(%error, sequence, "the journal's entry could not be applied: following stopped");
            return false;
        }
    }
    status.applied_entry.store(sequence, Ordering::Release);
    true
}

/// A follower's link to the primary: the command posted to the address the
/// lease's holder published, with the cluster's token.
pub struct ForwardToPrimary {
    client: reqwest::Client,
    status: Arc<ClusterStatus>,
    token: String,
    /// The primary's address as last read from the lease, and when: read
    /// again after a lease's third, or at once after a failed forward, so
    /// an order costs no read of the lease.
    primary: std::sync::Mutex<Option<(String, std::time::Instant)>>,
}

impl ForwardToPrimary {
    /// Forwards to whoever holds `status`'s lease.
    pub fn new(status: Arc<ClusterStatus>, token: String) -> Self {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .expect("an HTTP client");
        Self {
            client,
            status,
            token,
            primary: std::sync::Mutex::new(None),
        }
    }

    async fn primary(&self) -> Result<String, String> {
        let fresh = self.status.lease.ttl() / 3;
        let known = self
            .primary
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some((address, read)) = known
            && read.elapsed() < fresh
        {
            return Ok(address);
        }
        let holder = self
            .status
            .lease
            .current()
            .await
            .map_err(|e| e.to_string())?
            .ok_or("no process holds the primary's lease")?;
        *self.primary.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((holder.address.clone(), std::time::Instant::now()));
        Ok(holder.address)
    }

    fn forget_primary(&self) {
        *self.primary.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

impl weiport_exchange_api::PrimaryLink for ForwardToPrimary {
    fn forward(
        &self,
        command: Vec<u8>,
    ) -> std::pin::Pin<
        Box<
            dyn std::future::Future<Output = Result<weiport_exchange_api::Forwarded, String>>
                + Send
                + '_,
        >,
    > {
        Box::pin(async move {
            let primary = self.primary().await?;
            let sent = self
                .client
                .post(format!("{primary}/internal/v1/commands"))
                .bearer_auth(&self.token)
                .body(command)
                .send()
                .await;
            let response = match sent {
                Ok(response) if response.status().is_success() => response,
                Ok(response) => {
                    self.forget_primary();
                    return Err(format!("the primary answered {}", response.status()));
                }
                Err(error) => {
                    self.forget_primary();
                    return Err(error.to_string());
                }
            };
            response.json().await.map_err(|e| e.to_string())
        })
    }
}
