//! Tickers and the average price, pushed every second.

use std::time::Duration;

use serde_json::{Value, json};
use weiport_exchange::Amount;

use crate::exchange::Exchange;
use crate::market_data::kline_rows;
use crate::streams::{ALL_MARKET_ARRAYS, StreamHub, kline_stream, now_us};
use crate::ticker::{TickerFields, five_minute_price, statistics};

/// The 24-hour and rolling-window tickers and the average price, pushed
/// every second to their subscribers, from the same statistics as REST.
/// Holds the exchange only while pushing, so shutting it down is not delayed.
pub async fn push_tickers(exchange: std::sync::Weak<Exchange>) {
    let mut every = tokio::time::interval(Duration::from_secs(1));
    let mut seconds = 0u64;
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        let Some(exchange) = exchange.upgrade() else {
            return;
        };
        let hub = exchange.streams.clone();
        let now_us = now_us();
        let now = now_us / 1000;
        hub.expire_listen_keys(now_us);
        seconds += 1;
        push_klines(&exchange, &hub, seconds, now_us);
        // The all-market arrays (`!miniTicker@arr`, `!ticker@arr`,
        // `!ticker_<window>@arr`): markets that traded in the window.
        let mut arrays: Vec<(String, Vec<Value>)> = ALL_MARKET_ARRAYS
            .into_iter()
            .filter(|name| hub.has_subscribers(name))
            .map(|name| (name.to_owned(), Vec::new()))
            .collect();
        let mut into_array = |array: &str, stats: &Value, event: &Value| {
            if stats["count"] != 0
                && let Some((_, events)) = arrays.iter_mut().find(|(name, _)| name == array)
            {
                events.push(event.clone());
            }
        };
        let wants_array = |array: &str| hub.has_subscribers(array);
        for (id, _) in exchange.catalog.markets() {
            let symbol = hub.symbol(id);
            let wanted = |kind: &str| hub.has_subscribers(&format!("{symbol}@{kind}"));
            let mut payloads: Vec<(String, Value)> = Vec::new();
            {
                let view = exchange.sequencer.view();
                let day = (now.saturating_sub(86_400_000), now);
                if wanted("ticker") || wants_array("!ticker@arr") {
                    let stats =
                        statistics(&exchange, &view, id, now, day, TickerFields::FullWithBook);
                    let ticker = stream_ticker("24hrTicker", now, &stats, TICKER_KEYS);
                    into_array("!ticker@arr", &stats, &ticker);
                    payloads.push((format!("{symbol}@ticker"), ticker));
                }
                if wanted("miniTicker") || wants_array("!miniTicker@arr") {
                    let stats = statistics(&exchange, &view, id, now, day, TickerFields::Mini);
                    let mini = stream_ticker("24hrMiniTicker", now, &stats, MINI_KEYS);
                    into_array("!miniTicker@arr", &stats, &mini);
                    payloads.push((format!("{symbol}@miniTicker"), mini));
                }
                for (window, ms) in [("1h", 3_600_000), ("4h", 14_400_000), ("1d", 86_400_000)] {
                    let array = format!("!ticker_{window}@arr");
                    if wanted(&format!("ticker_{window}")) || wants_array(&array) {
                        let span = (now.saturating_sub(ms), now);
                        let stats = statistics(&exchange, &view, id, now, span, TickerFields::Full);
                        let event = format!("{window}Ticker");
                        let ticker = stream_ticker(&event, now, &stats, TICKER_KEYS);
                        into_array(&array, &stats, &ticker);
                        payloads.push((format!("{symbol}@ticker_{window}"), ticker));
                    }
                }
                if wanted("avgPrice") {
                    let (price, recent) = five_minute_price(&view, id, now);
                    let close = match (recent, view.market(id).and_then(|m| m.last_trade)) {
                        (Some(_), Some(last)) => last.time_ms,
                        _ => now,
                    };
                    payloads.push((
                        format!("{symbol}@avgPrice"),
                        json!({
                            "e": "avgPrice", "E": now, "s": exchange.catalog.symbol(id), "i": "5m",
                            "w": price.unwrap_or(Amount::ZERO).to_string(), "T": close,
                        }),
                    ));
                }
            }
            for (stream, payload) in payloads {
                hub.publish(&stream, &payload, now_us);
            }
        }
        for (array, events) in arrays {
            if !events.is_empty() {
                hub.publish(&array, &Value::Array(events), now_us);
            }
        }
    }
}

