//! One coin in full: `/coins/{id}` (its market data from our markets),
//! `/coins/{id}/tickers` (each of our markets that trades it),
//! `/coins/{id}/history` (its price at a past day's start) and
//! `/coins/{platform}/contract/{address}` (the coin a token contract is).

use std::collections::BTreeMap;

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use weiport_exchange::{MarketId, now_ms};
use weiport_storage::{CandleSpan, ScanDirection};

use crate::coins::Coin;
use crate::decimal::Decimal;
use crate::params::Params;
use crate::quote::{DAY_MS, Pair, inverse, pair, quote};
use crate::reply::{error, ok};
use crate::state::{Markets, PriceFace, Shared};

/// This exchange as CoinGecko names a market's venue.
pub(crate) const VENUE_ID: &str = "weiport";
/// Its display name.
pub(crate) const VENUE_NAME: &str = "weiport";

fn raw(value: impl AsRef<RawValue>) -> Value {
    serde_json::from_str(value.as_ref().get()).unwrap_or(Value::Null)
}

/// The coin's figures in every vs-currency that prices it.
fn market_data<M: Markets>(face: &PriceFace<M>, coin: &Coin, now: u64) -> Value {
    let catalog = face.markets.catalog();
    let view = face.markets.view();
    let mut fields: BTreeMap<&str, Map<String, Value>> = BTreeMap::new();
    let mut last_updated = None;
    let mut change = (Value::Null, Value::Null);
    for vs in face.coins.vs_currencies() {
        let Some(asset) = face.coins.vs_asset(vs) else {
            continue;
        };
        let Some(quote) = pair(catalog, &coin.asset, asset).and_then(|p| quote(&view, p, now))
        else {
            continue;
        };
        let mut put = |name, value: Value| {
            fields.entry(name).or_default().insert(vs.to_owned(), value);
        };
        put("current_price", raw(quote.price.to_json()));
        put("total_volume", raw(quote.volume.to_json()));
        if let Some(high) = quote.high {
            put("high_24h", raw(high.to_json()));
        }
        if let Some(low) = quote.low {
            put("low_24h", raw(low.to_json()));
        }
        if let Some(cap) = coin
            .supply
            .and_then(|s| quote.price.times_amount(s.units()))
        {
            put("market_cap", raw(cap.to_json()));
        }
        if vs == "usd" {
            change = (
                quote.change.map_or(Value::Null, |c| raw(c.to_json())),
                quote.change_percent.map_or(Value::Null, |p| json!(p)),
            );
        }
        last_updated = last_updated.max(quote.updated_ms);
    }
    let supply = coin
        .supply
        .map_or(Value::Null, |s| raw(Decimal::amount(s.units()).to_json()));
    let mut data = Map::new();
    for name in [
        "current_price",
        "market_cap",
        "total_volume",
        "high_24h",
        "low_24h",
    ] {
        data.insert(
            name.into(),
            Value::Object(fields.remove(name).unwrap_or_default()),
        );
    }
    data.insert("price_change_24h".into(), change.0);
    data.insert("price_change_percentage_24h".into(), change.1);
    data.insert("circulating_supply".into(), supply.clone());
    data.insert("total_supply".into(), supply);
    data.insert("max_supply".into(), Value::Null);
    data.insert(
        "last_updated".into(),
        last_updated.map_or(Value::Null, |ms| json!(crate::listing::iso8601(ms))),
    );
    Value::Object(data)
}

