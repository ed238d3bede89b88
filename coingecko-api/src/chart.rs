//! `/coins/{id}/market_chart`: a coin's prices, market caps and volumes
//! over time, from the exchange's candles.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::value::RawValue;
use weiport_exchange::now_ms;
use weiport_storage::{CandleRow, CandleSpan, ScanDirection};

use crate::decimal::Decimal;
use crate::params::Params;
use crate::quote::{DAY_MS, Pair, inverse, pair};
use crate::reply::{error, ok};
use crate::state::{Markets, Shared};

/// `GET /api/v3/coins/{id}/market_chart`: prices and volumes from our
/// candles, five-minutely for a day, hourly up to 90 days, daily beyond.
pub(crate) async fn market_chart<M: Markets>(
    State(face): Shared<M>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    let params = Params::new(query.as_deref());
    let (coin, vs_asset) = match coin_and_vs(&face, &id, &params) {
        Ok(found) => found,
        Err(refusal) => return *refusal,
    };
    let days = match days_param(&params) {
        Ok(days) => days,
        Err(refusal) => return *refusal,
    };
    let now = now_ms();
    let start = now.saturating_sub(days * DAY_MS);
    chart(&face, coin, vs_asset, (start, now))
}

/// `GET /api/v3/coins/{id}/market_chart/range`: the same between `from`
/// and `to` (Unix seconds), its granularity by the range's length.
pub(crate) async fn market_chart_range<M: Markets>(
    State(face): Shared<M>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    let params = Params::new(query.as_deref());
    let (coin, vs_asset) = match coin_and_vs(&face, &id, &params) {
        Ok(found) => found,
        Err(refusal) => return *refusal,
    };
    let seconds = |name: &str| -> Result<u64, Box<Response>> {
        params
            .required(name)?
            .parse::<f64>()
            .ok()
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(|s| s as u64)
            .ok_or_else(|| Box::new(error(StatusCode::BAD_REQUEST, &format!("invalid {name}"))))
    };
    let (from, to) = match (seconds("from"), seconds("to")) {
        (Ok(from), Ok(to)) if from <= to => (from * 1000, (to * 1000).min(now_ms())),
        (Ok(_), Ok(_)) => return error(StatusCode::BAD_REQUEST, "from is after to"),
        (Err(refusal), _) | (_, Err(refusal)) => return *refusal,
    };
    chart(&face, coin, vs_asset, (from, to))
}

/// `days`: a positive number or `max` (ten years).
fn days_param(params: &Params) -> Result<u64, Box<Response>> {
    match params.required("days")? {
        "max" => Ok(3_650),
        text => match text.parse::<u64>() {
            Ok(days) if days >= 1 => Ok(days.min(3_650)),
            _ => Err(Box::new(error(
                StatusCode::BAD_REQUEST,
                "invalid days: a positive number or max",
            ))),
        },
    }
}

/// One OHLC row: its close time, then open, high, low and close.
type OhlcRow = (
    u64,
    Box<RawValue>,
    Box<RawValue>,
    Box<RawValue>,
    Box<RawValue>,
);

/// `GET /api/v3/coins/{id}/ohlc`: open, high, low and close of each
/// half hour (up to 2 days), 4 hours (to 30) or 4 days (beyond), each
/// stamped with its close time.
pub(crate) async fn ohlc<M: Markets>(
    State(face): Shared<M>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    let params = Params::new(query.as_deref());
    let (coin, vs_asset) = match coin_and_vs(&face, &id, &params) {
        Ok(found) => found,
        Err(refusal) => return *refusal,
    };
    let days = match days_param(&params) {
        Ok(days) => days,
        Err(refusal) => return *refusal,
    };
    let granularity = match days {
        1..=2 => (CandleSpan::Minute, 30 * 60_000),
        3..=30 => (CandleSpan::Hour, 4 * 3_600_000),
        _ => (CandleSpan::Day, 4 * DAY_MS),
    };
    let now = now_ms();
    let range = (now.saturating_sub(days * DAY_MS), now);
    let (buckets, inverted) = match buckets(&face, coin, vs_asset, range, granularity) {
        Ok(found) => found,
        Err(refusal) => return *refusal,
    };
    let rows: Vec<OhlcRow> = buckets
        .into_iter()
        .map(|b| {
            let close_time = b.open_time + granularity.1;
            let price = |units| {
                if inverted {
                    inverse(units).to_json()
                } else {
                    Decimal::amount(units).to_json()
                }
            };
            // Inverted, the highest price of the market is the lowest of the coin.
            let (high, low) = if inverted {
                (b.low, b.high)
            } else {
                (b.high, b.low)
            };
            (
                close_time,
                price(b.open),
                price(high),
                price(low),
                price(b.close),
            )
        })
        .collect();
    ok(&rows)
}

