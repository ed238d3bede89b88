//! Joining: the journal opened, the log caught up, the lease taken or
//! followed; and this process's part as the operator sees it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use weiport_journal::{Journal, JournalConfig, JournalError, Lease, LeaseState};
use weiport_storage::Store;

use crate::{ReplicationError, catch_up};

/// This process's part in a replicated exchange, as `/admin/cluster` shows it.
pub struct ClusterStatus {
    /// This process's name.
    pub node: String,
    following: AtomicBool,
    /// The last journal entry applied here (following) or appended (leading).
    pub(crate) applied_entry: AtomicU64,
    pub(crate) lease: Lease,
    /// Whether this process leads, for the parts that run only on the primary.
    leading: tokio::sync::watch::Sender<bool>,
    /// The lease's holder and the journal's last entry, as last read by
    /// [`ClusterStatus::observe`] (metrics and the status page read them
    /// without waiting on the journal).
    observed: Mutex<(Option<String>, u64)>,
}

impl ClusterStatus {
    /// The lease's holder and the journal's last entry, as last observed.
    pub fn observed(&self) -> (Option<String>, u64) {
        self.observed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
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
                    .unwrap_or_else(PoisonError::into_inner);
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
        self.following.load(Ordering::Acquire)
    }

    /// Whether this process leads, now and as it changes.
    pub fn leading(&self) -> tokio::sync::watch::Receiver<bool> {
        self.leading.subscribe()
    }

    pub(crate) fn set_following(&self, following: bool) {
        self.following.store(following, Ordering::Release);
        self.leading.send_replace(!following);
        if !following {
            // Known without asking: this process holds the lease.
            self.observed
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .0 = Some(self.node.clone());
        }
    }
}

/// A replicated exchange at start: the journal, this process's role, and
/// where its log stands.
pub struct Joined {
    /// The journal.
    pub journal: Journal,
    /// Role and progress.
    pub status: Arc<ClusterStatus>,
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
) -> Result<Joined, ReplicationError> {
    let lease = journal.lease("primary", node, address, lease_ttl).await?;
    let (following, holder) = match lease.acquire().await? {
        LeaseState::Held { .. } => (false, node.to_owned()),
        LeaseState::HeldBy(holder) => {
            tracing::info!(primary = %holder.holder, "following the exchange's primary");
            (true, holder.holder)
        }
    };
    let status = Arc::new(ClusterStatus {
        node: node.to_owned(),
        following: AtomicBool::new(following),
        applied_entry: AtomicU64::new(caught_up),
        lease,
        leading: tokio::sync::watch::channel(!following).0,
        observed: Mutex::new((Some(holder), caught_up)),
    });
    Ok(Joined {
        journal,
        status,
        caught_up,
        writer,
    })
}

/// How a process joins the cluster.
#[derive(Debug, Clone)]
pub struct JoinSettings {
    /// The NATS servers.
    pub urls: Vec<String>,
    /// How long one call to them may take.
    pub timeout: Duration,
    /// This process's name.
    pub node: String,
    /// Unique to this run: a retried append of this run is recognised, and
    /// never confused with another run's entry for the same commands.
    pub writer: String,
    /// The primary's lease: renewed every third of it, taken once it lapses.
    pub lease: Duration,
    /// Where the other processes forward clients' commands while this one leads.
    pub address: String,
    /// How long the servers may take to answer at start (a cluster started
    /// with this process may still be electing its leaders).
    pub patience: Duration,
}

/// Opens the journal, brings `store`'s log level with it and takes or
/// follows the lease, retrying whatever fails for `settings.patience`
/// (a server older than the crash-loss fixes is refused at once).
pub async fn join_with_retries(
    settings: &JoinSettings,
    store: &Store,
) -> Result<Joined, ReplicationError> {
    let config = JournalConfig {
        urls: settings.urls.clone(),
        stream: "WEIPORT_EXCHANGE".into(),
        replicas: settings.urls.len().min(3),
        timeout: settings.timeout,
    };
    let journal = retrying(
        settings.patience,
        "the exchange's journal does not answer yet",
        || async { Ok(Journal::open(&config).await?) },
    )
    .await?;
    // A stream just created elects its own leader: its first reads may time
    // out. Catching up again writes the same commands again, harmlessly.
    retrying(
        settings.patience,
        "joining the replicated exchange failed",
        || async {
            let caught_up = catch_up(&journal, store, &settings.writer).await?;
            join(
                journal.clone(),
                &settings.node,
                &settings.address,
                settings.writer.clone(),
                settings.lease,
                caught_up,
            )
            .await
        },
    )
    .await
}

/// `attempt` until it succeeds, fails for good (a server older than the
/// crash-loss fixes, a log that diverged from the journal), or `patience`
/// has passed, half a second apart.
async fn retrying<T, F, Attempt>(
    patience: Duration,
    what: &str,
    mut attempt: F,
) -> Result<T, ReplicationError>
where
    F: FnMut() -> Attempt,
    Attempt: Future<Output = Result<T, ReplicationError>>,
{
    let deadline = tokio::time::Instant::now() + patience;
    loop {
        match attempt().await {
            Ok(value) => return Ok(value),
            Err(
                error @ (ReplicationError::Journal(JournalError::ServerTooOld { .. })
                | ReplicationError::Diverged(_)),
            ) => return Err(error),
            Err(error) if tokio::time::Instant::now() < deadline => {
                tracing::warn!(%error, "{what}; retrying");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(error) => return Err(error),
        }
    }
}
