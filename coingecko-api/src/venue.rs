//! This exchange as CoinGecko describes exchanges, and the listings built
//! on its figures: `/exchanges`, `/exchanges/{id}`, `/exchanges/{id}/tickers`,
//! `/search` and `/global`.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Map, Value, json};
use weiport_exchange::now_ms;

use crate::decimal::Decimal;
use crate::detail::{VENUE_ID, VENUE_NAME, tickers};
use crate::params::Params;
use crate::quote::{DAY_MS, pair, quote};
use crate::reply::{error, ok};
use crate::state::{Markets, PriceFace};

/// What every market traded in 24 hours, in BTC where a market prices BTC
/// against their quote assets (else none).
fn volume_btc<M: Markets>(face: &PriceFace<M>, now: u64) -> Value {
    let catalog = face.markets.catalog();
    let view = face.markets.view();
    let Some(btc) = face.coins.vs_asset("btc") else {
        return Value::Null;
    };
    let mut total = 0f64;
    let mut priced = false;
    for (id, _) in catalog.markets() {
        let (Some((_, quoted)), Some(book)) = (catalog.pair(id), view.market(id)) else {
            continue;
        };
        let volume = book.window(now, DAY_MS).map_or(0, |d| d.quote_volume);
        let in_btc = pair(catalog, catalog.asset(quoted), btc)
            .and_then(|p| quote(&view, p, now))
            .and_then(|q| q.price.times_amount(volume));
        if let Some(value) = in_btc {
            total += value.to_string().parse::<f64>().unwrap_or(0.0);
            priced = true;
        }
    }
    if priced { json!(total) } else { Value::Null }
}

fn summary<M: Markets>(face: &PriceFace<M>, now: u64) -> Value {
    let volume = volume_btc(face, now);
    json!({
        "id": VENUE_ID,
        "name": VENUE_NAME,
        "year_established": null,
        "country": null,
        "description": "",
        "url": "",
        "image": null,
        "has_trading_incentive": false,
        "trust_score": null,
        "trust_score_rank": null,
        "trade_volume_24h_btc": volume,
        "trade_volume_24h_btc_normalized": volume,
    })
}

/// `GET /api/v3/exchanges`: this exchange.
pub(crate) async fn exchanges<M: Markets>(State(face): crate::state::Shared<M>) -> Response {
    ok(&json!([summary(&face, now_ms())]))
}

/// `GET /api/v3/exchanges/{id}`: this exchange with its tickers.
pub(crate) async fn exchange<M: Markets>(
    State(face): crate::state::Shared<M>,
    Path(id): Path<String>,
) -> Response {
    if id != VENUE_ID {
        return error(StatusCode::NOT_FOUND, "exchange not found");
    }
    let now = now_ms();
    let mut body = summary(&face, now);
    body["tickers"] = Value::Array(tickers(&face, None, now));
    ok(&body)
}

/// `GET /api/v3/exchanges/{id}/tickers` (`coin_ids` narrows them).
pub(crate) async fn exchange_tickers<M: Markets>(
    State(face): crate::state::Shared<M>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    if id != VENUE_ID {
        return error(StatusCode::NOT_FOUND, "exchange not found");
    }
    let params = Params::new(query.as_deref());
    let wanted = params.list("coin_ids");
    let all = tickers(&face, None, now_ms());
    let list: Vec<Value> = all
        .into_iter()
        .filter(|t| {
            wanted.is_empty()
                || wanted.iter().any(|w| {
                    t["coin_id"].as_str() == Some(w.as_str())
                        || t["target_coin_id"].as_str() == Some(w.as_str())
                })
        })
        .collect();
    ok(&json!({ "name": VENUE_NAME, "tickers": list }))
}

/// `GET /api/v3/search?query=`: coins whose id, name or symbol contain it,
/// and this exchange if its name does.
pub(crate) async fn search<M: Markets>(
    State(face): crate::state::Shared<M>,
    RawQuery(query): RawQuery,
) -> Response {
    let params = Params::new(query.as_deref());
    let wanted = match params.required("query") {
        Ok(text) => text.to_ascii_lowercase(),
        Err(refusal) => return *refusal,
    };
    let coins: Vec<Value> = face
        .coins
        .coins()
        .filter(|c| {
            c.id.contains(&wanted)
                || c.name.to_ascii_lowercase().contains(&wanted)
                || c.asset.to_ascii_lowercase().contains(&wanted)
        })
        .map(|c| {
            json!({
                "id": c.id, "name": c.name, "api_symbol": c.id, "symbol": c.asset,
                "market_cap_rank": null, "thumb": null, "large": null,
            })
        })
        .collect();
    let exchanges: Vec<Value> = VENUE_NAME
        .contains(&wanted)
        .then(|| {
            json!({ "id": VENUE_ID, "name": VENUE_NAME, "market_type": "spot", "thumb": null, "large": null })
        })
        .into_iter()
        .collect();
    ok(&json!({ "coins": coins, "exchanges": exchanges, "icos": [], "categories": [], "nfts": [] }))
}

/// `GET /api/v3/global`: the figures of the coins this exchange prices.
pub(crate) async fn global<M: Markets>(State(face): crate::state::Shared<M>) -> Response {
    let now = now_ms();
    let catalog = face.markets.catalog();
    let view = face.markets.view();
    let (mut caps, mut volumes) = (Map::new(), Map::new());
    let mut usd_caps: Vec<(String, f64)> = Vec::new();
    for vs in face.coins.vs_currencies() {
        let Some(vs_asset) = face.coins.vs_asset(vs) else {
            continue;
        };
        let (mut cap, mut volume) = (0f64, 0f64);
        for coin in face.coins.coins() {
            let Some(q) = pair(catalog, &coin.asset, vs_asset).and_then(|p| quote(&view, p, now))
            else {
                continue;
            };
            let number = |d: Decimal| d.to_string().parse::<f64>().unwrap_or(0.0);
            volume += number(q.volume);
            if let Some(value) = coin.supply.and_then(|s| q.price.times_amount(s.units())) {
                cap += number(value);
                if vs == "usd" {
                    usd_caps.push((coin.asset.to_ascii_lowercase(), number(value)));
                }
            }
        }
        caps.insert(vs.to_owned(), json!(cap));
        volumes.insert(vs.to_owned(), json!(volume));
    }
    let total: f64 = usd_caps.iter().map(|(_, c)| c).sum();
    let shares: Map<String, Value> = usd_caps
        .into_iter()
        .filter(|_| total > 0.0)
        .map(|(symbol, cap)| (symbol, json!(cap * 100.0 / total)))
        .collect();
    ok(&json!({ "data": {
        "active_cryptocurrencies": face.coins.coins().count(),
        "upcoming_icos": 0,
        "ongoing_icos": 0,
        "ended_icos": 0,
        "markets": catalog.markets().count(),
        "total_market_cap": caps,
        "total_volume": volumes,
        "market_cap_percentage": shares,
        "market_cap_change_percentage_24h_usd": null,
        "updated_at": now / 1000,
    }}))
}
