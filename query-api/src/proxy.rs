//! `module=proxy`: Etherscan's JSON-RPC pass-through. The block number and
//! balances come from the index; every other action is sent to the node as
//! Etherscan maps it (`txhash`, `tag`, `boolean`, `address`, `to`, `data`…)
//! and answered in a JSON-RPC envelope. Answers about blocks deep enough to
//! be final are kept in a bounded cache: they can no longer change.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

use axum::response::Response;
use serde_json::{Value, json};
use weiport_storage::Store;

use crate::balances::wei_at;
use crate::envelope::rpc_envelope;
use crate::error::{MSG_BAD_ACTION, QueryError};
use crate::params::{Params, parse_address, tag_param};
use crate::range::Indexed;

/// Why the node gave no result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProxyFailure {
    /// The node answered with a JSON-RPC error.
    Refused {
        /// Its code.
        code: i64,
        /// Its message.
        message: String,
        /// Its data (a reverted call's return data: the revert reason).
        data: Option<Value>,
    },
    /// The node could not be reached.
    Unreachable(String),
}

/// The node the proxy module passes calls to.
pub trait NodeProxy: Send + Sync {
    /// Calls `method` with `params` (a JSON array) and returns its result.
    fn call<'a>(
        &'a self,
        method: &'static str,
        params: Value,
    ) -> Pin<Box<dyn Future<Output = Result<Value, ProxyFailure>> + Send + 'a>>;
}

/// One pass-through action: the node method and how its parameters are
/// built from Etherscan's.
struct Action {
    method: &'static str,
    /// Whether a final answer may be cached.
    cacheable: bool,
}

/// The actions passed to the node.
fn action(name: &str) -> Option<Action> {
    let (method, cacheable) = match name {
        "eth_getBlockByNumber" => ("eth_getBlockByNumber", true),
        "eth_getBlockTransactionCountByNumber" => ("eth_getBlockTransactionCountByNumber", true),
        "eth_getTransactionByHash" => ("eth_getTransactionByHash", true),
        "eth_getTransactionByBlockNumberAndIndex" => {
            ("eth_getTransactionByBlockNumberAndIndex", true)
        }
        "eth_getUncleByBlockNumberAndIndex" => ("eth_getUncleByBlockNumberAndIndex", true),
        "eth_getTransactionReceipt" => ("eth_getTransactionReceipt", true),
        "eth_getTransactionCount" => ("eth_getTransactionCount", false),
        "eth_call" => ("eth_call", false),
        "eth_getCode" => ("eth_getCode", false),
        "eth_getStorageAt" => ("eth_getStorageAt", false),
        "eth_gasPrice" => ("eth_gasPrice", false),
        "eth_estimateGas" => ("eth_estimateGas", false),
        "eth_sendRawTransaction" => ("eth_sendRawTransaction", false),
        _ => return None,
    };
    Some(Action { method, cacheable })
}

