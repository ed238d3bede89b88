//! `/api` and `/v2/api`: the access guard in Etherscan's shape, and the
//! dispatch of each call to the module and action that answers it.

use std::borrow::Cow;
use std::sync::Arc;

use axum::Router;
use axum::body::{Bytes, HttpBody};
use axum::extract::{Request, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::MethodFilter;
use weiport_access::params::{lenient_body_pairs, lenient_value};
use weiport_access::{Access, AccessError, Endpoint, Face, Permission, Security, guard};
use weiport_storage::Store;

use crate::error::{MSG_BAD_ACTION, MSG_BAD_CHAIN, MSG_BAD_MODULE, QueryError};
use crate::params::Params;
use crate::proxy::{NodeProxy, ProxyCache};
use crate::range::Indexed;
use crate::stats::{CoinPrices, SupplyCache};
use crate::{balances, blocks, history, logs, proxy, stats, transfers};

/// One chain's index as the query API answers from it.
#[derive(Clone)]
pub struct ChainIndex {
    /// The chain id it is configured as (none: the one its index records).
    pub chain_id: Option<u64>,
    /// Its name, as `chainlist` shows it.
    pub name: String,
    /// Its index.
    pub store: Store,
    /// The node `module=proxy` passes calls to; without one only
    /// `eth_blockNumber` and `eth_getBalance` (from the index) answer.
    pub node: Option<Arc<dyn NodeProxy>>,
    /// Etherscan's chainlist status: 1 ok, 2 degraded (lagging), 0 offline.
    pub status: Arc<dyn Fn() -> u8 + Send + Sync>,
}

impl ChainIndex {
    /// A chain answering from `store` alone, always listed as ok.
    pub fn of(store: Store, node: Option<Arc<dyn NodeProxy>>) -> Self {
        Self {
            chain_id: None,
            name: "Ethereum".to_owned(),
            store,
            node,
            status: Arc::new(|| 1),
        }
    }

    /// Its chain id: configured, else as its index records it.
    fn id(&self) -> Option<u64> {
        self.chain_id
            .or_else(|| self.store.chain_id().ok().flatten())
    }
}

/// Query API settings.
#[derive(Clone, Default)]
pub struct QueryConfig {
    /// Answer every error with HTTP 200, as Etherscan itself does.
    pub http_200_errors: bool,
    /// The exchange's prices of the chain's coin (`stats&action=ethprice`).
    pub prices: Option<Arc<dyn CoinPrices>>,
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
    fn name(&self) -> &'static str {
        "etherscan"
    }

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

    /// Etherscan sends no `Retry-After`, and its clients do not expect one:
    /// ethers reads it as milliseconds and gives up after a dozen tries in
    /// half a second, where without it it backs off by itself.
    fn says_retry_after(&self) -> bool {
        false
    }
}

struct QueryState {
    /// Every chain, the default (`/api` without `chainid`) first.
    chains: Vec<ChainState>,
    config: QueryConfig,
}

struct ChainState {
    index: ChainIndex,
    cache: ProxyCache,
    supply: SupplyCache,
}

/// `module=account`: every action needs the index ready.
fn account(chain: &ChainState, params: &Params, action: &str) -> Result<Response, QueryError> {
    let store = &chain.index.store;
    let indexed = Indexed::of(store)?;
    match action {
        "balance" => balances::balance(store, params, &indexed, "tag"),
        "balancehistory" => balances::balance(store, params, &indexed, "blockno"),
        "balancemulti" => balances::balancemulti(store, params, &indexed),
        "txlist" => history::txlist(store, params, &indexed),
        "txlistinternal" => transfers::txlistinternal(store, params, &indexed),
        "tokentx" => transfers::tokentx(store, params, &indexed),
        "tokennfttx" => transfers::nft_transfers(store, params, &indexed, false),
        "token1155tx" => transfers::nft_transfers(store, params, &indexed, true),
        "getminedblocks" => transfers::block_rows(store, params, &indexed, false),
        "addresstokennftbalance" => transfers::nft_holdings(store, params, false),
        "addresstokennftinventory" => transfers::nft_holdings(store, params, true),
        "txsBeaconWithdrawal" => transfers::block_rows(store, params, &indexed, true),
        "tokenbalance" => transfers::tokenbalance(store, params),
        "addresstokenbalance" => transfers::addresstokenbalance(store, params),
        _ => Err(QueryError::bad(MSG_BAD_ACTION)),
    }
}

