//! The coin listings: `/coins/list` and `/coins/markets`, each coin with
//! its market figures in a vs-currency.

use std::collections::BTreeMap;

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use weiport_exchange::now_ms;

use crate::coins::Coin;
use crate::decimal::Decimal;
use crate::params::Params;
use crate::quote::{DAY_MS, Quote, Signed, pair, quote};
use crate::reply::{error, float, ok};
use crate::state::{Markets, Shared};

/// `GET /api/v3/coins/list`.
pub(crate) async fn coins_list<M: Markets>(State(face): Shared<M>) -> Response {
    let list: Vec<Value> = face
        .coins
        .coins()
        .map(|c| json!({ "id": c.id, "symbol": c.asset.to_ascii_lowercase(), "name": c.name }))
        .collect();
    ok(&list)
}

/// `2024-03-25T08:45:00.000Z` of a time in ms.
pub(crate) fn iso8601(ms: u64) -> String {
    let days = (ms / DAY_MS) as i64;
    let rest = ms % DAY_MS;
    // Civil date of a day count since 1970-01-01 (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3_600_000,
        rest / 60_000 % 60,
        rest / 1000 % 60,
        rest % 1000
    )
}

/// `GET /api/v3/coins/markets`.
pub(crate) async fn coins_markets<M: Markets>(
    State(face): Shared<M>,
    RawQuery(query): RawQuery,
) -> Response {
    let params = Params::new(query.as_deref());
    let vs = match params.required("vs_currency") {
        Ok(vs) => vs.to_ascii_lowercase(),
        Err(refusal) => return *refusal,
    };
    let Some(vs_asset) = face.coins.vs_asset(&vs) else {
        return error(StatusCode::BAD_REQUEST, "invalid vs_currency");
    };
    let page_number = |name: &str, default: usize, max: usize| match params.get(name) {
        None => Ok(default),
        Some(text) => text
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=max).contains(n))
            .ok_or_else(|| format!("invalid {name}")),
    };
    let (per_page, page) = match (
        page_number("per_page", 100, 250),
        page_number("page", 1, usize::MAX),
    ) {
        (Ok(per_page), Ok(page)) => (per_page, page),
        (Err(message), _) | (_, Err(message)) => {
            return error(StatusCode::BAD_REQUEST, &message);
        }
    };
    let wanted = params.list("ids");
    let catalog = face.markets.catalog();
    let view = face.markets.view();
    let now = now_ms();
    let mut rows: Vec<(&Coin, Quote, Option<Decimal>)> = face
        .coins
        .coins()
        .filter(|coin| wanted.is_empty() || wanted.contains(&coin.id))
        .filter_map(|coin| {
            let quote = quote(&view, pair(catalog, &coin.asset, vs_asset)?, now)?;
            let cap = coin
                .supply
                .and_then(|supply| quote.price.times_amount(supply.units()));
            Some((coin, quote, cap))
        })
        .collect();
    drop(view);
    let number = |d: &Decimal| d.to_string().parse::<f64>().unwrap_or(0.0);
    let by_volume = |a: &(&Coin, Quote, Option<Decimal>), b: &(&Coin, Quote, Option<Decimal>)| {
        number(&a.1.volume).total_cmp(&number(&b.1.volume))
    };
    let by_cap = |a: &(&Coin, Quote, Option<Decimal>), b: &(&Coin, Quote, Option<Decimal>)| {
        let cap = |row: &(&Coin, Quote, Option<Decimal>)| row.2.as_ref().map_or(-1.0, number);
        cap(a).total_cmp(&cap(b)).then_with(|| by_volume(a, b))
    };
    match params.get("order").unwrap_or("market_cap_desc") {
        "market_cap_desc" => rows.sort_by(|a, b| by_cap(b, a)),
        "market_cap_asc" => rows.sort_by(by_cap),
        "volume_desc" => rows.sort_by(|a, b| by_volume(b, a)),
        "volume_asc" => rows.sort_by(by_volume),
        "id_asc" => rows.sort_by(|a, b| a.0.id.cmp(&b.0.id)),
        "id_desc" => rows.sort_by(|a, b| b.0.id.cmp(&a.0.id)),
        _ => return error(StatusCode::BAD_REQUEST, "invalid order"),
    }
    let null = || RawValue::from_string("null".into()).expect("null");
    let optional = |d: Option<Decimal>| d.map_or_else(null, Decimal::to_json);
    let list: Vec<BTreeMap<&str, Box<RawValue>>> = rows
        .into_iter()
        .skip((page - 1).saturating_mul(per_page))
        .take(per_page)
        .map(|(coin, quote, cap)| {
            let text = |s: &str| RawValue::from_string(json!(s).to_string()).expect("a string");
            BTreeMap::from([
                ("id", text(&coin.id)),
                ("symbol", text(&coin.asset.to_ascii_lowercase())),
                ("name", text(&coin.name)),
                ("image", null()),
                ("current_price", quote.price.to_json()),
                ("market_cap", optional(cap)),
                ("market_cap_rank", null()),
                ("fully_diluted_valuation", null()),
                ("total_volume", quote.volume.to_json()),
                ("high_24h", optional(quote.high)),
                ("low_24h", optional(quote.low)),
                (
                    "price_change_24h",
                    quote.change.map_or_else(null, Signed::to_json),
                ),
                (
                    "price_change_percentage_24h",
                    quote.change_percent.map_or_else(null, float),
                ),
                (
                    "circulating_supply",
                    optional(coin.supply.map(|s| Decimal::amount(s.units()))),
                ),
                (
                    "total_supply",
                    optional(coin.supply.map(|s| Decimal::amount(s.units()))),
                ),
                ("max_supply", null()),
                (
                    "last_updated",
                    quote.updated_ms.map_or_else(null, |ms| text(&iso8601(ms))),
                ),
            ])
        })
        .collect();
    ok(&list)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_times_are_utc_civil_dates() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(1_711_356_300_123), "2024-03-25T08:45:00.123Z");
        assert_eq!(iso8601(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }
}