/// Our markets that trade `coin`'s asset, as CoinGecko tickers.
pub(crate) fn tickers<M: Markets>(
    face: &PriceFace<M>,
    coin: Option<&Coin>,
    now: u64,
) -> Vec<Value> {
    let catalog = face.markets.catalog();
    let view = face.markets.view();
    let coin_of = |asset: &str| {
        face.coins
            .coins()
            .find(|c| c.asset == asset)
            .map(|c| c.id.clone())
    };
    let in_vs = |asset: &str, vs: &str, units: u64| -> Value {
        face.coins
            .vs_asset(vs)
            .and_then(|vs_asset| pair(catalog, asset, vs_asset))
            .and_then(|p| quote(&view, p, now))
            .and_then(|q| q.price.times_amount(units))
            .map_or(Value::Null, |d| raw(d.to_json()))
    };
    let mut out = Vec::new();
    for (id, _) in catalog.markets() {
        let Some((base, quoted)) = catalog.pair(id) else {
            continue;
        };
        let (base, target) = (catalog.asset(base), catalog.asset(quoted));
        if coin.is_some_and(|c| c.asset != base && c.asset != target) {
            continue;
        }
        let Some(book) = view.market(id) else {
            continue;
        };
        let Some(last) = book.last_trade else {
            continue;
        };
        let day = book.window(now, DAY_MS);
        let volume = day.map_or(0, |d| d.volume);
        let spread = match (book.bids.keys().next_back(), book.asks.keys().next()) {
            (Some(bid), Some(ask)) if bid.units() > 0 => {
                json!((ask.units() - bid.units()) as f64 * 100.0 / ask.units() as f64)
            }
            _ => Value::Null,
        };
        let traded = crate::listing::iso8601(last.time_ms);
        out.push(json!({
            "base": base,
            "target": target,
            "market": { "name": VENUE_NAME, "identifier": VENUE_ID, "has_trading_incentive": false },
            "last": raw(Decimal::amount(last.price.units()).to_json()),
            "volume": raw(Decimal::amount(volume).to_json()),
            "converted_last": {
                "btc": in_vs(base, "btc", 100_000_000),
                "eth": in_vs(base, "eth", 100_000_000),
                "usd": in_vs(base, "usd", 100_000_000),
            },
            "converted_volume": {
                "btc": in_vs(base, "btc", volume),
                "eth": in_vs(base, "eth", volume),
                "usd": in_vs(base, "usd", volume),
            },
            "trust_score": null,
            "bid_ask_spread_percentage": spread,
            "timestamp": traded,
            "last_traded_at": traded,
            "last_fetch_at": crate::listing::iso8601(now),
            "is_anomaly": false,
            "is_stale": false,
            "trade_url": null,
            "token_info_url": null,
            "coin_id": coin_of(base),
            "target_coin_id": coin_of(target),
        }));
    }
    out
}

/// `GET /api/v3/coins/{id}`.
pub(crate) async fn coin<M: Markets>(
    State(face): Shared<M>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    let Some(coin) = face.coins.coin(&id) else {
        return error(StatusCode::NOT_FOUND, "coin not found");
    };
    describe(&face, coin, &Params::new(query.as_deref()))
}

/// A coin's whole description, its parts as `params` ask.
fn describe<M: Markets>(face: &PriceFace<M>, coin: &Coin, params: &Params) -> Response {
    let wanted = |name: &str| params.get(name) != Some("false");
    let now = now_ms();
    let contracts = face.coins.contracts_of(&coin.id);
    let platforms: Map<String, Value> = contracts
        .iter()
        .map(|(platform, address)| (platform.clone(), json!(address)))
        .collect();
    let mut body = json!({
        "id": coin.id,
        "symbol": coin.asset.to_ascii_lowercase(),
        "name": coin.name,
        "asset_platform_id": contracts.first().map(|(platform, _)| platform.clone()),
        "platforms": platforms,
        "categories": [],
        "description": { "en": "" },
        "links": { "homepage": [] },
        "image": { "thumb": null, "small": null, "large": null },
        "market_cap_rank": null,
        "last_updated": crate::listing::iso8601(now),
    });
    if wanted("market_data") {
        body["market_data"] = market_data(face, coin, now);
    }
    if wanted("tickers") {
        body["tickers"] = Value::Array(tickers(face, Some(coin), now));
    }
    ok(&body)
}

/// `GET /api/v3/coins/{id}/tickers`.
pub(crate) async fn coin_tickers<M: Markets>(
    State(face): Shared<M>,
    Path(id): Path<String>,
) -> Response {
    let Some(coin) = face.coins.coin(&id) else {
        return error(StatusCode::NOT_FOUND, "coin not found");
    };
    ok(&json!({ "name": coin.name, "tickers": tickers(&face, Some(coin), now_ms()) }))
}

