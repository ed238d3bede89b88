//! Indexer catch-up speed against the bare cost of fetching what it needs
//! from the same node, measured in the same run.
//!
//! `scripts/bench.sh indexer_catch_up` (env: BENCH_NODE = anvil, hardhat or
//! ganache; BENCH_BLOCKS, BENCH_TXS, BENCH_CONCURRENCY).

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use alloy_primitives::{Address, U256};
use common::chain::Chain;
use common::{Anvil, DevNode, DevNodeKind};
use futures::StreamExt;
use serde_json::json;
use serde_json::value::RawValue;
use weiport_indexer::{Indexer, IndexerConfig, NodeClient, NodeOptions, StateAt};
use weiport_storage::{Store, StoreOptions};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

async fn generate(chain: &Chain, blocks: u64, txs: u64, ganache: bool) {
    let dev = chain.accounts().await;
    if ganache {
        chain.rpc("miner_stop", json!([])).await;
    } else {
        chain.set_automine(false).await;
    }
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for block in 0..blocks {
        let sends: Vec<serde_json::Value> = (0..txs)
            .map(|i| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                let to = Address::with_last_byte((seed % 251) as u8);
                let from = dev[((block * txs + i) % dev.len() as u64) as usize];
                json!([{ "from": from, "to": to, "value": U256::from(seed % 1_000_000), "gas": "0x5208" }])
            })
            .collect();
        chain
            .node
            .call_batch::<_, serde_json::Value>("eth_sendTransaction", &sends)
            .await
            .unwrap();
        chain.mine().await;
    }
}

/// What the indexer needs of a node without block tracing (Hardhat,
/// Ganache), fetched bare: the block, each transaction's receipt and
/// struct-log trace (batched), and the balances of the senders, recipients
/// and coinbase at that block; answers kept raw but for those addresses.
async fn bare_fetch_per_transaction(
    node: &NodeClient,
    head: u64,
    concurrency: usize,
    by_number: bool,
) -> Duration {
    let started = Instant::now();
    let options = json!({ "disableMemory": true, "disableStorage": true });
    let mut fetched = futures::stream::iter(1..=head)
        .map(|number| {
            let options = options.clone();
            async move {
                let block: serde_json::Value = node
                    .call("eth_getBlockByNumber", (StateAt::Number(number), false))
                    .await
                    .unwrap();
                let hashes: Vec<(String,)> = block["transactions"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|h| (h.as_str().unwrap().to_owned(),))
                    .collect();
                let receipts: Vec<serde_json::Value> = node
                    .call_batch("eth_getTransactionReceipt", &hashes)
                    .await
                    .unwrap();
                let traced: Vec<(String, serde_json::Value)> = hashes
                    .iter()
                    .map(|(h,)| (h.clone(), options.clone()))
                    .collect();
                let traces: Vec<Box<RawValue>> = node
                    .call_batch("debug_traceTransaction", &traced)
                    .await
                    .unwrap();
                let mut addresses: Vec<Address> = receipts
                    .iter()
                    .flat_map(|r| [r["from"].as_str(), r["to"].as_str()])
                    .flatten()
                    .map(|a| a.parse().unwrap())
                    .collect();
                addresses.push(block["miner"].as_str().unwrap().parse().unwrap());
                addresses.sort();
                addresses.dedup();
                let at = if by_number {
                    StateAt::Number(number)
                } else {
                    StateAt::Hash(block["hash"].as_str().unwrap().parse().unwrap())
                };
                let balances = node.balances(&addresses, at).await.unwrap();
                traces.iter().map(|t| t.get().len()).sum::<usize>() + balances.len()
            }
        })
        .buffered(concurrency);
    let mut bytes = 0;
    while let Some(n) = fetched.next().await {
        bytes += n;
    }
    assert!(bytes > 0);
    started.elapsed()
}

/// Fetches every block and its trace exactly as the indexer does, but keeps
/// the raw answers: the floor any indexer built on this node pays. With
/// `transactions`, the block comes with its transaction bodies and its
/// receipts are fetched too: the floor of an indexer that keeps `txlist`.
async fn bare_fetch(
    node: &NodeClient,
    head: u64,
    concurrency: usize,
    transactions: bool,
) -> Duration {
    let started = Instant::now();
    let tracer = json!({ "tracer": "prestateTracer", "tracerConfig": { "diffMode": true } });
    let mut fetched = futures::stream::iter(1..=head)
        .map(|number| {
            let tracer = tracer.clone();
            async move {
                let block: Box<RawValue> = node
                    .call(
                        "eth_getBlockByNumber",
                        (StateAt::Number(number), transactions),
                    )
                    .await
                    .unwrap();
                let receipts = if transactions {
                    let receipts: Box<RawValue> = node
                        .call("eth_getBlockReceipts", (StateAt::Number(number),))
                        .await
                        .unwrap();
                    receipts.get().len()
                } else {
                    0
                };
                let trace: Box<RawValue> = node
                    .call(
                        "debug_traceBlockByNumber",
                        (StateAt::Number(number), tracer),
                    )
                    .await
                    .unwrap();
                block.get().len() + trace.get().len() + receipts
            }
        })
        .buffered(concurrency);
    let mut bytes = 0;
    while let Some(n) = fetched.next().await {
        bytes += n;
    }
    assert!(bytes > 0);
    started.elapsed()
}

