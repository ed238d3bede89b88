//! The failover protocol against a real JetStream server, with an engine
//! of the test's own that records what the protocol asks of it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use weiport_exchange::sequencer::{Deposed, Replication};
use weiport_exchange_api::Forwarded;
use weiport_journal::testing::NatsServer;
use weiport_journal::{Journal, JournalConfig};
use weiport_replication::{
    ForwardToPrimary, Joined, JournalReplication, ReplicatedEngine, join, play_role,
};
use weiport_storage::{CommandRecord, JournalEntry};

const LEASE: Duration = Duration::from_secs(1);

/// An engine that applies entries by counting their commands, in order.
#[derive(Default)]
struct TestEngine {
    applied: AtomicU64,
    /// Applied entries' first commands, in order.
    entries: Mutex<Vec<u64>>,
    /// Refuses every entry (a log that does not continue where it starts).
    refuse: AtomicBool,
    /// What the protocol asked: "lead" and "follow", in order.
    roles: Mutex<Vec<&'static str>>,
    /// The appender handed over with the last "lead".
    replication: Mutex<Option<Box<dyn Replication>>>,
    deposed: tokio::sync::Notify,
}

impl ReplicatedEngine for TestEngine {
    fn applied_commands(&self) -> u64 {
        self.applied.load(Ordering::Acquire)
    }

    fn apply_sequenced(&self, entry: JournalEntry) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            if self.refuse.load(Ordering::Acquire) {
                return Err("refused".into());
            }
            let applied = self.applied.load(Ordering::Acquire);
            if entry.first_sequence != applied + 1 {
                return Err(format!(
                    "entry starts at {}, log at {applied}",
                    entry.first_sequence
                ));
            }
            self.entries.lock().unwrap().push(entry.first_sequence);
            self.applied
                .store(applied + entry.commands.len() as u64, Ordering::Release);
            Ok(())
        })
    }

    fn lead(&self, replication: Box<dyn Replication>) {
        self.roles.lock().unwrap().push("lead");
        *self.replication.lock().unwrap() = Some(replication);
    }

    fn follow(&self) {
        self.roles.lock().unwrap().push("follow");
    }

    fn deposed(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.deposed.notified())
    }
}

async fn journal(server: &NatsServer) -> Journal {
    Journal::open(&JournalConfig {
        urls: vec![server.url()],
        stream: "TEST_EXCHANGE".into(),
        replicas: 1,
        timeout: Duration::from_secs(5),
    })
    .await
    .unwrap()
}

async fn joined(journal: &Journal, node: &str, address: &str) -> Joined {
    join(
        journal.clone(),
        node,
        address,
        format!("{node}-run"),
        LEASE,
        journal.last_sequence().await.unwrap(),
    )
    .await
    .unwrap()
}

/// An entry of `count` credits starting at command `first`.
fn entry(first: u64, count: u64) -> JournalEntry {
    JournalEntry {
        first_sequence: first,
        commands: (0..count)
            .map(|n| CommandRecord::Credit {
                account: n + 1,
                asset: "USDT".into(),
                amount: 100,
            })
            .collect(),
    }
}

/// `replication.replicate(entry)` on a thread of its own, as the engine
/// thread calls it.
async fn replicate(
    replication: Box<dyn Replication>,
    entry: JournalEntry,
) -> (Box<dyn Replication>, Result<(), Deposed>) {
    tokio::task::spawn_blocking(move || {
        let mut replication = replication;
        let result = replication.replicate(&entry);
        (replication, result)
    })
    .await
    .unwrap()
}

/// `joined`'s part, played with `engine` until the test ends.
fn play(joined: &Joined, engine: &Arc<TestEngine>) {
    tokio::spawn(play_role(
        joined.journal.clone(),
        engine.clone(),
        joined.status.clone(),
        joined.writer.clone(),
    ));
}

