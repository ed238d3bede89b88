//! The WebSocket API's user data methods (`/ws-api/v3`), which current
//! clients (ccxt.pro, python-binance, binance-sdk-spot) use instead of
//! listen keys: `session.logon` / `session.status` / `session.logout`,
//! `userDataStream.subscribe` (on the logged-on Ed25519 key) and
//! `userDataStream.subscribe.signature`, `userDataStream.unsubscribe`,
//! `ping` and `time`. Requests are `{"id","method","params"}`; answers carry
//! the id, an HTTP-like `status`, and `result` or `error`; events arrive as
//! `{"subscriptionId","event"}`.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::{Message, WebSocket};
use serde_json::{Map, Value, json};
use weiport_access::auth::{Credentials, authenticate};
use weiport_access::keys::{KeyKind, Permission};
use weiport_access::keystore::ApiKey;
use weiport_access::params::BodyKind;
use weiport_access::{Access, Security};
use weiport_exchange::now_ms;

use super::connection::{BUFFER, PING_EVERY, PONG_WITHIN};
use super::hub::{Connection, StreamHub, in_microseconds, now_us, user_stream};
use crate::error::{BinanceError, Refusal};

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

/// The key that signed `params` (sorted by name, `signature` aside, as
/// Binance signs WebSocket API requests), with permission to read.
fn signed_key(
    access: &Access,
    params: &Map<String, Value>,
    ip: std::net::IpAddr,
) -> Result<Arc<ApiKey>, BinanceError> {
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
    authenticate(
        &access.keys,
        Security::Signed(Permission::Read),
        &credentials,
        ip,
        now_us,
    )
    .map_err(|error| BinanceError::from(&error))?
    .ok_or_else(|| BinanceError::from(Refusal::Unauthorized))
}

/// One user data subscription of a connection.
struct Subscription {
    id: u64,
    stream: String,
    /// Made by `userDataStream.subscribe` on the logged-on key: ends at logout.
    by_logon: bool,
}

/// What a WebSocket API connection knows: its logon and its subscriptions.
struct Session {
    hub: Arc<StreamHub>,
    access: Arc<Access>,
    ip: std::net::IpAddr,
    connection_id: u64,
    me: Arc<Connection>,
    connected_ms: u64,
    /// The logged-on key and since when (`session.logon`).
    logon: Option<(Arc<ApiKey>, u64)>,
    subscriptions: Vec<Subscription>,
    next_subscription: u64,
}

impl Session {
    fn status(&self) -> Value {
        let (api_key, since) = match &self.logon {
            Some((key, since)) => (json!(key.id), json!(since)),
            None => (Value::Null, Value::Null),
        };
        json!({
            "apiKey": api_key, "authorizedSince": since, "connectedSince": self.connected_ms,
            "returnRateLimits": false, "serverTime": now_ms(),
            "userDataStream": !self.subscriptions.is_empty(),
        })
    }

    fn subscribe(&mut self, account: u64, by_logon: bool) -> Value {
        let stream = user_stream(account);
        if self.subscriptions.iter().all(|s| s.stream != stream) {
            self.hub.subscribe(self.connection_id, &self.me, &stream);
        }
        let id = self.next_subscription;
        self.next_subscription += 1;
        self.subscriptions.push(Subscription {
            id,
            stream,
            by_logon,
        });
        json!({ "subscriptionId": id })
    }

    /// Ends the subscriptions `ending` picks; returns the
    /// `eventStreamTerminated` events to send.
    fn end(&mut self, ending: impl Fn(&Subscription) -> bool) -> Vec<Value> {
        let (gone, kept): (Vec<_>, Vec<_>) = self.subscriptions.drain(..).partition(ending);
        self.subscriptions = kept;
        let now_us = now_us();
        gone.iter()
            .map(|subscription| {
                if self
                    .subscriptions
                    .iter()
                    .all(|s| s.stream != subscription.stream)
                {
                    self.hub
                        .unsubscribe(self.connection_id, &subscription.stream);
                }
                let mut event = json!({ "e": "eventStreamTerminated", "E": now_us / 1000 });
                if self.me.microseconds {
                    event = in_microseconds(&event, now_us);
                }
                json!({ "subscriptionId": subscription.id, "event": event })
            })
            .collect()
    }