/// Bytes of the database's table files under `dir`: the data as stored,
/// without the write-ahead logs RocksDB keeps for reuse.
fn disk_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|entry| entry.path().extension().is_some_and(|e| e == "sst"))
        .filter_map(|entry| entry.metadata().ok())
        .map(|meta| meta.len())
        .sum()
}

/// Indexes to `head` from genesis; the time taken and the bytes the
/// database holds once flushed and compacted.
async fn index(url: &str, head: u64, concurrency: usize, transactions: bool) -> (Duration, u64) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
    let config = IndexerConfig {
        concurrency,
        until: Some(head),
        transactions,
        ..IndexerConfig::default()
    };
    let indexer = Indexer::new(
        NodeClient::new(url, NodeOptions::default()).unwrap(),
        store.clone(),
        config,
    );
    let (_stop, stop_rx) = tokio::sync::watch::channel(false);
    let started = Instant::now();
    indexer.run(stop_rx).await.unwrap();
    let elapsed = started.elapsed();
    assert_eq!(store.cursor().unwrap().unwrap().number, head);
    store.flush().unwrap();
    store.compact();
    (elapsed, disk_bytes(dir.path()))
}

fn main() {
    let kind = std::env::var("BENCH_NODE").unwrap_or_else(|_| "anvil".into());
    let js_node = match kind.as_str() {
        "anvil" => None,
        "hardhat" => Some(DevNodeKind::Hardhat),
        "ganache" => Some(DevNodeKind::Ganache),
        other => panic!("BENCH_NODE={other}: anvil, hardhat or ganache"),
    };
    let blocks = env("BENCH_BLOCKS", if js_node.is_some() { 500 } else { 10_000 });
    let txs = env("BENCH_TXS", 20);
    let concurrency = env("BENCH_CONCURRENCY", 8) as usize;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let history = (blocks + 100).to_string();
        let (_anvil, _js, url) = match js_node {
            None => {
                let anvil = Anvil::start(&["--accounts", "20", "--prune-history", &history]);
                let url = anvil.url.clone();
                (Some(anvil), None, url)
            }
            Some(kind) => {
                let node = DevNode::start(kind);
                let url = node.url.clone();
                (None, Some(node), url)
            }
        };
        let chain = Chain::new(&url);
        let started = Instant::now();
        generate(&chain, blocks, txs, js_node == Some(DevNodeKind::Ganache)).await;
        let head = chain.head().await;
        eprintln!("generated {head} blocks of {txs} transactions in {:.1?}", started.elapsed());

        let node = NodeClient::new(&url, NodeOptions::default()).unwrap();
        let node = &node;
        let rate = |d: Duration| head as f64 / d.as_secs_f64();
        let bare = |transactions: bool| async move {
            match js_node {
                None => bare_fetch(node, head, concurrency, transactions).await,
                Some(kind) => {
                    let by_number = kind == DevNodeKind::Ganache;
                    bare_fetch_per_transaction(node, head, concurrency, by_number).await
                }
            }
        };
        // Per-transaction nodes fetch receipts for their balances anyway.
        let modes: &[bool] = if js_node.is_some() { &[false] } else { &[false, true] };
        let mut sizes = Vec::new();
        for &transactions in modes {
            let label = if transactions { "balances + transactions" } else { "balances" };
            let bare_1 = bare(transactions).await;
            eprintln!("{label}: bare fetch {:.0} blocks/s", rate(bare_1));
            let (indexed, bytes) = index(&url, head, concurrency, transactions).await;
            eprintln!("{label}: indexer {:.0} blocks/s, {bytes} bytes on disk", rate(indexed));
            let bare_2 = bare(transactions).await;
            eprintln!("{label}: bare fetch {:.0} blocks/s", rate(bare_2));
            let baseline = (rate(bare_1) + rate(bare_2)) / 2.0;
            sizes.push((rate(indexed), bytes));
            println!(
                "| {kind}, {label} | {head} blocks × {txs} tx, concurrency {concurrency} | {:.0} | {:.0} | {:.0} | **{:.2}×** |",
                rate(bare_1),
                rate(bare_2),
                rate(indexed),
                rate(indexed) / baseline
            );
        }
        if let [(rate_off, off), (rate_on, on)] = sizes[..] {
            let transactions = (head * txs) as f64;
            println!(
                "transaction index: {:.0} bytes on disk per million transactions ({off} bytes without, {on} with, {transactions} transactions); catch-up with it {:.2}× of without",
                (on.saturating_sub(off)) as f64 / transactions * 1e6,
                rate_on / rate_off
            );
        }
    });
}
