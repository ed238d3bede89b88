//! `/simple/price` and `/simple/supported_vs_currencies`: what price bots ask.

use std::collections::BTreeMap;
use std::sync::PoisonError;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::Response;
use serde_json::value::RawValue;
use weiport_exchange::now_ms;

use crate::params::Params;
use crate::quote::{pair, quote};
use crate::reply::{error, float, json_bytes, ok};
use crate::state::{Answer, MAX_ANSWERS, Markets, PriceFace, Shared};

/// `GET /api/v3/simple/price`: answered again from the cache while the
/// market data it shows is unchanged (price bots ask the same every second).
pub(crate) async fn simple_price<M: Markets>(State(face): Shared<M>, uri: Uri) -> Response {
    let query = uri.query().unwrap_or_default();
    let (sequence, minute) = (face.markets.view().sequence, now_ms() / 60_000);
    let answers = || face.answers.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(answer) = answers().get(query)
        && (answer.sequence, answer.minute) == (sequence, minute)
    {
        return json_bytes(answer.body.clone());
    }
    let body = match price_answer(&face, query, None) {
        Ok(body) => body,
        Err(refusal) => return *refusal,
    };
    let mut cached = answers();
    if cached.len() >= MAX_ANSWERS {
        cached.clear();
    }
    let answer = Answer {
        sequence,
        minute,
        body: body.clone(),
    };
    cached.insert(query.to_owned(), answer);
    json_bytes(body)
}

/// The body of a `simple/price` answer (`simple/token_price` on `platform`),
/// or its refusal.
fn price_answer<M: Markets>(
    face: &PriceFace<M>,
    query: &str,
    platform: Option<&str>,
) -> Result<Bytes, Box<Response>> {
    let refuse = |refusal: Response| Err(Box::new(refusal));
    let params = Params::new(Some(query));
    if let Err(refusal) = params.required("vs_currencies") {
        return refuse(*refusal);
    }
    let precision = match params.get("precision") {
        None | Some("full") => None,
        Some(digits) => match digits.parse::<u32>() {
            Ok(digits) if digits <= 18 => Some(digits),
            _ => {
                return refuse(error(
                    StatusCode::BAD_REQUEST,
                    "invalid precision: full or 0-18",
                ));
            }
        },
    };
    let (cap, volume, change, updated) = (
        params.flag("include_market_cap"),
        params.flag("include_24hr_vol"),
        params.flag("include_24hr_change"),
        params.flag("include_last_updated_at"),
    );
    let catalog = face.markets.catalog();
    let view = face.markets.view();
    let now = now_ms();
    let mut out: BTreeMap<String, BTreeMap<String, Box<RawValue>>> = BTreeMap::new();
    // By `ids` (keyed by id), by `symbols` (keyed by symbol), or by token
    // contract (`contract_addresses` on a platform; keyed by the address).
    let mut wanted: Vec<(String, &crate::coins::Coin)> = Vec::new();
    for id in params.list("ids") {
        wanted.extend(face.coins.coin(&id).map(|coin| (coin.id.clone(), coin)));
    }
    for symbol in params.list("symbols") {
        let symbol = symbol.to_ascii_lowercase();
        if let Some(coin) = face.coins.coin_of_symbol(&symbol) {
            wanted.push((symbol, coin));
        }
    }
    if let Some(platform) = platform {
        for address in params.list("contract_addresses") {
            let coin = face
                .coins
                .coin_of_contract(platform, &address)
                .and_then(|id| face.coins.coin(id));
            if let Some(coin) = coin {
                wanted.push((address.to_ascii_lowercase(), coin));
            }
        }
    }
    for (key, coin) in wanted {
        let mut fields = BTreeMap::new();
        let mut last_updated = None;
        for vs in params.list("vs_currencies") {
            let Some(quote) = face
                .coins
                .vs_asset(&vs)
                .and_then(|asset| pair(catalog, &coin.asset, asset))
                .and_then(|pair| quote(&view, pair, now))
            else {
                continue;
            };
            let price = precision.map_or(quote.price, |p| quote.price.rounded(p));
            fields.insert(vs.clone(), price.to_json());
            if cap
                && let Some(supply) = coin.supply
                && let Some(value) = quote.price.times_amount(supply.units())
            {
                fields.insert(format!("{vs}_market_cap"), value.to_json());
            }
            if volume {
                fields.insert(format!("{vs}_24h_vol"), quote.volume.to_json());
            }
            if change {
                let value = quote.change_percent.map_or_else(
                    || RawValue::from_string("null".into()).expect("null"),
                    float,
                );
                fields.insert(format!("{vs}_24h_change"), value);
            }
            last_updated = last_updated.max(quote.updated_ms.map(|ms| ms / 1000));
        }
        if fields.is_empty() {
            continue;
        }
        if updated && let Some(seconds) = last_updated {
            fields.insert("last_updated_at".into(), float(seconds as f64));
        }
        out.insert(key, fields);
    }
    match serde_json::to_vec(&out) {
        Ok(body) => Ok(body.into()),
        Err(_) => refuse(error(StatusCode::INTERNAL_SERVER_ERROR, "internal error")),
    }
}

/// `GET /api/v3/simple/token_price/{platform}`: prices of the tokens whose
/// contracts `[coingecko] contracts` names on that platform.
pub(crate) async fn token_price<M: Markets>(
    State(face): Shared<M>,
    axum::extract::Path(platform): axum::extract::Path<String>,
    uri: Uri,
) -> Response {
    let query = uri.query().unwrap_or_default();
    if let Err(refusal) = Params::new(Some(query)).required("contract_addresses") {
        return *refusal;
    }
    match price_answer(&face, query, Some(&platform)) {
        Ok(body) => json_bytes(body),
        Err(refusal) => *refusal,
    }
}

/// `GET /api/v3/simple/supported_vs_currencies`.
pub(crate) async fn supported_vs_currencies<M: Markets>(State(face): Shared<M>) -> Response {
    ok(&face.coins.vs_currencies().collect::<Vec<_>>())
}
