//! The journal against real `nats-server`s on loopback: entries read back
//! in order, a writer behind the stream fenced, the lease moving only when
//! it lapses, a value settled once for all, and a three-server cluster that keeps taking entries when one
//! server is killed.

use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use weiport_journal::testing::NatsServer;
use weiport_journal::{Journal, JournalConfig, JournalError, LeaseState};

fn config(urls: Vec<String>, replicas: usize) -> JournalConfig {
    JournalConfig {
        urls,
        stream: "EXCHANGE".into(),
        replicas,
        timeout: Duration::from_secs(5),
    }
}

async fn read(journal: &Journal, from: u64, count: usize) -> Vec<(u64, Bytes)> {
    // A cluster that just lost a server may take seconds to place a reader.
    let started = Instant::now();
    let entries = loop {
        match journal.entries(from).await {
            Ok(entries) => break entries,
            Err(error) => {
                assert!(started.elapsed() < Duration::from_secs(60), "{error}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    };
    tokio::time::timeout(
        Duration::from_secs(10),
        entries.take(count).map(|e| e.unwrap()).collect::<Vec<_>>(),
    )
    .await
    .expect("the entries arrive")
}

#[tokio::test]
async fn entries_are_read_back_in_order_from_any_sequence() {
    let server = NatsServer::start();
    let journal = Journal::open(&config(vec![server.url()], 1)).await.unwrap();
    assert_eq!(journal.last_sequence().await.unwrap(), 0);
    for n in 1..=20u64 {
        let entry = Bytes::from(format!("batch {n}"));
        assert_eq!(
            journal
                .append(n - 1, &format!("b{n}"), entry)
                .await
                .unwrap(),
            n
        );
    }
    let all = read(&journal, 1, 20).await;
    let expected: Vec<(u64, Bytes)> = (1..=20)
        .map(|n| (n, Bytes::from(format!("batch {n}"))))
        .collect();
    assert_eq!(all, expected);
    assert_eq!(read(&journal, 15, 6).await, expected[14..].to_vec());

    // A reader at the end waits for what comes next.
    let mut tail = journal.entries(21).await.unwrap();
    let writer = journal.clone();
    tokio::spawn(async move { writer.append(20, "b21", Bytes::from("batch 21")).await });
    let next = tokio::time::timeout(Duration::from_secs(10), tail.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(next, (21, Bytes::from("batch 21")));

    // Another process opening the same stream sees the same entries.
    let other = Journal::open(&config(vec![server.url()], 1)).await.unwrap();
    assert_eq!(other.last_sequence().await.unwrap(), 21);
}

#[tokio::test]
async fn a_writer_behind_the_stream_is_fenced_and_appends_nothing() {
    let server = NatsServer::start();
    let primary = Journal::open(&config(vec![server.url()], 1)).await.unwrap();
    let deposed = Journal::open(&config(vec![server.url()], 1)).await.unwrap();
    primary.append(0, "p1", Bytes::from("a")).await.unwrap();
    primary.append(1, "p2", Bytes::from("b")).await.unwrap();
    // The deposed writer last saw sequence 1: its append must not land.
    let fenced = deposed
        .append(1, "d2", Bytes::from("stale"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            fenced,
            JournalError::Fenced {
                expected: 1,
                last: 2
            }
        ),
        "{fenced:?}"
    );
    assert_eq!(primary.last_sequence().await.unwrap(), 2);
    assert_eq!(
        read(&primary, 1, 2).await,
        vec![(1, Bytes::from("a")), (2, Bytes::from("b"))]
    );
    // A retried append (its answer lost) is recognised, not appended twice.
    assert_eq!(primary.append(1, "p2", Bytes::from("b")).await.unwrap(), 2);
    assert_eq!(primary.last_sequence().await.unwrap(), 2);
    // Caught up, the other writer may append.
    assert_eq!(deposed.append(2, "d3", Bytes::from("c")).await.unwrap(), 3);
}

#[tokio::test]
async fn the_lease_moves_only_when_it_lapses() {
    let server = NatsServer::start();
    let journal = Journal::open(&config(vec![server.url()], 1)).await.unwrap();
    let ttl = Duration::from_millis(800);
    let first = journal
        .lease("primary", "node-1", "http://a", ttl)
        .await
        .unwrap();
    let second = journal
        .lease("primary", "node-2", "http://b", ttl)
        .await
        .unwrap();

    let LeaseState::Held { revision, .. } = first.acquire().await.unwrap() else {
        panic!("a free lease is taken")
    };
    let LeaseState::HeldBy(holder) = second.acquire().await.unwrap() else {
        panic!("a held lease is not taken")
    };
    assert_eq!(holder.holder, "node-1");
    // Renewed, it stays; the holder's own acquire keeps it too.
    let (revision, _) = first.renew(revision).await.unwrap().expect("renewed");
    assert!(matches!(
        second.acquire().await.unwrap(),
        LeaseState::HeldBy(_)
    ));

    // Not renewed, it lapses and moves; the old holder's renewal fails.
    let lapsed = Instant::now();
    let taken = loop {
        match second.acquire().await.unwrap() {
            LeaseState::Held { revision, .. } => break revision,
            LeaseState::HeldBy(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    };
    println!(
        "the lease moved {:?} after its last renewal",
        lapsed.elapsed()
    );
    assert!(first.renew(revision).await.unwrap().is_none(), "lost");
    assert_eq!(
        first.current().await.unwrap().map(|h| h.holder),
        Some("node-2".to_owned())
    );
    assert!(second.renew(taken).await.unwrap().is_some());
}

#[tokio::test]
async fn a_settled_value_is_the_first_one_written_for_everyone() {
    let server = NatsServer::start();
    let first = Journal::open(&config(vec![server.url()], 1)).await.unwrap();
    let second = Journal::open(&config(vec![server.url()], 1)).await.unwrap();
    let mine = first
        .settle("seed", Bytes::from_static(b"one"))
        .await
        .unwrap();
    let theirs = second
        .settle("seed", Bytes::from_static(b"two"))
        .await
        .unwrap();
    assert_eq!((&mine[..], &theirs[..]), (&b"one"[..], &b"one"[..]));
    let other = second
        .settle("other", Bytes::from_static(b"two"))
        .await
        .unwrap();
    assert_eq!(&other[..], b"two");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_servers_keep_taking_entries_when_one_is_killed() {
    let mut servers = NatsServer::cluster();
    let urls: Vec<String> = servers.iter().map(NatsServer::url).collect();
    let formed = Instant::now();
    let journal = loop {
        // The cluster elects its JetStream leader after it forms.
        match Journal::open(&config(urls.clone(), 3)).await {
            Ok(journal) => break journal,
            Err(error) => {
                assert!(formed.elapsed() < Duration::from_secs(30), "{error}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    };
    let mut last = 0;
    for n in 0..10 {
        let entry = Bytes::from(format!("before {n}"));
        last = journal.append(last, &format!("b{n}"), entry).await.unwrap();
    }
    servers[0].kill();
    let killed = Instant::now();
    let mut appended_after = None;
    for n in 0..10 {
        let entry = Bytes::from(format!("after {n}"));
        // Retried with the same id until taken: a retry of an append that
        // landed unanswered gets the first one's sequence.
        let sequence = loop {
            match journal.append(last, &format!("a{n}"), entry.clone()).await {
                Ok(sequence) => break sequence,
                Err(error) => {
                    assert!(!matches!(error, JournalError::Fenced { .. }), "{error}");
                    assert!(killed.elapsed() < Duration::from_secs(60), "no progress");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        };
        appended_after.get_or_insert(killed.elapsed());
        last = sequence;
    }
    println!(
        "with one of three servers killed, the first entry was taken after {:?}",
        appended_after.unwrap()
    );
    assert_eq!(last, 20);
    let entries = read(&journal, 1, 20).await;
    assert_eq!(entries.len(), 20);
    assert!(entries.windows(2).all(|w| w[1].0 == w[0].0 + 1));
}

#[test]
fn the_test_servers_are_the_pinned_version_and_sync_before_they_acknowledge() {
    for server in NatsServer::cluster() {
        let varz: serde_json::Value = serde_json::from_str(&server.varz().unwrap()).unwrap();
        let version = varz["version"].as_str().unwrap();
        weiport_journal::check_server_version(version).unwrap();
        assert_eq!(varz["jetstream"]["config"]["sync_always"], true, "{varz}");
    }
}
