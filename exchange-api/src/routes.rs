//! The Binance Spot-compatible routes that exist so far.

use std::sync::Arc;

use axum::extract::Extension;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use weiport_access::{Access, Caller, Endpoint, Permission, Security, guarded};

use crate::error::{BinanceError, BinanceFace};

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

/// The exchange's routes, every one behind `access`.
pub fn router(access: Arc<Access>) -> Router {
    let face = BinanceFace;
    let public = Endpoint::new(Security::Public);
    Router::new()
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
