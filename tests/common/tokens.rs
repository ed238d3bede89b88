//! ERC-20 contracts compiled from tests/contracts/Token.sol with the pinned
//! solc (tools/package.json), and what the node says of token transfers and
//! internal transfers, in Etherscan's shapes, built from the node's receipts,
//! `eth_call` answers and parity-style `trace_block` traces (a different
//! tracer from the callTracer the indexer reads).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use alloy_primitives::{Address, U256};
use serde_json::{Value, json};

use super::chain::Chain;
use super::history::{decimal, node_blocks};
use super::repo_path;

/// Creation code of `Token` and `FeeToken`, compiled once a test process.
pub fn token_code() -> &'static (String, String) {
    static CODE: OnceLock<(String, String)> = OnceLock::new();
    CODE.get_or_init(|| {
        let read = compile("Token.sol");
        (read("Token"), read("FeeToken"))
    })
}

/// Creation code of the ERC-721 `Collection` and the ERC-1155 `MultiToken`.
pub fn nft_code() -> &'static (String, String) {
    static CODE: OnceLock<(String, String)> = OnceLock::new();
    CODE.get_or_init(|| {
        let read = compile("Nft.sol");
        (read("Collection"), read("MultiToken"))
    })
}

/// Creation code of `Reverts`: calls reverting with a reason, a panic and a
/// custom error.
pub fn reverts_code() -> &'static String {
    static CODE: OnceLock<String> = OnceLock::new();
    CODE.get_or_init(|| compile("Reverts.sol")("Reverts"))
}

/// Compiles tests/contracts/`file` with the pinned solc; each contract's
/// creation code by name.
fn compile(file: &str) -> impl Fn(&str) -> String {
    let out = tempfile::tempdir().unwrap();
    let solcjs = repo_path("tools/node_modules/.bin/solcjs");
    let status = std::process::Command::new(&solcjs)
        .args(["--bin", "--optimize", "-o"])
        .arg(out.path())
        .arg(file)
        .current_dir(repo_path("tests/contracts"))
        .status()
        .unwrap_or_else(|e| panic!("{}: {e} (scripts/setup.sh installs it)", solcjs.display()));
    assert!(status.success(), "solcjs failed");
    let stem = file.trim_end_matches(".sol").to_owned();
    move |name: &str| {
        let path = out.path().join(format!("{stem}_sol_{name}.bin"));
        let code = std::fs::read_to_string(path).unwrap();
        format!("0x{}", code.trim())
    }
}

/// Call data of `signature` (e.g. `mint(address,uint256)`) with `words`
/// (each a 32-byte ABI word, already encoded).
pub fn call(signature: &str, words: &[U256]) -> String {
    let selector = &alloy_primitives::keccak256(signature.as_bytes())[..4];
    let mut data = format!("0x{}", alloy_primitives::hex::encode(selector));
    for word in words {
        data.push_str(&format!("{word:064x}"));
    }
    data
}

/// An address as an ABI word.
pub fn address_word(address: Address) -> U256 {
    U256::from_be_slice(address.as_slice())
}

/// Deploys creation code `code` from `from`; the contract's address.
pub async fn deploy(chain: &Chain, from: Address, code: &str) -> Address {
    let tx = chain.send(from, None, U256::ZERO, code, 3_000_000).await;
    let (ok, created) = chain.receipt_status(tx).await;
    assert!(ok, "deployment failed: {}", chain.receipt(tx).await);
    created.unwrap()
}

fn word(address: &Address) -> String {
    format!("{:0>64}", alloy_primitives::hex::encode(address))
}

/// Call data of `transfer(to, value)`.
pub fn transfer_call(to: Address, value: U256) -> String {
    format!("0xa9059cbb{}{value:064x}", word(&to))
}

/// Call data of `spread(to[], value)`: `value` to each of `to`.
pub fn spread_call(to: &[Address], value: U256) -> String {
    let mut data = format!("0x32a93da6{:064x}{value:064x}{:064x}", 64, to.len());
    for address in to {
        data.push_str(&word(address));
    }
    data
}

