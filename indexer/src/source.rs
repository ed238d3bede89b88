//! Where exact post-block balances come from (the node's capabilities,
//! probed once), and how one block's balance changes are derived from the
//! node's answers.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use alloy_primitives::{Address, B256, U256};
use serde::Deserialize;

use crate::node::{BlockSummary, NodeClient, NodeError, StateAt};
pub use crate::plan::{BalanceSource, NodePlan, ReceiptSource, StateReads};
use crate::reads::{check_coverage, malformed, read_at_block, receipts};

/// Whether an answer says the node lacks a method or a parameter form:
/// a capability to do without, not an outage.
fn lacks(error: &NodeError) -> bool {
    matches!(error, NodeError::Unsupported { .. } | NodeError::Rpc { .. })
}

/// Probes what the node supports at its head `head`, each capability once,
/// and picks the best of each; `forced` overrides the balance source.
pub async fn probe(
    node: &NodeClient,
    head: u64,
    forced: Option<BalanceSource>,
) -> Result<NodePlan, NodeError> {
    let block = node
        .block(head)
        .await?
        .ok_or_else(|| NodeError::Malformed {
            method: "eth_getBlockByNumber",
            detail: format!("head {head} has no block"),
        })?;
    let state = match node.balance(Address::ZERO, StateAt::Hash(block.hash)).await {
        Ok(_) => StateReads::ByHash,
        Err(error) if lacks(&error) => StateReads::ByNumber,
        Err(error) => return Err(error),
    };
    let receipts = match node
        .call::<_, serde_json::Value>("eth_getBlockReceipts", (StateAt::Number(head),))
        .await
    {
        Ok(answer) if answer.is_array() => ReceiptSource::Block,
        Ok(_) => ReceiptSource::PerTransaction,
        Err(error) if lacks(&error) => ReceiptSource::PerTransaction,
        Err(error) => return Err(error),
    };
    let balances = match forced {
        Some(forced) => forced,
        None => balance_source(node, head).await?,
    };
    let call_traces = match node
        .call::<_, serde_json::Value>(
            "debug_traceBlockByNumber",
            (
                StateAt::Number(head),
                serde_json::json!({ "tracer": "callTracer" }),
            ),
        )
        .await
    {
        Ok(answer) => answer.is_array(),
        Err(error) if lacks(&error) => false,
        Err(error) => return Err(error),
    };
    Ok(NodePlan {
        balances,
        receipts,
        state,
        call_traces,
    })
}

