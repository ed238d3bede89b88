//! Etherscan's answer shapes: the `status`/`message`/`result` envelope
//! written straight into its body, lists written item by item, the JSON-RPC
//! envelope of the proxy module, and the field formats answers share.

use std::fmt::Write as _;

use alloy_primitives::U256;
use axum::http::header;
use axum::response::{IntoResponse, Response};

/// A U256 in decimal, on the stack: 78 digits hold the largest.
pub(crate) fn decimal(wei: &U256) -> arrayvec::ArrayString<78> {
    let mut text = arrayvec::ArrayString::new();
    let _ = write!(text, "{wei}");
    text
}

/// `{"status":"1","message":"OK","result":"…"}` with `result` as given
/// (already JSON-safe).
pub(crate) fn ok_string(result: &str) -> Response {
    const HEAD: &str = r#"{"status":"1","message":"OK","result":""#;
    const TAIL: &str = r#""}"#;
    // Exactly as long as it needs: the body then becomes `Bytes` as it is.
    let mut body = String::with_capacity(HEAD.len() + result.len() + TAIL.len());
    body.push_str(HEAD);
    body.push_str(result);
    body.push_str(TAIL);
    ([(header::CONTENT_TYPE, weiport_access::JSON)], body).into_response()
}

/// An answer with `status` "0" that is not an error in Etherscan's eyes
/// (an empty page, a window too large): HTTP 200, the text in `message`.
pub(crate) fn empty(message: &str, result: &str) -> Response {
    let body = format!(r#"{{"status":"0","message":"{message}","result":{result}}}"#);
    ([(header::CONTENT_TYPE, weiport_access::JSON)], body).into_response()
}

/// `{"status":"1","message":"OK","result":[…]}` with each item written by
/// `write`.
pub(crate) fn list<T>(items: &[T], mut write: impl FnMut(&mut String, &T)) -> Response {
    let mut body = String::with_capacity(64 + items.len() * 700);
    body.push_str(r#"{"status":"1","message":"OK","result":["#);
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        write(&mut body, item);
    }
    body.push_str("]}");
    ([(header::CONTENT_TYPE, weiport_access::JSON)], body).into_response()
}

/// A JSON-RPC answer to request `id`: its result, or its error's code,
/// message and data (when the node gave one).
pub(crate) fn rpc_envelope(
    id: &serde_json::Value,
    outcome: Result<serde_json::Value, (i64, String, Option<serde_json::Value>)>,
) -> Response {
    let body = match outcome {
        Ok(result) => serde_json::json!({ "jsonrpc": "2.0", "id": id, "result": result }),
        Err((code, message, data)) => {
            let mut error = serde_json::json!({ "code": code, "message": message });
            if let Some(data) = data {
                error["data"] = data;
            }
            serde_json::json!({ "jsonrpc": "2.0", "id": id, "error": error })
        }
    };
    (
        [(header::CONTENT_TYPE, weiport_access::JSON)],
        body.to_string(),
    )
        .into_response()
}

/// `0x` and the first four bytes of call data, as Etherscan's `methodId`.
pub(crate) fn method_id(input: &[u8]) -> String {
    if input.len() >= 4 {
        alloy_primitives::hex::encode_prefixed(&input[..4])
    } else {
        "0x".to_owned()
    }
}
