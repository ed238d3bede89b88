//! Acknowledged means on disk: the replicated exchange's journal servers and
//! processes lose power, not only their processes. Their stores live on a
//! power-cut filesystem (`powercut/`), which throws away every write not yet
//! synced when the power goes, as a machine would; a SIGKILL alone leaves
//! the page cache behind and cannot show what an unsynced acknowledgement
//! costs.
//!
//! - All three NATS servers lose power together while traders send orders to
//!   every process: every entry the journal acknowledged is still there, every
//!   acknowledged order is on every process once, and trading resumes.
//! - The same with JetStream's lazy default (acknowledging before syncing):
//!   the drill sees the entries it loses, so it can fail.
//! - The primary's machine (its weiport and its NATS server) loses power: the
//!   new primary serves every acknowledged order.
//!
//! Figures are printed on lines starting `drill:`.

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::Weiport;
use common::drill::{self, TRADERS, Traders, cluster};
use common::replicated::Shared;
use weiport_journal::testing::{NatsServer, Sync};
use weiport_journal::{Journal, JournalConfig};
use weiport_powercut::PowerCut;

/// A disk whose power a drill cuts, mounted on a directory of its own.
struct Disk {
    power: PowerCut,
    _mountpoint: tempfile::TempDir,
}

impl Disk {
    fn mount() -> Self {
        let mountpoint = tempfile::tempdir().unwrap();
        let power = PowerCut::mount(mountpoint.path())
            .expect("mounting the power-cut filesystem (FUSE: /dev/fuse, as root)");
        Self {
            power,
            _mountpoint: mountpoint,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.power.path().join(name)
    }
}

/// The journal's last sequence as its servers report it, asked as a client
/// of its own would (waiting out an election after a restart).
async fn journal_length(urls: Vec<String>) -> u64 {
    let config = JournalConfig {
        urls,
        stream: "WEIPORT_EXCHANGE".into(),
        replicas: 3,
        timeout: Duration::from_secs(5),
    };
    let started = Instant::now();
    loop {
        let answer = match Journal::open(&config).await {
            Ok(journal) => journal.last_sequence().await,
            Err(error) => Err(error),
        };
        match answer {
            Ok(last) => return last,
            Err(error) => {
                assert!(
                    started.elapsed() < Duration::from_secs(60),
                    "the journal did not answer: {error}"
                );
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }
    }
}

/// Three processes on ordinary disks over three NATS servers whose stores
/// are on `disk`, traders at work; the servers lose power together (the
/// processes frozen meanwhile, so the journal's length before the cut is
/// final). The journal's length before and after, and the process set.
struct NatsCut {
    shared: Shared,
    nodes: Vec<(tempfile::TempDir, Weiport)>,
    keys: Vec<common::Key>,
    traders: Traders,
    before: u64,
    after: u64,
    /// When the processes were let go again.
    resumed_at: Instant,
}

async fn cut_every_nats_server(sync: Sync, disk: &mut Disk) -> NatsCut {
    let stores: Vec<PathBuf> = (0..3).map(|n| disk.path(&format!("n{n}"))).collect();
    let nats = tokio::task::block_in_place(|| NatsServer::cluster_on(sync, &stores));
    let mut shared = Shared::with_nats(nats);
    let mut nodes = Vec::new();
    for name in ["a", "b", "c"] {
        let dir = tempfile::tempdir().unwrap();
        let process = shared.process(dir.path(), name).await;
        nodes.push((dir, process));
    }
    let processes: Vec<&Weiport> = nodes.iter().map(|(_, p)| p).collect();
    let keys = drill::funded_traders(processes[0], &processes).await;
    let traders = Traders::start(&keys, processes.iter().map(|p| p.url.clone()).collect());
    tokio::time::sleep(Duration::from_secs(3)).await;

    for (_, process) in &nodes {
        process.signal("STOP");
    }
    let before = journal_length(shared.nats_urls()).await;
    for server in &mut shared.nats {
        server.kill();
    }
    let unsynced = disk.power.unsynced_bytes();
    disk.power.cut().expect("the power cut");
    for server in &mut shared.nats {
        server.restart();
    }
    for server in &shared.nats {
        tokio::task::block_in_place(|| server.wait_ready());
    }
    let after = journal_length(shared.nats_urls()).await;
    println!(
        "drill: {sync:?} sync: the journal held {before} entries when its three servers lost power together ({unsynced} bytes not yet synced were lost with it); {after} after they came back"
    );
    for (_, process) in &nodes {
        process.signal("CONT");
    }
    NatsCut {
        shared,
        nodes,
        keys,
        traders,
        before,
        after,
        resumed_at: Instant::now(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_three_nats_servers_lose_power_together_and_no_acknowledged_order_is_lost() {
    let mut disk = Disk::mount();
    let cut = cut_every_nats_server(Sync::Always, &mut disk).await;
    assert!(
        cut.after >= cut.before,
        "the journal lost {} acknowledged entries",
        cut.before - cut.after
    );
    let since = cut.traders.acks();
    let resumed = cut
        .traders
        .wait_for(
            since,
            10 * TRADERS as u64 + 1,
            cut.resumed_at,
            Duration::from_secs(60),
        )
        .await
        .expect("trading resumes after the power comes back");
    let (told, _) = cut.traders.stop().await;
    let fresh = tempfile::tempdir().unwrap();
    let replayed = cut.shared.process(fresh.path(), "fresh").await;
    let processes: Vec<&Weiport> = cut
        .nodes
        .iter()
        .map(|(_, p)| p)
        .chain([&replayed])
        .collect();
    let audit = drill::audit(&processes, &cut.keys, &told).await;
    println!(
        "drill: all three NATS servers lost power together while trading: {} orders acknowledged, {} lost, {} doubled; trading resumed {:.1} s after the servers were back; every process and a fresh replay show the same exchange",
        told.count(),
        audit.lost.len(),
        audit.doubled.len(),
        resumed.as_secs_f64()
    );
    audit.assert_kept();
}

/// JetStream's default acknowledges before it syncs: the same cut loses
/// acknowledged entries, and the drill says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_lazy_default_the_same_power_cut_loses_acknowledged_entries() {
    let mut disk = Disk::mount();
    let cut = cut_every_nats_server(Sync::Lazy, &mut disk).await;
    let lost = cut.before.saturating_sub(cut.after);
    println!(
        "drill: lazy sync (the servers' default): {lost} of {} acknowledged journal entries lost in the power cut",
        cut.before
    );
    assert!(
        lost > 0,
        "with lazy sync the drill should see acknowledged entries lost ({} before, {} after)",
        cut.before,
        cut.after
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_primary_machine_loses_power_and_the_new_primary_serves_every_acknowledged_order() {
    // Machine A holds NATS server n0's store and process a's data dir.
    let mut machine = Disk::mount();
    let others: Vec<tempfile::TempDir> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let stores = vec![
        machine.path("n0"),
        others[0].path().join("n1"),
        others[1].path().join("n2"),
    ];
    let nats = tokio::task::block_in_place(|| NatsServer::cluster_on(Sync::Always, &stores));
    let mut shared = Shared::with_nats(nats);
    let a_dir = machine.path("a");
    std::fs::create_dir(&a_dir).unwrap();
    let a = shared.process(&a_dir, "a").await;
    common::eventually("a leads", async || {
        cluster(&a).await.is_some_and(|r| r["role"] == "primary")
    })
    .await;
    let (b_dir, c_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let b = shared.process(b_dir.path(), "b").await;
    let c = shared.process(c_dir.path(), "c").await;
    let keys = drill::funded_traders(&a, &[&a, &b, &c]).await;
    let traders = Traders::start(&keys, [&a, &b, &c].iter().map(|p| p.url.clone()).collect());
    tokio::time::sleep(Duration::from_secs(3)).await;

    // The power goes on machine A: its weiport and its NATS server with it.
    let mut a = a;
    let acked_before = traders.acks();
    let cut_at = Instant::now();
    a.stop("KILL", Duration::from_secs(10)).expect("killed");
    drop(a);
    shared.nats[0].kill();
    traders.send_to(vec![b.url.clone(), c.url.clone()]);
    let unsynced = machine.power.unsynced_bytes();
    machine.power.cut().expect("the power cut");
    let takeover = traders
        .wait_for(
            acked_before,
            TRADERS as u64 + 1,
            cut_at,
            Duration::from_secs(60),
        )
        .await
        .expect("a new primary takes orders");
    let pause = traders.longest_pause(cut_at, Instant::now());

    // The power comes back: A's NATS server and weiport restart on what its
    // disk kept, and follow.
    shared.nats[0].restart();
    tokio::task::block_in_place(|| shared.nats[0].wait_ready());
    let a = shared.process(&a_dir, "a").await;
    traders.send_to(vec![a.url.clone(), b.url.clone(), c.url.clone()]);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (told, _) = traders.stop().await;
    let fresh = tempfile::tempdir().unwrap();
    let replayed = shared.process(fresh.path(), "fresh").await;
    let audit = drill::audit(&[&b, &c, &a, &replayed], &keys, &told).await;
    println!(
        "drill: the primary's machine (its weiport and a NATS server) lost power while trading ({unsynced} bytes not yet synced lost): a new primary took orders after {:.2} s (longest pause {:.2} s); {} orders acknowledged, {} lost, {} doubled; the restarted machine, the others and a fresh replay show the same exchange",
        takeover.as_secs_f64(),
        pause.as_secs_f64(),
        told.count(),
        audit.lost.len(),
        audit.doubled.len()
    );
    audit.assert_kept();
}
