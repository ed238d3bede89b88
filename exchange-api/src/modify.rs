//! Changing orders already placed: cancel-replace (cancel one, place
//! another, in one engine step) and amend (reduce one in place).

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::response::IntoResponse;
use serde_json::{Value, json};
use weiport_exchange::engine::{Command, Event, OrderStatus};
use weiport_exchange::history::OrderView;
use weiport_exchange::now_ms;

use crate::error::{Answer, BinanceError, Refusal};
use crate::exchange::{Exchange, stored};
use crate::extract::Signed;
use crate::lists::{list_of, list_orders};
use crate::order_params::validated_order;
use crate::params::{integer, market};
use crate::trading::referenced_order;

use crate::wire::{
    cancel_client_id, cancel_json, generated_client_id, list_id, list_json, placed_json, side_name,
    status_name, stp_name, tif_name, type_name,
};

/// `POST /api/v3/order/cancelReplace`: cancels an order and places another
/// in one engine step. STOP_ON_FAILURE places nothing if the cancel fails;
/// ALLOW_FAILURE places the new order either way. A part that fails while
/// the other succeeds answers 409 (-2021), both failing 400 (-2022), each
/// part's result under `data`.
pub(crate) async fn cancel_replace(
    State(exchange): State<Arc<Exchange>>,
    Signed {
        account,
        params,
        ip,
        ..
    }: Signed,
) -> Answer {
    let (market, _) = market(&exchange.catalog, &params)?;
    let allow_failure = match params.required("cancelReplaceMode")? {
        "STOP_ON_FAILURE" => false,
        "ALLOW_FAILURE" => true,
        _ => {
            return Err(BinanceError::from(Refusal::InvalidValue(
                "cancelReplaceMode",
            )));
        }
    };
    let cancel_only_when_limited = match params.get("orderRateLimitExceededMode") {
        None | Some("DO_NOTHING") => false,
        Some("CANCEL_ONLY") => true,
        Some(_) => {
            return Err(BinanceError::from(Refusal::InvalidValue(
                "orderRateLimitExceededMode",
            )));
        }
    };
    let restriction = match params.get("cancelRestrictions") {
        None => None,
        Some("ONLY_NEW") => Some(OrderStatus::New),
        Some("ONLY_PARTIALLY_FILLED") => Some(OrderStatus::PartiallyFilled),
        Some(_) => return Err(BinanceError::from(Refusal::InvalidCancelRestrictions)),
    };
    let by_id = integer(&params, "cancelOrderId")?;
    let by_client = params.get("cancelOrigClientOrderId");
    if by_id.is_none() && by_client.is_none() {
        return Err(BinanceError::from(Refusal::EitherOf(
            "cancelOrigClientOrderId",
            "cancelOrderId",
        )));
    }
    let mut order = validated_order(&exchange, &params)?;
    order
        .client_order_id
        .get_or_insert_with(generated_client_id);
    let response_type = order.response_type;
    let target = stored(
        exchange
            .history
            .find_order(account, market, by_id, by_client),
    )?;
    // What would refuse the cancel, known before the engine sees it.
    let cancel_refusal = match &target {
        Some(o) if o.is_open() && restriction.is_none_or(|r| r == o.status) => None,
        Some(o) if o.is_open() => Some(BinanceError::from(Refusal::CancelRestricted)),
        _ => Some(BinanceError::from(Refusal::UnknownOrder)),
    };
    let cancel_given = params.client_id("cancelNewClientOrderId")?;
    let parts = |cancel: Result<Value, &BinanceError>,
                 placed: Option<Result<Value, &BinanceError>>| {
        let result = |part: &Result<Value, &BinanceError>| {
            if part.is_ok() { "SUCCESS" } else { "FAILURE" }
        };
        let body = |part: Result<Value, &BinanceError>| {
            part.unwrap_or_else(|error| json!({"code": error.code, "msg": error.msg}))
        };
        json!({
            "cancelResult": result(&cancel),
            "newOrderResult": placed.as_ref().map_or("NOT_ATTEMPTED", result),
            "cancelResponse": body(cancel),
            "newOrderResponse": placed.map(body),
        })
    };
    let failed = |status: axum::http::StatusCode, data: Value| {
        let (code, msg) = if status != axum::http::StatusCode::BAD_REQUEST {
            (-2021, "Order cancel-replace partially failed.")
        } else {
            (-2022, "Order cancel-replace failed.")
        };
        Ok((
            status,
            Json(json!({"code": code, "msg": msg, "data": data})),
        )
            .into_response())
    };
    let counted = exchange
        .access
        .limiter
        .count_order(ip, account, now_ms())
        .await;
    if let Err(error) = counted {
        let limited = BinanceError::from(&error);
        let Some(target) = target.filter(|_| cancel_only_when_limited && cancel_refusal.is_none())
        else {
            return Err(limited);
        };
        let outcome = exchange
            .submit(Command::Cancel {
                account,
                market,
                order_id: target.order_id,
                cancel_client_id: cancel_given,
                time_ms: 0,
            })
            .await?;
        let canceled = canceled_order(&outcome, target.order_id)?;
        let cancel = Ok(cancel_json(
            &exchange.catalog,
            canceled,
            &cancel_client_id(&outcome),
        ));
        return failed(
            axum::http::StatusCode::TOO_MANY_REQUESTS,
            parts(cancel, Some(Err(&limited))),
        );
    }
    // Counted above even when not attempted, as Binance counts it.
    if let Some(refusal) = &cancel_refusal
        && !allow_failure
    {
        return failed(
            axum::http::StatusCode::BAD_REQUEST,
            parts(Err(refusal), None),
        );
    }
    let command = match (&target, &cancel_refusal) {
        (Some(target), None) => Command::Replace {
            account,
            market,
            order_id: target.order_id,
            order: Box::new(order),
            allow_failure,
            cancel_client_id: cancel_given,
            time_ms: 0,
        },
        _ => Command::Place {
            account,
            order,
            time_ms: 0,
        },
    };
    let outcome = exchange
        .sequencer
        .submit(command)
        .await
        .map_err(|_| BinanceError::unavailable())?;
    let unknown = BinanceError::from(Refusal::UnknownOrder);
    let cancel_failure = cancel_refusal.as_ref().unwrap_or(&unknown);
    if let Some(Event::Rejected(reject)) = outcome.events.first() {
        let refusal = BinanceError::from(*reject);
        // Refused whole: under STOP_ON_FAILURE the cancel failed (the order
        // ended meanwhile); under ALLOW_FAILURE both parts did.
        return if allow_failure {
            failed(
                axum::http::StatusCode::BAD_REQUEST,
                parts(Err(cancel_failure), Some(Err(&refusal))),
            )
        } else {
            failed(
                axum::http::StatusCode::BAD_REQUEST,
                parts(Err(&unknown), None),
            )
        };
    }
    let placed = outcome.changes.placed();
    let placed_answer = |order: &OrderView| {
        placed_json(
            &exchange.catalog,
            order,
            &outcome.changes.trades,
            response_type,
        )
    };
    let cancel_answer = |order_id: u64| -> Result<Value, BinanceError> {
        Ok(cancel_json(
            &exchange.catalog,
            canceled_order(&outcome, order_id)?,
            &cancel_client_id(&outcome),
        ))
    };
    let part_refused = outcome.events.iter().find_map(|e| match e {
        Event::PartRefused(reject) => Some(BinanceError::from(*reject)),
        _ => None,
    });
    let conflict = axum::http::StatusCode::CONFLICT;
    match (placed, &target, cancel_refusal.is_some(), part_refused) {
        // Only the new order went in: its cancel was refused up front.
        (Some(placed), _, true, _) => failed(
            conflict,
            parts(Err(cancel_failure), Some(Ok(placed_answer(placed)))),
        ),
        // The order had ended by the time the engine came to cancel it.
        (Some(placed), _, false, Some(_)) => failed(
            conflict,
            parts(Err(&unknown), Some(Ok(placed_answer(placed)))),
        ),
        (Some(placed), Some(target), false, None) => Ok(Json(parts(
            Ok(cancel_answer(target.order_id)?),
            Some(Ok(placed_answer(placed))),
        ))
        .into_response()),
        // The cancel stands; the new order was refused.
        (None, Some(target), false, Some(refusal)) => failed(
            conflict,
            parts(Ok(cancel_answer(target.order_id)?), Some(Err(&refusal))),
        ),
        _ => Err(BinanceError::unavailable()),
    }
}

