//! Binance's WebSocket API (`/ws-api/v3`): every operation of the route
//! table over one connection, by its Binance method name (`order.place`,
//! `account.status`, `depth`…), plus the connection's own methods
//! (`session.logon`, `userDataStream.subscribe`…).
//!
//! ```text
//!  text frame ─▶ Request ─▶ route's request ─▶ access guard ─▶ route handler
//!  {"id","method",            query string +    (same weights,    (the HTTP
//!   "params"}                 SocketCall         limits, bans)     route's own)
//!                             (apiKey/signature
//!                              or the logon)
//!  answer frame ◀── {"id","status","result"|"error","rateLimits"} ◀─┘
//! ```
//!
//! A request is signed the WebSocket API's way (its parameters sorted by
//! name, `signature` aside) or, after `session.logon` with an Ed25519 key,
//! not at all. Requests on one connection run side by side (answers may
//! come in another order, matched by `id`), up to [`IN_FLIGHT`]; the
//! connection's own methods run in turn, so a request sent after a logon is
//! the logged-on key's.

mod frame;
mod operations;
mod session;

use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::ws::{Message, WebSocket};
use axum::extract::{RawQuery, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, http};
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde_json::Value;
use weiport_access::{Access, ApiKey, Caller, SocketCall, Usage};
use weiport_exchange::now_ms;

use crate::error::{BinanceError, Refusal};
use crate::exchange::Exchange;
use crate::streams::{
    BUFFER, Connection, Frame, PING_EVERY, PONG_WITHIN, Upgrade, in_microseconds, query_values,
    upgrade_or_refuse,
};
use frame::{Request, answer, error_body, flag, rate_limits};
pub(crate) use operations::{Operations, who_calls};
use session::Session;

/// Requests of one connection that may be in progress at once; beyond,
/// the connection reads no more until one is answered.
const IN_FLIGHT: usize = 32;

/// `/ws-api/v3?returnRateLimits=…&timeUnit=…`: a WebSocket API connection.
pub(crate) async fn ws_api(
    State(exchange): State<Arc<Exchange>>,
    Extension(caller): Extension<Caller>,
    Extension(operations): Extension<Arc<Operations>>,
    RawQuery(query): RawQuery,
    upgrade: Upgrade,
) -> Response {
    let microseconds = match in_microseconds(query.as_deref()) {
        Ok(microseconds) => microseconds,
        Err(error) => return error.into_response(),
    };
    let return_rate_limits = match query_values(query.as_deref(), "returnRateLimits").last() {
        None => true,
        Some(text) => match flag(&text) {
            Some(show) => show,
            None => {
                return BinanceError::from(Refusal::InvalidValue("returnRateLimits"))
                    .into_response();
            }
        },
    };
    let (hub, access) = (exchange.streams.clone(), exchange.access.clone());
    upgrade_or_refuse(upgrade, move |socket| {
        let (me, outgoing) = Connection::new(BUFFER, false, microseconds);
        let session = Session::new(hub, me, return_rate_limits);
        let link = Link {
            access,
            operations,
            ip: caller.ip,
        };
        serve(link, session, outgoing, socket)
    })
}

/// What every request of a connection goes through.
#[derive(Clone)]
struct Link {
    access: Arc<Access>,
    operations: Arc<Operations>,
    ip: IpAddr,
}

/// An answer being worked out.
type Answering = Pin<Box<dyn Future<Output = String> + Send>>;

/// One connection: requests in, answers and user data events out.
async fn serve(
    link: Link,
    mut session: Session,
    mut outgoing: tokio::sync::mpsc::Receiver<Arc<Frame>>,
    mut socket: WebSocket,
) {
    let mut ping = tokio::time::interval(PING_EVERY);
    ping.reset();
    let mut last_pong = tokio::time::Instant::now();
    let mut answering: FuturesUnordered<Answering> = FuturesUnordered::new();
    let mut events = Vec::new();
    // Waited on across the loop: a new waiter each turn would lock the
    // notifier's list twice a turn.
    let me = session.me.clone();
    let too_slow = me.too_slow.notified();
    tokio::pin!(too_slow);
    loop {
        let mut sent = true;
        tokio::select! {
            frame = outgoing.recv() => {
                let Some(frame) = frame else { break };
                for subscription in session.subscriptions.iter().filter(|s| *s.stream == *frame.stream) {
                    let text = format!("{{\"subscriptionId\":{},\"event\":{}}}", subscription.id, &*frame.raw);
                    sent = sent && socket.send(Message::Text(text.into())).await.is_ok();
                }
            }
            () = &mut too_slow => break,
            Some(text) = answering.next(), if !answering.is_empty() => {
                sent = socket.send(Message::Text(text.into())).await.is_ok();
            }
            incoming = socket.recv(), if answering.len() < IN_FLIGHT => {
                let Some(Ok(message)) = incoming else { break };
                let text = match message {
                    Message::Text(text) => text,
                    Message::Pong(_) => {
                        last_pong = tokio::time::Instant::now();
                        continue;
                    }
                    // Read on: the next read sends the close reply, then ends.
                    Message::Close(_) | Message::Ping(_) | Message::Binary(_) => continue,
                };
                match request(&link, &mut session, &text, &mut events).await {
                    Handled::Now(reply) => {
                        for event in events.drain(..) {
                            sent = sent && socket.send(Message::Text(event.to_string().into())).await.is_ok();
                        }
                        sent = sent && socket.send(Message::Text(reply.into())).await.is_ok();
                    }
                    Handled::Later(reply) => answering.push(reply),
                }
            }
            _ = ping.tick() => {
                sent = last_pong.elapsed() <= PONG_WITHIN
                    && socket.send(Message::Ping(Vec::new().into())).await.is_ok();
            }
        }
        if !sent {
            break;
        }
    }
}