/// `0x` and hex digits, at most `max_digits` of them (none allowed when
/// `empty_ok`).
fn hex(text: &str, max_digits: usize, empty_ok: bool) -> bool {
    let Some(digits) = text.strip_prefix("0x") else {
        return false;
    };
    (empty_ok || !digits.is_empty())
        && digits.len() <= max_digits
        && digits.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A block tag as the node takes it: a hex number or a name.
fn tag(value: Option<&str>) -> Result<String, String> {
    match value.unwrap_or("latest") {
        "" | "latest" => Ok("latest".into()),
        name @ ("earliest" | "pending" | "safe" | "finalized") => Ok(name.into()),
        number if hex(number, 16, false) => Ok(number.to_ascii_lowercase()),
        _ => Err("invalid block tag: a hex number or latest, earliest, pending".into()),
    }
}

/// How many hex digits a parameter has.
#[derive(Clone, Copy)]
enum Digits {
    Exactly(usize),
    AtMost(usize),
}

impl Digits {
    fn max(self) -> usize {
        match self {
            Self::Exactly(n) | Self::AtMost(n) => n,
        }
    }

    fn fits(self, digits: usize) -> bool {
        match self {
            Self::Exactly(n) => digits == n,
            Self::AtMost(n) => digits <= n,
        }
    }
}

/// A storage slot as the node takes it: Etherscan takes it in hex (`0x…`)
/// or in decimal, as ethers sends it.
fn storage_slot(value: Option<&str>) -> Result<String, String> {
    let invalid = || "invalid position".to_owned();
    let value = value.ok_or_else(invalid)?;
    let slot = match value.strip_prefix("0x") {
        Some(digits) if !digits.is_empty() && digits.len() <= 64 => {
            alloy_primitives::U256::from_str_radix(digits, 16)
        }
        None if !value.is_empty()
            && value.len() <= 78
            && value.bytes().all(|b| b.is_ascii_digit()) =>
        {
            alloy_primitives::U256::from_str_radix(value, 10)
        }
        _ => return Err(invalid()),
    };
    slot.map(|slot| format!("{slot:#x}")).map_err(|_| invalid())
}

/// The node parameters of `action`, from Etherscan's query parameters.
fn node_params(action: &Action, get: impl Fn(&str) -> Option<String>) -> Result<Value, String> {
    const ADDRESS: Digits = Digits::Exactly(40);
    const HASH: Digits = Digits::Exactly(64);
    const QUANTITY: Digits = Digits::AtMost(64);
    // Call data and raw transactions: 128 KiB of bytes at most.
    const DATA: Digits = Digits::AtMost(256 * 1024);
    // Addresses and hashes have their exact length; quantities and data a
    // limit.
    let required = |name: &str, digits: Digits| -> Result<String, String> {
        match get(name) {
            Some(v) if hex(&v, digits.max(), false) && digits.fits(v.len() - 2) => {
                Ok(v.to_ascii_lowercase())
            }
            _ => Err(format!("invalid {name}")),
        }
    };
    let optional = |name: &str, digits: Digits| -> Result<Option<String>, String> {
        match get(name).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(v) if hex(&v, digits.max(), true) && digits.fits(v.len() - 2) => {
                Ok(Some(v.to_ascii_lowercase()))
            }
            Some(_) => Err(format!("invalid {name}")),
        }
    };
    // The call a client describes, every field it sent passed on.
    let call_object = || -> Result<serde_json::Map<String, Value>, String> {
        let mut call = serde_json::Map::new();
        for (name, digits) in [
            ("from", ADDRESS),
            ("to", ADDRESS),
            ("data", DATA),
            ("value", QUANTITY),
            ("gasPrice", QUANTITY),
            ("gas", QUANTITY),
        ] {
            if let Some(value) = optional(name, digits)? {
                call.insert(name.into(), value.into());
            }
        }
        Ok(call)
    };
    Ok(match action.method {
        "eth_getBlockByNumber" => {
            let full = match get("boolean").as_deref() {
                None | Some("") | Some("true") => true,
                Some("false") => false,
                Some(_) => return Err("invalid boolean".into()),
            };
            json!([tag(get("tag").as_deref())?, full])
        }
        "eth_getBlockTransactionCountByNumber" => json!([tag(get("tag").as_deref())?]),
        "eth_getTransactionByHash" | "eth_getTransactionReceipt" => {
            json!([required("txhash", HASH)?])
        }
        "eth_getTransactionByBlockNumberAndIndex" | "eth_getUncleByBlockNumberAndIndex" => {
            json!([
                tag(get("tag").as_deref())?,
                required("index", Digits::AtMost(16))?
            ])
        }
        "eth_getTransactionCount" | "eth_getCode" => {
            json!([required("address", ADDRESS)?, tag(get("tag").as_deref())?])
        }
        "eth_getStorageAt" => json!([
            required("address", ADDRESS)?,
            storage_slot(get("position").as_deref())?,
            tag(get("tag").as_deref())?
        ]),
        "eth_call" => {
            // A call needs its target; the sender, value and gas are the
            // client's to give (a token transfer estimated from its holder).
            let mut call = call_object()?;
            call.insert("to".into(), required("to", ADDRESS)?.into());
            call.entry("data").or_insert_with(|| "0x".into());
            json!([call, tag(get("tag").as_deref())?])
        }
        "eth_estimateGas" => json!([call_object()?]),
        "eth_sendRawTransaction" => json!([required("hex", DATA)?]),
        _ => json!([]),
    })
}