/// The canceled order `order_id` among what `outcome` changed.
fn canceled_order(
    outcome: &weiport_exchange::sequencer::Outcome,
    order_id: u64,
) -> Result<&OrderView, BinanceError> {
    outcome
        .changes
        .orders
        .iter()
        .find(|(o, _)| o.order_id == order_id)
        .map(|(o, _)| o)
        .ok_or_else(BinanceError::unavailable)
}

/// `PUT /api/v3/order/amend/keepPriority`: reduces an order's quantity in
/// place; it keeps its id and its place in the queue, and takes a new
/// client order id (generated unless `newClientOrderId` is given).
pub(crate) async fn amend_order(
    State(exchange): State<Arc<Exchange>>,
    Signed {
        account, params, ..
    }: Signed,
) -> Answer {
    let (market, _) = market(&exchange.catalog, &params)?;
    let quantity = params
        .amount("newQty")?
        .ok_or_else(|| BinanceError::mandatory("newQty"))?;
    let unknown = || BinanceError::from(Refusal::UnknownOrderToAmend);
    let order = referenced_order(&exchange, account, market, &params)?
        .filter(|o| o.is_open())
        .ok_or_else(unknown)?;
    let name = params
        .client_id("newClientOrderId")?
        .unwrap_or_else(generated_client_id);
    let outcome = exchange
        .sequencer
        .submit(Command::Amend {
            account,
            market,
            order_id: order.order_id,
            quantity,
            client_order_id: Some(name),
            time_ms: 0,
        })
        .await
        .map_err(|_| BinanceError::unavailable())?;
    if let Some(Event::Rejected(reject)) = outcome.events.first() {
        return Err(match reject {
            weiport_exchange::engine::Reject::UnknownOrder => unknown(),
            weiport_exchange::engine::Reject::BadList => BinanceError::from(Refusal::AmendInPair),
            other => BinanceError::from(*other),
        });
    }
    let amended = canceled_order(&outcome, order.order_id)?;
    let mut out = json!({
        "transactTime": amended.update_ms,
        "executionId": outcome.sequence,
        "amendedOrder": {
            "symbol": exchange.catalog.symbol(market),
            "orderId": amended.order_id,
            "orderListId": list_id(amended),
            "origClientOrderId": order.client_order_id,
            "clientOrderId": amended.client_order_id,
            "price": amended.price.to_string(),
            "qty": amended.orig_qty.to_string(),
            "executedQty": amended.executed.to_string(),
            "preventedQty": weiport_exchange::Amount::ZERO.to_string(),
            "quoteOrderQty": amended.orig_quote_qty.to_string(),
            "cumulativeQuoteQty": amended.cumulative_quote.to_string(),
            "status": status_name(amended.status),
            "timeInForce": tif_name(amended.time_in_force),
            "type": type_name(amended.order_type),
            "side": side_name(amended.side),
            "selfTradePreventionMode": stp_name(amended.stp),
        },
    });
    if let Some(working) = amended.working_ms {
        out["amendedOrder"]["workingTime"] = json!(working);
    }
    if let Some(list) = list_of(&exchange, amended)? {
        let orders = list_orders(&exchange, &list)?;
        let shown = list_json(
            &exchange.catalog,
            &list,
            &orders.iter().collect::<Vec<_>>(),
            None,
        );
        out["listStatus"] = json!({
            "orderListId": shown["orderListId"],
            "contingencyType": shown["contingencyType"],
            "listOrderStatus": shown["listOrderStatus"],
            "listClientOrderId": shown["listClientOrderId"],
            "symbol": shown["symbol"],
            "orders": shown["orders"],
        });
    }
    Ok(Json(out).into_response())
}
