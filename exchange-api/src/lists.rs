//! Order lists: place an OCO, OTO or OTOCO (and the legacy OCO), query one,
//! all or the open ones, cancel one.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::response::IntoResponse;
use serde_json::Value;
use weiport_exchange::engine::{AccountId, Command};
use weiport_exchange::history::{Changes, ListView, OrderView};
use weiport_exchange::order::{Contingency, NewOrder, NewOrderList, OrderType, ResponseType};
use weiport_storage::ScanDirection;

use crate::account::time_window;
use crate::error::{Answer, BinanceError, Refusal};
use crate::exchange::{Exchange, first, latest, stored};
use crate::extract::Signed;
use crate::order_params::{OrderNames, validated_order_named};
use crate::params::{CLIENT_ID_RANGE, Params, integer, limit, market};
use crate::wire::{cancel_client_id, cancel_json, generated_client_id, list_json, placed_json};

/// The price an order of a pair is placed at: its limit for a post-only
/// order, else its stop price (none for a trailing order without one).
fn level(order: &NewOrder) -> Option<weiport_exchange::Amount> {
    if order.order_type == OrderType::LimitMaker {
        order.price
    } else {
        order.trigger.and_then(|t| t.stop_price)
    }
}

/// An OCO pair, below first: its orders must lie on either side of each other.
fn pair(below: NewOrder, above: NewOrder) -> Result<Vec<NewOrder>, BinanceError> {
    // One stop-loss, and one take-profit or post-only order.
    let stop_loss =
        |o: &NewOrder| matches!(o.order_type, OrderType::StopLoss | OrderType::StopLossLimit);
    if stop_loss(&below) == stop_loss(&above) {
        return Err(BinanceError::from(Refusal::UnsupportedCombination));
    }
    if let (Some(low), Some(high)) = (level(&below), level(&above))
        && low >= high
    {
        return Err(BinanceError::from(Refusal::ListPrices));
    }
    Ok(vec![below, above])
}

fn leg(exchange: &Exchange, params: &Params, names: &OrderNames) -> Result<NewOrder, BinanceError> {
    validated_order_named(exchange, params, names, None)
}

pub(crate) async fn place_oco(State(exchange): State<Arc<Exchange>>, signed: Signed) -> Answer {
    let params = &signed.params;
    let below = leg(&exchange, params, &OrderNames::BELOW)?;
    let above = leg(&exchange, params, &OrderNames::ABOVE)?;
    let list = NewOrderList {
        market: below.market,
        contingency: Contingency::Oco,
        working: None,
        pending: pair(below, above)?,
        list_client_id: list_client_id(params)?,
    };
    place(&exchange, signed.account, list).await
}

/// `POST /api/v3/order/oco`: a post-only order at `price` and a stop at
/// `stopPrice` (a stop-limit at `stopLimitPrice`), for the same side and
/// quantity; a sell's limit is above the market, a buy's below.
pub(crate) async fn place_legacy_oco(
    State(exchange): State<Arc<Exchange>>,
    signed: Signed,
) -> Answer {
    let params = &signed.params;
    let limit = validated_order_named(
        &exchange,
        params,
        &OrderNames::LEGACY_LIMIT,
        Some(OrderType::LimitMaker),
    )?;
    let stop_type = if params.get("stopLimitPrice").is_some() {
        OrderType::StopLossLimit
    } else {
        OrderType::StopLoss
    };
    let stop = validated_order_named(&exchange, params, &OrderNames::LEGACY_STOP, Some(stop_type))?;
    let legs = match limit.side {
        weiport_exchange::order::Side::Sell => pair(stop, limit)?,
        weiport_exchange::order::Side::Buy => pair(limit, stop)?,
    };
    let list = NewOrderList {
        market: legs[0].market,
        contingency: Contingency::Oco,
        working: None,
        pending: legs,
        list_client_id: list_client_id(params)?,
    };
    place(&exchange, signed.account, list).await
}

pub(crate) async fn place_oto(State(exchange): State<Arc<Exchange>>, signed: Signed) -> Answer {
    let params = &signed.params;
    let working = leg(&exchange, params, &OrderNames::WORKING)?;
    let pending = leg(&exchange, params, &OrderNames::PENDING)?;
    let list = NewOrderList {
        market: working.market,
        contingency: Contingency::Oto,
        working: Some(working),
        pending: vec![pending],
        list_client_id: list_client_id(params)?,
    };
    place(&exchange, signed.account, list).await
}

