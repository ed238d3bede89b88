//! A block's transactions with their receipts' outcomes, for the per-address
//! transaction index (`txlist`): the block with transaction bodies, checked
//! to be the block whose balances are indexed, and the receipts the plan
//! reads anyway.

use alloy_primitives::{Address, B256, Bytes, U64, U128, U256};
use serde::Deserialize;
use weiport_storage::TransactionRow;

use crate::node::{BlockSummary, NodeClient, NodeError, StateAt};
use crate::plan::NodePlan;
use crate::reads::{Receipt, malformed, receipts};

/// `eth_getBlockByNumber` with transaction bodies.
#[derive(Debug, Deserialize)]
struct BlockBodies {
    hash: B256,
    transactions: Vec<Body>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Body {
    hash: B256,
    from: Address,
    to: Option<Address>,
    value: U256,
    nonce: U64,
    gas: U64,
    /// Absent only on some nodes' EIP-1559 transactions; the receipt's
    /// effective price is preferred anyway.
    #[serde(default)]
    gas_price: Option<U128>,
    input: Bytes,
}

/// The transactions of `block`, in order, each with its receipt's outcome,
/// and the receipts themselves.
pub(crate) async fn block_transactions(
    node: &NodeClient,
    plan: &NodePlan,
    block: &BlockSummary,
) -> Result<(Vec<TransactionRow>, Vec<Receipt>), NodeError> {
    if block.transactions.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let number = block.number.to::<u64>();
    const METHOD: &str = "eth_getBlockByNumber";
    let bodies: Option<BlockBodies> = node.call(METHOD, (StateAt::Number(number), true)).await?;
    let bodies = bodies
        .filter(|b| b.hash == block.hash)
        .ok_or_else(|| malformed(METHOD, format!("block {number} changed (reorganised)")))?;
    let receipts = receipts(node, plan, block).await?;
    let hashes = bodies.transactions.iter().map(|t| t.hash);
    if bodies.transactions.len() != receipts.len() || !hashes.eq(block.transactions.iter().copied())
    {
        return Err(malformed(
            METHOD,
            format!("block {number}: transaction bodies differ from the block's hashes"),
        ));
    }
    let timestamp = block.timestamp.to::<u64>();
    let rows = bodies
        .transactions
        .into_iter()
        .zip(&receipts)
        .map(|(body, receipt)| {
            if receipt.transaction_hash.is_some_and(|h| h != body.hash) {
                return Err(malformed(
                    "eth_getBlockReceipts",
                    format!("block {number}: receipts out of order"),
                ));
            }
            let gas_price = receipt
                .effective_gas_price
                .or(body.gas_price)
                .unwrap_or_default();
            Ok(TransactionRow {
                hash: body.hash,
                from: body.from,
                to: body.to,
                contract_address: receipt.contract_address,
                value: body.value,
                nonce: body.nonce.to::<u64>(),
                gas: body.gas.to::<u64>(),
                gas_price: gas_price.to::<u128>(),
                gas_used: receipt.gas_used.unwrap_or_default().to::<u64>(),
                cumulative_gas_used: receipt.cumulative_gas_used.unwrap_or_default().to::<u64>(),
                // Before Byzantium receipts had no status: count them as
                // succeeded, as Etherscan shows an empty status then.
                success: receipt.status.is_none_or(|s| s == U64::from(1)),
                input: body.input.to_vec(),
                timestamp,
                block_hash: block.hash,
            })
        })
        .collect::<Result<_, _>>()?;
    Ok((rows, receipts))
}
