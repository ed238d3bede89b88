//! Where exact post-block balances come from, and how one block's balance
//! changes are derived from the node's answers.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use alloy_primitives::{Address, B256, U256};
use serde::Deserialize;

use crate::node::{BlockSummary, NodeClient, NodeError, StateAt};

/// How balance changes are obtained from the node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BalanceSource {
    /// `debug_traceBlockByNumber` with `prestateTracer` in diff mode.
    Prestate,
    /// `trace_replayBlockTransactions` with `stateDiff`.
    StateDiff,
    /// Re-read the balances of addresses seen in receipts, the coinbase and
    /// withdrawals. Misses internal transfers to otherwise untouched addresses.
    Touched,
}

impl std::fmt::Display for BalanceSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Prestate => "debug_traceBlockByNumber prestateTracer (diff mode)",
            Self::StateDiff => "trace_replayBlockTransactions stateDiff",
            Self::Touched => "touched addresses re-read with eth_getBalance (degraded)",
        })
    }
}

/// Picks the best source the node supports, trying them on `block`.
pub async fn probe(node: &NodeClient, block: u64) -> Result<BalanceSource, NodeError> {
    for source in [BalanceSource::Prestate, BalanceSource::StateDiff] {
        let attempt = match source {
            BalanceSource::Prestate => prestate_diffs(node, block).await.map(drop),
            _ => state_diffs(node, block).await.map(drop),
        };
        match attempt {
            Ok(()) => return Ok(source),
            Err(NodeError::Unsupported { .. } | NodeError::Rpc { .. }) => continue,
            Err(other) => return Err(other),
        }
    }
    Ok(BalanceSource::Touched)
}

/// The balances one block changed, as absolute post-block values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockChanges {
    /// Block number.
    pub number: u64,
    /// Block hash.
    pub hash: B256,
    /// Parent hash, checked against the stored predecessor.
    pub parent_hash: B256,
    /// Every changed address with its balance after the block, sorted.
    pub balances: Vec<(Address, U256)>,
}

/// One transaction's entry in a `debug_traceBlockByNumber` answer.
#[derive(Debug, Deserialize)]
struct PrestateTxTrace {
    #[serde(rename = "txHash")]
    tx_hash: Option<B256>,
    result: Option<PrestateDiff>,
    error: Option<String>,
}

#[derive(Debug, Deserialize)]
struct PrestateDiff {
    #[serde(default)]
    pre: HashMap<Address, AccountBalance>,
    #[serde(default)]
    post: HashMap<Address, AccountBalance>,
}

#[derive(Debug, Deserialize)]
struct AccountBalance {
    balance: Option<U256>,
}

/// One transaction's entry in a `trace_replayBlockTransactions` answer.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StateDiffTxTrace {
    transaction_hash: Option<B256>,
    state_diff: Option<HashMap<Address, AccountDiff>>,
}

