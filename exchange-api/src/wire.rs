//! Binance's wire shapes and names, shared by the REST handlers and the streams.

use axum::Json;
use axum::body::Bytes;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use weiport_exchange::amount::Amount;
use weiport_exchange::catalog::Catalog;
use weiport_exchange::engine::{OrderStatus, Trade};
use weiport_exchange::history::{ListView, OrderView};
use weiport_exchange::market::StpMode;
use weiport_exchange::now_ms;
use weiport_exchange::order::{Contingency, OrderType, ResponseType, Side, TimeInForce};
use weiport_exchange::sequencer::Outcome;
use weiport_storage::CandleRow;

pub(crate) fn status_name(status: OrderStatus) -> &'static str {
    match status {
        OrderStatus::New => "NEW",
        OrderStatus::PartiallyFilled => "PARTIALLY_FILLED",
        OrderStatus::Filled => "FILLED",
        OrderStatus::Canceled => "CANCELED",
        OrderStatus::Rejected => "REJECTED",
        OrderStatus::Expired => "EXPIRED",
        OrderStatus::ExpiredInMatch => "EXPIRED_IN_MATCH",
        OrderStatus::PendingNew => "PENDING_NEW",
    }
}

pub(crate) fn side_name(side: Side) -> &'static str {
    match side {
        Side::Buy => "BUY",
        Side::Sell => "SELL",
    }
}

pub(crate) fn type_name(order_type: OrderType) -> &'static str {
    match order_type {
        OrderType::Limit => "LIMIT",
        OrderType::Market => "MARKET",
        OrderType::LimitMaker => "LIMIT_MAKER",
        OrderType::StopLoss => "STOP_LOSS",
        OrderType::StopLossLimit => "STOP_LOSS_LIMIT",
        OrderType::TakeProfit => "TAKE_PROFIT",
        OrderType::TakeProfitLimit => "TAKE_PROFIT_LIMIT",
    }
}

pub(crate) fn tif_name(tif: TimeInForce) -> &'static str {
    match tif {
        TimeInForce::Gtc => "GTC",
        TimeInForce::Ioc => "IOC",
        TimeInForce::Fok => "FOK",
    }
}

pub(crate) fn stp_name(stp: StpMode) -> &'static str {
    match stp {
        StpMode::None => "NONE",
        StpMode::ExpireTaker => "EXPIRE_TAKER",
        StpMode::ExpireMaker => "EXPIRE_MAKER",
        StpMode::ExpireBoth => "EXPIRE_BOTH",
        StpMode::Decrement => "DECREMENT",
    }
}

/// An order in the shape of `GET /api/v3/order`.
pub(crate) fn order_json(catalog: &Catalog, order: &OrderView) -> Value {
    let mut out = json!({
        "symbol": catalog.symbol(order.market),
        "orderId": order.order_id,
        "orderListId": list_id(order),
        "clientOrderId": order.client_order_id,
        "price": order.price.to_string(),
        "origQty": order.orig_qty.to_string(),
        "executedQty": order.executed.to_string(),
        "cummulativeQuoteQty": order.cumulative_quote.to_string(),
        "status": status_name(order.status),
        "timeInForce": tif_name(order.time_in_force),
        "type": type_name(order.order_type),
        "side": side_name(order.side),
        "stopPrice": order.stop_price.unwrap_or_default().to_string(),
        "icebergQty": Amount::ZERO.to_string(),
        "time": order.time_ms,
        "updateTime": order.update_ms,
        "isWorking": order.working_ms.is_some(),
        "workingTime": working_time(order),
        "origQuoteOrderQty": order.orig_quote_qty.to_string(),
        "selfTradePreventionMode": stp_name(order.stp),
    });
    add_trailing(&mut out, order);
    out
}

/// Its order list's id, -1 for an order on its own.
pub(crate) fn list_id(order: &OrderView) -> i64 {
    order.order_list_id.map_or(-1, |id| id as i64)
}

pub(crate) fn contingency_name(contingency: Contingency) -> &'static str {
    match contingency {
        Contingency::Oco => "OCO",
        // Binance reports an OTOCO as an OTO whose pending orders are a pair.
        Contingency::Oto | Contingency::Otoco => "OTO",
    }
}

/// An order list in Binance's shape, its status from its `orders`: done
/// once every one has ended. `reports` (placing and canceling answer them)
/// become `orderReports`.
pub(crate) fn list_json(
    catalog: &Catalog,
    list: &ListView,
    orders: &[&OrderView],
    reports: Option<Vec<Value>>,
) -> Value {
    let done = !orders.is_empty() && orders.iter().all(|o| !o.is_open());
    let symbol = catalog.symbol(list.market);
    let mut out = json!({
        "orderListId": list.list_id,
        "contingencyType": contingency_name(list.contingency),
        "listStatusType": if done { "ALL_DONE" } else { "EXEC_STARTED" },
        "listOrderStatus": if done { "ALL_DONE" } else { "EXECUTING" },
        "listClientOrderId": list.list_client_id,
        "transactionTime": orders.iter().map(|o| o.update_ms).max().unwrap_or(list.time_ms),
        "symbol": symbol,
        "orders": orders
            .iter()
            .map(|o| json!({"symbol": symbol, "orderId": o.order_id, "clientOrderId": o.client_order_id}))
            .collect::<Vec<_>>(),
    });
    if let Some(reports) = reports {
        out["orderReports"] = Value::Array(reports);
    }
    out
}

/// When the order began working, -1 while a conditional order waits.
pub(crate) fn working_time(order: &OrderView) -> i64 {
    order.working_ms.map_or(-1, |ms| ms as i64)
}