/// Stream field ← REST field of the 24-hour ticker; the rolling-window
/// ticker has those of them its REST form has.
const TICKER_KEYS: &[(&str, &str)] = &[
    ("p", "priceChange"),
    ("P", "priceChangePercent"),
    ("w", "weightedAvgPrice"),
    ("x", "prevClosePrice"),
    ("c", "lastPrice"),
    ("Q", "lastQty"),
    ("b", "bidPrice"),
    ("B", "bidQty"),
    ("a", "askPrice"),
    ("A", "askQty"),
    ("o", "openPrice"),
    ("h", "highPrice"),
    ("l", "lowPrice"),
    ("v", "volume"),
    ("q", "quoteVolume"),
    ("O", "openTime"),
    ("C", "closeTime"),
    ("F", "firstId"),
    ("L", "lastId"),
    ("n", "count"),
];

/// Stream field ← REST field of the mini ticker.
const MINI_KEYS: &[(&str, &str)] = &[
    ("c", "lastPrice"),
    ("o", "openPrice"),
    ("h", "highPrice"),
    ("l", "lowPrice"),
    ("v", "volume"),
    ("q", "quoteVolume"),
];

/// A REST ticker in a stream's short field names, with its event type and time.
fn stream_ticker(event: &str, now: u64, rest: &Value, keys: &[(&str, &str)]) -> Value {
    let mut out = serde_json::Map::new();
    out.insert("e".into(), json!(event));
    out.insert("E".into(), json!(now));
    out.insert("s".into(), rest["symbol"].clone());
    for (short, long) in keys {
        if let Some(value) = rest.get(*long) {
            out.insert((*short).into(), value.clone());
        }
    }
    Value::Object(out)
}

/// The current kline of every subscribed kline stream: every second for
/// `1s`, every two seconds for longer intervals, as Binance pushes them.
fn push_klines(exchange: &Exchange, hub: &StreamHub, seconds: u64, now_us: u64) {
    let now = now_us / 1000;
    for stream in hub.subscribed_kinds("kline_") {
        let Some((symbol, kind)) = stream.split_once('@') else {
            continue;
        };
        let spec = kind.trim_start_matches("kline_");
        let (Some((length, zone_ms)), Some(id)) = (
            kline_stream(spec),
            exchange.catalog.market_id(&symbol.to_ascii_uppercase()),
        ) else {
            continue;
        };
        if length > 1_000 && seconds % 2 == 1 {
            continue;
        }
        let Ok(rows) = kline_rows(exchange, id, length, None, now, 1, zone_ms) else {
            continue;
        };
        let Some((open_time, next, candle)) = rows.last() else {
            continue;
        };
        let amount = |units: u64| Amount::from_units(units).to_string();
        let interval = spec.split('@').next().unwrap_or(spec);
        let market = exchange.catalog.symbol(id);
        hub.publish(
            &stream,
            &json!({
                "e": "kline", "E": now, "s": market,
                "k": {
                    "t": open_time, "T": next - 1, "s": market, "i": interval,
                    "f": candle.first_trade, "L": candle.last_trade,
                    "o": amount(candle.open), "c": amount(candle.close),
                    "h": amount(candle.high), "l": amount(candle.low),
                    "v": amount(candle.volume), "n": candle.trades(), "x": *next <= now,
                    "q": amount(candle.quote_volume), "V": amount(candle.taker_buy_volume),
                    "Q": amount(candle.taker_buy_quote_volume), "B": "0",
                },
            }),
            now_us,
        );
    }
}
