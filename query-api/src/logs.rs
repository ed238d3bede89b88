//! `module=logs&action=getLogs`: event logs by address, block range and
//! topics combined with Etherscan's `topicX_Y_opr` (`and`/`or`, read as
//! Blockscout's compatible API reads them: each pair with an operator holds
//! as it says, a topic in no such pair must match alone). The logs
//! come from the node (`eth_getLogs`, within the indexed range), joined with
//! the transaction index for `timeStamp`, `gasPrice` and `gasUsed`; every
//! number is hex, zero as `0x`, as Etherscan writes them.

use std::collections::BTreeMap;
use std::fmt::Write;

use alloy_primitives::{Address, B256};
use axum::response::Response;
use serde::Deserialize;
use serde_json::{Value, json};
use weiport_storage::{HistoryIndex, Store};

use crate::envelope::{empty, list};
use crate::error::{MSG_BAD_ADDRESS, QueryError, unavailable};
use crate::params::{Params, number, parse_address};
use crate::proxy::NodeProxy;
use crate::range::{Indexed, indexed_from};

/// Etherscan answers at most this many logs a page.
const MAX_OFFSET: u64 = 1_000;
const TOPICS: usize = 4;

/// A log as `eth_getLogs` answers it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct NodeLog {
    address: Address,
    topics: Vec<B256>,
    data: alloy_primitives::Bytes,
    block_number: alloy_primitives::U64,
    block_hash: B256,
    log_index: alloy_primitives::U64,
    transaction_hash: B256,
    transaction_index: alloy_primitives::U64,
}

/// Which topics a log must carry, and how each pair of them combines.
struct TopicFilter {
    topics: [Option<B256>; TOPICS],
    /// `pairs[i][j]` (i < j): how topic i and topic j combine, when said
    /// (`Some(true)` for `or`).
    pairs: [[Option<bool>; TOPICS]; TOPICS],
}

impl TopicFilter {
    fn parse(params: &Params) -> Result<Self, QueryError> {
        let mut topics = [None; TOPICS];
        for (i, topic) in topics.iter_mut().enumerate() {
            let name = format!("topic{i}");
            if let Some(text) = params.get(&name).filter(|t| !t.is_empty()) {
                *topic = Some(
                    text.strip_prefix("0x")
                        .filter(|h| h.len() == 64)
                        .and_then(|h| h.parse().ok())
                        .ok_or_else(|| QueryError::bad(format!("Error! Invalid {name}")))?,
                );
            }
        }
        let mut pairs = [[None; TOPICS]; TOPICS];
        for (i, row) in pairs.iter_mut().enumerate() {
            for (j, pair) in row.iter_mut().enumerate().skip(i + 1) {
                let name = format!("topic{i}_{j}_opr");
                *pair = match params.get(&name) {
                    None | Some("") => None,
                    Some("and") => Some(false),
                    Some("or") => Some(true),
                    Some(_) => {
                        return Err(QueryError::bad(format!("Error! Invalid {name}: and or or")));
                    }
                };
            }
        }
        Ok(Self { topics, pairs })
    }

