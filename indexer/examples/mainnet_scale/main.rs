//! The indexer at mainnet scale: a replay node serving a recorded
//! mainnet-shaped chain, the indexer's own rate against it, the bytes its
//! index takes, and read latencies as the index grows.
//!
//! `scripts/bench-mainnet-scale.sh` runs the whole measurement; the steps:
//!
//! ```text
//! mainnet_scale serve TRANSACTIONS GENESIS_OUT       # records, then serves; prints its URL
//! mainnet_scale bare URL [CONCURRENCY]               # what the indexer asks, fetched bare
//! mainnet_scale index URL DIR GENESIS TRANSACTIONS   # indexes that many transactions
//! mainnet_scale reads DIR URL                        # read latencies on the index in DIR
//! ```

mod chain;
mod replay;

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use alloy_primitives::{Address, U256};
use futures::StreamExt;
use serde::Deserialize;
use serde_json::json;
use serde_json::value::RawValue;
use weiport_indexer::{Indexer, IndexerConfig, NodeClient, NodeOptions, StateAt};
use weiport_storage::{HistoryPage, Store, StoreOptions, TransferKind};

/// The allocator the weiport binary runs with, so the figures are its.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |n: usize| -> &str {
        args.get(n)
            .map(String::as_str)
            .unwrap_or_else(|| panic!("missing argument {n}; see the module docs"))
    };
    let number = |n: usize| -> u64 { arg(n).parse().expect("a number") };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(
            std::env::var("WORKERS")
                .ok()
                .and_then(|w| w.parse().ok())
                .unwrap_or(2),
        )
        .enable_all()
        .build()
        .expect("runtime");
    match arg(0) {
        "serve" => runtime.block_on(serve(number(1), Path::new(arg(2)))),
        "bare" => runtime.block_on(bare(arg(1), args.get(2).map_or(8, |c| c.parse().unwrap()))),
        "index" => runtime.block_on(index(
            arg(1),
            Path::new(arg(2)),
            PathBuf::from(arg(3)),
            number(4),
        )),
        "reads" => runtime.block_on(reads(Path::new(arg(1)), arg(2))),
        other => panic!("{other}: serve, bare, index or reads"),
    }
}

/// Records the chain, writes its genesis allocations, then serves it until killed.
async fn serve(transactions: u64, genesis: &Path) {
    let started = Instant::now();
    let chain = chain::Chain::generate(transactions);
    eprintln!(
        "recorded {} blocks, {} transactions, {} accounts in {:.1?}",
        chain.head(),
        chain.transactions,
        chain.accounts,
        started.elapsed()
    );
    let mut alloc = String::from("{\"alloc\":{");
    for id in 0..chain::FUNDED {
        if id > 0 {
            alloc.push(',');
        }
        alloc.push_str(&format!(
            "\"{}\":{{\"balance\":\"{:#x}\"}}",
            Address::from(chain::address(id)),
            chain::GENESIS_WEI
        ));
    }
    alloc.push_str("}}");
    std::fs::write(genesis, alloc).expect("genesis file written");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    let app = replay::router(Arc::new(replay::Replay::new(chain)));
    println!("{url}");
    std::io::stdout().flush().expect("stdout");
    axum::serve(listener, app).await.expect("serve");
}

#[derive(Debug, Deserialize)]
struct Stats {
    head: u64,
    transactions: u64,
}

async fn stats(node: &NodeClient) -> Stats {
    node.call("replay_stats", ()).await.expect("replay_stats")
}

#[derive(Debug, Deserialize)]
struct BareBlock {
    hash: alloy_primitives::B256,
    withdrawals: Vec<BareWithdrawal>,
}

#[derive(Debug, Deserialize)]
struct BareWithdrawal {
    address: Address,
}

#[derive(Debug, Deserialize)]
struct BareReceipt {
    logs: Vec<BareLog>,
}

#[derive(Debug, Deserialize)]
struct BareLog {
    address: Address,
    topics: Vec<alloy_primitives::B256>,
}