#[derive(Debug, Deserialize)]
struct AccountDiff {
    balance: BalanceDiff,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum BalanceDiff {
    /// `"="`: unchanged.
    Unchanged(#[allow(dead_code)] String),
    /// `{"+": value}`: account created.
    Born {
        #[serde(rename = "+")]
        value: U256,
    },
    /// `{"-": value}`: account deleted.
    Died {
        #[serde(rename = "-")]
        #[allow(dead_code)]
        value: U256,
    },
    /// `{"*": {"from", "to"}}`: changed.
    Changed {
        #[serde(rename = "*")]
        change: FromTo,
    },
}

#[derive(Debug, Deserialize)]
struct FromTo {
    to: U256,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Receipt {
    from: Address,
    to: Option<Address>,
    contract_address: Option<Address>,
    #[serde(default)]
    logs: Vec<LogAddress>,
}

#[derive(Debug, Deserialize)]
struct LogAddress {
    address: Address,
}

#[derive(Debug, Deserialize)]
struct UncleMiner {
    miner: Address,
}

fn prestate_params(block: u64) -> (StateAt, serde_json::Value) {
    (
        StateAt::Number(block),
        serde_json::json!({ "tracer": "prestateTracer", "tracerConfig": { "diffMode": true } }),
    )
}

async fn prestate_diffs(node: &NodeClient, block: u64) -> Result<Vec<PrestateTxTrace>, NodeError> {
    node.call("debug_traceBlockByNumber", prestate_params(block))
        .await
}

async fn state_diffs(node: &NodeClient, block: u64) -> Result<Vec<StateDiffTxTrace>, NodeError> {
    node.call(
        "trace_replayBlockTransactions",
        (StateAt::Number(block), ["stateDiff"]),
    )
    .await
}

fn malformed(method: &'static str, detail: String) -> NodeError {
    NodeError::Malformed { method, detail }
}

/// Traces must cover exactly the block's transactions, in order: an empty or
/// partial answer (a node that could not replay, or a reorg between the two
/// calls) is retried, never indexed as "nothing changed".
fn check_coverage(
    method: &'static str,
    block: &BlockSummary,
    traced: impl ExactSizeIterator<Item = Option<B256>>,
) -> Result<(), NodeError> {
    if traced.len() != block.transactions.len() {
        return Err(malformed(
            method,
            format!(
                "block {} has {} transactions but the trace covers {}",
                block.number,
                block.transactions.len(),
                traced.len()
            ),
        ));
    }
    for (expected, got) in block.transactions.iter().zip(traced) {
        if got.is_some_and(|got| got != *expected) {
            return Err(malformed(
                method,
                format!(
                    "trace of block {} does not match its transactions (reorg?)",
                    block.number
                ),
            ));
        }
    }
    Ok(())
}

/// Derives the balance changes of `block` with `source`.
pub async fn block_changes(
    node: &NodeClient,
    source: BalanceSource,
    block: &BlockSummary,
) -> Result<BlockChanges, NodeError> {
    let number = block.number.to::<u64>();
    let mut balances: BTreeMap<Address, U256> = BTreeMap::new();
    // Addresses whose final value is re-read from the node at this block hash:
    // effects outside transactions (withdrawals, proof-of-work rewards), or
    // every touched address in the degraded mode.
    let mut reread: BTreeSet<Address> = BTreeSet::new();

    match source {
        BalanceSource::Prestate => {
            let traces = if block.transactions.is_empty() {
                Vec::new()
            } else {
                prestate_diffs(node, number).await?
            };
            check_coverage(
                "debug_traceBlockByNumber",
                block,
                traces.iter().map(|t| t.tx_hash),
            )?;
            for trace in traces {
                if let Some(error) = trace.error {
                    return Err(NodeError::from_rpc_error(
                        "debug_traceBlockByNumber",
                        0,
                        format!("block {number}: {error}"),
                    ));
                }
                let diff = trace.result.ok_or_else(|| {
                    malformed(
                        "debug_traceBlockByNumber",
                        format!("block {number}: no result"),
                    )
                })?;
                // In diff mode an account in `pre` but absent from `post` was deleted.
                for address in diff.pre.keys() {
                    if !diff.post.contains_key(address) {
                        balances.insert(*address, U256::ZERO);
                    }
                }
                for (address, state) in diff.post {
                    if let Some(balance) = state.balance {
                        balances.insert(address, balance);
                    }
                }
            }
        }
        BalanceSource::StateDiff => {
            let traces = if block.transactions.is_empty() {
                Vec::new()
            } else {
                state_diffs(node, number).await?
            };
            check_coverage(
                "trace_replayBlockTransactions",
                block,
                traces.iter().map(|t| t.transaction_hash),
            )?;
            for trace in traces {
                let diff = trace.state_diff.ok_or_else(|| {
                    malformed(
                        "trace_replayBlockTransactions",
                        format!("block {number}: no stateDiff"),
                    )
                })?;
                for (address, account) in diff {
                    match account.balance {
                        BalanceDiff::Unchanged(_) => {}
                        BalanceDiff::Born { value } => {
                            balances.insert(address, value);
                        }
                        BalanceDiff::Died { .. } => {
                            balances.insert(address, U256::ZERO);
                        }
                        BalanceDiff::Changed { change } => {
                            balances.insert(address, change.to);
                        }
                    }
                }
            }
        }
        BalanceSource::Touched => {
            reread.insert(block.miner);
            if !block.transactions.is_empty() {
                let receipts: Vec<Receipt> = node
                    .call("eth_getBlockReceipts", (StateAt::Hash(block.hash),))
                    .await?;
                if receipts.len() != block.transactions.len() {
                    return Err(malformed(
                        "eth_getBlockReceipts",
                        format!(
                            "block {number}: {} receipts for {} transactions",
                            receipts.len(),
                            block.transactions.len()
                        ),
                    ));
                }
                for receipt in receipts {
                    reread.insert(receipt.from);
                    reread.extend(receipt.to);
                    reread.extend(receipt.contract_address);
                    reread.extend(receipt.logs.iter().map(|l| l.address));
                }
            }
        }
    }

    for withdrawal in block.withdrawals.iter().flatten() {
        reread.insert(withdrawal.address);
    }
    if block.difficulty.is_some_and(|d| !d.is_zero()) {
        // Proof of work: block and uncle rewards are paid outside transactions.
        reread.insert(block.miner);
        for index in 0..block.uncles.len() {
            let uncle: UncleMiner = node
                .call(
                    "eth_getUncleByBlockHashAndIndex",
                    (block.hash, alloy_primitives::U64::from(index)),
                )
                .await?;
            reread.insert(uncle.miner);
        }
    }
    if !reread.is_empty() {
        let addresses: Vec<Address> = reread.into_iter().collect();
        let values = node.balances(&addresses, StateAt::Hash(block.hash)).await?;
        balances.extend(addresses.into_iter().zip(values));
    }

    Ok(BlockChanges {
        number,
        hash: block.hash,
        parent_hash: block.parent_hash,
        balances: balances.into_iter().collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prestate_diff_answers_parse_including_deletions() {
        let answer = serde_json::json!([{
            "txHash": B256::repeat_byte(1),
            "result": {
                "pre": {
                    "0x0000000000000000000000000000000000000001": { "balance": "0x10" },
                    "0x0000000000000000000000000000000000000002": { "balance": "0x5", "code": "0x60" }
                },
                "post": {
                    "0x0000000000000000000000000000000000000001": { "balance": "0x0f", "nonce": 1 }
                }
            }
        }]);
        let traces: Vec<PrestateTxTrace> = serde_json::from_value(answer).unwrap();
        let diff = traces[0].result.as_ref().unwrap();
        assert_eq!(
            diff.post[&Address::with_last_byte(1)].balance,
            Some(U256::from(15))
        );
        assert!(!diff.post.contains_key(&Address::with_last_byte(2)));
    }

    #[test]
    fn state_diff_answers_parse_every_balance_form() {
        let answer = serde_json::json!([{
            "transactionHash": B256::repeat_byte(1),
            "stateDiff": {
                "0x0000000000000000000000000000000000000001": { "balance": "=", "nonce": "=", "code": "=", "storage": {} },
                "0x0000000000000000000000000000000000000002": { "balance": { "+": "0x7" } },
                "0x0000000000000000000000000000000000000003": { "balance": { "-": "0x9" } },
                "0x0000000000000000000000000000000000000004": { "balance": { "*": { "from": "0x1", "to": "0x2" } } }
            }
        }]);
        let traces: Vec<StateDiffTxTrace> = serde_json::from_value(answer).unwrap();
        let diff = traces[0].state_diff.as_ref().unwrap();
        assert!(matches!(
            diff[&Address::with_last_byte(1)].balance,
            BalanceDiff::Unchanged(_)
        ));
        assert!(
            matches!(diff[&Address::with_last_byte(2)].balance, BalanceDiff::Born { value } if value == U256::from(7))
        );
        assert!(matches!(
            diff[&Address::with_last_byte(3)].balance,
            BalanceDiff::Died { .. }
        ));
        assert!(
            matches!(diff[&Address::with_last_byte(4)].balance, BalanceDiff::Changed { ref change } if change.to == U256::from(2))
        );
    }

    #[test]
    fn a_trace_that_does_not_cover_the_block_is_refused() {
        let block = BlockSummary {
            number: alloy_primitives::U64::from(5),
            hash: B256::repeat_byte(5),
            parent_hash: B256::repeat_byte(4),
            miner: Address::ZERO,
            difficulty: None,
            transactions: vec![B256::repeat_byte(1), B256::repeat_byte(2)],
            uncles: vec![],
            withdrawals: None,
        };
        let empty: Vec<Option<B256>> = vec![];
        assert!(check_coverage("m", &block, empty.into_iter()).is_err());
        let swapped = vec![Some(B256::repeat_byte(2)), Some(B256::repeat_byte(1))];
        assert!(check_coverage("m", &block, swapped.into_iter()).is_err());
        let right = vec![Some(B256::repeat_byte(1)), Some(B256::repeat_byte(2))];
        assert!(check_coverage("m", &block, right.into_iter()).is_ok());
    }
}
