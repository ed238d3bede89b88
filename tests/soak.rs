//! Soak: `weiport serve` under mixed load for `SOAK_SECONDS` (20 in the
//! suite; `scripts/soak.sh` runs 600) while anvil mines a block of transfers
//! every few hundred milliseconds. Load: Etherscan balance reads, market data
//! reads, three traders placing crossing limit orders and cancelling, and
//! WebSocket trade and depth streams. Every `SOAK_SAMPLE_SECONDS` (10) it
//! prints the server's resident memory, its open descriptors and the request
//! rate; at the end per-route throughput, p50 and p99, and then it checks:
//! no unexpected answer, descriptors flat after warm-up (and memory too, in
//! runs of 5 minutes or more, long enough to reach its ceiling), every indexed
//! balance equal to the node's, the books rebuilt by a restart equal to the
//! books served (the engine itself asserts its ledger invariants after every
//! command in this build), and no secret in the server's log.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use alloy_primitives::{Address, U256};
use common::chain::{Chain, assert_index_matches};
use common::{Anvil, GENEROUS, Key, Weiport, signed_request};
use futures::StreamExt;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use reqwest::Method;
use serde_json::Value;
use weiport_storage::{Store, StoreOptions};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Latencies per route, in µs, and the answers nobody expected.
#[derive(Default)]
struct Figures {
    latencies: Mutex<BTreeMap<&'static str, Vec<u32>>>,
    requests: AtomicU64,
    unexpected: Mutex<Vec<String>>,
}

impl Figures {
    fn record(&self, route: &'static str, took: Duration) {
        let micros = u32::try_from(took.as_micros()).unwrap_or(u32::MAX);
        self.latencies
            .lock()
            .unwrap()
            .entry(route)
            .or_default()
            .push(micros);
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    fn unexpected(&self, what: String) {
        let mut seen = self.unexpected.lock().unwrap();
        if seen.len() < 20 {
            seen.push(what);
        }
    }
}

/// Times one GET and checks its status is one of `expected`.
async fn timed_get(
    client: &reqwest::Client,
    figures: &Figures,
    route: &'static str,
    url: String,
) -> Option<Value> {
    let started = Instant::now();
    let response = client.get(&url).send().await;
    let took = started.elapsed();
    figures.record(route, took);
    match response {
        Ok(response) if response.status() == 200 => response.json().await.ok(),
        Ok(response) => {
            let status = response.status();
            let body = response.text().await.unwrap_or_default();
            figures.unexpected(format!("{route}: {status} {body}"));
            None
        }
        Err(error) => {
            figures.unexpected(format!("{route}: {error}"));
            None
        }
    }
}

/// What the server holds: resident memory, and its descriptors split into
/// RocksDB's table files (one per live file: they grow with the data, up to
/// `max_open_files`), handles of files already deleted (a leak), and the
/// rest (sockets, logs, pipes).
#[derive(Debug, Clone, Copy)]
struct Held {
    rss_kib: u64,
    tables: usize,
    deleted: usize,
    other: usize,
}

fn held(pid: u32) -> Held {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let rss_kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    let mut held = Held {
        rss_kib,
        tables: 0,
        deleted: 0,
        other: 0,
    };
    for entry in std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let target = std::fs::read_link(entry.path()).unwrap_or_default();
        let target = target.to_string_lossy();
        if target.ends_with(" (deleted)") {
            held.deleted += 1;
        } else if target.ends_with(".sst") {
            held.tables += 1;
        } else {
            held.other += 1;
        }
    }
    held
}

fn percentile(sorted: &[u32], p: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    f64::from(sorted[index]) / 1000.0
}

