//! Handlers of the Binance Spot-compatible REST API over the sequencer and
//! its read side: market data, orders, account and history.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use weiport_access::params::BodyKind;
use weiport_access::{Access, ApiKey, Caller};

use weiport_exchange::amount::Amount;
use weiport_exchange::catalog::{Catalog, MarketId};
use weiport_storage::{CandleRow, CandleSpan, ScanDirection};

use crate::error::BinanceError;
use crate::params::Params;
use weiport_exchange::engine::{AccountId, Command, Event, OrderStatus, Reject, Trade};
use weiport_exchange::history::{
    CANDLE_MS, Dated, History, HistoryError, OrderView, candle_of, merge_earlier, merge_later,
};
use weiport_exchange::market::{Market, StpMode};
use weiport_exchange::now_ms;
use weiport_exchange::order::{NewOrder, OrderType, ResponseType, Side, TimeInForce};
use weiport_exchange::sequencer::{Outcome, Sequencer};
use weiport_exchange::view::{MarketView, View};

/// The exchange as the API sees it: the markets, the engine behind its
/// sequencer, and the access layer (for order-count figures).
pub struct Exchange {
    /// Markets and assets.
    pub catalog: Arc<Catalog>,
    /// The engine thread.
    pub sequencer: Sequencer,
    /// Orders, trades and candles in storage.
    pub history: History,
    /// Keys and limits.
    pub access: Arc<Access>,
    /// Last `depth` body per market and limit, with the book version it shows.
    pub depth_cache: std::sync::Mutex<std::collections::HashMap<(MarketId, usize), (u64, Bytes)>>,
}

type Answer = Result<Response, BinanceError>;

fn unauthorized() -> BinanceError {
    BinanceError::new(
        axum::http::StatusCode::UNAUTHORIZED,
        -2015,
        "Invalid API-key, IP, or permissions for action.",
    )
}

/// The parameter names a route reads, in groups; set on each route by the
/// route table, read by the extractors to refuse anything else (-1104).
#[derive(Clone, Copy)]
pub(crate) struct Accepted(pub(crate) &'static [&'static [&'static str]]);

/// What every signed request may carry besides the endpoint's own parameters.
const SIGNED: &[&str] = &["timestamp", "recvWindow"];

fn accepted(extensions: &axum::http::Extensions) -> &'static [&'static [&'static str]] {
    extensions
        .get::<Accepted>()
        .map_or(&[], |accepted| accepted.0)
}

/// The parameters of a public request (query string only).
pub(crate) struct Query(pub(crate) Params);

impl<S: Send + Sync> FromRequestParts<S> for Query {
    type Rejection = BinanceError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or("");
        // A client that signs every request may sign public ones too: the
        // signature's parameters are read (and change nothing) there.
        let own = accepted(&parts.extensions);
        let mut groups: Vec<&[&str]> = Vec::with_capacity(own.len() + 1);
        groups.extend_from_slice(own);
        groups.push(SIGNED);
        Params::parse(query, b"", BodyKind::Form, &groups).map(Self)
    }
}

/// A request that passed the access guard with a key: the key, its
/// account, and the parameters from the query and a form or JSON body.
pub(crate) struct Signed {
    pub(crate) key: Arc<ApiKey>,
    pub(crate) account: AccountId,
    pub(crate) params: Params,
}

impl<S: Send + Sync> FromRequest<S> for Signed {
    type Rejection = Response;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let key = request
            .extensions()
            .get::<Caller>()
            .and_then(|caller| caller.key.clone())
            .ok_or_else(|| unauthorized().into_response())?;
        let query = request.uri().query().unwrap_or("").to_owned();
        let kind = BodyKind::of(request.headers());
        let own = accepted(request.extensions());
        let body = Bytes::from_request(request, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let mut groups: Vec<&[&str]> = Vec::with_capacity(own.len() + 1);
        groups.extend_from_slice(own);
        groups.push(SIGNED);
        let params =
            Params::parse(&query, &body, kind, &groups).map_err(IntoResponse::into_response)?;
        Ok(Self {
            account: key.account,
            key,
            params,
        })
    }
}

fn bad_symbol() -> BinanceError {
    BinanceError::bad(-1121, "Invalid symbol.")
}

fn market<'a>(
    catalog: &'a Catalog,
    params: &Params,
) -> Result<(MarketId, &'a Market), BinanceError> {
    let symbol = params.required("symbol")?;
    let id = catalog.market_id(symbol).ok_or_else(bad_symbol)?;
    Ok((id, catalog.market(id).ok_or_else(bad_symbol)?))
}

/// `symbol`, `symbols` (a JSON array) or neither (every market).
fn markets(catalog: &Catalog, params: &Params) -> Result<(Vec<MarketId>, bool), BinanceError> {
    match (params.get("symbol"), params.get("symbols")) {
        (Some(_), Some(_)) => Err(BinanceError::bad(
            -1128,
            "Combination of optional parameters invalid.",
        )),
        (Some(symbol), None) => Ok((
            vec![catalog.market_id(symbol).ok_or_else(bad_symbol)?],
            true,
        )),
        (None, Some(list)) => {
            let names: Vec<String> = serde_json::from_str(list).map_err(|_| {
                BinanceError::bad(-1100, "Illegal characters found in parameter 'symbols'; legal range is '^\\[(\"[A-Z0-9-_.]{1,20}\"(,\"[A-Z0-9-_.]{1,20}\"){0,}){0,1}\\]$'.")
            })?;
            if names.is_empty() {
                return Err(BinanceError::mandatory("symbols"));
            }
            let mut ids = Vec::new();
            for name in names {
                let id = catalog.market_id(&name).ok_or_else(bad_symbol)?;
                if ids.contains(&id) {
                    return Err(BinanceError::bad(
                        -1151,
                        "Symbol is present multiple times in the list.",
                    ));
                }
                ids.push(id);
            }
            Ok((ids, false))
        }
        (None, None) => Ok((catalog.markets().map(|(id, _)| id).collect(), false)),
    }
}

fn one_or_many(values: Vec<Value>, single: bool) -> Response {
    if single {
        Json(values.into_iter().next().unwrap_or(Value::Null)).into_response()
    } else {
        Json(Value::Array(values)).into_response()
    }
}

fn integer(params: &Params, name: &str) -> Result<Option<u64>, BinanceError> {
    params
        .get(name)
        .map(|text| {
            text.parse::<u64>().map_err(|_| {
                BinanceError::bad(-1100, format!("Illegal characters found in parameter '{name}'; legal range is '^[0-9]{{1,20}}$'."))
            })
        })
        .transpose()
}