/// `GET /api/v3/coins/{platform}/contract/{address}`: the coin a token
/// contract is, by `[coingecko] contracts`.
pub(crate) async fn coin_by_contract<M: Markets>(
    State(face): Shared<M>,
    Path((platform, address)): Path<(String, String)>,
    RawQuery(query): RawQuery,
) -> Response {
    let Some(coin) = face
        .coins
        .coin_of_contract(&platform, &address)
        .and_then(|id| face.coins.coin(id))
    else {
        return error(StatusCode::NOT_FOUND, "coin not found");
    };
    describe(&face, coin, &Params::new(query.as_deref()))
}

/// `dd-mm-yyyy` as the ms of that day's start (UTC).
fn day_start(date: &str) -> Option<u64> {
    let mut parts = date.split('-');
    let day: u32 = parts.next()?.parse().ok()?;
    let month: u32 = parts.next()?.parse().ok()?;
    let year: i64 = parts.next()?.parse().ok()?;
    if parts.next().is_some() || !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    // Days from civil (proleptic Gregorian).
    let y = year - i64::from(month <= 2);
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    u64::try_from(days).ok().map(|d| d * DAY_MS)
}

/// `GET /api/v3/coins/{id}/history?date=dd-mm-yyyy`: the coin's price in
/// each vs-currency at the first trade of that day (00:00 UTC on), and
/// that day's volume.
pub(crate) async fn coin_history<M: Markets>(
    State(face): Shared<M>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    let params = Params::new(query.as_deref());
    let Some(coin) = face.coins.coin(&id) else {
        return error(StatusCode::NOT_FOUND, "coin not found");
    };
    let start = match params.required("date") {
        Ok(date) => match day_start(date) {
            Some(start) => start,
            None => return error(StatusCode::BAD_REQUEST, "invalid date: dd-mm-yyyy"),
        },
        Err(refusal) => return *refusal,
    };
    let catalog = face.markets.catalog();
    let (mut prices, mut volumes) = (Map::new(), Map::new());
    for vs in face.coins.vs_currencies() {
        let Some(asset) = face.coins.vs_asset(vs) else {
            continue;
        };
        let (market, inverted): (MarketId, bool) = match pair(catalog, &coin.asset, asset) {
            Some(Pair::Direct(m)) => (m, false),
            Some(Pair::Inverse(m)) => (m, true),
            _ => continue,
        };
        let day = face
            .markets
            .history()
            .candles(market, CandleSpan::Day, start, ScanDirection::Forward)
            .next();
        let Some(Ok(candle)) = day else { continue };
        if candle.open_time != start {
            continue;
        }
        let (price, volume) = if inverted {
            (inverse(candle.open), Decimal::amount(candle.volume))
        } else {
            (
                Decimal::amount(candle.open),
                Decimal::amount(candle.quote_volume),
            )
        };
        prices.insert(vs.to_owned(), raw(price.to_json()));
        volumes.insert(vs.to_owned(), raw(volume.to_json()));
    }
    let mut body = json!({
        "id": coin.id,
        "symbol": coin.asset.to_ascii_lowercase(),
        "name": coin.name,
    });
    if !prices.is_empty() {
        body["market_data"] = json!({
            "current_price": prices,
            "market_cap": {},
            "total_volume": volumes,
        });
    }
    ok(&body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_day_starts_in_utc() {
        assert_eq!(day_start("01-01-1970"), Some(0));
        assert_eq!(day_start("29-02-2000"), Some(951_782_400_000));
        assert_eq!(day_start("26-11-2026"), Some(20_783 * DAY_MS));
        for bad in [
            "",
            "1-1",
            "32-01-2020",
            "01-13-2020",
            "a-b-c",
            "01-01-2020-1",
        ] {
            assert_eq!(day_start(bad), None, "{bad}");
        }
    }
}
