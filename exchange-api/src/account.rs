//! Account data: balances, order and trade history, order counts, commissions.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::response::IntoResponse;
use serde_json::{Value, json};
use weiport_exchange::amount::Amount;
use weiport_exchange::engine::{Prevention, Trade};
use weiport_exchange::history::{Dated, HistoryError};
use weiport_exchange::market::Market;
use weiport_exchange::now_ms;
use weiport_exchange::order::Side;
use weiport_exchange::view::MarketView;
use weiport_storage::ScanDirection;

use crate::error::{Answer, BinanceError, Refusal};
use crate::exchange::{Exchange, first, latest, stored};
use crate::extract::*;
use crate::params::{Params, boolean, integer, limit, market, query_has};
use crate::wire::*;

/// Checks `startTime`/`endTime`: at most 24 hours apart, start not after
/// end. `endTime` alone means the 24 hours up to it, so every window has a
/// start a read can seek to.
pub(crate) fn time_window(params: &Params) -> Result<(Option<u64>, Option<u64>), BinanceError> {
    let end = integer(params, "endTime")?;
    let start = match integer(params, "startTime")? {
        None => end.map(|end| end.saturating_sub(86_400_000)),
        start => start,
    };
    if let (Some(s), Some(e)) = (start, end) {
        if s > e {
            return Err(BinanceError::from(Refusal::BadCombination));
        }
        if e - s > 86_400_000 {
            return Err(BinanceError::from(Refusal::WindowOverDay));
        }
    }
    Ok((start, end))
}

pub(crate) async fn all_orders(
    State(exchange): State<Arc<Exchange>>,
    Signed {
        account, params, ..
    }: Signed,
) -> Answer {
    let (market, _) = market(&exchange.catalog, &params)?;
    let limit = limit(&params, 500, 1000)?;
    let from = integer(&params, "orderId")?;
    let (start, end) = time_window(&params)?;
    let history = &exchange.history;
    let selected = if let Some(from) = from {
        first(
            history.account_orders(account, market, from, ScanDirection::Forward),
            limit,
        )?
    } else if let Some(start) = start {
        let end = end.unwrap_or(u64::MAX);
        // Seek to the window: the first order of the market placed in it
        // (ids follow time), searched among ids up to the account's newest.
        let newest = stored(
            history
                .account_orders(account, market, u64::MAX, ScanDirection::Backward)
                .next()
                .transpose(),
        )?
        .map_or(0, |o| o.order_id);
        let from = stored(history.first_at(Dated::Orders, market, start, newest))?;
        first(
            history
                .account_orders(account, market, from, ScanDirection::Forward)
                .take_while(|o| o.as_ref().map_or(true, |o| o.time_ms <= end)),
            limit,
        )?
    } else {
        latest(
            history.account_orders(account, market, u64::MAX, ScanDirection::Backward),
            limit,
        )?
    };
    let out: Vec<Value> = selected
        .iter()
        .map(|o| order_json(&exchange.catalog, o))
        .collect();
    Ok(Json(Value::Array(out)).into_response())
}

pub(crate) fn commission_rates(exchange: &Exchange, market: Option<&Market>) -> Value {
    let (maker, taker) = market
        .or_else(|| exchange.catalog.markets().next().map(|(_, m)| m))
        .map_or((Amount::ZERO, Amount::ZERO), |m| (m.maker_fee, m.taker_fee));
    json!({ "maker": maker.to_string(), "taker": taker.to_string(), "buyer": Amount::ZERO.to_string(), "seller": Amount::ZERO.to_string() })
}

/// Basis points of a fee rate, as `makerCommission` reports it.
pub(crate) fn basis_points(rate: Amount) -> u64 {
    rate.units() / 10_000
}

