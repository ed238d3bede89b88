//! Answers in CoinGecko's shapes: JSON bodies, refusals, numbers.

use axum::body::Bytes;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use serde_json::value::RawValue;

/// A JSON number of `value`, as CoinGecko writes its floats.
pub(crate) fn float(value: f64) -> Box<RawValue> {
    RawValue::from_string(json!(value).to_string()).expect("a JSON number")
}

/// A refusal in CoinGecko's shape.
pub(crate) fn error(status: StatusCode, message: &str) -> Response {
    json_response(status, json!({ "error": message }).to_string())
}

/// `body`, already JSON, with `status`.
pub(crate) fn json_response(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, weiport_access::JSON)], body).into_response()
}

/// `body` as a 200 JSON answer.
pub(crate) fn ok(body: &impl serde::Serialize) -> Response {
    match serde_json::to_string(body) {
        Ok(body) => json_response(StatusCode::OK, body),
        Err(_) => error(StatusCode::INTERNAL_SERVER_ERROR, "internal error"),
    }
}

/// `body`, JSON already made (and perhaps kept), as a 200 answer.
pub(crate) fn json_bytes(body: Bytes) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, weiport_access::JSON)],
        body,
    )
        .into_response()
}
