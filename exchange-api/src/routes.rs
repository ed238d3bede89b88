//! The Binance Spot-compatible routes that exist so far.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Extension, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use weiport_access::{Access, Caller, Endpoint, Permission, Security, guarded};

use crate::catalog::Catalog;
use crate::error::{BinanceError, BinanceFace};
use crate::order::OrderParams;

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

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

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"))
}

/// `POST /api/v3/order/test`: validates an order exactly as placing it would,
/// without sending it to the engine.
async fn test_order(
    State(catalog): State<Arc<Catalog>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let params = match OrderParams::parse(query.as_deref().unwrap_or(""), &body, is_json(&headers))
    {
        Ok(params) => params,
        Err(error) => return error.into_response(),
    };
    let order = match params.new_order(&catalog) {
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

/// The exchange's routes, every one behind `access`.
pub fn router(access: Arc<Access>, catalog: Arc<Catalog>) -> Router {
    let face = BinanceFace;
    let public = Endpoint::new(Security::Public);
    let trade = Endpoint::new(Security::Signed(Permission::Trade));
    let with_markets = Router::new()
        .route(
            "/api/v3/order/test",
            guarded(
                &access,
                &face,
                trade.weight_by(test_order_weight),
                post(test_order),
            ),
        )
        .with_state(catalog);
    Router::new()
        .merge(with_markets)
        .route("/api/v3/ping", guarded(&access, &face, public, get(ping)))
        .route("/api/v3/time", guarded(&access, &face, public, get(time)))
        .route(
            "/sapi/v1/account/apiRestrictions",
            guarded(
                &access,
                &face,
                Endpoint::new(Security::Signed(Permission::Read)),
                get(api_restrictions),
            ),
        )
}
