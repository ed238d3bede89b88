//! Internal transfers and ERC-20 tokens through Etherscan's API, end to end:
//! a solc-compiled plain token and a fee-on-transfer token (whose logs
//! overstate what holders receive), the hand-assembled forwarder for internal
//! transfers, a real anvil, etherscan-python against the server, and the
//! node's own receipts, `trace_block` traces and `balanceOf` answers as the
//! truth, before and after a reorganisation.

mod common;

use alloy_primitives::{Address, U256};
use common::chain::{Chain, ether};
use common::tokens::{
    balance_of, deploy, node_internal_transfers, node_logs, node_token_transfers, spread_call,
    token_code, transfer_call,
};
use common::{Anvil, Weiport, history_env, run_client_with_input};
use serde_json::{Value, json};

fn text(address: &Address) -> String {
    format!("{address:#x}")
}

async fn raw(weiport: &Weiport, query: &str) -> Value {
    weiport.etherscan(query).await
}

/// What etherscan-python reads for `addresses`, and the balances of
/// `(token, holder)` pairs.
async fn read_through_client(
    weiport: &Weiport,
    key: &str,
    addresses: &[Address],
    txhashes: &[String],
    balances: &[(Address, Address)],
) -> Value {
    run_client_with_input(
        "etherscan_transfers.py",
        vec![weiport.url.clone(), key.to_owned()],
        json!({
            "addresses": addresses.iter().map(text).collect::<Vec<_>>(),
            "txhashes": txhashes,
            "balances": balances.iter().map(|(t, h)| [text(t), text(h)]).collect::<Vec<_>>(),
        }),
    )
    .await
}

/// Asserts that every list the client read equals the node's, and every
/// balance equals `balanceOf` at the node's head.
async fn assert_equal_to_node(
    chain: &Chain,
    answer: &Value,
    addresses: &[Address],
    balances: &[(Address, Address)],
    head: u64,
) {
    let tokens = node_token_transfers(chain, head).await;
    let internal = node_internal_transfers(chain, head).await;
    for address in addresses {
        for (kind, expected) in [("tokens", &tokens), ("internal", &internal)] {
            let got = &answer[kind][text(address)];
            match expected.get(address) {
                Some(want) => assert_eq!(
                    strip_gas(got),
                    Value::from(want.clone()),
                    "{kind} of {address}"
                ),
                None => assert!(
                    got["error"]
                        .as_str()
                        .is_some_and(|e| e.contains("No transactions found")),
                    "{kind} of {address}: {got}"
                ),
            }
        }
    }
    for (i, (token, holder)) in balances.iter().enumerate() {
        let want = balance_of(chain, *token, *holder).await;
        assert_eq!(
            answer["balances"][i],
            want.to_string(),
            "balance of {holder} in {token}"
        );
    }
}

