//! Two chains in one process: two real anvils with their own chain ids,
//! each chain's index apart in the one data dir, answered by Etherscan V2's
//! `chainid` (read through etherscan-python pointed at `/v2/api?chainid=N`),
//! and one ETH balance fed and drained over both networks through ccxt.

mod common;

use std::time::Duration;

use alloy_primitives::{Address, U256};
use common::chain::{Chain, ether};
use common::history::{node_transactions, txlists};
use common::tokens::{deploy, node_logs, node_token_transfers, token_code, transfer_call};
use common::wallet::{ccxt, eth_free};
use common::{Anvil, Key, Weiport, eventually, run_client_with_input, weiport_command};
use serde_json::{Value, json};

const FIRST: u64 = 31337;
const SECOND: u64 = 31338;
const CONFIRMATIONS: u64 = 3;

/// Two anvils: the first with anvil's own chain id, the second another.
fn two_nodes() -> (Anvil, Anvil) {
    let second = SECOND.to_string();
    (Anvil::start(&[]), Anvil::start(&["--chain-id", &second]))
}

/// `[[chains]]` naming both nodes, the second as the ARBITRUM network.
fn chains_table(first: &Anvil, second: &Anvil, first_id: u64) -> String {
    format!(
        r#"[{{ id = {first_id}, name = "Anvil", url = "{}", network = "ETH" }}, {{ id = {SECOND}, name = "Anvil L2", url = "{}", network = "ARBITRUM", withdraw_fee = "0.0001", indexer = {{ poll_interval_ms = 30 }} }}]"#,
        first.url, second.url
    )
}

fn serve(dir: &std::path::Path, chains: &str, extra: &[(&str, &str)]) -> Weiport {
    let mut env = common::history_env("", extra);
    env.retain(|(name, _)| *name != "WEIPORT_NODE__URL");
    env.extend([
        ("WEIPORT_CHAINS", chains),
        ("WEIPORT_INDEXER__POLL_INTERVAL_MS", "50"),
        ("WEIPORT_EXCHANGE__DEPOSIT_CONFIRMATIONS", "3"),
        ("WEIPORT_WALLET__POLL_MS", "100"),
    ]);
    Weiport::serve(dir, &env)
}

