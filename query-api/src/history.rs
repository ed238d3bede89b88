//! An address's history, Etherscan's way: `txlist` from the transaction
//! index, with its paging (`page`, `offset`, `sort`, `startblock`,
//! `endblock`), its 10,000-result window and its empty-page answer.

use std::fmt::Write;

use axum::http::header;
use axum::response::{IntoResponse, Response};
use weiport_storage::{IndexedTransaction, Store, TransactionPage};

use crate::params::parse_address;
use crate::router::{Indexed, MSG_BAD_ADDRESS, Params, QueryError};

/// Etherscan answers at most this many results however it is paged.
pub const RESULT_WINDOW: u64 = 10_000;

const MSG_WINDOW: &str =
    "Result window is too large, PageNo x Offset size must be less than or equal to 10000";

/// A decimal parameter, `default` when absent or empty.
fn number(params: &Params, name: &str, default: u64) -> Result<u64, QueryError> {
    match params.get(name) {
        None | Some("") => Ok(default),
        Some(text) => text
            .parse()
            .map_err(|_| QueryError::bad(format!("Error! Invalid {name}"))),
    }
}

/// An answer with `status` "0" that is not an error in Etherscan's eyes
/// (an empty page, a window too large): HTTP 200, the text in `message`.
fn empty(message: &str, result: &str) -> Response {
    let body = format!(r#"{{"status":"0","message":"{message}","result":{result}}}"#);
    ([(header::CONTENT_TYPE, weiport_access::JSON)], body).into_response()
}

/// The page asked for; `Err` holds the answer for a page beyond the window.
fn paging(
    params: &Params,
    indexed: &Indexed,
    from: u64,
) -> Result<Result<TransactionPage, Response>, QueryError> {
    let start = number(params, "startblock", 0)?;
    let end = number(params, "endblock", u64::MAX)?.min(indexed.head);
    let page = number(params, "page", 1)?;
    let offset = match number(params, "offset", 0)? {
        0 => RESULT_WINDOW,
        offset => offset,
    };
    if page == 0 {
        return Err(QueryError::bad("Error! Invalid page"));
    }
    let descending = match params.get("sort") {
        None | Some("") | Some("asc") => false,
        Some("desc") => true,
        Some(_) => return Err(QueryError::bad("Error! Invalid sort order")),
    };
    if page.saturating_mul(offset) > RESULT_WINDOW {
        return Ok(Err(empty(MSG_WINDOW, "null")));
    }
    // Where the transaction index starts with the index itself, earlier
    // blocks are simply not known (as balances before the start are not);
    // where it was turned on later, a range reaching back before it would be
    // silently incomplete, so it is refused.
    if start < from && from > indexed.start + 1 {
        return Err(QueryError::bad(format!(
            "Error! Transactions are indexed from block {from}: ask for startblock={from} or later"
        )));
    }
    let start = start.max(from);
    Ok(Ok(TransactionPage {
        from_block: start,
        to_block: end,
        descending,
        skip: ((page - 1) * offset) as usize,
        take: offset as usize,
    }))
}

/// `module=account&action=txlist`.
pub(crate) fn txlist(
    store: &Store,
    params: &Params,
    indexed: &Indexed,
) -> Result<Response, QueryError> {
    let address = parse_address(params.get("address").unwrap_or(""))
        .map_err(|_| QueryError::bad(MSG_BAD_ADDRESS))?;
    let storage = |e: weiport_storage::StorageError| {
        QueryError::unavailable(format!("Error! Index unavailable: {e}"))
    };
    let from = store
        .history_indexed_from(weiport_storage::HistoryIndex::Transactions)
        .map_err(storage)?
        .ok_or_else(|| {
            QueryError::bad(
                "Error! Transactions are not indexed here (indexer.transactions is off)",
            )
        })?;
    let page = match paging(params, indexed, from)? {
        Ok(page) => page,
        Err(window) => return Ok(window),
    };
    let found = store
        .address_transactions(&address, page)
        .map_err(storage)?;
    if found.is_empty() {
        return Ok(empty("No transactions found", "[]"));
    }
    let mut body = String::with_capacity(64 + found.len() * 700);
    body.push_str(r#"{"status":"1","message":"OK","result":["#);
    for (i, transaction) in found.iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        write_transaction(&mut body, transaction, indexed.head);
    }
    body.push_str("]}");
    Ok(([(header::CONTENT_TYPE, weiport_access::JSON)], body).into_response())
}

/// One `txlist` entry, Etherscan's fields in its order, every value a string.
fn write_transaction(out: &mut String, transaction: &IndexedTransaction, head: u64) {
    let row = &transaction.row;
    let address =
        |a: Option<alloy_primitives::Address>| a.map(|a| format!("{a:#x}")).unwrap_or_default();
    let input = alloy_primitives::hex::encode_prefixed(&row.input);
    let method_id = if row.input.len() >= 4 {
        &input[..10]
    } else {
        "0x"
    };
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
        method_id,
    );
}
