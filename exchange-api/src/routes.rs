//! The Binance Spot-compatible routes, each with its security and weight,
//! and the admin routes that move funds in and out of the ledger.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Extension, Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use weiport_access::{Caller, Endpoint, Permission, Security, guarded};

use crate::amount::Amount;
use crate::api::{self, Exchange, is_json, now_ms};
use crate::engine::{Command, Event, Reject};
use crate::error::{BinanceError, BinanceFace};
use crate::order::Params;

async fn ping() -> Json<serde_json::Value> {
    Json(serde_json::json!({}))
}

async fn time() -> Json<serde_json::Value> {
    Json(serde_json::json!({ "serverTime": now_ms() }))
}

/// `GET /sapi/v1/account/apiRestrictions`: what the calling key may do.
async fn api_restrictions(Extension(caller): Extension<Caller>) -> Response {
    let Some(key) = caller.key else {
        return BinanceError::new(
            axum::http::StatusCode::UNAUTHORIZED,
            -2015,
            "Invalid API-key, IP, or permissions for action.",
        )
        .into_response();
    };
    let can = |p| key.permissions.allows(p);
    Json(serde_json::json!({
        "ipRestrict": !key.allowed_ips.is_empty(),
        "createTime": key.created_ms,
        "enableReading": can(Permission::Read),
        "enableSpotAndMarginTrading": can(Permission::Trade),
        "enableWithdrawals": can(Permission::Withdraw),
        "enableInternalTransfer": false,
        "enableMargin": false,
        "enableFutures": false,
        "permitsUniversalTransfer": false,
        "enableVanillaOptions": false,
        "enableFixApiTrade": false,
        "enableFixReadOnly": false,
        "enablePortfolioMarginTrading": false,
    }))
    .into_response()
}

/// `POST /api/v3/order/test`: validates an order exactly as placing it would,
/// without sending it to the engine.
async fn test_order(
    State(exchange): State<Arc<Exchange>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let params = match Params::parse(query.as_deref().unwrap_or(""), &body, is_json(&headers)) {
        Ok(params) => params,
        Err(error) => return error.into_response(),
    };
    let catalog = &exchange.catalog;
    let order = match params.new_order(catalog) {
        Ok(order) => order,
        Err(error) => return error.into_response(),
    };
    if params.get("computeCommissionRates") != Some("true") {
        return Json(serde_json::json!({})).into_response();
    }
    let market = catalog.market(order.market).expect("validated above");
    let zero = crate::Amount::ZERO.to_string();
    Json(serde_json::json!({
        "standardCommissionForOrder": { "maker": market.maker_fee.to_string(), "taker": market.taker_fee.to_string() },
        "specialCommissionForOrder": { "maker": zero, "taker": zero },
        "taxCommissionForOrder": { "maker": zero, "taker": zero },
        "discount": { "enabledForAccount": false, "enabledForSymbol": false, "discountAsset": null, "discount": zero },
    }))
    .into_response()
}

fn test_order_weight(query: &str) -> u32 {
    if query.contains("computeCommissionRates=true") {
        20
    } else {
        1
    }
}

