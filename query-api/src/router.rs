//! `/api` and `/v2/api`: the access guard in Etherscan's shape, and the
//! dispatch of each call to the module and action that answers it.

use std::borrow::Cow;
use std::sync::Arc;

use axum::Router;
use axum::body::{Bytes, HttpBody};
use axum::extract::{Request, State};
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::MethodFilter;
use weiport_access::params::{lenient_body_pairs, lenient_value};
use weiport_access::{Access, AccessError, Endpoint, Face, Permission, Security, guard};
use weiport_storage::Store;

use crate::error::{MSG_BAD_ACTION, MSG_BAD_CHAIN, MSG_BAD_MODULE, QueryError};
use crate::params::Params;
use crate::proxy::{NodeProxy, ProxyCache};
use crate::range::Indexed;
use crate::{balances, history, logs, proxy, transfers};

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

/// `module=account`: every action needs the index ready.
fn account(state: &QueryState, params: &Params, action: &str) -> Result<Response, QueryError> {
    let indexed = Indexed::of(&state.store)?;
    let store = &state.store;
    match action {
        "balance" => balances::balance(store, params, &indexed, "tag"),
        "balancehistory" => balances::balance(store, params, &indexed, "blockno"),
        "balancemulti" => balances::balancemulti(store, params, &indexed),
        "txlist" => history::txlist(store, params, &indexed),
        "txlistinternal" => transfers::txlistinternal(store, params, &indexed),
        "tokentx" => transfers::tokentx(store, params, &indexed),
        "tokenbalance" => transfers::tokenbalance(store, params),
        "addresstokenbalance" => transfers::addresstokenbalance(store, params),
        _ => Err(QueryError::bad(MSG_BAD_ACTION)),
    }
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
    let node = state.config.node.as_deref();
    match params.get("module") {
        Some("account") => account(state, params, action),
        Some("proxy") => proxy::answer(&state.store, node, &state.cache, params, action).await,
        Some("logs") if action == "getLogs" => {
            let indexed = Indexed::of(&state.store)?;
            logs::get_logs(&state.store, node, params, &indexed).await
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