/// A request's answer: ready, or on its way.
enum Handled {
    Now(String),
    Later(Answering),
}

/// Takes one request: the connection's own methods in turn, the others
/// side by side.
async fn request(
    link: &Link,
    session: &mut Session,
    text: &str,
    events: &mut Vec<Value>,
) -> Handled {
    let request = match Request::parse(text) {
        Ok(request) => request,
        Err((id, error)) => {
            return Handled::Now(link.refuse(&id, &error, session.return_rate_limits));
        }
    };
    let show = match request.return_rate_limits() {
        Ok(show) => show.unwrap_or(session.return_rate_limits),
        Err(error) => {
            return Handled::Now(link.refuse(request.id, &error, session.return_rate_limits));
        }
    };
    if !link.operations.knows(&request.method) {
        let error = BinanceError::from(Refusal::Unsupported);
        return Handled::Now(link.refuse(request.id, &error, show));
    }
    let call = SocketCall {
        ip: link.ip,
        proof: request.proof(session.logged_on()),
    };
    let query = request.query();
    if session::METHODS.contains(&&*request.method) {
        if let Err(error) = session.precheck(&request.method) {
            return Handled::Now(link.refuse(request.id, &error, show));
        }
        let Some(response) = link.operations.call(&request.method, &query, call).await else {
            return Handled::Now(link.refuse(request.id, &BinanceError::unavailable(), show));
        };
        if response.status() != StatusCode::OK {
            return Handled::Now(link.render(request.id, response, show).await);
        }
        let usage = response.extensions().get::<Usage>().copied();
        let key = response.extensions().get::<Arc<ApiKey>>().cloned();
        let subscription = request.param("subscriptionId");
        let acted = session.act(&request.method, subscription, key.as_ref(), events);
        let (status, body) = match acted {
            Ok(result) => (200, result.to_string()),
            Err(error) => (error.status.as_u16(), error_body(&error)),
        };
        let shown = show.then(|| link.rate_limits(usage));
        return Handled::Now(answer(request.id, status, &body, shown.as_deref()));
    }
    let link = link.clone();
    let (id, method) = (request.id.to_owned(), request.method.into_owned());
    Handled::Later(Box::pin(async move {
        match link.operations.call(&method, &query, call).await {
            Some(response) => link.render(&id, response, show).await,
            None => link.refuse(&id, &BinanceError::unavailable(), show),
        }
    }))
}

impl Link {
    /// A refusal of a request the guard never saw (not JSON, no such
    /// method): it still costs the address a request's weight, so a flood
    /// of them is limited and banned like any other.
    fn refuse(&self, id: &str, error: &BinanceError, show: bool) -> String {
        let limiter = &self.access.limiter;
        let now = now_ms();
        let charged = limiter
            .check_ip(self.ip, now)
            .and_then(|()| limiter.charge_ip_weight(self.ip, 1, now));
        let (error, usage) = match charged {
            Ok(usage) => (error.clone(), Some(usage)),
            Err(refused) => (BinanceError::from(&refused), None),
        };
        let shown = show.then(|| self.rate_limits(usage));
        answer(
            id,
            error.status.as_u16(),
            &error_body(&error),
            shown.as_deref(),
        )
    }

    /// The route's answer as a WebSocket API answer.
    async fn render(&self, id: &str, response: Response, show: bool) -> String {
        let status = response.status();
        let usage = response.extensions().get::<Usage>().copied();
        let retry_after = response
            .headers()
            .get(header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap_or_default();
        let shown = show.then(|| self.rate_limits(usage));
        let body = answer_body(status, &body, retry_after);
        answer(id, status.as_u16(), &body, shown.as_deref())
    }

    /// `rateLimits` from the request's usage, or, for a request refused
    /// before it was charged, the address's weight so far.
    fn rate_limits(&self, usage: Option<Usage>) -> String {
        let limiter = &self.access.limiter;
        let usage = usage.unwrap_or_else(|| Usage {
            ip_weight_1m: limiter.ip_weight_used(self.ip, now_ms()),
            orders: None,
        });
        rate_limits(limiter.config(), &usage)
    }
}

/// The route's body as the answer's `result` or `error`; a limit's refusal
/// says when to come back (`data.retryAfter`, as Binance's does).
fn answer_body(
    status: http::StatusCode,
    body: &Bytes,
    retry_after_s: Option<u64>,
) -> std::borrow::Cow<'_, str> {
    let json = matches!(body.first(), Some(b'{' | b'['));
    if status == StatusCode::OK {
        return match std::str::from_utf8(body) {
            Ok(text) if json => text.into(),
            _ => "{}".into(),
        };
    }
    let mut error: Value = match serde_json::from_slice(body) {
        Ok(Value::Object(error)) if json => Value::Object(error),
        _ => {
            let error = BinanceError::from(Refusal::Unknown(
                "An unknown error occurred while processing the request.",
            ));
            return error_body(&error).into();
        }
    };
    if let Some(seconds) = retry_after_s {
        let now = now_ms();
        error["data"] = serde_json::json!({
            "serverTime": now,
            "retryAfter": now + seconds * 1000,
        });
    }
    error.to_string().into()
}
