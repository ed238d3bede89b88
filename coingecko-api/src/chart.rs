//! `/coins/{id}/market_chart`: a coin's prices, market caps and volumes
//! over time, from the exchange's candles.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::json;
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
    let Some(coin) = face.coins.coin(&id) else {
        return error(StatusCode::NOT_FOUND, "coin not found");
    };
    let vs = match params.required("vs_currency") {
        Ok(vs) => vs.to_ascii_lowercase(),
        Err(refusal) => return *refusal,
    };
    let Some(vs_asset) = face.coins.vs_asset(&vs) else {
        return error(StatusCode::BAD_REQUEST, "invalid vs_currency");
    };
    let days = match params.required("days") {
        Ok("max") => 3_650,
        Ok(text) => match text.parse::<u64>() {
            Ok(days) if days >= 1 => days.min(3_650),
            _ => {
                return error(
                    StatusCode::BAD_REQUEST,
                    "invalid days: a positive number or max",
                );
            }
        },
        Err(refusal) => return *refusal,
    };
    let catalog = face.markets.catalog();
    let now = now_ms();
    let start = now.saturating_sub(days * DAY_MS);
    let (span, bucket_ms) = match days {
        1 => (CandleSpan::Minute, 5 * 60_000),
        2..=90 => (CandleSpan::Hour, 3_600_000),
        _ => (CandleSpan::Day, DAY_MS),
    };
    let mut prices: Vec<(u64, Box<RawValue>)> = Vec::new();
    let mut volumes = Vec::new();
    let mut caps = Vec::new();
    let (market, inverted) = match pair(catalog, &coin.asset, vs_asset) {
        Some(Pair::Direct(market)) => (market, false),
        Some(Pair::Inverse(market)) => (market, true),
        Some(Pair::Same) | None => {
            return ok(&json!({ "prices": [], "market_caps": [], "total_volumes": [] }));
        }
    };
    let first = start - start % bucket_ms;
    let mut buckets: Vec<CandleRow> = Vec::new();
    for row in face
        .markets
        .history()
        .candles(market, span, first, ScanDirection::Forward)
    {
        let Ok(candle) = row else {
            return error(StatusCode::SERVICE_UNAVAILABLE, "history unavailable");
        };
        if candle.open_time > now {
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
