//! weiport's CoinGecko-compatible price API: `/api/v3/simple/price` and the
//! coin list, markets and charts, priced from the exchange's own markets
//! (last trades, rolling statistics, candles). It reads market data only.

mod coins;
mod decimal;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError, RwLockReadGuard};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::MethodFilter;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use weiport_access::{Access, AccessError, Endpoint, Face, Permission, Security, guard};
use weiport_exchange::history::History;
use weiport_exchange::view::View;
use weiport_exchange::{Catalog, MarketId, now_ms};
use weiport_storage::{CandleRow, CandleSpan, ScanDirection};

pub use coins::{BadCoinConfig, Coin, CoinConfig, CoinTable};
use decimal::Decimal;

/// What the price face reads of the exchange.
pub trait Markets: Send + Sync + 'static {
    /// Markets and assets.
    fn catalog(&self) -> &Catalog;
    /// The current market data.
    fn view(&self) -> RwLockReadGuard<'_, View>;
    /// Stored candles.
    fn history(&self) -> &History;
}

const DAY_MS: u64 = 86_400_000;

/// How a coin is priced in a vs-currency's asset.
#[derive(Debug, Clone, Copy)]
enum Pair {
    /// The coin is that asset.
    Same,
    /// A market with the coin as base and the vs asset as quote.
    Direct(MarketId),
    /// Only the other way round: prices are inverted.
    Inverse(MarketId),
}

fn pair(catalog: &Catalog, asset: &str, vs_asset: &str) -> Option<Pair> {
    if asset == vs_asset {
        return Some(Pair::Same);
    }
    let find = |base: &str, quote: &str| {
        catalog
            .markets()
            .find(|(_, m)| m.base == base && m.quote == quote)
            .map(|(id, _)| id)
    };
    find(asset, vs_asset)
        .map(Pair::Direct)
        .or_else(|| find(vs_asset, asset).map(Pair::Inverse))
}

/// A signed exact figure.
#[derive(Debug, Clone, Copy)]
struct Signed {
    negative: bool,
    magnitude: Decimal,
}

impl Signed {
    fn of(later: u128, earlier: u128, scale: fn(u128) -> Decimal) -> Self {
        Self {
            negative: later < earlier,
            magnitude: scale(later.abs_diff(earlier)),
        }
    }

    fn to_json(self) -> Box<RawValue> {
        let sign = if self.negative && self.magnitude != Decimal::amount(0) {
            "-"
        } else {
            ""
        };
        RawValue::from_string(format!("{sign}{}", self.magnitude)).expect("a JSON number")
    }
}

/// A coin's price in a vs-currency, with its 24-hour figures.
struct Quote {
    price: Decimal,
    /// Traded in the last 24 h, in the vs asset.
    volume: Decimal,
    high: Option<Decimal>,
    low: Option<Decimal>,
    change: Option<Signed>,
    change_percent: Option<f64>,
    /// When the price was made (ms): its last trade; none for a coin in itself.
    updated_ms: Option<u64>,
}

fn inverse(units: u64) -> Decimal {
    Decimal::inverse_of_amount(units).unwrap_or(Decimal::amount(0))
}

fn quote(view: &View, pair: Pair, now: u64) -> Option<Quote> {
    let (market, inverted) = match pair {
        Pair::Same => {
            return Some(Quote {
                price: Decimal::one(),
                volume: Decimal::amount(0),
                high: Some(Decimal::one()),
                low: Some(Decimal::one()),
                change: None,
                change_percent: Some(0.0),
                updated_ms: None,
            });
        }
        Pair::Direct(market) => (market, false),
        Pair::Inverse(market) => (market, true),
    };
    let book = view.market(market)?;
    let last = book.last_trade?;
    let day = book.window(now, DAY_MS);
    let percent = |later: u64, earlier: u64| {
        (earlier != 0).then(|| (later as f64 - earlier as f64) * 100.0 / earlier as f64)
    };
    Some(if inverted {
        Quote {
            price: inverse(last.price.units()),
            volume: Decimal::amount(day.map_or(0, |d| d.volume)),
            high: day.map(|d| inverse(d.low)),
            low: day.map(|d| inverse(d.high)),
            change: day.map(|d| {
                let units = |price: u64| 10u128.pow(26) / u128::from(price.max(1));
                Signed::of(units(d.close), units(d.open), Decimal::inverse_units)
            }),
            // 1/close against 1/open.
            change_percent: day.and_then(|d| percent(d.open, d.close)),
            updated_ms: Some(last.time_ms),
        }
    } else {
        Quote {
            price: Decimal::amount(last.price.units()),
            volume: Decimal::amount(day.map_or(0, |d| d.quote_volume)),
            high: day.map(|d| Decimal::amount(d.high)),
            low: day.map(|d| Decimal::amount(d.low)),
            change: day.map(|d| {
                Signed::of(u128::from(d.close), u128::from(d.open), |units| {
                    Decimal::amount(units as u64)
                })
            }),
            change_percent: day.and_then(|d| percent(d.close, d.open)),
            updated_ms: Some(last.time_ms),
        }
    })
}