/// Fetches every block as the indexer does with every history on, keeping
/// the answers raw but for what the next request needs: the replay node's
/// serving rate, the ceiling of any indexer reading it.
async fn bare(url: &str, concurrency: usize) {
    let node = NodeClient::new(url, NodeOptions::default()).expect("url");
    let node = &node;
    let Stats { head, transactions } = stats(node).await;
    let prestate = json!({ "tracer": "prestateTracer", "tracerConfig": { "diffMode": true } });
    let calls = json!({ "tracer": "callTracer" });
    let started = Instant::now();
    let mut fetched = futures::stream::iter(1..=head)
        .map(|number| {
            let (prestate, calls) = (prestate.clone(), calls.clone());
            async move {
                let at = StateAt::Number(number);
                let block: BareBlock = node
                    .call("eth_getBlockByNumber", (at, false))
                    .await
                    .unwrap();
                let trace: Box<RawValue> = node
                    .call("debug_traceBlockByNumber", (at, prestate))
                    .await
                    .unwrap();
                let bodies: Box<RawValue> =
                    node.call("eth_getBlockByNumber", (at, true)).await.unwrap();
                let receipts: Vec<BareReceipt> =
                    node.call("eth_getBlockReceipts", (at,)).await.unwrap();
                let frames: Box<RawValue> = node
                    .call("debug_traceBlockByNumber", (at, calls))
                    .await
                    .unwrap();
                let topic = alloy_primitives::b256!(
                    "ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef"
                );
                let mut pairs = BTreeSet::new();
                for log in receipts.iter().flat_map(|r| &r.logs) {
                    if log.topics.len() == 3 && log.topics[0] == topic {
                        for holder in &log.topics[1..] {
                            pairs.insert((log.address, Address::from_slice(&holder[12..])));
                        }
                    }
                }
                let state = StateAt::Hash(block.hash);
                let reads: Vec<(serde_json::Value, StateAt)> = pairs
                    .into_iter()
                    .map(|(token, holder)| {
                        let input =
                            format!("0x70a08231{:0>64}", alloy_primitives::hex::encode(holder));
                        (json!({ "to": token, "input": input }), state)
                    })
                    .collect();
                let balances: Vec<Box<RawValue>> =
                    node.call_batch("eth_call", &reads).await.unwrap();
                let withdrawn: Vec<Address> = block.withdrawals.iter().map(|w| w.address).collect();
                let credited = node.balances(&withdrawn, state).await.unwrap();
                trace.get().len()
                    + bodies.get().len()
                    + frames.get().len()
                    + balances.len()
                    + credited.len()
            }
        })
        .buffered(concurrency);
    let mut bytes = 0usize;
    while let Some(n) = fetched.next().await {
        bytes += n;
    }
    let elapsed = started.elapsed();
    println!(
        "bare fetch: {head} blocks, {transactions} transactions in {:.2} s: {:.0} tx/s, {:.0} MB/s of answers",
        elapsed.as_secs_f64(),
        transactions as f64 / elapsed.as_secs_f64(),
        bytes as f64 / elapsed.as_secs_f64() / 1e6
    );
}

/// A number from the environment: the knobs tried while profiling.
fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// The store in `dir`, with the sizes the environment sets
/// (`WRITE_BUFFER_MB`, `BLOCK_CACHE_MB`) over the defaults.
fn open_store(dir: &Path) -> Store {
    let defaults = StoreOptions::default();
    let mebibytes =
        |name: &str, default: usize| env_number(name).map_or(default, |mb| (mb as usize) << 20);
    let options = StoreOptions {
        write_buffer_bytes: mebibytes("WRITE_BUFFER_MB", defaults.write_buffer_bytes),
        block_cache_bytes: mebibytes("BLOCK_CACHE_MB", defaults.block_cache_bytes),
        ..defaults
    };
    Store::open(dir, &options).expect("store")
}

/// Peak resident memory of this process, from the kernel.
fn peak_rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|kb| kb.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Bytes of the database's table files: the data as stored, without the
/// write-ahead logs.
fn disk_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .expect("data dir")
        .flatten()
        .filter(|entry| entry.path().extension().is_some_and(|e| e == "sst"))
        .filter_map(|entry| entry.metadata().ok())
        .map(|meta| meta.len())
        .sum()
}