fn limit(params: &Params, default: usize, max: usize) -> Result<usize, BinanceError> {
    Ok(match integer(params, "limit")? {
        None => default,
        Some(0) => default,
        Some(n) => (n as usize).min(max),
    })
}

fn boolean(params: &Params, name: &str) -> bool {
    params.get(name) == Some("true")
}

fn status_name(status: OrderStatus) -> &'static str {
    match status {
        OrderStatus::New => "NEW",
        OrderStatus::PartiallyFilled => "PARTIALLY_FILLED",
        OrderStatus::Filled => "FILLED",
        OrderStatus::Canceled => "CANCELED",
        OrderStatus::Rejected => "REJECTED",
        OrderStatus::Expired => "EXPIRED",
        OrderStatus::ExpiredInMatch => "EXPIRED_IN_MATCH",
    }
}

fn side_name(side: Side) -> &'static str {
    match side {
        Side::Buy => "BUY",
        Side::Sell => "SELL",
    }
}

fn type_name(order_type: OrderType) -> &'static str {
    match order_type {
        OrderType::Limit => "LIMIT",
        OrderType::Market => "MARKET",
        OrderType::LimitMaker => "LIMIT_MAKER",
    }
}

fn tif_name(tif: TimeInForce) -> &'static str {
    match tif {
        TimeInForce::Gtc => "GTC",
        TimeInForce::Ioc => "IOC",
        TimeInForce::Fok => "FOK",
    }
}

fn stp_name(stp: StpMode) -> &'static str {
    match stp {
        StpMode::None => "NONE",
        StpMode::ExpireTaker => "EXPIRE_TAKER",
        StpMode::ExpireMaker => "EXPIRE_MAKER",
        StpMode::ExpireBoth => "EXPIRE_BOTH",
    }
}

/// An order in the shape of `GET /api/v3/order`.
fn order_json(catalog: &Catalog, order: &OrderView) -> Value {
    json!({
        "symbol": catalog.symbol(order.market),
        "orderId": order.order_id,
        "orderListId": -1,
        "clientOrderId": order.client_order_id,
        "price": order.price.to_string(),
        "origQty": order.orig_qty.to_string(),
        "executedQty": order.executed.to_string(),
        "cummulativeQuoteQty": order.cumulative_quote.to_string(),
        "status": status_name(order.status),
        "timeInForce": tif_name(order.time_in_force),
        "type": type_name(order.order_type),
        "side": side_name(order.side),
        "stopPrice": Amount::ZERO.to_string(),
        "icebergQty": Amount::ZERO.to_string(),
        "time": order.time_ms,
        "updateTime": order.update_ms,
        "isWorking": true,
        "workingTime": order.time_ms,
        "origQuoteOrderQty": order.orig_quote_qty.to_string(),
        "selfTradePreventionMode": stp_name(order.stp),
    })
}