fn float(value: f64) -> Box<RawValue> {
    RawValue::from_string(json!(value).to_string()).expect("a JSON number")
}

/// A refusal in CoinGecko's shape.
fn error(status: StatusCode, message: &str) -> Response {
    json_response(status, json!({ "error": message }).to_string())
}

fn json_response(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, weiport_access::JSON)], body).into_response()
}

fn ok(body: &impl serde::Serialize) -> Response {
    match serde_json::to_string(body) {
        Ok(body) => json_response(StatusCode::OK, body),
        Err(_) => error(StatusCode::INTERNAL_SERVER_ERROR, "internal error"),
    }
}

/// Query parameters by name (the last of repeated ones).
struct Params(BTreeMap<String, String>);

impl Params {
    fn new(query: Option<&str>) -> Self {
        Self(
            weiport_access::params::lenient_pairs(query.unwrap_or(""))
                .map(|(name, value)| (name.into_owned(), value.into_owned()))
                .collect(),
        )
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// A parameter that must be there, or the 400 that says it is not.
    fn required(&self, name: &str) -> Result<&str, Box<Response>> {
        self.get(name).ok_or_else(|| {
            Box::new(error(
                StatusCode::BAD_REQUEST,
                &format!("Missing parameter {name}"),
            ))
        })
    }

    /// A comma-separated list, trimmed and lower-cased.
    fn list(&self, name: &str) -> Vec<String> {
        self.get(name)
            .map(|v| {
                v.split(',')
                    .map(|s| s.trim().to_ascii_lowercase())
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default()
    }

    fn flag(&self, name: &str) -> bool {
        self.get(name) == Some("true")
    }
}

struct PriceFace<M> {
    markets: Arc<M>,
    coins: CoinTable,
    /// Recent `simple/price` answers by query string.
    answers: Mutex<HashMap<String, Answer>>,
}

/// A `simple/price` answer and the market data it was made from: it stays
/// right until a command changes the view or a minute passes (the 24 h
/// window moves by one-minute candles).
struct Answer {
    sequence: u64,
    minute: u64,
    body: Bytes,
}

/// Distinct queries kept; beyond, the cache starts over.
const MAX_ANSWERS: usize = 1024;

type Shared<M> = State<Arc<PriceFace<M>>>;

/// `GET /api/v3/simple/price`: answered again from the cache while the
/// market data it shows is unchanged (price bots ask the same every second).
async fn simple_price<M: Markets>(State(face): Shared<M>, uri: Uri) -> Response {
    let query = uri.query().unwrap_or_default();
    let (sequence, minute) = (face.markets.view().sequence, now_ms() / 60_000);
    let answers = || face.answers.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(answer) = answers().get(query)
        && (answer.sequence, answer.minute) == (sequence, minute)
    {
        return json_bytes(answer.body.clone());
    }
    let body = match price_answer(&face, query) {
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

fn json_bytes(body: Bytes) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, weiport_access::JSON)],
        body,
    )
        .into_response()
}

/// The body of a `simple/price` answer, or its refusal.
fn price_answer<M: Markets>(face: &PriceFace<M>, query: &str) -> Result<Bytes, Box<Response>> {
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
    for id in params.list("ids") {
        let Some(coin) = face.coins.coin(&id) else {
            continue;
        };
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
        out.insert(coin.id.clone(), fields);
    }
    match serde_json::to_vec(&out) {
        Ok(body) => Ok(body.into()),
        Err(_) => refuse(error(StatusCode::INTERNAL_SERVER_ERROR, "internal error")),
    }
}

/// `GET /api/v3/simple/supported_vs_currencies`.
async fn supported_vs_currencies<M: Markets>(State(face): Shared<M>) -> Response {
    ok(&face.coins.vs_currencies().collect::<Vec<_>>())
}

/// `GET /api/v3/coins/list`.
async fn coins_list<M: Markets>(State(face): Shared<M>) -> Response {
    let list: Vec<Value> = face
        .coins
        .coins()
        .map(|c| json!({ "id": c.id, "symbol": c.asset.to_ascii_lowercase(), "name": c.name }))
        .collect();
    ok(&list)
}

/// `2024-03-25T08:45:00.000Z` of a time in ms.
fn iso8601(ms: u64) -> String {
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
async fn coins_markets<M: Markets>(State(face): Shared<M>, RawQuery(query): RawQuery) -> Response {
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

/// `GET /api/v3/coins/{id}/market_chart`: prices and volumes from our
/// candles, five-minutely for a day, hourly up to 90 days, daily beyond.
async fn market_chart<M: Markets>(
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

/// The guard's view of this API: CoinGecko's key headers and parameters,
/// CoinGecko's refusals.
#[derive(Clone)]
struct CoinGeckoFace;

impl Face for CoinGeckoFace {
    fn api_key<'a>(
        &self,
        headers: &'a HeaderMap,
        query: &'a str,
        _body: &'a [u8],
    ) -> Option<std::borrow::Cow<'a, str>> {
        ["x-cg-pro-api-key", "x-cg-demo-api-key"]
            .iter()
            .find_map(|name| headers.get(*name)?.to_str().ok().map(Into::into))
            .or_else(|| {
                weiport_access::params::lenient_pairs(query)
                    .find(|(name, _)| name == "x_cg_pro_api_key" || name == "x_cg_demo_api_key")
                    .map(|(_, value)| value)
            })
    }

    fn reject(&self, error: &AccessError) -> Response {
        let status_of = |code: StatusCode, message: &str| {
            let body =
                json!({ "status": { "error_code": code.as_u16(), "error_message": message } });
            json_response(code, body.to_string())
        };
        match error {
            AccessError::TooMuchWeight { .. }
            | AccessError::TooManyOrders { .. }
            | AccessError::TooManyCalls { .. }
            | AccessError::TooManyInvalidKeys { .. }
            | AccessError::Banned { .. } => status_of(
                StatusCode::TOO_MANY_REQUESTS,
                "You've exceeded the Rate Limit. Please wait before calling again.",
            ),
            AccessError::BodyTooLarge => {
                self::error(StatusCode::PAYLOAD_TOO_LARGE, "Request body too large")
            }
            AccessError::BodyTimeout => self::error(
                StatusCode::REQUEST_TIMEOUT,
                "Request body not received in time",
            ),
            _ => status_of(
                StatusCode::UNAUTHORIZED,
                &format!("Invalid API key: {error}"),
            ),
        }
    }
}

/// The CoinGecko-compatible routes, priced from `markets` with `coins`.
pub fn router<M: Markets>(markets: Arc<M>, coins: CoinTable, access: &Arc<Access>) -> Router {
    let face = Arc::new(PriceFace {
        markets,
        coins,
        answers: Mutex::new(HashMap::new()),
    });
    let endpoint = |weight| Endpoint::new(Security::OptionalKey(Permission::Read)).weight(weight);
    let route = |weight| guard(access, &CoinGeckoFace, endpoint(weight));
    let get = MethodFilter::GET;
    Router::new()
        .route(
            "/api/v3/simple/price",
            route(1).on(get, simple_price::<M>, face.clone()),
        )
        .route(
            "/api/v3/simple/supported_vs_currencies",
            route(1).on(get, supported_vs_currencies::<M>, face.clone()),
        )
        .route(
            "/api/v3/coins/list",
            route(1).on(get, coins_list::<M>, face.clone()),
        )
        .route(
            "/api/v3/coins/markets",
            route(1).on(get, coins_markets::<M>, face.clone()),
        )
        .route(
            "/api/v3/coins/{id}/market_chart",
            route(2).on(get, market_chart::<M>, face),
        )
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
