//! `/api` and `/v2/api`: Etherscan's account balance actions and the proxy
//! module's block number and balance, answered from the index.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::Arc;

use alloy_primitives::{Address, U256};
use axum::Router;
use axum::body::{Bytes, HttpBody};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::MethodFilter;
use smallvec::SmallVec;
use weiport_access::params::{lenient_body_pairs, lenient_pairs, lenient_value};
use weiport_access::{Access, AccessError, Endpoint, Face, Permission, Security, guard};
use weiport_storage::Store;

use crate::params::{BlockTag, parse_address, parse_block_tag};
use crate::proxy::{NodeProxy, ProxyCache, ProxyFailure};

/// Query API settings.
#[derive(Clone, Default)]
pub struct QueryConfig {
    /// Answer every error with HTTP 200, as Etherscan itself does.
    pub http_200_errors: bool,
    /// The node `module=proxy` passes calls to; without one only
    /// `eth_blockNumber` and `eth_getBalance` (from the index) answer.
    pub node: Option<Arc<dyn NodeProxy>>,
    /// Final proxy answers kept in memory.
    pub proxy_cache_entries: usize,
    /// How deep below the indexed head a block must be for its proxy
    /// answers to be kept.
    pub proxy_final_depth: u64,
}

/// Most addresses in one `balancemulti`.
pub const MAX_MULTI_ADDRESSES: usize = 20;

const MSG_MISSING_KEY: &str = "Missing/Invalid API Key";
const MSG_INVALID_KEY: &str = "Invalid API Key";
const MSG_BAD_MODULE: &str = "Error! Missing Or invalid Module name";
const MSG_BAD_ACTION: &str = "Error! Missing Or invalid Action name";
pub(crate) const MSG_BAD_ADDRESS: &str = "Error! Invalid address format";
const MSG_BAD_MULTI: &str = "Error! Invalid multi address format";
const MSG_BAD_CHAIN: &str = "Missing or unsupported chainid parameter (required for v2 api), please see https://api.etherscan.io/v2/chainlist for the list of supported chainids";

/// An Etherscan-shaped refusal: the reason travels in `result`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryError {
    status: StatusCode,
    result: String,
}

impl QueryError {
    pub(crate) fn bad(result: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            result: result.into(),
        }
    }

    pub(crate) fn unavailable(result: impl Into<String>) -> Self {
        Self {
            status: StatusCode::SERVICE_UNAVAILABLE,
            result: result.into(),
        }
    }

    fn from_access(error: &AccessError) -> Self {
        let (status, result) = match error {
            AccessError::MissingApiKey => (StatusCode::UNAUTHORIZED, MSG_MISSING_KEY.to_owned()),
            AccessError::TooManyCalls { per_second, .. } => (
                StatusCode::TOO_MANY_REQUESTS,
                format!("Max calls per sec rate limit reached ({per_second}/sec)"),
            ),
            AccessError::TooManyInvalidKeys { .. } => (
                StatusCode::TOO_MANY_REQUESTS,
                "Too many invalid api key attempts, please try again later".to_owned(),
            ),
            AccessError::TooMuchWeight { .. }
            | AccessError::TooManyOrders { .. }
            | AccessError::Banned { .. } => (
                StatusCode::TOO_MANY_REQUESTS,
                "Max rate limit reached".to_owned(),
            ),
            AccessError::BodyTooLarge => (
                StatusCode::PAYLOAD_TOO_LARGE,
                "Request body too large".to_owned(),
            ),
            AccessError::BodyTimeout => (
                StatusCode::REQUEST_TIMEOUT,
                "Request body not received in time".to_owned(),
            ),
            _ => (StatusCode::UNAUTHORIZED, MSG_INVALID_KEY.to_owned()),
        };
        Self { status, result }
    }

    fn into_response(self, http_200: bool) -> Response {
        let status = if http_200 {
            StatusCode::OK
        } else {
            self.status
        };
        let body = serde_json::json!({ "status": "0", "message": "NOTOK", "result": self.result });
        (
            status,
            [(header::CONTENT_TYPE, weiport_access::JSON)],
            body.to_string(),
        )
            .into_response()
    }
}

