//! Indexer catch-up speed against the bare cost of fetching the same blocks
//! and traces from the same node, measured in the same run.
//!
//! `scripts/bench.sh indexer_catch_up` (env: BENCH_BLOCKS, BENCH_TXS, BENCH_CONCURRENCY).

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use alloy_primitives::{Address, U256};
use common::Anvil;
use common::chain::Chain;
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

async fn generate(chain: &Chain, blocks: u64, txs: u64) {
    let dev = chain.accounts().await;
    chain.set_automine(false).await;
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

/// Fetches every block and its trace exactly as the indexer does, but keeps
/// the raw answers: the floor any indexer built on this node pays.
async fn bare_fetch(node: &NodeClient, head: u64, concurrency: usize) -> Duration {
    let started = Instant::now();
    let tracer = json!({ "tracer": "prestateTracer", "tracerConfig": { "diffMode": true } });
    let mut fetched = futures::stream::iter(1..=head)
        .map(|number| {
            let tracer = tracer.clone();
            async move {
                let block: Box<RawValue> = node
                    .call("eth_getBlockByNumber", (StateAt::Number(number), false))
                    .await
                    .unwrap();
                let trace: Box<RawValue> = node
                    .call(
                        "debug_traceBlockByNumber",
                        (StateAt::Number(number), tracer),
                    )
                    .await
                    .unwrap();
                block.get().len() + trace.get().len()
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

async fn index(url: &str, head: u64, concurrency: usize) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
    let config = IndexerConfig {
        concurrency,
        until: Some(head),
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
    elapsed
}

fn main() {
    let blocks = env("BENCH_BLOCKS", 10_000);
    let txs = env("BENCH_TXS", 20);
    let concurrency = env("BENCH_CONCURRENCY", 8) as usize;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let history = (blocks + 100).to_string();
        let anvil = Anvil::start(&["--accounts", "20", "--prune-history", &history]);
        let chain = Chain::new(&anvil.url);
        let started = Instant::now();
        generate(&chain, blocks, txs).await;
        let head = chain.head().await;
        eprintln!("generated {head} blocks of {txs} transactions in {:.1?}", started.elapsed());

        let node = NodeClient::new(&anvil.url, NodeOptions::default()).unwrap();
        let rate = |d: Duration| head as f64 / d.as_secs_f64();
        let bare_1 = bare_fetch(&node, head, concurrency).await;
        eprintln!("bare fetch: {:.0} blocks/s", rate(bare_1));
        let indexed = index(&anvil.url, head, concurrency).await;
        eprintln!("indexer:    {:.0} blocks/s", rate(indexed));
        let bare_2 = bare_fetch(&node, head, concurrency).await;
        eprintln!("bare fetch: {:.0} blocks/s", rate(bare_2));
        let baseline = (rate(bare_1) + rate(bare_2)) / 2.0;
        println!(
            "| {head} blocks × {txs} tx, concurrency {concurrency} | {:.0} | {:.0} | {:.0} | **{:.2}×** |",
            rate(bare_1),
            rate(bare_2),
            rate(indexed),
            rate(indexed) / baseline
        );
    });
}
