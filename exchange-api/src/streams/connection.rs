//! One client connection: subscriptions, control messages, keep-alive and
//! Binance's connection rules.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket};
use futures::SinkExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::hub::{Connection, Frame, StreamHub};

/// Frames a connection may have waiting before it counts as too slow.
pub(crate) const BUFFER: usize = 1024;
/// Binance: at most this many streams per connection.
const MAX_STREAMS: usize = 1024;
/// Binance: incoming messages per second per connection (pings and pongs count).
const MAX_MESSAGES_PER_SECOND: u32 = 5;
pub(crate) const PING_EVERY: Duration = Duration::from_secs(20);
pub(crate) const PONG_WITHIN: Duration = Duration::from_secs(60);
const LIFETIME: Duration = Duration::from_secs(24 * 3600);
/// How long a close frame to a client that stopped reading may take.
const CLOSE_WITHIN: Duration = Duration::from_secs(1);

/// One client connection: its subscriptions, control messages and keep-alive.
pub(crate) async fn connection(
    hub: Arc<StreamHub>,
    mut socket: WebSocket,
    streams: Vec<String>,
    combined: bool,
    microseconds: bool,
) {
    let id = hub.next_connection.fetch_add(1, Ordering::Relaxed);
    let (me, mut outgoing) = Connection::new(BUFFER, combined, microseconds);
    let mut subscribed: Vec<String> = Vec::new();
    for stream in streams {
        if hub.known_stream(&stream)
            && !subscribed.contains(&stream)
            && subscribed.len() < MAX_STREAMS
        {
            hub.subscribe(id, &me, &stream);
            subscribed.push(stream);
        }
    }
    let mut ping = tokio::time::interval(PING_EVERY);
    ping.reset();
    let mut last_pong = tokio::time::Instant::now();
    let lifetime = tokio::time::sleep(LIFETIME);
    tokio::pin!(lifetime);
    let (mut second, mut messages) = (tokio::time::Instant::now(), 0u32);
    let close = |code: u16, reason: &'static str| {
        Message::Close(Some(CloseFrame {
            code,
            reason: Utf8Bytes::from_static(reason),
        }))
    };
    loop {
        tokio::select! {
            // Frames first: when one waits, no other branch is polled.
            biased;
            frame = outgoing.recv() => {
                let Some(frame) = frame else { break };
                if send_queued(&mut socket, &me, frame, &mut outgoing).await.is_err() {
                    break;
                }
            }
            () = me.too_slow.notified() => {
                // The client reads nothing: its close frame may never get out.
                let closing = socket.send(close(1008, "Too slow: the connection's buffer is full"));
                let _ = tokio::time::timeout(CLOSE_WITHIN, closing).await;
                break;
            }
            incoming = socket.recv() => {
                let Some(Ok(message)) = incoming else { break };
                if second.elapsed() >= Duration::from_secs(1) {
                    (second, messages) = (tokio::time::Instant::now(), 0);
                }
                messages += 1;
                if messages > MAX_MESSAGES_PER_SECOND {
                    let _ = socket.send(close(1008, "Too many messages")).await;
                    break;
                }
                match message {
                    Message::Text(text) => {
                        let reply = control(&hub, id, &me, &mut subscribed, &text);
                        if socket.send(Message::Text(reply.to_string().into())).await.is_err() {
                            break;
                        }
                    }
                    Message::Pong(_) => last_pong = tokio::time::Instant::now(),
                    // Read on: the next read sends the close reply that
                    // completes the handshake, then ends the stream.
                    Message::Close(_) => {}
                    Message::Ping(_) | Message::Binary(_) => {}
                }
            }
            _ = ping.tick() => {
                if last_pong.elapsed() > PONG_WITHIN {
                    break;
                }
                if socket.send(Message::Ping(Vec::new().into())).await.is_err() {
                    break;
                }
            }
            () = &mut lifetime => {
                let _ = socket.send(close(1000, "Connection lifetime reached")).await;
                break;
            }
        }
    }
    for stream in &subscribed {
        hub.unsubscribe(id, stream);
    }
}

/// Frames written before one flush: a connection that fell behind catches
/// up with one write for many events instead of one write each.
const FRAMES_PER_WRITE: usize = 64;

