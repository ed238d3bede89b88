//! The wallet end to end on a real anvil: ccxt's unified deposit and
//! withdrawal methods (fetch_deposit_address, fetch_deposits, withdraw,
//! fetch_withdrawals) against weiport, unchanged but for their URLs; deposits
//! credited once final, never when reorganised away, once across a SIGKILL;
//! withdrawals reaching the chain and our own query API, or refunded when
//! their transaction fails; the books checked against the chain after each.

mod common;

use std::time::Duration;

use alloy_primitives::{Address, U256};
use common::chain::{Chain, ether};
use common::wallet::{ccxt, eth_free};
use common::{Anvil, Key, Weiport, eventually};
use serde_json::{Value, json};

const CONFIRMATIONS: u64 = 4;

/// A server on `anvil` with the wallet looking every 100 ms, settings
/// in `extra` added.
fn serve(dir: &std::path::Path, anvil: &Anvil, extra: &[(&str, &str)]) -> Weiport {
    let mut env = vec![
        ("WEIPORT_NODE__URL", anvil.url.as_str()),
        ("WEIPORT_INDEXER__POLL_INTERVAL_MS", "50"),
        ("WEIPORT_EXCHANGE__DEPOSIT_CONFIRMATIONS", "4"),
        ("WEIPORT_WALLET__POLL_MS", "100"),
        ("WEIPORT_ACCESS__IP_WEIGHT_PER_MINUTE", "100000000"),
        ("WEIPORT_ACCESS__KEY_WEIGHT_PER_MINUTE", "100000000"),
    ];
    env.extend_from_slice(extra);
    Weiport::serve(dir, &env)
}

/// A fresh anvil, a client of it, its dev accounts, and a data dir.
async fn node() -> (Anvil, Chain, Vec<Address>, tempfile::TempDir) {
    let anvil = Anvil::start(&[]);
    let chain = Chain::new(&anvil.url);
    let dev = chain.accounts().await;
    (anvil, chain, dev, tempfile::tempdir().unwrap())
}

/// No sweeps: a deposit address keeps what it received.
const NO_SWEEPS: (&str, &str) = ("WEIPORT_WALLET__SWEEP_THRESHOLD", "1000000");

/// A key on a new account with `permissions`, bound to 127.0.0.1 when `bound`.
async fn key(weiport: &Weiport, permissions: &[&str], bound: bool) -> Key {
    let ips: Vec<&str> = if bound { vec!["127.0.0.1"] } else { vec![] };
    weiport
        .key(json!({ "permissions": permissions, "allowed_ips": ips }))
        .await
}

/// The raw deposit history (`/sapi/v1/capital/deposit/hisrec`) of `key`.
async fn hisrec(weiport: &Weiport, key: &Key) -> Value {
    let (status, rows) = weiport
        .signed(
            reqwest::Method::GET,
            "/sapi/v1/capital/deposit/hisrec",
            key,
            "coin=ETH",
        )
        .await;
    assert_eq!(status, 200, "{rows}");
    rows
}

async fn deposits(weiport: &Weiport, key: &Key) -> Vec<Value> {
    ccxt(weiport, key, "deposits", &[])
        .await
        .as_array()
        .unwrap()
        .clone()
}

/// The books against the chain: every account's ETH and the withdrawals
/// pending equal the deposits credited less the withdrawals completed, and
/// the hot wallet and deposit addresses hold at least that on chain.
async fn assert_books_match_the_chain(weiport: &Weiport) {
    let (status, report) = weiport
        .admin(reqwest::Method::GET, "/admin/wallet", json!({}))
        .await;
    assert_eq!(status, 200, "{report}");
    let units = |field: &str| -> u128 {
        let text = report[field].as_str().unwrap();
        let (whole, fraction) = text.split_once('.').unwrap();
        whole.parse::<u128>().unwrap() * 100_000_000 + fraction.parse::<u128>().unwrap()
    };
    assert_eq!(
        units("accounts") + units("withdrawals_pending"),
        units("deposits_credited") - units("withdrawals_completed"),
        "{report}"
    );
    let on_chain: U256 = report["on_chain_wei"].as_str().unwrap().parse().unwrap();
    let owed =
        U256::from(units("accounts") + units("withdrawals_pending")) * U256::from(10u64.pow(10));
    assert!(on_chain >= owed, "{report}");
}

