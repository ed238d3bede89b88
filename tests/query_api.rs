//! The Etherscan-compatible API over a real anvil and the real indexer:
//! answers equal the node's own balances, through a third-party Etherscan
//! client library and raw HTTP; every refusal has its exact body.

mod common;

use alloy_primitives::{Address, U256};
use common::chain::{Chain, ether};
use common::{Anvil, Weiport};
use serde_json::{Value, json};
use weiport_indexer::StateAt;

struct Setup {
    server: Weiport,
    chain: Chain,
    key: String,
    http: reqwest::Client,
    addresses: Vec<Address>,
    _anvil: Anvil,
    _dir: tempfile::TempDir,
}

async fn setup(env: &[(&str, &str)]) -> Setup {
    let anvil = Anvil::start(&["--accounts", "3"]);
    let chain = Chain::new(&anvil.url);
    let dev = chain.accounts().await;
    let fresh: Vec<Address> = (1..=4u8).map(|i| Address::repeat_byte(0x50 + i)).collect();
    for i in 0..12u64 {
        let tx = chain
            .transfer(dev[(i % 3) as usize], fresh[(i % 4) as usize], ether(1 + i))
            .await;
        chain.receipt(tx).await;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut all = vec![
        ("WEIPORT_NODE__URL", anvil.url.as_str()),
        ("WEIPORT_INDEXER__POLL_INTERVAL_MS", "20"),
    ];
    all.extend_from_slice(env);
    let server = Weiport::serve(dir.path(), &all);
    let key = server.create_key(json!({ "tier": "professional" })).await;
    server.wait_indexed(chain.head().await).await;
    let http = reqwest::Client::new();
    let mut addresses: Vec<Address> = dev.into_iter().chain(fresh).collect();
    addresses.push(Address::repeat_byte(0xee)); // never touched: 0
    Setup {
        server,
        chain,
        key: key["id"].as_str().unwrap().to_owned(),
        http,
        addresses,
        _anvil: anvil,
        _dir: dir,
    }
}

impl Setup {
    async fn get(&self, query: &str) -> (u16, Value) {
        let response = self
            .http
            .get(format!("{}{query}", self.server.url))
            .send()
            .await
            .unwrap();
        (response.status().as_u16(), response.json().await.unwrap())
    }

    async fn node_balance(&self, address: Address, block: u64) -> String {
        self.chain
            .node
            .balance(address, StateAt::Number(block))
            .await
            .unwrap()
            .to_string()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_third_party_etherscan_client_reads_the_nodes_balances() {
    // The client library does not throttle itself: a tier that lets it run.
    let setup = setup(&[("WEIPORT_ACCESS__QUERY_TIERS__PROFESSIONAL", "100000")]).await;
    let head = setup.chain.head().await;
    let text = |a: &Address| a.to_checksum(None);
    let history: Vec<(Address, u64)> = setup
        .addresses
        .iter()
        .flat_map(|a| [(*a, 0), (*a, 3), (*a, 7), (*a, head)])
        .collect();
    let request = json!({
        "single": setup.addresses.iter().map(text).collect::<Vec<_>>(),
        "multi": setup.addresses.iter().map(|a| text(a).to_lowercase()).collect::<Vec<_>>(),
        "history": history.iter().map(|(a, b)| json!([text(a), b])).collect::<Vec<_>>(),
    });
    let answer = common::run_client_with_input(
        "etherscan_balances.py",
        vec![setup.server.url.clone(), setup.key.clone()],
        request,
    )
    .await;

    for address in &setup.addresses {
        let expected = setup.node_balance(*address, head).await;
        assert_eq!(
            answer["single"][text(address)],
            json!(expected),
            "{address}"
        );
    }
    let multi = answer["multi"].as_array().unwrap();
    assert_eq!(multi.len(), setup.addresses.len());
    for (entry, address) in multi.iter().zip(&setup.addresses) {
        assert_eq!(
            entry["account"],
            json!(text(address).to_lowercase()),
            "accounts echoed in request order"
        );
        assert_eq!(
            entry["balance"],
            json!(setup.node_balance(*address, head).await)
        );
    }
    for ((address, block), got) in history.iter().zip(answer["history"].as_array().unwrap()) {
        assert_eq!(
            got,
            &json!(setup.node_balance(*address, *block).await),
            "{address} at {block}"
        );
    }
    assert_eq!(answer["block_number"], json!(format!("{head:#x}")));
    let mut changed = false;
    for address in &setup.addresses {
        changed |=
            setup.node_balance(*address, head).await != setup.node_balance(*address, 3).await;
    }
    assert!(
        changed,
        "the history lookups compare balances that differ between blocks"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_http_tags_v2_post_and_proxy_balance() {
    let setup = setup(&[]).await;
    let key = &setup.key;
    let head = setup.chain.head().await;
    let address = setup.addresses[3];
    let setup = &setup;
    let at = |block: u64| async move { setup.node_balance(address, block).await };
    let ok = |result: Value| json!({ "status": "1", "message": "OK", "result": result });
    let base = format!("module=account&action=balance&address={address:#x}&apikey={key}");
    for (tag, block) in [
        ("latest", head),
        ("pending", head),
        ("earliest", 0),
        ("5", 5),
        ("0x5", 5),
        ("0", 0),
    ] {
        assert_eq!(
            setup.get(&format!("/api?{base}&tag={tag}")).await,
            (200, ok(json!(at(block).await))),
            "tag {tag}"
        );
    }
    assert_eq!(
        setup.get(&format!("/v2/api?chainid=31337&{base}")).await,
        (200, ok(json!(at(head).await)))
    );
    let form = setup
        .http
        .post(format!("{}/api", setup.server.url))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(base.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(
        form.json::<Value>().await.unwrap(),
        ok(json!(at(head).await)),
        "POST form like Etherscan"
    );
    let proxy = format!(
        "/api?module=proxy&action=eth_getBalance&address={address:#x}&tag=0x4&apikey={key}"
    );
    let expected = U256::from_str_radix(&at(4).await, 10).unwrap();
    assert_eq!(
        setup.get(&proxy).await,
        (
            200,
            json!({ "jsonrpc": "2.0", "id": 1, "result": format!("{expected:#x}") })
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_refusal_in_both_status_modes() {
    for http_200 in [false, true] {
        let setup = setup(&[(
            "WEIPORT_QUERY__HTTP_200_ERRORS",
            if http_200 { "true" } else { "false" },
        )])
        .await;
        let key = &setup.key;
        let head = setup.chain.head().await;
        let good = format!("{:#x}", setup.addresses[0]);
        let notok = |result: &str| json!({ "status": "0", "message": "NOTOK", "result": result });
        let status = |s: u16| if http_200 { 200 } else { s };
        let too_many = (0..21).map(|_| good.clone()).collect::<Vec<_>>().join(",");
        let bad_checksum = setup.addresses[0]
            .to_checksum(None)
            .replacen("f39F", "f39f", 1);
        let cases: Vec<(String, u16, Value)> = vec![
            (
                format!("/api?module=account&action=balance&address={good}"),
                401,
                notok("Missing/Invalid API Key"),
            ),
            (
                format!(
                    "/api?module=account&action=balance&address={good}&apikey={}",
                    "Z".repeat(64)
                ),
                401,
                notok("Invalid API Key"),
            ),
            (
                format!("/api?module=accounts&action=balance&address={good}&apikey={key}"),
                400,
                notok("Error! Missing Or invalid Module name"),
            ),
            (
                format!("/api?action=balance&address={good}&apikey={key}"),
                400,
                notok("Error! Missing Or invalid Module name"),
            ),
            (
                format!("/api?module=account&action=balanse&address={good}&apikey={key}"),
                400,
                notok("Error! Missing Or invalid Action name"),
            ),
            (
                format!("/api?module=account&action=balance&address=0x123&apikey={key}"),
                400,
                notok("Error! Invalid address format"),
            ),
            (
                format!("/api?module=account&action=balancemulti&address={too_many}&apikey={key}"),
                400,
                notok("Error! Invalid multi address format"),
            ),
            (
                format!("/api?module=account&action=balancemulti&address={good},0xzz&apikey={key}"),
                400,
                notok("Error! Invalid multi address format"),
            ),
            (
                format!("/v2/api?module=account&action=balance&address={good}&apikey={key}"),
                400,
                notok(
                    "Missing or unsupported chainid parameter (required for v2 api), please see https://api.etherscan.io/v2/chainlist for the list of supported chainids",
                ),
            ),
            (
                format!(
                    "/v2/api?chainid=1&module=account&action=balance&address={good}&apikey={key}"
                ),
                400,
                notok(
                    "Missing or unsupported chainid parameter (required for v2 api), please see https://api.etherscan.io/v2/chainlist for the list of supported chainids",
                ),
            ),
            (
                format!(
                    "/api?module=account&action=balance&address={good}&tag={}&apikey={key}",
                    head + 1
                ),
                400,
                notok(&format!(
                    "Error! Block number {} is above the indexed head {head}",
                    head + 1
                )),
            ),
            (
                format!("/api?module=account&action=balance&address={good}&tag=-1&apikey={key}"),
                400,
                notok("Error! Invalid tag"),
            ),
            (
                format!("/api?module=account&action=balancehistory&address={good}&apikey={key}"),
                400,
                notok("Error! Missing or invalid blockno"),
            ),
        ];
        for (query, expected_status, body) in cases {
            assert_eq!(
                setup.get(&query).await,
                (status(expected_status), body),
                "{query}"
            );
        }
        // Like Etherscan, any letter case names the address: a mixed case
        // that is not its EIP-55 checksum is not an error.
        let balance = |address: &str| {
            format!("/api?module=account&action=balance&address={address}&apikey={key}")
        };
        let answer = setup.get(&balance(&bad_checksum)).await;
        assert_eq!(answer.0, 200, "{answer:?}");
        assert_eq!(answer, setup.get(&balance(&good)).await);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_calls_per_second_limit_answers_like_etherscan_in_both_status_modes() {
    for http_200 in [false, true] {
        let mode = if http_200 { "true" } else { "false" };
        let setup = setup(&[("WEIPORT_QUERY__HTTP_200_ERRORS", mode)]).await;
        // A default-tier key: 5 calls per second.
        let key = setup.server.create_key(json!({})).await;
        let query = format!(
            "/api?module=proxy&action=eth_blockNumber&apikey={}",
            key["id"].as_str().unwrap()
        );
        let limited = json!({ "status": "0", "message": "NOTOK", "result": "Max calls per sec rate limit reached (5/sec)" });
        let mut answers = Vec::new();
        // A burst of 5 passes; the limiter refills one call per 200 ms, so a
        // slow machine may pass a sixth: keep going until the first refusal.
        while answers.last().is_none_or(|(_, body)| *body != limited) && answers.len() < 50 {
            answers.push(setup.get(&query).await);
        }
        assert!(
            answers[..5].iter().all(|(status, _)| *status == 200),
            "{answers:?}"
        );
        let expected_status = if http_200 { 200 } else { 429 };
        assert_eq!(answers.last().unwrap(), &(expected_status, limited));
    }
}