/// Indexes (or continues indexing) up to the block holding the
/// `transactions`-th transaction, every history on; the rate, the peak
/// memory, and the bytes per transaction once compacted. At the head, the
/// index is checked against the recording.
async fn index(url: &str, dir: &Path, genesis: PathBuf, transactions: u64) {
    let node = NodeClient::new(url, NodeOptions::default()).expect("url");
    let until: u64 = node
        .call("replay_blockAfterTransactions", (transactions,))
        .await
        .expect("replay_blockAfterTransactions");
    let through = |block: u64| {
        let node = node.clone();
        async move {
            node.call::<_, u64>("replay_transactionsThrough", (block,))
                .await
                .expect("replay_transactionsThrough")
        }
    };
    let store = open_store(dir);
    let from = store.cursor().expect("cursor").map_or(0, |c| c.number);
    let before = through(from).await;
    let config = IndexerConfig {
        genesis_file: Some(genesis),
        until: Some(until),
        concurrency: env_number("CONCURRENCY").map_or(8, |c| c as usize),
        batch_blocks: env_number("BATCH_BLOCKS")
            .map_or(IndexerConfig::default().batch_blocks, |b| b as usize),
        ..IndexerConfig::default()
    };
    let indexer = Indexer::new(node.clone(), store.clone(), config);
    let (_stop, stop_rx) = tokio::sync::watch::channel(false);
    let started = Instant::now();
    indexer.run(stop_rx).await.expect("indexer");
    let elapsed = started.elapsed();
    let indexed = through(until).await - before;
    println!(
        "indexed blocks {}..={until}: {indexed} transactions in {:.2} s: {:.0} tx/s; peak memory {} MiB",
        from + 1,
        elapsed.as_secs_f64(),
        indexed as f64 / elapsed.as_secs_f64(),
        peak_rss_bytes() >> 20
    );
    let started = Instant::now();
    store.flush().expect("flush");
    store.compact();
    let total = through(until).await;
    let bytes = disk_bytes(dir);
    println!(
        "compacted in {:.1?}: {bytes} bytes for {total} transactions: {:.0} bytes a transaction",
        started.elapsed(),
        bytes as f64 / total as f64
    );
    for (family, size) in store.family_sizes() {
        let each = size as f64 / total as f64;
        if each >= 0.05 {
            println!("  {family}: {each:.1} bytes a transaction");
        }
    }
    let Stats { head, .. } = stats(&node).await;
    if until == head {
        check(&node, &store).await;
    }
}

/// Every sampled account's ether and token balances in the index equal the
/// recording's at the head.
async fn check(node: &NodeClient, store: &Store) {
    let mut dice = 7u64;
    let mut ids: Vec<u32> = (0..chain::CREATED_BASE).step_by(97).collect();
    ids.extend((0..2_000).map(|_| {
        dice = chain::mix(dice);
        (dice % u64::from(chain::CREATED_BASE)) as u32
    }));
    let addresses: Vec<Address> = ids.iter().map(|id| chain::address(*id).into()).collect();
    let expected = node
        .balances(&addresses, StateAt::Latest)
        .await
        .expect("balances");
    let mut wrong = 0;
    for (address, wei) in addresses.iter().zip(&expected) {
        let indexed = store
            .balance(address)
            .expect("read")
            .map_or(U256::ZERO, |b| b.wei);
        if indexed != *wei {
            wrong += 1;
            eprintln!("{address}: indexed {indexed}, recorded {wei}");
        }
    }
    let token = Address::from(chain::address(chain::PEOPLE));
    let holders: Vec<Address> = addresses.iter().take(500).copied().collect();
    for holder in &holders {
        let input = format!("0x70a08231{:0>64}", alloy_primitives::hex::encode(holder));
        let answer: alloy_primitives::Bytes = node
            .call(
                "eth_call",
                (json!({ "to": token, "input": input }), StateAt::Latest),
            )
            .await
            .expect("balanceOf");
        let recorded = U256::from_be_slice(&answer);
        let indexed = store
            .token_balance(holder, &token, None)
            .expect("read")
            .map_or(U256::ZERO, |h| h.balance);
        // A holder the token never moved for is deemed to hold the float.
        if indexed != recorded && !(indexed.is_zero() && recorded == U256::from(chain::TOKEN_FLOAT))
        {
            wrong += 1;
            eprintln!("{holder} of {token}: indexed {indexed}, recorded {recorded}");
        }
    }
    assert_eq!(wrong, 0, "the index differs from the recording");
    println!(
        "checked: {} balances and {} token balances equal the recording's",
        addresses.len(),
        holders.len()
    );
}

