//! What the node says each address's transaction list is, in Etherscan's
//! `txlist` shape, built from the node's blocks and receipts alone (not from
//! weiport's code), and the comparison of the index with it.

use std::collections::BTreeMap;

use alloy_primitives::{Address, U256};
use serde_json::{Value, json};
use weiport_storage::{HistoryPage, Store};

use super::chain::Chain;

/// One transaction of the node, with the addresses whose lists show it.
pub struct NodeTransaction {
    pub block: u64,
    pub index: u64,
    pub hash: String,
    pub addresses: Vec<Address>,
    /// Its `txlist` entry, `confirmations` counted from `head`.
    pub entry: Value,
}

/// A node quantity as a decimal string (absent: 0).
pub fn decimal(hex: &Value) -> String {
    let text = hex.as_str().unwrap_or("0x0");
    U256::from_str_radix(text.trim_start_matches("0x"), 16)
        .unwrap()
        .to_string()
}

/// A block of the node with its transaction bodies, and each transaction
/// with its receipt.
pub struct NodeBlock {
    pub number: u64,
    pub block: Value,
    pub receipts: Value,
}

impl NodeBlock {
    /// Each transaction body with its receipt, in order.
    pub fn transactions(&self) -> impl Iterator<Item = (&Value, &Value)> {
        self.block["transactions"]
            .as_array()
            .unwrap()
            .iter()
            .zip(self.receipts.as_array().unwrap())
    }
}

/// Blocks `1..=head` with transaction bodies and receipts.
pub async fn node_blocks(chain: &Chain, head: u64) -> Vec<NodeBlock> {
    let mut blocks = Vec::with_capacity(head as usize);
    for number in 1..=head {
        let tag = format!("{number:#x}");
        let block = chain.rpc("eth_getBlockByNumber", json!([tag, true])).await;
        // anvil can answer null for a block it has just mined while its
        // receipts are still being stored: ask again until it has them.
        let mut receipts = chain.rpc("eth_getBlockReceipts", json!([tag])).await;
        for _ in 0..100 {
            if receipts.is_array() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            receipts = chain.rpc("eth_getBlockReceipts", json!([tag])).await;
        }
        blocks.push(NodeBlock {
            number,
            block,
            receipts,
        });
    }
    blocks
}

/// Every transaction of blocks `1..=head`, in chain order.
pub async fn node_transactions(chain: &Chain, head: u64) -> Vec<NodeTransaction> {
    let mut found = Vec::new();
    for node_block in node_blocks(chain, head).await {
        let (number, block) = (node_block.number, &node_block.block);
        for (index, (tx, receipt)) in node_block.transactions().enumerate() {
            let success = receipt["status"] == "0x1";
            let lower = |v: &Value| v.as_str().map(str::to_lowercase).unwrap_or_default();
            let input = lower(&tx["input"]);
            let method_id = if input.len() >= 10 {
                input[..10].to_owned()
            } else {
                "0x".to_owned()
            };
            let entry = json!({
                "blockNumber": number.to_string(),
                "timeStamp": decimal(&block["timestamp"]),
                "hash": lower(&tx["hash"]),
                "nonce": decimal(&tx["nonce"]),
                "blockHash": lower(&block["hash"]),
                "transactionIndex": index.to_string(),
                "from": lower(&tx["from"]),
                "to": lower(&tx["to"]),
                "value": decimal(&tx["value"]),
                "gas": decimal(&tx["gas"]),
                "gasPrice": decimal(&receipt["effectiveGasPrice"]),
                "isError": if success { "0" } else { "1" },
                "txreceipt_status": if success { "1" } else { "0" },
                "input": input,
                "contractAddress": lower(&receipt["contractAddress"]),
                "cumulativeGasUsed": decimal(&receipt["cumulativeGasUsed"]),
                "gasUsed": decimal(&receipt["gasUsed"]),
                "confirmations": (head - number + 1).to_string(),
                "methodId": method_id,
                "functionName": "",
            });
            let mut addresses: Vec<Address> = ["from", "to"]
                .iter()
                .filter_map(|field| tx[*field].as_str())
                .chain(receipt["contractAddress"].as_str())
                .map(|a| a.parse().unwrap())
                .collect();
            addresses.dedup();
            addresses.sort();
            addresses.dedup();
            found.push(NodeTransaction {
                block: number,
                index: index as u64,
                hash: lower(&tx["hash"]),
                addresses,
                entry,
            });
        }
    }
    found
}

/// Each address's `txlist` entries, oldest first.
pub fn txlists(transactions: &[NodeTransaction]) -> BTreeMap<Address, Vec<Value>> {
    let mut lists: BTreeMap<Address, Vec<Value>> = BTreeMap::new();
    for transaction in transactions {
        for address in &transaction.addresses {
            lists
                .entry(*address)
                .or_default()
                .push(transaction.entry.clone());
        }
    }
    lists
}

/// Asserts that the transaction index lists, for every address the node's
/// transactions of `1..=head` mention, exactly those transactions in order.
pub async fn assert_transactions_indexed(store: &Store, chain: &Chain, head: u64) -> usize {
    let transactions = node_transactions(chain, head).await;
    let mut expected: BTreeMap<Address, Vec<(u64, u64, String)>> = BTreeMap::new();
    for t in &transactions {
        for address in &t.addresses {
            expected
                .entry(*address)
                .or_default()
                .push((t.block, t.index, t.hash.clone()));
        }
    }
    let everything = HistoryPage {
        from_block: 0,
        to_block: u64::MAX,
        descending: false,
        skip: 0,
        take: usize::MAX,
    };
    for (address, wanted) in &expected {
        let indexed: Vec<(u64, u64, String)> = store
            .address_transactions(address, everything)
            .unwrap()
            .into_iter()
            .map(|t| (t.block, u64::from(t.index), format!("{:#x}", t.row.hash)))
            .collect();
        assert_eq!(&indexed, wanted, "transactions of {address}");
    }
    transactions.len()
}
