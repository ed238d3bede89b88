//! A restart on a long command log: the first start replays it and writes the
//! history rows it lacks, the next only replays; with snapshots on, a start
//! writes one and the one after reads it; all end in the same state, with
//! every trade of the log. Prints the times: `scripts/restart-time.sh`
//! runs it on logs of 200,000 and 1,000,000 entries for RELIABILITY.md.
//! `RESTART_PAIRS` (default 10,000) is the number of crossing order pairs
//! (two log entries each).

mod common;

use std::time::{Duration, Instant};

use common::log::write_trading_log;
use common::{Key, Weiport};
use serde_json::{Value, json};

/// Keys on accounts 1 and 2, the traders of the written log.
async fn keys(weiport: &Weiport) -> Vec<Key> {
    let mut keys = Vec::new();
    for expected in [1, 2] {
        let key = weiport.key(json!({ "permissions": ["read"] })).await;
        assert_eq!(key.account, expected);
        keys.push(key);
    }
    keys
}

async fn state(weiport: &Weiport, keys: &[Key]) -> Vec<Value> {
    let mut out = Vec::new();
    for key in keys {
        // "weiport serving" comes once the log is replayed: the first signed
        // request is answered within its recvWindow.
        let (status, mut account) = weiport
            .signed(reqwest::Method::GET, "/api/v3/account", key, "")
            .await;
        assert_eq!(status, 200, "{account}");
        account.as_object_mut().unwrap().remove("updateTime");
        out.push(account);
    }
    let last: Value = reqwest::get(format!(
        "{}/api/v3/trades?symbol=ETHUSDT&limit=1",
        weiport.url
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    out.push(last);
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_command_log_replays_to_the_same_state_on_every_restart() {
    let pairs: u64 = std::env::var("RESTART_PAIRS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let dir = tempfile::tempdir().unwrap();
    let written = Instant::now();
    write_trading_log(dir.path(), pairs);
    let written = written.elapsed();
    let startup = Duration::from_secs(3600);

    // Snapshots off for the first two starts: they replay the whole log.
    let mut replaying = common::GENEROUS.to_vec();
    replaying.push(("WEIPORT_EXCHANGE__SNAPSHOT_EVERY", "0"));
    // Until the first answer from the replayed state, not only until listening.
    let started = Instant::now();
    let mut weiport = Weiport::serve_within(dir.path(), &replaying, startup);
    let keys = keys(&weiport).await;
    let before = state(&weiport, &keys).await;
    let first = started.elapsed();
    // Every pair traded once: the last trade's id is the number of pairs.
    assert_eq!(before[2][0]["id"], pairs, "{}", before[2]);
    weiport
        .stop("TERM", Duration::from_secs(60))
        .expect("stopped");

    let started = Instant::now();
    let mut weiport = Weiport::serve_within(dir.path(), &replaying, startup);
    let after = state(&weiport, &keys).await;
    let next = started.elapsed();
    assert_eq!(before, after);
    weiport
        .stop("TERM", Duration::from_secs(60))
        .expect("stopped");

    // Snapshots on: a start that replayed more than the interval writes one
    // at once; the start after it reads it and replays nothing.
    let mut snapshots = common::GENEROUS.to_vec();
    snapshots.push(("WEIPORT_EXCHANGE__SNAPSHOT_EVERY", "1000"));
    let mut weiport = Weiport::serve_within(dir.path(), &snapshots, startup);
    weiport.wait_for_log("exchange snapshot written").await;
    weiport
        .stop("TERM", Duration::from_secs(60))
        .expect("stopped");
    let started = Instant::now();
    let mut weiport = Weiport::serve_within(dir.path(), &snapshots, startup);
    let from_snapshot = state(&weiport, &keys).await;
    let last = started.elapsed();
    assert_eq!(before, from_snapshot);
    weiport
        .wait_for_log("exchange state read from its snapshot")
        .await;
    let entries = 2 + 2 * pairs;
    eprintln!(
        "restart: {entries} log entries ({pairs} trades), written in {:.2} s; first start {:.2} s (replay and history rows), next start {:.2} s (replay), each until the first answer: {:.1} s per million entries; from the snapshot {:.2} s",
        written.as_secs_f64(),
        first.as_secs_f64(),
        next.as_secs_f64(),
        next.as_secs_f64() * 1e6 / entries as f64,
        last.as_secs_f64(),
    );
}