/// `/v2/api` with `query` on chain `chain_id`.
async fn v2(weiport: &Weiport, chain_id: u64, query: &str) -> Value {
    reqwest::get(format!(
        "{}/v2/api?chainid={chain_id}&{query}&apikey={}",
        weiport.url,
        api_key(weiport).await
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap()
}

/// A read key for the Etherscan face, made once per server.
async fn api_key(weiport: &Weiport) -> String {
    static KEYS: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());
    if let Some((_, key)) = KEYS
        .lock()
        .unwrap()
        .iter()
        .find(|(url, _)| *url == weiport.url)
    {
        return key.clone();
    }
    let key = weiport.key(json!({ "permissions": ["read"] })).await.id;
    KEYS.lock()
        .unwrap()
        .push((weiport.url.clone(), key.clone()));
    key
}

/// Waits until chain `chain_id`'s index holds `chain`'s settled head.
/// The network of the one row ccxt lists of `action` (deposits or
/// withdrawals) on each of ETH and ARBITRUM, sorted.
async fn one_row_per_network(weiport: &Weiport, key: &Key, action: &str) -> Vec<String> {
    let mut one_each = Vec::new();
    for network in ["ETH", "ARBITRUM"] {
        let one = ccxt(weiport, key, &format!("{action}@{network}"), &[]).await;
        let rows = one.as_array().unwrap_or_else(|| panic!("{one}"));
        assert_eq!(rows.len(), 1, "{network}: {one}");
        one_each.push(rows[0]["network"].as_str().unwrap_or("").to_owned());
    }
    one_each.sort();
    one_each
}

async fn wait_chain_indexed(weiport: &Weiport, chain_id: u64, chain: &Chain) {
    let head = chain.settled_head().await;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let ready: Value = reqwest::get(format!("{}/readyz?chainid={chain_id}", weiport.url))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if ready["indexed"] == head && ready["status"] == "ready" {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "chain {chain_id} did not reach {head}: {ready}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Every balance, `txlist` and `tokentx` chain `chain_id` answers through
/// etherscan-python (its base URL `/v2/api?chainid=N`), and its token
/// `getLogs` (raw: the client has none), equal its node's own at its head.
async fn assert_chain_answers_like_its_node(weiport: &Weiport, chain_id: u64, chain: &Chain) {
    let head = chain.settled_head().await;
    let addresses = chain.mentioned_addresses(head).await;
    let text = |a: &Address| format!("{a:#x}");
    let read = run_client_with_input(
        "etherscan_chain.py",
        vec![
            format!("{}/v2/api?chainid={chain_id}", weiport.url),
            api_key(weiport).await,
        ],
        json!({ "addresses": addresses.iter().map(text).collect::<Vec<_>>() }),
    )
    .await;
    let lists = txlists(&node_transactions(chain, head).await);
    let tokens = node_token_transfers(chain, head).await;
    for address in &addresses {
        let node: U256 = serde_json::from_value(
            chain
                .rpc("eth_getBalance", json!([address, format!("{head:#x}")]))
                .await,
        )
        .unwrap();
        assert_eq!(
            read["balances"][text(address)],
            node.to_string(),
            "chain {chain_id}: balance of {address}"
        );
        for (action, expected) in [("txlist", &lists), ("tokentx", &tokens)] {
            let got = &read[action][text(address)];
            match expected.get(address) {
                Some(want) => assert_eq!(
                    got,
                    &Value::from(want.clone()),
                    "chain {chain_id}: {action} of {address}"
                ),
                None => assert!(
                    got["error"]
                        .as_str()
                        .is_some_and(|e| e.contains("No transactions found")),
                    "chain {chain_id}: {action} of {address}: {got}"
                ),
            }
        }
    }
    for token in tokens
        .values()
        .flatten()
        .map(|t| t["contractAddress"].clone())
    {
        let token = token.as_str().unwrap().to_owned();
        let want = node_logs(
            chain,
            json!({ "fromBlock": "0x0", "toBlock": format!("{head:#x}"), "address": token }),
            |_| true,
        )
        .await;
        let answer = v2(
            weiport,
            chain_id,
            &format!("module=logs&action=getLogs&address={token}&fromBlock=0&toBlock={head}"),
        )
        .await;
        assert_eq!(
            answer["result"],
            Value::from(want),
            "chain {chain_id}: logs of {token}"
        );
    }
}

/// Waits until both chains are indexed through their heads, then checks
/// each against its node.
async fn assert_both_answer_like_their_nodes(weiport: &Weiport, a: &Chain, b: &Chain) {
    wait_chain_indexed(weiport, FIRST, a).await;
    wait_chain_indexed(weiport, SECOND, b).await;
    assert_chain_answers_like_its_node(weiport, FIRST, a).await;
    assert_chain_answers_like_its_node(weiport, SECOND, b).await;
}

/// Transfers and an ERC-20 with transfers on `chain`, `salt` making each
/// chain's traffic its own.
async fn traffic(chain: &Chain, salt: u64) {
    let dev = chain.accounts().await;
    for i in 0..4 {
        chain
            .transfer(
                dev[0],
                dev[1 + (i + salt as usize) % 4],
                ether(1 + salt + i as u64),
            )
            .await;
    }
    chain
        .transfer(
            dev[2],
            Address::repeat_byte(salt as u8 + 1),
            ether(salt + 1),
        )
        .await;
    let token = deploy(chain, dev[3], &token_code().0).await;
    for holder in [dev[4], dev[5]] {
        chain
            .send(
                dev[3],
                Some(token),
                U256::ZERO,
                &transfer_call(holder, U256::from(salt * 100 + 7)),
                200_000,
            )
            .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_chain_is_indexed_apart_and_answered_by_its_chainid() {
    let (first, second) = two_nodes();
    let (a, b) = (Chain::new(&first.url), Chain::new(&second.url));
    traffic(&a, 1).await;
    traffic(&b, 2).await;
    let dir = tempfile::tempdir().unwrap();

    // A chain whose node answers another chain id is refused at start.
    let wrong = chains_table(&first, &second, 1);
    let refused = weiport_command(
        &["serve"],
        &[
            ("WEIPORT_DATA_DIR", dir.path().to_str().unwrap()),
            ("WEIPORT_SERVER__LISTEN", "127.0.0.1:0"),
            ("WEIPORT_ADMIN__LISTEN", "127.0.0.1:0"),
            ("WEIPORT_CHAINS", &wrong),
        ],
    )
    .output()
    .unwrap();
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("configured as chain id 1, but its node answers chain id 31337"),
        "{said}"
    );

    let weiport = serve(dir.path(), &chains_table(&first, &second, FIRST), &[]);
    assert_both_answer_like_their_nodes(&weiport, &a, &b).await;

    // `/api` without chainid is the first chain; an unknown chain id is refused.
    let someone = Address::repeat_byte(3);
    let key = api_key(&weiport).await;
    let v1: Value = reqwest::get(format!(
        "{}/api?module=account&action=balance&address={someone:#x}&apikey={key}",
        weiport.url
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(
        v1["result"],
        v2(
            &weiport,
            FIRST,
            &format!("module=account&action=balance&address={someone:#x}")
        )
        .await["result"]
    );
    assert_ne!(
        v1["result"],
        v2(
            &weiport,
            SECOND,
            &format!("module=account&action=balance&address={someone:#x}")
        )
        .await["result"]
    );
    for unknown in ["5", "abc", ""] {
        let refused: Value = reqwest::get(format!(
            "{}/v2/api?chainid={unknown}&module=account&action=balance&address={someone:#x}&apikey={key}",
            weiport.url
        ))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
        assert_eq!(refused["status"], "0", "{refused}");
        assert!(
            refused["result"]
                .as_str()
                .unwrap()
                .contains("unsupported chainid"),
            "{refused}"
        );
    }

    // chainlist, readiness and metrics name both chains.
    let list: Value = reqwest::get(format!("{}/v2/chainlist", weiport.url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["totalcount"], 2, "{list}");
    assert_eq!(list["result"][0]["chainid"], "31337");
    assert_eq!(list["result"][1]["chainid"], "31338");
    assert_eq!(list["result"][1]["chainname"], "Anvil L2");
    assert_eq!(list["result"][1]["status"], 1);
    let metrics = weiport.metrics().await;
    for chain in [FIRST, SECOND] {
        assert!(
            metrics.contains(&format!(
                "weiport_indexer_indexed_block{{chain=\"{chain}\"}}"
            )),
            "{chain}"
        );
    }

    // A reorganisation on the second chain while the first keeps indexing.
    let snapshot = b.rpc("evm_snapshot", json!([])).await;
    traffic(&b, 3).await;
    wait_chain_indexed(&weiport, SECOND, &b).await;
    b.rpc("evm_revert", json!([snapshot])).await;
    let dev = b.accounts().await;
    for _ in 0..12 {
        b.transfer(dev[6], dev[7], ether(1)).await;
        a.transfer(dev[8], dev[7], ether(2)).await;
    }
    assert_both_answer_like_their_nodes(&weiport, &a, &b).await;

    // The second chain's node goes away: the first keeps indexing and
    // answering, the second is reported behind, its index still answers.
    let before = v2(&weiport, SECOND, "module=proxy&action=eth_blockNumber").await;
    drop(second);
    for _ in 0..3 {
        a.transfer(dev[8], dev[9], ether(1)).await;
    }
    wait_chain_indexed(&weiport, FIRST, &a).await;
    assert_chain_answers_like_its_node(&weiport, FIRST, &a).await;
    let ready = |query: &'static str| {
        let url = format!("{}/readyz{query}", weiport.url);
        async move { reqwest::get(url).await.unwrap().status().as_u16() }
    };
    assert_eq!(ready("?chainid=31337").await, 200);
    eventually("the second chain reported unavailable", || async {
        ready("?chainid=31338").await == 503 && ready("").await == 503
    })
    .await;
    let answer = v2(
        &weiport,
        SECOND,
        &format!("module=account&action=balance&address={:#x}", dev[7]),
    )
    .await;
    assert_eq!(answer["status"], "1", "{answer}");
    assert!(before["result"].is_string(), "{before}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_during_both_catch_ups_leaves_both_exact() {
    let (first, second) = two_nodes();
    let (a, b) = (Chain::new(&first.url), Chain::new(&second.url));
    let dev = a.accounts().await;
    for i in 0..120u64 {
        a.transfer(dev[(i % 5) as usize], dev[5 + (i % 4) as usize], ether(1))
            .await;
        b.transfer(
            dev[(i % 3) as usize],
            Address::repeat_byte(i as u8),
            U256::from(i + 1),
        )
        .await;
    }
    let dir = tempfile::tempdir().unwrap();
    let chains = chains_table(&first, &second, FIRST);
    // Small batches: many commits to land the kill between.
    let slow = [
        ("WEIPORT_INDEXER__BATCH_BLOCKS", "4"),
        ("WEIPORT_INDEXER__CONCURRENCY", "1"),
    ];
    let mut weiport = serve(dir.path(), &chains, &slow);
    eventually("both chains part way", || async {
        let ready: Value = reqwest::get(format!("{}/readyz", weiport.url))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        ready["chains"].as_array().is_some_and(|c| {
            c.iter()
                .all(|c| c["indexed"].as_u64().is_some_and(|n| n > 4))
        })
    })
    .await;
    weiport.stop("KILL", Duration::from_secs(10));
    drop(weiport);
    let weiport = serve(dir.path(), &chains, &[]);
    assert_both_answer_like_their_nodes(&weiport, &a, &b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_eth_balance_is_fed_and_drained_over_both_networks() {
    let (first, second) = two_nodes();
    let (a, b) = (Chain::new(&first.url), Chain::new(&second.url));
    let dev = a.accounts().await;
    let dir = tempfile::tempdir().unwrap();
    let weiport = serve(dir.path(), &chains_table(&first, &second, FIRST), &[]);
    let alice = weiport
        .key(json!({ "permissions": ["read", "trade", "withdraw"], "allowed_ips": ["127.0.0.1"] }))
        .await;

    // One deposit address on every network.
    let on_eth = ccxt(&weiport, &alice, "address@ETH", &[]).await;
    let on_l2 = ccxt(&weiport, &alice, "address@ARBITRUM", &[]).await;
    assert_eq!(on_eth["address"], on_l2["address"], "{on_eth} {on_l2}");
    let refused = ccxt(&weiport, &alice, "address@BASE", &[]).await;
    assert!(refused["error"].is_string(), "{refused}");
    let (status, answer) = weiport
        .signed(
            reqwest::Method::GET,
            "/sapi/v1/capital/deposit/address",
            &alice,
            "coin=ETH&network=BASE",
        )
        .await;
    assert_eq!(
        (status, answer["code"].clone()),
        (400, json!(-1102)),
        "{answer}"
    );
    let address: Address = on_eth["address"].as_str().unwrap().parse().unwrap();

    // 2 ETH on the first chain, 3 on the second: one balance of 5, each once.
    a.transfer(dev[0], address, ether(2)).await;
    b.transfer(dev[0], address, ether(3)).await;
    a.mine_many(CONFIRMATIONS).await;
    b.mine_many(CONFIRMATIONS).await;
    eventually("both deposits credited", || async {
        eth_free(&weiport, &alice).await == "5.00000000"
    })
    .await;
    a.mine_many(2).await;
    b.mine_many(2).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(eth_free(&weiport, &alice).await, "5.00000000");
    let deposits = ccxt(&weiport, &alice, "deposits", &[]).await;
    let mut networks: Vec<&str> = deposits
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["network"].as_str().unwrap_or(""))
        .collect();
    networks.sort();
    assert_eq!(networks.len(), 2, "{deposits}");
    assert!(
        deposits
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["status"] == "ok"),
        "{deposits}"
    );
    let ids: std::collections::BTreeSet<_> = deposits
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].to_string())
        .collect();
    assert_eq!(ids.len(), 2, "{deposits}");
    // One network's deposits (`network` on deposit/hisrec, as ccxt sends
    // it): one row each, the two of them the two listed above (ccxt names
    // networks its own way, ETH as ERC20).
    let one_each = one_row_per_network(&weiport, &alice, "deposits").await;
    assert_eq!(one_each, networks, "{deposits}");

    // A withdrawal on each network lands on its own chain.
    let (to_eth, to_l2) = (Address::repeat_byte(0x61), Address::repeat_byte(0x62));
    let first_out = ccxt(
        &weiport,
        &alice,
        "withdraw@ETH",
        &[&to_eth.to_string(), "1"],
    )
    .await;
    let second_out = ccxt(
        &weiport,
        &alice,
        "withdraw@ARBITRUM",
        &[&to_l2.to_string(), "1.5"],
    )
    .await;
    assert!(
        first_out["id"].is_string() && second_out["id"].is_string(),
        "{first_out} {second_out}"
    );
    let refused = ccxt(
        &weiport,
        &alice,
        "withdraw@BASE",
        &[&to_l2.to_string(), "1"],
    )
    .await;
    assert!(refused["error"].is_string(), "{refused}");
    // Fees: 0.0005 on the first network, 0.0001 on the second.
    assert_eq!(eth_free(&weiport, &alice).await, "2.49940000");
    async fn balance(chain: &Chain, who: Address) -> U256 {
        serde_json::from_value(chain.rpc("eth_getBalance", json!([who, "latest"])).await).unwrap()
    }
    eventually("both withdrawals on chain", || async {
        a.mine().await;
        b.mine().await;
        balance(&a, to_eth).await == ether(1)
            && balance(&b, to_l2).await == ether(3) / U256::from(2)
    })
    .await;
    // Each withdrawal only on its own chain.
    assert_eq!(balance(&b, to_eth).await, U256::ZERO);
    assert_eq!(balance(&a, to_l2).await, U256::ZERO);
    eventually("both withdrawals completed", || async {
        a.mine().await;
        b.mine().await;
        let listed = ccxt(&weiport, &alice, "withdrawals", &[]).await;
        listed
            .as_array()
            .is_some_and(|l| l.len() == 2 && l.iter().all(|w| w["status"] == "ok"))
    })
    .await;
    let listed = ccxt(&weiport, &alice, "withdrawals", &[]).await;
    let mut networks: Vec<String> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["network"].as_str().unwrap_or("").to_owned())
        .collect();
    networks.sort();
    assert_eq!(networks.len(), 2, "{listed}");
    assert_ne!(networks[0], networks[1], "{listed}");
    let one_each = one_row_per_network(&weiport, &alice, "withdrawals").await;
    assert_eq!(one_each, networks, "{listed}");
    assert_eq!(eth_free(&weiport, &alice).await, "2.49940000");

    // The coin lists both networks with their own settings; the books hold
    // per asset across networks.
    let (status, coins) = weiport
        .signed(
            reqwest::Method::GET,
            "/sapi/v1/capital/config/getall",
            &alice,
            "",
        )
        .await;
    assert_eq!(status, 200, "{coins}");
    let eth = coins
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["coin"] == "ETH")
        .unwrap();
    let list = eth["networkList"].as_array().unwrap();
    assert_eq!(list.len(), 2, "{eth}");
    assert_eq!(
        (list[0]["network"].clone(), list[0]["isDefault"].clone()),
        (json!("ETH"), json!(true))
    );
    assert_eq!(
        (list[1]["network"].clone(), list[1]["withdrawFee"].clone()),
        (json!("ARBITRUM"), json!("0.00010000"))
    );
    let (status, report) = weiport
        .admin(reqwest::Method::GET, "/admin/wallet", json!({}))
        .await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["networks"].as_array().unwrap().len(), 2, "{report}");
    assert_eq!(report["deposits_credited"], "5.00000000", "{report}");
    assert_eq!(report["withdrawals_completed"], "2.50000000", "{report}");
}
