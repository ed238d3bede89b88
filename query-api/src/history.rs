//! An address's history, Etherscan's way: `txlist` from the transaction
//! index, and the paging every history list shares (`page`, `offset`,
//! `sort`, `startblock`, `endblock`), its 10,000-result window and its
//! empty-page answer.

use std::fmt::Write;

use axum::http::header;
use axum::response::{IntoResponse, Response};
use weiport_storage::{HistoryIndex, HistoryPage, IndexedTransaction, Store};

use crate::params::parse_address;
use crate::router::{Indexed, MSG_BAD_ADDRESS, Params, QueryError};

/// Etherscan answers at most this many results however it is paged.
pub const RESULT_WINDOW: u64 = 10_000;

const MSG_WINDOW: &str =
    "Result window is too large, PageNo x Offset size must be less than or equal to 10000";

/// A decimal parameter, `default` when absent or empty.
pub(crate) fn number(params: &Params, name: &str, default: u64) -> Result<u64, QueryError> {
    match params.get(name) {
        None | Some("") => Ok(default),
        Some(text) => text
            .parse()
            .map_err(|_| QueryError::bad(format!("Error! Invalid {name}"))),
    }
}

/// An answer with `status` "0" that is not an error in Etherscan's eyes
/// (an empty page, a window too large): HTTP 200, the text in `message`.
pub(crate) fn empty(message: &str, result: &str) -> Response {
    let body = format!(r#"{{"status":"0","message":"{message}","result":{result}}}"#);
    ([(header::CONTENT_TYPE, weiport_access::JSON)], body).into_response()
}

/// A storage failure, as the query API reports it.
pub(crate) fn unavailable(error: weiport_storage::StorageError) -> QueryError {
    QueryError::unavailable(format!("Error! Index unavailable: {error}"))
}

/// What `index` holds, and why it may be absent.
fn label(index: HistoryIndex) -> (&'static str, &'static str) {
    match index {
        HistoryIndex::Transactions => ("Transactions are", "indexer.transactions is off"),
        HistoryIndex::Internal => (
            "Internal transactions are",
            "indexer.internal_transactions is off, or the node has no callTracer",
        ),
        HistoryIndex::Tokens => ("Token transfers are", "indexer.tokens is off"),
    }
}

/// The first block `index` covers, or the refusal that says it is off.
pub(crate) fn indexed_from(store: &Store, index: HistoryIndex) -> Result<u64, QueryError> {
    let (what, key) = label(index);
    store
        .history_indexed_from(index)
        .map_err(unavailable)?
        .ok_or_else(|| QueryError::bad(format!("Error! {what} not indexed here ({key})")))
}

/// The page of `index` asked for; `Err` holds the answer for a page beyond
/// the window.
pub(crate) fn paging(
    params: &Params,
    indexed: &Indexed,
    store: &Store,
    index: HistoryIndex,
) -> Result<Result<HistoryPage, Response>, QueryError> {
    let from = indexed_from(store, index)?;
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
            "Error! {} indexed from block {from}: ask for startblock={from} or later",
            label(index).0
        )));
    }
    let start = start.max(from);
    Ok(Ok(HistoryPage {
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

/// `{"status":"1","message":"OK","result":[…]}` with each item written by
/// `write`.
pub(crate) fn list<T>(items: &[T], mut write: impl FnMut(&mut String, &T)) -> Response {
    let mut body = String::with_capacity(64 + items.len() * 700);
    body.push_str(r#"{"status":"1","message":"OK","result":["#);
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        write(&mut body, item);
    }
    body.push_str("]}");
    ([(header::CONTENT_TYPE, weiport_access::JSON)], body).into_response()
}

/// `0x` and the first four bytes of call data, as Etherscan's `methodId`.
pub(crate) fn method_id(input: &[u8]) -> String {
    if input.len() >= 4 {
        alloy_primitives::hex::encode_prefixed(&input[..4])
    } else {
        "0x".to_owned()
    }
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