    /// Answers one request; events to send before the answer go to `events`.
    fn request(&mut self, text: &str, events: &mut Vec<Value>) -> Value {
        let Ok(request) = serde_json::from_str::<Value>(text) else {
            return refusal(&Value::Null, &BinanceError::from(Refusal::NotJson));
        };
        let request_id = request.get("id").cloned().unwrap_or(Value::Null);
        let params = match request.get("params") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(params)) => params.clone(),
            Some(_) => {
                let error = BinanceError::from(Refusal::NotAllReadWs);
                return refusal(&request_id, &error);
            }
        };
        let method = request.get("method").and_then(Value::as_str).unwrap_or("");
        let result = match method {
            "ping" => Ok(json!({})),
            "time" => Ok(json!({ "serverTime": now_ms() })),
            "session.logon" => self.logon(&params, events),
            "session.status" => Ok(self.status()),
            "session.logout" => {
                events.extend(self.end(|s| s.by_logon));
                self.logon = None;
                Ok(self.status())
            }
            "userDataStream.subscribe" => match &self.logon {
                Some((key, _)) => {
                    let account = key.account;
                    Ok(self.subscribe(account, true))
                }
                None => Err(Refusal::NotAuthorized.into()),
            },
            "userDataStream.subscribe.signature" => signed_key(&self.access, &params, self.ip)
                .map(|key| self.subscribe(key.account, false)),
            "userDataStream.unsubscribe" => {
                let only = params.get("subscriptionId").and_then(Value::as_u64);
                events.extend(self.end(|s| only.is_none_or(|o| o == s.id)));
                Ok(json!({}))
            }
            _ => Err(BinanceError::from(Refusal::Unsupported)),
        };
        match result {
            Ok(result) => answer(&request_id, result),
            Err(error) => refusal(&request_id, &error),
        }
    }

    /// `session.logon`: an Ed25519 key's signed request authenticates the
    /// connection; a new logon replaces the previous one.
    fn logon(
        &mut self,
        params: &Map<String, Value>,
        events: &mut Vec<Value>,
    ) -> Result<Value, BinanceError> {
        let key = signed_key(&self.access, params, self.ip)?;
        if key.kind != KeyKind::Ed25519 {
            return Err(BinanceError::from(Refusal::HmacSession));
        }
        if self
            .logon
            .as_ref()
            .is_some_and(|(previous, _)| previous.account != key.account)
        {
            events.extend(self.end(|s| s.by_logon));
        }
        self.logon = Some((key, now_ms()));
        Ok(self.status())
    }
}

/// One WebSocket API connection.
pub(crate) async fn connection(
    hub: Arc<StreamHub>,
    access: Arc<Access>,
    ip: std::net::IpAddr,
    microseconds: bool,
    mut socket: WebSocket,
) {
    let connection_id = hub
        .next_connection
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let (me, mut outgoing) = Connection::new(BUFFER, false, microseconds);
    let mut session = Session {
        hub,
        access,
        ip,
        connection_id,
        me,
        connected_ms: now_ms(),
        logon: None,
        subscriptions: Vec::new(),
        next_subscription: 0,
    };
    let mut ping = tokio::time::interval(PING_EVERY);
    ping.reset();
    let mut last_pong = tokio::time::Instant::now();
    let (mut second, mut messages) = (tokio::time::Instant::now(), 0u32);
    let mut events = Vec::new();
    loop {
        tokio::select! {
            frame = outgoing.recv() => {
                let Some(frame) = frame else { break };
                let mut sent = true;
                for subscription in session.subscriptions.iter().filter(|s| *s.stream == *frame.stream) {
                    let text = format!("{{\"subscriptionId\":{},\"event\":{}}}", subscription.id, &*frame.raw);
                    sent = sent && socket.send(Message::Text(text.into())).await.is_ok();
                }
                if !sent {
                    break;
                }
            }
            () = session.me.too_slow.notified() => break,
            incoming = socket.recv() => {
                let Some(Ok(message)) = incoming else { break };
                if second.elapsed() >= Duration::from_secs(1) {
                    (second, messages) = (tokio::time::Instant::now(), 0);
                }
                messages += 1;
                if messages > REQUESTS_PER_SECOND {
                    break;
                }
                let text = match message {
                    Message::Text(text) => text,
                    Message::Pong(_) => {
                        last_pong = tokio::time::Instant::now();
                        continue;
                    }
                    // Read on: the next read sends the close reply, then ends.
                    Message::Close(_) | Message::Ping(_) | Message::Binary(_) => continue,
                };
                let reply = session.request(&text, &mut events);
                let mut sent = true;
                for event in events.drain(..).chain([reply]) {
                    sent = sent && socket.send(Message::Text(event.to_string().into())).await.is_ok();
                }
                if !sent {
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
    for subscription in &session.subscriptions {
        session
            .hub
            .unsubscribe(session.connection_id, &subscription.stream);
    }
}