/// The block a result belongs to, for the finality check.
fn result_block(result: &Value) -> Option<u64> {
    let number = result
        .get("blockNumber")
        .or_else(|| result.get("number"))?
        .as_str()?;
    u64::from_str_radix(number.strip_prefix("0x")?, 16).ok()
}

/// The block a request names by number, when it does.
fn requested_block(params: &Value) -> Option<u64> {
    let tag = params.get(0)?.as_str()?;
    u64::from_str_radix(tag.strip_prefix("0x")?, 16).ok()
}

/// Final answers, newest kept: a bounded map with first-in eviction.
pub struct ProxyCache {
    entries: Mutex<(HashMap<String, Value>, VecDeque<String>)>,
    capacity: usize,
    /// Blocks a result must be below the indexed head to be final.
    depth: u64,
}

impl ProxyCache {
    /// A cache of at most `capacity` answers about blocks `depth` deep.
    pub fn new(capacity: usize, depth: u64) -> Self {
        Self {
            entries: Mutex::new((HashMap::new(), VecDeque::new())),
            capacity,
            depth,
        }
    }

    fn key(method: &str, params: &Value) -> String {
        format!("{method}{params}")
    }

    fn get(&self, method: &str, params: &Value) -> Option<Value> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.0.get(&Self::key(method, params)).cloned()
    }

    /// Keeps `result` when the block it belongs to is final at `head`.
    fn offer(&self, action: &Action, params: &Value, result: &Value, head: u64) {
        if !action.cacheable || self.capacity == 0 {
            return;
        }
        let Some(block) = result_block(result).or_else(|| {
            // A count or an uncle names its block in the request.
            requested_block(params).filter(|_| !result.is_null())
        }) else {
            return;
        };
        if block.saturating_add(self.depth) > head {
            return;
        }
        let key = Self::key(action.method, params);
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let (map, order) = &mut *entries;
        if map.insert(key.clone(), result.clone()).is_none() {
            order.push_back(key);
            while order.len() > self.capacity {
                if let Some(oldest) = order.pop_front() {
                    map.remove(&oldest);
                }
            }
        }
    }
}

