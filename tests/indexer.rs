//! The indexer against a real anvil node: exact balances through transfers,
//! reverts, internal transfers, coinbase fees, reorganisations and node faults.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use alloy_primitives::{Address, U256};
use common::chain::{Chain, assert_index_matches, ether, wait_until_indexed};
use common::proxy::{Fault, FaultProxy};
use common::rpc_filter::{Lacks, RpcFilter};
use common::{Anvil, eventually};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use weiport_indexer::{Indexer, IndexerConfig, IndexerError, NodeClient, NodeOptions};
use weiport_storage::{Store, StoreOptions};

const WAIT: Duration = Duration::from_secs(60);

/// An indexer running in this process over a temporary store.
struct Running {
    store: Store,
    stop: tokio::sync::watch::Sender<bool>,
    job: tokio::task::JoinHandle<Result<(), IndexerError>>,
    _dir: tempfile::TempDir,
}

fn fast_config() -> IndexerConfig {
    IndexerConfig {
        poll_interval: Duration::from_millis(20),
        concurrency: 4,
        batch_blocks: 7,
        ..IndexerConfig::default()
    }
}

fn start_indexer(url: &str, config: IndexerConfig) -> Running {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
    let options = NodeOptions {
        max_retries: 2,
        initial_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(50),
        request_timeout: Duration::from_secs(5),
    };
    let indexer = Indexer::new(
        NodeClient::new(url, options).unwrap(),
        store.clone(),
        config,
    );
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let job = tokio::spawn(indexer.run(stop_rx));
    Running {
        store,
        stop,
        job,
        _dir: dir,
    }
}

impl Running {
    async fn stop(self) {
        self.stop.send_replace(true);
        self.job.await.unwrap().unwrap();
    }
}

/// Who takes part in the random traffic.
struct Traffic {
    dev: Vec<Address>,
    fresh: Vec<Address>,
    forwarder: Address,
    internal_only: Vec<Address>,
}

/// Mines `blocks` blocks of random traffic: transfers between dev accounts and
/// fresh addresses, value forwarded by the contract to addresses that appear
/// in no transaction, reverted calls that carry value, and out-of-gas calls.
/// Returns the number of failed transactions.
async fn random_traffic(
    chain: &Chain,
    rng: &mut StdRng,
    blocks: usize,
    traffic: &Traffic,
) -> usize {
    let Traffic {
        dev,
        fresh,
        forwarder,
        internal_only,
    } = traffic;
    let forwarder = *forwarder;
    chain.set_automine(false).await;
    let mut sent = Vec::new();
    for _ in 0..blocks {
        for _ in 0..rng.random_range(1..=12) {
            let pick = |rng: &mut StdRng, from: &[Address]| from[rng.random_range(0..from.len())];
            let tx = match rng.random_range(0..10) {
                0..=3 => {
                    let value =
                        U256::from(rng.random_range(1..2_000u64)) * U256::from(10u64.pow(15));
                    chain
                        .transfer(pick(rng, dev), pick(rng, fresh), value)
                        .await
                }
                4 | 5 => {
                    let value = U256::from(rng.random_range(1..100_000_000u64));
                    let to = if rng.random_bool(0.5) {
                        pick(rng, fresh)
                    } else {
                        pick(rng, dev)
                    };
                    chain.transfer(pick(rng, fresh), to, value).await
                }
                6 => {
                    let value = U256::from(rng.random_range(1..500u64)) * U256::from(10u64.pow(15));
                    let from = if rng.random_bool(0.5) {
                        pick(rng, dev)
                    } else {
                        pick(rng, fresh)
                    };
                    chain
                        .forward(from, forwarder, pick(rng, internal_only), value)
                        .await
                }
                7 => {
                    chain
                        .send(pick(rng, dev), Some(forwarder), ether(1), "0x", 60_000)
                        .await
                }
                8 => {
                    let data = format!(
                        "0x{:0>64}",
                        alloy_primitives::hex::encode(pick(rng, internal_only))
                    );
                    chain
                        .send(
                            pick(rng, fresh),
                            Some(forwarder),
                            U256::from(1_000u64),
                            &data,
                            23_000,
                        )
                        .await
                }
                _ => {
                    chain
                        .transfer(
                            pick(rng, dev),
                            pick(rng, dev),
                            ether(rng.random_range(1..5)),
                        )
                        .await
                }
            };
            sent.push(tx);
        }
        chain.mine().await;
    }
    chain.set_automine(true).await;
    let mut failed = 0;
    for tx in sent {
        if !chain.receipt_status(tx).await.0 {
            failed += 1;
        }
    }
    failed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn balances_equal_the_node_through_transfers_reverts_internal_calls_and_fees() {
    let anvil = Anvil::start(&["--accounts", "10"]);
    exact_balances(&anvil, &anvil.url).await;
}

/// A node with tracing by transaction only and no block receipts (Hardhat's
/// capabilities): struct logs and one receipt per transaction, exact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_with_struct_logs_only_and_no_block_receipts_is_indexed_exactly() {
    // anvil records the steps of struct-log traces only when asked to.
    let anvil = Anvil::start(&["--accounts", "10", "--steps-tracing"]);
    let filter = RpcFilter::start(
        &anvil.url,
        Lacks {
            methods: vec![
                "debug_traceBlockByNumber",
                "trace_replayBlockTransactions",
                "eth_getBlockReceipts",
            ],
            block_hash_objects: false,
        },
    )
    .await;
    exact_balances(&anvil, &filter.url).await;
    assert!(filter.forwarded("debug_traceTransaction") > 100);
    assert!(filter.forwarded("eth_getTransactionReceipt") > 100);
}