/// The coin `id` and the asset of `vs_currency`, or the refusal.
pub(crate) fn coin_and_vs<'a, M: Markets>(
    face: &'a crate::state::PriceFace<M>,
    id: &str,
    params: &Params,
) -> Result<(&'a crate::coins::Coin, &'a str), Box<Response>> {
    let coin = face
        .coins
        .coin(id)
        .ok_or_else(|| Box::new(error(StatusCode::NOT_FOUND, "coin not found")))?;
    let vs = params.required("vs_currency")?.to_ascii_lowercase();
    let vs_asset = face
        .coins
        .vs_asset(&vs)
        .ok_or_else(|| Box::new(error(StatusCode::BAD_REQUEST, "invalid vs_currency")))?;
    Ok((coin, vs_asset))
}

/// Candles of `coin` in `vs_asset` merged into buckets of `bucket_ms` over
/// `(start, end)` ms, each with its price inverted where the market is
/// the other way round; none where no market prices the pair.
pub(crate) fn buckets<M: Markets>(
    face: &crate::state::PriceFace<M>,
    coin: &crate::coins::Coin,
    vs_asset: &str,
    (start, end): (u64, u64),
    (span, bucket_ms): (CandleSpan, u64),
) -> Result<(Vec<CandleRow>, bool), Box<Response>> {
    let catalog = face.markets.catalog();
    let (market, inverted) = match pair(catalog, &coin.asset, vs_asset) {
        Some(Pair::Direct(market)) => (market, false),
        Some(Pair::Inverse(market)) => (market, true),
        Some(Pair::Same) | None => return Ok((Vec::new(), false)),
    };
    let first = start - start % bucket_ms;
    let mut buckets: Vec<CandleRow> = Vec::new();
    for row in face
        .markets
        .history()
        .candles(market, span, first, ScanDirection::Forward)
    {
        let Ok(candle) = row else {
            return Err(Box::new(error(
                StatusCode::SERVICE_UNAVAILABLE,
                "history unavailable",
            )));
        };
        if candle.open_time > end {
            break;
        }
        let open_time = candle.open_time - candle.open_time % bucket_ms;
        match buckets.last_mut() {
            Some(last) if last.open_time == open_time => {
                weiport_exchange::history::merge_later(last, &candle);
            }
            _ => buckets.push(CandleRow {
                open_time,
                ..candle
            }),
        }
    }
    Ok((buckets, inverted))
}

/// Prices, market caps and volumes of `coin` in `vs_asset` over
/// `(start, end)` ms: five-minutely up to a day, hourly to 90, daily beyond.
fn chart<M: Markets>(
    face: &crate::state::PriceFace<M>,
    coin: &crate::coins::Coin,
    vs_asset: &str,
    (start, end): (u64, u64),
) -> Response {
    let granularity = match end.saturating_sub(start) {
        length if length <= DAY_MS => (CandleSpan::Minute, 5 * 60_000),
        length if length <= 90 * DAY_MS => (CandleSpan::Hour, 3_600_000),
        _ => (CandleSpan::Day, DAY_MS),
    };
    let (buckets, inverted) = match buckets(face, coin, vs_asset, (start, end), granularity) {
        Ok(found) => found,
        Err(refusal) => return *refusal,
    };
    let mut prices: Vec<(u64, Box<RawValue>)> = Vec::new();
    let mut volumes = Vec::new();
    let mut caps = Vec::new();
    for bucket in buckets {
        let (price, volume) = if inverted {
            (inverse(bucket.close), Decimal::amount(bucket.volume))
        } else {
            (
                Decimal::amount(bucket.close),
                Decimal::amount(bucket.quote_volume),
            )
        };
        let cap = coin
            .supply
            .and_then(|supply| price.times_amount(supply.units()))
            .unwrap_or(Decimal::amount(0));
        caps.push((bucket.open_time, cap.to_json()));
        volumes.push((bucket.open_time, volume.to_json()));
        prices.push((bucket.open_time, price.to_json()));
    }
    #[derive(serde::Serialize)]
    struct Chart {
        prices: Vec<(u64, Box<RawValue>)>,
        market_caps: Vec<(u64, Box<RawValue>)>,
        total_volumes: Vec<(u64, Box<RawValue>)>,
    }
    ok(&Chart {
        prices,
        market_caps: caps,
        total_volumes: volumes,
    })
}
