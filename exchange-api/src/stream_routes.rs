//! The stream routes: the market streams' WebSocket endpoints (`/ws`,
//! `/ws/<stream>`, `/stream?streams=…`), the WebSocket API's (`/ws-api/v3`)
//! and the listen keys of user data streams, over the stream hub.

use std::sync::Arc;

use axum::Json;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::{Path, RawQuery, State};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use weiport_exchange::now_ms;

use crate::error::{Answer, BinanceError, Refusal};
use crate::exchange::Exchange;
use crate::extract::Signed;
use crate::streams::{serve_market_streams, serve_ws_api};

/// `/ws` with no stream.
pub(crate) async fn ws_bare(
    State(exchange): State<Arc<Exchange>>,
    RawQuery(query): RawQuery,
    upgrade: Upgrade,
) -> Response {
    open(&exchange, upgrade, query, Vec::new(), false)
}

/// `/ws/<stream>[/<stream>…]`; anything else after `/ws/` opens an empty connection.
pub(crate) async fn ws_path(
    State(exchange): State<Arc<Exchange>>,
    Path(path): Path<String>,
    RawQuery(query): RawQuery,
    upgrade: Upgrade,
) -> Response {
    let streams = path.split('/').map(str::to_owned).collect();
    open(&exchange, upgrade, query, streams, false)
}

/// `/stream?streams=a/b/c`: every event wrapped as `{"stream","data"}`.
pub(crate) async fn combined(
    State(exchange): State<Arc<Exchange>>,
    RawQuery(query): RawQuery,
    upgrade: Upgrade,
) -> Response {
    let streams = query_values(query.as_deref(), "streams")
        .flat_map(|value| value.split('/').map(str::to_owned).collect::<Vec<_>>())
        .collect();
    open(&exchange, upgrade, query, streams, true)
}

/// A WebSocket handshake, or why the request is not one.
type Upgrade = Result<WebSocketUpgrade, WebSocketUpgradeRejection>;

fn query_values<'q>(
    query: Option<&'q str>,
    wanted: &'q str,
) -> impl Iterator<Item = std::borrow::Cow<'q, str>> {
    form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .filter(move |(name, _)| name == wanted)
        .map(|(_, value)| value)
}

/// Whether the connection asked for times in microseconds (`timeUnit`).
fn in_microseconds(query: Option<&str>) -> Result<bool, BinanceError> {
    match query_values(query, "timeUnit").last() {
        None => Ok(false),
        Some(unit) if unit.eq_ignore_ascii_case("MICROSECOND") => Ok(true),
        Some(unit) if unit.eq_ignore_ascii_case("MILLISECOND") => Ok(false),
        Some(_) => Err(BinanceError::from(Refusal::InvalidTimeUnit)),
    }
}

fn open(
    exchange: &Exchange,
    upgrade: Upgrade,
    query: Option<String>,
    streams: Vec<String>,
    combined: bool,
) -> Response {
    let microseconds = match in_microseconds(query.as_deref()) {
        Ok(microseconds) => microseconds,
        Err(error) => return error.into_response(),
    };
    let hub = exchange.streams.clone();
    upgrade_or_refuse(upgrade, move |socket| {
        serve_market_streams(hub, socket, streams, combined, microseconds)
    })
}

/// Bytes a connection reads at once.
const READ_BUFFER: usize = 4 * 1024;
/// The largest message a client may send (1,024 stream names fit).
const MAX_MESSAGE: usize = 64 * 1024;

/// Completes the handshake into `serve`; a plain HTTP request here gets an
/// answer in Binance's shape.
fn upgrade_or_refuse<F, Fut>(upgrade: Upgrade, serve: F) -> Response
where
    F: FnOnce(axum::extract::ws::WebSocket) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    match upgrade {
        // The read buffer is zeroed up to its size on every read attempt,
        // and every wake of a connection attempts a read: 4 KiB instead of
        // the default 128 KiB is what makes fan-out cheap (larger messages
        // still arrive; the buffer grows for them). Clients send only
        // control messages and requests, so a message is at most 64 KiB.
        Ok(upgrade) => upgrade
            .read_buffer_size(READ_BUFFER)
            .max_message_size(MAX_MESSAGE)
            .max_frame_size(MAX_MESSAGE)
            .on_upgrade(serve),
        Err(rejection) => {
            let msg = format!("A WebSocket upgrade is required here: {rejection}.");
            BinanceError::from(Refusal::Unknown(&msg)).into_response()
        }
    }
}

/// How long a listen key lives without a keep-alive (Binance: 60 minutes).
const LISTEN_KEY_MS: u64 = 60 * 60 * 1000;

fn listen_key_param(signed: &Signed) -> Result<&str, BinanceError> {
    signed.params.required("listenKey")
}

fn no_listen_key() -> BinanceError {
    BinanceError::from(Refusal::UnknownListenKey)
}

/// `POST /api/v3/userDataStream`: the account's listen key, new or extended.
pub(crate) async fn create_listen_key(
    State(exchange): State<Arc<Exchange>>,
    signed: Signed,
) -> Response {
    let key = exchange
        .streams
        .listen_key(signed.account, now_ms() + LISTEN_KEY_MS);
    Json(json!({ "listenKey": key })).into_response()
}

/// `PUT /api/v3/userDataStream`: keeps the listen key alive for 60 more minutes.
pub(crate) async fn keep_listen_key(
    State(exchange): State<Arc<Exchange>>,
    signed: Signed,
) -> Answer {
    let key = listen_key_param(&signed)?;
    if !exchange
        .streams
        .keep_listen_key(signed.account, key, Some(now_ms() + LISTEN_KEY_MS))
    {
        return Err(no_listen_key());
    }
    Ok(Json(json!({})).into_response())
}

/// `DELETE /api/v3/userDataStream`: closes the listen key.
pub(crate) async fn close_listen_key(
    State(exchange): State<Arc<Exchange>>,
    signed: Signed,
) -> Answer {
    let key = listen_key_param(&signed)?;
    if !exchange.streams.keep_listen_key(signed.account, key, None) {
        return Err(no_listen_key());
    }
    Ok(Json(json!({})).into_response())
}

/// `/ws-api/v3`: the WebSocket API's user data methods.
pub(crate) async fn ws_api(
    State(exchange): State<Arc<Exchange>>,
    axum::Extension(caller): axum::Extension<weiport_access::Caller>,
    RawQuery(query): RawQuery,
    upgrade: Upgrade,
) -> Response {
    let microseconds = match in_microseconds(query.as_deref()) {
        Ok(microseconds) => microseconds,
        Err(error) => return error.into_response(),
    };
    let (hub, access) = (exchange.streams.clone(), exchange.access.clone());
    upgrade_or_refuse(upgrade, move |socket| {
        serve_ws_api(hub, access, caller.ip, microseconds, socket)
    })
}