/// A cancel report, as `DELETE /api/v3/order` answers.
fn cancel_json(catalog: &Catalog, order: &OrderView, cancel_id: &str) -> Value {
    json!({
        "symbol": catalog.symbol(order.market),
        "origClientOrderId": order.client_order_id,
        "orderId": order.order_id,
        "orderListId": -1,
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

fn engine_refusal(reject: Reject) -> BinanceError {
    let (code, msg) = match reject {
        Reject::UnknownSymbol => (-1121, "Invalid symbol."),
        Reject::UnknownAsset => (-1130, "Data sent for parameter 'asset' is not valid."),
        Reject::InsufficientBalance => (
            -2010,
            "Account has insufficient balance for requested action.",
        ),
        Reject::WouldTake => (-2010, "Order would immediately match and take."),
        Reject::UnknownOrder => (-2011, "Unknown order sent."),
        Reject::DuplicateClientOrderId => (-2010, "Duplicate order sent."),
        Reject::TooManyOrders => (-2010, "Filter failure: MAX_NUM_ORDERS"),
        Reject::Overflow => (-1108, "Parameter 'quantity' overflowed."),
        Reject::OffGrid => (-1013, "Filter failure: LOT_SIZE"),
    };
    BinanceError::bad(code, msg)
}

fn unavailable() -> BinanceError {
    BinanceError::new(
        axum::http::StatusCode::SERVICE_UNAVAILABLE,
        -1001,
        "Internal error; unable to process your request. Please try again.",
    )
}

/// Sequences `command`; the engine's refusal comes back as Binance's error.
async fn submit(exchange: &Exchange, command: Command) -> Result<Arc<Outcome>, BinanceError> {
    let outcome = exchange.sequencer.submit(command).await.map_err(|error| {
        tracing::error!(%error, "the exchange engine refused work");
        unavailable()
    })?;
    match outcome.events.first() {
        Some(Event::Rejected(reject)) => Err(engine_refusal(*reject)),
        _ => Ok(outcome),
    }
}

/// A history read's result, its failure logged and answered as Binance's internal error.
fn stored<T>(result: Result<T, HistoryError>) -> Result<T, BinanceError> {
    result.map_err(|error| {
        tracing::error!(%error, "reading the exchange history failed");
        unavailable()
    })
}

/// The first `limit` items of `rows`, stopping at the first failure.
fn first<T>(
    rows: impl Iterator<Item = Result<T, HistoryError>>,
    limit: usize,
) -> Result<Vec<T>, BinanceError> {
    stored(rows.take(limit).collect())
}

/// The last `limit` items before `from`, read backwards, in ascending order.
fn latest<T>(
    rows: impl Iterator<Item = Result<T, HistoryError>>,
    limit: usize,
) -> Result<Vec<T>, BinanceError> {
    let mut out = first(rows, limit)?;
    out.reverse();
    Ok(out)
}

/// Base-62 digits in ASCII order, so encoded numbers sort like the numbers.
const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Client order id for a request that named none: 22 characters, like
/// Binance's. Time first, then a process-wide counter, so successive ids
/// sort in order and the client-id index grows at its end rather than at
/// random places (a random insert is a full skip-list search in RocksDB's
/// memtable); a random tail keeps ids apart across restarts and clock steps.
fn generated_client_id() -> String {
    use rand::Rng;
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    client_id_at(
        now_ms(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        rand::rng().random(),
    )
}

/// Milliseconds in 8 digits (62^8 ms is some 6,900 years), the counter in 6
/// (wrapping), the random tail in 8.
fn client_id_at(time_ms: u64, counter: u64, tail: u64) -> String {
    let mut id = [0u8; 22];
    for (digits, mut value) in [(0..8, time_ms), (8..14, counter), (14..22, tail)] {
        for at in digits.rev() {
            id[at] = BASE62[(value % 62) as usize];
            value /= 62;
        }
    }
    id.iter().map(|&b| b as char).collect()
}

// ---------------------------------------------------------------- market data

pub(crate) async fn exchange_info(
    State(exchange): State<Arc<Exchange>>,
    Query(params): Query,
) -> Answer {
    let (mut ids, _) = markets(&exchange.catalog, &params)?;
    // Every market here trades; asking for halted ones finds none.
    match params.get("symbolStatus") {
        None | Some("TRADING") => {}
        Some("HALT" | "BREAK") => ids.clear(),
        Some(_) => {
            return Err(BinanceError::bad(
                -1130,
                "Data sent for parameter 'symbolStatus' is not valid.",
            ));
        }
    }
    let limits = exchange.access.limiter.config();
    let symbols: Vec<Value> = ids
        .iter()
        .filter_map(|id| exchange.catalog.market(*id))
        .map(|m| {
            json!({
                "symbol": m.symbol, "status": "TRADING",
                "baseAsset": m.base, "baseAssetPrecision": 8,
                "quoteAsset": m.quote, "quotePrecision": 8, "quoteAssetPrecision": 8,
                "baseCommissionPrecision": 8, "quoteCommissionPrecision": 8,
                "orderTypes": ["LIMIT", "LIMIT_MAKER", "MARKET"],
                "icebergAllowed": false, "ocoAllowed": false, "otoAllowed": false, "opoAllowed": false,
                "quoteOrderQtyMarketAllowed": true, "allowTrailingStop": false,
                "cancelReplaceAllowed": false, "amendAllowed": false, "pegInstructionsAllowed": false,
                "isSpotTradingAllowed": true, "isMarginTradingAllowed": false,
                "filters": [
                    {"filterType": "PRICE_FILTER", "minPrice": m.min_price.to_string(), "maxPrice": m.max_price.to_string(), "tickSize": m.tick_size.to_string()},
                    {"filterType": "LOT_SIZE", "minQty": m.min_qty.to_string(), "maxQty": m.max_qty.to_string(), "stepSize": m.step_size.to_string()},
                    {"filterType": "MARKET_LOT_SIZE", "minQty": m.min_qty.to_string(), "maxQty": m.market_max_qty.to_string(), "stepSize": m.step_size.to_string()},
                    {"filterType": "NOTIONAL", "minNotional": m.min_notional.to_string(), "applyMinToMarket": true, "maxNotional": "9000000000.00000000", "applyMaxToMarket": false, "avgPriceMins": 5},
                    {"filterType": "MAX_NUM_ORDERS", "maxNumOrders": m.max_num_orders},
                ],
                "permissions": [],
                "permissionSets": [["SPOT"]],
                "defaultSelfTradePreventionMode": stp_name(m.default_stp),
                "allowedSelfTradePreventionModes": m.allowed_stp.iter().map(|s| stp_name(*s)).collect::<Vec<_>>(),
            })
        })
        .collect();
    Ok(Json(json!({
        "timezone": "UTC",
        "serverTime": now_ms(),
        "rateLimits": [
            {"rateLimitType": "REQUEST_WEIGHT", "interval": "MINUTE", "intervalNum": 1, "limit": limits.ip_weight_per_minute},
            {"rateLimitType": "ORDERS", "interval": "SECOND", "intervalNum": 10, "limit": limits.orders_per_10s},
            {"rateLimitType": "ORDERS", "interval": "DAY", "intervalNum": 1, "limit": limits.orders_per_day},
        ],
        "exchangeFilters": [],
        "symbols": symbols,
    }))
    .into_response())
}

/// Levels a `depth` request gets: 100 by default, at most 5000.
fn depth_levels(limit: Option<u64>) -> usize {
    match limit {
        None | Some(0) => 100,
        Some(n) => n.min(5000) as usize,
    }
}

/// Limits whose rendering is cached: the ones Binance documents and
/// clients use. Any other limit is rendered per request, so the cache
/// cannot grow with what clients invent.
const CACHED_DEPTHS: [usize; 8] = [5, 10, 20, 50, 100, 500, 1000, 5000];

pub(crate) fn depth_weight(query: &str) -> u32 {
    // The same reading of `limit` as the handler's, so what is charged is
    // what is served; a value that does not parse is refused by the handler.
    let limit = form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == "limit")
        .and_then(|(_, v)| v.parse::<u64>().ok());
    match depth_levels(limit) {
        0..=100 => 5,
        101..=500 => 25,
        501..=1000 => 50,
        _ => 250,
    }
}

pub(crate) async fn depth(State(exchange): State<Arc<Exchange>>, Query(params): Query) -> Answer {
    let (id, _) = market(&exchange.catalog, &params)?;
    let limit = depth_levels(integer(&params, "limit")?);
    let view = exchange.sequencer.view();
    let book = view.market(id).ok_or_else(bad_symbol)?;
    // The book changes less often than it is read: the last rendering per
    // market and limit serves until the next change.
    let key = (id, limit);
    let cached = CACHED_DEPTHS.contains(&limit);
    if cached
        && let Some((update_id, body)) = exchange
            .depth_cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&key)
        && *update_id == book.update_id
    {
        return Ok(json_body(body.clone()));
    }
    // Written straight into the body: a deep book is thousands of strings,
    // and building a JSON tree of them first costs more than the read.
    let mut body = String::with_capacity(64 + 48 * limit.min(1000));
    let _ = write!(body, "{{\"lastUpdateId\":{}", book.update_id);
    let mut side = |name: &str, levels: &mut dyn Iterator<Item = (&Amount, &Amount)>| {
        let _ = write!(body, ",\"{name}\":[");
        for (i, (price, quantity)) in levels.take(limit).enumerate() {
            let comma = if i == 0 { "" } else { "," };
            let _ = write!(body, "{comma}[\"{price}\",\"{quantity}\"]");
        }
        body.push(']');
    };
    side("bids", &mut book.bids.iter().rev());
    side("asks", &mut book.asks.iter());
    body.push('}');
    let body = Bytes::from(body);
    if cached {
        exchange
            .depth_cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(key, (book.update_id, body.clone()));
    }
    Ok(json_body(body))
}

fn json_body(body: Bytes) -> Response {
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

fn trade_json(trade: &Trade) -> Value {
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

pub(crate) async fn trades(State(exchange): State<Arc<Exchange>>, Query(params): Query) -> Answer {
    let (id, _) = market(&exchange.catalog, &params)?;
    let limit = limit(&params, 500, 1000)?;
    let history = &exchange.history;
    let trades = match integer(&params, "fromId")? {
        Some(from) => first(history.trades(id, from, ScanDirection::Forward), limit)?,
        None => latest(history.trades(id, u64::MAX, ScanDirection::Backward), limit)?,
    };
    let trades: Vec<Value> = trades.iter().map(trade_json).collect();
    Ok(Json(Value::Array(trades)).into_response())
}

pub(crate) async fn agg_trades(
    State(exchange): State<Arc<Exchange>>,
    Query(params): Query,
) -> Answer {
    let (id, _) = market(&exchange.catalog, &params)?;
    let limit = limit(&params, 500, 1000)?;
    let from = integer(&params, "fromId")?;
    let start = integer(&params, "startTime")?;
    let end = integer(&params, "endTime")?;
    if from.is_some() && (start.is_some() || end.is_some()) {
        return Err(BinanceError::bad(
            -1128,
            "Combination of optional parameters invalid.",
        ));
    }
    let last = exchange
        .sequencer
        .view()
        .market(id)
        .map_or(0, |m| m.last_agg);
    let history = &exchange.history;
    let selected = match (from, start, end) {
        (Some(from), _, _) => first(history.agg_trades(id, from, ScanDirection::Forward), limit)?,
        (None, None, None) => latest(
            history.agg_trades(id, u64::MAX, ScanDirection::Backward),
            limit,
        )?,
        (None, start, end) => {
            let from = stored(history.first_at(Dated::AggTrades, id, start.unwrap_or(0), last))?;
            let end = end.unwrap_or(u64::MAX);
            first(
                history
                    .agg_trades(id, from, ScanDirection::Forward)
                    .take_while(|a| a.as_ref().is_ok_and(|a| a.time_ms <= end) || a.is_err()),
                limit,
            )?
        }
    };
    let out: Vec<Value> = selected
        .into_iter()
        .map(|a| {
            json!({
                "a": a.id, "p": Amount::from_units(a.price).to_string(),
                "q": Amount::from_units(a.quantity).to_string(),
                "f": a.first_trade, "l": a.last_trade, "T": a.time_ms,
                "m": a.buyer_is_maker, "M": true,
            })
        })
        .collect();
    Ok(Json(Value::Array(out)).into_response())
}

/// Interval length in ms (months as 30 days is wrong, so `1M` is by calendar).
fn interval_ms(interval: &str) -> Option<u64> {
    const MIN: u64 = 60_000;
    Some(match interval {
        "1s" => 1_000,
        "1m" => MIN,
        "3m" => 3 * MIN,
        "5m" => 5 * MIN,
        "15m" => 15 * MIN,
        "30m" => 30 * MIN,
        "1h" => 60 * MIN,
        "2h" => 120 * MIN,
        "4h" => 240 * MIN,
        "6h" => 360 * MIN,
        "8h" => 480 * MIN,
        "12h" => 720 * MIN,
        "1d" => 1_440 * MIN,
        "3d" => 3 * 1_440 * MIN,
        "1w" => 7 * 1_440 * MIN,
        "1M" => 0,
        _ => return None,
    })
}

/// Start of the period holding `time_ms`: weeks start on Monday, months on the 1st (UTC).
fn period_start(time_ms: u64, length: u64) -> (u64, u64) {
    const DAY: u64 = 86_400_000;
    if length == 0 {
        let (y, m, _) = civil_from_days((time_ms / DAY) as i64);
        let start = days_from_civil(y, m, 1) as u64 * DAY;
        let (ny, nm) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
        let next = days_from_civil(ny, nm, 1) as u64 * DAY;
        return (start, next);
    }
    if length == 7 * DAY {
        // 1970-01-01 was a Thursday; Mondays are 4 days later.
        let offset = 4 * DAY;
        let start = (time_ms + 7 * DAY - offset) / length * length + offset - 7 * DAY;
        let start = if start + length <= time_ms {
            start + length
        } else {
            start
        };
        return (start, start + length);
    }
    let start = time_ms - time_ms % length;
    (start, start + length)
}

fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (i64::from(m) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// A kline in Binance's array shape; `candle` spans `open_time..close_time`.
fn kline_json(candle: &CandleRow, close_time: u64) -> Value {
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

pub(crate) async fn klines(State(exchange): State<Arc<Exchange>>, Query(params): Query) -> Answer {
    let (id, _) = market(&exchange.catalog, &params)?;
    let length = interval_ms(params.required("interval")?)
        .ok_or_else(|| BinanceError::bad(-1120, "Invalid interval."))?;
    let limit = limit(&params, 500, 1000)?;
    let start = integer(&params, "startTime")?;
    let end = integer(&params, "endTime")?.unwrap_or(u64::MAX);
    let zone_ms = time_zone_ms(&params)?;
    let history = &exchange.history;
    // Seconds come from trades; every longer interval from one-minute candles.
    let seconds = length == 1_000;
    let last_trade = exchange
        .sequencer
        .view()
        .market(id)
        .map_or(0, MarketView::last_trade_id);
    let pieces: Box<dyn Iterator<Item = Result<CandleRow, HistoryError>> + '_> =
        match (seconds, start) {
            (true, Some(start)) => {
                let from = stored(history.first_at(Dated::Trades, id, start, last_trade))?;
                Box::new(
                    history
                        .trades(id, from, ScanDirection::Forward)
                        .map(|t| t.map(|t| candle_of(&t, t.time_ms - t.time_ms % 1_000))),
                )
            }
            (true, None) => {
                // Seek to the last trade at or before `endTime`, so a window
                // far before the newest trades costs no more than a recent one.
                let before = if end == u64::MAX {
                    u64::MAX
                } else {
                    stored(history.first_at(Dated::Trades, id, end.saturating_add(1), last_trade))?
                        .saturating_sub(1)
                };
                Box::new(
                    history
                        .trades(id, before, ScanDirection::Backward)
                        .map(|t| t.map(|t| candle_of(&t, t.time_ms - t.time_ms % 1_000))),
                )
            }
            (false, start) => {
                // The covered minutes, tiled with the longest stored candles
                // that fit whole inside them and inside the klines' periods.
                let from = start.map_or(0, |s| s - s % CANDLE_MS);
                let to = end
                    .checked_add(CANDLE_MS)
                    .map_or(u64::MAX - u64::MAX % CANDLE_MS, |e| e - e % CANDLE_MS);
                let mut tiles = candle_tiles(from, to, &usable_spans(length, zone_ms));
                let forward = start.is_some();
                if !forward {
                    tiles.reverse();
                }
                Box::new(tiles.into_iter().flat_map(move |(span, first, next)| {
                    let rows: Box<dyn Iterator<Item = _>> = if forward {
                        Box::new(
                            history
                                .candles(id, span, first, ScanDirection::Forward)
                                .take_while(move |c| {
                                    c.as_ref().map_or(true, |c| c.open_time < next)
                                }),
                        )
                    } else {
                        Box::new(
                            history
                                .candles(id, span, next - 1, ScanDirection::Backward)
                                .take_while(move |c| {
                                    c.as_ref().map_or(true, |c| c.open_time >= first)
                                }),
                        )
                    };
                    rows
                }))
            }
        };
    let forward = start.is_some();
    // (period start, period end, the merged candle), in scan order.
    let mut klines: Vec<(u64, u64, CandleRow)> = Vec::new();
    for piece in pieces {
        let piece = stored(piece)?;
        if forward && piece.open_time > end {
            break;
        }
        if !forward && piece.open_time > end {
            continue;
        }
        let (open_time, next) = zoned_period(piece.open_time, length, zone_ms);
        match klines.last_mut() {
            Some((open, _, kline)) if *open == open_time => {
                if forward {
                    merge_later(kline, &piece);
                } else {
                    merge_earlier(kline, &piece);
                }
            }
            _ => {
                if klines.len() == limit {
                    break;
                }
                let mut kline = piece;
                kline.open_time = open_time;
                klines.push((open_time, next, kline));
            }
        }
    }
    if !forward {
        klines.reverse();
    }
    let out: Vec<Value> = klines
        .iter()
        .map(|(_, next, kline)| kline_json(kline, next - 1))
        .collect();
    Ok(Json(Value::Array(out)).into_response())
}

/// The stored candle spans whose rows a kline of `length` (0: a calendar
/// month) in the time zone `zone_ms` can be summed from: a span fits when
/// the klines' periods start on its boundaries.
fn usable_spans(length: u64, zone_ms: i64) -> Vec<CandleSpan> {
    CandleSpan::ALL
        .into_iter()
        .filter(|span| {
            let span_ms = span.millis();
            let periods_fit = match length {
                0 => true,
                length => length % span_ms == 0,
            };
            // Weeks and months start on local midnights, which are UTC
            // day (or hour) boundaries only for a zone of whole days (hours).
            periods_fit && zone_ms.rem_euclid(span_ms as i64) == 0
        })
        .collect()
}

/// Tiles the minutes `from..to` (both on minute boundaries) with stored
/// candles: `(span, first open time, end)`, in time order, each tile made
/// of whole candles of its span. `spans` is shortest first, minutes first.
fn candle_tiles(from: u64, to: u64, spans: &[CandleSpan]) -> Vec<(CandleSpan, u64, u64)> {
    let Some((longest, shorter)) = spans.split_last() else {
        return Vec::new();
    };
    if from >= to {
        return Vec::new();
    }
    if shorter.is_empty() {
        return vec![(*longest, from, to)];
    }
    let span = longest.millis();
    let first = from.div_ceil(span).saturating_mul(span);
    let last = to - to % span;
    if first >= last {
        return candle_tiles(from, to, shorter);
    }
    let mut tiles = candle_tiles(from, first, shorter);
    tiles.push((*longest, first, last));
    tiles.extend(candle_tiles(last, to, shorter));
    tiles
}

/// The one-minute candles of `view` overlapping the `window_ms` before `now`, merged.
fn window(book: &MarketView, now: u64, window_ms: u64) -> Option<CandleRow> {
    book.recent_candles(now, window_ms)
        .copied()
        .reduce(|mut total, later| {
            merge_later(&mut total, &later);
            total
        })
}

/// Best bid and ask of `id`, each (price, quantity), zeros when absent.
fn best(view: &View, id: MarketId) -> ((Amount, Amount), (Amount, Amount)) {
    view.market(id)
        .map_or_else(Default::default, |m| (m.best_bid(), m.best_ask()))
}

/// Quote per unit of base over trades summing to `base` and `quote` units.
fn average_price(base: u128, quote: u128) -> Option<Amount> {
    let price = (quote * 100_000_000).checked_div(base)?;
    Some(Amount::from_units(u64::try_from(price).unwrap_or(u64::MAX)))
}

fn last_price(view: &View, id: MarketId) -> Option<&Trade> {
    view.market(id).and_then(|m| m.last_trade.as_ref())
}

pub(crate) async fn ticker_price(
    State(exchange): State<Arc<Exchange>>,
    Query(params): Query,
) -> Answer {
    let (ids, single) = markets(&exchange.catalog, &params)?;
    let view = exchange.sequencer.view();
    let out = ids
        .iter()
        .map(|id| {
            let price = last_price(&view, *id).map_or(Amount::ZERO, |t| t.price);
            json!({ "symbol": exchange.catalog.symbol(*id), "price": price.to_string() })
        })
        .collect();
    Ok(one_or_many(out, single))
}

pub(crate) async fn book_ticker(
    State(exchange): State<Arc<Exchange>>,
    Query(params): Query,
) -> Answer {
    let (ids, single) = markets(&exchange.catalog, &params)?;
    let view = exchange.sequencer.view();
    let out = ids
        .iter()
        .map(|id| {
            let (bid, ask) = best(&view, *id);
            json!({
                "symbol": exchange.catalog.symbol(*id),
                "bidPrice": bid.0.to_string(), "bidQty": bid.1.to_string(),
                "askPrice": ask.0.to_string(), "askQty": ask.1.to_string(),
            })
        })
        .collect();
    Ok(one_or_many(out, single))
}

/// The five-minute average price of `id` (its last price when no trade
/// happened in the window; none before the first trade), with the window's
/// candle if it had trades.
fn five_minute_price(view: &View, id: MarketId, now: u64) -> (Option<Amount>, Option<CandleRow>) {
    let recent = view
        .market(id)
        .and_then(|book| window(book, now, 5 * 60_000));
    let price = recent
        .and_then(|c| average_price(u128::from(c.volume), u128::from(c.quote_volume)))
        .or_else(|| last_price(view, id).map(|t| t.price));
    (price, recent)
}

/// A new order from `params`, checked against every filter, NOTIONAL for
/// market orders included (`applyMinToMarket`): their quote amount, or
/// their quantity at the five-minute average price, as Binance does.
pub(crate) fn validated_order(
    exchange: &Exchange,
    params: &Params,
) -> Result<NewOrder, BinanceError> {
    let order = params.new_order(&exchange.catalog)?;
    if order.order_type == OrderType::Market {
        let market = exchange
            .catalog
            .market(order.market)
            .ok_or_else(bad_symbol)?;
        let notional = match (order.quote_quantity, order.quantity) {
            (Some(quote), _) => Some(quote),
            (None, Some(quantity)) => {
                five_minute_price(&exchange.sequencer.view(), order.market, now_ms())
                    .0
                    .and_then(|price| price.checked_mul(quantity))
            }
            (None, None) => None,
        };
        if notional.is_some_and(|n| n < market.min_notional) {
            return Err(crate::params::filter_failure(
                weiport_exchange::market::FilterFailure::Notional,
            ));
        }
    }
    Ok(order)
}

pub(crate) async fn avg_price(
    State(exchange): State<Arc<Exchange>>,
    Query(params): Query,
) -> Answer {
    let (id, _) = market(&exchange.catalog, &params)?;
    let view = exchange.sequencer.view();
    let book = view.market(id).ok_or_else(bad_symbol)?;
    let now = now_ms();
    let (price, recent) = five_minute_price(&view, id, now);
    let price = price.unwrap_or(Amount::ZERO);
    let close = match (recent, book.last_trade) {
        (Some(_), Some(last)) => last.time_ms,
        _ => now,
    };
    Ok(Json(json!({ "mins": 5, "price": price.to_string(), "closeTime": close })).into_response())
}

/// Which fields a statistics ticker carries.
#[derive(Clone, Copy, PartialEq, Eq)]
enum TickerFields {
    /// `type=MINI`: prices, volumes, times and trade ids.
    Mini,
    /// `type=FULL` of the rolling-window and trading-day tickers: MINI and the change.
    Full,
    /// `type=FULL` of the 24-hour ticker: FULL and the last quantity and best prices.
    FullWithBook,
}

/// Statistics of `id` over the trades from `open_time` until `now`, shown
/// as covering `open_time..=close_time`.
fn statistics(
    exchange: &Exchange,
    view: &View,
    id: MarketId,
    now: u64,
    (open_time, close_time): (u64, u64),
    fields: TickerFields,
) -> Value {
    let book = view.market(id);
    let stats = book.and_then(|b| window(b, now, now.saturating_sub(open_time)));
    let last = book.and_then(|b| b.last_trade).filter(|_| stats.is_some());
    let price = |f: fn(&CandleRow) -> u64| Amount::from_units(stats.as_ref().map_or(0, f));
    let (open, close, high, low) = (
        price(|c| c.open),
        price(|c| c.close),
        price(|c| c.high),
        price(|c| c.low),
    );
    let (base, quote) = (price(|c| c.volume), price(|c| c.quote_volume));
    let mut out = json!({
        "symbol": exchange.catalog.symbol(id),
        "openPrice": open.to_string(), "highPrice": high.to_string(), "lowPrice": low.to_string(),
        "lastPrice": close.to_string(), "volume": base.to_string(), "quoteVolume": quote.to_string(),
        "openTime": open_time, "closeTime": close_time,
        "firstId": stats.map_or(-1, |c| c.first_trade as i64),
        "lastId": stats.map_or(-1, |c| c.last_trade as i64),
        "count": stats.map_or(0, |c| c.trades()),
    });
    if fields != TickerFields::Mini {
        let change = i128::from(close.units()) - i128::from(open.units());
        let percent = if open.is_zero() {
            0.0
        } else {
            change as f64 * 100.0 / open.units() as f64
        };
        let weighted =
            average_price(u128::from(base.units()), u128::from(quote.units())).unwrap_or_default();
        let sign = if change < 0 { "-" } else { "" };
        let magnitude = Amount::from_units(change.unsigned_abs() as u64);
        out["priceChange"] = json!(format!("{sign}{magnitude}"));
        out["priceChangePercent"] = json!(format!("{percent:.3}"));
        out["weightedAvgPrice"] = json!(weighted.to_string());
    }
    if fields == TickerFields::FullWithBook {
        let (bid, ask) = best(view, id);
        let extra = json!({
            "prevClosePrice": open.to_string(),
            "lastQty": last.map_or(Amount::ZERO, |t| t.quantity).to_string(),
            "bidPrice": bid.0.to_string(), "bidQty": bid.1.to_string(),
            "askPrice": ask.0.to_string(), "askQty": ask.1.to_string(),
        });
        if let (Value::Object(out), Value::Object(extra)) = (&mut out, extra) {
            out.extend(extra);
        }
    }
    out
}

/// `type`: FULL (the default) gives `full`, MINI the short form.
fn ticker_type(params: &Params, full: TickerFields) -> Result<TickerFields, BinanceError> {
    match params.get("type") {
        None | Some("FULL") => Ok(full),
        Some("MINI") => Ok(TickerFields::Mini),
        Some(_) => Err(BinanceError::bad(-1139, "Invalid ticker type.")),
    }
}

/// `timeZone`: hours (`8`, `-1`) or hours and minutes (`05:45`, `-1:00`),
/// from -12:00 to +14:00; the offset from UTC in milliseconds (0 when absent).
fn time_zone_ms(params: &Params) -> Result<i64, BinanceError> {
    let Some(text) = params.get("timeZone") else {
        return Ok(0);
    };
    let invalid = || BinanceError::bad(-1130, "Data sent for parameter 'timeZone' is not valid.");
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (hours, minutes) = unsigned.split_once(':').unwrap_or((unsigned, "0"));
    let number = |digits: &str| -> Result<i64, BinanceError> {
        if digits.is_empty() || digits.len() > 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(invalid());
        }
        digits.parse().map_err(|_| invalid())
    };
    let (hours, minutes) = (number(hours)?, number(minutes)?);
    if minutes > 59 {
        return Err(invalid());
    }
    let offset = if negative { -1 } else { 1 } * (hours * 60 + minutes);
    if !(-12 * 60..=14 * 60).contains(&offset) {
        return Err(invalid());
    }
    Ok(offset * 60_000)
}

/// The period of `length` holding `time_ms`, with periods counted in the
/// local time `zone_ms` ahead of UTC.
fn zoned_period(time_ms: u64, length: u64, zone_ms: i64) -> (u64, u64) {
    let (start, next) = period_start(time_ms.saturating_add_signed(zone_ms), length);
    (
        start.saturating_add_signed(-zone_ms),
        next.saturating_add_signed(-zone_ms),
    )
}

/// `symbol` or `symbols` must be sent (the rolling tickers have no "all").
fn require_symbols(params: &Params) -> Result<(), BinanceError> {
    if params.get("symbol").is_none() && params.get("symbols").is_none() {
        return Err(BinanceError::bad(
            -1102,
            "Param 'symbol' or 'symbols' must be sent, but both were empty/null!",
        ));
    }
    Ok(())
}

pub(crate) async fn ticker_24hr(
    State(exchange): State<Arc<Exchange>>,
    Query(params): Query,
) -> Answer {
    let (ids, single) = markets(&exchange.catalog, &params)?;
    let fields = ticker_type(&params, TickerFields::FullWithBook)?;
    tickers(&exchange, &ids, single, fields, |now| {
        (now.saturating_sub(86_400_000), now)
    })
}

/// Statistics of `ids` over the span `span_at(now)`, one object or an array.
fn tickers(
    exchange: &Exchange,
    ids: &[MarketId],
    single: bool,
    fields: TickerFields,
    span_at: impl Fn(u64) -> (u64, u64),
) -> Answer {
    let view = exchange.sequencer.view();
    let now = now_ms();
    let span = span_at(now);
    let out = ids
        .iter()
        .map(|id| statistics(exchange, &view, *id, now, span, fields))
        .collect();
    Ok(one_or_many(out, single))
}

pub(crate) async fn ticker_window(
    State(exchange): State<Arc<Exchange>>,
    Query(params): Query,
) -> Answer {
    require_symbols(&params)?;
    let (ids, single) = markets(&exchange.catalog, &params)?;
    let fields = ticker_type(&params, TickerFields::Full)?;
    let size = params.get("windowSize").unwrap_or("1d");
    let invalid = || {
        BinanceError::bad(
            -1100,
            "Illegal characters found in parameter 'windowSize'; legal range is '^[0-9]{1,2}[mhd]$'.",
        )
    };
    // By characters, not bytes: the value is the client's and may be any UTF-8.
    let mut chars = size.chars();
    let unit = chars.next_back().map(String::from).unwrap_or_default();
    let number = chars.as_str();
    if number.is_empty() || number.len() > 2 || !number.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid());
    }
    let number: u64 = number.parse().map_err(|_| invalid())?;
    let window_ms = match (unit.as_str(), number) {
        ("m", 1..=59) => number * 60_000,
        ("h", 1..=23) => number * 3_600_000,
        ("d", 1..=7) => number * 86_400_000,
        _ => return Err(invalid()),
    };
    tickers(&exchange, &ids, single, fields, |now| {
        (now.saturating_sub(window_ms), now)
    })
}

/// `GET /api/v3/ticker/tradingDay`: statistics of the current calendar day
/// in `timeZone`, from its midnight until now.
pub(crate) async fn ticker_trading_day(
    State(exchange): State<Arc<Exchange>>,
    Query(params): Query,
) -> Answer {
    require_symbols(&params)?;
    let (ids, single) = markets(&exchange.catalog, &params)?;
    let fields = ticker_type(&params, TickerFields::Full)?;
    let zone_ms = time_zone_ms(&params)?;
    tickers(&exchange, &ids, single, fields, |now| {
        let (midnight, next) = zoned_period(now, 86_400_000, zone_ms);
        (midnight, next - 1)
    })
}

// ---------------------------------------------------------------- trading

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
    let (market, response_type) = (order.market, order.response_type);
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
    let order_id = order.order_id;
    let ack = Acknowledgement {
        symbol: exchange.catalog.symbol(market),
        order_id,
        order_list_id: -1,
        client_order_id: &order.client_order_id,
        transact_time: order.time_ms,
    };
    if response_type == ResponseType::Ack {
        // The common case of trading programs: written straight, no JSON tree.
        return Ok(Json(ack).into_response());
    }
    let mut out = serde_json::to_value(ack).map_err(|_| unavailable())?;
    let full = order_json(&exchange.catalog, order);
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
    ] {
        out[field] = full[field].clone();
    }
    if response_type == ResponseType::Full {
        let (base, quote) = exchange.catalog.pair(market).ok_or_else(unavailable)?;
        let fills: Vec<Value> = outcome
            .changes
            .trades
            .iter()
            .filter(|t| t.taker.0 == order_id)
            .map(|t| {
                let asset = if t.taker_side == Side::Buy {
                    base
                } else {
                    quote
                };
                json!({
                    "price": t.price.to_string(), "qty": t.quantity.to_string(),
                    "commission": t.taker_fee.to_string(),
                    "commissionAsset": exchange.catalog.asset(asset),
                    "tradeId": t.trade_id,
                })
            })
            .collect();
        out["fills"] = Value::Array(fills);
    }
    Ok(Json(out).into_response())
}

/// The part of a new order's answer every `newOrderRespType` has.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Acknowledgement<'a> {
    symbol: &'a str,
    order_id: u64,
    order_list_id: i64,
    client_order_id: &'a str,
    transact_time: u64,
}

