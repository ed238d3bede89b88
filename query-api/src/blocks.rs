//! Etherscan's `block`, `transaction` and `gastracker` modules, read from
//! the chain's node: block rewards (the priority fees a block paid its
//! miner), the block at a time, a countdown to a block, a transaction's
//! outcome, and gas prices from the last blocks' base and priority fees.

use alloy_primitives::U256;
use axum::Json;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::envelope::ok_string;
use crate::error::{MSG_BAD_ACTION, QueryError};
use crate::node::{self, ask, malformed, quantity, small};
use crate::params::Params;
use crate::proxy::NodeProxy;

type Node<'a> = Option<&'a dyn NodeProxy>;

/// Blocks whose fees the gas oracle and the confirmation estimate read.
const FEE_BLOCKS: u64 = 20;
/// Blocks the average block time is taken over.
const TIME_BLOCKS: u64 = 100;

/// `{"status":"1","message":"OK","result":…}` for a JSON result.
fn ok(result: Value) -> Response {
    Json(json!({ "status": "1", "message": "OK", "result": result })).into_response()
}

/// A decimal parameter that must be sent.
fn required_number(params: &Params, name: &str, what: &str) -> Result<u64, QueryError> {
    params
        .get(name)
        .filter(|text| !text.is_empty())
        .and_then(|text| text.parse().ok())
        .ok_or_else(|| QueryError::bad(format!("Error! Invalid {what}")))
}

/// `module=block`.
pub(crate) async fn block(
    node: Node<'_>,
    params: &Params<'_>,
    action: &str,
) -> Result<Response, QueryError> {
    match action {
        "getblockreward" => {
            block_reward(node, required_number(params, "blockno", "block number")?).await
        }
        "getblockcountdown" => {
            countdown(node, required_number(params, "blockno", "block number")?).await
        }
        "getblocknobytime" => {
            let time = required_number(params, "timestamp", "timestamp")?;
            let after = match params.get("closest") {
                Some("before") => false,
                Some("after") => true,
                _ => return Err(QueryError::bad("Error! Invalid closest value")),
            };
            block_at_time(node, time, after).await
        }
        _ => Err(QueryError::bad(MSG_BAD_ACTION)),
    }
}

/// What block `number` paid its miner: every transaction's priority fee
/// (what it paid per gas above the base fee, which is burnt), as Etherscan
/// counts a proof-of-stake block's reward.
async fn block_reward(node: Node<'_>, number: u64) -> Result<Response, QueryError> {
    let Some(block) = node::block(node, number).await? else {
        return Err(QueryError::bad(
            "Error! Block number too large or not mined yet",
        ));
    };
    let base_fee = quantity(&block["baseFeePerGas"]).unwrap_or(U256::ZERO);
    let receipts = ask(
        node,
        "eth_getBlockReceipts",
        json!([format!("{number:#x}")]),
    )
    .await?;
    let mut reward = U256::ZERO;
    for receipt in receipts.as_array().ok_or_else(|| malformed("receipts"))? {
        let price = quantity(&receipt["effectiveGasPrice"]).ok_or_else(|| malformed("receipt"))?;
        let gas = quantity(&receipt["gasUsed"]).ok_or_else(|| malformed("receipt"))?;
        reward += price.saturating_sub(base_fee) * gas;
    }
    let uncles = block["uncles"].as_array().cloned().unwrap_or_default();
    Ok(ok(json!({
        "blockNumber": number.to_string(),
        "timeStamp": small(&block["timestamp"]).ok_or_else(|| malformed("block"))?.to_string(),
        "blockMiner": block["miner"].as_str().unwrap_or_default().to_lowercase(),
        "blockReward": reward.to_string(),
        "uncles": uncles,
        "uncleInclusionReward": "0",
    })))
}

/// The node's head and the average seconds between its last blocks.
async fn head_and_block_time(node: Node<'_>) -> Result<(u64, f64), QueryError> {
    let head = node::head(node).await?;
    let earlier = head.saturating_sub(TIME_BLOCKS);
    let time_of = |block: Option<Value>| {
        block
            .and_then(|b| small(&b["timestamp"]))
            .ok_or_else(|| malformed("block"))
    };
    let newest = time_of(node::block(node, head).await?)?;
    let oldest = time_of(node::block(node, earlier).await?)?;
    let seconds = match head - earlier {
        0 => 12.0,
        blocks => newest.saturating_sub(oldest) as f64 / blocks as f64,
    };
    Ok((head, seconds))
}

/// How many blocks, and roughly how long, until block `target`.
async fn countdown(node: Node<'_>, target: u64) -> Result<Response, QueryError> {
    let (head, block_time) = head_and_block_time(node).await?;
    if target <= head {
        return Err(QueryError::bad("Error! Block number already pass"));
    }
    let remaining = target - head;
    Ok(ok(json!({
        "CurrentBlock": head.to_string(),
        "CountdownBlock": target.to_string(),
        "RemainingBlock": remaining.to_string(),
        "EstimateTimeInSec": format!("{:.1}", remaining as f64 * block_time),
    })))
}

