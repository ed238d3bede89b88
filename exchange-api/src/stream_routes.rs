//! The stream routes: the market streams' WebSocket endpoints (`/ws`,
//! `/ws/<stream>`, `/stream?streams=…`), the WebSocket API's (`/ws-api/v3`)
//! and the listen keys of user data streams, over the stream hub.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, RawQuery, State};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use weiport_exchange::now_ms;

use crate::error::{Answer, BinanceError, Refusal};
use crate::exchange::Exchange;
use crate::extract::Signed;
use crate::streams::{
    Upgrade, in_microseconds, query_values, serve_market_streams, upgrade_or_refuse,
};

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