/// The guard's view of the query API: `apikey` parameter, Etherscan bodies.
#[derive(Clone)]
struct EtherscanFace {
    http_200_errors: bool,
}

impl Face for EtherscanFace {
    fn api_key<'a>(
        &self,
        _headers: &'a HeaderMap,
        query: &'a str,
        body: &'a [u8],
    ) -> Option<Cow<'a, str>> {
        lenient_value(query, "apikey").or_else(|| {
            lenient_body_pairs(body)
                .into_iter()
                .find_map(|(name, value)| (name == "apikey").then_some(value))
        })
    }

    fn reject(&self, error: &AccessError) -> Response {
        QueryError::from_access(error).into_response(self.http_200_errors)
    }
}

struct QueryState {
    store: Store,
    config: QueryConfig,
    cache: ProxyCache,
}

/// Request parameters, from the query string and a form body alike,
/// borrowed from the request where no decoding changed them.
pub(crate) struct Params<'a> {
    pairs: SmallVec<[(Cow<'a, str>, Cow<'a, str>); 8]>,
}

impl<'a> Params<'a> {
    fn new(query: &'a str, body: &'a [u8]) -> Self {
        let mut pairs: SmallVec<_> = lenient_pairs(query).collect();
        if !body.is_empty() {
            pairs.extend(lenient_body_pairs(body));
        }
        Self { pairs }
    }

    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_ref())
    }
}

/// A U256 in decimal, on the stack: 78 digits hold the largest.
pub(crate) fn decimal(wei: &U256) -> arrayvec::ArrayString<78> {
    let mut text = arrayvec::ArrayString::new();
    let _ = write!(text, "{wei}");
    text
}

pub(crate) fn ok_string(result: &str) -> Response {
    const HEAD: &str = r#"{"status":"1","message":"OK","result":""#;
    const TAIL: &str = r#""}"#;
    // Exactly as long as it needs: the body then becomes `Bytes` as it is.
    let mut body = String::with_capacity(HEAD.len() + result.len() + TAIL.len());
    body.push_str(HEAD);
    body.push_str(result);
    body.push_str(TAIL);
    ([(header::CONTENT_TYPE, weiport_access::JSON)], body).into_response()
}

/// The indexed range: from the first indexed block to the cursor.
pub(crate) struct Indexed {
    pub(crate) start: u64,
    pub(crate) head: u64,
}

impl QueryState {
    /// Kept in memory by the store: no read.
    fn indexed(&self) -> Result<Indexed, QueryError> {
        let head = self
            .store
            .indexed_head()
            .ok_or_else(|| QueryError::unavailable("Error! The index is not ready yet"))?;
        let start = self.store.indexed_start().unwrap_or(0);
        Ok(Indexed { start, head })
    }

    fn resolve(&self, tag: BlockTag, indexed: &Indexed) -> Result<u64, QueryError> {
        let block = match tag {
            BlockTag::Latest => indexed.head,
            BlockTag::Earliest => indexed.start,
            BlockTag::Safe | BlockTag::Finalized => {
                return Err(QueryError::bad(
                    "Error! The safe and finalized tags are not known to this index",
                ));
            }
            BlockTag::Number(n) => n,
        };
        if block > indexed.head {
            return Err(QueryError::bad(format!(
                "Error! Block number {block} is above the indexed head {}",
                indexed.head
            )));
        }
        if block < indexed.start {
            return Err(QueryError::bad(format!(
                "Error! Block number {block} is below the first indexed block {}",
                indexed.start
            )));
        }
        Ok(block)
    }