/// The last block mined at or before `time` (`after`: the first at or
/// after it), by a binary search over the node's block timestamps.
async fn block_at_time(node: Node<'_>, time: u64, after: bool) -> Result<Response, QueryError> {
    let head = node::head(node).await?;
    let time_of = |number: u64| async move {
        node::block(node, number)
            .await?
            .and_then(|b| small(&b["timestamp"]))
            .ok_or_else(|| malformed("block"))
    };
    // Invariant: blocks below `low` are before `time`, from `high` on not.
    let (mut low, mut high) = (0u64, head + 1);
    while low < high {
        let middle = low + (high - low) / 2;
        if time_of(middle).await? < time {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    let found = if after {
        (low <= head).then_some(low)
    } else if low <= head && time_of(low).await? == time {
        Some(low)
    } else {
        low.checked_sub(1)
    };
    match found {
        Some(number) => Ok(ok_string(&number.to_string())),
        None => Err(QueryError::bad("Error! No closest block found")),
    }
}

/// A `txhash` parameter: `0x` and 64 hex digits.
fn tx_hash<'a>(params: &'a Params) -> Result<&'a str, QueryError> {
    params
        .get("txhash")
        .filter(|hash| {
            hash.len() == 66
                && hash.starts_with("0x")
                && hash[2..].bytes().all(|b| b.is_ascii_hexdigit())
        })
        .ok_or_else(|| QueryError::bad("Error! Invalid transaction hash"))
}

/// `module=transaction`: a mined transaction's outcome.
pub(crate) async fn transaction(
    node: Node<'_>,
    params: &Params<'_>,
    action: &str,
) -> Result<Response, QueryError> {
    if !matches!(action, "getstatus" | "gettxreceiptstatus") {
        return Err(QueryError::bad(MSG_BAD_ACTION));
    }
    let hash = tx_hash(params)?;
    let receipt = ask(node, "eth_getTransactionReceipt", json!([hash])).await?;
    if receipt.is_null() {
        return Err(QueryError::bad(
            "Error! Transaction not found or not mined yet",
        ));
    }
    // Receipts before Byzantium carry a state root instead of a status.
    let status = receipt["status"]
        .as_str()
        .map(|s| if s == "0x1" { "1" } else { "0" });
    if action == "gettxreceiptstatus" {
        return Ok(ok(json!({ "status": status.unwrap_or("") })));
    }
    if status != Some("0") {
        return Ok(ok(json!({ "isError": "0", "errDescription": "" })));
    }
    // Why it failed: the top call's error, as a call trace words it.
    let trace = ask(
        node,
        "debug_traceTransaction",
        json!([hash, { "tracer": "callTracer", "tracerConfig": { "onlyTopCall": true } }]),
    )
    .await
    .ok();
    let reason = trace
        .as_ref()
        .and_then(|t| t["error"].as_str())
        .unwrap_or("execution reverted")
        .to_owned();
    Ok(ok(json!({ "isError": "1", "errDescription": reason })))
}

/// Wei as gwei with up to 9 decimals, trailing zeros dropped.
fn gwei(wei: U256) -> String {
    let billion = U256::from(1_000_000_000u64);
    let (whole, part) = (wei / billion, wei % billion);
    if part.is_zero() {
        return whole.to_string();
    }
    let fraction = format!("{:09}", part.to::<u64>());
    format!("{whole}.{}", fraction.trim_end_matches('0'))
}

/// The last blocks' fees: the next block's base fee, and per block its
/// base fee, gas used ratio and the 25th, 50th and 75th percentile tips.
struct FeeHistory {
    last_block: u64,
    next_base_fee: U256,
    blocks: Vec<(U256, f64, [U256; 3])>,
}

