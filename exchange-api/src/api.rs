//! Handlers of the Binance Spot-compatible REST API over the sequencer and
//! its read side: market data, orders, account and history.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use weiport_access::Access;

use weiport_exchange::catalog::{Catalog, MarketId};

pub(crate) use crate::account::*;
pub(crate) use crate::calendar::*;
pub(crate) use crate::capital::*;
use crate::error::BinanceError;
pub(crate) use crate::extract::*;
pub(crate) use crate::lists::*;
pub(crate) use crate::market_data::*;
pub(crate) use crate::modify::*;
use crate::params::Params;
pub(crate) use crate::sapi::*;
pub(crate) use crate::ticker::*;
pub(crate) use crate::trading::*;
pub(crate) use crate::wire::*;
use weiport_exchange::engine::{Command, Event, Reject};
use weiport_exchange::history::{History, HistoryError};
use weiport_exchange::market::Market;
use weiport_exchange::sequencer::{Outcome, Sequencer};

/// The exchange as the API sees it: the markets, the engine behind its
/// sequencer, and the access layer (for order-count figures).
pub struct Exchange {
    /// Markets and assets.
    pub catalog: Arc<Catalog>,
    /// The engine thread.
    pub sequencer: Sequencer,
    /// Orders, trades and candles in storage.
    pub history: History,
    /// Keys and limits.
    pub access: Arc<Access>,
    /// Last `depth` body per market and limit, with the book version it shows.
    pub depth_cache: std::sync::Mutex<std::collections::HashMap<(MarketId, usize), (u64, Bytes)>>,
    /// The WebSocket streams, fed by the sequencer.
    pub streams: Arc<crate::streams::StreamHub>,
    /// The on-chain wallet (deposits and withdrawals), when the server runs one.
    pub wallet: std::sync::OnceLock<Arc<weiport_wallet::Wallet>>,
}

impl Exchange {
    /// Replays the command log of `store` and starts the engine thread (a
    /// queue of `capacity` commands, fees to `fee_account`) with the stream
    /// hub as one of its sinks; spawns the hub on the current Tokio runtime.
    pub fn open(
        store: weiport_storage::Store,
        catalog: Arc<Catalog>,
        fee_account: u64,
        capacity: usize,
        access: Arc<Access>,
    ) -> Result<Self, weiport_exchange::sequencer::SequencerError> {
        let history = History::new(store.clone(), catalog.clone());
        let (streams, sink) =
            crate::streams::StreamHub::new(catalog.clone(), Some(history.clone()));
        let sequencer = Sequencer::start_with(
            store.clone(),
            catalog.clone(),
            fee_account,
            capacity,
            vec![Box::new(sink)],
        )?;
        tokio::spawn(streams.clone().run());
        Ok(Self {
            history,
            catalog,
            sequencer,
            access,
            depth_cache: Default::default(),
            streams,
            wallet: std::sync::OnceLock::new(),
        })
    }
}

pub(crate) type Answer = Result<Response, BinanceError>;

pub(crate) fn unauthorized() -> BinanceError {
    BinanceError::new(
        axum::http::StatusCode::UNAUTHORIZED,
        -2015,
        "Invalid API-key, IP, or permissions for action.",
    )
}

pub(crate) fn bad_symbol() -> BinanceError {
    BinanceError::bad(-1121, "Invalid symbol.")
}

pub(crate) fn market<'a>(
    catalog: &'a Catalog,
    params: &Params,
) -> Result<(MarketId, &'a Market), BinanceError> {
    let symbol = params.required("symbol")?;
    let id = catalog.market_id(symbol).ok_or_else(bad_symbol)?;
    Ok((id, catalog.market(id).ok_or_else(bad_symbol)?))
}

/// Markets a request names, held inline for the usual few.
pub(crate) type MarketIds = smallvec::SmallVec<[MarketId; 8]>;