/// `key`'s deposit address, as ccxt finds it.
async fn deposit_address(weiport: &Weiport, key: &Key) -> Address {
    let found = ccxt(weiport, key, "address", &[]).await;
    found["address"].as_str().unwrap().parse().unwrap()
}

/// Sends `wei` from `from` to `to` and waits until `key`'s history shows a
/// deposit pending.
async fn send_pending(
    weiport: &Weiport,
    chain: &Chain,
    key: &Key,
    (from, to): (Address, Address),
    wei: U256,
) {
    chain.transfer(from, to, wei).await;
    wait_indexed_head(weiport, chain).await;
    eventually("a deposit pending", || async {
        deposits(weiport, key)
            .await
            .iter()
            .any(|d| d["status"] == "pending")
    })
    .await;
}

/// A raw withdrawal request with `params` as `key`, refused with `(status, code)`.
async fn assert_refused(weiport: &Weiport, key: &Key, params: &str, (status, code): (u16, i64)) {
    let (got, answer) = weiport
        .signed(
            reqwest::Method::POST,
            "/sapi/v1/capital/withdraw/apply",
            key,
            params,
        )
        .await;
    assert_eq!(
        (got, answer["code"].clone()),
        (status, json!(code)),
        "{answer}"
    );
}

/// Deposits `ether` ETH from `from` to `key`'s deposit address (found with
/// ccxt) and waits until it is credited; the address.
async fn fund(weiport: &Weiport, chain: &Chain, key: &Key, from: Address, eth: u64) -> Address {
    let address = deposit_address(weiport, key).await;
    chain.transfer(from, address, ether(eth)).await;
    chain.mine_many(CONFIRMATIONS).await;
    let credited = format!("{eth}.00000000");
    eventually("the deposit credited", || async {
        eth_free(weiport, key).await == credited
    })
    .await;
    address
}

