//! The failover drill: three weiport processes on a three-server NATS
//! cluster, traders sending orders to every process as fast as they are
//! answered; the primary SIGKILLed again and again (each time restarted on
//! its own disk, to follow), one NATS server killed while trading. Every
//! acknowledged order is in the books once and none twice, and every
//! process, and a new one replaying the journal onto an empty disk, shows
//! the same exchange.
//!
//! `WEIPORT_DRILL_KILLS` sets the number of kills (2 here, and one NATS
//! server killed; `scripts/drills.sh` runs 20, and kills each NATS server in
//! turn); the figures are printed on lines starting `drill:`.

mod common;

use std::time::{Duration, Instant};

use common::Weiport;
use common::drill::{self, TRADERS, Traders, cluster, percentile};
use common::replicated::Shared;
use weiport_journal::testing::NatsServer;

/// A process of the drill: its name and disk, and the process while it runs.
struct Node {
    name: String,
    dir: tempfile::TempDir,
    process: Option<Weiport>,
}

fn live_urls(nodes: &[Node]) -> Vec<String> {
    nodes
        .iter()
        .filter_map(|n| n.process.as_ref().map(|p| p.url.clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_primary_killed_again_and_again_under_load_loses_and_doubles_nothing() {
    let kills: usize = std::env::var("WEIPORT_DRILL_KILLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2);
    let mut shared = Shared::start_three();
    let mut nodes = Vec::new();
    for name in ["a", "b", "c"] {
        let dir = tempfile::tempdir().unwrap();
        let process = shared.process(dir.path(), name).await;
        nodes.push(Node {
            name: name.into(),
            dir,
            process: Some(process),
        });
    }
    let processes: Vec<&Weiport> = nodes.iter().filter_map(|n| n.process.as_ref()).collect();
    let keys = drill::funded_traders(processes[0], &processes).await;
    let traders = Traders::start(&keys, live_urls(&nodes));

    let mut takeovers = Vec::new();
    for kill in 0..kills {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let mut primary = None;
        for (index, node) in nodes.iter().enumerate() {
            let Some(process) = &node.process else {
                continue;
            };
            if let Some(report) = cluster(process).await
                && report["role"] == "primary"
            {
                primary = Some(index);
            }
        }
        let victim = primary.expect("a process leads");
        let acked_before = traders.acks();
        let killed = Instant::now();
        nodes[victim]
            .process
            .as_mut()
            .unwrap()
            .stop("KILL", Duration::from_secs(10))
            .expect("killed");
        nodes[victim].process = None;
        traders.send_to(live_urls(&nodes));
        // Served again: a new primary acknowledged an order sent after the kill.
        let takeover = traders
            .wait_for(
                acked_before,
                TRADERS as u64 + 1,
                killed,
                Duration::from_secs(30),
            )
            .await;
        takeovers.push(takeover.unwrap_or_else(|| panic!("no takeover after kill {kill}")));
        let node = &mut nodes[victim];
        node.process = Some(shared.process(node.dir.path(), &node.name).await);
        traders.send_to(live_urls(&nodes));
    }

    // A journal server lost while trading: the other two carry the journal
    // (the stream's leader may have been on it: they elect another).
    // The quick form kills one; the drill at scale each in turn.
    let victims: &[usize] = if kills > 2 { &[1, 0, 2] } else { &[1] };
    for &victim in victims {
        let acked_before = traders.acks();
        let led = |stream: &str| shared.nats[victim].stream_leader(stream);
        let led_journal = led("WEIPORT_EXCHANGE") == Some(shared.nats[victim].name());
        let led_lease = led("WEIPORT_EXCHANGE_LEASES") == Some(shared.nats[victim].name());
        shared.nats[victim].kill();
        let nats_down = Instant::now();
        let reelected = led_journal.then(|| {
            let survivors: Vec<usize> = (0..3).filter(|n| *n != victim).collect();
            let watched = shared
                .nats
                .iter()
                .map(NatsServer::monitor)
                .collect::<Vec<_>>();
            let dead = shared.nats[victim].name();
            std::thread::spawn(move || {
                // When a survivor names a new leader of the journal's stream.
                loop {
                    if survivors.iter().any(|n| {
                        watched[*n]
                            .stream_leader("WEIPORT_EXCHANGE")
                            .is_some_and(|leader| leader != dead)
                    }) {
                        return nats_down.elapsed();
                    }
                    if nats_down.elapsed() > Duration::from_secs(60) {
                        return nats_down.elapsed();
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        });
        let resumed = traders
            .wait_for(
                acked_before,
                10 * TRADERS as u64 + 1,
                nats_down,
                Duration::from_secs(60),
            )
            .await;
        let Some(resumed) = resumed else {
            for node in &mut nodes {
                let Some(process) = node.process.as_mut() else {
                    continue;
                };
                let log: Vec<String> = process
                    .drain_log()
                    .iter()
                    .filter(|l| !l.contains(" INFO "))
                    .cloned()
                    .collect();
                eprintln!("{}: {:#?}", node.name, &log[log.len().saturating_sub(15)..]);
            }
            panic!("trading stopped with NATS server {victim} down");
        };
        tokio::time::sleep(Duration::from_secs(2)).await;
        let while_down = traders.acks() - acked_before;
        let pause = traders.longest_pause(nats_down, Instant::now());
        let led = match (reelected.map(|watcher| watcher.join().unwrap()), led_lease) {
            (Some(after), lease) => format!(
                "it led the journal's stream{}: a new leader after {:.2} s (nats-server's Raft election timeout, 4 to 9 s)",
                if lease { " and the lease's" } else { "" },
                after.as_secs_f64()
            ),
            (None, true) => "it led the lease's stream".to_owned(),
            (None, false) => "it led neither stream".to_owned(),
        };
        println!(
            "drill: NATS server n{victim} of three killed while trading ({led}): longest pause without an acknowledgement {:.2} s; {} orders acknowledged within {resumed:?}, {while_down} in the {:.1} s it was down",
            pause.as_secs_f64(),
            10 * TRADERS,
            nats_down.elapsed().as_secs_f64()
        );
        shared.nats[victim].restart();
        let restarted = &shared.nats[victim];
        tokio::task::block_in_place(|| restarted.wait_current());
    }

    let (told, trading) = traders.stop().await;
    let acknowledged = told.count();

    // Every process level with the primary, then the same exchange everywhere,
    // a new process on an empty disk included.
    let fresh = tempfile::tempdir().unwrap();
    let replayed = shared.process(fresh.path(), "fresh").await;
    let processes: Vec<&Weiport> = nodes
        .iter()
        .filter_map(|n| n.process.as_ref())
        .chain([&replayed])
        .collect();
    // Acknowledged: in the books exactly once. Anything else: at most once.
    drill::audit(&processes, &keys, &told).await.assert_kept();

    takeovers.sort();
    println!(
        "drill: {kills} primary kills under load: served again after p50 {:?}, max {:?} (lease 1 s); {acknowledged} orders acknowledged in {:.1} s ({:.0}/s over 3 processes), {} unanswered; none lost, none doubled",
        percentile(&takeovers, 0.5),
        takeovers.last().unwrap(),
        trading.as_secs_f64(),
        acknowledged as f64 / trading.as_secs_f64(),
        told.unanswered,
    );
    println!(
        "drill: {} processes and a fresh replay of the journal show the same books, balances, orders and trades",
        processes.len() - 1
    );
    assert_eq!(takeovers.len(), kills);
}