/// A node that refuses block-hash objects (Ganache's -32700), traces
/// transactions only and has no block receipts, as Ganache: state read by
/// number with the block hash checked around the reads, exact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_refusing_block_hash_objects_is_indexed_exactly() {
    let anvil = Anvil::start(&["--accounts", "10", "--steps-tracing"]);
    let filter = RpcFilter::start(
        &anvil.url,
        Lacks {
            methods: vec![
                "debug_traceBlockByNumber",
                "trace_replayBlockTransactions",
                "eth_getBlockReceipts",
            ],
            block_hash_objects: true,
        },
    )
    .await;
    exact_balances(&anvil, &filter.url).await;
    assert!(filter.forwarded("eth_getBalance") > 100);
    assert!(filter.forwarded("debug_traceTransaction") > 100);

    // The same node with block tracing: prestate diffs, state by number.
    let anvil = Anvil::start(&["--accounts", "10"]);
    let filter = RpcFilter::start(
        &anvil.url,
        Lacks {
            methods: vec![],
            block_hash_objects: true,
        },
    )
    .await;
    exact_balances(&anvil, &filter.url).await;
    assert!(filter.forwarded("debug_traceBlockByNumber") > 10);
}

/// A node whose struct-log traces record no steps (anvil without
/// --steps-tracing) is not taken to have moved nothing: the indexer stops
/// and says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn struct_logs_without_steps_stop_the_indexer_instead_of_missing_transfers() {
    let anvil = Anvil::start(&["--accounts", "2"]);
    let chain = Chain::new(&anvil.url);
    let dev = chain.accounts().await;
    chain.deploy_forwarder(dev[0], ether(1)).await;
    let filter = RpcFilter::start(
        &anvil.url,
        Lacks {
            methods: vec!["debug_traceBlockByNumber", "trace_replayBlockTransactions"],
            block_hash_objects: false,
        },
    )
    .await;
    let running = start_indexer(&filter.url, fast_config());
    let stopped = tokio::time::timeout(WAIT, running.job)
        .await
        .expect("stops")
        .unwrap()
        .unwrap_err();
    assert!(
        stopped.to_string().contains("no steps recorded"),
        "{stopped}"
    );
}

