//! WebSocket clients of the stream tests: connect, read the next JSON
//! frame, send a control message paced under Binance's message rate; and
//! the REST calls and servers those tests start from.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;

use super::Weiport;

pub type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

pub async fn connect(weiport: &Weiport, path: &str) -> Socket {
    let url = format!("{}{path}", weiport.url.replacen("http://", "ws://", 1));
    tokio_tungstenite::connect_async(url).await.unwrap().0
}

/// The next text frame as JSON (pings are answered by the client library).
pub async fn next(socket: &mut Socket) -> Value {
    loop {
        let message = tokio::time::timeout(Duration::from_secs(10), socket.next())
            .await
            .expect("a frame within 10 s")
            .expect("the connection stays open")
            .unwrap();
        if let Message::Text(text) = message {
            return serde_json::from_str(&text).unwrap();
        }
    }
}

/// Sends a control message, paced under Binance's 5 messages a second.
pub async fn send(socket: &mut Socket, request: Value) -> Value {
    tokio::time::sleep(Duration::from_millis(210)).await;
    socket
        .send(Message::Text(request.to_string().into()))
        .await
        .unwrap();
    next(socket).await
}

pub async fn public(weiport: &Weiport, path: &str) -> Value {
    reqwest::get(format!("{}{path}", weiport.url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// An Ed25519 key on `account`, registered by its public key; returns the
/// key id and a signer of Binance's WebSocket API payloads.
pub async fn ed25519_key(
    weiport: &Weiport,
    account: u64,
    permissions: &[&str],
) -> (String, impl Fn(&str) -> String) {
    use base64::Engine;
    use ed25519_dalek::Signer;
    use ed25519_dalek::pkcs8::EncodePublicKey;

    let signing = ed25519_dalek::SigningKey::from_bytes(&[account as u8 + 11; 32]);
    let pem = signing
        .verifying_key()
        .to_public_key_pem(Default::default())
        .unwrap();
    let (status, created) = weiport
        .admin(
            reqwest::Method::POST,
            "/admin/keys",
            serde_json::json!({ "account": account, "kind": "ed25519", "public_key": pem, "permissions": permissions }),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    let sign = move |payload: &str| {
        base64::engine::general_purpose::STANDARD
            .encode(signing.sign(payload.as_bytes()).to_bytes())
    };
    (created["id"].as_str().unwrap().to_owned(), sign)
}

/// The WebSocket API's signed text of `params`: every parameter but
/// `signature` and those that are null (not sent, to the server), sorted by
/// name, as `name=value&…` (a string's content, any other value's JSON).
pub fn ws_api_payload(params: &serde_json::Map<String, Value>) -> String {
    let mut names: Vec<&String> = params
        .iter()
        .filter(|(n, v)| *n != "signature" && !v.is_null())
        .map(|(n, _)| n)
        .collect();
    names.sort();
    names
        .iter()
        .map(|name| match &params[name.as_str()] {
            Value::String(text) => format!("{name}={text}"),
            other => format!("{name}={other}"),
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// `params` signed with `key`'s HMAC secret as the WebSocket API signs:
/// `apiKey` and a fresh `timestamp` (unless one is there) added, then
/// `signature` over [`ws_api_payload`].
pub fn ws_api_signed(key: &super::Key, params: Value) -> Value {
    let mut params = params.as_object().cloned().unwrap_or_default();
    params.insert("apiKey".into(), serde_json::json!(key.id));
    params
        .entry("timestamp")
        .or_insert_with(|| serde_json::json!(super::now_ms()));
    let payload = ws_api_payload(&params);
    let signature = weiport_access::sign_hmac_sha256(key.secret.as_bytes(), payload.as_bytes());
    params.insert("signature".into(), serde_json::json!(signature));
    Value::Object(params)
}