async fn trader(
    url: Arc<str>,
    key: Key,
    seed: u64,
    figures: Arc<Figures>,
    running: Arc<AtomicBool>,
) {
    let client = reqwest::Client::new();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut open: std::collections::VecDeque<u64> = Default::default();
    while running.load(Ordering::Relaxed) {
        if open.len() > 40 || (rng.random_ratio(1, 4) && !open.is_empty()) {
            let id = open.pop_front().unwrap();
            let started = Instant::now();
            let params = format!("symbol=ETHUSDT&orderId={id}");
            let (status, answer) = signed_request(
                &client,
                &url,
                Method::DELETE,
                "/api/v3/order",
                &key,
                &params,
                0,
            )
            .await;
            figures.record("DELETE order", started.elapsed());
            // -2011: it filled meanwhile.
            if status != 200 && answer["code"] != -2011 {
                figures.unexpected(format!("cancel: {status} {answer}"));
            }
            continue;
        }
        let side = if rng.random() { "BUY" } else { "SELL" };
        let price = 3000 + rng.random_range(-20i32..=20);
        let quantity = rng.random_range(2..=50); // thousandths: 0.002 × 2980 clears the 5 USDT minimum
        let params = format!(
            "symbol=ETHUSDT&side={side}&type=LIMIT&timeInForce=GTC&quantity=0.0{quantity:02}&price={price}"
        );
        let started = Instant::now();
        let (status, answer) = signed_request(
            &client,
            &url,
            Method::POST,
            "/api/v3/order",
            &key,
            &params,
            0,
        )
        .await;
        figures.record("POST order", started.elapsed());
        if status != 200 {
            figures.unexpected(format!("order: {status} {answer}"));
        } else if answer["status"] == "NEW" || answer["status"] == "PARTIALLY_FILLED" {
            open.push_back(answer["orderId"].as_u64().unwrap());
        }
    }
}

async fn market_reader(url: Arc<str>, figures: Arc<Figures>, running: Arc<AtomicBool>) {
    let client = reqwest::Client::new();
    let routes: [(&str, &str); 5] = [
        ("ticker/price", "/api/v3/ticker/price?symbol=ETHUSDT"),
        ("depth", "/api/v3/depth?symbol=ETHUSDT&limit=100"),
        (
            "klines",
            "/api/v3/klines?symbol=ETHUSDT&interval=1m&limit=100",
        ),
        ("trades", "/api/v3/trades?symbol=ETHUSDT&limit=100"),
        ("ticker/24hr", "/api/v3/ticker/24hr?symbol=ETHUSDT"),
    ];
    let mut turn = 0;
    while running.load(Ordering::Relaxed) {
        let (route, path) = routes[turn % routes.len()];
        timed_get(&client, &figures, route, format!("{url}{path}")).await;
        turn += 1;
    }
}

async fn balance_reader(
    base_url: Arc<str>,
    apikey: String,
    addresses: Vec<Address>,
    figures: Arc<Figures>,
    running: Arc<AtomicBool>,
) {
    let client = reqwest::Client::new();
    let mut turn = 0;
    while running.load(Ordering::Relaxed) {
        let address = addresses[turn % addresses.len()];
        let url = format!(
            "{base_url}/api?module=account&action=balance&address={address}&tag=latest&apikey={apikey}"
        );
        if let Some(answer) = timed_get(&client, &figures, "balance", url).await
            && answer["status"] != "1"
        {
            figures.unexpected(format!("balance: {answer}"));
        }
        turn += 1;
    }
}

/// Reads a stream until told to stop; returns how many messages came.
async fn stream_reader(url: Arc<str>, path: &'static str, running: Arc<AtomicBool>) -> u64 {
    let url = format!("{}{path}", url.replacen("http://", "ws://", 1));
    let mut socket = tokio_tungstenite::connect_async(url).await.unwrap().0;
    let mut messages = 0;
    while running.load(Ordering::Relaxed) {
        match tokio::time::timeout(Duration::from_millis(500), socket.next()).await {
            Ok(Some(Ok(_))) => messages += 1,
            Ok(other) => panic!("stream {path} ended: {other:?}"),
            Err(_) => {}
        }
    }
    messages
}

