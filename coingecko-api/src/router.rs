//! The routes of the CoinGecko face, each behind the access guard, and the
//! guard's view of this API: where its key travels and how it refuses.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::MethodFilter;
use serde_json::json;
use weiport_access::{Access, AccessError, Endpoint, Face, Permission, Security, guard};

use crate::chart::{market_chart, market_chart_range, ohlc};
use crate::coins::CoinTable;
use crate::detail::{coin, coin_by_contract, coin_history, coin_tickers};
use crate::listing::{coins_list, coins_markets};
use crate::reply;
use crate::simple::{simple_price, supported_vs_currencies, token_price};
use crate::state::{Markets, PriceFace};
use crate::venue::{exchange, exchange_tickers, exchanges, global, search};

/// The guard's view of this API: CoinGecko's key headers and parameters,
/// CoinGecko's refusals.
#[derive(Clone)]
struct CoinGeckoFace;

impl Face for CoinGeckoFace {
    fn name(&self) -> &'static str {
        "coingecko"
    }

    fn api_key<'a>(
        &self,
        headers: &'a HeaderMap,
        query: &'a str,
        _body: &'a [u8],
    ) -> Option<std::borrow::Cow<'a, str>> {
        ["x-cg-pro-api-key", "x-cg-demo-api-key"]
            .iter()
            .find_map(|name| headers.get(*name)?.to_str().ok().map(Into::into))
            .or_else(|| {
                weiport_access::params::lenient_pairs(query)
                    .find(|(name, _)| name == "x_cg_pro_api_key" || name == "x_cg_demo_api_key")
                    .map(|(_, value)| value)
            })
    }

    fn reject(&self, error: &AccessError) -> Response {
        let status_of = |code: StatusCode, message: &str| {
            let body =
                json!({ "status": { "error_code": code.as_u16(), "error_message": message } });
            reply::json_response(code, body.to_string())
        };
        match error {
            AccessError::TooMuchWeight { .. }
            | AccessError::TooManyOrders { .. }
            | AccessError::TooManyCalls { .. }
            | AccessError::TooManyInvalidKeys { .. }
            | AccessError::Banned { .. } => status_of(
                StatusCode::TOO_MANY_REQUESTS,
                "You've exceeded the Rate Limit. Please wait before calling again.",
            ),
            AccessError::BodyTooLarge => {
                reply::error(StatusCode::PAYLOAD_TOO_LARGE, "Request body too large")
            }
            AccessError::BodyTimeout => reply::error(
                StatusCode::REQUEST_TIMEOUT,
                "Request body not received in time",
            ),
            _ => status_of(
                StatusCode::UNAUTHORIZED,
                &format!("Invalid API key: {error}"),
            ),
        }
    }
}

/// The CoinGecko-compatible routes, priced from `markets` with `coins`.
pub fn router<M: Markets>(markets: Arc<M>, coins: CoinTable, access: &Arc<Access>) -> Router {
    let face = Arc::new(PriceFace {
        markets,
        coins,
        answers: Mutex::new(HashMap::new()),
    });
    let endpoint = |weight| Endpoint::new(Security::OptionalKey(Permission::Read)).weight(weight);
    let route = |weight| guard(access, &CoinGeckoFace, endpoint(weight));
    let get = MethodFilter::GET;
    Router::new()
        .route(
            "/api/v3/simple/price",
            route(1).on(get, simple_price::<M>, face.clone()),
        )
        .route(
            "/api/v3/simple/supported_vs_currencies",
            route(1).on(get, supported_vs_currencies::<M>, face.clone()),
        )
        .route(
            "/api/v3/coins/list",
            route(1).on(get, coins_list::<M>, face.clone()),
        )
        .route(
            "/api/v3/coins/markets",
            route(1).on(get, coins_markets::<M>, face.clone()),
        )
        .route(
            "/api/v3/coins/{id}/market_chart",
            route(2).on(get, market_chart::<M>, face.clone()),
        )
        .route(
            "/api/v3/coins/{id}/market_chart/range",
            route(2).on(get, market_chart_range::<M>, face.clone()),
        )
        .route(
            "/api/v3/coins/{id}/ohlc",
            route(2).on(get, ohlc::<M>, face.clone()),
        )
        .route(
            "/api/v3/coins/{id}",
            route(1).on(get, coin::<M>, face.clone()),
        )
        // pycoingecko asks for a coin with a trailing slash.
        .route(
            "/api/v3/coins/{id}/",
            route(1).on(get, coin::<M>, face.clone()),
        )
        .route(
            "/api/v3/coins/{id}/tickers",
            route(1).on(get, coin_tickers::<M>, face.clone()),
        )
        .route(
            "/api/v3/coins/{id}/history",
            route(1).on(get, coin_history::<M>, face.clone()),
        )
        .route(
            "/api/v3/coins/{platform}/contract/{address}",
            route(1).on(get, coin_by_contract::<M>, face.clone()),
        )
        .route(
            "/api/v3/simple/token_price/{platform}",
            route(1).on(get, token_price::<M>, face.clone()),
        )
        .route(
            "/api/v3/exchanges",
            route(1).on(get, exchanges::<M>, face.clone()),
        )
        .route(
            "/api/v3/exchanges/{id}",
            route(1).on(get, exchange::<M>, face.clone()),
        )
        .route(
            "/api/v3/exchanges/{id}/tickers",
            route(1).on(get, exchange_tickers::<M>, face.clone()),
        )
        .route(
            "/api/v3/search",
            route(1).on(get, search::<M>, face.clone()),
        )
        .route("/api/v3/global", route(1).on(get, global::<M>, face))
}