/// The order of `account` that `orderId` or `origClientOrderId` names, if any.
fn referenced_order(
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
    let out: Vec<Value> = outcome
        .changes
        .orders
        .iter()
        .filter(|(o, _)| o.status == OrderStatus::Canceled)
        .map(|(o, _)| cancel_json(&exchange.catalog, o, &generated_client_id()))
        .collect();
    Ok(Json(Value::Array(out)).into_response())
}

pub(crate) fn open_orders_weight(query: &str) -> u32 {
    if form_urlencoded::parse(query.as_bytes()).any(|(k, v)| k == "symbol" && !v.is_empty()) {
        6
    } else {
        80
    }
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

/// Checks `startTime`/`endTime`: at most 24 hours apart, start not after
/// end. `endTime` alone means the 24 hours up to it, so every window has a
/// start a read can seek to.
fn time_window(params: &Params) -> Result<(Option<u64>, Option<u64>), BinanceError> {
    let end = integer(params, "endTime")?;
    let start = match integer(params, "startTime")? {
        None => end.map(|end| end.saturating_sub(86_400_000)),
        start => start,
    };
    if let (Some(s), Some(e)) = (start, end) {
        if s > e {
            return Err(BinanceError::bad(
                -1128,
                "Combination of optional parameters invalid.",
            ));
        }
        if e - s > 86_400_000 {
            return Err(BinanceError::bad(
                -1127,
                "More than 24 hours between startTime and endTime.",
            ));
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

fn commission_rates(exchange: &Exchange, market: Option<&Market>) -> Value {
    let (maker, taker) = market
        .or_else(|| exchange.catalog.markets().next().map(|(_, m)| m))
        .map_or((Amount::ZERO, Amount::ZERO), |m| (m.maker_fee, m.taker_fee));
    json!({ "maker": maker.to_string(), "taker": taker.to_string(), "buyer": Amount::ZERO.to_string(), "seller": Amount::ZERO.to_string() })
}

/// Basis points of a fee rate, as `makerCommission` reports it.
fn basis_points(rate: Amount) -> u64 {
    rate.units() / 10_000
}

pub(crate) async fn account(
    State(exchange): State<Arc<Exchange>>,
    Signed {
        key,
        account,
        params,
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
    if form_urlencoded::parse(query.as_bytes()).any(|(k, _)| k == "orderId") {
        5
    } else {
        20
    }
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
        return Err(BinanceError::bad(
            -1128,
            "Combination of optional parameters invalid.",
        ));
    }
    let (base, quote) = exchange.catalog.pair(market).ok_or_else(bad_symbol)?;
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
    let (ten, day) = exchange.access.limiter.order_counts(account, now_ms());
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

// ---------------------------------------------------------------- /sapi

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
            json!({
                "coin": name, "name": name, "free": free.to_string(), "locked": locked.to_string(),
                "freeze": "0", "withdrawing": "0", "ipoing": "0", "ipoable": "0", "storage": "0",
                "isLegalMoney": false, "trading": true,
                "depositAllEnable": false, "withdrawAllEnable": false,
                "networkList": [],
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

    fn zone(text: &str) -> Result<i64, i32> {
        let params = Params::unchecked(&format!("timeZone={text}")).unwrap();
        time_zone_ms(&params).map_err(|e| e.code)
    }

    #[test]
    fn time_zones_take_hours_or_hours_and_minutes_within_binance_range() {
        const MINUTE: i64 = 60_000;
        assert_eq!(zone("0"), Ok(0));
        assert_eq!(zone("8"), Ok(8 * 60 * MINUTE));
        assert_eq!(zone("-1:00"), Ok(-60 * MINUTE));
        assert_eq!(zone("05:45"), Ok(345 * MINUTE));
        assert_eq!(zone("%2B14:00"), Ok(14 * 60 * MINUTE));
        assert_eq!(zone("-12"), Ok(-12 * 60 * MINUTE));
        for bad in [
            "14:01", "-12:30", "15", "1:60", "x", "1:", ":30", "123", "--1", "1.5",
        ] {
            assert_eq!(zone(bad), Err(-1130), "{bad}");
        }
        let params = Params::unchecked("").unwrap();
        assert_eq!(time_zone_ms(&params).map_err(|e| e.code), Ok(0));
    }

    #[test]
    fn candle_tiles_cover_the_minutes_with_the_longest_whole_candles() {
        const MIN: u64 = 60_000;
        const HOUR: u64 = 60 * MIN;
        const DAY: u64 = 24 * HOUR;
        let all = CandleSpan::ALL;
        use CandleSpan::{Day, Hour, Minute};
        // 23:58 on day 0 to 01:03 on day 2.
        let (from, to) = (DAY - 2 * MIN, 2 * DAY + HOUR + 3 * MIN);
        assert_eq!(
            candle_tiles(from, to, &all),
            vec![
                (Minute, from, DAY),
                (Day, DAY, 2 * DAY),
                (Hour, 2 * DAY, 2 * DAY + HOUR),
                (Minute, 2 * DAY + HOUR, to),
            ]
        );
        // Too short for an hour: minutes only; empty when nothing is covered.
        assert_eq!(
            candle_tiles(HOUR + MIN, 2 * HOUR - MIN, &all),
            vec![(Minute, HOUR + MIN, 2 * HOUR - MIN)]
        );
        assert_eq!(candle_tiles(5 * MIN, 5 * MIN, &all), vec![]);
        // The tiles always cover exactly from..to, in order.
        for (from, to) in [(0, 3 * DAY), (7 * MIN, 5 * DAY + 7 * MIN), (HOUR, DAY)] {
            let tiles = candle_tiles(from, to, &all);
            assert_eq!(tiles.first().unwrap().1, from);
            assert_eq!(tiles.last().unwrap().2, to);
            assert!(tiles.windows(2).all(|t| t[0].2 == t[1].1));
            assert!(
                tiles
                    .iter()
                    .all(|(s, a, b)| a % s.millis() == 0 && b % s.millis() == 0)
            );
        }
        // Spans a kline can be summed from, by interval and time zone.
        assert_eq!(usable_spans(15 * MIN, 0), vec![Minute]);
        assert_eq!(usable_spans(4 * HOUR, 0), vec![Minute, Hour]);
        assert_eq!(usable_spans(0, 0), vec![Minute, Hour, Day]);
        assert_eq!(usable_spans(DAY, 8 * HOUR as i64), vec![Minute, Hour]);
        assert_eq!(usable_spans(DAY, -(345 * MIN as i64)), vec![Minute]);
    }

    #[test]
    fn zoned_periods_start_at_local_midnight_and_month_start() {
        const HOUR: u64 = 3_600_000;
        const DAY: u64 = 24 * HOUR;
        // 2023-09-26T03:00:00Z: in UTC+8 it is 11:00 on the 26th, in UTC-5
        // 22:00 on the 25th.
        let time = 1_695_697_200_000;
        let utc_midnight = 1_695_686_400_000;
        assert_eq!(
            zoned_period(time, DAY, 0),
            (utc_midnight, utc_midnight + DAY)
        );
        assert_eq!(
            zoned_period(time, DAY, 8 * HOUR as i64),
            (utc_midnight - 8 * HOUR, utc_midnight + 16 * HOUR)
        );
        assert_eq!(
            zoned_period(time, DAY, -5 * HOUR as i64),
            (utc_midnight - DAY + 5 * HOUR, utc_midnight + 5 * HOUR)
        );
        // Months too: 2023-10-01T00:00 in UTC+8 is 2023-09-30T16:00Z.
        let october_local = 1_696_118_400_000 - 8 * HOUR;
        assert_eq!(
            zoned_period(october_local + 1, 0, 8 * HOUR as i64).0,
            october_local
        );
    }
}
