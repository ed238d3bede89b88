//! The WebSocket handshake of every socket route: the read buffer and
//! message size, `timeUnit`, and Binance's answer to a plain HTTP request.

use axum::extract::ws::WebSocketUpgrade;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::response::{IntoResponse, Response};

use crate::error::{BinanceError, Refusal};

/// A WebSocket handshake, or why the request is not one.
pub(crate) type Upgrade = Result<WebSocketUpgrade, WebSocketUpgradeRejection>;

pub(crate) fn query_values<'q>(
    query: Option<&'q str>,
    wanted: &'q str,
) -> impl Iterator<Item = std::borrow::Cow<'q, str>> {
    form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .filter(move |(name, _)| name == wanted)
        .map(|(_, value)| value)
}

/// Whether the connection asked for times in microseconds (`timeUnit`).
pub(crate) fn in_microseconds(query: Option<&str>) -> Result<bool, BinanceError> {
    match query_values(query, "timeUnit").last() {
        None => Ok(false),
        Some(unit) if unit.eq_ignore_ascii_case("MICROSECOND") => Ok(true),
        Some(unit) if unit.eq_ignore_ascii_case("MILLISECOND") => Ok(false),
        Some(_) => Err(BinanceError::from(Refusal::InvalidTimeUnit)),
    }
}

/// Bytes a connection reads at once.
const READ_BUFFER: usize = 4 * 1024;
/// The largest message a client may send (1,024 stream names fit).
const MAX_MESSAGE: usize = 64 * 1024;

/// Completes the handshake into `serve`; a plain HTTP request here gets an
/// answer in Binance's shape.
pub(crate) fn upgrade_or_refuse<F, Fut>(upgrade: Upgrade, serve: F) -> Response
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