async fn wait_indexed_head(weiport: &Weiport, chain: &Chain) {
    let head = chain.settled_head().await;
    weiport.wait_indexed(head).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deposits_are_credited_once_final_never_when_reorganised_away() {
    let (anvil, chain, dev, dir) = node().await;
    // No sweeps here: the block reorganised away below must be the deposit's.
    let weiport = serve(dir.path(), &anvil, &[NO_SWEEPS]);
    let alice = key(&weiport, &["read", "trade"], false).await;

    let found = ccxt(&weiport, &alice, "address", &[]).await;
    let address: Address = found["address"].as_str().unwrap().parse().unwrap();
    assert_eq!(found["currency"], "ETH");
    // The same address every time, and another account's is another.
    assert_eq!(ccxt(&weiport, &alice, "address", &[]).await, found);
    let bob = key(&weiport, &["read"], false).await;
    assert_ne!(
        ccxt(&weiport, &bob, "address", &[]).await["address"],
        found["address"]
    );

    // 1.25 ETH arrives: pending until it is 4 blocks deep.
    let tx = chain
        .transfer(dev[0], address, ether(5) / U256::from(4))
        .await;
    wait_indexed_head(&weiport, &chain).await;
    eventually("the deposit seen as pending", || async {
        let seen = deposits(&weiport, &alice).await;
        seen.len() == 1 && seen[0]["status"] == "pending"
    })
    .await;
    assert_eq!(eth_free(&weiport, &alice).await, "0.00000000");
    chain.mine_many(CONFIRMATIONS - 1).await;
    eventually("the deposit credited", || async {
        eth_free(&weiport, &alice).await == "1.25000000"
    })
    .await;
    let seen = deposits(&weiport, &alice).await;
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0]["status"], "ok");
    assert_eq!(seen[0]["amount"], 1.25);
    assert_eq!(seen[0]["txid"], json!(tx.to_string()));
    assert_eq!(seen[0]["address"], found["address"]);

    // An internal transfer (half of 1 ETH through a forwarding contract) is a deposit too.
    let forwarder = chain.deploy_forwarder(dev[1], U256::ZERO).await;
    chain.forward(dev[1], forwarder, address, ether(1)).await;
    chain.mine_many(CONFIRMATIONS).await;
    eventually("the internal transfer credited", || async {
        eth_free(&weiport, &alice).await == "1.75000000"
    })
    .await;

    // 0.5 ETH arrives and its block is reorganised away before it is final.
    send_pending(
        &weiport,
        &chain,
        &alice,
        (dev[2], address),
        ether(1) / U256::from(2),
    )
    .await;
    chain.set_automine(false).await;
    chain.rpc("anvil_reorg", json!([1, []])).await;
    chain.rpc("anvil_dropAllTransactions", json!([])).await;
    chain.set_automine(true).await;
    chain.mine_many(CONFIRMATIONS * 2).await;
    wait_indexed_head(&weiport, &chain).await;
    // Once a deposit to another account, in a later block, is credited, the
    // wallet has scanned past where the dropped one was: it is neither
    // pending nor credited.
    fund(&weiport, &chain, &bob, dev[3], 1).await;
    let seen = deposits(&weiport, &alice).await;
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(seen.iter().all(|d| d["status"] == "ok"), "{seen:?}");
    assert_eq!(eth_free(&weiport, &alice).await, "1.75000000");
    assert_books_match_the_chain(&weiport).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deposit_seen_before_a_kill_is_credited_once_after_the_restart() {
    let (anvil, chain, dev, dir) = node().await;
    // No sweeps: the test counts blocks, and a sweep would mine one.
    let mut weiport = serve(dir.path(), &anvil, &[NO_SWEEPS]);
    let alice = key(&weiport, &["read", "trade"], false).await;
    let address = deposit_address(&weiport, &alice).await;
    // 2 ETH and 12,345 Wei: the Wei below the exchange's 10^-8 stay on chain.
    send_pending(
        &weiport,
        &chain,
        &alice,
        (dev[0], address),
        ether(2) + U256::from(12_345),
    )
    .await;
    weiport
        .stop("KILL", Duration::from_secs(10))
        .expect("killed");
    chain.mine_many(CONFIRMATIONS).await;

    let weiport = serve(dir.path(), &anvil, &[NO_SWEEPS]);
    eventually("the deposit credited after the restart", || async {
        eth_free(&weiport, &alice).await == "2.00000000"
    })
    .await;
    chain.mine_many(CONFIRMATIONS).await;
    wait_indexed_head(&weiport, &chain).await;
    // Once a deposit to another account, in a later block, is credited, the
    // wallet has scanned the first deposit's block again since the restart
    // (a scan starts at the block of the last deposit credited): a second
    // credit would have come by then.
    let bob = key(&weiport, &["read"], false).await;
    fund(&weiport, &chain, &bob, dev[1], 1).await;
    assert_eq!(eth_free(&weiport, &alice).await, "2.00000000");
    let seen = deposits(&weiport, &alice).await;
    assert_eq!(seen.len(), 1, "{seen:?}");
    let rows = hisrec(&weiport, &alice).await;
    assert_eq!(rows[0]["amount"], "2.00000000", "{rows}");
    assert_eq!(rows[0]["weiReceived"], "2000000000000012345", "{rows}");
    assert_books_match_the_chain(&weiport).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn withdrawals_reach_the_chain_or_are_refunded() {
    let (anvil, chain, dev, dir) = node().await;
    let weiport = serve(dir.path(), &anvil, &[]);
    let alice = key(&weiport, &["read", "trade", "withdraw"], true).await;

    // Funded by a real deposit.
    let address = fund(&weiport, &chain, &alice, dev[0], 3).await;

    // Refused: a key without the permission, and one not bound to addresses.
    let destination = Address::repeat_byte(0x5a);
    let params = format!("coin=ETH&address={destination}&amount=0.1");
    let reader = key(&weiport, &["read", "trade"], true).await;
    let unbound = key(&weiport, &["read", "withdraw"], false).await;
    for refused in [&reader, &unbound] {
        assert_refused(&weiport, refused, &params, (401, -2015)).await;
    }
    let answer = ccxt(
        &weiport,
        &reader,
        "withdraw",
        &[&destination.to_string(), "0.1"],
    )
    .await;
    // ccxt raises -2015 as AuthenticationError, or as DDoSProtection once the
    // key has authenticated before (its reading of a temporary ban).
    assert!(
        ["AuthenticationError", "DDoSProtection"].contains(&answer["error"].as_str().unwrap_or("")),
        "{answer}"
    );
    // A wrong checksum is refused.
    let miscased = destination.to_checksum(None).replacen("5A", "5a", 1);
    let params = format!("coin=ETH&address={miscased}&amount=0.1");
    assert_refused(&weiport, &alice, &params, (400, -1102)).await;

    // 1 ETH out: debited with its fee at once, on chain once final.
    let first = ccxt(
        &weiport,
        &alice,
        "withdraw",
        &[&destination.to_string(), "1", "w-1"],
    )
    .await;
    let id = first["id"].as_str().expect("an id").to_owned();
    assert_eq!(eth_free(&weiport, &alice).await, "1.99950000");
    // The same withdrawOrderId again: the same withdrawal, nothing more taken.
    let again = ccxt(
        &weiport,
        &alice,
        "withdraw",
        &[&destination.to_string(), "1", "w-1"],
    )
    .await;
    assert_eq!(again["id"], json!(id));
    assert_eq!(eth_free(&weiport, &alice).await, "1.99950000");
    let listed = ccxt(&weiport, &alice, "withdrawals", &[]).await;
    assert_eq!(listed[0]["status"], "pending", "{listed}");
    assert_books_match_the_chain(&weiport).await;
    chain.settled_head().await;
    chain.mine_many(CONFIRMATIONS).await;
    eventually("the withdrawal completed", || async {
        ccxt(&weiport, &alice, "withdrawals", &[]).await[0]["status"] == "ok"
    })
    .await;
    let on_chain = chain
        .node
        .balance(destination, weiport_indexer::StateAt::Latest)
        .await
        .unwrap();
    assert_eq!(on_chain, ether(1));
    let (_, etherscan) = query_balance(&weiport, &alice, destination).await;
    assert_eq!(etherscan, ether(1).to_string());
    let listed = ccxt(&weiport, &alice, "withdrawals", &[]).await;
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed[0]["amount"], 1.0);
    assert_eq!(listed[0]["fee"], 0.0005);
    assert!(listed[0]["txid"].as_str().unwrap().starts_with("0x"));
    assert_books_match_the_chain(&weiport).await;

    // 0.5 ETH to a contract that reverts on a plain transfer: mined, failed, refunded.
    let reverter = chain.deploy_forwarder(dev[1], U256::ZERO).await;
    let failed = ccxt(
        &weiport,
        &alice,
        "withdraw",
        &[&reverter.to_string(), "0.5"],
    )
    .await;
    assert_eq!(eth_free(&weiport, &alice).await, "1.49900000");
    chain.settled_head().await;
    chain.mine_many(CONFIRMATIONS).await;
    eventually("the failed withdrawal refunded", || async {
        eth_free(&weiport, &alice).await == "1.99950000"
    })
    .await;
    let listed = ccxt(&weiport, &alice, "withdrawals", &[]).await;
    let shown = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["id"] == failed["id"])
        .unwrap();
    assert_eq!(shown["status"], "failed", "{listed}");
    assert_eq!(
        chain
            .node
            .balance(reverter, weiport_indexer::StateAt::Latest)
            .await
            .unwrap(),
        U256::ZERO
    );
    assert_books_match_the_chain(&weiport).await;

    // The deposit was swept into the hot wallet meanwhile (status 1), and
    // the sweep was never taken for a deposit.
    eventually("the deposit swept", || async {
        let rows = hisrec(&weiport, &alice).await;
        rows[0]["status"] == 1
    })
    .await;
    let seen = deposits(&weiport, &alice).await;
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(
        chain
            .node
            .balance(address, weiport_indexer::StateAt::Latest)
            .await
            .unwrap()
            < ether(1) / U256::from(100),
        "the deposit address still holds its deposit"
    );
}