/// The exchange's public routes, every one behind `access`.
pub fn router(exchange: Arc<Exchange>) -> Router {
    let access = exchange.access.clone();
    let face = BinanceFace;
    let public = |weight| Endpoint::new(Security::Public).weight(weight);
    let read = |weight| Endpoint::new(Security::Signed(Permission::Read)).weight(weight);
    let trade = Endpoint::new(Security::Signed(Permission::Trade));
    let guard = |endpoint, route| guarded(&access, &face, endpoint, route);
    Router::new()
        .route("/api/v3/ping", guard(public(1), get(ping)))
        .route("/api/v3/time", guard(public(1), get(time)))
        .route(
            "/api/v3/exchangeInfo",
            guard(public(20), get(api::exchange_info)),
        )
        .route(
            "/api/v3/depth",
            guard(
                Endpoint::new(Security::Public).weight_by(api::depth_weight),
                get(api::depth),
            ),
        )
        .route("/api/v3/trades", guard(public(25), get(api::trades)))
        .route(
            "/api/v3/historicalTrades",
            guard(public(25), get(api::trades)),
        )
        .route("/api/v3/aggTrades", guard(public(4), get(api::agg_trades)))
        .route("/api/v3/klines", guard(public(2), get(api::klines)))
        .route("/api/v3/uiKlines", guard(public(2), get(api::klines)))
        .route("/api/v3/avgPrice", guard(public(2), get(api::avg_price)))
        .route(
            "/api/v3/ticker/24hr",
            guard(public(2), get(api::ticker_24hr)),
        )
        .route(
            "/api/v3/ticker/price",
            guard(public(2), get(api::ticker_price)),
        )
        .route(
            "/api/v3/ticker/bookTicker",
            guard(public(2), get(api::book_ticker)),
        )
        .route("/api/v3/ticker", guard(public(4), get(api::ticker_window)))
        .route(
            "/api/v3/order",
            guard(trade.order(), post(api::new_order))
                .merge(guard(read(4), get(api::query_order)))
                .merge(guard(trade, delete(api::cancel_order))),
        )
        .route(
            "/api/v3/order/test",
            guard(trade.weight_by(test_order_weight), post(test_order)),
        )
        .route(
            "/api/v3/openOrders",
            guard(
                Endpoint::new(Security::Signed(Permission::Read))
                    .weight_by(api::open_orders_weight),
                get(api::open_orders),
            )
            .merge(guard(trade, delete(api::cancel_open_orders))),
        )
        .route("/api/v3/allOrders", guard(read(20), get(api::all_orders)))
        .route("/api/v3/account", guard(read(20), get(api::account)))
        .route(
            "/api/v3/myTrades",
            guard(
                Endpoint::new(Security::Signed(Permission::Read)).weight_by(api::my_trades_weight),
                get(api::my_trades),
            ),
        )
        .route(
            "/api/v3/rateLimit/order",
            guard(read(40), get(api::order_rate_limit)),
        )
        .route(
            "/api/v3/account/commission",
            guard(read(20), get(api::account_commission)),
        )
        .route(
            "/sapi/v1/account/apiRestrictions",
            guard(read(1), get(api_restrictions)),
        )
        .route(
            "/sapi/v1/capital/config/getall",
            guard(read(10), get(api::capital_config)),
        )
        .route(
            "/sapi/v1/margin/allPairs",
            guard(public(1), get(api::no_margin_pairs)),
        )
        .route(
            "/sapi/v1/margin/isolated/allPairs",
            guard(read(10), get(api::no_margin_pairs)),
        )
        .route(
            "/fapi/v1/exchangeInfo",
            guard(public(1), get(api::no_futures)),
        )
        .route(
            "/dapi/v1/exchangeInfo",
            guard(public(1), get(api::no_futures)),
        )
        .with_state(exchange)
}

#[derive(serde::Deserialize)]
struct Transfer {
    asset: String,
    amount: String,
}

/// `POST /admin/accounts/{id}/credit|debit` with `{"asset","amount"}`.
async fn transfer(
    exchange: Arc<Exchange>,
    account: u64,
    body: Result<Json<Transfer>, axum::extract::rejection::JsonRejection>,
    credit: bool,
) -> Response {
    let refuse = |status, message: String| {
        (status, Json(serde_json::json!({ "error": message }))).into_response()
    };
    let bad = axum::http::StatusCode::BAD_REQUEST;
    let Ok(Json(transfer)) = body else {
        return refuse(
            bad,
            "expected a JSON body {\"asset\": …, \"amount\": \"decimal\"}".into(),
        );
    };
    let Some(asset) = exchange.catalog.asset_id(&transfer.asset) else {
        return refuse(bad, format!("unknown asset {}", transfer.asset));
    };
    let amount: Amount = match transfer.amount.parse() {
        Ok(amount) => amount,
        Err(error) => return refuse(bad, format!("amount: {error}")),
    };
    match exchange.access.keys.account_exists(account) {
        Ok(true) => {}
        Ok(false) => {
            return refuse(
                axum::http::StatusCode::NOT_FOUND,
                format!("no account {account}"),
            );
        }
        Err(error) => {
            return refuse(
                axum::http::StatusCode::SERVICE_UNAVAILABLE,
                error.to_string(),
            );
        }
    }
    let command = if credit {
        Command::Credit {
            account,
            asset,
            amount,
        }
    } else {
        Command::Debit {
            account,
            asset,
            amount,
        }
    };
    let events = match exchange.sequencer.submit(command).await {
        Ok(events) => events,
        Err(error) => {
            return refuse(
                axum::http::StatusCode::SERVICE_UNAVAILABLE,
                error.to_string(),
            );
        }
    };
    match events.first() {
        Some(Event::Balance { free, locked, .. }) => Json(serde_json::json!({
            "account": account,
            "asset": transfer.asset,
            "free": free.to_string(),
            "locked": locked.to_string(),
        }))
        .into_response(),
        Some(Event::Rejected(Reject::InsufficientBalance)) => refuse(
            axum::http::StatusCode::CONFLICT,
            "insufficient free balance".into(),
        ),
        other => refuse(bad, format!("refused: {other:?}")),
    }
}

/// Admin routes that credit and debit accounts (merged into the admin
/// listener, behind its bearer token).
pub fn admin_router(exchange: Arc<Exchange>) -> Router {
    Router::new()
        .route(
            "/admin/accounts/{id}/credit",
            post(
                |State(exchange): State<Arc<Exchange>>, Path(id): Path<u64>, body| {
                    transfer(exchange, id, body, true)
                },
            ),
        )
        .route(
            "/admin/accounts/{id}/debit",
            post(
                |State(exchange): State<Arc<Exchange>>, Path(id): Path<u64>, body| {
                    transfer(exchange, id, body, false)
                },
            ),
        )
        .with_state(exchange)
}