pub(crate) async fn place_otoco(State(exchange): State<Arc<Exchange>>, signed: Signed) -> Answer {
    let params = &signed.params;
    let working = leg(&exchange, params, &OrderNames::WORKING)?;
    let below = leg(&exchange, params, &OrderNames::PENDING_BELOW)?;
    let above = leg(&exchange, params, &OrderNames::PENDING_ABOVE)?;
    let list = NewOrderList {
        market: working.market,
        contingency: Contingency::Otoco,
        working: Some(working),
        pending: pair(below, above)?,
        list_client_id: list_client_id(params)?,
    };
    place(&exchange, signed.account, list).await
}

fn list_client_id(params: &Params) -> Result<Option<String>, BinanceError> {
    match params.get("listClientOrderId") {
        Some(id)
            if id.is_empty()
                || id.len() > 36
                || !id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)) =>
        {
            Err(BinanceError::from(Refusal::IllegalCharacters {
                name: "listClientOrderId",
                range: CLIENT_ID_RANGE,
            }))
        }
        id => Ok(id.map(str::to_owned)),
    }
}

/// Submits `list` (client ids generated where none were given) and
/// answers with the list and a report of each of its orders.
async fn place(exchange: &Exchange, account: AccountId, mut list: NewOrderList) -> Answer {
    for order in list.working.iter_mut().chain(&mut list.pending) {
        order
            .client_order_id
            .get_or_insert_with(generated_client_id);
    }
    list.list_client_id.get_or_insert_with(generated_client_id);
    let outcome = exchange
        .submit(Command::PlaceList {
            account,
            list: Box::new(list),
            time_ms: 0,
        })
        .await?;
    let list = outcome
        .changes
        .list
        .as_ref()
        .ok_or_else(BinanceError::unavailable)?;
    let orders: Vec<&OrderView> = list
        .order_ids
        .iter()
        .filter_map(|id| {
            outcome
                .changes
                .orders
                .iter()
                .find(|(o, _)| o.order_id == *id)
                .map(|(o, _)| o)
        })
        .collect();
    let reports = orders
        .iter()
        .map(|o| order_report(&exchange.catalog, o))
        .collect();
    Ok(Json(list_json(&exchange.catalog, list, &orders, Some(reports))).into_response())
}

/// The orders of `list` as stored.
pub(crate) fn list_orders(
    exchange: &Exchange,
    list: &ListView,
) -> Result<Vec<OrderView>, BinanceError> {
    list.order_ids
        .iter()
        .map(|id| {
            stored(exchange.history.order(list.market, *id))?.ok_or_else(BinanceError::unavailable)
        })
        .collect()
}

fn shown(exchange: &Exchange, list: &ListView) -> Result<Value, BinanceError> {
    let orders = list_orders(exchange, list)?;
    let orders: Vec<&OrderView> = orders.iter().collect();
    Ok(list_json(&exchange.catalog, list, &orders, None))
}

fn no_such_list() -> BinanceError {
    BinanceError::from(Refusal::NoSuchOrderList)
}

/// The list `orderListId` (or `param_for_client`) of `account` names.
fn referenced_list(
    exchange: &Exchange,
    account: AccountId,
    params: &Params,
    param_for_client: &str,
) -> Result<ListView, BinanceError> {
    let id = integer(params, "orderListId")?;
    let client = params.get(param_for_client);
    if id.is_none() && client.is_none() {
        return Err(BinanceError::from(Refusal::EitherOf(
            "orderListId",
            param_for_client,
        )));
    }
    stored(exchange.history.find_order_list(account, id, client))?
        .filter(|l| client.is_none_or(|c| c == l.list_client_id))
        .ok_or_else(no_such_list)
}

pub(crate) async fn query_list(
    State(exchange): State<Arc<Exchange>>,
    Signed {
        account, params, ..
    }: Signed,
) -> Answer {
    let list = referenced_list(&exchange, account, &params, "origClientOrderId")?;
    Ok(Json(shown(&exchange, &list)?).into_response())
}