/// Etherscan's `balance` of `address` through our own query API.
async fn query_balance(weiport: &Weiport, key: &Key, address: Address) -> (u16, String) {
    let response = reqwest::get(format!(
        "{}/api?module=account&action=balance&address={address}&tag=latest&apikey={}",
        weiport.url, key.id
    ))
    .await
    .unwrap();
    let status = response.status().as_u16();
    let body: Value = response.json().await.unwrap();
    (
        status,
        body["result"].as_str().unwrap_or_default().to_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stuck_withdrawal_is_followed_across_a_kill_replaced_and_paid_once() {
    let (anvil, chain, dev, dir) = node().await;
    // Replaced after a second stuck.
    let settings = [NO_SWEEPS, ("WEIPORT_WALLET__REPLACE_AFTER_SECS", "1")];
    let mut weiport = serve(dir.path(), &anvil, &settings);
    let alice = key(&weiport, &["read", "withdraw"], true).await;
    fund(&weiport, &chain, &alice, dev[0], 2).await;

    // Nothing is mined now: the withdrawal's transaction waits in the pool.
    chain.set_automine(false).await;
    let destination = Address::repeat_byte(0x6b);
    let sent = ccxt(
        &weiport,
        &alice,
        "withdraw",
        &[&destination.to_string(), "0.7"],
    )
    .await;
    let id = sent["id"].as_str().unwrap().to_owned();
    let first = sent_tx(&weiport, &alice, &id, "").await;
    weiport
        .stop("KILL", Duration::from_secs(10))
        .expect("killed");

    // After the restart it is followed, not signed anew, until stuck long
    // enough to be replaced with higher fees under the same nonce.
    let hot = Address::from_slice(
        &alloy_primitives::hex::decode("a0Ee7A142d267C1f36714E4a8F75612F20a79720").unwrap(),
    );
    let nonce_before = chain
        .rpc("eth_getTransactionCount", json!([hot, "latest"]))
        .await;
    let weiport = serve(dir.path(), &anvil, &settings);
    sent_tx(&weiport, &alice, &id, &first).await;
    chain.set_automine(true).await;
    chain.mine_many(CONFIRMATIONS + 1).await;
    eventually("the withdrawal completed", || async {
        ccxt(&weiport, &alice, "withdrawals", &[]).await[0]["status"] == "ok"
    })
    .await;
    assert_eq!(
        chain
            .node
            .balance(destination, weiport_indexer::StateAt::Latest)
            .await
            .unwrap(),
        ether(7) / U256::from(10)
    );
    // One nonce used: one payment, whichever attempt was mined.
    let nonce_after = chain
        .rpc("eth_getTransactionCount", json!([hot, "latest"]))
        .await;
    let count =
        |v: &Value| u64::from_str_radix(v.as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
    assert_eq!(count(&nonce_after), count(&nonce_before) + 1);
    assert_eq!(eth_free(&weiport, &alice).await, "1.29950000");
    assert_books_match_the_chain(&weiport).await;
}

/// The transaction withdrawal `id` shows once it shows one other than `not`.
async fn sent_tx(weiport: &Weiport, key: &Key, id: &str, not: &str) -> String {
    let mut tx = String::new();
    let what = format!("withdrawal {id} showing a transaction other than {not:?}");
    eventually(&what, async || {
        let listed = ccxt(weiport, key, "withdrawals", &[]).await;
        tx = listed
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["id"] == json!(id))
            .and_then(|w| w["txid"].as_str())
            .unwrap_or_default()
            .to_owned();
        tx.starts_with("0x") && tx != not
    })
    .await;
    tx
}

/// The wallet's passes so far, from `/metrics` (none before its first).
async fn passes(weiport: &Weiport) -> u64 {
    let text = weiport.metrics().await;
    text.lines()
        .filter(|line| line.starts_with("weiport_wallet_passes_total"))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|value| value as u64)
        .sum()
}

/// A process alone leads for good (the role's channel is closed): its
/// wallet still waits its poll interval between passes. It went round at
/// once before, a worker's whole core, and every request on that worker
/// waited behind it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wallet_alone_waits_its_poll_interval_between_passes() {
    let (anvil, _chain, _dev, dir) = node().await;
    let weiport = serve(dir.path(), &anvil, &[]);
    eventually("the wallet's first pass", async || {
        passes(&weiport).await > 0
    })
    .await;
    let before = passes(&weiport).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let during = passes(&weiport).await - before;
    // Every 100 ms: about ten; a loop that does not wait makes thousands.
    assert!(
        (1..=40).contains(&during),
        "{during} wallet passes in one second at a 100 ms poll interval"
    );
}
