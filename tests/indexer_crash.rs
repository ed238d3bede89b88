//! Crash safety: `weiport index` killed with SIGKILL at random points of a
//! long catch-up, restarted on the same data dir, ends exactly right: every
//! balance change recorded once, none lost, none duplicated.

mod common;

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use alloy_primitives::{Address, U256};
use common::chain::{Chain, ether};
use common::tokens::{assert_transfers_indexed, deploy, token_code, transfer_call};
use common::{Anvil, weiport_command};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use weiport_indexer::StateAt;
use weiport_storage::{Store, StoreOptions};

const BLOCKS: u64 = 2_100;

/// `DRILL_<name>` from the environment (scripts/drills.sh), else `default`.
fn drill(name: &str, default: u64) -> u64 {
    std::env::var(format!("DRILL_{name}"))
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_during_catch_up_never_double_counts_or_loses_a_change() {
    let anvil = Anvil::start(&["--accounts", "5", "--prune-history", "10000"]);
    let chain = Chain::new(&anvil.url);
    let dev = chain.accounts().await;
    let fresh: Vec<Address> = (1..=20u8).map(|i| Address::repeat_byte(0x30 + i)).collect();
    let mut rng = StdRng::seed_from_u64(42);
    let (blocks, kills) = (drill("BLOCKS", BLOCKS), drill("KILLS", 8));

    // One to three transfers per block, sent in one JSON-RPC batch with
    // explicit nonces, then mined.
    // A token and a forwarder: token transfers and internal transfers are
    // indexed through the kills too.
    let token = deploy(&chain, dev[0], &token_code().1).await;
    let forwarder = chain.deploy_forwarder(dev[0], ether(1)).await;
    let beneficiary = Address::repeat_byte(0x99);
    chain.set_automine(false).await;
    let mut nonces = Vec::new();
    for account in &dev {
        let count = chain
            .rpc("eth_getTransactionCount", json!([account, "latest"]))
            .await;
        nonces.push(
            u64::from_str_radix(count.as_str().unwrap().trim_start_matches("0x"), 16).unwrap(),
        );
    }
    for block in 0..blocks {
        let mut txs: Vec<serde_json::Value> = (0..rng.random_range(1..=3usize))
            .map(|i| {
                let sender = (block as usize + i) % dev.len();
                nonces[sender] += 1;
                let to = fresh[rng.random_range(0..fresh.len())];
                let value = U256::from(rng.random_range(1..10u64)) * ether(1) / U256::from(1000);
                json!([{ "from": dev[sender], "to": to, "value": value, "nonce": nonces[sender] - 1, "gas": "0x5208" }])
            })
            .collect();
        let sender = block as usize % dev.len();
        if block % 7 == 0 {
            let to = fresh[rng.random_range(0..fresh.len())];
            let data = transfer_call(to, U256::from(rng.random_range(1..1_000_000u64)));
            txs.push(json!([{ "from": dev[0], "to": token, "input": data, "nonce": nonces[0], "gas": "0x30d40" }]));
            nonces[0] += 1;
        } else if block % 11 == 0 {
            let data = format!("0x{:0>64}", alloy_primitives::hex::encode(beneficiary));
            txs.push(json!([{ "from": dev[sender], "to": forwarder, "value": ether(2) / U256::from(1000), "input": data, "nonce": nonces[sender], "gas": "0x30d40" }]));
            nonces[sender] += 1;
        }
        chain
            .node
            .call_batch::<_, serde_json::Value>("eth_sendTransaction", &txs)
            .await
            .unwrap();
        chain.mine().await;
    }
    let head = chain.head().await;
    assert!(head >= blocks, "head {head}");

    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().to_str().unwrap().to_owned();
    let until = head.to_string();
    let env = [
        ("WEIPORT_DATA_DIR", data_dir.as_str()),
        ("WEIPORT_NODE__URL", anvil.url.as_str()),
        ("WEIPORT_INDEXER__BATCH_BLOCKS", "50"),
        ("WEIPORT_LOG__LEVEL", "warn"),
    ];
    let cursor = |dir: &str| {
        let store = Store::open(dir, &StoreOptions::default()).unwrap();
        store.cursor().unwrap().map_or(0, |c| c.number)
    };

    let mut kills_mid_catch_up = 0;
    let mut last = 0;
    let mut runs = 0;
    for _ in 0..60.max(kills * 8) {
        runs += 1;
        let mut child = weiport_command(&["index", "--until", &until], &env)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        tokio::time::sleep(Duration::from_millis(rng.random_range(60..300))).await;
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let now = cursor(&data_dir);
        assert!(now >= last, "cursor went back from {last} to {now}");
        // A kill that interrupted progress: something was committed, not all.
        if now > last && now < head {
            kills_mid_catch_up += 1;
        }
        last = now;
        if kills_mid_catch_up >= kills || now >= head {
            break;
        }
    }
    assert!(
        kills_mid_catch_up >= kills.min(5),
        "only {kills_mid_catch_up} kills landed during the catch-up"
    );
    eprintln!(
        "drill: indexer SIGKILLed {runs} times, {kills_mid_catch_up} during the catch-up of {head} blocks"
    );

    let output = weiport_command(&["index", "--until", &until], &env)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let store = Store::open(&data_dir, &StoreOptions::default()).unwrap();
    assert_eq!(store.cursor().unwrap().unwrap().number, head);

    // For every address and every block: a history row exists exactly where
    // the node's balance changed, and holds the node's value.
    let mut addresses: Vec<Address> = dev.iter().chain(&fresh).copied().collect();
    addresses.extend([Address::ZERO, token, forwarder, beneficiary]);
    let mut rows: BTreeMap<(Address, u64), U256> = BTreeMap::new();
    for row in store.history() {
        let (address, block, wei) = row.unwrap();
        assert!(rows.insert((address, block), wei).is_none());
    }
    let mut previous = vec![U256::ZERO; addresses.len()];
    for block in 0..=head {
        let node = chain
            .node
            .balances(&addresses, StateAt::Number(block))
            .await
            .unwrap();
        for (i, address) in addresses.iter().enumerate() {
            let row = rows.remove(&(*address, block));
            if node[i] != previous[i] {
                assert_eq!(row, Some(node[i]), "{address} changed at block {block}");
            } else if let Some(wei) = row {
                assert_eq!(wei, node[i], "{address} has a stale row at block {block}");
            }
        }
        previous = node;
    }
    assert!(
        rows.is_empty(),
        "rows for blocks or addresses that never changed: {rows:?}"
    );
    for (i, address) in addresses.iter().enumerate() {
        assert_eq!(
            store
                .balance(address)
                .unwrap()
                .map_or(U256::ZERO, |b| b.wei),
            previous[i],
            "{address}"
        );
    }
    // Every address's transactions, once each, in order, despite the kills.
    let transactions = common::history::assert_transactions_indexed(&store, &chain, head).await;
    // And every token and internal transfer, and each holder's balance.
    let holders: Vec<Address> = fresh
        .iter()
        .chain([&dev[0], &forwarder, &beneficiary])
        .copied()
        .collect();
    let transfers = assert_transfers_indexed(&store, &chain, head, &holders, &[token]).await;
    eprintln!(
        "drill: {transactions} transactions and {transfers} transfers indexed exactly after the kills"
    );
}