    fn given(&self) -> impl Iterator<Item = (usize, B256)> + '_ {
        self.topics
            .iter()
            .enumerate()
            .filter_map(|(i, t)| t.map(|t| (i, t)))
    }

    /// The pairs of given topics with an operator, and whether it is `or`.
    fn said_pairs(&self) -> Vec<(usize, usize, bool)> {
        let mut said = Vec::new();
        for (i, _) in self.given() {
            for (j, _) in self.given().filter(|(j, _)| *j > i) {
                if let Some(or) = self.pairs[i][j] {
                    said.push((i, j, or));
                }
            }
        }
        said
    }

    /// Whether no pair combines with `or`: one node query can then ask for
    /// every topic at once.
    fn all_and(&self) -> bool {
        self.said_pairs().iter().all(|(_, _, or)| !or)
    }

    /// Each pair with an operator holds as it says; every other given topic
    /// must match.
    fn matches(&self, log: &NodeLog) -> bool {
        let at = |i: usize| log.topics.get(i) == self.topics[i].as_ref();
        let said = self.said_pairs();
        let paired = |i: usize| said.iter().any(|(a, b, _)| *a == i || *b == i);
        self.given().all(|(i, _)| paired(i) || at(i))
            && said
                .iter()
                .all(|&(i, j, or)| if or { at(i) || at(j) } else { at(i) && at(j) })
    }

    /// The `topics` arrays of the node queries whose union holds every
    /// matching log: all topics at once, or one query per given topic.
    fn node_queries(&self) -> Vec<Value> {
        let position = |only: Option<usize>| -> Value {
            let topics: Vec<Value> = self
                .topics
                .iter()
                .enumerate()
                .map(|(i, t)| match t {
                    Some(t) if only.is_none_or(|o| o == i) => json!(t),
                    _ => Value::Null,
                })
                .collect();
            let last = topics
                .iter()
                .rposition(|t| !t.is_null())
                .map_or(0, |p| p + 1);
            Value::from(topics[..last].to_vec())
        };
        if self.all_and() {
            vec![position(None)]
        } else {
            self.given().map(|(i, _)| position(Some(i))).collect()
        }
    }
}

/// A block bound: decimal or `latest`.
fn bound(params: &Params, name: &str, latest: u64) -> Result<u64, QueryError> {
    match params.get(name) {
        Some("latest") => Ok(latest),
        _ => number(params, name, if name == "toBlock" { latest } else { 0 }),
    }
}

/// `module=logs&action=getLogs`.
pub(crate) async fn get_logs(
    store: &Store,
    node: Option<&dyn NodeProxy>,
    params: &Params<'_>,
    indexed: &Indexed,
) -> Result<Response, QueryError> {
    let address = match params.get("address") {
        None | Some("") => None,
        Some(text) => Some(parse_address(text).map_err(|_| QueryError::bad(MSG_BAD_ADDRESS))?),
    };
    let filter = TopicFilter::parse(params)?;
    if address.is_none() && filter.given().next().is_none() {
        return Err(QueryError::bad("Error! Missing address or topic0"));
    }
    let page = number(params, "page", 1)?.max(1);
    let offset = match number(params, "offset", MAX_OFFSET)? {
        0 => MAX_OFFSET,
        offset => offset.min(MAX_OFFSET),
    };
    // Logs are joined with the transaction index: only blocks it covers.
    let covered = indexed_from(store, HistoryIndex::Transactions)?;
    let from = bound(params, "fromBlock", indexed.head)?;
    let to = bound(params, "toBlock", indexed.head)?.min(indexed.head);
    if from < covered && covered > indexed.start + 1 {
        return Err(QueryError::bad(format!(
            "Error! Transactions are indexed from block {covered}: ask for fromBlock={covered} or later"
        )));
    }
    let from = from.max(covered);
    if from > to {
        return Ok(empty("No records found", "[]"));
    }
    let node = node.ok_or_else(|| {
        QueryError::unavailable("Error! Logs are read from the node, and none is configured")
    })?;

    let mut found: BTreeMap<(u64, u64), NodeLog> = BTreeMap::new();
    for topics in filter.node_queries() {
        let mut query = json!({ "fromBlock": format!("{from:#x}"), "toBlock": format!("{to:#x}"), "topics": topics });
        if let Some(address) = address {
            query["address"] = json!(address);
        }
        let answer = crate::node::ask(Some(node), "eth_getLogs", json!([query])).await?;
        let logs: Vec<NodeLog> = serde_json::from_value(answer).map_err(|e| {
            QueryError::unavailable(format!("Error! The node's logs did not parse: {e}"))
        })?;
        for log in logs.into_iter().filter(|log| filter.matches(log)) {
            found.insert((log.block_number.to(), log.log_index.to()), log);
        }
    }
    let logs: Vec<NodeLog> = found
        .into_values()
        .skip(((page - 1) * offset) as usize)
        .take(offset as usize)
        .collect();
    if logs.is_empty() {
        return Ok(empty("No records found", "[]"));
    }
    let transactions = store
        .transactions_at(logs.iter().map(|log| {
            let index = u32::try_from(log.transaction_index.to::<u64>()).unwrap_or(u32::MAX);
            (log.block_number.to::<u64>(), index)
        }))
        .map_err(unavailable)?;
    let entries: Vec<(NodeLog, weiport_storage::TransactionRow)> = logs
        .into_iter()
        .zip(transactions)
        .map(|(log, transaction)| {
            // The node's log and the index disagree only while a
            // reorganisation is being followed: ask again then.
            transaction
                .filter(|t| t.hash == log.transaction_hash && t.block_hash == log.block_hash)
                .map(|t| (log, t))
                .ok_or_else(|| {
                    QueryError::unavailable(
                        "Error! The chain is reorganising: the index is catching up, ask again",
                    )
                })
        })
        .collect::<Result<_, _>>()?;
    Ok(list(&entries, |out, (log, transaction)| {
        write_log(out, log, transaction)
    }))
}