/// `symbol`, `symbols` (a JSON array) or neither (every market).
pub(crate) fn markets(
    catalog: &Catalog,
    params: &Params,
) -> Result<(MarketIds, bool), BinanceError> {
    match (params.get("symbol"), params.get("symbols")) {
        (Some(_), Some(_)) => Err(BinanceError::bad(
            -1128,
            "Combination of optional parameters invalid.",
        )),
        (Some(symbol), None) => Ok((
            smallvec::smallvec![catalog.market_id(symbol).ok_or_else(bad_symbol)?],
            true,
        )),
        (None, Some(list)) => {
            let names: Vec<String> = serde_json::from_str(list).map_err(|_| {
                BinanceError::bad(-1100, "Illegal characters found in parameter 'symbols'; legal range is '^\\[(\"[A-Z0-9-_.]{1,20}\"(,\"[A-Z0-9-_.]{1,20}\"){0,}){0,1}\\]$'.")
            })?;
            if names.is_empty() {
                return Err(BinanceError::mandatory("symbols"));
            }
            let mut ids = MarketIds::new();
            for name in names {
                let id = catalog.market_id(&name).ok_or_else(bad_symbol)?;
                if ids.contains(&id) {
                    return Err(BinanceError::bad(
                        -1151,
                        "Symbol is present multiple times in the list.",
                    ));
                }
                ids.push(id);
            }
            Ok((ids, false))
        }
        (None, None) => Ok((catalog.markets().map(|(id, _)| id).collect(), false)),
    }
}

pub(crate) fn one_or_many(values: Vec<Value>, single: bool) -> Response {
    if single {
        Json(values.into_iter().next().unwrap_or(Value::Null)).into_response()
    } else {
        Json(Value::Array(values)).into_response()
    }
}

pub(crate) fn integer(params: &Params, name: &str) -> Result<Option<u64>, BinanceError> {
    params
        .get(name)
        .map(|text| {
            text.parse::<u64>().map_err(|_| {
                BinanceError::bad(-1100, format!("Illegal characters found in parameter '{name}'; legal range is '^[0-9]{{1,20}}$'."))
            })
        })
        .transpose()
}

pub(crate) fn limit(params: &Params, default: usize, max: usize) -> Result<usize, BinanceError> {
    Ok(match integer(params, "limit")? {
        None => default,
        Some(0) => default,
        Some(n) => (n as usize).min(max),
    })
}

pub(crate) fn boolean(params: &Params, name: &str) -> bool {
    params.get(name) == Some("true")
}

pub(crate) fn engine_refusal(reject: Reject) -> BinanceError {
    let (code, msg) = match reject {
        Reject::UnknownSymbol => (-1121, "Invalid symbol."),
        Reject::UnknownAsset => (-1130, "Data sent for parameter 'asset' is not valid."),
        Reject::InsufficientBalance => (
            -2010,
            "Account has insufficient balance for requested action.",
        ),
        Reject::WouldTake => (-2010, "Order would immediately match and take."),
        Reject::UnknownOrder => (-2011, "Unknown order sent."),
        Reject::DuplicateClientOrderId => (-2010, "Duplicate order sent."),
        Reject::TooManyOrders => (-2010, "Filter failure: MAX_NUM_ORDERS"),
        Reject::Overflow => (-1108, "Parameter 'quantity' overflowed."),
        Reject::OffGrid => (-1013, "Filter failure: LOT_SIZE"),
        Reject::WouldTrigger => (-2010, "Order would trigger immediately."),
        Reject::TooManyAlgoOrders => (-2010, "Filter failure: MAX_NUM_ALGO_ORDERS"),
        Reject::BadList => (-1014, "Unsupported order combination."),
        Reject::AmendIncrease => (-2038, "Order amend (quantity increase) is not supported."),
        Reject::AmendNoChange => (
            -2038,
            "The requested action would change no state; rejecting",
        ),
        Reject::BadTrigger => (
            -1102,
            "Mandatory parameter 'stopPrice' was not sent, was empty/null, or malformed.",
        ),
        // Chain commands come from the wallet, never from a request's
        // parameters; a refusal of one is the server's own state.
        Reject::DepositCredited | Reject::UnknownWithdrawal => (
            -1000,
            "An unknown error occurred while processing the request.",
        ),
    };
    BinanceError::bad(code, msg)
}

