//! The primary's side of forwarding: the route followers send the commands
//! they may not sequence to.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;

use crate::exchange::Exchange;
use crate::primary_link::Forwarded;

/// The primary's route for commands forwarded by followers, behind the
/// cluster's token: `POST /internal/v1/commands`, the command's bytes in
/// the body, the verdict as JSON.
pub fn internal_router(exchange: Arc<Exchange>, token: String) -> axum::Router {
    axum::Router::new()
        .route("/internal/v1/commands", post(sequence_forwarded))
        .with_state((exchange, Arc::<str>::from(token)))
}

async fn sequence_forwarded(
    State((exchange, token)): State<(Arc<Exchange>, Arc<str>)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if !weiport_access::admin::token_matches(presented, &token) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let Ok(command) = exchange.sequencer.decode_command(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    // Sequenced here or not at all: a primary that lost its lease does
    // not pass the command on again.
    match exchange.submit_here(command).await {
        Ok(outcome) => Json(Forwarded::Accepted {
            sequence: outcome.sequence,
        })
        .into_response(),
        Err(error) if error.status == StatusCode::SERVICE_UNAVAILABLE => {
            StatusCode::SERVICE_UNAVAILABLE.into_response()
        }
        Err(error) => Json(Forwarded::Refused {
            status: error.status.as_u16(),
            code: error.code,
            msg: error.msg,
        })
        .into_response(),
    }
}