pub(crate) async fn account(
    State(exchange): State<Arc<Exchange>>,
    Signed {
        key,
        account,
        params,
        ..
    }: Signed,
) -> Answer {
    let omit_zero = boolean(&params, "omitZeroBalances");
    let view = exchange.sequencer.view();
    let held = view.accounts.get(&account);
    let balances: Vec<Value> = exchange
        .catalog
        .assets()
        .filter_map(|(id, name)| {
            let (free, locked) = held
                .and_then(|a| a.balances.get(&id))
                .copied()
                .unwrap_or_default();
            (!omit_zero || !free.is_zero() || !locked.is_zero()).then(
                || json!({ "asset": name, "free": free.to_string(), "locked": locked.to_string() }),
            )
        })
        .collect();
    let rates = commission_rates(&exchange, None);
    let first = exchange.catalog.markets().next().map(|(_, m)| m);
    let can = |p| key.permissions.allows(p);
    Ok(Json(json!({
        "makerCommission": first.map_or(0, |m| basis_points(m.maker_fee)),
        "takerCommission": first.map_or(0, |m| basis_points(m.taker_fee)),
        "buyerCommission": 0,
        "sellerCommission": 0,
        "commissionRates": rates,
        "canTrade": can(weiport_access::Permission::Trade),
        "canWithdraw": can(weiport_access::Permission::Withdraw),
        "canDeposit": true,
        "brokered": false,
        "requireSelfTradePrevention": false,
        "preventSor": false,
        "updateTime": held.map_or(0, |a| a.update_ms),
        "accountType": "SPOT",
        "balances": balances,
        "permissions": ["SPOT"],
        "uid": account,
    }))
    .into_response())
}

pub(crate) fn my_trades_weight(query: &str) -> u32 {
    if query_has(query, "orderId") { 5 } else { 20 }
}

pub(crate) async fn my_trades(
    State(exchange): State<Arc<Exchange>>,
    Signed {
        account, params, ..
    }: Signed,
) -> Answer {
    let (market, _) = market(&exchange.catalog, &params)?;
    let limit = limit(&params, 500, 1000)?;
    let order_id = integer(&params, "orderId")?;
    let from = integer(&params, "fromId")?;
    let (start, end) = time_window(&params)?;
    if from.is_some() && (start.is_some() || end.is_some()) {
        return Err(BinanceError::from(Refusal::BadCombination));
    }
    let (base, quote) = exchange
        .catalog
        .pair(market)
        .ok_or(Refusal::InvalidSymbol)?;
    let history = &exchange.history;
    let own_order = |t: &Trade| {
        order_id.is_none_or(|o| {
            (t.maker.0 == o && t.maker.1 == account) || (t.taker.0 == o && t.taker.1 == account)
        })
    };
    let in_window = |t: &Trade| start.is_none_or(|s| t.time_ms >= s);
    let keep = move |t: &Result<Trade, HistoryError>| {
        t.as_ref().map_or(true, |t| own_order(t) && in_window(t))
    };
    // Every read seeks to where its rows start and stops where they must
    // end: an order's trades lie between its placement and its last change.
    let last_trade = exchange
        .sequencer
        .view()
        .market(market)
        .map_or(0, MarketView::last_trade_id);
    let mut end = end;
    let mut seek = from.unwrap_or(0);
    if let Some(start) = start {
        seek = seek.max(stored(history.first_at(
            Dated::Trades,
            market,
            start,
            last_trade,
        ))?);
    }
    if let Some(order_id) = order_id {
        let Some(order) = stored(history.order(market, order_id))?.filter(|o| o.account == account)
        else {
            return Ok(Json(Value::Array(Vec::new())).into_response());
        };
        seek = seek.max(stored(history.first_at(
            Dated::Trades,
            market,
            order.time_ms,
            last_trade,
        ))?);
        end = Some(end.map_or(order.update_ms, |e| e.min(order.update_ms)));
    }
    let before_end = |t: &Result<Trade, HistoryError>| {
        t.as_ref()
            .map_or(true, |t| end.is_none_or(|e| t.time_ms <= e))
    };
    let selected = if from.is_some() || start.is_some() || order_id.is_some() {
        let rows = history.account_trades(account, market, seek, ScanDirection::Forward);
        first(rows.take_while(before_end).filter(keep), limit)?
    } else {
        let rows = history.account_trades(account, market, u64::MAX, ScanDirection::Backward);
        latest(rows.filter(keep).filter(before_end), limit)?
    };
    let mut out = Vec::new();
    for t in selected {
        // A self-trade is reported from both sides.
        for (is_maker, (order, owner)) in [(true, t.maker), (false, t.taker)] {
            if owner != account || order_id.is_some_and(|o| o != order) {
                continue;
            }
            let taker_buys = t.taker_side == Side::Buy;
            let is_buyer = taker_buys != is_maker;
            let fee = if is_maker { t.maker_fee } else { t.taker_fee };
            out.push(json!({
                "symbol": exchange.catalog.symbol(market),
                "id": t.trade_id,
                "orderId": order,
                "orderListId": -1,
                "price": t.price.to_string(),
                "qty": t.quantity.to_string(),
                "quoteQty": t.quote_quantity.to_string(),
                "commission": fee.to_string(),
                "commissionAsset": exchange.catalog.asset(if is_buyer { base } else { quote }),
                "time": t.time_ms,
                "isBuyer": is_buyer,
                "isMaker": is_maker,
                "isBestMatch": true,
            }));
        }
    }
    Ok(Json(Value::Array(out)).into_response())
}

