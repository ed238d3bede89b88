//! The cluster under a nemesis: three weiport processes of one replicated
//! exchange, three NATS servers, Redis and anvil; clients sending a random
//! mix to any process; faults drawn from a seed (processes killed, paused
//! and restarted, Redis lost or paused, NATS servers killed, processes cut
//! off from Redis, NATS or each other); every operation recorded, and a
//! checker that reads the history and the final state of every process and
//! of a fresh replay of the journal.
//!
//! The suite runs two fixed seeds for a minute each. `scripts/nemesis.sh
//! MINUTES SEED` runs one seed as long as asked (`WEIPORT_NEMESIS_SEED`,
//! `WEIPORT_NEMESIS_MINUTES`; `WEIPORT_NEMESIS_STEPS` keeps only the first
//! steps of the schedule, to find the shortest that still fails). The
//! figures are printed on lines starting `nemesis:`.

#[path = "../common/mod.rs"]
mod common;

mod checker;
mod schedule;
mod topology;
mod workload;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde_json::{Value, json};

use checker::{Report, trader_ip};
use common::{eventually, now_ms, signed_request};
use topology::Topology;
use workload::{Answer, History, Trader, What};

/// What each trader is credited before the history begins.
pub const STARTING_FUNDS: [(&str, &str); 2] = [("USDT", "1000000"), ("ETH", "100")];

/// Traders sending orders.
const TRADERS: usize = 4;

/// Opens the traders' accounts: a key allowed from the trader's own
/// address, its starting funds, its deposit address; once every process
/// knows the key.
async fn open_traders(topology: &Topology) -> Vec<Trader> {
    let first = topology.nodes[0].process.as_ref().unwrap();
    let mut traders = Vec::new();
    for n in 0..TRADERS {
        let ip = trader_ip(n);
        let key = first
            .key(json!({
                "permissions": ["read", "trade", "withdraw"],
                // Its own address, and the checker's.
                "allowed_ips": [ip.to_string(), "127.0.0.1"],
            }))
            .await;
        for (asset, amount) in STARTING_FUNDS {
            let (status, answer) = first
                .admin(
                    reqwest::Method::POST,
                    &format!("/admin/accounts/{}/credit", key.account),
                    json!({"asset": asset, "amount": amount}),
                )
                .await;
            assert_eq!(status, 200, "{answer}");
        }
        let client = workload::client_from(ip);
        let (status, address) = signed_request(
            &client,
            &first.url,
            reqwest::Method::GET,
            "/sapi/v1/capital/deposit/address",
            &key,
            "coin=ETH",
            0,
        )
        .await;
        assert_eq!(status, 200, "{address}");
        let deposit_address = address["address"].as_str().unwrap().parse().unwrap();
        for url in topology.urls() {
            eventually("every process knows the trader's key", async || {
                signed_request(
                    &client,
                    &url,
                    reqwest::Method::GET,
                    "/api/v3/account",
                    &key,
                    "",
                    0,
                )
                .await
                .0 == 200
            })
            .await;
        }
        traders.push(Trader {
            key,
            ip,
            deposit_address,
        });
    }
    traders
}