/// Internal entries without gas figures and error codes (checked apart: the
/// parity tracer and callTracer word errors differently).
fn strip_gas(list: &Value) -> Value {
    let mut list = list.clone();
    if let Some(entries) = list.as_array_mut() {
        for entry in entries {
            if let Some(entry) = entry.as_object_mut()
                && entry.contains_key("traceId")
            {
                for field in ["gas", "gasUsed", "errCode"] {
                    let value = entry.remove(field).unwrap_or_default();
                    assert!(value.is_string(), "{field}: {value}");
                }
            }
        }
    }
    list
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn internal_and_token_transfers_through_etherscan_python_equal_the_node() {
    let anvil = Anvil::start(&[]);
    let chain = Chain::new(&anvil.url);
    let dev = chain.accounts().await;
    let dir = tempfile::tempdir().unwrap();
    let weiport = Weiport::serve(dir.path(), &history_env(&anvil.url, &[]));
    let key = weiport.key(json!({ "permissions": ["read"] })).await.id;

    let (plain_code, fee_code) = token_code();
    let plain = deploy(&chain, dev[0], plain_code).await;
    let fee = deploy(&chain, dev[0], fee_code).await;
    let forwarder = chain.deploy_forwarder(dev[0], ether(1)).await;
    let (payee, beneficiary, nobody) = (
        Address::repeat_byte(0xa1),
        Address::repeat_byte(0xb2),
        Address::repeat_byte(0xc3),
    );
    let call = |from: Address, token: Address, data: String| {
        let chain = &chain;
        async move {
            let tx = chain
                .send(from, Some(token), U256::ZERO, &data, 300_000)
                .await;
            assert!(chain.receipt_status(tx).await.0, "token call failed");
            format!("{tx:#x}")
        }
    };
    call(dev[0], plain, transfer_call(dev[1], ether(100))).await;
    call(dev[0], plain, transfer_call(dev[2], U256::from(5))).await;
    call(dev[0], fee, transfer_call(dev[1], ether(1000))).await;
    call(
        dev[0],
        plain,
        spread_call(&[dev[3], payee, dev[1]], ether(7)),
    )
    .await;
    call(dev[1], fee, transfer_call(dev[2], ether(100))).await;
    let forwarded = chain
        .forward(dev[1], forwarder, beneficiary, ether(4))
        .await;
    let forwarded = format!("{forwarded:#x}");
    let head = chain.settled_head().await;
    weiport.wait_indexed(head).await;

    let addresses = [
        dev[0],
        dev[1],
        dev[2],
        dev[3],
        payee,
        forwarder,
        beneficiary,
        nobody,
    ];
    let balances: Vec<(Address, Address)> = [plain, fee]
        .into_iter()
        .flat_map(|token| [dev[0], dev[1], dev[2], dev[3], payee, nobody].map(|h| (token, h)))
        .collect();
    let hashes = [forwarded.clone(), format!("0x{}", "00".repeat(32))];
    let answer = read_through_client(&weiport, &key, &addresses, &hashes, &balances).await;
    assert_equal_to_node(&chain, &answer, &addresses, &balances, head).await;
    let listed =
        |kind: &str, address: &Address| answer[kind][text(address)].as_array().map_or(0, Vec::len);
    // dev[1]: the plain token, the fee token, the spread, its own send.
    assert_eq!(listed("tokens", &dev[1]), 4);
    assert_eq!(listed("internal", &beneficiary), 1);
    assert_eq!(listed("internal", &forwarder), 1);

    // The fee token's logs say dev[1] got 1,000 and sent 100, yet it was
    // credited 1 % less than it got: 890, not 900. Only balanceOf knows.
    assert_eq!(balance_of(&chain, fee, dev[1]).await, ether(890));
    assert_eq!(
        answer["balances"][7],
        ether(890).to_string(),
        "dev[1]'s fee-token balance"
    );
    // The forwarder passed half of 4 ETH on: one internal transfer, listed
    // under both ends, and by its transaction without hash and trace id.
    let by_hash = &answer["internal_by_hash"][&forwarded];
    assert_eq!(by_hash.as_array().unwrap().len(), 1, "{by_hash}");
    assert_eq!(by_hash[0]["to"], text(&beneficiary));
    assert_eq!(by_hash[0]["value"], ether(2).to_string());
    assert!(by_hash[0].get("hash").is_none() && by_hash[0].get("traceId").is_none());
    assert!(
        answer["internal_by_hash"][&hashes[1]]["error"]
            .as_str()
            .is_some_and(|e| e.contains("No transactions found"))
    );

    // tokentx by token alone, and by holder and token together.
    let by_token = raw(
        &weiport,
        &format!(
            "module=account&action=tokentx&contractaddress={}&sort=desc&apikey={key}",
            text(&fee)
        ),
    )
    .await;
    let values: Vec<&str> = by_token["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["value"].as_str().unwrap())
        .collect();
    let (hundred, thousand, million) = (
        ether(100).to_string(),
        ether(1000).to_string(),
        ether(1_000_000).to_string(),
    );
    assert_eq!(values, [&hundred, &thousand, &million]);
    let both = raw(
        &weiport,
        &format!(
            "module=account&action=tokentx&address={}&contractaddress={}&apikey={key}",
            text(&dev[1]),
            text(&plain)
        ),
    )
    .await;
    assert_eq!(both["result"].as_array().unwrap().len(), 2, "{both}");
    let holdings = raw(
        &weiport,
        &format!(
            "module=account&action=addresstokenbalance&address={}&apikey={key}",
            text(&dev[1])
        ),
    )
    .await;
    let mut quantities: Vec<(String, String, String)> = holdings["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["TokenSymbol"].as_str().unwrap().to_owned(),
                h["TokenQuantity"].as_str().unwrap().to_owned(),
                h["TokenDivisor"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    quantities.sort();
    assert_eq!(
        quantities,
        [
            ("WFT".into(), ether(890).to_string(), "18".into()),
            ("WTT".into(), ether(107).to_string(), "18".into()),
        ]
    );

    // The holders of each token: every address balanceOf says holds some,
    // by address, paged; and their count.
    for token in [plain, fee] {
        let mut want = Vec::new();
        for holder in [dev[0], dev[1], dev[2], dev[3], payee] {
            let held = balance_of(&chain, token, holder).await;
            if !held.is_zero() {
                want.push((text(&holder), held.to_string()));
            }
        }
        want.sort();
        let holders = |page: &str| {
            let (weiport, key) = (&weiport, &key);
            let query = format!(
                "module=token&action=tokenholderlist&contractaddress={}&{page}&apikey={key}",
                text(&token)
            );
            async move {
                let answer = raw(weiport, &query).await;
                answer["result"]
                    .as_array()
                    .unwrap_or(&Vec::new())
                    .iter()
                    .map(|h| {
                        (
                            h["TokenHolderAddress"].as_str().unwrap().to_owned(),
                            h["TokenHolderQuantity"].as_str().unwrap().to_owned(),
                        )
                    })
                    .collect::<Vec<_>>()
            }
        };
        assert_eq!(
            holders("page=1&offset=100").await,
            want,
            "holders of {token}"
        );
        assert_eq!(
            holders("page=2&offset=2").await,
            want[2..4.min(want.len())].to_vec()
        );
        let count = raw(
            &weiport,
            &format!(
                "module=token&action=tokenholdercount&contractaddress={}&apikey={key}",
                text(&token)
            ),
        )
        .await;
        assert_eq!(count["result"], want.len().to_string(), "{count}");
    }

    // getLogs: a token's logs, a page of them, Transfer logs naming dev[1]
    // as sender or recipient in any token, and an empty answer.
    let transfer_topic = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
    let logs = |query: String| {
        let weiport = &weiport;
        let key = &key;
        async move {
            raw(
                weiport,
                &format!("module=logs&action=getLogs&{query}&apikey={key}"),
            )
            .await
        }
    };
    let whole = json!({ "fromBlock": "0x0", "toBlock": format!("{head:#x}") });
    let mut of_plain = whole.clone();
    of_plain["address"] = json!(plain);
    let plain_logs = node_logs(&chain, of_plain, |_| true).await;
    assert!(plain_logs.len() >= 5);
    let got = logs(format!(
        "address={}&fromBlock=0&toBlock=latest",
        text(&plain)
    ))
    .await;
    assert_eq!(got["result"], Value::from(plain_logs.clone()), "{got}");
    let paged = logs(format!(
        "address={}&fromBlock=0&page=2&offset=2",
        text(&plain)
    ))
    .await;
    assert_eq!(paged["result"], Value::from(plain_logs[2..4].to_vec()));
    let dev1_word = format!("0x{:0>64}", alloy_primitives::hex::encode(dev[1]));
    let names_dev1 = |log: &Value| {
        let topics = log["topics"].as_array().unwrap();
        topics.len() == 3 && (topics[1] == dev1_word.as_str() || topics[2] == dev1_word.as_str())
    };
    let mut of_transfers = whole.clone();
    of_transfers["topics"] = json!([transfer_topic]);
    let expected = node_logs(&chain, of_transfers, names_dev1).await;
    assert_eq!(expected.len(), 4, "dev[1]'s transfers in both tokens");
    let got = logs(format!(
        "fromBlock=0&toBlock={head}&topic0={transfer_topic}&topic1={dev1_word}&topic2={dev1_word}&topic1_2_opr=or"
    ))
    .await;
    assert_eq!(got["result"], Value::from(expected), "{got}");
    assert_eq!(
        logs("fromBlock=0".into()).await["result"],
        "Error! Missing address or topic0"
    );
    assert_eq!(
        logs(format!("topic0={transfer_topic}&topic0_1_opr=xor")).await["result"],
        "Error! Invalid topic0_1_opr: and or or"
    );
    let none = logs(format!("address={}&fromBlock=0", text(&nobody))).await;
    assert_eq!(
        none,
        json!({ "status": "0", "message": "No records found", "result": [] })
    );

    for (query, reason) in [
        ("action=tokentx", "Error! Invalid address format"),
        (
            "action=tokenbalance&address=0x12&contractaddress=0x12",
            "Error! Invalid contractaddress format",
        ),
        (
            "action=txlistinternal&txhash=0x12",
            "Error! Invalid transaction hash",
        ),
    ] {
        let refused = raw(&weiport, &format!("module=account&{query}&apikey={key}")).await;
        assert_eq!(
            refused,
            json!({ "status": "0", "message": "NOTOK", "result": reason }),
            "{query}"
        );
    }

    // A reorganisation replaces the last three blocks (the fee-token
    // transfer from dev[1] and the forward among them) with plain
    // transfers: the lists and balances follow the new branch.
    chain.set_automine(false).await;
    let replacements: Vec<Value> = (0..3u64)
        .map(|offset| json!([{ "from": dev[5], "to": dev[6], "value": ether(1 + offset) }, offset]))
        .collect();
    chain.rpc("anvil_reorg", json!([3, replacements])).await;
    chain.rpc("anvil_dropAllTransactions", json!([])).await;
    chain.set_automine(true).await;
    call(dev[0], plain, transfer_call(nobody, U256::from(77))).await;
    let head = chain.settled_head().await;
    weiport.wait_indexed(head).await;
    let answer = read_through_client(
        &weiport,
        &key,
        &addresses,
        std::slice::from_ref(&forwarded),
        &balances,
    )
    .await;
    assert_equal_to_node(&chain, &answer, &addresses, &balances, head).await;
    assert!(
        answer["internal_by_hash"][&forwarded]["error"].is_string()
            && answer["internal"][text(&beneficiary)]["error"].is_string(),
        "the forward was reorganised away: {}",
        answer["internal"][text(&beneficiary)]
    );
    assert_eq!(balance_of(&chain, fee, dev[1]).await, ether(990));
}