/// A node lacking a method the chosen plan needs (here: receipts of any
/// kind) stops the indexer with a message naming the node and the method,
/// instead of pausing and retrying forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_method_the_plan_needs_and_the_node_lacks_stops_with_its_name() {
    let anvil = Anvil::start(&["--accounts", "2"]);
    let chain = Chain::new(&anvil.url);
    let dev = chain.accounts().await;
    chain
        .receipt(chain.transfer(dev[0], dev[1], ether(1)).await)
        .await;
    let filter = RpcFilter::start(
        &anvil.url,
        Lacks {
            methods: vec!["eth_getTransactionReceipt", "eth_getBlockReceipts"],
            block_hash_objects: false,
        },
    )
    .await;
    let config = IndexerConfig {
        balance_source: Some(weiport_indexer::BalanceSource::Touched),
        ..fast_config()
    };
    let running = start_indexer(&filter.url, config);
    let stopped = tokio::time::timeout(WAIT, running.job)
        .await
        .expect("stops instead of retrying forever")
        .unwrap()
        .unwrap_err();
    let message = stopped.to_string();
    assert!(
        message.contains("anvil") && message.contains("eth_getTransactionReceipt"),
        "{message}"
    );
}

/// The scenario of random traffic with internal transfers, reverts and a
/// second coinbase, indexed through `indexer_url` and checked against the node.
async fn exact_balances(anvil: &Anvil, indexer_url: &str) {
    let chain = Chain::new(&anvil.url);
    chain.auto_impersonate().await;
    let dev = chain.accounts().await;
    let fresh: Vec<Address> = (1..=12u8).map(|i| Address::repeat_byte(0x40 + i)).collect();
    let internal_only: Vec<Address> = (1..=4u8).map(|i| Address::repeat_byte(0xa0 + i)).collect();
    let mut rng = StdRng::seed_from_u64(0x5eed);

    let forwarder = chain.deploy_forwarder(dev[0], ether(1)).await;
    for address in &fresh {
        let funding = chain.transfer(dev[1], *address, ether(1)).await;
        chain.receipt(funding).await;
    }
    let traffic = Traffic {
        dev: dev.clone(),
        fresh: fresh.clone(),
        forwarder,
        internal_only: internal_only.clone(),
    };
    let mut failed = random_traffic(&chain, &mut rng, 25, &traffic).await;

    // Catch up on what exists, then follow while more is produced, with
    // tips going to a second coinbase.
    let running = start_indexer(indexer_url, fast_config());
    let coinbase = Address::repeat_byte(0xcb);
    chain.rpc("anvil_setCoinbase", json!([coinbase])).await;
    failed += random_traffic(&chain, &mut rng, 25, &traffic).await;
    wait_until_indexed(&running.store, &chain, WAIT).await;

    let head = chain.head().await;
    let mut addresses: BTreeSet<Address> = chain.mentioned_addresses(head).await;
    addresses.extend(internal_only.iter().chain(&fresh).chain(&dev));
    addresses.extend([forwarder, coinbase, Address::ZERO]);
    let blocks: Vec<u64> = [0, 1, 5, 13, 20, 30, 40, head - 1, head]
        .into_iter()
        .filter(|b| *b <= head)
        .collect();
    assert_index_matches(&running.store, &chain, &addresses, &blocks).await;

    // The scenario really exercised what it claims to.
    assert!(failed >= 5, "only {failed} failed transactions");
    for address in &internal_only {
        let balance = running
            .store
            .balance(address)
            .unwrap()
            .expect("internal transfer indexed")
            .wei;
        assert!(
            !balance.is_zero(),
            "{address} received value only through internal calls"
        );
    }
    assert!(
        !running
            .store
            .balance(&coinbase)
            .unwrap()
            .unwrap()
            .wei
            .is_zero(),
        "coinbase earned tips"
    );
    assert!(head > 60, "head {head}");
    running.stop().await;
}