async fn eventually(what: &str, check: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !check() {
        assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_applies_the_journal_takes_a_lapsed_lease_and_fences_the_old_primary() {
    let server = NatsServer::start();
    let journal = journal(&server).await;
    let a = joined(&journal, "a", "http://127.0.0.1:9").await;
    assert!(!a.status.following(), "the first to join leads");
    let b = joined(&journal, "b", "http://127.0.0.1:9").await;
    assert!(b.status.following(), "the second follows");

    // The primary appends two batches; nobody renews its lease.
    let runtime = tokio::runtime::Handle::current();
    let primary: Box<dyn Replication> = Box::new(JournalReplication::new(&a, runtime));
    let (primary, first) = replicate(primary, entry(1, 3)).await;
    let (primary, second) = replicate(primary, entry(4, 2)).await;
    assert_eq!((first, second), (Ok(()), Ok(())));
    assert_eq!(a.status.applied_entry(), 2);

    let engine = Arc::new(TestEngine::default());
    play(&b, &engine);
    // It applies both, in order, then takes the lapsed lease and leads.
    eventually("the follower leads", || !b.status.following()).await;
    assert_eq!(*engine.entries.lock().unwrap(), [1, 4]);
    assert_eq!(engine.applied_commands(), 5);
    assert_eq!(*engine.roles.lock().unwrap(), ["lead"]);
    assert!(*b.status.leading().borrow());

    // The new primary appends after the journal's end; the old one, still
    // believing it leads, is fenced and appends nothing.
    let taken = engine.replication.lock().unwrap().take().unwrap();
    let (_, appended) = replicate(taken, entry(6, 1)).await;
    assert_eq!(appended, Ok(()));
    let (_, fenced) = replicate(primary, entry(6, 1)).await;
    assert_eq!(fenced, Err(Deposed));
    assert_eq!(journal.last_sequence().await.unwrap(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deposed_primary_follows_to_the_journals_end_before_it_leads_again() {
    let server = NatsServer::start();
    let journal = journal(&server).await;
    let a = joined(&journal, "a", "http://127.0.0.1:9").await;
    let engine = Arc::new(TestEngine::default());
    play(&a, &engine);
    // Another writer appended (a primary whose lease had lapsed, say): the
    // engine, refused by the journal's fence, says it was deposed.
    journal
        .append(0, "other-1", entry(1, 2).encode().into())
        .await
        .unwrap();
    engine.deposed.notify_one();
    eventually("the deposed primary leads again", || {
        engine.roles.lock().unwrap().len() == 2
    })
    .await;
    // It followed, applied what the other appended, and leads again
    // (it still holds the lease) from the journal's end.
    assert_eq!(*engine.roles.lock().unwrap(), ["follow", "lead"]);
    assert_eq!(*engine.entries.lock().unwrap(), [1]);
    assert_eq!(a.status.applied_entry(), 1);
    assert!(!a.status.following());
    let taken = engine.replication.lock().unwrap().take().unwrap();
    let (_, appended) = replicate(taken, entry(3, 1)).await;
    assert_eq!(appended, Ok(()));
    assert_eq!(journal.last_sequence().await.unwrap(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entry_that_cannot_be_read_or_applied_is_never_skipped_nor_led_past() {
    let server = NatsServer::start();
    let journal = journal(&server).await;
    let _a = joined(&journal, "a", "http://127.0.0.1:9").await;
    let b = joined(&journal, "b", "http://127.0.0.1:9").await;
    journal
        .append(0, "a-1", entry(1, 1).encode().into())
        .await
        .unwrap();
    journal
        .append(1, "a-2", bytes::Bytes::from_static(b"\xffnot an entry"))
        .await
        .unwrap();
    journal
        .append(2, "a-3", entry(2, 1).encode().into())
        .await
        .unwrap();
    let engine = Arc::new(TestEngine::default());
    play(&b, &engine);
    eventually("the readable entry is applied", || {
        b.status.applied_entry() == 1
    })
    .await;
    // The lease lapses (nobody renews it) and stays so for three of its
    // lengths: the follower cannot reach the journal's end, so it neither
    // leads (it would lose the entry's commands) nor applies what follows.
    tokio::time::sleep(LEASE * 3).await;
    assert_eq!(b.status.applied_entry(), 1);
    assert_eq!(*engine.entries.lock().unwrap(), [1]);
    assert!(b.status.following());
    assert!(engine.roles.lock().unwrap().is_empty());

    // An engine that refuses an entry is no different.
    // (A fresh process: its log holds none of the journal yet.)
    let c = join(
        journal.clone(),
        "c",
        "http://127.0.0.1:9",
        "c-run".into(),
        LEASE,
        0,
    )
    .await
    .unwrap();
    let refusing = Arc::new(TestEngine::default());
    refusing.refuse.store(true, Ordering::Release);
    play(&c, &refusing);
    tokio::time::sleep(LEASE * 2).await;
    assert_eq!(c.status.applied_entry(), 0);
    assert!(c.status.following());
    assert!(refusing.roles.lock().unwrap().is_empty());
}

/// A primary's internal endpoint that accepts every command as `sequence`.
async fn accepting_primary(sequence: u64) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new().route(
        "/internal/v1/commands",
        axum::routing::post(move || async move {
            axum::Json(serde_json::json!({"accepted": {"sequence": sequence}}))
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    address
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forward_racing_a_role_change_fails_once_then_reaches_the_new_primary() {
    let server = NatsServer::start();
    let journal = journal(&server).await;
    // The first primary published an address where nothing listens now.
    let gone = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let _old = joined(&journal, "old", &gone).await;
    let follower = joined(&journal, "follower", "http://127.0.0.1:9").await;
    let link = ForwardToPrimary::new(follower.status.clone(), "token".into());
    let refused = link.forward::<Forwarded>(b"command".to_vec()).await;
    assert!(refused.is_err(), "{refused:?}");

    // The old primary's lease lapses; a new one takes it.
    tokio::time::sleep(LEASE + Duration::from_millis(200)).await;
    let new = joined(&journal, "new", &accepting_primary(42).await).await;
    assert!(!new.status.following(), "the lapsed lease is taken");
    // The failed forward forgot the old address: the next one reads the
    // lease again and reaches the new primary.
    match link.forward::<Forwarded>(b"command".to_vec()).await {
        Ok(Forwarded::Accepted { sequence }) => assert_eq!(sequence, 42),
        other => panic!("{other:?}"),
    }
}
