//! An address's transactions, Etherscan's way: `txlist` from the
//! transaction index.

use std::fmt::Write;

use axum::response::Response;
use weiport_storage::{HistoryIndex, IndexedTransaction, Store};

use crate::envelope::{empty, list, method_id};
use crate::error::{MSG_BAD_ADDRESS, QueryError, unavailable};
use crate::params::{Params, parse_address};
use crate::range::{Indexed, paging};

/// `module=account&action=txlist`.
pub(crate) fn txlist(
    store: &Store,
    params: &Params,
    indexed: &Indexed,
) -> Result<Response, QueryError> {
    let address = parse_address(params.get("address").unwrap_or(""))
        .map_err(|_| QueryError::bad(MSG_BAD_ADDRESS))?;
    let page = match paging(params, indexed, store, HistoryIndex::Transactions)? {
        Ok(page) => page,
        Err(window) => return Ok(window),
    };
    let found = store
        .address_transactions(&address, page)
        .map_err(unavailable)?;
    if found.is_empty() {
        return Ok(empty("No transactions found", "[]"));
    }
    Ok(list(&found, |out, transaction| {
        write_transaction(out, transaction, indexed.head)
    }))
}

/// One `txlist` entry, Etherscan's fields in its order, every value a string.
fn write_transaction(out: &mut String, transaction: &IndexedTransaction, head: u64) {
    let row = &transaction.row;
    let address =
        |a: Option<alloy_primitives::Address>| a.map(|a| format!("{a:#x}")).unwrap_or_default();
    let input = alloy_primitives::hex::encode_prefixed(&row.input);
    let _ = write!(
        out,
        r#"{{"blockNumber":"{}","timeStamp":"{}","hash":"{:#x}","nonce":"{}","blockHash":"{:#x}","transactionIndex":"{}","from":"{:#x}","to":"{}","value":"{}","gas":"{}","gasPrice":"{}","isError":"{}","txreceipt_status":"{}","input":"{}","contractAddress":"{}","cumulativeGasUsed":"{}","gasUsed":"{}","confirmations":"{}","methodId":"{}","functionName":""}}"#,
        transaction.block,
        row.timestamp,
        row.hash,
        row.nonce,
        row.block_hash,
        transaction.index,
        row.from,
        address(row.to),
        row.value,
        row.gas,
        row.gas_price,
        if row.success { "0" } else { "1" },
        if row.success { "1" } else { "0" },
        input,
        address(row.contract_address),
        row.cumulative_gas_used,
        row.gas_used,
        head.saturating_sub(transaction.block) + 1,
        method_id(&row.input),
    );
}