/// Sends a transfer every `every` from the dev accounts to `addresses`
/// (automine makes each one a block); returns how many were sent.
async fn chain_driver(
    chain: Arc<Chain>,
    addresses: Vec<Address>,
    every: Duration,
    running: Arc<AtomicBool>,
) -> u64 {
    let senders: Vec<Address> = chain.accounts().await.into_iter().take(4).collect();
    let mut rng = StdRng::seed_from_u64(7);
    let mut sent = 0;
    while running.load(Ordering::Relaxed) {
        let from = senders[rng.random_range(0..senders.len())];
        let to = addresses[rng.random_range(0..addresses.len())];
        let value = U256::from(rng.random_range(1u64..1_000_000_000_000_000));
        chain.transfer(from, to, value).await;
        sent += 1;
        tokio::time::sleep(every).await;
    }
    sent
}

fn serve_on(data_dir: &std::path::Path, node_url: &str) -> Weiport {
    let mut env = GENEROUS[1..].to_vec();
    env.extend([
        ("WEIPORT_NODE__URL", node_url),
        ("WEIPORT_ACCESS__QUERY_TIERS__DEFAULT", "1000000"),
        ("WEIPORT_WALLET__SWEEP_THRESHOLD", "1000000"),
        // A quarter of the default memtable budget and an eighth of the
        // default block cache, so memory reaches its ceiling within minutes:
        // with the defaults the same curve flattens higher.
        ("WEIPORT_STORAGE__MEMTABLE_BUDGET_MB", "64"),
        ("WEIPORT_STORAGE__BLOCK_CACHE_MB", "32"),
    ]);
    Weiport::serve(data_dir, &env)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mixed_load_with_memory_descriptors_and_exactness() {
    let seconds = env_u64("SOAK_SECONDS", 20);
    let sample_every =
        Duration::from_secs(env_u64("SOAK_SAMPLE_SECONDS", 10).min(seconds / 2).max(1));
    let anvil = Anvil::start(&[]);
    let chain = Arc::new(Chain::new(&anvil.url));
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("data");
    let mut weiport = serve_on(&data_dir, &anvil.url);
    let addresses: Vec<Address> = (1..=40u8).map(Address::repeat_byte).collect();
    let mut traders = Vec::new();
    for _ in 0..3 {
        traders.push(
            weiport
                .funded_key(
                    &["read", "trade"],
                    &[("ETH", "100000"), ("USDT", "1000000000")],
                )
                .await,
        );
    }
    // /readyz shows block 0 before the index exists: wait for a real block.
    let dev = chain.accounts().await;
    chain.transfer(dev[5], addresses[0], U256::from(1u8)).await;
    weiport.wait_indexed(chain.settled_head().await).await;
    let reader = weiport
        .key(serde_json::json!({ "permissions": ["read"] }))
        .await;
    let pid = weiport.child.id();
    let url: Arc<str> = weiport.url.clone().into();
    let figures = Arc::new(Figures::default());
    let running = Arc::new(AtomicBool::new(true));

    let mut load = tokio::task::JoinSet::new();
    for (seed, key) in traders.iter().enumerate() {
        load.spawn(trader(
            url.clone(),
            key.clone(),
            seed as u64,
            figures.clone(),
            running.clone(),
        ));
    }
    load.spawn(market_reader(url.clone(), figures.clone(), running.clone()));
    load.spawn(balance_reader(
        url.clone(),
        reader.id.clone(),
        addresses.clone(),
        figures.clone(),
        running.clone(),
    ));
    let streams = ["/ws/ethusdt@trade", "/ws/ethusdt@depth@100ms"]
        .map(|path| tokio::spawn(stream_reader(url.clone(), path, running.clone())));
    let blocks = tokio::spawn(chain_driver(
        chain.clone(),
        addresses.clone(),
        Duration::from_millis(250),
        running.clone(),
    ));

    let started = Instant::now();
    let mut samples: Vec<Held> = Vec::new();
    let mut last_requests = 0;
    println!(
        "soak: {seconds} s, a sample every {} s",
        sample_every.as_secs()
    );
    println!("soak-sample seconds,rss_mib,fds,requests_per_s,indexed,table_fds,deleted_fds");
    while started.elapsed() < Duration::from_secs(seconds) {
        tokio::time::sleep(sample_every).await;
        let now = held(pid);
        let requests = figures.requests.load(Ordering::Relaxed);
        let rate = (requests - last_requests) as f64 / sample_every.as_secs_f64();
        last_requests = requests;
        let ready: Value = reqwest::get(format!("{}/readyz", weiport.url))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let at = started.elapsed().as_secs_f64();
        println!(
            "soak-sample {at:.0},{:.1},{},{rate:.0},{},{},{}",
            now.rss_kib as f64 / 1024.0,
            now.tables + now.deleted + now.other,
            ready["indexed"],
            now.tables,
            now.deleted
        );
        samples.push(now);
    }
    running.store(false, Ordering::Relaxed);
    while load.join_next().await.is_some() {}
    let mut stream_messages = Vec::new();
    for stream in streams {
        stream_messages.push(stream.await.unwrap());
    }
    let transfers = blocks.await.unwrap();
    let elapsed = started.elapsed().as_secs_f64();

    println!("soak-route route,requests,per_s,p50_ms,p99_ms");
    for (route, latencies) in figures.latencies.lock().unwrap().iter_mut() {
        latencies.sort_unstable();
        println!(
            "soak-route {route},{},{:.0},{:.2},{:.2}",
            latencies.len(),
            latencies.len() as f64 / elapsed,
            percentile(latencies, 0.5),
            percentile(latencies, 0.99)
        );
    }
    println!(
        "soak: {transfers} transfers mined, stream messages {stream_messages:?}, {} requests",
        figures.requests.load(Ordering::Relaxed)
    );
    let unexpected = figures.unexpected.lock().unwrap().clone();
    assert!(unexpected.is_empty(), "unexpected answers: {unexpected:#?}");
    assert!(
        stream_messages.iter().all(|n| *n > 0),
        "{stream_messages:?}"
    );

    // Descriptors other than table files flat once warm (the first third of
    // the run is warm-up), and no handle kept on a deleted file.
    let warm = samples.len() / 3;
    let warm_other = samples[warm..].iter().map(|s| s.other).min().unwrap();
    let last = *samples.last().unwrap();
    assert!(
        last.other <= warm_other + 8,
        "descriptors grew: {samples:?}"
    );
    assert!(last.deleted <= 2, "handles on deleted files: {samples:?}");
    // Memory: memtables (64 MiB together here) and the block cache (32 MiB)
    // fill over the first minutes; once the run is long enough to have
    // reached them, the last third must stay within the middle third's peak.
    if seconds >= 300 {
        let middle_peak = samples[warm..2 * warm]
            .iter()
            .map(|s| s.rss_kib)
            .max()
            .unwrap();
        let last_peak = samples[2 * warm..].iter().map(|s| s.rss_kib).max().unwrap();
        assert!(
            last_peak <= middle_peak + middle_peak / 8 + 16 * 1024,
            "memory kept growing: {samples:?}"
        );
    }

    let head = chain.settled_head().await;
    weiport
        .wait_indexed_within(head, Duration::from_secs(120))
        .await;
    let trader_keys: Vec<&Key> = traders.iter().collect();
    let before = weiport.books(&trader_keys).await;
    weiport.stop("TERM", Duration::from_secs(30));
    let log = weiport.read_log_to_end().join("\n");
    assert!(!log.contains("panicked"), "{log}");
    for secret in traders
        .iter()
        .chain([&reader])
        .map(|k| &k.secret)
        .chain([&weiport.admin_token])
    {
        assert!(!log.contains(secret.as_str()), "a secret in the log");
    }
    {
        let store = Store::open(&data_dir, &StoreOptions::default()).unwrap();
        let mentioned = chain.mentioned_addresses(head).await;
        // Every address at 60 blocks spread over the run, and at the head.
        let step = (head / 60).max(1);
        let blocks: Vec<u64> = (0..=head).step_by(step as usize).chain([head]).collect();
        assert_index_matches(&store, &chain, &mentioned, &blocks).await;
        println!(
            "soak: index exact for {} addresses at {} blocks up to {head}",
            mentioned.len(),
            blocks.len()
        );
    }
    let weiport = serve_on(&data_dir, &anvil.url);
    assert_eq!(weiport.books(&trader_keys).await, before);
    println!("soak: books rebuilt from the log equal the books served");
}