/// Writes `frame` and whatever else is already queued, then flushes once.
async fn send_queued(
    socket: &mut WebSocket,
    me: &Connection,
    frame: Arc<Frame>,
    outgoing: &mut mpsc::Receiver<Arc<Frame>>,
) -> Result<(), axum::Error> {
    let text = |frame: &Frame| {
        if me.combined.load(Ordering::Relaxed) {
            frame.combined.clone()
        } else {
            frame.raw.clone()
        }
    };
    socket.feed(Message::Text(text(&frame))).await?;
    for _ in 1..FRAMES_PER_WRITE {
        let Ok(frame) = outgoing.try_recv() else {
            break;
        };
        socket.feed(Message::Text(text(&frame))).await?;
    }
    socket.flush().await
}

fn control_error(code: u8, msg: &str, id: &Value) -> Value {
    json!({ "error": { "code": code, "msg": msg }, "id": id })
}

/// Answers one control message (SUBSCRIBE, UNSUBSCRIBE, LIST_SUBSCRIPTIONS,
/// SET_PROPERTY, GET_PROPERTY) as Binance does.
fn control(
    hub: &StreamHub,
    connection_id: u64,
    me: &Arc<Connection>,
    subscribed: &mut Vec<String>,
    text: &str,
) -> Value {
    let request: Value = match serde_json::from_str(text) {
        Ok(request) => request,
        Err(error) => {
            let msg = format!("Invalid JSON: {error}");
            return control_error(3, &msg, &Value::Null);
        }
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let id_ok = match &id {
        Value::Null => true,
        Value::Number(n) => n.is_i64() || n.is_u64(),
        // Alphanumerics, and the hyphens of the UUIDs Binance's own SDK sends.
        Value::String(s) => {
            s.len() <= 36 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        }
        _ => false,
    };
    if !id_ok {
        return control_error(
            2,
            "Invalid request: request ID must be an unsigned integer",
            &Value::Null,
        );
    }
    let Some(method) = request.get("method").and_then(Value::as_str) else {
        return control_error(2, "Invalid request: missing field `method`", &id);
    };
    let params: Vec<Value> = match request.get("params") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(params)) => params.clone(),
        Some(_) => return control_error(2, "Invalid request: invalid type for `params`", &id),
    };
    let names = || -> Option<Vec<String>> {
        params
            .iter()
            .map(|p| p.as_str().map(str::to_owned))
            .collect()
    };
    match method {
        "SUBSCRIBE" => {
            let Some(names) = names().filter(|n| n.iter().all(|s| hub.known_stream(s))) else {
                return control_error(2, "Invalid request: invalid stream", &id);
            };
            let new: Vec<_> = names
                .into_iter()
                .filter(|n| !subscribed.contains(n))
                .collect();
            if subscribed.len() + new.len() > MAX_STREAMS {
                return control_error(2, "Invalid request: too many streams", &id);
            }
            for name in new {
                if !subscribed.contains(&name) {
                    hub.subscribe(connection_id, me, &name);
                    subscribed.push(name);
                }
            }
            json!({ "result": null, "id": id })
        }
        "UNSUBSCRIBE" => {
            let Some(names) = names() else {
                return control_error(2, "Invalid request: invalid stream", &id);
            };
            for name in names {
                hub.unsubscribe(connection_id, &name);
                subscribed.retain(|s| *s != name);
            }
            json!({ "result": null, "id": id })
        }
        "LIST_SUBSCRIPTIONS" => json!({ "result": subscribed, "id": id }),
        "SET_PROPERTY" => match (params.first().and_then(Value::as_str), params.get(1)) {
            (Some("combined"), Some(Value::Bool(on))) => {
                me.combined.store(*on, Ordering::Relaxed);
                json!({ "result": null, "id": id })
            }
            (Some("combined"), _) => control_error(1, "Invalid value type: expected Boolean", &id),
            _ => control_error(0, "Unknown property", &id),
        },
        "GET_PROPERTY" => match params.first().and_then(Value::as_str) {
            Some("combined") => json!({ "result": me.combined.load(Ordering::Relaxed), "id": id }),
            _ => control_error(0, "Unknown property", &id),
        },
        _ => control_error(2, "Invalid request: unknown variant", &id),
    }
}
