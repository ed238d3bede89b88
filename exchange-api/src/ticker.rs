//! Price tickers and rolling statistics: 24 h, rolling windows, trading day, book ticker, average price.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::response::IntoResponse;
use serde_json::{Value, json};
use weiport_exchange::amount::Amount;
use weiport_exchange::catalog::MarketId;
use weiport_exchange::engine::Trade;
use weiport_exchange::now_ms;
use weiport_exchange::view::View;
use weiport_storage::CandleRow;

use crate::calendar::{time_zone_ms, zoned_period};
use crate::error::{Answer, BinanceError, Refusal};
use crate::exchange::Exchange;
use crate::extract::Query;
use crate::params::{Params, market, markets, query_has, query_value};
use crate::wire::{json_body, one_or_many};

/// Best bid and ask of `id`, each (price, quantity), zeros when absent.
pub(crate) fn best(view: &View, id: MarketId) -> ((Amount, Amount), (Amount, Amount)) {
    view.market(id)
        .map_or_else(Default::default, |m| (m.best_bid(), m.best_ask()))
}

/// Quote per unit of base over trades summing to `base` and `quote` units.
pub(crate) fn average_price(base: u128, quote: u128) -> Option<Amount> {
    let price = (quote * 100_000_000).checked_div(base)?;
    Some(Amount::from_units(u64::try_from(price).unwrap_or(u64::MAX)))
}

pub(crate) fn last_price(view: &View, id: MarketId) -> Option<&Trade> {
    view.market(id).and_then(|m| m.last_trade.as_ref())
}

pub(crate) async fn ticker_price(
    State(exchange): State<Arc<Exchange>>,
    Query(params): Query,
) -> Answer {
    let (ids, single) = markets(&exchange.catalog, &params)?;
    // Written straight into the body: the busiest public read allocates
    // nothing else.
    let mut body = String::with_capacity(2 + ids.len() * 64);
    if !single {
        body.push('[');
    }
    {
        let view = exchange.sequencer.view();
        for (at, id) in ids.iter().enumerate() {
            let price = last_price(&view, *id).map_or(Amount::ZERO, |t| t.price);
            if at > 0 {
                body.push(',');
            }
            body.push_str(r#"{"symbol":""#);
            body.push_str(exchange.catalog.symbol(*id));
            body.push_str(r#"","price":""#);
            price.push_to(&mut body);
            body.push_str(r#""}"#);
        }
    }
    if !single {
        body.push(']');
    }
    Ok(json_body(body.into()))
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
pub(crate) fn five_minute_price(
    view: &View,
    id: MarketId,
    now: u64,
) -> (Option<Amount>, Option<CandleRow>) {
    let recent = view
        .market(id)
        .and_then(|book| book.window(now, 5 * 60_000));
    let price = recent
        .and_then(|c| average_price(u128::from(c.volume), u128::from(c.quote_volume)))
        .or_else(|| last_price(view, id).map(|t| t.price));
    (price, recent)
}

pub(crate) async fn avg_price(
    State(exchange): State<Arc<Exchange>>,
    Query(params): Query,
) -> Answer {
    let (id, _) = market(&exchange.catalog, &params)?;
    let view = exchange.sequencer.view();
    let book = view.market(id).ok_or(Refusal::InvalidSymbol)?;
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
pub(crate) enum TickerFields {
    /// `type=MINI`: prices, volumes, times and trade ids.
    Mini,
    /// `type=FULL` of the rolling-window and trading-day tickers: MINI and the change.
    Full,
    /// `type=FULL` of the 24-hour ticker: FULL and the last quantity and best prices.
    FullWithBook,
}

/// Statistics of `id` over the trades from `open_time` until `now`, shown
/// as covering `open_time..=close_time`.
pub(crate) fn statistics(
    exchange: &Exchange,
    view: &View,
    id: MarketId,
    now: u64,
    (open_time, close_time): (u64, u64),
    fields: TickerFields,
) -> Value {
    let book = view.market(id);
    let stats = book.and_then(|b| b.window(now, now.saturating_sub(open_time)));
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
pub(crate) fn ticker_type(
    params: &Params,
    full: TickerFields,
) -> Result<TickerFields, BinanceError> {
    match params.get("type") {
        None | Some("FULL") => Ok(full),
        Some("MINI") => Ok(TickerFields::Mini),
        Some(_) => Err(BinanceError::from(Refusal::InvalidTickerType)),
    }
}

/// `symbol` or `symbols` must be sent (the rolling tickers have no "all").
pub(crate) fn require_symbols(params: &Params) -> Result<(), BinanceError> {
    if params.get("symbol").is_none() && params.get("symbols").is_none() {
        return Err(BinanceError::from(Refusal::EitherOf("symbol", "symbols")));
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
pub(crate) fn tickers(
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
        BinanceError::from(Refusal::IllegalCharacters {
            name: "windowSize",
            range: "^[0-9]{1,2}[mhd]$",
        })
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

/// How many markets a ticker request names: one for `symbol`, the length
/// of the `symbols` array, none when it names neither (every market).
fn symbols_named(query: &str) -> Option<usize> {
    if query_has(query, "symbol") {
        return Some(1);
    }
    let list = query_value(query, "symbols")?;
    Some(list.split(',').filter(|s| !s.trim().is_empty()).count())
}

/// `ticker/24hr`: 2 for up to 20 markets, 40 up to 100, 80 beyond or for all.
pub(crate) fn ticker_24hr_weight(query: &str) -> u32 {
    match symbols_named(query) {
        Some(0..=20) => 2,
        Some(21..=100) => 40,
        _ => 80,
    }
}

/// `ticker/price` and `ticker/bookTicker`: 2 for one market, 4 for several or all.
pub(crate) fn ticker_price_weight(query: &str) -> u32 {
    if query_has(query, "symbol") { 2 } else { 4 }
}

/// `ticker` and `ticker/tradingDay`: 4 per market, at most 200.
pub(crate) fn ticker_window_weight(query: &str) -> u32 {
    let markets = symbols_named(query).unwrap_or(1).max(1);
    u32::try_from(markets.saturating_mul(4))
        .unwrap_or(u32::MAX)
        .min(200)
}

#[cfg(test)]
mod weight_tests {
    use super::*;

    #[test]
    fn ticker_weights_grow_with_the_markets_named() {
        let symbols = |n: usize| {
            let names: Vec<String> = (0..n).map(|i| format!("%22S{i}%22")).collect();
            format!("symbols=%5B{}%5D", names.join(","))
        };
        assert_eq!(ticker_24hr_weight("symbol=ETHUSDT"), 2);
        assert_eq!(ticker_24hr_weight(&symbols(20)), 2);
        assert_eq!(ticker_24hr_weight(&symbols(21)), 40);
        assert_eq!(ticker_24hr_weight(&symbols(101)), 80);
        assert_eq!(ticker_24hr_weight(""), 80);
        assert_eq!(ticker_price_weight("symbol=ETHUSDT"), 2);
        assert_eq!(ticker_price_weight(&symbols(1)), 4);
        assert_eq!(ticker_price_weight(""), 4);
        assert_eq!(ticker_window_weight("symbol=ETHUSDT"), 4);
        assert_eq!(ticker_window_weight(&symbols(3)), 12);
        assert_eq!(ticker_window_weight(&symbols(80)), 200);
    }
}
