//! Ether balances from the index: `module=account` `balance`,
//! `balancehistory` and `balancemulti`, and the read that the proxy
//! module's `eth_getBalance` shares.

use alloy_primitives::{Address, U256};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use weiport_storage::Store;

use crate::envelope::{decimal, ok_string};
use crate::error::{MSG_BAD_ADDRESS, MSG_BAD_MULTI, QueryError, unavailable};
use crate::params::{Params, parse_address, tag_param};
use crate::range::Indexed;

/// Most addresses in one `balancemulti`.
pub const MAX_MULTI_ADDRESSES: usize = 20;

/// `address`'s balance after `block`: one point read for the head, one
/// `seek_for_prev` for an older block.
pub(crate) fn wei_at(
    store: &Store,
    address: &Address,
    block: u64,
    indexed: &Indexed,
) -> Result<U256, QueryError> {
    // The latest row answers for the head unless a commit since the
    // cursor was read moved it past the requested block.
    let latest = if block == indexed.head {
        store
            .balance(address)
            .map_err(unavailable)?
            .filter(|b| b.block <= block)
    } else {
        None
    };
    let found = match latest {
        Some(latest) => Some(latest.wei),
        None => store.balance_at(address, block).map_err(unavailable)?,
    };
    match found {
        Some(wei) => Ok(wei),
        // From genesis, an address the index never saw never held anything.
        None if indexed.start == 0 => Ok(U256::ZERO),
        None => Err(QueryError::bad(format!(
            "Error! Balance unknown: the index starts at block {} and has not seen this address",
            indexed.start
        ))),
    }
}

/// `balance` (the block in `tag`) and `balancehistory` (in `blockno`):
/// `block_param` names the parameter.
pub(crate) fn balance(
    store: &Store,
    params: &Params,
    indexed: &Indexed,
    block_param: &str,
) -> Result<Response, QueryError> {
    let address = parse_address(params.get("address").unwrap_or(""))
        .map_err(|_| QueryError::bad(MSG_BAD_ADDRESS))?;
    let block = indexed.resolve(tag_param(params, block_param)?)?;
    Ok(ok_string(&decimal(&wei_at(
        store, &address, block, indexed,
    )?)))
}

/// `balancemulti`: up to [`MAX_MULTI_ADDRESSES`] comma-separated addresses.
pub(crate) fn balancemulti(
    store: &Store,
    params: &Params,
    indexed: &Indexed,
) -> Result<Response, QueryError> {
    let list = params.get("address").unwrap_or("");
    let addresses: Vec<&str> = list.split(',').map(str::trim).collect();
    if list.is_empty() || addresses.len() > MAX_MULTI_ADDRESSES {
        return Err(QueryError::bad(MSG_BAD_MULTI));
    }
    let block = indexed.resolve(tag_param(params, "tag")?)?;
    let mut entries = Vec::with_capacity(addresses.len());
    for text in addresses {
        let address = parse_address(text).map_err(|_| QueryError::bad(MSG_BAD_MULTI))?;
        let wei = wei_at(store, &address, block, indexed)?;
        entries.push(serde_json::json!({ "account": text, "balance": wei.to_string() }));
    }
    let body = serde_json::json!({ "status": "1", "message": "OK", "result": entries });
    Ok((
        [(header::CONTENT_TYPE, weiport_access::JSON)],
        body.to_string(),
    )
        .into_response())
}