    /// One point read for the head, one `seek_for_prev` for an older block.
    fn balance(
        &self,
        address: &Address,
        block: u64,
        indexed: &Indexed,
    ) -> Result<U256, QueryError> {
        let storage = |e: weiport_storage::StorageError| {
            QueryError::unavailable(format!("Error! Index unavailable: {e}"))
        };
        // The latest row answers for the head unless a commit since the
        // cursor was read moved it past the requested block.
        let latest = if block == indexed.head {
            self.store
                .balance(address)
                .map_err(storage)?
                .filter(|b| b.block <= block)
        } else {
            None
        };
        let found = match latest {
            Some(latest) => Some(latest.wei),
            None => self.store.balance_at(address, block).map_err(storage)?,
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
}

fn tag_param(params: &Params, name: &str) -> Result<BlockTag, QueryError> {
    match params.get(name) {
        None | Some("") if name == "tag" => Ok(BlockTag::Latest),
        None | Some("") => Err(QueryError::bad(format!("Error! Missing or invalid {name}"))),
        Some(text) => {
            parse_block_tag(text).ok_or_else(|| QueryError::bad(format!("Error! Invalid {name}")))
        }
    }
}

fn account(state: &QueryState, params: &Params, action: &str) -> Result<Response, QueryError> {
    let indexed = state.indexed()?;
    match action {
        "balance" | "balancehistory" => {
            let address = parse_address(params.get("address").unwrap_or(""))
                .map_err(|_| QueryError::bad(MSG_BAD_ADDRESS))?;
            let tag = if action == "balance" {
                tag_param(params, "tag")?
            } else {
                tag_param(params, "blockno")?
            };
            let block = state.resolve(tag, &indexed)?;
            Ok(ok_string(&decimal(
                &state.balance(&address, block, &indexed)?,
            )))
        }
        "balancemulti" => {
            let list = params.get("address").unwrap_or("");
            let addresses: Vec<&str> = list.split(',').map(str::trim).collect();
            if list.is_empty() || addresses.len() > MAX_MULTI_ADDRESSES {
                return Err(QueryError::bad(MSG_BAD_MULTI));
            }
            let block = state.resolve(tag_param(params, "tag")?, &indexed)?;
            let mut entries = Vec::with_capacity(addresses.len());
            for text in addresses {
                let address = parse_address(text).map_err(|_| QueryError::bad(MSG_BAD_MULTI))?;
                let wei = state.balance(&address, block, &indexed)?;
                entries.push(serde_json::json!({ "account": text, "balance": wei.to_string() }));
            }
            let body = serde_json::json!({ "status": "1", "message": "OK", "result": entries });
            Ok((
                [(header::CONTENT_TYPE, weiport_access::JSON)],
                body.to_string(),
            )
                .into_response())
        }
        "txlist" => crate::history::txlist(&state.store, params, &indexed),
        "txlistinternal" => crate::transfers::txlistinternal(&state.store, params, &indexed),
        "tokentx" => crate::transfers::tokentx(&state.store, params, &indexed),
        "tokenbalance" => crate::transfers::tokenbalance(&state.store, params),
        "addresstokenbalance" => crate::transfers::addresstokenbalance(&state.store, params),
        _ => Err(QueryError::bad(MSG_BAD_ACTION)),
    }
}

fn rpc_envelope(
    id: &serde_json::Value,
    outcome: Result<serde_json::Value, (i64, String)>,
) -> Response {
    let body = match outcome {
        Ok(result) => serde_json::json!({ "jsonrpc": "2.0", "id": id, "result": result }),
        Err((code, message)) => {
            serde_json::json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
        }
    };
    (
        [(header::CONTENT_TYPE, weiport_access::JSON)],
        body.to_string(),
    )
        .into_response()
}

/// The proxy module answers in JSON-RPC envelopes, as Etherscan does.
async fn proxy(
    state: &QueryState,
    params: &Params<'_>,
    action: &str,
) -> Result<Response, QueryError> {
    let id: serde_json::Value = params
        .get("id")
        .and_then(|id| id.parse::<u64>().ok().map(Into::into))
        .unwrap_or_else(|| 1.into());
    let invalid = |message: String| Ok(rpc_envelope(&id, Err((-32602, message))));
    let indexed = state.indexed()?;
    let result = match action {
        "eth_blockNumber" => format!("{:#x}", indexed.head),
        "eth_getBalance" => {
            let Ok(address) = parse_address(params.get("address").unwrap_or("")) else {
                return invalid("invalid address".into());
            };
            let block = match tag_param(params, "tag").and_then(|tag| state.resolve(tag, &indexed))
            {
                Ok(block) => block,
                Err(error) => return invalid(error.result),
            };
            match state.balance(&address, block, &indexed) {
                Ok(wei) => format!("{wei:#x}"),
                Err(error) => return invalid(error.result),
            }
        }
        other => {
            let (Some(action), Some(node)) = (crate::proxy::action(other), &state.config.node)
            else {
                return Err(QueryError::bad(MSG_BAD_ACTION));
            };
            let node_params = match crate::proxy::node_params(&action, |name| {
                params.get(name).map(str::to_owned)
            }) {
                Ok(p) => p,
                Err(message) => return invalid(message),
            };
            if let Some(kept) = state.cache.get(action.method, &node_params) {
                return Ok(rpc_envelope(&id, Ok(kept)));
            }
            return match node.call(action.method, node_params.clone()).await {
                Ok(result) => {
                    state
                        .cache
                        .offer(&action, &node_params, &result, indexed.head);
                    Ok(rpc_envelope(&id, Ok(result)))
                }
                Err(ProxyFailure::Refused { code, message }) => {
                    Ok(rpc_envelope(&id, Err((code, message))))
                }
                Err(ProxyFailure::Unreachable(reason)) => Err(QueryError::unavailable(format!(
                    "Error! The node did not answer: {reason}"
                ))),
            };
        }
    };
    Ok(rpc_envelope(&id, Ok(result.into())))
}

async fn answer(state: &QueryState, params: &Params<'_>, v2: bool) -> Result<Response, QueryError> {
    match params.get("chainid") {
        None | Some("") if v2 => return Err(QueryError::bad(MSG_BAD_CHAIN)),
        None | Some("") => {}
        Some(chain) => {
            let stored = state.store.chain_id().ok().flatten();
            if chain.parse::<u64>().ok().is_none_or(|c| Some(c) != stored) {
                return Err(QueryError::bad(MSG_BAD_CHAIN));
            }
        }
    }
    let action = params.get("action").unwrap_or("");
    match params.get("module") {
        Some("account") => account(state, params, action),
        Some("proxy") => proxy(state, params, action).await,
        Some("logs") if action == "getLogs" => {
            let indexed = state.indexed()?;
            crate::logs::get_logs(&state.store, state.config.node.as_deref(), params, &indexed)
                .await
        }
        Some("logs") => Err(QueryError::bad(MSG_BAD_ACTION)),
        _ => Err(QueryError::bad(MSG_BAD_MODULE)),
    }
}

/// `/api` (`v2 = false`, `chainid` optional) and `/v2/api` (`chainid` required).
/// The access guard has read any body already, within the size limit.
async fn api(state: Arc<QueryState>, request: Request, v2: bool) -> Response {
    let (parts, body) = request.into_parts();
    let body = if body.is_end_stream() {
        Bytes::new()
    } else {
        match axum::body::to_bytes(body, usize::MAX).await {
            Ok(body) => body,
            Err(_) => {
                return QueryError::bad("Error! The request body could not be read")
                    .into_response(state.config.http_200_errors);
            }
        }
    };
    let params = Params::new(parts.uri.query().unwrap_or(""), &body);
    answer(&state, &params, v2)
        .await
        .unwrap_or_else(|e| e.into_response(state.config.http_200_errors))
}

/// The Etherscan-compatible routes, every call checked by `access`.
pub fn router(store: Store, access: Arc<Access>, config: QueryConfig) -> Router {
    let face = EtherscanFace {
        http_200_errors: config.http_200_errors,
    };
    let endpoint = Endpoint::new(Security::Key(Permission::Read)).query_call();
    let cache = ProxyCache::new(config.proxy_cache_entries, config.proxy_final_depth);
    let state = Arc::new(QueryState {
        store,
        config,
        cache,
    });
    let api_v1 = |State(s): State<Arc<QueryState>>, request: Request| api(s, request, false);
    let api_v2 = |State(s): State<Arc<QueryState>>, request: Request| api(s, request, true);
    let methods = MethodFilter::GET.or(MethodFilter::POST);
    let guarded = || guard(&access, &face, endpoint);
    Router::new()
        .route("/api", guarded().on(methods, api_v1, state.clone()))
        .route("/v2/api", guarded().on(methods, api_v2, state))
}