/// Runs `anvil_reorg` or `anvil_rollback` with automine off and then drops
/// the pool: anvil puts the replaced blocks' transactions back into it, and
/// automine would otherwise mine them at a moment of its choosing, so the
/// height after the call would depend on timing.
async fn reorganise_quietly(chain: &Chain, method: &'static str, params: serde_json::Value) {
    chain.set_automine(false).await;
    chain.rpc(method, params).await;
    chain.rpc("anvil_dropAllTransactions", json!([])).await;
    chain.set_automine(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reorganisations_of_depth_1_5_and_30_and_rollbacks_reconverge_exactly() {
    let anvil = Anvil::start(&["--accounts", "6"]);
    let chain = Chain::new(&anvil.url);
    let dev = chain.accounts().await;
    let before: Vec<Address> = (1..=5u8).map(|i| Address::repeat_byte(0x10 + i)).collect();
    let after: Vec<Address> = (1..=5u8).map(|i| Address::repeat_byte(0x20 + i)).collect();
    let running = start_indexer(&anvil.url, fast_config());
    let mut addresses: BTreeSet<Address> =
        dev.iter().chain(&before).chain(&after).copied().collect();
    addresses.insert(Address::ZERO);

    for i in 0..40u64 {
        chain
            .transfer(
                dev[(i % 3) as usize],
                before[(i % 5) as usize],
                ether(1 + i % 4),
            )
            .await;
    }
    wait_until_indexed(&running.store, &chain, WAIT).await;

    for depth in [1u64, 5, 30] {
        let head = chain.settled_head().await;
        // The replaced blocks send other amounts to other addresses, from other senders.
        let pairs: Vec<_> = (0..depth)
            .step_by(2)
            .map(|offset| {
                let tx = json!({ "from": dev[3 + (offset % 3) as usize], "to": after[(offset % 5) as usize], "value": ether(7 + offset) });
                json!([tx, offset])
            })
            .collect();
        reorganise_quietly(&chain, "anvil_reorg", json!([depth, pairs])).await;
        assert_eq!(chain.head().await, head, "anvil_reorg keeps the height");
        wait_until_indexed(&running.store, &chain, WAIT).await;
        let window: Vec<u64> = (head - depth - 1..=head).collect();
        assert_index_matches(&running.store, &chain, &addresses, &window).await;
        // Life goes on after the reorganisation.
        for i in 0..3u64 {
            chain.transfer(dev[0], before[i as usize], ether(1)).await;
        }
        wait_until_indexed(&running.store, &chain, WAIT).await;
    }

    // Rollbacks shorten the chain; the index must follow it down, then up a new branch.
    for depth in [1u64, 5] {
        let head = chain.settled_head().await;
        reorganise_quietly(&chain, "anvil_rollback", json!([depth])).await;
        assert_eq!(chain.head().await, head - depth);
        wait_until_indexed(&running.store, &chain, WAIT).await;
        for i in 0..depth + 2 {
            chain
                .transfer(dev[4], after[(i % 5) as usize], ether(2))
                .await;
        }
        wait_until_indexed(&running.store, &chain, WAIT).await;
    }

    let head = chain.head().await;
    let all: Vec<u64> = (0..=head).collect();
    assert_index_matches(&running.store, &chain, &addresses, &all).await;
    // The replaced blocks' transactions are gone from every list, the new
    // branches' are there.
    common::history::assert_transactions_indexed(&running.store, &chain, head).await;
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_outages_and_garbage_answers_pause_indexing_without_corrupting_it() {
    let anvil = Anvil::start(&["--accounts", "4"]);
    let chain = Chain::new(&anvil.url);
    let dev = chain.accounts().await;
    let proxy = FaultProxy::start(&anvil.url).await;
    let running = start_indexer(&proxy.url, fast_config());
    let targets: Vec<Address> = (1..=4u8).map(|i| Address::repeat_byte(0x70 + i)).collect();

    for i in 0..10u64 {
        chain
            .transfer(dev[0], targets[(i % 4) as usize], ether(1))
            .await;
    }
    wait_until_indexed(&running.store, &chain, WAIT).await;

    for fault in [Fault::Drop, Fault::Garbage] {
        proxy.set(fault);
        let stuck_at = running.store.cursor().unwrap().unwrap();
        for i in 0..15u64 {
            chain
                .transfer(dev[1], targets[(i % 4) as usize], U256::from(1_000 + i))
                .await;
        }
        // The new blocks are mined: the indexer's next calls would find
        // them. Three of those calls (one call and its two retries) faulted
        // show it tried and could not.
        let before = proxy.faulted();
        eventually(&format!("{fault:?}: three calls faulted"), async || {
            proxy.faulted() >= before + 3
        })
        .await;
        assert_eq!(
            running.store.cursor().unwrap().unwrap(),
            stuck_at,
            "{fault:?}: nothing indexed while the node is unreachable"
        );
        assert!(
            !running.job.is_finished(),
            "{fault:?}: the indexer waits; it does not give up"
        );
        proxy.set(Fault::None);
        wait_until_indexed(&running.store, &chain, WAIT).await;
    }

    let head = chain.head().await;
    let mut addresses: BTreeSet<Address> = dev.iter().chain(&targets).copied().collect();
    addresses.insert(Address::ZERO);
    assert_index_matches(
        &running.store,
        &chain,
        &addresses,
        &(0..=head).collect::<Vec<_>>(),
    )
    .await;
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_ends_indexing_while_a_node_call_hangs() {
    let anvil = Anvil::start(&["--accounts", "2"]);
    let chain = Chain::new(&anvil.url);
    let dev = chain.accounts().await;
    let proxy = FaultProxy::start(&anvil.url).await;
    let running = start_indexer(&proxy.url, fast_config());
    chain.transfer(dev[0], dev[1], ether(1)).await;
    wait_until_indexed(&running.store, &chain, WAIT).await;
    proxy.set(Fault::Stall);
    // The indexer polls the head every 20 ms: its next call now hangs, and
    // would until the request timeout (5 s) and its retries ran out.
    eventually("a node call held by the stalled proxy", async || {
        proxy.faulted() >= 1
    })
    .await;
    tokio::time::timeout(Duration::from_secs(2), running.stop())
        .await
        .expect("the stop is not held up by the node call in flight");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_pruned_the_state_stops_the_indexer_with_a_clear_error() {
    let anvil = Anvil::start(&["--accounts", "2", "--prune-history", "5"]);
    let chain = Chain::new(&anvil.url);
    let dev = chain.accounts().await;
    for _ in 0..20 {
        chain.transfer(dev[0], dev[1], ether(1)).await;
    }
    let running = start_indexer(&anvil.url, fast_config());
    let error = tokio::time::timeout(WAIT, running.job)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    let message = error.to_string();
    assert!(message.contains("no state for that block"), "{message}");
    assert_eq!(
        running.store.cursor().unwrap(),
        None,
        "nothing half-bootstrapped"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_index_refuses_a_node_of_another_chain() {
    let first = Anvil::start(&["--accounts", "2"]);
    let running = start_indexer(&first.url, fast_config());
    let chain = Chain::new(&first.url);
    wait_until_indexed(&running.store, &chain, WAIT).await;
    let Running {
        store,
        stop,
        job,
        _dir,
    } = running;
    stop.send_replace(true);
    job.await.unwrap().unwrap();

    // Same chain id, different genesis: another anvil instance.
    let second = Anvil::start(&["--accounts", "2", "--timestamp", "1000"]);
    let options = NodeOptions {
        max_retries: 0,
        ..NodeOptions::default()
    };
    let indexer = Indexer::new(
        NodeClient::new(&second.url, options).unwrap(),
        store.clone(),
        fast_config(),
    );
    let (_stop, stop_rx) = tokio::sync::watch::channel(false);
    let error = indexer.run(stop_rx).await.unwrap_err();
    assert!(matches!(error, IndexerError::WrongChain { .. }), "{error}");
}