/// `balanceOf(holder)` of `token` at the node's head.
pub async fn balance_of(chain: &Chain, token: Address, holder: Address) -> U256 {
    let data = format!("0x70a08231{}", word(&holder));
    let answer = chain
        .rpc(
            "eth_call",
            json!([{ "to": token, "input": data }, "latest"]),
        )
        .await;
    U256::from_str_radix(answer.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

async fn call_text(chain: &Chain, token: Address, selector: &str) -> String {
    let answer = chain
        .rpc(
            "eth_call",
            json!([{ "to": token, "input": selector }, "latest"]),
        )
        .await;
    let bytes = alloy_primitives::hex::decode(answer.as_str().unwrap()).unwrap();
    let len = U256::from_be_slice(&bytes[32..64]).to::<usize>();
    String::from_utf8(bytes[64..64 + len].to_vec()).unwrap()
}

/// Each address's `tokentx` entries (as sender or recipient) of blocks
/// `1..=head`, oldest first, from the node's receipts and blocks.
pub async fn node_token_transfers(chain: &Chain, head: u64) -> BTreeMap<Address, Vec<Value>> {
    let topic = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
    let mut lists: BTreeMap<Address, Vec<Value>> = BTreeMap::new();
    let mut names: BTreeMap<Address, (String, String)> = BTreeMap::new();
    for node_block in node_blocks(chain, head).await {
        let (number, block) = (node_block.number, &node_block.block);
        for (index, (tx, receipt)) in node_block.transactions().enumerate() {
            for log in receipt["logs"].as_array().unwrap() {
                let topics = log["topics"].as_array().unwrap();
                if topics.len() != 3 || topics[0] != topic {
                    continue;
                }
                let token: Address = log["address"].as_str().unwrap().parse().unwrap();
                if let std::collections::btree_map::Entry::Vacant(entry) = names.entry(token) {
                    let name = call_text(chain, token, "0x06fdde03").await;
                    let symbol = call_text(chain, token, "0x95d89b41").await;
                    entry.insert((name, symbol));
                }
                let (name, symbol) = &names[&token];
                let party = |t: &Value| -> Address {
                    Address::from_slice(
                        &alloy_primitives::hex::decode(t.as_str().unwrap()).unwrap()[12..],
                    )
                };
                let (from, to) = (party(&topics[1]), party(&topics[2]));
                let input = tx["input"].as_str().unwrap().to_lowercase();
                let entry = json!({
                    "blockNumber": number.to_string(),
                    "timeStamp": decimal(&block["timestamp"]),
                    "hash": tx["hash"].as_str().unwrap().to_lowercase(),
                    "nonce": decimal(&tx["nonce"]),
                    "blockHash": block["hash"].as_str().unwrap().to_lowercase(),
                    "from": format!("{from:#x}"),
                    "contractAddress": format!("{token:#x}"),
                    "to": format!("{to:#x}"),
                    "value": decimal(&log["data"]),
                    "tokenName": name,
                    "tokenSymbol": symbol,
                    "tokenDecimal": "18",
                    "transactionIndex": index.to_string(),
                    "gas": decimal(&tx["gas"]),
                    "gasPrice": decimal(&receipt["effectiveGasPrice"]),
                    "gasUsed": decimal(&receipt["gasUsed"]),
                    "cumulativeGasUsed": decimal(&receipt["cumulativeGasUsed"]),
                    "input": "deprecated",
                    "methodId": if input.len() >= 10 { input[..10].to_owned() } else { "0x".to_owned() },
                    "functionName": "",
                    "confirmations": (head - number + 1).to_string(),
                });
                lists.entry(from).or_default().push(entry.clone());
                if to != from {
                    lists.entry(to).or_default().push(entry);
                }
            }
        }
    }
    lists
}

/// Each address's `txlistinternal` entries of blocks `1..=head`, from the
/// node's `trace_block`: frames below the top that move value or create a
/// contract, failed when they or a frame around them failed.
pub async fn node_internal_transfers(chain: &Chain, head: u64) -> BTreeMap<Address, Vec<Value>> {
    let mut lists: BTreeMap<Address, Vec<Value>> = BTreeMap::new();
    for number in 1..=head {
        let tag = format!("{number:#x}");
        let block = chain.rpc("eth_getBlockByNumber", json!([tag, false])).await;
        let traces = chain.rpc("trace_block", json!([tag])).await;
        let traces = traces.as_array().unwrap();
        for trace in traces {
            let path: Vec<u64> = trace["traceAddress"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i.as_u64().unwrap())
                .collect();
            if path.is_empty() {
                continue;
            }
            let kind = trace["type"].as_str().unwrap();
            let action = &trace["action"];
            let value = decimal(&action["value"]);
            let call = kind == "call" && action["callType"] == "call" && value != "0";
            let create = kind == "create";
            if !call && !create {
                continue;
            }
            let hash = trace["transactionHash"].as_str().unwrap();
            // Failed if this frame or any frame around it failed.
            let failed = traces.iter().any(|other| {
                other["transactionHash"] == hash
                    && other.get("error").is_some_and(|e| !e.is_null())
                    && {
                        let around: Vec<u64> = other["traceAddress"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .map(|i| i.as_u64().unwrap())
                            .collect();
                        path.starts_with(&around)
                    }
            });
            let from: Address = action["from"].as_str().unwrap().parse().unwrap();
            let (to, created) = if create {
                (
                    None,
                    trace["result"]["address"]
                        .as_str()
                        .map(|a| a.parse::<Address>().unwrap()),
                )
            } else {
                (
                    action["to"].as_str().map(|a| a.parse::<Address>().unwrap()),
                    None,
                )
            };
            let text = |a: Option<Address>| a.map(|a| format!("{a:#x}")).unwrap_or_default();
            let entry = json!({
                "blockNumber": number.to_string(),
                "timeStamp": decimal(&block["timestamp"]),
                "hash": hash.to_lowercase(),
                "from": format!("{from:#x}"),
                "to": text(to),
                "value": value,
                "contractAddress": text(created),
                "input": "",
                "type": if create { "create" } else { "call" },
                "traceId": path.iter().map(u64::to_string).collect::<Vec<_>>().join("_"),
                "isError": if failed { "1" } else { "0" },
            });
            let mut parties = vec![from];
            parties.extend(to);
            parties.extend(created);
            parties.dedup();
            for party in parties {
                lists.entry(party).or_default().push(entry.clone());
            }
        }
    }
    lists
}

/// Asserts that the store lists, for each of `addresses`, exactly the token
/// and internal transfers the node's blocks `1..=head` hold (block, hash and
/// value, in order), and each address's balance of each of `tokens` as
/// `balanceOf` answers at `head`; the number of transfers compared.
pub async fn assert_transfers_indexed(
    store: &weiport_storage::Store,
    chain: &Chain,
    head: u64,
    addresses: &[Address],
    tokens: &[Address],
) -> usize {
    use weiport_storage::{HistoryPage, Transfer, TransferKind};
    let everything = HistoryPage {
        from_block: 0,
        to_block: u64::MAX,
        descending: false,
        skip: 0,
        take: usize::MAX,
    };
    let node_tokens = node_token_transfers(chain, head).await;
    let node_internal = node_internal_transfers(chain, head).await;
    let mut compared = 0;
    for address in addresses {
        for (kind, node) in [
            (TransferKind::Token, &node_tokens),
            (TransferKind::Internal, &node_internal),
        ] {
            let want: Vec<(String, String, String)> = node
                .get(address)
                .into_iter()
                .flatten()
                .map(|e| {
                    let text = |f: &str| e[f].as_str().unwrap().to_owned();
                    (text("blockNumber"), text("hash"), text("value"))
                })
                .collect();
            let got: Vec<(String, String, String)> = store
                .address_transfers(address, kind, everything, |_| true)
                .unwrap()
                .into_iter()
                .map(|t| {
                    let value = match &t.transfer {
                        Transfer::Token(token) => token.value,
                        Transfer::Internal(internal) => internal.value,
                        Transfer::Nft(nft) | Transfer::MultiToken(nft) => nft.value,
                        Transfer::Mined(..) | Transfer::Withdrawal(..) => U256::ZERO,
                    };
                    (
                        t.block.to_string(),
                        format!("{:#x}", t.transaction.hash),
                        value.to_string(),
                    )
                })
                .collect();
            assert_eq!(got, want, "{kind:?} transfers of {address}");
            compared += got.len();
        }
        for token in tokens {
            let indexed = store
                .token_balance(address, token, None)
                .unwrap()
                .map_or(U256::ZERO, |h| h.balance);
            assert_eq!(
                indexed,
                balance_of(chain, *token, *address).await,
                "{address} in {token}"
            );
        }
    }
    compared
}

/// A node quantity as Etherscan's getLogs writes it: hex, zero as `0x`.
fn log_quantity(hex: &Value) -> String {
    let value = U256::from_str_radix(hex.as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
    if value.is_zero() {
        "0x".to_owned()
    } else {
        format!("{value:#x}")
    }
}

/// The node's `eth_getLogs` answer to `query` that `keep` accepts, in
/// Etherscan's getLogs shape (joined with the node's blocks and receipts).
pub async fn node_logs(chain: &Chain, query: Value, keep: impl Fn(&Value) -> bool) -> Vec<Value> {
    let logs = chain.rpc("eth_getLogs", json!([query])).await;
    let mut entries = Vec::new();
    for log in logs.as_array().unwrap().iter().filter(|log| keep(log)) {
        let block = chain
            .rpc("eth_getBlockByNumber", json!([log["blockNumber"], false]))
            .await;
        let receipt = chain
            .rpc("eth_getTransactionReceipt", json!([log["transactionHash"]]))
            .await;
        entries.push(json!({
            "address": log["address"].as_str().unwrap().to_lowercase(),
            "topics": log["topics"],
            "data": log["data"],
            "blockNumber": log_quantity(&log["blockNumber"]),
            "blockHash": log["blockHash"],
            "timeStamp": log_quantity(&block["timestamp"]),
            "gasPrice": log_quantity(&receipt["effectiveGasPrice"]),
            "gasUsed": log_quantity(&receipt["gasUsed"]),
            "logIndex": log_quantity(&log["logIndex"]),
            "transactionHash": log["transactionHash"],
            "transactionIndex": log_quantity(&log["transactionIndex"]),
        }));
    }
    entries
}