/// The chain a call names with `chainid` (required on `/v2/api`); `/api`
/// without one answers from the default chain.
fn chain_of<'a>(
    state: &'a QueryState,
    params: &Params<'_>,
    v2: bool,
) -> Result<&'a ChainState, QueryError> {
    match params.get("chainid") {
        None | Some("") if v2 => Err(QueryError::bad(MSG_BAD_CHAIN)),
        None | Some("") => state
            .chains
            .first()
            .ok_or_else(|| QueryError::bad(MSG_BAD_CHAIN)),
        Some(wanted) => {
            let wanted = wanted.parse::<u64>().ok();
            state
                .chains
                .iter()
                .find(|chain| wanted.is_some() && chain.index.id() == wanted)
                .ok_or_else(|| QueryError::bad(MSG_BAD_CHAIN))
        }
    }
}

async fn answer(state: &QueryState, params: &Params<'_>, v2: bool) -> Result<Response, QueryError> {
    let chain = chain_of(state, params, v2)?;
    let store = &chain.index.store;
    let action = params.get("action").unwrap_or("");
    let node = chain.index.node.as_deref();
    match params.get("module") {
        Some("account") => account(chain, params, action),
        Some("proxy") => proxy::answer(store, node, &chain.cache, params, action).await,
        Some("logs") if action == "getLogs" => {
            let indexed = Indexed::of(store)?;
            logs::get_logs(store, node, params, &indexed).await
        }
        Some("logs") => Err(QueryError::bad(MSG_BAD_ACTION)),
        Some("block") => blocks::block(node, params, action).await,
        Some("transaction") => blocks::transaction(node, params, action).await,
        Some("gastracker") => blocks::gastracker(node, params, action).await,
        Some("stats") => {
            let sources = (state.config.prices.as_ref(), &chain.supply);
            stats::stats(store, node, sources, params, action).await
        }
        Some("token") => stats::token(store, node, params, action).await,
        Some("contract") => stats::contract(store, params, action).await,
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

/// `/v2/chainlist`: the chains served, as Etherscan lists its own.
async fn chainlist(state: Arc<QueryState>, request: Request) -> Response {
    let host = request
        .headers()
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1");
    let result: Vec<serde_json::Value> = state
        .chains
        .iter()
        .map(|chain| {
            let id = chain
                .index
                .id()
                .map(|id| id.to_string())
                .unwrap_or_default();
            serde_json::json!({
                "chainname": chain.index.name,
                "chainid": id,
                "blockexplorer": "",
                "apiurl": format!("http://{host}/v2/api?chainid={id}"),
                "status": (chain.index.status)(),
                "comment": "",
            })
        })
        .collect();
    axum::Json(serde_json::json!({
        "comments": "List of chains this server indexes. Available Status codes are (0)=Offline, (1)=Ok, (2)=Degraded",
        "totalcount": result.len(),
        "result": result,
    }))
    .into_response()
}

/// The Etherscan-compatible routes over `chains` (the first is `/api`'s
/// default), every call checked by `access`.
pub fn router(chains: Vec<ChainIndex>, access: Arc<Access>, config: QueryConfig) -> Router {
    let face = EtherscanFace {
        http_200_errors: config.http_200_errors,
    };
    let endpoint = Endpoint::new(Security::Key(Permission::Read)).query_call();
    let chains = chains
        .into_iter()
        .map(|index| ChainState {
            index,
            cache: ProxyCache::new(config.proxy_cache_entries, config.proxy_final_depth),
            supply: SupplyCache::default(),
        })
        .collect();
    let state = Arc::new(QueryState { chains, config });
    let api_v1 = |State(s): State<Arc<QueryState>>, request: Request| api(s, request, false);
    let api_v2 = |State(s): State<Arc<QueryState>>, request: Request| api(s, request, true);
    let list = |State(s): State<Arc<QueryState>>, request: Request| chainlist(s, request);
    let methods = MethodFilter::GET.or(MethodFilter::POST);
    let guarded = || guard(&access, &face, endpoint);
    let listing = Endpoint::new(Security::OptionalKey(Permission::Read));
    Router::new()
        .route("/api", guarded().on(methods, api_v1, state.clone()))
        .route("/v2/api", guarded().on(methods, api_v2, state.clone()))
        .route(
            "/v2/chainlist",
            guard(&access, &face, listing).on(MethodFilter::GET, list, state),
        )
}
