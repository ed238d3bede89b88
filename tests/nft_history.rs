//! ERC-721 and ERC-1155 transfers indexed from a real node's logs: an
//! ERC-721 collection and an ERC-1155 contract compiled here (mint,
//! transfer, batch transfer, burn), `tokennfttx` and `token1155tx` by
//! address and by contract compared with the node's own logs, and a
//! reorganisation that takes an NFT transfer away.

mod common;

use alloy_primitives::{Address, B256, U256};
use common::chain::Chain;
use common::tokens::{address_word, call, deploy, nft_code};
use common::{Anvil, DevNode, DevNodeKind, Weiport, history_env, run_client_with_input};
use serde_json::{Value, json};

const TRANSFER: &str = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
const SINGLE: &str = "0xc3d58168c5ae7397731d063d5bbf3d657854427343f4c083240f7aacaa2d0f62";
const BATCH: &str = "0x4a39dc06d4c0dbc64b70af90fd698a233a518aa5d07e595d983b8c0526c8f7fb";

fn word(n: u64) -> U256 {
    U256::from(n)
}

/// Sends `data` to `contract` from `from`; asserts it succeeded.
async fn send(chain: &Chain, from: Address, contract: Address, data: String) -> B256 {
    let tx = chain
        .send(from, Some(contract), U256::ZERO, &data, 300_000)
        .await;
    assert!(chain.receipt_status(tx).await.0, "{data}");
    tx
}

/// Every transfer item the node logged for `contract` up to `head`, as
/// `(block, hash, from, to, id, value)`, in log order.
async fn node_items(
    chain: &Chain,
    contract: Address,
    head: u64,
) -> Vec<(u64, String, String, String, String, String)> {
    let logs = chain
        .rpc(
            "eth_getLogs",
            json!([{ "fromBlock": "0x0", "toBlock": format!("{head:#x}"), "address": contract }]),
        )
        .await;
    let topic_address = |t: &Value| format!("0x{}", &t.as_str().unwrap()[26..]);
    let number = |hex: &str| U256::from_str_radix(hex.trim_start_matches("0x"), 16).unwrap();
    let mut items = Vec::new();
    for log in logs.as_array().unwrap() {
        let topics = log["topics"].as_array().unwrap();
        let block = number(log["blockNumber"].as_str().unwrap()).to::<u64>();
        let hash = log["transactionHash"].as_str().unwrap().to_owned();
        let data = log["data"].as_str().unwrap().trim_start_matches("0x");
        let data_word = |i: usize| U256::from_str_radix(&data[i * 64..(i + 1) * 64], 16).unwrap();
        let mut push = |from: String, to: String, id: U256, value: U256| {
            items.push((
                block,
                hash.clone(),
                from,
                to,
                id.to_string(),
                value.to_string(),
            ));
        };
        match topics[0].as_str().unwrap() {
            TRANSFER => push(
                topic_address(&topics[1]),
                topic_address(&topics[2]),
                number(topics[3].as_str().unwrap()),
                U256::from(1),
            ),
            SINGLE => push(
                topic_address(&topics[2]),
                topic_address(&topics[3]),
                data_word(0),
                data_word(1),
            ),
            BATCH => {
                let count = data_word(2).to::<usize>();
                for i in 0..count {
                    push(
                        topic_address(&topics[2]),
                        topic_address(&topics[3]),
                        data_word(3 + i),
                        data_word(4 + count + i),
                    );
                }
            }
            other => panic!("unexpected log {other}"),
        }
    }
    items
}

/// What weiport lists, in the node's item shape.
fn listed(answer: &Value, multi: bool) -> Vec<(u64, String, String, String, String, String)> {
    answer["result"]
        .as_array()
        .unwrap_or(&Vec::new())
        .iter()
        .map(|e| {
            (
                e["blockNumber"].as_str().unwrap().parse().unwrap(),
                e["hash"].as_str().unwrap().to_owned(),
                e["from"].as_str().unwrap().to_owned(),
                e["to"].as_str().unwrap().to_owned(),
                e["tokenID"].as_str().unwrap().to_owned(),
                if multi {
                    e["tokenValue"].as_str().unwrap().to_owned()
                } else {
                    "1".to_owned()
                },
            )
        })
        .collect()
}