/// The best balance source the node answers, tried on block `block`.
async fn balance_source(node: &NodeClient, block: u64) -> Result<BalanceSource, NodeError> {
    for source in [BalanceSource::Prestate, BalanceSource::StateDiff] {
        let attempt = match source {
            BalanceSource::Prestate => prestate_diffs(node, block).await.map(drop),
            _ => state_diffs(node, block).await.map(drop),
        };
        match attempt {
            Ok(()) => return Ok(source),
            Err(error) if lacks(&error) => continue,
            Err(other) => return Err(other),
        }
    }
    // Any answer but "no such method" (here: "no such transaction") means
    // the node traces transactions with the default tracer.
    let unknown = B256::ZERO;
    match node
        .call::<_, serde_json::Value>("debug_traceTransaction", (unknown, struct_log_options()))
        .await
    {
        Err(NodeError::Unsupported { .. }) => Ok(BalanceSource::Touched),
        Ok(_) | Err(NodeError::Rpc { .. } | NodeError::Malformed { .. }) => {
            Ok(BalanceSource::StructLogs)
        }
        Err(other) => Err(other),
    }
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
    /// What it adds to address histories, as far as they are kept.
    pub history: crate::transfers::BlockHistory,
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

/// A `debug_traceTransaction` answer of the default (struct-log) tracer.
#[derive(Debug, Deserialize)]
struct StructTrace {
    #[serde(rename = "structLogs")]
    steps: Vec<StructStep>,
}

/// One executed opcode, with the stack before it (top last).
#[derive(Debug, Deserialize)]
struct StructStep {
    op: String,
    depth: u64,
    #[serde(default)]
    stack: Option<Vec<String>>,
}

/// Options that keep struct-log answers small: no memory, no storage (the
/// stack is what the addresses are read from).
fn struct_log_options() -> serde_json::Value {
    serde_json::json!({ "disableMemory": true, "disableStorage": true })
}

/// The address in a stack word (hex, with or without `0x`, any width).
fn word_address(word: &str) -> Option<Address> {
    let hex = word.strip_prefix("0x").unwrap_or(word);
    let value = U256::from_str_radix(hex, 16).ok()?;
    Some(Address::from_word(B256::from(value)))
}

/// The stack word `from_top` places below the top.
fn stack_address(step: &StructStep, from_top: usize) -> Option<Address> {
    let stack = step.stack.as_ref()?;
    let at = stack.len().checked_sub(1 + from_top)?;
    word_address(&stack[at])
}

/// Every address a traced transaction can have moved value to or from
/// inside the EVM: each CALL/CALLCODE target (a contract reached with no
/// value may still send some), each created contract, each self-destruct
/// beneficiary. Together with the sender, the recipient and the coinbase
/// this covers every balance the transaction changed.
fn value_addresses(steps: &[StructStep]) -> BTreeSet<Address> {
    let mut found = BTreeSet::new();
    for (at, step) in steps.iter().enumerate() {
        match step.op.as_str() {
            "CALL" | "CALLCODE" => found.extend(stack_address(step, 1)),
            "SELFDESTRUCT" | "SUICIDE" => found.extend(stack_address(step, 0)),
            "CREATE" | "CREATE2" => {
                // The new address is pushed when execution returns to this depth.
                let created = steps[at + 1..]
                    .iter()
                    .find(|next| next.depth == step.depth)
                    .and_then(|next| stack_address(next, 0))
                    .filter(|address| !address.is_zero());
                found.extend(created);
            }
            _ => {}
        }
    }
    found
}

/// Balances of `addresses` after `block`. Read by number, the block's hash
/// is checked before and after, so values of a block that was replaced
/// meanwhile are never taken.
pub async fn balances_after(
    node: &NodeClient,
    plan: &NodePlan,
    block: (u64, B256),
    addresses: &[Address],
) -> Result<Vec<U256>, NodeError> {
    read_at_block(node, plan, block, "eth_getBalance", |at| {
        node.balances(addresses, at)
    })
    .await
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

/// Derives the balance changes of `block` as `plan` says.
pub async fn block_changes(
    node: &NodeClient,
    plan: &NodePlan,
    block: &BlockSummary,
) -> Result<BlockChanges, NodeError> {
    let number = block.number.to::<u64>();
    let mut balances: BTreeMap<Address, U256> = BTreeMap::new();
    // Addresses whose final value is re-read from the node at this block:
    // effects outside transactions (withdrawals, proof-of-work rewards), or
    // every address a transaction touched when no state diff is offered.
    let mut reread: BTreeSet<Address> = BTreeSet::new();

    match plan.balances {
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
        BalanceSource::StructLogs | BalanceSource::Touched => {
            reread.insert(block.miner);
            let receipts = if block.transactions.is_empty() {
                Vec::new()
            } else {
                receipts(node, plan, block).await?
            };
            for receipt in &receipts {
                reread.insert(receipt.from);
                reread.extend(receipt.to);
                reread.extend(receipt.contract_address);
                reread.extend(receipt.logs.iter().map(|l| l.address));
            }
            if plan.balances == BalanceSource::StructLogs && !block.transactions.is_empty() {
                let params: Vec<(B256, serde_json::Value)> = block
                    .transactions
                    .iter()
                    .map(|hash| (*hash, struct_log_options()))
                    .collect();
                let traces: Vec<StructTrace> =
                    node.call_batch("debug_traceTransaction", &params).await?;
                for (trace, receipt) in traces.iter().zip(&receipts) {
                    // Code ran (a creation, or a call that logged) but no step
                    // was recorded: the node is not tracing steps, and what
                    // it did not record cannot be trusted as "nothing moved".
                    let code_ran = receipt.contract_address.is_some() || !receipt.logs.is_empty();
                    if code_ran && trace.steps.is_empty() {
                        return Err(NodeError::Unsupported {
                            method: "debug_traceTransaction",
                            message: format!(
                                "block {number}: no steps recorded for a transaction that ran code (anvil needs --steps-tracing)"
                            ),
                        });
                    }
                    reread.extend(value_addresses(&trace.steps));
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
        let values = balances_after(node, plan, (number, block.hash), &addresses).await?;
        balances.extend(addresses.into_iter().zip(values));
    }

    Ok(BlockChanges {
        number,
        hash: block.hash,
        parent_hash: block.parent_hash,
        balances: balances.into_iter().collect(),
        history: Default::default(),
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
    fn struct_logs_yield_every_address_value_can_move_through() {
        // Stacks as Hardhat writes them (64 hex digits) and as geth does (0x, minimal).
        let word = |byte: u8| {
            format!(
                "{:0>64}",
                alloy_primitives::hex::encode(Address::repeat_byte(byte))
            )
        };
        let answer = serde_json::json!({
            "failed": false,
            "structLogs": [
                { "op": "PUSH1", "depth": 1, "stack": [] },
                // CALL: gas, address, value, … (top last): to 0xbb, no value.
                { "op": "CALL", "depth": 1, "stack": ["0x0", "0x0", "0x0", "0x0", "0x0", word(0xbb), "0xffff"] },
                { "op": "CALLCODE", "depth": 2, "stack": ["0x0", "0x0", "0x0", "0x0", "0x5", format!("0x{}", alloy_primitives::hex::encode(Address::repeat_byte(0xcc))), "0x1"] },
                { "op": "STATICCALL", "depth": 2, "stack": ["0x0", "0x0", "0x0", "0x0", word(0xdd), "0x1"] },
                { "op": "CREATE", "depth": 2, "stack": ["0x0", "0x0", "0x1"] },
                { "op": "PUSH1", "depth": 3, "stack": [] },
                { "op": "SELFDESTRUCT", "depth": 3, "stack": [word(0xee)] },
                { "op": "SWAP1", "depth": 2, "stack": [word(0xaa)] },
                { "op": "CREATE2", "depth": 2, "stack": ["0x0", "0x0", "0x0", "0x1"] },
                { "op": "POP", "depth": 2, "stack": ["0x0"] },
                { "op": "STOP", "depth": 1 }
            ]
        });
        let trace: StructTrace = serde_json::from_value(answer).unwrap();
        let found: Vec<Address> = value_addresses(&trace.steps).into_iter().collect();
        // STATICCALL cannot move value; a failed CREATE2 (0) created nothing.
        let expected: Vec<Address> = [0xaa, 0xbb, 0xcc, 0xee]
            .into_iter()
            .map(Address::repeat_byte)
            .collect();
        assert_eq!(found, expected);
    }
}