pub(crate) fn unavailable() -> BinanceError {
    BinanceError::new(
        axum::http::StatusCode::SERVICE_UNAVAILABLE,
        -1001,
        "Internal error; unable to process your request. Please try again.",
    )
}

/// Sequences `command`; the engine's refusal comes back as Binance's error.
pub(crate) async fn submit(
    exchange: &Exchange,
    command: Command,
) -> Result<Arc<Outcome>, BinanceError> {
    let outcome = exchange.sequencer.submit(command).await.map_err(|error| {
        tracing::error!(%error, "the exchange engine refused work");
        unavailable()
    })?;
    match outcome.events.first() {
        Some(Event::Rejected(reject)) => Err(engine_refusal(*reject)),
        _ => Ok(outcome),
    }
}

/// A history read's result, its failure logged and answered as Binance's internal error.
pub(crate) fn stored<T>(result: Result<T, HistoryError>) -> Result<T, BinanceError> {
    result.map_err(|error| {
        tracing::error!(%error, "reading the exchange history failed");
        unavailable()
    })
}

/// The first `limit` items of `rows`, stopping at the first failure.
pub(crate) fn first<T>(
    rows: impl Iterator<Item = Result<T, HistoryError>>,
    limit: usize,
) -> Result<Vec<T>, BinanceError> {
    stored(rows.take(limit).collect())
}

/// The last `limit` items before `from`, read backwards, in ascending order.
pub(crate) fn latest<T>(
    rows: impl Iterator<Item = Result<T, HistoryError>>,
    limit: usize,
) -> Result<Vec<T>, BinanceError> {
    let mut out = first(rows, limit)?;
    out.reverse();
    Ok(out)
}

pub(crate) fn json_body(body: Bytes) -> Response {
    (
        [(axum::http::header::CONTENT_TYPE, weiport_access::JSON)],
        body,
    )
        .into_response()
}

/// Whether the query names `name` with a value (without copying it).
pub(crate) fn query_has(query: &str, name: &str) -> bool {
    query_value(query, name).is_some()
}

/// The first non-empty value of `name` in a raw query string, read as a
/// form would be (borrowed unless it holds an escape), for the weight
/// functions, which run before the request's parameters are parsed.
pub(crate) fn query_value<'a>(query: &'a str, name: &str) -> Option<std::borrow::Cow<'a, str>> {
    weiport_access::params::lenient_filled(query, name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `form_urlencoded` finds: the first pair named `name` with a value.
    fn as_forms_read(query: &str, name: &str) -> Option<String> {
        form_urlencoded::parse(query.as_bytes())
            .find(|(sent, value)| sent == name && !value.is_empty())
            .map(|(_, value)| value.into_owned())
    }

    #[test]
    fn the_weight_functions_read_a_query_as_a_form_does() {
        let queries = [
            "symbol=ETHUSDT",
            "symbol=&symbol=BTCUSDT",
            "symbols=%5B%22ETHUSDT%22%5D",
            "sym%62ol=ETH%55SDT&limit=5",
            "symbol",
            "&&symbol=a+b&",
            "orderId=1=2",
            "limit=100&symbol=%E2%82%AC",
            "symbol=%zz",
            "",
        ];
        for query in queries {
            for name in ["symbol", "symbols", "limit", "orderId"] {
                assert_eq!(
                    query_value(query, name).map(std::borrow::Cow::into_owned),
                    as_forms_read(query, name),
                    "{name} in {query:?}"
                );
                assert_eq!(query_has(query, name), as_forms_read(query, name).is_some());
            }
        }
    }
}