async fn raw(weiport: &Weiport, key: &str, query: &str) -> Value {
    weiport.etherscan(&format!("{query}&apikey={key}")).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nft_and_multi_token_transfers_equal_anvils_logs_across_a_reorganisation() {
    let anvil = Anvil::start(&[]);
    nfts_on(&anvil.url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nft_and_multi_token_transfers_equal_hardhats_logs_across_a_reorganisation() {
    let hardhat = DevNode::start(DevNodeKind::Hardhat);
    nfts_on(&hardhat.url).await;
}

/// Mints, transfers, batches and burns on the node at `url`, then checks
/// every list and holding against the node's logs and calls, before and
/// after a reorganisation that takes a transfer away.
async fn nfts_on(url: &str) {
    let chain = Chain::new(url);
    let dev = chain.accounts().await;
    let (collection_code, multi_code) = nft_code();
    let collection = deploy(&chain, dev[0], collection_code).await;
    let items = deploy(&chain, dev[0], multi_code).await;
    let (one, two, three) = (dev[1], dev[2], dev[3]);
    // ERC-721: two mints, a transfer, a burn.
    for id in [1, 2] {
        send(
            &chain,
            dev[0],
            collection,
            call("mint(address,uint256)", &[address_word(one), word(id)]),
        )
        .await;
    }
    send(
        &chain,
        one,
        collection,
        call(
            "transferFrom(address,address,uint256)",
            &[address_word(one), address_word(two), word(1)],
        ),
    )
    .await;
    send(&chain, one, collection, call("burn(uint256)", &[word(2)])).await;
    // ERC-1155: mints, a single transfer, a batch of two ids, a burn.
    for (id, value) in [(7, 10), (8, 5)] {
        send(
            &chain,
            dev[0],
            items,
            call(
                "mint(address,uint256,uint256)",
                &[address_word(one), word(id), word(value)],
            ),
        )
        .await;
    }
    send(
        &chain,
        one,
        items,
        call(
            "safeTransferFrom(address,address,uint256,uint256,bytes)",
            &[
                address_word(one),
                address_word(two),
                word(7),
                word(3),
                word(160),
                word(0),
            ],
        ),
    )
    .await;
    // (from, to, offset ids, offset values, offset data, ids [7, 8], values [2, 4], data "")
    send(
        &chain,
        one,
        items,
        call(
            "safeBatchTransferFrom(address,address,uint256[],uint256[],bytes)",
            &[
                address_word(one),
                address_word(two),
                word(160),
                word(256),
                word(352),
                word(2),
                word(7),
                word(8),
                word(2),
                word(2),
                word(4),
                word(0),
            ],
        ),
    )
    .await;
    send(
        &chain,
        two,
        items,
        call("burn(uint256,uint256)", &[word(7), word(1)]),
    )
    .await;

    let dir = tempfile::tempdir().unwrap();
    let weiport = Weiport::serve(dir.path(), &history_env(url, &[]));
    let key = weiport.key(json!({ "permissions": ["read"] })).await.id;
    let check = |head: u64| {
        let (weiport, chain, key) = (&weiport, &chain, key.clone());
        async move {
            for (contract, action, multi) in [
                (collection, "tokennfttx", false),
                (items, "token1155tx", true),
            ] {
                let want = node_items(chain, contract, head).await;
                let by_contract = raw(
                    weiport,
                    &key,
                    &format!(
                        "module=account&action={action}&contractaddress={contract:#x}&sort=asc"
                    ),
                )
                .await;
                assert_eq!(listed(&by_contract, multi), want, "{action} by contract");
                for holder in [one, two, three] {
                    let holder_text = format!("{holder:#x}");
                    let mine: Vec<_> = want
                        .iter()
                        .filter(|i| i.2 == holder_text || i.3 == holder_text)
                        .cloned()
                        .collect();
                    let answer = raw(
                        weiport,
                        &key,
                        &format!("module=account&action={action}&address={holder:#x}&sort=asc"),
                    )
                    .await;
                    assert_eq!(listed(&answer, multi), mine, "{action} of {holder}");
                    if mine.is_empty() {
                        assert_eq!(answer["message"], "No transactions found", "{answer}");
                    }
                }
                if !multi {
                    // What each holder holds, against ownerOf at the head.
                    for holder in [one, two, three] {
                        let mut owned = Vec::new();
                        for id in [1u64, 2] {
                            let owner = chain
                                .rpc(
                                    "eth_call",
                                    json!([{ "to": contract, "data": call("ownerOf(uint256)", &[word(id)]) }, format!("{head:#x}")]),
                                )
                                .await;
                            let owner = &owner.as_str().unwrap()[26..];
                            if owner == format!("{holder:x}") {
                                owned.push(id.to_string());
                            }
                        }
                        let inventory = raw(
                            weiport,
                            &key,
                            &format!("module=account&action=addresstokennftinventory&address={holder:#x}&contractaddress={contract:#x}"),
                        )
                        .await;
                        let ids: Vec<&str> = inventory["result"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|t| t["TokenId"].as_str().unwrap())
                            .collect();
                        assert_eq!(ids, owned, "inventory of {holder}");
                        let balance = raw(
                            weiport,
                            &key,
                            &format!(
                                "module=account&action=addresstokennftbalance&address={holder:#x}"
                            ),
                        )
                        .await;
                        let quantity = balance["result"][0]["TokenQuantity"]
                            .as_str()
                            .map(str::to_owned);
                        let want = (!owned.is_empty()).then(|| owned.len().to_string());
                        assert_eq!(quantity, want, "{balance}");
                    }
                }
                let first = &by_contract["result"][0];
                assert_eq!(first["contractAddress"], format!("{contract:#x}"));
                assert!(!first["tokenName"].as_str().unwrap().is_empty(), "{first}");
                assert!(
                    !first["tokenSymbol"].as_str().unwrap().is_empty(),
                    "{first}"
                );
            }
        }
    };
    let head = chain.settled_head().await;
    weiport.wait_indexed(head).await;
    check(head).await;

    // ERC-721 through etherscan-python as well.
    let read = run_client_with_input(
        "etherscan_nfts.py",
        vec![weiport.url.clone(), key.clone()],
        json!({ "addresses": [format!("{one:#x}"), format!("{two:#x}")], "contract": format!("{collection:#x}") }),
    )
    .await;
    let want = node_items(&chain, collection, head).await;
    assert_eq!(
        listed(&json!({ "result": read["by_contract"] }), false),
        want,
        "{read}"
    );

    // A transfer indexed, then reorganised away: gone from every list.
    let snapshot = chain.rpc("evm_snapshot", json!([])).await;
    send(
        &chain,
        two,
        collection,
        call(
            "transferFrom(address,address,uint256)",
            &[address_word(two), address_word(three), word(1)],
        ),
    )
    .await;
    let moved = chain.settled_head().await;
    weiport.wait_indexed(moved).await;
    check(moved).await;
    chain.rpc("evm_revert", json!([snapshot])).await;
    for _ in 0..3 {
        chain.transfer(dev[5], dev[6], U256::from(1)).await;
    }
    let head = chain.settled_head().await;
    weiport.wait_indexed(head).await;
    check(head).await;
    let gone = raw(
        &weiport,
        &key,
        &format!("module=account&action=tokennfttx&address={three:#x}"),
    )
    .await;
    assert_eq!(gone["message"], "No transactions found", "{gone}");
}
