//! Indexer catch-up speed against the bare cost of fetching what it needs
//! from the same node, measured in the same run.
//!
//! `scripts/bench.sh indexer_catch_up` (env: BENCH_NODE = anvil, hardhat or
//! ganache; BENCH_BLOCKS, BENCH_TXS, BENCH_CONCURRENCY; BENCH_MODES, a comma
//! list of balances, transactions, all).

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use alloy_primitives::{Address, U256};
use common::chain::Chain;
use common::tokens::{deploy, spread_call, token_code, transfer_call};
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

/// Mines `blocks` blocks of `txs` transactions. With `contracts` (anvil),
/// a fifth of them are ERC-20 transfers and a tenth are calls through the
/// forwarder (an internal transfer each), so the transfer histories have
/// work to do.
async fn generate(chain: &Chain, blocks: u64, txs: u64, ganache: bool, contracts: bool) {
    let dev = chain.accounts().await;
    let (token, forwarder) = if contracts {
        let token = deploy(chain, dev[0], &token_code().0).await;
        let forwarder = chain.deploy_forwarder(dev[0], U256::ZERO).await;
        // Every dev account gets tokens to send.
        let data = spread_call(&dev, U256::from(10u64).pow(U256::from(22u64)));
        let tx = chain
            .send(dev[0], Some(token), U256::ZERO, &data, 5_000_000)
            .await;
        assert!(chain.receipt_status(tx).await.0);
        (Some(token), Some(forwarder))
    } else {
        (None, None)
    };
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
                match (token, forwarder, i % 10) {
                    (Some(token), _, 0 | 5) => {
                        let data = transfer_call(to, U256::from(seed % 1_000_000));
                        json!([{ "from": from, "to": token, "input": data, "gas": "0x186a0" }])
                    }
                    (_, Some(forwarder), 3) => {
                        let data = format!("0x{:0>64}", alloy_primitives::hex::encode(to));
                        json!([{ "from": from, "to": forwarder, "value": U256::from(seed % 1_000_000 + 2), "input": data, "gas": "0x186a0" }])
                    }
                    _ => json!([{ "from": from, "to": to, "value": U256::from(seed % 1_000_000), "gas": "0x5208" }]),
                }
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

/// Which histories a run keeps besides balances.
#[derive(Clone, Copy, PartialEq)]
enum Histories {
    /// Balances only.
    None,
    /// Transactions (`txlist`).
    Transactions,
    /// Transactions, internal transfers and tokens.
    All,
}

/// Fetches every block and its trace exactly as the indexer does, but keeps
/// the raw answers: the floor any indexer built on this node pays. With
/// transactions, the block comes with its transaction bodies and its
/// receipts are fetched too (the floor of an indexer that keeps `txlist`);
/// with every history, also the callTracer trace and, for each Transfer log,
/// `balanceOf` of both parties at the block in one batch.
async fn bare_fetch(
    node: &NodeClient,
    head: u64,
    concurrency: usize,
    histories: Histories,
) -> Duration {
    let transactions = histories != Histories::None;
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
                    let mut bytes = receipts.get().len();
                    if histories == Histories::All {
                        bytes += transfer_floor(node, number, receipts.get()).await;
                    }
                    bytes
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

/// The calls the transfer histories add to a block, fetched bare: its
/// callTracer trace and one batch of `balanceOf` for both parties of every
/// Transfer log in `receipts`; the bytes answered.
async fn transfer_floor(node: &NodeClient, number: u64, receipts: &str) -> usize {
    let calls: Box<RawValue> = node
        .call(
            "debug_traceBlockByNumber",
            (StateAt::Number(number), json!({ "tracer": "callTracer" })),
        )
        .await
        .unwrap();
    let receipts: Vec<serde_json::Value> = serde_json::from_str(receipts).unwrap();
    let topic = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
    let mut reads = std::collections::BTreeSet::new();
    for log in receipts.iter().flat_map(|r| r["logs"].as_array().unwrap()) {
        let topics = log["topics"].as_array().unwrap();
        if topics.len() == 3 && topics[0] == topic {
            for holder in &topics[1..] {
                let holder = &holder.as_str().unwrap()[26..];
                let data = format!("0x70a08231{holder:0>64}");
                reads.insert((log["address"].as_str().unwrap().to_owned(), data));
            }
        }
    }
    let params: Vec<(serde_json::Value, StateAt)> = reads
        .into_iter()
        .map(|(to, data)| (json!({ "to": to, "input": data }), StateAt::Number(number)))
        .collect();
    let balances: Vec<Box<RawValue>> = node.call_batch("eth_call", &params).await.unwrap();
    calls.get().len() + balances.iter().map(|b| b.get().len()).sum::<usize>()
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
async fn index(url: &str, head: u64, concurrency: usize, histories: Histories) -> (Duration, u64) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
    let config = IndexerConfig {
        concurrency,
        until: Some(head),
        transactions: histories != Histories::None,
        internal_transactions: histories == Histories::All,
        tokens: histories == Histories::All,
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
        generate(
            &chain,
            blocks,
            txs,
            js_node == Some(DevNodeKind::Ganache),
            js_node.is_none(),
        )
        .await;
        let head = chain.head().await;
        eprintln!("generated {head} blocks of {txs} transactions in {:.1?}", started.elapsed());

        let node = NodeClient::new(&url, NodeOptions::default()).unwrap();
        let node = &node;
        let rate = |d: Duration| head as f64 / d.as_secs_f64();
        let bare = |histories: Histories| async move {
            match js_node {
                None => bare_fetch(node, head, concurrency, histories).await,
                Some(kind) => {
                    let by_number = kind == DevNodeKind::Ganache;
                    bare_fetch_per_transaction(node, head, concurrency, by_number).await
                }
            }
        };
        // Per-transaction nodes fetch receipts for their balances anyway.
        let modes: Vec<Histories> = if js_node.is_some() {
            vec![Histories::None]
        } else {
            // BENCH_MODES=balances,transactions,all (the default) picks runs.
            let wanted = std::env::var("BENCH_MODES").unwrap_or_else(|_| "balances,transactions,all".into());
            wanted
                .split(',')
                .map(|mode| match mode {
                    "balances" => Histories::None,
                    "transactions" => Histories::Transactions,
                    "all" => Histories::All,
                    other => panic!("BENCH_MODES: {other}? balances, transactions or all"),
                })
                .collect()
        };
        let mut sizes = Vec::new();
        for &histories in &modes {
            let label = match histories {
                Histories::None => "balances",
                Histories::Transactions => "balances + transactions",
                Histories::All => "balances + transactions + internal + tokens",
            };
            let bare_1 = bare(histories).await;
            eprintln!("{label}: bare fetch {:.0} blocks/s", rate(bare_1));
            let (indexed, bytes) = index(&url, head, concurrency, histories).await;
            eprintln!("{label}: indexer {:.0} blocks/s, {bytes} bytes on disk", rate(indexed));
            let bare_2 = bare(histories).await;
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
        if let [(rate_off, off), (rate_tx, tx), (rate_all, all)] = sizes[..] {
            let transactions = (head * txs) as f64;
            println!(
                "transaction index: {:.0} bytes on disk per million transactions ({off} bytes without, {tx} with, {transactions} transactions); catch-up with it {:.2}× of without",
                (tx.saturating_sub(off)) as f64 / transactions * 1e6,
                rate_tx / rate_off
            );
            println!(
                "internal + token histories: {:.0} more bytes per million transactions ({all} bytes with every history; 3 in 10 transactions move tokens or forward value); catch-up {:.2}× of transactions only, {:.2}× of balances only",
                (all.saturating_sub(tx)) as f64 / transactions * 1e6,
                rate_all / rate_tx,
                rate_all / rate_off
            );
        }
    });
}