/// Binance's conditional fields of a trailing order: `trailingDelta` and
/// `trailingTime` (-1 until it tracks the price).
pub(crate) fn add_trailing(out: &mut Value, order: &OrderView) {
    if let Some(delta) = order.trailing_delta {
        out["trailingDelta"] = json!(delta);
        out["trailingTime"] = json!(order.trailing_ms.map_or(-1, |ms| ms as i64));
    }
}

/// A cancel report, as `DELETE /api/v3/order` answers.
pub(crate) fn cancel_json(catalog: &Catalog, order: &OrderView, cancel_id: &str) -> Value {
    json!({
        "symbol": catalog.symbol(order.market),
        "origClientOrderId": order.client_order_id,
        "orderId": order.order_id,
        "orderListId": list_id(order),
        "clientOrderId": cancel_id,
        "transactTime": order.update_ms,
        "price": order.price.to_string(),
        "origQty": order.orig_qty.to_string(),
        "executedQty": order.executed.to_string(),
        "origQuoteOrderQty": order.orig_quote_qty.to_string(),
        "cummulativeQuoteQty": order.cumulative_quote.to_string(),
        "status": status_name(order.status),
        "timeInForce": tif_name(order.time_in_force),
        "type": type_name(order.order_type),
        "side": side_name(order.side),
        "selfTradePreventionMode": stp_name(order.stp),
    })
}

/// Base-62 digits in ASCII order, so encoded numbers sort like the numbers.
pub(crate) const BASE62: &[u8; 62] =
    b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Client order id for a request that named none: 22 characters, like
/// Binance's. Time first, then a process-wide counter, so successive ids
/// sort in order and the client-id index grows at its end rather than at
/// random places (a random insert is a full skip-list search in RocksDB's
/// memtable); a random tail keeps ids apart across restarts and clock steps.
pub(crate) fn generated_client_id() -> String {
    use rand::Rng;
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    client_id_at(
        now_ms(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        rand::rng().random(),
    )
}

/// The client id of the cancel `outcome` made: the one its client gave,
/// else one made from the command's place in the log, so that the REST
/// answer and the user stream (on every process of a cluster) name it alike.
/// One request, one id: a list's or an account's orders canceled together
/// share it.
pub(crate) fn cancel_client_id(outcome: &Outcome) -> String {
    match &outcome.changes.cancel_client_id {
        Some(id) => id.clone(),
        None => client_id_at(outcome.time_ms.unwrap_or(0), 0, outcome.sequence),
    }
}

/// Milliseconds in 8 digits (62^8 ms is some 6,900 years), the counter in 6
/// (wrapping), the random tail in 8.
pub(crate) fn client_id_at(time_ms: u64, counter: u64, tail: u64) -> String {
    let mut id = [0u8; 22];
    for (digits, mut value) in [(0..8, time_ms), (8..14, counter), (14..22, tail)] {
        for at in digits.rev() {
            id[at] = BASE62[(value % 62) as usize];
            value /= 62;
        }
    }
    id.iter().map(|&b| b as char).collect()
}

pub(crate) fn trade_json(trade: &Trade) -> Value {
    json!({
        "id": trade.trade_id,
        "price": trade.price.to_string(),
        "qty": trade.quantity.to_string(),
        "quoteQty": trade.quote_quantity.to_string(),
        "time": trade.time_ms,
        "isBuyerMaker": trade.taker_side == Side::Sell,
        "isBestMatch": true,
    })
}

/// A kline in Binance's array shape; `candle` spans `open_time..close_time`.
pub(crate) fn kline_json(candle: &CandleRow, close_time: u64) -> Value {
    let amount = |units: u64| Amount::from_units(units).to_string();
    json!([
        candle.open_time,
        amount(candle.open),
        amount(candle.high),
        amount(candle.low),
        amount(candle.close),
        amount(candle.volume),
        close_time,
        amount(candle.quote_volume),
        candle.trades(),
        amount(candle.taker_buy_volume),
        amount(candle.taker_buy_quote_volume),
        "0"
    ])
}

/// The part of a new order's answer every `newOrderRespType` has.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Acknowledgement<'a> {
    pub(crate) symbol: &'a str,
    pub(crate) order_id: u64,
    pub(crate) order_list_id: i64,
    pub(crate) client_order_id: &'a str,
    pub(crate) transact_time: u64,
}

pub(crate) fn one_or_many(values: Vec<Value>, single: bool) -> Response {
    if single {
        Json(values.into_iter().next().unwrap_or(Value::Null)).into_response()
    } else {
        Json(Value::Array(values)).into_response()
    }
}

pub(crate) fn json_body(body: Bytes) -> Response {
    (
        [(axum::http::header::CONTENT_TYPE, weiport_access::JSON)],
        body,
    )
        .into_response()
}

pub(crate) fn acknowledgement<'a>(
    catalog: &'a Catalog,
    order: &'a OrderView,
) -> Acknowledgement<'a> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_client_ids_are_binance_shaped_and_sort_by_time_then_counter() {
        let ids = [
            client_id_at(1_700_000_000_000, 61, u64::MAX),
            client_id_at(1_700_000_000_000, 62, 0),
            client_id_at(1_700_000_000_001, 0, 7),
            client_id_at(1_700_000_000_001, 1, 3),
        ];
        for id in &ids {
            assert_eq!(id.len(), 22, "{id}");
            assert!(id.bytes().all(|b| b.is_ascii_alphanumeric()), "{id}");
        }
        assert!(ids.windows(2).all(|pair| pair[0] < pair[1]), "{ids:?}");
        assert_ne!(generated_client_id(), generated_client_id());
    }
}