/// `module=proxy&action=…`, answered in a JSON-RPC envelope as Etherscan
/// does: the block number and balances from `store`, every other action
/// from `node` (through `cache`).
pub(crate) async fn answer(
    store: &Store,
    node: Option<&dyn NodeProxy>,
    cache: &ProxyCache,
    params: &Params<'_>,
    action_name: &str,
) -> Result<Response, QueryError> {
    let id: Value = params
        .get("id")
        .and_then(|id| id.parse::<u64>().ok().map(Into::into))
        .unwrap_or_else(|| 1.into());
    let invalid = |message: String| Ok(rpc_envelope(&id, Err((-32602, message, None))));
    let indexed = Indexed::of(store)?;
    let result = match action_name {
        "eth_blockNumber" => format!("{:#x}", indexed.head),
        "eth_getBalance" => {
            let Ok(address) = parse_address(params.get("address").unwrap_or("")) else {
                return invalid("invalid address".into());
            };
            let block = match tag_param(params, "tag").and_then(|tag| indexed.resolve(tag)) {
                Ok(block) => block,
                Err(error) => return invalid(error.into_reason()),
            };
            match wei_at(store, &address, block, &indexed) {
                Ok(wei) => format!("{wei:#x}"),
                Err(error) => return invalid(error.into_reason()),
            }
        }
        other => {
            let (Some(action), Some(node)) = (action(other), node) else {
                return Err(QueryError::bad(MSG_BAD_ACTION));
            };
            let node_params = match node_params(&action, |name| params.get(name).map(str::to_owned))
            {
                Ok(p) => p,
                Err(message) => return invalid(message),
            };
            if let Some(kept) = cache.get(action.method, &node_params) {
                return Ok(rpc_envelope(&id, Ok(kept)));
            }
            return match node.call(action.method, node_params.clone()).await {
                Ok(result) => {
                    cache.offer(&action, &node_params, &result, indexed.head);
                    Ok(rpc_envelope(&id, Ok(result)))
                }
                // Every field the node gave: clients decode a revert's
                // reason from `data`.
                Err(ProxyFailure::Refused {
                    code,
                    message,
                    data,
                }) => Ok(rpc_envelope(&id, Err((code, message, data)))),
                Err(ProxyFailure::Unreachable(reason)) => Err(QueryError::unavailable(format!(
                    "Error! The node did not answer: {reason}"
                ))),
            };
        }
    };
    Ok(rpc_envelope(&id, Ok(result.into())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(action: &str, pairs: &[(&str, &str)]) -> Result<Value, String> {
        let action = super::action(action).unwrap();
        node_params(&action, |name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn etherscan_parameters_become_node_parameters() {
        assert_eq!(
            params(
                "eth_getBlockByNumber",
                &[("tag", "0x10"), ("boolean", "false")]
            ),
            Ok(json!(["0x10", false]))
        );
        assert_eq!(
            params("eth_getBlockByNumber", &[("tag", "0x10")]),
            Ok(json!(["0x10", true]))
        );
        let hash = format!("0x{}", "ab".repeat(32));
        assert_eq!(
            params("eth_getTransactionReceipt", &[("txhash", &hash)]),
            Ok(json!([hash]))
        );
        let to = format!("0x{}", "11".repeat(20));
        assert_eq!(
            params("eth_call", &[("to", &to), ("data", "0x70a08231")]),
            Ok(json!([{ "to": to, "data": "0x70a08231" }, "latest"]))
        );
        let holder = format!("0x{}", "22".repeat(20));
        assert_eq!(
            params(
                "eth_call",
                &[
                    ("to", &to),
                    ("from", &holder),
                    ("value", "0x1"),
                    ("gas", "0x5208")
                ]
            ),
            Ok(
                json!([{ "to": to, "from": holder, "data": "0x", "value": "0x1", "gas": "0x5208" }, "latest"])
            )
        );
        assert_eq!(
            params(
                "eth_estimateGas",
                &[("from", &holder), ("to", &to), ("data", "0xa9059cbb")]
            ),
            Ok(json!([{ "from": holder, "to": to, "data": "0xa9059cbb" }]))
        );
        for (position, slot) in [("0", "0x0"), ("10", "0xa"), ("0x0a", "0xa"), ("0x0", "0x0")] {
            assert_eq!(
                params(
                    "eth_getStorageAt",
                    &[("address", &to), ("position", position)]
                ),
                Ok(json!([to, slot, "latest"])),
                "{position}"
            );
        }
        for bad in [
            params("eth_getStorageAt", &[("address", &to), ("position", "")]),
            params("eth_getStorageAt", &[("address", &to), ("position", "-1")]),
            params("eth_getStorageAt", &[("address", &to), ("position", "0x")]),
            params(
                "eth_getStorageAt",
                &[("address", &to), ("position", &"9".repeat(79))],
            ),
            params("eth_call", &[("to", &to), ("from", "0x12")]),
            params("eth_getTransactionByHash", &[("txhash", "0x12zz")]),
            params("eth_getTransactionByHash", &[]),
            params("eth_getBlockByNumber", &[("tag", "12")]),
            params(
                "eth_getBlockByNumber",
                &[("tag", "0x1"), ("boolean", "yes")],
            ),
            params("eth_getCode", &[("address", "0x1234")]),
        ] {
            assert!(bad.is_err(), "{bad:?}");
        }
    }

    #[test]
    fn only_final_answers_are_kept_and_the_oldest_leave_first() {
        let cache = ProxyCache::new(2, 10);
        let receipt = action("eth_getTransactionReceipt").unwrap();
        let at = |n: u64| json!({ "blockNumber": format!("{n:#x}") });
        let p = |i: u8| json!([format!("0x{i:064x}")]);
        cache.offer(&receipt, &p(1), &at(95), 100); // 5 deep: not final
        assert!(cache.get(receipt.method, &p(1)).is_none());
        cache.offer(&receipt, &p(1), &at(90), 100);
        cache.offer(&receipt, &p(2), &at(80), 100);
        cache.offer(&receipt, &p(3), &at(70), 100);
        assert!(cache.get(receipt.method, &p(1)).is_none());
        assert_eq!(cache.get(receipt.method, &p(3)), Some(at(70)));
        let balance_like = action("eth_getTransactionCount").unwrap();
        cache.offer(&balance_like, &p(4), &at(1), 100);
        assert!(cache.get(balance_like.method, &p(4)).is_none());
    }
}