pub(crate) async fn order_rate_limit(
    State(exchange): State<Arc<Exchange>>,
    Signed { account, .. }: Signed,
) -> Answer {
    let limits = exchange.access.limiter.config();
    let (ten, day) = exchange
        .access
        .limiter
        .current_order_counts(account, now_ms())
        .await;
    Ok(Json(json!([
        {"rateLimitType": "ORDERS", "interval": "SECOND", "intervalNum": 10, "limit": limits.orders_per_10s, "count": ten},
        {"rateLimitType": "ORDERS", "interval": "DAY", "intervalNum": 1, "limit": limits.orders_per_day, "count": day},
    ]))
    .into_response())
}

pub(crate) async fn account_commission(
    State(exchange): State<Arc<Exchange>>,
    Signed { params, .. }: Signed,
) -> Answer {
    let (id, m) = market(&exchange.catalog, &params)?;
    let zero = json!({ "maker": Amount::ZERO.to_string(), "taker": Amount::ZERO.to_string(), "buyer": Amount::ZERO.to_string(), "seller": Amount::ZERO.to_string() });
    Ok(Json(json!({
        "symbol": exchange.catalog.symbol(id),
        "standardCommission": commission_rates(&exchange, Some(m)),
        "specialCommission": zero,
        "taxCommission": zero,
        "discount": { "enabledForAccount": false, "enabledForSymbol": false, "discountAsset": "BNB", "discount": Amount::ZERO.to_string() },
    }))
    .into_response())
}

/// `GET /api/v3/myPreventedMatches`: one by `preventedMatchId`, or an
/// order's (`orderId`, from `fromPreventedMatchId`, up to `limit`).
pub(crate) async fn my_prevented_matches(
    State(exchange): State<Arc<Exchange>>,
    Signed {
        account, params, ..
    }: Signed,
) -> Answer {
    let (market, _) = market(&exchange.catalog, &params)?;
    let by_id = integer(&params, "preventedMatchId")?;
    let order_id = integer(&params, "orderId")?;
    let history = &exchange.history;
    let found: Vec<Prevention> = match (by_id, order_id) {
        (Some(id), None) => stored(history.prevented(account, market, id))?
            .into_iter()
            .collect(),
        (None, Some(order_id)) => {
            let own =
                stored(history.order(market, order_id))?.is_some_and(|o| o.account == account);
            if !own {
                return Ok(Json(Value::Array(Vec::new())).into_response());
            }
            let from = integer(&params, "fromPreventedMatchId")?.unwrap_or(0);
            let limit = limit(&params, 500, 1000)?;
            first(history.order_prevented(market, order_id, from), limit)?
        }
        _ => {
            return Err(BinanceError::from(Refusal::BadCombination));
        }
    };
    let symbol = exchange.catalog.symbol(market);
    let out: Vec<Value> = found
        .iter()
        .map(|p| {
            let mut row = json!({
                "symbol": symbol,
                "preventedMatchId": p.id,
                "takerOrderId": p.taker.0,
                "makerSymbol": symbol,
                "makerOrderId": p.maker.0,
                "tradeGroupId": -1,
                "selfTradePreventionMode": stp_name(p.mode),
                "price": p.price.to_string(),
                "transactTime": p.time_ms,
            });
            if !p.maker_quantity.is_zero() {
                row["makerPreventedQuantity"] = json!(p.maker_quantity.to_string());
            }
            if !p.taker_quantity.is_zero() {
                row["takerPreventedQuantity"] = json!(p.taker_quantity.to_string());
            }
            row
        })
        .collect();
    Ok(Json(Value::Array(out)).into_response())
}

pub(crate) fn prevented_matches_weight(query: &str) -> u32 {
    if query_has(query, "orderId") { 20 } else { 2 }
}
