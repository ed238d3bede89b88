//! The /sapi, /fapi and /dapi answers ccxt asks for when loading markets.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use weiport_access::Permission;
use weiport_exchange::now_ms;

use crate::error::Answer;
use crate::exchange::Exchange;
use crate::extract::Signed;
use crate::params::market;

pub(crate) async fn capital_config(
    State(exchange): State<Arc<Exchange>>,
    Signed { account, .. }: Signed,
) -> Answer {
    let view = exchange.sequencer.view();
    let held = view.accounts.get(&account);
    let out: Vec<Value> = exchange
        .catalog
        .assets()
        .map(|(id, name)| {
            let (free, locked) = held
                .and_then(|a| a.balances.get(&id))
                .copied()
                .unwrap_or_default();
            // What this account's pending withdrawals of the asset hold.
            let withdrawing = view
                .chain
                .withdrawals
                .values()
                .filter(|w| w.account == account && w.asset == id)
                .filter(|w| w.stage == weiport_exchange::engine::WithdrawalStage::Requested)
                .filter_map(|w| w.amount.checked_add(w.fee))
                .fold(weiport_exchange::Amount::ZERO, |sum, a| {
                    sum.checked_add(a).unwrap_or(sum)
                });
            let networks: Vec<_> = crate::capital::networks_of(&exchange, id).collect();
            let deposits = networks.iter().any(|w| w.coin().deposit_enable);
            let withdrawals = networks.iter().any(|w| w.withdrawals_open());
            json!({
                "coin": name, "name": name, "free": free.to_string(), "locked": locked.to_string(),
                "freeze": "0", "withdrawing": withdrawing.to_string(), "ipoing": "0", "ipoable": "0", "storage": "0",
                "isLegalMoney": false, "trading": true,
                "depositAllEnable": deposits,
                "withdrawAllEnable": withdrawals,
                "networkList": crate::capital::network_list(&exchange, id),
            })
        })
        .collect();
    Ok(Json(Value::Array(out)).into_response())
}

/// Futures exchange information (`/fapi`, `/dapi`): this exchange lists no
/// futures, which clients that load every market type need to hear.
pub(crate) async fn no_futures() -> Json<Value> {
    Json(json!({
        "timezone": "UTC",
        "serverTime": now_ms(),
        "rateLimits": [],
        "exchangeFilters": [],
        "assets": [],
        "symbols": [],
    }))
}

/// Margin pair lists: this exchange has no margin trading.
pub(crate) async fn no_margin_pairs() -> Json<Value> {
    Json(json!([]))
}

/// `GET /sapi/v1/account/apiRestrictions`: what the calling key may do.
pub(crate) async fn api_restrictions(Signed { key, .. }: Signed) -> Response {
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

/// `GET /sapi/v1/system/status`: ccxt's `fetch_status`.
pub(crate) async fn system_status() -> Response {
    Json(json!({ "status": 0, "msg": "normal" })).into_response()
}

/// `GET /sapi/v1/asset/tradeFee`: each market's fee rates (ccxt's
/// `fetch_trading_fee(s)`), for one `symbol` or every market.
pub(crate) async fn trade_fee(
    State(exchange): State<Arc<Exchange>>,
    Signed { params, .. }: Signed,
) -> Answer {
    let fees = |symbol: &str, market: &weiport_exchange::Market| {
        json!({
            "symbol": symbol,
            "makerCommission": market.maker_fee.to_string(),
            "takerCommission": market.taker_fee.to_string(),
        })
    };
    let out: Vec<Value> = if params.get("symbol").is_some() {
        let (id, market) = market(&exchange.catalog, &params)?;
        vec![fees(exchange.catalog.symbol(id), market)]
    } else {
        exchange
            .catalog
            .markets()
            .map(|(id, market)| fees(exchange.catalog.symbol(id), market))
            .collect()
    };
    Ok(Json(Value::Array(out)).into_response())
}
