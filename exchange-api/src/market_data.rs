//! Public market data: exchange information, depth, trades, aggregate trades, klines.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::IntoResponse;
use serde_json::{Value, json};
use weiport_exchange::amount::Amount;
use weiport_storage::{CandleRow, ScanDirection};

use crate::calendar::{candle_tiles, interval_ms, time_zone_ms, usable_spans, zoned_period};
use crate::error::{Answer, BinanceError, Refusal};
use crate::exchange::{Exchange, first, latest, stored};
use crate::extract::Query;
use crate::params::{integer, limit, market, markets, query_value};
use crate::wire::{json_body, kline_json, stp_name, trade_json};

use weiport_exchange::history::{
    CANDLE_MS, Dated, HistoryError, candle_of, merge_earlier, merge_later,
};
use weiport_exchange::now_ms;
use weiport_exchange::view::MarketView;

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
            return Err(BinanceError::from(Refusal::InvalidValue("symbolStatus")));
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
                "orderTypes": ["LIMIT", "LIMIT_MAKER", "MARKET", "STOP_LOSS", "STOP_LOSS_LIMIT", "TAKE_PROFIT", "TAKE_PROFIT_LIMIT"],
                "icebergAllowed": false, "ocoAllowed": true, "otoAllowed": true, "opoAllowed": false,
                "quoteOrderQtyMarketAllowed": true, "allowTrailingStop": true,
                "cancelReplaceAllowed": true, "amendAllowed": true, "pegInstructionsAllowed": false,
                "isSpotTradingAllowed": true, "isMarginTradingAllowed": false,
                "filters": [
                    {"filterType": "PRICE_FILTER", "minPrice": m.min_price.to_string(), "maxPrice": m.max_price.to_string(), "tickSize": m.tick_size.to_string()},
                    {"filterType": "LOT_SIZE", "minQty": m.min_qty.to_string(), "maxQty": m.max_qty.to_string(), "stepSize": m.step_size.to_string()},
                    {"filterType": "MARKET_LOT_SIZE", "minQty": m.min_qty.to_string(), "maxQty": m.market_max_qty.to_string(), "stepSize": m.step_size.to_string()},
                    {"filterType": "NOTIONAL", "minNotional": m.min_notional.to_string(), "applyMinToMarket": true, "maxNotional": "9000000000.00000000", "applyMaxToMarket": false, "avgPriceMins": 5},
                    {"filterType": "MAX_NUM_ORDERS", "maxNumOrders": m.max_num_orders},
                    {"filterType": "MAX_NUM_ALGO_ORDERS", "maxNumAlgoOrders": m.max_num_algo_orders},
                    {"filterType": "TRAILING_DELTA", "minTrailingAboveDelta": m.min_trailing_delta, "maxTrailingAboveDelta": m.max_trailing_delta, "minTrailingBelowDelta": m.min_trailing_delta, "maxTrailingBelowDelta": m.max_trailing_delta},
                    {"filterType": "PERCENT_PRICE_BY_SIDE", "bidMultiplierUp": m.multiplier_up.to_string(), "bidMultiplierDown": m.multiplier_down.to_string(), "askMultiplierUp": m.multiplier_up.to_string(), "askMultiplierDown": m.multiplier_down.to_string(), "avgPriceMins": 5},
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
pub(crate) fn depth_levels(limit: Option<u64>) -> usize {
    match limit {
        None | Some(0) => 100,
        Some(n) => n.min(5000) as usize,
    }
}

/// Limits whose rendering is cached: the ones Binance documents and
/// clients use. Any other limit is rendered per request, so the cache
/// cannot grow with what clients invent.
pub(crate) const CACHED_DEPTHS: [usize; 8] = [5, 10, 20, 50, 100, 500, 1000, 5000];

pub(crate) fn depth_weight(query: &str) -> u32 {
    // The same reading of `limit` as the handler's, so what is charged is
    // what is served; a value that does not parse is refused by the handler.
    let limit = query_value(query, "limit").and_then(|v| v.parse::<u64>().ok());
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
    let book = exchange.sequencer.book(id).ok_or(Refusal::InvalidSymbol)?;
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
    let mut side = |name: &str, levels: &[(Amount, Amount)]| {
        let _ = write!(body, ",\"{name}\":[");
        for (i, (price, quantity)) in levels.iter().take(limit).enumerate() {
            body.push_str(if i == 0 { "[\"" } else { ",[\"" });
            price.push_to(&mut body);
            body.push_str("\",\"");
            quantity.push_to(&mut body);
            body.push_str("\"]");
        }
        body.push(']');
    };
    side("bids", &book.bids);
    side("asks", &book.asks);
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

/// `GET /api/v3/trades`: the latest trades.
pub(crate) async fn recent_trades(exchange: State<Arc<Exchange>>, query: Query) -> Answer {
    trades(exchange, query, false)
}

/// `GET /api/v3/historicalTrades`: trades from `fromId` on, else the latest.
pub(crate) async fn historical_trades(exchange: State<Arc<Exchange>>, query: Query) -> Answer {
    trades(exchange, query, true)
}

fn trades(State(exchange): State<Arc<Exchange>>, Query(params): Query, from_id: bool) -> Answer {
    let (id, _) = market(&exchange.catalog, &params)?;
    let limit = limit(&params, 500, 1000)?;
    let history = &exchange.history;
    let from = if from_id {
        integer(&params, "fromId")?
    } else {
        None
    };
    let trades = match from {
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
        return Err(BinanceError::from(Refusal::BadCombination));
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

pub(crate) async fn klines(State(exchange): State<Arc<Exchange>>, Query(params): Query) -> Answer {
    let (id, _) = market(&exchange.catalog, &params)?;
    let length = interval_ms(params.required("interval")?)
        .ok_or_else(|| BinanceError::from(Refusal::InvalidInterval))?;
    let limit = limit(&params, 500, 1000)?;
    let start = integer(&params, "startTime")?;
    let end = integer(&params, "endTime")?.unwrap_or(u64::MAX);
    let zone_ms = time_zone_ms(&params)?;
    let klines = kline_rows(&exchange, id, length, start, end, limit, zone_ms)?;
    let out: Vec<Value> = klines
        .iter()
        .map(|(_, next, kline)| kline_json(kline, next - 1))
        .collect();
    Ok(Json(Value::Array(out)).into_response())
}

pub(crate) async fn ping() -> Json<serde_json::Value> {
    Json(serde_json::json!({}))
}

pub(crate) async fn time() -> Json<serde_json::Value> {
    Json(serde_json::json!({ "serverTime": now_ms() }))
}

/// Up to `limit` klines of `length` (in the time zone `zone_ms` ahead of
/// UTC) of market `id` from `start` (oldest first; without it, the newest
/// up to `end`), as (period start, period end, candle).
pub(crate) fn kline_rows(
    exchange: &Exchange,
    id: weiport_exchange::MarketId,
    length: u64,
    start: Option<u64>,
    end: u64,
    limit: usize,
    zone_ms: i64,
) -> Result<Vec<(u64, u64, CandleRow)>, BinanceError> {
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
    Ok(klines)
}
