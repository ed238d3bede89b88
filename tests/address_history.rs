//! Etherscan's `txlist` from the transaction index, on a real anvil, through
//! etherscan-python unchanged but for its base URL: every address's list
//! equals what the node's blocks and receipts say (transfers, a contract
//! creation, a contract call with call data, a reverted call, a transfer to
//! oneself), pages and sort orders slice it as Etherscan does, an empty list
//! is "No transactions found", and a window beyond 10,000 results is refused.

mod common;

use alloy_primitives::Address;
use common::chain::{Chain, ether};
use common::history::{node_transactions, txlists};
use common::{Anvil, Weiport, history_env, run_client_with_input};
use serde_json::{Value, json};

/// Whether etherscan-python raised Etherscan's "No transactions found".
fn no_transactions(answer: &Value) -> bool {
    answer["error"]
        .as_str()
        .is_some_and(|error| error.contains("No transactions found"))
}

async fn raw(weiport: &Weiport, query: &str) -> Value {
    weiport.etherscan(query).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn txlist_through_etherscan_python_equals_the_node() {
    let anvil = Anvil::start(&[]);
    let chain = Chain::new(&anvil.url);
    let dev = chain.accounts().await;
    let dir = tempfile::tempdir().unwrap();
    let weiport = Weiport::serve(dir.path(), &history_env(&anvil.url, &[]));
    let key = weiport.key(json!({ "permissions": ["read"] })).await.id;

    let (payee, beneficiary, nobody) = (
        Address::repeat_byte(0xa1),
        Address::repeat_byte(0xb2),
        Address::repeat_byte(0xc3),
    );
    chain.transfer(dev[0], payee, ether(1)).await;
    chain.transfer(dev[1], payee, ether(2)).await;
    let forwarder = chain.deploy_forwarder(dev[0], ether(1)).await;
    let deployment = node_transactions(&chain, 3).await[2].hash.clone();
    chain
        .forward(dev[1], forwarder, beneficiary, ether(4))
        .await;
    // Without call data the forwarder reverts: mined, failed.
    let reverted = chain
        .send(dev[2], Some(forwarder), ether(1), "0x", 100_000)
        .await;
    assert!(!chain.receipt_status(reverted).await.0);
    chain.transfer(dev[3], dev[3], ether(1)).await;
    for i in 0..6 {
        chain.transfer(dev[0], dev[1], ether(1 + i)).await;
    }
    let head = chain.settled_head().await;
    weiport.wait_indexed(head).await;

    let expected = txlists(&node_transactions(&chain, head).await);
    let listed: Vec<Address> = [
        dev[0],
        dev[1],
        dev[2],
        dev[3],
        payee,
        forwarder,
        beneficiary,
    ]
    .into_iter()
    .collect();
    let text = |a: &Address| format!("{a:#x}");
    let dev0 = text(&dev[0]);
    let answer = run_client_with_input(
        "etherscan_history.py",
        vec![weiport.url.clone(), key.clone()],
        json!({
            "lists": listed.iter().map(text).chain([text(&nobody)]).collect::<Vec<_>>(),
            "pages": [
                [dev0, 2, 3, 0, 99999999, "asc"],
                [dev0, 1, 4, 0, 99999999, "desc"],
                [dev0, 1, 100, 7, 9, "asc"],
                [dev0, 9, 100, 0, 99999999, "asc"],
            ],
            "proxy": { "txhash": deployment, "tag": "0x3", "contract": text(&forwarder) },
        }),
    )
    .await;
    for address in &listed {
        // The beneficiary only received an internal transfer: no transaction
        // of its own, so Etherscan's txlist has nothing for it either.
        let want = expected.get(address).cloned().unwrap_or_default();
        let got = &answer["lists"][text(address)];
        if want.is_empty() {
            assert!(no_transactions(got), "{got}");
        } else {
            assert_eq!(got, &Value::from(want), "txlist of {address}");
        }
    }
    assert!(no_transactions(&answer["lists"][text(&nobody)]), "{answer}");

    let all = &expected[&dev[0]];
    let pages = answer["pages"].as_array().unwrap();
    assert_eq!(pages[0], Value::from(all[3..6].to_vec()));
    let newest: Vec<Value> = all.iter().rev().take(4).cloned().collect();
    assert_eq!(pages[1], Value::from(newest));
    let in_range: Vec<Value> = all
        .iter()
        .filter(|t| (7..=9).contains(&t["blockNumber"].as_str().unwrap().parse::<u64>().unwrap()))
        .cloned()
        .collect();
    assert!(!in_range.is_empty());
    assert_eq!(pages[2], Value::from(in_range));
    assert!(no_transactions(&pages[3]), "{}", pages[3]);

    // The proxy module passes calls to the node and answers with its result.
    let proxy = &answer["proxy"];
    let deployment_hash = proxy["transaction"]["hash"].as_str().unwrap().to_owned();
    assert_eq!(
        proxy["transaction"],
        chain
            .rpc("eth_getTransactionByHash", json!([deployment_hash]))
            .await
    );
    assert_eq!(
        proxy["receipt"],
        chain
            .rpc("eth_getTransactionReceipt", json!([deployment_hash]))
            .await
    );
    assert_eq!(proxy["receipt"]["contractAddress"], text(&forwarder));
    assert_eq!(
        proxy["block"],
        chain
            .rpc("eth_getBlockByNumber", json!(["0x3", true]))
            .await
    );
    assert_eq!(
        proxy["code"],
        chain
            .rpc("eth_getCode", json!([text(&forwarder), "latest"]))
            .await
    );
    let unknown = raw(
        &weiport,
        &format!(
            "module=proxy&action=eth_getTransactionByHash&txhash=0x{}&apikey={key}",
            "00".repeat(32)
        ),
    )
    .await;
    assert_eq!(
        unknown,
        json!({ "jsonrpc": "2.0", "id": 1, "result": null })
    );
    let malformed = raw(
        &weiport,
        &format!("module=proxy&action=eth_getTransactionReceipt&txhash=0x12zz&apikey={key}"),
    )
    .await;
    assert_eq!(malformed["error"]["code"], -32602, "{malformed}");

    let window = raw(
        &weiport,
        &format!("module=account&action=txlist&address={dev0}&page=2&offset=6000&apikey={key}"),
    )
    .await;
    assert_eq!(
        window,
        json!({ "status": "0", "message": "Result window is too large, PageNo x Offset size must be less than or equal to 10000", "result": null })
    );
    for (query, reason) in [
        ("address=0x12", "Error! Invalid address format"),
        ("address={dev0}&sort=sideways", "Error! Invalid sort order"),
        ("address={dev0}&page=0", "Error! Invalid page"),
        ("address={dev0}&startblock=x", "Error! Invalid startblock"),
    ] {
        let query = query.replace("{dev0}", &dev0);
        let refused = raw(
            &weiport,
            &format!("module=account&action=txlist&{query}&apikey={key}"),
        )
        .await;
        assert_eq!(
            refused,
            json!({ "status": "0", "message": "NOTOK", "result": reason }),
            "{query}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_index_turned_on_later_refuses_ranges_it_does_not_cover() {
    let anvil = Anvil::start(&[]);
    let chain = Chain::new(&anvil.url);
    let dev = chain.accounts().await;
    let dir = tempfile::tempdir().unwrap();
    let serve = |transactions: &'static str| {
        let env = history_env(
            &anvil.url,
            &[("WEIPORT_INDEXER__TRANSACTIONS", transactions)],
        );
        Weiport::serve(dir.path(), &env)
    };
    let mut weiport = serve("false");
    let key = weiport.key(json!({ "permissions": ["read"] })).await.id;
    for _ in 0..3 {
        chain.transfer(dev[0], dev[1], ether(1)).await;
    }
    weiport.wait_indexed(chain.settled_head().await).await;
    let dev0 = format!("{:#x}", dev[0]);
    let txlist = |weiport: &Weiport, startblock: u64| {
        let url = format!(
            "{}/api?module=account&action=txlist&address={dev0}&startblock={startblock}&apikey={key}",
            weiport.url
        );
        async move {
            reqwest::get(url)
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()
        }
    };
    let off = txlist(&weiport, 0).await;
    assert_eq!(
        off["result"],
        "Error! Transactions are not indexed here (indexer.transactions is off)"
    );
    weiport.stop("TERM", std::time::Duration::from_secs(20));

    let weiport = serve("true");
    for _ in 0..2 {
        chain.transfer(dev[0], dev[1], ether(1)).await;
    }
    let head = chain.settled_head().await;
    weiport.wait_indexed(head).await;
    // Blocks 1-3 were indexed without their transactions.
    assert_eq!(
        txlist(&weiport, 0).await["result"],
        "Error! Transactions are indexed from block 4: ask for startblock=4 or later"
    );
    let covered = txlist(&weiport, 4).await;
    let blocks: Vec<&str> = covered["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["blockNumber"].as_str().unwrap())
        .collect();
    assert_eq!(blocks, ["4", "5"], "{covered}");
}
