//! Orders: place, query, cancel, cancel all, open orders.

use axum::response::Response;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::response::IntoResponse;
use serde_json::{Value, json};

use weiport_exchange::Catalog;
use weiport_exchange::catalog::MarketId;

use crate::api::*;
use crate::error::BinanceError;
use crate::params::{OrderNames, Params};
use weiport_exchange::engine::{AccountId, Command, OrderStatus, Trade};
use weiport_exchange::history::OrderView;
use weiport_exchange::market::FilterFailure;
use weiport_exchange::now_ms;
use weiport_exchange::order::{NewOrder, OrderType, ResponseType, Side};

/// A new order from `params`, checked against every filter: NOTIONAL for
/// market orders included (`applyMinToMarket`: their quote amount, or their
/// quantity at the five-minute average price, as Binance does), and
/// PERCENT_PRICE_BY_SIDE for limit prices against that average.
pub(crate) fn validated_order(
    exchange: &Exchange,
    params: &Params,
) -> Result<NewOrder, BinanceError> {
    validated_order_named(exchange, params, &OrderNames::SINGLE, None)
}

/// [`validated_order`] for one order of a request, under `names` (see
/// [`Params::order_named`]).
pub(crate) fn validated_order_named(
    exchange: &Exchange,
    params: &Params,
    names: &OrderNames,
    fixed: Option<OrderType>,
) -> Result<NewOrder, BinanceError> {
    let order = params.order_named(&exchange.catalog, names, fixed)?;
    let market = exchange
        .catalog
        .market(order.market)
        .ok_or_else(bad_symbol)?;
    let average = || five_minute_price(&exchange.sequencer.view(), order.market, now_ms()).0;
    if order.order_type == OrderType::Market {
        let notional = match (order.quote_quantity, order.quantity) {
            (Some(quote), _) => Some(quote),
            (None, Some(quantity)) => average().and_then(|price| price.checked_mul(quantity)),
            (None, None) => None,
        };
        if notional.is_some_and(|n| n < market.min_notional) {
            return Err(crate::params::filter_failure(FilterFailure::Notional));
        }
    } else if let Some(price) = order.price {
        market
            .check_percent_price(price, average())
            .map_err(crate::params::filter_failure)?;
    }
    Ok(order)
}

pub(crate) async fn new_order(
    State(exchange): State<Arc<Exchange>>,
    Signed {
        account, params, ..
    }: Signed,
) -> Answer {
    let mut order = validated_order(&exchange, &params)?;
    order
        .client_order_id
        .get_or_insert_with(generated_client_id);
    let response_type = order.response_type;
    let outcome = submit(
        &exchange,
        Command::Place {
            account,
            order,
            time_ms: 0,
        },
    )
    .await?;
    let order = outcome.changes.placed().ok_or_else(unavailable)?;
    if response_type == ResponseType::Ack {
        // The common case of trading programs: written straight, no JSON tree.
        return Ok(Json(acknowledgement(&exchange.catalog, order)).into_response());
    }
    let out = placed_json(
        &exchange.catalog,
        order,
        &outcome.changes.trades,
        response_type,
    );
    Ok(Json(out).into_response())
}

fn acknowledgement<'a>(catalog: &'a Catalog, order: &'a OrderView) -> Acknowledgement<'a> {
    Acknowledgement {
        symbol: catalog.symbol(order.market),
        order_id: order.order_id,
        order_list_id: list_id(order),
        client_order_id: &order.client_order_id,
        transact_time: order.time_ms,
    }
}

/// The answer to a placed order in the shape of its `newOrderRespType`:
/// ACK's ids, RESULT's state, FULL's fills among `trades` too.
pub(crate) fn placed_json(
    catalog: &Catalog,
    order: &OrderView,
    trades: &[Trade],
    response_type: ResponseType,
) -> Value {
    let mut out = json!(acknowledgement(catalog, order));
    if response_type == ResponseType::Ack {
        return out;
    }
    let full = order_json(catalog, order);
    for field in [
        "price",
        "origQty",
        "executedQty",
        "origQuoteOrderQty",
        "cummulativeQuoteQty",
        "status",
        "timeInForce",
        "type",
        "side",
        "workingTime",
        "selfTradePreventionMode",
        "trailingDelta",
        "trailingTime",
    ] {
        if let Some(value) = full.get(field) {
            out[field] = value.clone();
        }
    }
    if order.stop_price.is_some() {
        out["stopPrice"] = full["stopPrice"].clone();
    }
    if response_type == ResponseType::Full
        && let Some((base, quote)) = catalog.pair(order.market)
    {
        let fills: Vec<Value> = trades
            .iter()
            .filter(|t| t.taker.0 == order.order_id && t.market == order.market)
            .map(|t| {
                let asset = if t.taker_side == Side::Buy {
                    base
                } else {
                    quote
                };
                json!({
                    "price": t.price.to_string(), "qty": t.quantity.to_string(),
                    "commission": t.taker_fee.to_string(),
                    "commissionAsset": catalog.asset(asset),
                    "tradeId": t.trade_id,
                })
            })
            .collect();
        out["fills"] = Value::Array(fills);
    }
    out
}

