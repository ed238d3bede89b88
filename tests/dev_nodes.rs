//! The indexer against the other nodes dApp developers run, as they run them
//! (pinned in tools/package.json, started on a free loopback port): Hardhat
//! (struct-log tracing per transaction, no block receipts) and Ganache (no
//! block-hash parameters either). Exact balances through transfers, value
//! forwarded by a contract, failed calls, a creation carrying value and fees
//! to the coinbase; on Hardhat also a reorganisation by snapshot and revert.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use alloy_primitives::{Address, U256};
use common::chain::{Chain, assert_index_matches, ether, wait_until_indexed};
use common::{DevNode, DevNodeKind};
use serde_json::json;
use weiport_indexer::{Indexer, IndexerConfig, NodeClient, NodeOptions};
use weiport_storage::{Store, StoreOptions};

const WAIT: Duration = Duration::from_secs(120);

struct Running {
    store: Store,
    stop: tokio::sync::watch::Sender<bool>,
    job: tokio::task::JoinHandle<Result<(), weiport_indexer::IndexerError>>,
    _dir: tempfile::TempDir,
}

fn start_indexer(url: &str) -> Running {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
    let config = IndexerConfig {
        poll_interval: Duration::from_millis(20),
        concurrency: 4,
        batch_blocks: 5,
        ..IndexerConfig::default()
    };
    let indexer = Indexer::new(
        NodeClient::new(url, NodeOptions::default()).unwrap(),
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

/// Addresses the traffic involves.
struct Cast {
    dev: Vec<Address>,
    fresh: Vec<Address>,
    internal_only: Vec<Address>,
    forwarder: Address,
}

/// `rounds` of traffic from the nodes' unlocked accounts, one transaction a
/// block (both nodes mine each at once): transfers, forwarded value, a
/// reverted call that carries value, an out-of-gas call.
async fn traffic(chain: &Chain, cast: &Cast, rounds: usize) {
    for round in 0..rounds {
        let dev = |n: usize| cast.dev[(round + n) % cast.dev.len()];
        let fresh = cast.fresh[round % cast.fresh.len()];
        let internal = cast.internal_only[round % cast.internal_only.len()];
        let sent = [
            chain
                .transfer(dev(0), fresh, ether(1) / U256::from(round + 2))
                .await,
            chain
                .forward(dev(1), cast.forwarder, internal, ether(1) / U256::from(3))
                .await,
            chain
                .send(dev(2), Some(cast.forwarder), ether(1), "0x", 60_000)
                .await,
            chain
                .send(
                    dev(3),
                    Some(cast.forwarder),
                    U256::from(1_000u64),
                    &format!("0x{:0>64}", alloy_primitives::hex::encode(internal)),
                    23_000,
                )
                .await,
            chain.transfer(dev(4), dev(5), ether(2)).await,
        ];
        for tx in sent {
            chain.receipt(tx).await;
        }
    }
}

async fn exact_on(kind: DevNodeKind) {
    let node = DevNode::start(kind);
    let chain = Chain::new(&node.url);
    let dev = chain.accounts().await;
    let forwarder = chain.deploy_forwarder(dev[0], ether(2)).await;
    let cast = Cast {
        dev: dev[..6].to_vec(),
        fresh: (1..=4u8).map(|i| Address::repeat_byte(0x50 + i)).collect(),
        internal_only: (1..=3u8).map(|i| Address::repeat_byte(0xb0 + i)).collect(),
        forwarder,
    };
    traffic(&chain, &cast, 4).await;
    // Catch up on what exists, then follow while more happens.
    let running = start_indexer(&node.url);
    traffic(&chain, &cast, 4).await;
    wait_until_indexed(&running.store, &chain, WAIT).await;

    let head = chain.head().await;
    let mut addresses: BTreeSet<Address> = chain.mentioned_addresses(head).await;
    addresses.extend(cast.internal_only.iter().chain(&cast.fresh).chain(&dev));
    addresses.extend([forwarder, Address::ZERO]);
    let blocks: Vec<u64> = (0..=head).collect();
    assert_index_matches(&running.store, &chain, &addresses, &blocks).await;
    for address in &cast.internal_only {
        let held = running.store.balance(address).unwrap().map(|b| b.wei);
        assert!(
            held.is_some_and(|w| !w.is_zero()),
            "{kind:?}: {address} received value only inside the EVM"
        );
    }

    if kind == DevNodeKind::Hardhat {
        // A reorganisation: back to a snapshot, then a longer other branch.
        let snapshot = chain.rpc("evm_snapshot", json!([])).await;
        traffic(&chain, &cast, 2).await;
        wait_until_indexed(&running.store, &chain, WAIT).await;
        assert_eq!(
            chain.rpc("evm_revert", json!([snapshot])).await,
            json!(true)
        );
        for _ in 0..3 {
            let tx = chain.transfer(dev[7], cast.fresh[0], ether(3)).await;
            chain.receipt(tx).await;
        }
        traffic(&chain, &cast, 2).await;
        wait_until_indexed(&running.store, &chain, WAIT).await;
        let head = chain.head().await;
        let blocks: Vec<u64> = (0..=head).collect();
        addresses.insert(dev[7]);
        assert_index_matches(&running.store, &chain, &addresses, &blocks).await;
    }
    running.stop.send_replace(true);
    running.job.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hardhat_balances_are_exact_through_internal_transfers_and_a_reorganisation() {
    exact_on(DevNodeKind::Hardhat).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ganache_balances_are_exact_through_internal_transfers() {
    exact_on(DevNodeKind::Ganache).await;
}
