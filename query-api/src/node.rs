//! What the query API asks the chain's node directly: one call, its failure
//! in Etherscan's words, and the JSON-RPC quantities it answers with.

use alloy_primitives::{Address, U256};
use serde_json::{Value, json};

use crate::error::QueryError;
use crate::proxy::{NodeProxy, ProxyFailure};

/// Calls `method` on `node`: a refusal is the request's fault (400), a
/// node that does not answer (or none configured) the server's (503).
pub(crate) async fn ask(
    node: Option<&dyn NodeProxy>,
    method: &'static str,
    params: Value,
) -> Result<Value, QueryError> {
    let node = node.ok_or_else(|| {
        QueryError::unavailable("Error! This is read from the node, and none is configured")
    })?;
    node.call(method, params)
        .await
        .map_err(|failure| match failure {
            ProxyFailure::Refused { message, .. } => {
                QueryError::bad(format!("Error! The node refused the query: {message}"))
            }
            ProxyFailure::Unreachable(reason) => {
                QueryError::unavailable(format!("Error! The node did not answer: {reason}"))
            }
        })
}

/// A `0x` quantity of a node's answer.
pub(crate) fn quantity(value: &Value) -> Option<U256> {
    value.as_str()?.parse().ok()
}

/// A `0x` quantity small enough for 64 bits.
pub(crate) fn small(value: &Value) -> Option<u64> {
    quantity(value).and_then(|q| u64::try_from(q).ok())
}

/// A node answer missing a field or holding it in another form.
pub(crate) fn malformed(what: &str) -> QueryError {
    QueryError::unavailable(format!("Error! The node's {what} did not parse"))
}

/// Block `number`'s header (transaction hashes only), if the node has it.
pub(crate) async fn block(
    node: Option<&dyn NodeProxy>,
    number: u64,
) -> Result<Option<Value>, QueryError> {
    let block = ask(
        node,
        "eth_getBlockByNumber",
        json!([format!("{number:#x}"), false]),
    )
    .await?;
    Ok((!block.is_null()).then_some(block))
}

/// The node's head block number.
pub(crate) async fn head(node: Option<&dyn NodeProxy>) -> Result<u64, QueryError> {
    let head = ask(node, "eth_blockNumber", json!([])).await?;
    small(&head).ok_or_else(|| malformed("block number"))
}

/// `contract`'s answer to call data `data` at `block` ("latest" or a
/// `0x` number), as its raw bytes.
pub(crate) async fn call(
    node: Option<&dyn NodeProxy>,
    contract: &Address,
    data: &str,
    block: &str,
) -> Result<Vec<u8>, QueryError> {
    let answer = ask(
        node,
        "eth_call",
        json!([{ "to": contract, "data": data }, block]),
    )
    .await?;
    answer
        .as_str()
        .and_then(|hex| alloy_primitives::hex::decode(hex).ok())
        .ok_or_else(|| malformed("call result"))
}

/// The first 32-byte word of a call's answer as a number.
pub(crate) fn word(bytes: &[u8]) -> Option<U256> {
    bytes.get(..32).map(U256::from_be_slice)
}
