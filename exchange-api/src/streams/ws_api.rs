//! The WebSocket API's user data methods (`/ws-api/v3`), which current
//! clients (ccxt.pro, python-binance) use instead of listen keys:
//! `userDataStream.subscribe.signature`, `userDataStream.unsubscribe`,
//! `ping` and `time`. Requests are `{"id","method","params"}`; answers carry
//! the id, an HTTP-like `status`, and `result` or `error`; events arrive as
//! `{"subscriptionId","event"}`.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::{Message, WebSocket};
use serde_json::{Map, Value, json};
use tokio::sync::{Notify, mpsc};
use weiport_access::auth::Credentials;
use weiport_access::auth::authenticate;
use weiport_access::keys::Permission;
use weiport_access::params::BodyKind;
use weiport_access::{Access, Security};
use weiport_exchange::now_ms;

use super::connection::{BUFFER, PING_EVERY, PONG_WITHIN};
use super::hub::{Connection, StreamHub, user_stream};
use crate::error::BinanceError;

/// Requests a connection may send a second: the WebSocket API answers
/// requests, so it allows more than the 5 control messages of market streams.
const REQUESTS_PER_SECOND: u32 = 100;

fn answer(id: &Value, result: Value) -> Value {
    json!({ "id": id, "status": 200, "result": result, "rateLimits": [] })
}

fn refusal(id: &Value, error: &BinanceError) -> Value {
    json!({
        "id": id, "status": error.status.as_u16(),
        "error": { "code": error.code, "msg": error.msg }, "rateLimits": [],
    })
}

/// The account whose key signed `params` (sorted by name, `signature` aside,
/// as Binance signs WebSocket API requests), with permission to read.
fn signed_account(
    access: &Access,
    params: &Map<String, Value>,
    ip: std::net::IpAddr,
) -> Result<u64, BinanceError> {
    let text = |value: &Value| match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut names: Vec<&String> = params.keys().filter(|k| *k != "signature").collect();
    names.sort();
    let mut query = names
        .iter()
        .map(|name| format!("{name}={}", text(&params[name.as_str()])))
        .collect::<Vec<_>>()
        .join("&");
    let signature = params.get("signature").map(text).unwrap_or_default();
    let encoded: String = form_urlencoded::byte_serialize(signature.as_bytes()).collect();
    query.push_str(&format!("&signature={encoded}"));
    let api_key = params.get("apiKey").and_then(Value::as_str);
    let credentials = Credentials {
        api_key,
        query: &query,
        body: b"",
        body_kind: BodyKind::Form,
    };
    let now_us = now_ms() * 1000;
    let key = authenticate(
        &access.keys,
        Security::Signed(Permission::Read),
        &credentials,
        ip,
        now_us,
    )
    .map_err(|error| BinanceError::from(&error))?
    .ok_or_else(|| BinanceError::bad(-2015, "Invalid API-key, IP, or permissions for action."))?;
    Ok(key.account)
}

/// One WebSocket API connection.
pub(super) async fn connection(
    hub: Arc<StreamHub>,
    access: Arc<Access>,
    ip: std::net::IpAddr,
    mut socket: WebSocket,
) {
    let id = hub
        .next_connection
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let (frames, mut outgoing) = mpsc::channel(BUFFER);
    let me = Arc::new(Connection {
        frames,
        combined: Default::default(),
        too_slow: Notify::new(),
    });
    // (subscription id, the account's user stream)
    let mut subscriptions: Vec<(u64, String)> = Vec::new();
    let mut next_subscription = 0u64;
    let mut ping = tokio::time::interval(PING_EVERY);
    ping.reset();
    let mut last_pong = tokio::time::Instant::now();
    let (mut second, mut messages) = (tokio::time::Instant::now(), 0u32);
    loop {
        tokio::select! {
            frame = outgoing.recv() => {
                let Some(frame) = frame else { break };
                // Every subscription of this connection is to its account's stream.
                let mut sent = true;
                for (subscription, _) in &subscriptions {
                    let text = format!("{{\"subscriptionId\":{subscription},\"event\":{}}}", &*frame.raw);
                    sent = sent && socket.send(Message::Text(text.into())).await.is_ok();
                }
                if !sent {
                    break;
                }
            }
            () = me.too_slow.notified() => break,
            incoming = socket.recv() => {
                let Some(Ok(message)) = incoming else { break };
                if second.elapsed() >= Duration::from_secs(1) {
                    (second, messages) = (tokio::time::Instant::now(), 0);
                }
                messages += 1;
                if messages > REQUESTS_PER_SECOND {
                    break;
                }
                let Message::Text(text) = message else {
                    if let Message::Pong(_) = message {
                        last_pong = tokio::time::Instant::now();
                    }
                    continue;
                };
                let request: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
                let request_id = request.get("id").cloned().unwrap_or(Value::Null);
                let params = request.get("params").and_then(Value::as_object).cloned().unwrap_or_default();
                let reply = match request.get("method").and_then(Value::as_str) {
                    Some("ping") => answer(&request_id, json!({})),
                    Some("time") => answer(&request_id, json!({ "serverTime": now_ms() })),
                    Some("userDataStream.subscribe.signature") => match signed_account(&access, &params, ip) {
                        Ok(account) => {
                            let stream = user_stream(account);
                            if subscriptions.iter().all(|(_, s)| *s != stream) {
                                hub.subscribe(id, &me, &stream);
                            }
                            let subscription = next_subscription;
                            next_subscription += 1;
                            subscriptions.push((subscription, stream));
                            answer(&request_id, json!({ "subscriptionId": subscription }))
                        }
                        Err(error) => refusal(&request_id, &error),
                    },
                    Some("userDataStream.unsubscribe") => {
                        let only = params.get("subscriptionId").and_then(Value::as_u64);
                        let (gone, kept): (Vec<_>, Vec<_>) = subscriptions
                            .drain(..)
                            .partition(|(subscription, _)| only.is_none_or(|o| o == *subscription));
                        subscriptions = kept;
                        for (_, stream) in gone {
                            if subscriptions.iter().all(|(_, s)| *s != stream) {
                                hub.unsubscribe(id, &stream);
                            }
                        }
                        answer(&request_id, json!({}))
                    }
                    None if request.is_null() => refusal(&request_id, &BinanceError::bad(-1100, "Malformed request: not JSON.")),
                    _ => refusal(&request_id, &BinanceError::bad(-1020, "This operation is not supported.")),
                };
                if socket.send(Message::Text(reply.to_string().into())).await.is_err() {
                    break;
                }
            }
            _ = ping.tick() => {
                if last_pong.elapsed() > PONG_WITHIN || socket.send(Message::Ping(Vec::new().into())).await.is_err() {
                    break;
                }
            }
        }
    }
    for (_, stream) in &subscriptions {
        hub.unsubscribe(id, stream);
    }
}