/// One run: the schedule of `seed` over `length` (its first `steps` only,
/// if given), then the check.
async fn run(seed: u64, length: Duration, steps: Option<usize>) -> Report {
    let began = std::time::Instant::now();
    let phase = |what: &str| println!("nemesis: {:>6.1} s {what}", began.elapsed().as_secs_f64());
    let mut topology = Topology::start().await;
    phase("started");
    let traders = open_traders(&topology).await;
    let urls = topology.urls();
    phase("traders funded");
    let history = History::default();
    let stop = Arc::new(AtomicBool::new(false));
    let mut clients = Vec::new();
    for (n, trader) in traders.iter().enumerate() {
        clients.push(tokio::spawn(workload::trade(
            n,
            trader.clone(),
            urls.clone(),
            seed ^ (n as u64 + 1) << 32,
            history.clone(),
            stop.clone(),
        )));
    }
    let admins: Vec<(String, String)> = topology
        .nodes
        .iter()
        .map(|n| (n.admin_url(), n.admin_token()))
        .collect();
    clients.push(tokio::spawn(workload::operate(
        admins,
        urls.clone(),
        traders.clone(),
        seed ^ 0xad,
        history.clone(),
        stop.clone(),
    )));
    clients.push(tokio::spawn(workload::bank(
        topology.anvil.url.clone(),
        urls.clone(),
        traders.clone(),
        seed ^ 0xba,
        history.clone(),
        stop.clone(),
    )));
    clients.push(tokio::spawn(workload::spend(
        urls.clone(),
        history.clone(),
        stop.clone(),
    )));

    let mut schedule = schedule::schedule(seed, length, 3, 3);
    if let Some(steps) = steps {
        schedule.truncate(steps);
    }
    println!(
        "nemesis: seed {seed}, {} steps: {schedule:?}",
        schedule.len()
    );
    for (n, step) in schedule.iter().enumerate() {
        phase(&format!("step {n}: {:?} for {:?}", step.fault, step.hold));
        let invoked = now_ms();
        let healing = topology.inject(step.fault).await;
        tokio::time::sleep(step.hold).await;
        topology.heal(healing).await;
        history.record(
            What::Fault(step.fault),
            invoked,
            Answer::Status(200, Value::Null),
        );
        tokio::time::sleep(step.calm).await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for client in clients {
        client.await.unwrap();
    }
    phase("clients stopped");

    // The checker reads a lot: every process again with its limits out of
    // the way (a rolling restart, itself one more test), and a fresh one
    // replaying the journal onto an empty disk.
    for n in 0..topology.nodes.len() {
        topology.nodes[n].generous = true;
        topology.nodes[n].stop("TERM").await;
        topology.nodes[n].start().await;
    }
    phase("restarted");
    topology.add_replay().await;
    topology.settled().await;
    phase("replayed");
    let ops = history.ops();
    let mut report = Report::default();
    checker::check_history(&ops, &mut report);
    let processes: Vec<&common::Weiport> = topology
        .nodes
        .iter()
        .filter_map(|n| n.process.as_ref())
        .collect();
    let chain = common::chain::Chain::new(&topology.anvil.url);
    checker::check_state(&ops, &processes, &traders, &chain, &mut report).await;
    phase("checked");
    report.print(seed);
    if !report.violations.is_empty() || !report.budget_violations.is_empty() {
        let path = std::env::temp_dir().join(format!("weiport-nemesis-{seed}.history"));
        let lines: Vec<String> = ops.iter().map(|op| format!("{op:?}")).collect();
        std::fs::write(&path, lines.join("\n")).unwrap();
        println!("nemesis: the history is in {}", path.display());
        println!(
            "nemesis: FAILED with seed {seed} ({} steps); run again: scripts/nemesis.sh {} {seed}, or shorter: WEIPORT_NEMESIS_STEPS=k",
            schedule.len(),
            length.as_secs().div_ceil(60)
        );
    }
    report
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cluster_keeps_every_promise_under_two_fixed_fault_schedules() {
    for seed in [11, 12] {
        let report = run(seed, Duration::from_secs(60), None).await;
        assert!(
            report.violations.is_empty(),
            "seed {seed}: {:#?}",
            report.violations
        );
        // Refusals under the limit around Redis faults are an open defect
        // (issue 57): reported above, failing only the long form.
    }
}

/// The long form, from `scripts/nemesis.sh`; does nothing unless
/// `WEIPORT_NEMESIS_SEED` is set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cluster_keeps_every_promise_under_the_seed_given() {
    let Some(seed) = std::env::var("WEIPORT_NEMESIS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    else {
        return;
    };
    let minutes: u64 = std::env::var("WEIPORT_NEMESIS_MINUTES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let steps = std::env::var("WEIPORT_NEMESIS_STEPS")
        .ok()
        .and_then(|s| s.parse().ok());
    let report = run(seed, Duration::from_secs(minutes * 60), steps).await;
    assert!(report.violations.is_empty(), "{:#?}", report.violations);
    assert!(
        report.budget_violations.is_empty(),
        "{:#?}",
        report.budget_violations
    );
}