async fn fee_history(node: Node<'_>) -> Result<FeeHistory, QueryError> {
    let history = ask(
        node,
        "eth_feeHistory",
        json!([format!("{FEE_BLOCKS:#x}"), "latest", [25, 50, 75]]),
    )
    .await?;
    let oldest = small(&history["oldestBlock"]).ok_or_else(|| malformed("fee history"))?;
    let base_fees: Vec<U256> = history["baseFeePerGas"]
        .as_array()
        .ok_or_else(|| malformed("fee history"))?
        .iter()
        .map(|fee| quantity(fee).unwrap_or(U256::ZERO))
        .collect();
    let ratios = history["gasUsedRatio"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let rewards = history["reward"].as_array().cloned().unwrap_or_default();
    let blocks: Vec<_> = ratios
        .iter()
        .enumerate()
        .map(|(i, ratio)| {
            let tip = |p: usize| quantity(&rewards.get(i).map_or(Value::Null, |r| r[p].clone()));
            let tips = [0, 1, 2].map(|p| tip(p).unwrap_or(U256::ZERO));
            (
                base_fees.get(i).copied().unwrap_or(U256::ZERO),
                ratio.as_f64().unwrap_or(0.0),
                tips,
            )
        })
        .collect();
    Ok(FeeHistory {
        last_block: oldest + blocks.len().saturating_sub(1) as u64,
        next_base_fee: base_fees.last().copied().unwrap_or(U256::ZERO),
        blocks,
    })
}

/// `module=gastracker`.
pub(crate) async fn gastracker(
    node: Node<'_>,
    params: &Params<'_>,
    action: &str,
) -> Result<Response, QueryError> {
    match action {
        "gasoracle" => {
            let fees = fee_history(node).await?;
            // Safe, propose, fast: the next base fee plus the recent blocks'
            // 25th, 50th and 75th percentile tips, averaged.
            let count = U256::from(fees.blocks.len().max(1));
            let tip = |p: usize| {
                fees.blocks
                    .iter()
                    .map(|b| b.2[p])
                    .fold(U256::ZERO, |s, t| s + t)
                    / count
            };
            let ratios: Vec<String> = fees
                .blocks
                .iter()
                .rev()
                .take(5)
                .rev()
                .map(|b| b.1.to_string())
                .collect();
            Ok(ok(json!({
                "LastBlock": fees.last_block.to_string(),
                "SafeGasPrice": gwei(fees.next_base_fee + tip(0)),
                "ProposeGasPrice": gwei(fees.next_base_fee + tip(1)),
                "FastGasPrice": gwei(fees.next_base_fee + tip(2)),
                "suggestBaseFee": gwei(fees.next_base_fee),
                "gasUsedRatio": ratios.join(","),
            })))
        }
        "gasestimate" => {
            // Etherscan documents `gasprice`; its clients also send `gasPrice`.
            let price: U256 = params
                .get("gasprice")
                .or_else(|| params.get("gasPrice"))
                .and_then(|p| p.parse().ok())
                .filter(|p: &U256| !p.is_zero())
                .ok_or_else(|| QueryError::bad("Error! Invalid gasprice"))?;
            let fees = fee_history(node).await?;
            let (_, block_time) = head_and_block_time(node).await?;
            Ok(ok_string(&format!(
                "{:.0}",
                confirmation_seconds(price, &fees.blocks, block_time)
            )))
        }
        _ => Err(QueryError::bad(MSG_BAD_ACTION)),
    }
}

/// Seconds until a transaction paying `price` a gas is likely mined, from
/// recent blocks (base fee, gas used ratio, 25th/50th/75th percentile tips):
/// a block took it if it paid at least that block's base fee and its
/// cheapest quarter's tip; one such block in n is a wait of n blocks. A price
/// below every recent block waits past the window, longer the further below
/// it is: every price gets an estimate, as Etherscan gives.
fn confirmation_seconds(price: U256, blocks: &[(U256, f64, [U256; 3])], block_time: f64) -> f64 {
    let needed = |(base, _, tips): &(U256, f64, [U256; 3])| *base + tips[0];
    let taken = blocks.iter().filter(|block| price >= needed(block)).count();
    let waited = if taken > 0 {
        blocks.len() as f64 / taken as f64
    } else {
        let cheapest = blocks.iter().map(needed).min().unwrap_or(price);
        let short_by = f64::from(cheapest) / f64::from(price.max(U256::from(1)));
        (blocks.len() as f64 + 1.0) * short_by.max(1.0)
    };
    (waited * block_time).max(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_gas_price_gets_an_estimate_and_lower_ones_wait_longer() {
        let gwei = |n: u64| U256::from(n) * U256::from(1_000_000_000u64);
        // Base fee 10 gwei, tips 1/2/3 gwei, in twenty blocks of 2 s.
        let blocks = vec![(gwei(10), 0.5, [gwei(1), gwei(2), gwei(3)]); 20];
        let at = |price| confirmation_seconds(price, &blocks, 2.0);
        assert_eq!(at(gwei(11)), 2.0);
        assert_eq!(at(gwei(100)), 2.0);
        let (below, far_below) = (at(gwei(10)), at(gwei(1)));
        assert!(below > 2.0 && far_below > below, "{below} {far_below}");
        assert!(at(U256::from(1)).is_finite());
        assert_eq!(confirmation_seconds(gwei(1), &[], 12.0), 12.0);
    }

    #[test]
    fn gwei_keeps_its_decimals_and_drops_trailing_zeros() {
        assert_eq!(gwei(U256::from(1_000_000_000u64)), "1");
        assert_eq!(gwei(U256::from(1_500_000_000u64)), "1.5");
        assert_eq!(gwei(U256::from(7u64)), "0.000000007");
        assert_eq!(gwei(U256::from(23_120_000_001u64)), "23.120000001");
    }
}
