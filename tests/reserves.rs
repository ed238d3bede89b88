//! Proof of reserves end to end on a real anvil: an account fetches its
//! proof with its own key and checks it with the standard-library verifier
//! against anvil directly (not through weiport); the published ratio is what
//! anvil says the listed addresses hold at the named block over what the
//! accounts hold on the books; a shortfall planted on the chain shows in the
//! next snapshot, and a tampered leaf, balance or signature fails the check.

mod common;

use alloy_primitives::{Address, U256};
use common::chain::{Chain, ether};
use common::{Anvil, Key, Weiport, eventually};
use serde_json::{Value, json};

/// A fresh anvil, a client of it and its dev accounts, and a server on it
/// (in the data dir returned) taking a snapshot every second, deposits
/// final after 4 blocks and never swept.
async fn exchange_on_anvil() -> (Anvil, Chain, Vec<Address>, tempfile::TempDir, Weiport) {
    let anvil = Anvil::start(&[]);
    let chain = Chain::new(&anvil.url);
    let dev = chain.accounts().await;
    let dir = tempfile::tempdir().unwrap();
    let weiport = Weiport::serve(
        dir.path(),
        &[
            ("WEIPORT_NODE__URL", anvil.url.as_str()),
            ("WEIPORT_INDEXER__POLL_INTERVAL_MS", "50"),
            ("WEIPORT_EXCHANGE__DEPOSIT_CONFIRMATIONS", "4"),
            ("WEIPORT_WALLET__POLL_MS", "100"),
            ("WEIPORT_WALLET__SWEEP_THRESHOLD", "1000000"),
            ("WEIPORT_RESERVES__EVERY_SECS", "1"),
            ("WEIPORT_ACCESS__IP_WEIGHT_PER_MINUTE", "100000000"),
            ("WEIPORT_ACCESS__KEY_WEIGHT_PER_MINUTE", "100000000"),
        ],
    );
    (anvil, chain, dev, dir, weiport)
}

/// `key`'s signed GET of `path`, answered 200.
async fn get(weiport: &Weiport, key: &Key, path: &str, params: &str) -> Value {
    let (status, answer) = weiport
        .signed(reqwest::Method::GET, path, key, params)
        .await;
    assert_eq!(status, 200, "{path}: {answer}");
    answer
}

/// Deposits `wei` from `from` to `key`'s deposit address; returns it.
async fn deposit(weiport: &Weiport, chain: &Chain, key: &Key, from: Address, wei: U256) -> Address {
    let answer = get(weiport, key, "/sapi/v1/capital/deposit/address", "coin=ETH").await;
    let address: Address = answer["address"].as_str().unwrap().parse().unwrap();
    chain.transfer(from, address, wei).await;
    address
}

/// The account's ETH on the books (free + locked), in units of 10^-8.
async fn eth_units(weiport: &Weiport, key: &Key) -> u128 {
    let account = get(weiport, key, "/api/v3/account", "").await;
    let units = |text: &str| -> u128 {
        let (whole, fraction) = text.split_once('.').unwrap();
        let fraction = format!("{fraction:0<8}");
        whole.parse::<u128>().unwrap() * 100_000_000 + fraction[..8].parse::<u128>().unwrap()
    };
    account["balances"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["asset"] == "ETH")
        .map(|b| units(b["free"].as_str().unwrap()) + units(b["locked"].as_str().unwrap()))
        .sum()
}

/// The latest snapshot, once one owes `eth` units of ETH in all.
async fn snapshot_owing(weiport: &Weiport, eth: u128) -> Value {
    let mut found = Value::Null;
    eventually("a snapshot with the deposits", async || {
        found = weiport.public("/sapi/v1/reserves").await;
        let eth_index = found["assets"]
            .as_array()
            .and_then(|a| a.iter().position(|x| x == "ETH"));
        eth_index.is_some_and(|i| found["totals"][i] == eth.to_string())
    })
    .await;
    found
}

/// `key`'s proof of the latest snapshot, as its owner fetches it.
async fn proof(weiport: &Weiport, key: &Key) -> Value {
    get(weiport, key, "/sapi/v1/reserves/proof", "").await
}

/// Runs a verifier on `document` (written to a file, whose path `command`
/// gets as its argument): how it exited, and what it printed.
fn run_verifier(
    document: &Value,
    command: impl FnOnce(&str) -> std::process::Command,
) -> (std::process::ExitStatus, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("proof.json");
    std::fs::write(&file, document.to_string()).unwrap();
    let output = command(file.to_str().unwrap()).output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status, text)
}

