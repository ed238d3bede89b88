//! The node reads that balances, transactions and transfers share: a
//! block's receipts, state read at a block safely across a reorganisation,
//! and the checks on answers that cover a block.

use alloy_primitives::{Address, B256, U64, U128};
use serde::Deserialize;

use crate::node::{BlockSummary, NodeClient, NodeError, StateAt};
use crate::plan::{NodePlan, ReceiptSource, StateReads};

/// A transaction receipt, as far as the indexer reads it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Receipt {
    pub(crate) from: Address,
    pub(crate) to: Option<Address>,
    pub(crate) contract_address: Option<Address>,
    pub(crate) block_hash: Option<B256>,
    #[serde(default)]
    pub(crate) logs: Vec<Log>,
    /// Its transaction's hash.
    #[serde(default)]
    pub(crate) transaction_hash: Option<B256>,
    /// Gas used by the transaction.
    #[serde(default)]
    pub(crate) gas_used: Option<U64>,
    /// Gas used in the block through this transaction.
    #[serde(default)]
    pub(crate) cumulative_gas_used: Option<U64>,
    /// Price paid per gas (absent on nodes older than EIP-1559).
    #[serde(default)]
    pub(crate) effective_gas_price: Option<U128>,
    /// 1 success, 0 failure (absent before Byzantium).
    #[serde(default)]
    pub(crate) status: Option<U64>,
}

/// A receipt's log.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Log {
    pub(crate) address: Address,
    #[serde(default)]
    pub(crate) topics: Vec<B256>,
    #[serde(default)]
    pub(crate) data: alloy_primitives::Bytes,
    #[serde(default)]
    pub(crate) log_index: Option<U64>,
}

/// The receipts of `block`'s transactions, in order, checked to belong to it.
pub(crate) async fn receipts(
    node: &NodeClient,
    plan: &NodePlan,
    block: &BlockSummary,
) -> Result<Vec<Receipt>, NodeError> {
    let number = block.number.to::<u64>();
    let (method, receipts): (&'static str, Vec<Option<Receipt>>) = match plan.receipts {
        ReceiptSource::Block => (
            "eth_getBlockReceipts",
            node.call("eth_getBlockReceipts", (StateAt::Number(number),))
                .await?,
        ),
        ReceiptSource::PerTransaction => {
            let params: Vec<(B256,)> = block.transactions.iter().map(|h| (*h,)).collect();
            (
                "eth_getTransactionReceipt",
                node.call_batch("eth_getTransactionReceipt", &params)
                    .await?,
            )
        }
    };
    if receipts.len() != block.transactions.len() {
        return Err(malformed(
            method,
            format!(
                "block {number}: {} receipts for {} transactions",
                receipts.len(),
                block.transactions.len()
            ),
        ));
    }
    receipts
        .into_iter()
        .map(|receipt| {
            receipt
                .filter(|r| r.block_hash.is_none_or(|h| h == block.hash))
                .ok_or_else(|| {
                    malformed(
                        method,
                        format!(
                            "block {number}: a receipt is missing or of another block (reorg?)"
                        ),
                    )
                })
        })
        .collect()
}

/// Runs `read` against the state after `block`: by hash where the node
/// takes it, else by number with the block's hash checked before and after.
pub(crate) async fn read_at_block<T, F, Fut>(
    node: &NodeClient,
    plan: &NodePlan,
    block: (u64, B256),
    method: &'static str,
    read: F,
) -> Result<T, NodeError>
where
    F: FnOnce(StateAt) -> Fut,
    Fut: std::future::Future<Output = Result<T, NodeError>>,
{
    let (number, hash) = block;
    let at = plan.state_at(number, hash);
    if plan.state == StateReads::ByHash {
        return read(at).await;
    }
    let still = || async {
        let current = node.block(number).await?.map(|b| b.hash);
        if current == Some(hash) {
            Ok(())
        } else {
            Err(malformed(
                method,
                format!("block {number} was replaced while its state was read (reorg)"),
            ))
        }
    };
    still().await?;
    let values = read(at).await?;
    still().await?;
    Ok(values)
}

/// A node answer that is not what was asked for: retried, never indexed.
pub(crate) fn malformed(method: &'static str, detail: String) -> NodeError {
    NodeError::Malformed { method, detail }
}

/// Traces must cover exactly the block's transactions, in order: an empty or
/// partial answer (a node that could not replay, or a reorg between the two
/// calls) is retried, never indexed as "nothing changed".
pub(crate) fn check_coverage(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_that_does_not_cover_the_block_is_refused() {
        let block = BlockSummary {
            number: alloy_primitives::U64::from(5),
            hash: B256::repeat_byte(5),
            parent_hash: B256::repeat_byte(4),
            miner: Address::ZERO,
            timestamp: Default::default(),
            difficulty: None,
            transactions: vec![B256::repeat_byte(1), B256::repeat_byte(2)],
            uncles: vec![],
            withdrawals: None,
            base_fee_per_gas: None,
        };
        let empty: Vec<Option<B256>> = vec![];
        assert!(check_coverage("m", &block, empty.into_iter()).is_err());
        let swapped = vec![Some(B256::repeat_byte(2)), Some(B256::repeat_byte(1))];
        assert!(check_coverage("m", &block, swapped.into_iter()).is_err());
        let right = vec![Some(B256::repeat_byte(1)), Some(B256::repeat_byte(2))];
        assert!(check_coverage("m", &block, right.into_iter()).is_ok());
    }
}
