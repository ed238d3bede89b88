//! Etherscan's block, transaction, gas tracker, stats, token and contract
//! modules against a real anvil, read through etherscan-python (unchanged
//! but for its base URL) where it has the call, raw where it has none, and
//! compared with what the node itself says.

mod common;

use alloy_primitives::{Address, U256};
use common::chain::{Chain, FORWARDER_INITCODE, ether};
use common::tokens::{deploy, token_code};
use common::{Anvil, Weiport, history_env, order, run_client_with_input};
use serde_json::{Value, json};

/// Creation code of a factory whose constructor creates a child contract
/// (the child's own creation code: 13 bytes deploying a one-byte `STOP`).
const FACTORY_INITCODE: &str = "0x6c6001600c60003960016000f300600052600d60136000f05000";
const CHILD_INITCODE: &str = "0x6001600c60003960016000f300";

async fn raw(weiport: &Weiport, key: &str, query: &str) -> Value {
    weiport.etherscan(&format!("{query}&apikey={key}")).await
}

fn quantity(value: &Value) -> U256 {
    value.as_str().unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_module_answers_like_the_node() {
    let anvil = Anvil::start(&[]);
    let chain = Chain::new(&anvil.url);
    let dev = chain.accounts().await;
    for i in 0..6u64 {
        chain.transfer(dev[0], dev[1], ether(1 + i)).await;
    }
    let good = chain.transfer(dev[1], dev[2], ether(1)).await;
    // A forwarder without value to forward reverts: a failed transaction.
    let forwarder = chain.deploy_forwarder(dev[2], U256::ZERO).await;
    let failed = chain
        .send(dev[2], Some(forwarder), U256::ZERO, "0x", 100_000)
        .await;
    assert!(!chain.receipt_status(failed).await.0);
    let token = deploy(&chain, dev[3], &token_code().0).await;
    let token_block = chain.settled_head().await;
    let factory_tx = chain
        .send(dev[4], None, U256::ZERO, FACTORY_INITCODE, 300_000)
        .await;
    let (ok, factory) = chain.receipt_status(factory_tx).await;
    assert!(ok);
    let factory = factory.unwrap();
    let trace = chain
        .rpc(
            "debug_traceTransaction",
            json!([factory_tx, { "tracer": "callTracer" }]),
        )
        .await;
    let child: Address = trace["calls"][0]["to"].as_str().unwrap().parse().unwrap();
    let _ = FORWARDER_INITCODE;

    let dir = tempfile::tempdir().unwrap();
    let weiport = Weiport::serve(dir.path(), &history_env(&anvil.url, &[]));
    let key = weiport
        .key(json!({ "permissions": ["read", "trade"] }))
        .await;
    // A trade prices the coin.
    let (seller, buyer) = weiport.two_traders().await;
    order(
        &weiport,
        &seller,
        "symbol=ETHUSDT&side=SELL&type=LIMIT&timeInForce=GTC&quantity=1&price=2150.5",
    )
    .await;
    order(
        &weiport,
        &buyer,
        "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=1&price=2150.5",
    )
    .await;
    let head = chain.settled_head().await;
    weiport.wait_indexed(head).await;

    let reward_block = chain.receipt(good).await["blockNumber"].clone();
    let reward_number = quantity(&reward_block).to::<u64>();
    let block = chain
        .rpc("eth_getBlockByNumber", json!([reward_block, false]))
        .await;
    let time = quantity(&block["timestamp"]).to::<u64>();
    let answer = run_client_with_input(
        "etherscan_modules.py",
        vec![weiport.url.clone(), key.id.clone()],
        json!({
            "reward_block": reward_number,
            "time": time,
            "countdown_block": head + 10,
            "failed_tx": format!("{failed:#x}"),
            "good_tx": format!("{good:#x}"),
            "gas_price": 100_000_000_000u64,
            "token": format!("{token:#x}"),
            "token_block": token_block,
        }),
    )
    .await;

    // The block reward: the block's priority fees, from its receipts.
    let receipts = chain
        .rpc("eth_getBlockReceipts", json!([reward_block]))
        .await;
    let base_fee = quantity(&block["baseFeePerGas"]);
    let tips = receipts
        .as_array()
        .unwrap()
        .iter()
        .fold(U256::ZERO, |sum, r| {
            sum + (quantity(&r["effectiveGasPrice"]) - base_fee) * quantity(&r["gasUsed"])
        });
    assert_eq!(
        answer["reward"]["blockReward"],
        tips.to_string(),
        "{answer}"
    );
    assert_eq!(answer["reward"]["blockNumber"], reward_number.to_string());
    assert_eq!(
        answer["reward"]["blockMiner"],
        block["miner"].as_str().unwrap().to_lowercase()
    );
    // The block at its own timestamp, before and after (anvil mines a block
    // a transaction, each a second or more apart or the same second).
    for side in ["before", "after"] {
        let found: u64 = answer[side].as_str().unwrap().parse().unwrap();
        let found_block = chain
            .rpc(
                "eth_getBlockByNumber",
                json!([format!("{found:#x}"), false]),
            )
            .await;
        assert_eq!(
            quantity(&found_block["timestamp"]).to::<u64>(),
            time,
            "{side}"
        );
    }
    assert_eq!(answer["countdown"]["RemainingBlock"], "10", "{answer}");
    assert_eq!(answer["countdown"]["CurrentBlock"], head.to_string());
    let reason = chain
        .rpc(
            "debug_traceTransaction",
            json!([failed, { "tracer": "callTracer" }]),
        )
        .await["error"]
        .clone();
    assert_eq!(
        answer["failed"],
        json!({ "isError": "1", "errDescription": reason }),
        "{answer}"
    );
    assert_eq!(answer["good"], json!({ "status": "1" }));
    let oracle = &answer["oracle"];
    assert_eq!(oracle["LastBlock"], head.to_string(), "{oracle}");
    let history = chain
        .rpc("eth_feeHistory", json!(["0x14", "latest", [25, 50, 75]]))
        .await;
    let next_base = quantity(history["baseFeePerGas"].as_array().unwrap().last().unwrap());
    let suggested: f64 = oracle["suggestBaseFee"].as_str().unwrap().parse().unwrap();
    assert!(
        (suggested * 1e9 - next_base.to::<u128>() as f64).abs() < 1.0,
        "{oracle}"
    );
    for field in ["SafeGasPrice", "ProposeGasPrice", "FastGasPrice"] {
        let price: f64 = oracle[field].as_str().unwrap().parse().unwrap();
        assert!(price >= suggested, "{field}: {oracle}");
    }
    assert!(
        answer["confirmation"]
            .as_str()
            .is_some_and(|s| s.parse::<u64>().is_ok()),
        "{answer}"
    );
    // Every price the oracle proposes, the safe one included, gets an estimate.
    for field in ["SafeGasPrice", "ProposeGasPrice", "FastGasPrice"] {
        let gwei = oracle[field].as_str().unwrap();
        let (whole, fraction) = gwei.split_once('.').unwrap_or((gwei, ""));
        let wei = format!("{whole}{fraction:0<9}")
            .trim_start_matches('0')
            .to_owned();
        let estimate = raw(
            &weiport,
            &key.id,
            &format!("module=gastracker&action=gasestimate&gasprice={wei}"),
        )
        .await;
        assert_eq!(estimate["status"], "1", "{field} {wei}: {estimate}");
        assert!(
            estimate["result"].as_str().unwrap().parse::<u64>().unwrap() >= 1,
            "{estimate}"
        );
    }

    // The supply: every balance the node holds for every address the
    // chain ever touched (dev accounts, senders, recipients, coinbase).
    let mut touched = chain.mentioned_addresses(head).await;
    touched.extend(dev.iter().copied());
    touched.extend([forwarder, token, factory, child]);
    let mut supply = U256::ZERO;
    for address in &touched {
        supply += quantity(
            &chain
                .rpc("eth_getBalance", json!([address, "latest"]))
                .await,
        );
    }
    assert_eq!(answer["supply"], supply.to_string(), "{answer}");
    assert_eq!(answer["price"]["ethusd"], "2150.5", "{answer}");
    assert_eq!(answer["price"]["ethbtc"], "");

    // The token: supply now and at its creation, its description.
    let supply_call = chain
        .rpc(
            "eth_call",
            json!([{ "to": token, "data": "0x18160ddd" }, "latest"]),
        )
        .await;
    let token_supply = quantity(&supply_call).to_string();
    assert_eq!(answer["token_supply"], token_supply);
    assert_eq!(answer["token_supply_then"], token_supply);
    let info = &answer["token_info"][0];
    assert_eq!(info["contractAddress"], format!("{token:#x}"));
    assert_eq!(info["totalSupply"], token_supply);
    assert_eq!(info["tokenType"], "ERC20");
    assert!(!info["symbol"].as_str().unwrap().is_empty(), "{info}");
    assert!(
        answer["abi"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("Contract source code not verified")),
        "{answer}"
    );
    assert_eq!(
        answer["source"][0]["ABI"],
        "Contract source code not verified"
    );

    // Contract creation (etherscan-python has no call for it): by a
    // transaction of its own, and by a contract within one.
    let created = raw(
        &weiport,
        &key.id,
        &format!(
            "module=contract&action=getcontractcreation&contractaddresses={token:#x},{child:#x}"
        ),
    )
    .await;
    let token_tx = chain.receipt_status(factory_tx).await;
    let _ = token_tx;
    let rows = created["result"].as_array().expect("creations");
    assert_eq!(rows.len(), 2, "{created}");
    assert_eq!(rows[0]["contractAddress"], format!("{token:#x}"));
    assert_eq!(rows[0]["contractCreator"], format!("{:#x}", dev[3]));
    assert_eq!(rows[0]["contractFactory"], "");
    assert_eq!(rows[0]["creationBytecode"], token_code().0.to_lowercase());
    assert_eq!(rows[1]["contractAddress"], format!("{child:#x}"));
    assert_eq!(rows[1]["contractCreator"], format!("{:#x}", dev[4]));
    assert_eq!(rows[1]["contractFactory"], format!("{factory:#x}"));
    assert_eq!(rows[1]["txHash"], format!("{factory_tx:#x}"));
    assert_eq!(rows[1]["creationBytecode"], CHILD_INITCODE);

    // Every block's miner and fees, by miner; no beacon withdrawals on anvil.
    let miner = block["miner"].as_str().unwrap().to_lowercase();
    let mined = raw(
        &weiport,
        &key.id,
        &format!("module=account&action=getminedblocks&address={miner}&offset=1000"),
    )
    .await;
    let numbers: Vec<u64> = mined["result"]
        .as_array()
        .expect("mined blocks")
        .iter()
        .map(|b| b["blockNumber"].as_str().unwrap().parse().unwrap())
        .collect();
    assert_eq!(numbers, (1..=head).collect::<Vec<_>>(), "{mined}");
    let rewarded = &mined["result"][(reward_number - 1) as usize];
    assert_eq!(rewarded["blockReward"], tips.to_string(), "{rewarded}");
    assert_eq!(rewarded["timeStamp"], time.to_string());
    let withdrawals = raw(
        &weiport,
        &key.id,
        &format!("module=account&action=txsBeaconWithdrawal&address={miner}"),
    )
    .await;
    assert_eq!(
        withdrawals["message"], "No transactions found",
        "{withdrawals}"
    );
    // Internal transfers of a block range, whoever made them: the child's
    // creation by the factory.
    let internal = raw(
        &weiport,
        &key.id,
        &format!("module=account&action=txlistinternal&startblock=0&endblock={head}&sort=asc"),
    )
    .await;
    let created: Vec<&Value> = internal["result"]
        .as_array()
        .expect("internal transfers")
        .iter()
        .filter(|t| t["contractAddress"] == format!("{child:#x}"))
        .collect();
    assert_eq!(created.len(), 1, "{internal}");
    assert_eq!(created[0]["from"], format!("{factory:#x}"));
    assert_eq!(created[0]["hash"], format!("{factory_tx:#x}"));

    // Refusals in Etherscan's shape.
    for query in [
        "module=block&action=getblockcountdown&blockno=1",
        "module=block&action=getblocknobytime&timestamp=1&closest=sideways",
        "module=transaction&action=getstatus&txhash=0x12",
        "module=gastracker&action=gasestimate&gasprice=abc",
        "module=contract&action=getcontractcreation&contractaddresses=0x1,0x2",
        "module=stats&action=tokensupply&contractaddress=nothing",
    ] {
        let refused = raw(&weiport, &key.id, query).await;
        assert_eq!(
            (refused["status"].clone(), refused["message"].clone()),
            (json!("0"), json!("NOTOK")),
            "{query}: {refused}"
        );
    }
    let peers = raw(&weiport, &key.id, "module=stats&action=nodecount").await;
    assert_eq!(peers["result"]["TotalNodeCount"], "1", "{peers}");
}

/// A module, an action and its parameters as a valid request sends them.
type Action<'a> = (&'a str, &'a str, Vec<(&'a str, &'a str)>);

/// Each new action, each of its parameters replaced by each hostile value:
/// always Etherscan's shape, never a 5xx, the server alive after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_new_actions_refuse_hostile_parameters_in_etherscans_shape() {
    let anvil = Anvil::start(&[]);
    let chain = Chain::new(&anvil.url);
    let dev = chain.accounts().await;
    let tx = chain.transfer(dev[0], dev[1], ether(1)).await;
    let dir = tempfile::tempdir().unwrap();
    let weiport = Weiport::serve(dir.path(), &history_env(&anvil.url, &[]));
    weiport.wait_indexed(chain.settled_head().await).await;
    let key = weiport.key(json!({ "permissions": ["read"] })).await;
    let hash = format!("{tx:#x}");
    let address = format!("{:#x}", dev[0]);
    let actions: Vec<Action> = vec![
        ("block", "getblockreward", vec![("blockno", "1")]),
        ("block", "getblockcountdown", vec![("blockno", "99999")]),
        (
            "block",
            "getblocknobytime",
            vec![("timestamp", "1700000000"), ("closest", "before")],
        ),
        ("transaction", "getstatus", vec![("txhash", &hash)]),
        ("transaction", "gettxreceiptstatus", vec![("txhash", &hash)]),
        ("gastracker", "gasoracle", vec![]),
        (
            "gastracker",
            "gasestimate",
            vec![("gasprice", "2000000000")],
        ),
        ("stats", "ethsupply", vec![]),
        ("stats", "ethprice", vec![]),
        ("stats", "nodecount", vec![]),
        ("stats", "tokensupply", vec![("contractaddress", &address)]),
        (
            "stats",
            "tokensupplyhistory",
            vec![("contractaddress", &address), ("blockno", "1")],
        ),
        ("token", "tokeninfo", vec![("contractaddress", &address)]),
        (
            "token",
            "tokenholderlist",
            vec![
                ("contractaddress", &address),
                ("page", "1"),
                ("offset", "10"),
            ],
        ),
        (
            "token",
            "tokenholdercount",
            vec![("contractaddress", &address)],
        ),
        (
            "account",
            "tokennfttx",
            vec![("address", &address), ("page", "1"), ("offset", "10")],
        ),
        (
            "account",
            "token1155tx",
            vec![("contractaddress", &address), ("sort", "desc")],
        ),
        (
            "account",
            "getminedblocks",
            vec![("address", &address), ("blocktype", "blocks")],
        ),
        (
            "account",
            "addresstokennftbalance",
            vec![("address", &address), ("page", "1")],
        ),
        (
            "account",
            "addresstokennftinventory",
            vec![("address", &address), ("contractaddress", &address)],
        ),
        (
            "account",
            "txsBeaconWithdrawal",
            vec![("address", &address), ("sort", "asc")],
        ),
        (
            "account",
            "txlistinternal",
            vec![("startblock", "0"), ("endblock", "99")],
        ),
        ("contract", "getabi", vec![("address", &address)]),
        ("contract", "getsourcecode", vec![("address", &address)]),
        (
            "contract",
            "getcontractcreation",
            vec![("contractaddresses", &address)],
        ),
    ];
    let values = common::hostile::hostile_values();
    let mut connection = common::raw_http::Connection::open(&weiport.url).await;
    let mut requests = 0;
    for (module, action, base) in &actions {
        let names: Vec<&str> = ["module", "action"]
            .into_iter()
            .chain(base.iter().map(|(n, _)| *n))
            .collect();
        for name in names {
            for value in values.iter().map(String::as_str) {
                let mut params: Vec<(&str, &str)> = vec![("module", module), ("action", action)];
                params.extend(base.iter().copied());
                params.push(("apikey", key.id.as_str()));
                params.retain(|(n, _)| *n != name);
                params.push((name, value));
                let query: Vec<String> = params.iter().map(|(n, v)| format!("{n}={v}")).collect();
                let target = format!("/api?{}", query.join("&"));
                common::hostile::assert_etherscan_shape(&mut connection, &target).await;
                requests += 1;
            }
        }
    }
    assert!(requests > 500, "{requests}");
    let health = connection.request("GET", "/healthz", &[], b"").await;
    assert_eq!(health.map(|a| a.status), Some(200), "server alive");
}
