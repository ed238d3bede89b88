//! The blocks a query can cover: the indexed range and the block a tag names
//! in it, the first block each history covers, and the page of a history
//! list asked for (Etherscan's `page`, `offset`, `sort`, `startblock`,
//! `endblock`, its 10,000-result window and its empty-page answer).

use axum::response::Response;
use weiport_storage::{HistoryIndex, HistoryPage, Store};

use crate::envelope::empty;
use crate::error::{QueryError, unavailable};
use crate::params::{BlockTag, Params, number};

/// Etherscan answers at most this many results however it is paged.
const RESULT_WINDOW: u64 = 10_000;

const MSG_WINDOW: &str =
    "Result window is too large, PageNo x Offset size must be less than or equal to 10000";

/// The indexed range: from the first indexed block to the cursor.
pub(crate) struct Indexed {
    pub(crate) start: u64,
    pub(crate) head: u64,
}

impl Indexed {
    /// The range `store` holds now. Kept in memory by the store: no read.
    pub(crate) fn of(store: &Store) -> Result<Self, QueryError> {
        let head = store
            .indexed_head()
            .ok_or_else(|| QueryError::unavailable("Error! The index is not ready yet"))?;
        let start = store.indexed_start().unwrap_or(0);
        Ok(Self { start, head })
    }

    /// The block `tag` names, refused when outside the range.
    pub(crate) fn resolve(&self, tag: BlockTag) -> Result<u64, QueryError> {
        let block = match tag {
            BlockTag::Latest => self.head,
            BlockTag::Earliest => self.start,
            BlockTag::Safe | BlockTag::Finalized => {
                return Err(QueryError::bad(
                    "Error! The safe and finalized tags are not known to this index",
                ));
            }
            BlockTag::Number(n) => n,
        };
        if block > self.head {
            return Err(QueryError::bad(format!(
                "Error! Block number {block} is above the indexed head {}",
                self.head
            )));
        }
        if block < self.start {
            return Err(QueryError::bad(format!(
                "Error! Block number {block} is below the first indexed block {}",
                self.start
            )));
        }
        Ok(block)
    }
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
        HistoryIndex::Nfts => ("NFT transfers are", "indexer.tokens is off"),
        HistoryIndex::Blocks => ("Mined blocks and withdrawals are", "the index is empty"),
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