/// The order of `account` that `orderId` or `origClientOrderId` names, if any.
pub(crate) fn referenced_order(
    exchange: &Exchange,
    account: AccountId,
    market: MarketId,
    params: &Params,
) -> Result<Option<OrderView>, BinanceError> {
    let order_id = integer(params, "orderId")?;
    let client = params.get("origClientOrderId");
    if order_id.is_none() && client.is_none() {
        return Err(BinanceError::bad(
            -1102,
            "Param 'origClientOrderId' or 'orderId' must be sent, but both were empty/null!",
        ));
    }
    stored(
        exchange
            .history
            .find_order(account, market, order_id, client),
    )
}

pub(crate) async fn query_order(
    State(exchange): State<Arc<Exchange>>,
    Signed {
        account, params, ..
    }: Signed,
) -> Answer {
    let (market, _) = market(&exchange.catalog, &params)?;
    let order = referenced_order(&exchange, account, market, &params)?
        .ok_or_else(|| BinanceError::bad(-2013, "Order does not exist."))?;
    Ok(Json(order_json(&exchange.catalog, &order)).into_response())
}

pub(crate) async fn cancel_order(
    State(exchange): State<Arc<Exchange>>,
    Signed {
        account, params, ..
    }: Signed,
) -> Answer {
    let (market, _) = market(&exchange.catalog, &params)?;
    let order_id = referenced_order(&exchange, account, market, &params)?
        .map(|o| o.order_id)
        .ok_or_else(|| BinanceError::bad(-2011, "Unknown order sent."))?;
    let outcome = submit(
        &exchange,
        Command::Cancel {
            account,
            market,
            order_id,
            time_ms: 0,
        },
    )
    .await?;
    let cancel_id = params
        .get("newClientOrderId")
        .map_or_else(generated_client_id, str::to_owned);
    let (order, _) = outcome
        .changes
        .orders
        .iter()
        .find(|(o, _)| o.order_id == order_id)
        .ok_or_else(unavailable)?;
    // An order of a list went with its list: the answer is the list's.
    if let Some(list) = list_of(&exchange, order)? {
        let answer = list_canceled(&exchange, &list, &outcome.changes, &cancel_id)?;
        return Ok(Json(answer).into_response());
    }
    Ok(Json(cancel_json(&exchange.catalog, order, &cancel_id)).into_response())
}

pub(crate) async fn cancel_open_orders(
    State(exchange): State<Arc<Exchange>>,
    Signed {
        account, params, ..
    }: Signed,
) -> Answer {
    let (market, _) = market(&exchange.catalog, &params)?;
    let outcome = submit(
        &exchange,
        Command::CancelAll {
            account,
            market,
            time_ms: 0,
        },
    )
    .await?;
    // Orders on their own one by one, each list once in its own shape.
    let mut out: Vec<Value> = Vec::new();
    let mut lists_done: Vec<u64> = Vec::new();
    for (order, _) in &outcome.changes.orders {
        if order.status != OrderStatus::Canceled {
            continue;
        }
        let cancel_id = generated_client_id();
        match list_of(&exchange, order)? {
            Some(list) if !lists_done.contains(&list.list_id) => {
                lists_done.push(list.list_id);
                out.push(list_canceled(
                    &exchange,
                    &list,
                    &outcome.changes,
                    &cancel_id,
                )?);
            }
            Some(_) => {}
            None => out.push(cancel_json(&exchange.catalog, order, &cancel_id)),
        }
    }
    Ok(Json(Value::Array(out)).into_response())
}

pub(crate) fn open_orders_weight(query: &str) -> u32 {
    if query_has(query, "symbol") { 6 } else { 80 }
}

pub(crate) async fn open_orders(
    State(exchange): State<Arc<Exchange>>,
    Signed {
        account, params, ..
    }: Signed,
) -> Answer {
    let only = match params.get("symbol") {
        Some(_) => Some(market(&exchange.catalog, &params)?.0),
        None => None,
    };
    let view = exchange.sequencer.view();
    let out: Vec<Value> = view
        .accounts
        .get(&account)
        .map(|a| {
            a.open
                .iter()
                .filter(|(m, _)| only.is_none_or(|only| only == *m))
                .filter_map(|(m, id)| view.open_order(account, *m, *id))
                .map(|o| order_json(&exchange.catalog, o))
                .collect()
        })
        .unwrap_or_default();
    Ok(Json(Value::Array(out)).into_response())
}

/// `POST /api/v3/order/test`: validates an order exactly as placing it would,
/// without sending it to the engine.
pub(crate) async fn test_order(
    State(exchange): State<Arc<Exchange>>,
    Signed { params, .. }: Signed,
) -> Response {
    let catalog = &exchange.catalog;
    let order = match validated_order(&exchange, &params) {
        Ok(order) => order,
        Err(error) => return error.into_response(),
    };
    if params.get("computeCommissionRates") != Some("true") {
        return Json(serde_json::json!({})).into_response();
    }
    let market = catalog.market(order.market).expect("validated above");
    let zero = weiport_exchange::Amount::ZERO.to_string();
    Json(serde_json::json!({
        "standardCommissionForOrder": { "maker": market.maker_fee.to_string(), "taker": market.taker_fee.to_string() },
        "specialCommissionForOrder": { "maker": zero, "taker": zero },
        "taxCommissionForOrder": { "maker": zero, "taker": zero },
        "discount": { "enabledForAccount": false, "enabledForSymbol": false, "discountAsset": null, "discount": zero },
    }))
    .into_response()
}

pub(crate) fn test_order_weight(query: &str) -> u32 {
    if query_value(query, "computeCommissionRates").as_deref() == Some("true") {
        20
    } else {
        1
    }
}
