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

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use common::replicated::Shared;
use common::{Key, Weiport, eventually, try_signed_request};
use serde_json::Value;

const TRADERS: usize = 6;

/// A process of the drill: its name and disk, and the process while it runs.
struct Node {
    name: String,
    dir: tempfile::TempDir,
    process: Option<Weiport>,
}

/// The public URLs of the processes running now, as the traders pick them.
type Urls = Arc<RwLock<Vec<String>>>;

/// What the traders were told.
#[derive(Default)]
struct Told {
    /// Client order ids of every acknowledged order, by trader.
    acknowledged: Vec<Vec<String>>,
    /// Orders answered otherwise (refused, unavailable, no answer).
    unanswered: u64,
}

async fn cluster(weiport: &Weiport) -> Option<Value> {
    let (status, body) = weiport
        .admin(reqwest::Method::GET, "/admin/cluster", Value::Null)
        .await;
    (status == 200).then_some(body)
}

/// Sends orders as `key` to the processes in `urls` in turn, crossing its
/// own side each time so they trade, until `stop`.
async fn trade(
    trader: usize,
    key: Key,
    urls: Urls,
    stop: Arc<AtomicBool>,
    acks: Arc<AtomicU64>,
) -> (Vec<String>, u64) {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(15))
        .build()
        .unwrap();
    let (mut acknowledged, mut unanswered) = (Vec::new(), 0);
    let mut sent = 0u64;
    while !stop.load(Ordering::Acquire) {
        let url = {
            let urls = urls.read().unwrap();
            urls[(sent as usize + trader) % urls.len()].clone()
        };
        let (side, price) = if sent.is_multiple_of(2) {
            ("BUY", 2001)
        } else {
            ("SELL", 1999)
        };
        let id = format!("t{trader}-{sent}");
        let params = format!(
            "symbol=ETHUSDT&side={side}&type=LIMIT&timeInForce=GTC&quantity=0.01&price={price}&newClientOrderId={id}"
        );
        sent += 1;
        let answer = tokio::time::timeout(
            Duration::from_secs(20),
            try_signed_request(
                &client,
                &url,
                reqwest::Method::POST,
                "/api/v3/order",
                &key,
                &params,
                0,
            ),
        )
        .await;
        match answer {
            Ok(Ok((200, _))) => {
                acknowledged.push(id);
                acks.fetch_add(1, Ordering::Relaxed);
            }
            _ => {
                unanswered += 1;
                // A process going or gone: the next one, after a breath.
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
    (acknowledged, unanswered)
}

/// Every order of `key`, oldest first, read in pages.
async fn all_orders(weiport: &Weiport, key: &Key) -> Vec<Value> {
    let mut orders = Vec::new();
    let mut from = 0u64;
    loop {
        let params = format!("symbol=ETHUSDT&orderId={from}&limit=1000");
        let (status, page) = weiport
            .signed(reqwest::Method::GET, "/api/v3/allOrders", key, &params)
            .await;
        assert_eq!(status, 200, "{page}");
        let page = page.as_array().unwrap().clone();
        let Some(last) = page.last() else {
            return orders;
        };
        from = last["orderId"].as_u64().unwrap() + 1;
        let full = page.len() == 1000;
        orders.extend(page);
        if !full {
            return orders;
        }
    }
}

/// What a client sees of the exchange: every trader's balances, orders and
/// trades, and the book.
async fn state(weiport: &Weiport, keys: &[Key]) -> Value {
    let mut seen = Vec::new();
    for key in keys {
        let (_, mut account) = weiport
            .signed(reqwest::Method::GET, "/api/v3/account", key, "")
            .await;
        account["updateTime"] = Value::Null;
        seen.push(account);
        seen.push(Value::Array(all_orders(weiport, key).await));
        let (_, trades) = weiport
            .signed(
                reqwest::Method::GET,
                "/api/v3/myTrades",
                key,
                "symbol=ETHUSDT&limit=1000",
            )
            .await;
        seen.push(trades);
    }
    let url = format!("{}/api/v3/depth?symbol=ETHUSDT&limit=5000", weiport.url);
    seen.push(reqwest::get(url).await.unwrap().json().await.unwrap());
    Value::Array(seen)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
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
    let funds = [("USDT", "100000000"), ("ETH", "100000")];
    let mut keys = Vec::new();
    for _ in 0..TRADERS {
        keys.push(
            nodes[0]
                .process
                .as_ref()
                .unwrap()
                .funded_key(&["read", "trade"], &funds)
                .await,
        );
    }
    for node in &nodes {
        let process = node.process.as_ref().unwrap();
        eventually("every process has the traders' funds", async || {
            let (status, account) = process
                .signed(
                    reqwest::Method::GET,
                    "/api/v3/account",
                    &keys[TRADERS - 1],
                    "omitZeroBalances=true",
                )
                .await;
            status == 200 && account["balances"].as_array().is_some_and(|b| b.len() == 2)
        })
        .await;
    }

    let urls: Urls = Arc::new(RwLock::new(
        nodes
            .iter()
            .map(|n| n.process.as_ref().unwrap().url.clone())
            .collect(),
    ));
    let stop = Arc::new(AtomicBool::new(false));
    let acks = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let traders: Vec<_> = keys
        .iter()
        .enumerate()
        .map(|(n, key)| {
            tokio::spawn(trade(
                n,
                key.clone(),
                urls.clone(),
                stop.clone(),
                acks.clone(),
            ))
        })
        .collect();

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
        let acked_before = acks.load(Ordering::Relaxed);
        let killed = Instant::now();
        nodes[victim]
            .process
            .as_mut()
            .unwrap()
            .stop("KILL", Duration::from_secs(10))
            .expect("killed");
        nodes[victim].process = None;
        let live: Vec<String> = nodes
            .iter()
            .filter_map(|n| n.process.as_ref().map(|p| p.url.clone()))
            .collect();
        *urls.write().unwrap() = live;
        // Served again: a new primary acknowledged an order sent after the kill.
        loop {
            if acks.load(Ordering::Relaxed) > acked_before + TRADERS as u64 {
                break;
            }
            assert!(
                killed.elapsed() < Duration::from_secs(30),
                "no takeover after kill {kill}"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        takeovers.push(killed.elapsed());
        let node = &mut nodes[victim];
        node.process = Some(shared.process(node.dir.path(), &node.name).await);
        let live: Vec<String> = nodes
            .iter()
            .filter_map(|n| n.process.as_ref().map(|p| p.url.clone()))
            .collect();
        *urls.write().unwrap() = live;
    }

    // A journal server lost while trading: the other two carry the journal
    // (the stream's leader may have been on it: they elect another).
    // The quick form kills one; the drill at scale each in turn.
    let victims: &[usize] = if kills > 2 { &[1, 0, 2] } else { &[1] };
    for &victim in victims {
        let acked_before = acks.load(Ordering::Relaxed);
        shared.nats[victim].kill();
        let nats_down = Instant::now();
        loop {
            if acks.load(Ordering::Relaxed) > acked_before + 10 * TRADERS as u64 {
                break;
            }
            if nats_down.elapsed() > Duration::from_secs(60) {
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
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let resumed = nats_down.elapsed();
        tokio::time::sleep(Duration::from_secs(2)).await;
        let while_down = acks.load(Ordering::Relaxed) - acked_before;
        println!(
            "drill: NATS server n{victim} of three killed while trading: {} orders acknowledged within {resumed:?}, {while_down} in the {:.1} s it was down",
            10 * TRADERS,
            nats_down.elapsed().as_secs_f64()
        );
        shared.nats[victim].restart();
        let restarted = &shared.nats[victim];
        tokio::task::block_in_place(|| restarted.wait_current());
    }

    stop.store(true, Ordering::Release);
    let mut told = Told::default();
    for trader in traders {
        let (acknowledged, unanswered) = trader.await.unwrap();
        told.acknowledged.push(acknowledged);
        told.unanswered += unanswered;
    }
    let trading = started.elapsed();
    let acknowledged: usize = told.acknowledged.iter().map(Vec::len).sum();

    // Every process level with the primary, then the same exchange everywhere,
    // a new process on an empty disk included.
    let fresh = tempfile::tempdir().unwrap();
    let replayed = shared.process(fresh.path(), "fresh").await;
    let processes: Vec<&Weiport> = nodes
        .iter()
        .filter_map(|n| n.process.as_ref())
        .chain([&replayed])
        .collect();
    let mut last = 0;
    for process in &processes {
        if let Some(report) = cluster(process).await
            && report["role"] == "primary"
        {
            last = report["appliedSequence"].as_u64().unwrap();
        }
    }
    for process in &processes {
        eventually("every process applied the whole journal", async || {
            cluster(process)
                .await
                .is_some_and(|r| r["appliedSequence"].as_u64() >= Some(last))
        })
        .await;
    }
    let expected = state(processes[0], &keys).await;
    for process in &processes[1..] {
        assert!(state(process, &keys).await == expected, "a process differs");
    }

    // Acknowledged: in the books exactly once. Anything else: at most once.
    for (trader, ids) in told.acknowledged.iter().enumerate() {
        let orders = &expected[trader * 3 + 1];
        let mut seen: BTreeMap<&str, u32> = BTreeMap::new();
        for order in orders.as_array().unwrap() {
            *seen
                .entry(order["clientOrderId"].as_str().unwrap())
                .or_default() += 1;
        }
        assert!(seen.values().all(|n| *n == 1), "an order applied twice");
        let lost: Vec<&String> = ids
            .iter()
            .filter(|id| !seen.contains_key(id.as_str()))
            .collect();
        assert!(lost.is_empty(), "acknowledged and lost: {lost:?}");
    }

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