pub(crate) async fn all_lists(
    State(exchange): State<Arc<Exchange>>,
    Signed {
        account, params, ..
    }: Signed,
) -> Answer {
    let limit = limit(&params, 500, 1000)?;
    let from = integer(&params, "fromId")?;
    let (start, end) = time_window(&params)?;
    let (start, end) = (start.unwrap_or(0), end.unwrap_or(u64::MAX));
    let history = &exchange.history;
    let in_window = |l: &Result<ListView, _>| {
        l.as_ref()
            .map_or(true, |l| (start..=end).contains(&l.time_ms))
    };
    let lists = match from {
        Some(from) => first(
            history
                .account_order_lists(account, from, ScanDirection::Forward)
                .filter(in_window),
            limit,
        )?,
        None => latest(
            history
                .account_order_lists(account, u64::MAX, ScanDirection::Backward)
                .filter(in_window),
            limit,
        )?,
    };
    let out = lists
        .iter()
        .map(|l| shown(&exchange, l))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Json(Value::Array(out)).into_response())
}

pub(crate) async fn open_lists(
    State(exchange): State<Arc<Exchange>>,
    Signed { account, .. }: Signed,
) -> Answer {
    let mut ids: Vec<u64> = {
        let view = exchange.sequencer.view();
        view.accounts
            .get(&account)
            .map(|a| {
                a.open
                    .iter()
                    .filter_map(|(m, id)| view.open_order(account, *m, *id))
                    .filter_map(|o| o.order_list_id)
                    .collect()
            })
            .unwrap_or_default()
    };
    ids.sort_unstable();
    ids.dedup();
    let mut out = Vec::new();
    for id in ids {
        if let Some(list) = stored(exchange.history.find_order_list(account, Some(id), None))? {
            out.push(shown(&exchange, &list)?);
        }
    }
    Ok(Json(Value::Array(out)).into_response())
}

pub(crate) async fn cancel_list(
    State(exchange): State<Arc<Exchange>>,
    Signed {
        account, params, ..
    }: Signed,
) -> Answer {
    let (market, _) = market(&exchange.catalog, &params)?;
    let list = referenced_list(&exchange, account, &params, "listClientOrderId")?;
    if list.market != market {
        return Err(no_such_list());
    }
    let outcome = exchange
        .submit(Command::CancelList {
            account,
            market,
            list_id: list.list_id,
            cancel_client_id: params.client_id("newClientOrderId")?,
            time_ms: 0,
        })
        .await?;
    if outcome.changes.orders.is_empty() {
        return Err(BinanceError::from(Refusal::UnknownOrder));
    }
    let cancel_id = cancel_client_id(&outcome);
    Ok(Json(list_canceled(
        &exchange,
        &list,
        &outcome.changes,
        &cancel_id,
    )?)
    .into_response())
}

/// A canceled list as Binance answers its cancel: the list, done, with a
/// cancel report of each order the cancel ended.
pub(crate) fn list_canceled(
    exchange: &Exchange,
    list: &ListView,
    changes: &Changes,
    cancel_id: &str,
) -> Result<Value, BinanceError> {
    let canceled: Vec<&OrderView> = changes
        .orders
        .iter()
        .map(|(o, _)| o)
        .filter(|o| o.order_list_id == Some(list.list_id))
        .collect();
    let orders = list_orders(exchange, list)?;
    let orders: Vec<&OrderView> = orders
        .iter()
        .map(|o| {
            canceled
                .iter()
                .copied()
                .find(|c| c.order_id == o.order_id)
                .unwrap_or(o)
        })
        .collect();
    let reports = canceled
        .iter()
        .map(|o| cancel_json(&exchange.catalog, o, cancel_id))
        .collect();
    Ok(list_json(&exchange.catalog, list, &orders, Some(reports)))
}

/// The list order `order` belongs to.
pub(crate) fn list_of(
    exchange: &Exchange,
    order: &OrderView,
) -> Result<Option<ListView>, BinanceError> {
    match order.order_list_id {
        Some(id) => stored(
            exchange
                .history
                .find_order_list(order.account, Some(id), None),
        ),
        None => Ok(None),
    }
}

/// An order as a list's `orderReports` show it (Binance's RESULT shape).
fn order_report(catalog: &weiport_exchange::Catalog, order: &OrderView) -> Value {
    placed_json(catalog, order, &[], ResponseType::Result)
}