/// Median and 99th percentile of `samples` reads, asked twice: the first
/// time each finds what it reads where it lies (the block cache, else the
/// files), the second time in the block cache. The first pass depends on
/// how much of the index the cache holds, the second on the index's
/// structure alone.
fn latency(label: &str, samples: usize, mut read: impl FnMut(usize) -> usize) {
    let mut rows = 0;
    let mut pass = || {
        let mut times: Vec<Duration> = Vec::with_capacity(samples);
        for n in 0..samples {
            let started = Instant::now();
            rows += read(n);
            times.push(started.elapsed());
        }
        times.sort_unstable();
        let micros = |d: Duration| d.as_secs_f64() * 1e6;
        (
            micros(times[samples / 2]),
            micros(times[samples * 99 / 100]),
        )
    };
    let (first_p50, first_p99) = pass();
    let (again_p50, again_p99) = pass();
    println!(
        "| {label} | {first_p50:.1} µs | {first_p99:.1} µs | {again_p50:.1} µs | {again_p99:.1} µs | {:.1} |",
        rows as f64 / (2 * samples) as f64
    );
}

/// Read latencies on the index in `dir`: `balance` at a past block,
/// `txlist` pages of the busy account, `tokentx` pages; the same queries
/// whatever the index's size (past blocks among the first million
/// transactions' blocks).
async fn reads(dir: &Path, url: &str) {
    let node = NodeClient::new(url, NodeOptions::default()).expect("url");
    let early: u64 = node
        .call("replay_blockAfterTransactions", (1_000_000u64,))
        .await
        .expect("replay_blockAfterTransactions");
    let store = open_store(dir);
    let head = store.cursor().expect("cursor").expect("indexed").number;
    let indexed: u64 = node
        .call("replay_transactionsThrough", (head,))
        .await
        .expect("replay_transactionsThrough");
    println!("index of {indexed} transactions (blocks 0..={head}):");
    println!("| read | p50 | p99 | p50 asked again | p99 asked again | rows |");
    println!("|---|---|---|---|---|---|");
    let mut dice = 11u64;
    let queries: Vec<(Address, u64)> = (0..20_000)
        .map(|_| {
            dice = chain::mix(dice);
            let id = (dice % u64::from(chain::PEOPLE)) as u32;
            dice = chain::mix(dice);
            (chain::address(id).into(), 1 + dice % early)
        })
        .collect();
    latency(
        "`balance` at a past block (random account and block)",
        20_000,
        |n| {
            let (address, block) = queries[n];
            usize::from(store.balance_at(&address, block).expect("read").is_some())
        },
    );
    let busy = Address::from(chain::address(chain::BUSY));
    let page = |skip: usize, descending: bool| HistoryPage {
        from_block: 0,
        to_block: u64::MAX,
        descending,
        skip,
        take: 100,
    };
    for (label, skip, descending) in [
        ("first page, oldest first", 0, false),
        ("10th page, oldest first", 900, false),
        ("first page, newest first", 0, true),
    ] {
        latency(
            &format!("`txlist` of the busy account, 100 a page, {label}"),
            2_000,
            |_| {
                store
                    .address_transactions(&busy, page(skip, descending))
                    .expect("read")
                    .len()
            },
        );
        latency(
            &format!("`tokentx` of the busy account, 100 a page, {label}"),
            2_000,
            |_| {
                store
                    .address_transfers(&busy, TransferKind::Token, page(skip, descending), |_| true)
                    .expect("read")
                    .len()
            },
        );
    }
}
