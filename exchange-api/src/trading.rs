//! Orders: place, query, cancel, cancel all, open orders.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use weiport_exchange::catalog::MarketId;
use weiport_exchange::engine::{AccountId, Command, OrderStatus};
use weiport_exchange::history::OrderView;
use weiport_exchange::order::ResponseType;

use crate::error::{Answer, BinanceError, Refusal};
use crate::exchange::{Exchange, stored};
use crate::extract::Signed;
use crate::lists::{list_canceled, list_of};
use crate::order_params::validated_order;
use crate::params::{Params, integer, market, query_has, query_value};
use crate::wire::{
    acknowledgement, cancel_client_id, cancel_json, generated_client_id, order_json, placed_json,
};

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
    let outcome = exchange
        .submit(Command::Place {
            account,
            order,
            time_ms: 0,
        })
        .await?;
    let order = outcome
        .changes
        .placed()
        .ok_or_else(BinanceError::unavailable)?;
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
        return Err(BinanceError::from(Refusal::EitherOf(
            "origClientOrderId",
            "orderId",
        )));
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
        .ok_or_else(|| BinanceError::from(Refusal::NoSuchOrder))?;
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
        .ok_or_else(|| BinanceError::from(Refusal::UnknownOrder))?;
    let outcome = exchange
        .submit(Command::Cancel {
            account,
            market,
            order_id,
            cancel_client_id: params.client_id("newClientOrderId")?,
            time_ms: 0,
        })
        .await?;
    let cancel_id = cancel_client_id(&outcome);
    let (order, _) = outcome
        .changes
        .orders
        .iter()
        .find(|(o, _)| o.order_id == order_id)
        .ok_or_else(BinanceError::unavailable)?;
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
    let outcome = exchange
        .submit(Command::CancelAll {
            account,
            market,
            time_ms: 0,
        })
        .await?;
    // Orders on their own one by one, each list once in its own shape.
    let mut out: Vec<Value> = Vec::new();
    let mut lists_done: Vec<u64> = Vec::new();
    let cancel_id = cancel_client_id(&outcome);
    for (order, _) in &outcome.changes.orders {
        if order.status != OrderStatus::Canceled {
            continue;
        }
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