/// Runs `tools/verify_reserves.py` on `document` against `node`: whether it
/// passed, and what it printed.
fn verify(document: &Value, node: &str) -> (bool, String) {
    let (status, text) = run_verifier(document, |file| {
        let mut python = std::process::Command::new(common::python());
        python
            .arg(common::repo_path("tools/verify_reserves.py"))
            .arg(file)
            .args(["--node", node]);
        python
    });
    assert!(matches!(status.code(), Some(0 | 1)), "{text}");
    (status.success(), text)
}

/// Runs `weiport verify-reserves` on `document` against `node`: whether it
/// passed, and what it printed.
fn verify_with_weiport(document: &Value, node: &str) -> (bool, String) {
    let (status, text) = run_verifier(document, |file| {
        common::weiport_command(&["verify-reserves", file, "--node", node], &[])
    });
    (status.success(), text)
}

/// anvil's balance of `address` at `block`.
async fn balance_at(chain: &Chain, address: &str, block: u64) -> U256 {
    let answer = chain
        .rpc("eth_getBalance", json!([address, format!("{block:#x}")]))
        .await;
    answer.as_str().unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_account_checks_its_proof_against_its_own_node() {
    let (anvil, chain, dev, _dir, weiport) = exchange_on_anvil().await;
    let alice = weiport.key(json!({"permissions": ["read", "trade"]})).await;
    let bob = weiport.key(json!({"permissions": ["read", "trade"]})).await;
    let alice_address = deposit(&weiport, &chain, &alice, dev[1], ether(1)).await;
    let bob_address = deposit(&weiport, &chain, &bob, dev[2], ether(2)).await;
    chain.mine_many(6).await;
    eventually("both deposits credited", async || {
        eth_units(&weiport, &alice).await == 100_000_000
            && eth_units(&weiport, &bob).await == 200_000_000
    })
    .await;
    let owed = eth_units(&weiport, &alice).await + eth_units(&weiport, &bob).await;
    let snapshot = snapshot_owing(&weiport, owed).await;

    // The reserves the snapshot lists are what anvil says at its block.
    let chain_reserves = &snapshot["chains"][0];
    let block = chain_reserves["block"].as_u64().unwrap();
    let mut listed = Vec::new();
    let mut on_chain = U256::ZERO;
    for holding in chain_reserves["addresses"].as_array().unwrap() {
        let address = holding["address"].as_str().unwrap();
        let wei = balance_at(&chain, address, block).await;
        assert_eq!(holding["balanceWei"], wei.to_string(), "{holding}");
        on_chain += wei;
        listed.push(address.parse::<Address>().unwrap());
    }
    for address in [alice_address, bob_address] {
        assert!(
            listed.contains(&address),
            "{address} not listed: {listed:?}"
        );
    }
    // The ratio: Σ eth_getBalance of the listed addresses ÷ Σ the accounts' ETH.
    let eth = snapshot["assets"]
        .as_array()
        .unwrap()
        .iter()
        .position(|a| a == "ETH")
        .unwrap();
    let coverage = &snapshot["coverage"][eth];
    let millionths =
        on_chain * U256::from(1_000_000u64) / (U256::from(owed) * U256::from(10u64.pow(10)));
    let expected = format!(
        "{}.{:06}",
        millionths / U256::from(1_000_000u64),
        millionths % U256::from(1_000_000u64)
    );
    assert_eq!(coverage["ratio"], expected, "{coverage}");
    assert_eq!(coverage["reservesWei"], on_chain.to_string());
    // The operator's status page shows the same against the liabilities.
    let status = reqwest::Client::new()
        .get(format!("{}/status", weiport.admin_url))
        .bearer_auth(&weiport.admin_token)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        status.contains("Reserves ETH")
            && status.contains(&format!("over liabilities 3: {expected}")),
        "{status}"
    );

    // Alice checks her proof against anvil itself, blocks later.
    chain.mine_many(3).await;
    let mine = proof(&weiport, &alice).await;
    assert_eq!(mine["proof"]["owed"][eth], "100000000", "{mine}");
    let (passed, printed) = verify(&mine, &anvil.url);
    assert!(passed, "{printed}");
    assert!(printed.contains("ETH: reserves"), "{printed}");
    let (passed, printed) = verify_with_weiport(&mine, &anvil.url);
    assert!(passed, "{printed}");
    assert!(printed.contains("ETH: reserves"), "{printed}");

    // An account owed nothing is in no leaf.
    let carol = weiport.key(json!({"permissions": ["read"]})).await;
    let none = proof(&weiport, &carol).await;
    assert!(none["proof"].is_null(), "{none}");
    assert_eq!(none["snapshot"]["accounts"], 2);

    // Tampered documents fail the check: the leaf, a balance, a signature.
    let mut owed_less = mine.clone();
    owed_less["proof"]["owed"][eth] = json!("1");
    assert!(!verify(&owed_less, &anvil.url).0);
    let mut richer = mine.clone();
    let claimed = &mut richer["snapshot"]["chains"][0]["addresses"][0]["balanceWei"];
    let more = claimed.as_str().unwrap().parse::<u128>().unwrap() + 1;
    *claimed = json!(more.to_string());
    let (passed, printed) = verify(&richer, &anvil.url);
    assert!(!passed && printed.contains("your node says"), "{printed}");
    let mut forged = mine.clone();
    let signature = forged["snapshot"]["chains"][0]["addresses"][0]["signature"]
        .as_str()
        .unwrap()
        .to_owned();
    let flipped = if signature.ends_with('c') { "b" } else { "c" };
    forged["snapshot"]["chains"][0]["addresses"][0]["signature"] =
        json!(format!("{}{flipped}", &signature[..signature.len() - 1]));
    let (passed, printed) = verify(&forged, &anvil.url);
    assert!(!passed && printed.contains("signature"), "{printed}");
    let (passed, printed) = verify_with_weiport(&forged, &anvil.url);
    assert!(!passed && printed.contains("FAILED"), "{printed}");
    let (passed, printed) = verify_with_weiport(&owed_less, &anvil.url);
    assert!(!passed && printed.contains("the proof"), "{printed}");
    // An address listed twice counts its coins twice: refused.
    let mut doubled = mine.clone();
    let first = doubled["snapshot"]["chains"][0]["addresses"][0].clone();
    doubled["snapshot"]["chains"][0]["addresses"]
        .as_array_mut()
        .unwrap()
        .push(first);
    let (passed, printed) = verify(&doubled, &anvil.url);
    assert!(!passed && printed.contains("listed twice"), "{printed}");
    // Another address's signature: it recovers to that address, not this one.
    let mut borrowed = mine;
    let addresses = borrowed["snapshot"]["chains"][0]["addresses"].clone();
    if addresses.as_array().unwrap().len() > 1 {
        borrowed["snapshot"]["chains"][0]["addresses"][0]["signature"] =
            addresses[1]["signature"].clone();
        assert!(!verify(&borrowed, &anvil.url).0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shortfall_on_the_chain_shows_in_the_next_snapshot() {
    let (anvil, chain, dev, _dir, weiport) = exchange_on_anvil().await;
    let alice = weiport.key(json!({"permissions": ["read", "trade"]})).await;
    let address = deposit(&weiport, &chain, &alice, dev[1], ether(3)).await;
    chain.mine_many(6).await;
    eventually("the deposit credited", async || {
        eth_units(&weiport, &alice).await == 300_000_000
    })
    .await;
    let before = snapshot_owing(&weiport, 300_000_000).await;
    let eth = before["assets"]
        .as_array()
        .unwrap()
        .iter()
        .position(|a| a == "ETH")
        .unwrap();
    let ratio = |snapshot: &Value| -> f64 {
        snapshot["coverage"][eth]["ratio"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(ratio(&before) >= 1.0, "{before}");

    // ETH leaves the hot wallet and the deposit address on the chain with
    // no entry in the ledger: what the exchange holds falls under what it
    // owes.
    chain.auto_impersonate().await;
    let hot: Address = before["chains"][0]["addresses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["address"].as_str().unwrap().parse::<Address>().unwrap())
        .find(|a| *a != address)
        .unwrap();
    let thief = Address::repeat_byte(0x42);
    let hot_balance = balance_at(&chain, &format!("{hot:#x}"), chain.head().await).await;
    chain.transfer(hot, thief, hot_balance - ether(1)).await;
    chain.transfer(address, thief, ether(2)).await;
    chain.mine_many(6).await;
    let mut after = Value::Null;
    eventually("a snapshot after the theft", async || {
        after = weiport.public("/sapi/v1/reserves").await;
        after["chains"][0]["block"].as_u64() > before["chains"][0]["block"].as_u64().map(|b| b + 6)
    })
    .await;
    assert!(ratio(&after) < 1.0, "{after}");
    let gauge = weiport
        .metrics()
        .await
        .lines()
        .find(|l| l.starts_with("weiport_reserves_ratio{asset=\"ETH\"}"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse::<f64>().ok());
    assert!(gauge.is_some_and(|g| g < 1.0), "{gauge:?}");

    // The verifier says so too, against anvil.
    let mine = proof(&weiport, &alice).await;
    let (passed, printed) = verify(&mine, &anvil.url);
    assert!(!passed && printed.contains("do not cover"), "{printed}");
    let (passed, printed) = verify_with_weiport(&mine, &anvil.url);
    assert!(!passed && printed.contains("do not cover"), "{printed}");
}