/// A quantity in Etherscan's log format: hex, zero as `0x`.
fn quantity(value: impl Into<u128>) -> String {
    let value = value.into();
    if value == 0 {
        "0x".to_owned()
    } else {
        format!("{value:#x}")
    }
}

fn write_log(out: &mut String, log: &NodeLog, transaction: &weiport_storage::TransactionRow) {
    let topics: Vec<String> = log.topics.iter().map(|t| format!("{t:#x}")).collect();
    let _ = write!(
        out,
        r#"{{"address":"{:#x}","topics":{},"data":"{}","blockNumber":"{}","blockHash":"{:#x}","timeStamp":"{}","gasPrice":"{}","gasUsed":"{}","logIndex":"{}","transactionHash":"{:#x}","transactionIndex":"{}"}}"#,
        log.address,
        Value::from(topics),
        alloy_primitives::hex::encode_prefixed(&log.data),
        quantity(log.block_number.to::<u64>()),
        log.block_hash,
        quantity(transaction.timestamp),
        quantity(transaction.gas_price),
        quantity(transaction.gas_used),
        quantity(log.log_index.to::<u64>()),
        log.transaction_hash,
        quantity(log.transaction_index.to::<u64>()),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(topics: &[u8]) -> NodeLog {
        NodeLog {
            address: Address::ZERO,
            topics: topics.iter().map(|b| B256::repeat_byte(*b)).collect(),
            data: Default::default(),
            block_number: Default::default(),
            block_hash: B256::ZERO,
            log_index: Default::default(),
            transaction_hash: B256::ZERO,
            transaction_index: Default::default(),
        }
    }

    fn filter(topics: [Option<u8>; 4], said: &[(usize, usize, bool)]) -> TopicFilter {
        let mut pairs = [[None; 4]; 4];
        for (i, j, or) in said {
            pairs[*i][*j] = Some(*or);
        }
        TopicFilter {
            topics: topics.map(|t| t.map(B256::repeat_byte)),
            pairs,
        }
    }

    #[test]
    fn topics_combine_pairwise_as_etherscan_reads_them() {
        // Transfer logs with 7 as sender or recipient: topic0 alone, and
        // topic1 or topic2.
        let either = filter([Some(1), Some(7), Some(7), None], &[(1, 2, true)]);
        assert!(either.matches(&log(&[1, 7, 9])));
        assert!(either.matches(&log(&[1, 9, 7])));
        assert!(!either.matches(&log(&[1, 9, 9])));
        assert!(!either.matches(&log(&[2, 7, 9])));
        assert_eq!(either.node_queries().len(), 3);
        let both = filter([Some(1), None, Some(7), None], &[(0, 2, false)]);
        assert!(filter([Some(1), None, Some(7), None], &[]).matches(&log(&[1, 3, 7])));
        assert!(both.matches(&log(&[1, 3, 7])));
        assert!(!both.matches(&log(&[1, 7, 3])));
        assert_eq!(
            both.node_queries(),
            vec![json!([B256::repeat_byte(1), null, B256::repeat_byte(7)])]
        );
        assert_eq!(quantity(0u64), "0x");
        assert_eq!(quantity(255u64), "0xff");
    }
}
