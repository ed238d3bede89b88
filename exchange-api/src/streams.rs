//! Binance-compatible WebSocket market streams: `/ws`, `/ws/<stream>`,
//! `/ws/<anything>` and `/stream?streams=a/b`, with Binance's control
//! messages and payloads.
//!
//! ```text
//!  engine thread ──Sink::committed──▶ hub task (one) ──try_send──▶ connection buffers
//!                    (batch, once)     renders each event once    (bounded; a full one
//!                                      per stream                  closes that connection)
//! ```
//!
//! The hub keeps its own copy of each book's levels, taken from the engine's
//! `Level` events, so diff depth, partial depth and book tickers are
//! rendered at the update they belong to. Diff events continue REST depth's
//! `lastUpdateId`: `U` is one past the previous event's `u`, so Binance's
//! book-sync recipe finds no gap.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, RawQuery, State};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};
use weiport_exchange::engine::Event;
use weiport_exchange::order::Side;
use weiport_exchange::sequencer::{Outcome, Sink};
use weiport_exchange::view::View;
use weiport_exchange::{Amount, Catalog, MarketId};

use weiport_exchange::now_ms;

use crate::api::Exchange;
use crate::error::BinanceError;
use crate::ticker::{TickerFields, five_minute_price, statistics};

/// Frames a connection may have waiting before it counts as too slow.
const BUFFER: usize = 1024;
/// Binance: at most this many streams per connection.
const MAX_STREAMS: usize = 1024;
/// Binance: incoming messages per second per connection (pings and pongs count).
const MAX_MESSAGES_PER_SECOND: u32 = 5;
const PING_EVERY: Duration = Duration::from_secs(20);
const PONG_WITHIN: Duration = Duration::from_secs(60);
const LIFETIME: Duration = Duration::from_secs(24 * 3600);
/// Diff and partial depth push at 100 ms (`@100ms`) or 1000 ms.
const FAST_TICK: Duration = Duration::from_millis(100);

/// One event rendered for one stream, in both connection formats.
struct Frame {
    raw: Utf8Bytes,
    combined: Utf8Bytes,
}

/// A connection as the hub sees it.
struct Connection {
    frames: mpsc::Sender<Arc<Frame>>,
    combined: AtomicBool,
    /// Set when its buffer overflowed: the connection closes itself.
    too_slow: Notify,
}

/// Per market: the hub's copy of the book and what depth streams still owe.
#[derive(Default)]
struct Book {
    bids: BTreeMap<Amount, Amount>,
    asks: BTreeMap<Amount, Amount>,
    /// The last update applied (REST depth's `lastUpdateId`).
    update_id: u64,
    /// Levels changed since the last diff event, per speed (100 ms, 1000 ms).
    pending: [BTreeMap<(bool, Amount), Amount>; 2],
    /// `u` of the last diff event per speed.
    published: [u64; 2],
    /// Partial depth is due (the book changed since it was last pushed), per speed.
    partial_due: [bool; 2],
    /// The last book ticker pushed: (bid, bid qty, ask, ask qty).
    top: (Amount, Amount, Amount, Amount),
}

impl Book {
    fn set(&mut self, buy: bool, price: Amount, quantity: Amount) {
        let levels = if buy { &mut self.bids } else { &mut self.asks };
        if quantity.is_zero() {
            levels.remove(&price);
        } else {
            levels.insert(price, quantity);
        }
        for pending in &mut self.pending {
            pending.insert((buy, price), quantity);
        }
        self.partial_due = [true, true];
    }

    fn top(&self) -> (Amount, Amount, Amount, Amount) {
        let (bid, bid_qty) = self
            .bids
            .last_key_value()
            .map_or_else(Default::default, |(p, q)| (*p, *q));
        let (ask, ask_qty) = self
            .asks
            .first_key_value()
            .map_or_else(Default::default, |(p, q)| (*p, *q));
        (bid, bid_qty, ask, ask_qty)
    }
}

/// The stream hub: subscriptions, and the fan-out of rendered events.
pub struct StreamHub {
    catalog: Arc<Catalog>,
    /// Stream name → subscribed connections by id.
    subscribers: Mutex<HashMap<String, HashMap<u64, Arc<Connection>>>>,
    next_connection: AtomicU64,
    /// Batches from the engine thread, taken by [`StreamHub::run`].
    batches: Mutex<Option<mpsc::UnboundedReceiver<Vec<Arc<Outcome>>>>>,
    /// Books as of the start, handed over by the engine thread.
    start: Mutex<Option<Vec<Book>>>,
}

/// The hub's end on the engine thread: hands each batch over once, never blocks.
pub struct StreamSink {
    batches: mpsc::UnboundedSender<Vec<Arc<Outcome>>>,
    hub: Arc<StreamHub>,
}

impl Sink for StreamSink {
    fn opened(&mut self, view: &View) {
        let books = self
            .hub
            .catalog
            .markets()
            .map(|(id, _)| {
                let mut book = Book::default();
                if let Some(market) = view.market(id) {
                    book.bids = market.bids.clone();
                    book.asks = market.asks.clone();
                    book.update_id = market.update_id;
                    book.published = [market.update_id; 2];
                    book.top = book.top();
                }
                book
            })
            .collect();
        *self
            .hub
            .start
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(books);
    }

    fn committed(&mut self, outcomes: &[Arc<Outcome>]) {
        // The hub task gone (shutdown) is not the engine's concern.
        let _ = self.batches.send(outcomes.to_vec());
    }
}

impl StreamHub {
    /// A hub over the catalog's markets and the sink that feeds it (give it
    /// to the sequencer, then spawn [`StreamHub::run`]).
    pub fn new(catalog: Arc<Catalog>) -> (Arc<Self>, StreamSink) {
        let (batches, receiver) = mpsc::unbounded_channel();
        let hub = Arc::new(Self {
            catalog,
            subscribers: Mutex::default(),
            next_connection: AtomicU64::new(1),
            batches: Mutex::new(Some(receiver)),
            start: Mutex::new(None),
        });
        (hub.clone(), StreamSink { batches, hub })
    }

    fn has_subscribers(&self, stream: &str) -> bool {
        self.subscribers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(stream)
            .is_some_and(|s| !s.is_empty())
    }

    /// Sends `data` on `stream` to every subscriber; one whose buffer is
    /// full is told to close and leaves the stream.
    fn publish(&self, stream: &str, data: &Value) {
        let mut subscribers = self
            .subscribers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let Some(connections) = subscribers.get_mut(stream) else {
            return;
        };
        if connections.is_empty() {
            return;
        }
        let raw = data.to_string();
        let combined = format!("{{\"stream\":\"{stream}\",\"data\":{raw}}}");
        let frame = Arc::new(Frame {
            raw: raw.into(),
            combined: combined.into(),
        });
        connections.retain(
            |_, connection| match connection.frames.try_send(frame.clone()) {
                Ok(()) => true,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    connection.too_slow.notify_one();
                    false
                }
                Err(mpsc::error::TrySendError::Closed(_)) => false,
            },
        );
    }

    /// Follows the engine's committed batches and the depth clock until the
    /// sequencer stops.
    pub async fn run(self: Arc<Self>) {
        let Some(mut batches) = self
            .batches
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        else {
            return;
        };
        let mut books = self
            .start
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .unwrap_or_else(|| self.catalog.markets().map(|_| Book::default()).collect());
        let mut tick = tokio::time::interval(FAST_TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut ticks = 0u64;
        loop {
            tokio::select! {
                batch = batches.recv() => match batch {
                    Some(batch) => {
                        for outcome in batch {
                            self.outcome(&outcome, &mut books);
                        }
                    }
                    None => return,
                },
                _ = tick.tick() => {
                    ticks += 1;
                    self.flush_depth(&mut books, 0);
                    if ticks.is_multiple_of(10) {
                        self.flush_depth(&mut books, 1);
                    }
                }
            }
        }
    }

    fn symbol(&self, market: MarketId) -> String {
        self.catalog.symbol(market).to_ascii_lowercase()
    }

    fn outcome(&self, outcome: &Outcome, books: &mut [Book]) {
        let now = now_ms();
        for trade in &outcome.changes.trades {
            let symbol = self.catalog.symbol(trade.market);
            let stream = format!("{}@trade", symbol.to_ascii_lowercase());
            if self.has_subscribers(&stream) {
                self.publish(
                    &stream,
                    &json!({
                        "e": "trade", "E": now, "s": symbol, "t": trade.trade_id,
                        "p": trade.price.to_string(), "q": trade.quantity.to_string(),
                        "T": trade.time_ms, "m": trade.taker_side == Side::Sell, "M": true,
                    }),
                );
            }
        }
        for (market, agg) in &outcome.changes.aggs {
            let symbol = self.catalog.symbol(*market);
            let stream = format!("{}@aggTrade", symbol.to_ascii_lowercase());
            if self.has_subscribers(&stream) {
                self.publish(
                    &stream,
                    &json!({
                        "e": "aggTrade", "E": now, "s": symbol, "a": agg.id,
                        "p": Amount::from_units(agg.price).to_string(),
                        "q": Amount::from_units(agg.quantity).to_string(),
                        "f": agg.first_trade, "l": agg.last_trade, "T": agg.time_ms,
                        "m": agg.buyer_is_maker, "M": true,
                    }),
                );
            }
        }
        let mut touched = Vec::new();
        for event in &outcome.events {
            if let Event::Level {
                market,
                side,
                price,
                quantity,
            } = event
                && let Some(book) = books.get_mut(usize::from(market.0))
            {
                book.set(*side == Side::Buy, *price, *quantity);
                book.update_id = outcome.sequence;
                if !touched.contains(market) {
                    touched.push(*market);
                }
            }
        }
        for market in touched {
            let book = &mut books[usize::from(market.0)];
            let top = book.top();
            if top == book.top {
                continue;
            }
            book.top = top;
            let symbol = self.catalog.symbol(market);
            let stream = format!("{}@bookTicker", symbol.to_ascii_lowercase());
            self.publish(
                &stream,
                &json!({
                    "u": book.update_id, "s": symbol,
                    "b": top.0.to_string(), "B": top.1.to_string(),
                    "a": top.2.to_string(), "A": top.3.to_string(),
                }),
            );
        }
    }

    /// Pushes diff and partial depth of speed `speed` (0: 100 ms, 1: 1000 ms).
    fn flush_depth(&self, books: &mut [Book], speed: usize) {
        let suffix = if speed == 0 { "@100ms" } else { "" };
        for (index, book) in books.iter_mut().enumerate() {
            let market = MarketId(index as u16);
            let symbol = self.symbol(market);
            if !book.pending[speed].is_empty() {
                let pending = std::mem::take(&mut book.pending[speed]);
                let first = book.published[speed] + 1;
                book.published[speed] = book.update_id;
                let stream = format!("{symbol}@depth{suffix}");
                if self.has_subscribers(&stream) {
                    let side = |buy: bool| -> Vec<Value> {
                        let levels = pending.iter().filter(|((b, _), _)| *b == buy);
                        let pairs = levels.map(|((_, p), q)| json!([p.to_string(), q.to_string()]));
                        if buy {
                            pairs.rev().collect()
                        } else {
                            pairs.collect()
                        }
                    };
                    self.publish(
                        &stream,
                        &json!({
                            "e": "depthUpdate", "E": now_ms(),
                            "s": self.catalog.symbol(market),
                            "U": first, "u": book.update_id,
                            "b": side(true), "a": side(false),
                        }),
                    );
                }
            }
            if std::mem::take(&mut book.partial_due[speed]) {
                for levels in [5, 10, 20] {
                    let stream = format!("{symbol}@depth{levels}{suffix}");
                    if !self.has_subscribers(&stream) {
                        continue;
                    }
                    let pairs = |side: &mut dyn Iterator<Item = (&Amount, &Amount)>| -> Vec<Value> {
                        side.take(levels)
                            .map(|(p, q)| json!([p.to_string(), q.to_string()]))
                            .collect()
                    };
                    self.publish(
                        &stream,
                        &json!({
                            "lastUpdateId": book.update_id,
                            "bids": pairs(&mut book.bids.iter().rev()),
                            "asks": pairs(&mut book.asks.iter()),
                        }),
                    );
                }
            }
        }
    }

    /// Whether `name` is a stream this hub serves (lower-case symbol, as Binance).
    fn known_stream(&self, name: &str) -> bool {
        if name == "!miniTicker@arr" {
            return true;
        }
        let Some((symbol, kind)) = name.split_once('@') else {
            return false;
        };
        if symbol != symbol.to_ascii_lowercase()
            || self
                .catalog
                .market_id(&symbol.to_ascii_uppercase())
                .is_none()
        {
            return false;
        }
        matches!(
            kind,
            "trade"
                | "aggTrade"
                | "bookTicker"
                | "depth"
                | "depth@100ms"
                | "depth5"
                | "depth10"
                | "depth20"
                | "depth5@100ms"
                | "depth10@100ms"
                | "depth20@100ms"
                | "ticker"
                | "miniTicker"
                | "ticker_1h"
                | "ticker_4h"
                | "ticker_1d"
                | "avgPrice"
        )
    }

    fn subscribe(&self, id: u64, connection: &Arc<Connection>, stream: &str) {
        self.subscribers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(stream.to_owned())
            .or_default()
            .insert(id, connection.clone());
    }

    fn unsubscribe(&self, id: u64, stream: &str) {
        let mut subscribers = self
            .subscribers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(connections) = subscribers.get_mut(stream) {
            connections.remove(&id);
            if connections.is_empty() {
                subscribers.remove(stream);
            }
        }
    }
}

/// `/ws` with no stream.
pub(crate) async fn ws_bare(State(exchange): State<Arc<Exchange>>, upgrade: Upgrade) -> Response {
    open(exchange.streams.clone(), upgrade, Vec::new(), false)
}

/// `/ws/<stream>[/<stream>…]`; anything else after `/ws/` opens an empty connection.
pub(crate) async fn ws_path(
    State(exchange): State<Arc<Exchange>>,
    Path(path): Path<String>,
    upgrade: Upgrade,
) -> Response {
    let streams = path.split('/').map(str::to_owned).collect();
    open(exchange.streams.clone(), upgrade, streams, false)
}

/// `/stream?streams=a/b/c`: every event wrapped as `{"stream","data"}`.
pub(crate) async fn combined(
    State(exchange): State<Arc<Exchange>>,
    RawQuery(query): RawQuery,
    upgrade: Upgrade,
) -> Response {
    let streams = form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .filter(|(name, _)| name == "streams")
        .flat_map(|(_, value)| value.split('/').map(str::to_owned).collect::<Vec<_>>())
        .collect();
    open(exchange.streams.clone(), upgrade, streams, true)
}

/// A WebSocket handshake, or why the request is not one.
type Upgrade = Result<WebSocketUpgrade, WebSocketUpgradeRejection>;

fn open(hub: Arc<StreamHub>, upgrade: Upgrade, streams: Vec<String>, combined: bool) -> Response {
    match upgrade {
        Ok(upgrade) => upgrade.on_upgrade(move |socket| connection(hub, socket, streams, combined)),
        // A plain HTTP request here gets an answer in Binance's shape.
        Err(rejection) => {
            let msg = format!("A WebSocket upgrade is required here: {rejection}.");
            BinanceError::bad(-1000, msg).into_response()
        }
    }
}

/// One client connection: its subscriptions, control messages and keep-alive.
async fn connection(
    hub: Arc<StreamHub>,
    mut socket: WebSocket,
    streams: Vec<String>,
    combined: bool,
) {
    let id = hub.next_connection.fetch_add(1, Ordering::Relaxed);
    let (frames, mut outgoing) = mpsc::channel(BUFFER);
    let me = Arc::new(Connection {
        frames,
        combined: AtomicBool::new(combined),
        too_slow: Notify::new(),
    });
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
            frame = outgoing.recv() => {
                let Some(frame) = frame else { break };
                let text = if me.combined.load(Ordering::Relaxed) { frame.combined.clone() } else { frame.raw.clone() };
                if socket.send(Message::Text(text)).await.is_err() {
                    break;
                }
            }
            () = me.too_slow.notified() => {
                let _ = socket.send(close(1008, "Too slow: the connection's buffer is full")).await;
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
                    Message::Close(_) => break,
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
        Value::String(s) => s.len() <= 36 && s.bytes().all(|b| b.is_ascii_alphanumeric()),
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

/// The 24-hour and rolling-window tickers and the average price, pushed
/// every second to their subscribers, from the same statistics as REST.
/// Holds the exchange only while pushing, so shutting it down is not delayed.
pub async fn push_tickers(exchange: std::sync::Weak<Exchange>) {
    let mut every = tokio::time::interval(Duration::from_secs(1));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        let Some(exchange) = exchange.upgrade() else {
            return;
        };
        let hub = exchange.streams.clone();
        let now = now_ms();
        let mut minis = Vec::new();
        let wants_all_minis = hub.has_subscribers("!miniTicker@arr");
        for (id, _) in exchange.catalog.markets() {
            let symbol = hub.symbol(id);
            let wanted = |kind: &str| hub.has_subscribers(&format!("{symbol}@{kind}"));
            let mut payloads: Vec<(String, Value)> = Vec::new();
            {
                let view = exchange.sequencer.view();
                let day = (now.saturating_sub(86_400_000), now);
                if wanted("ticker") {
                    let stats =
                        statistics(&exchange, &view, id, now, day, TickerFields::FullWithBook);
                    payloads.push((
                        format!("{symbol}@ticker"),
                        stream_ticker("24hrTicker", now, &stats, TICKER_KEYS),
                    ));
                }
                if wanted("miniTicker") || wants_all_minis {
                    let stats = statistics(&exchange, &view, id, now, day, TickerFields::Mini);
                    let mini = stream_ticker("24hrMiniTicker", now, &stats, MINI_KEYS);
                    if wants_all_minis && stats["count"] != 0 {
                        minis.push(mini.clone());
                    }
                    payloads.push((format!("{symbol}@miniTicker"), mini));
                }
                for (window, ms) in [("1h", 3_600_000), ("4h", 14_400_000), ("1d", 86_400_000)] {
                    if wanted(&format!("ticker_{window}")) {
                        let span = (now.saturating_sub(ms), now);
                        let stats = statistics(&exchange, &view, id, now, span, TickerFields::Full);
                        let event = format!("{window}Ticker");
                        payloads.push((
                            format!("{symbol}@ticker_{window}"),
                            stream_ticker(&event, now, &stats, WINDOW_KEYS),
                        ));
                    }
                }
                if wanted("avgPrice") {
                    let (price, recent) = five_minute_price(&view, id, now);
                    let close = match (recent, view.market(id).and_then(|m| m.last_trade)) {
                        (Some(_), Some(last)) => last.time_ms,
                        _ => now,
                    };
                    payloads.push((
                        format!("{symbol}@avgPrice"),
                        json!({
                            "e": "avgPrice", "E": now, "s": exchange.catalog.symbol(id), "i": "5m",
                            "w": price.unwrap_or(Amount::ZERO).to_string(), "T": close,
                        }),
                    ));
                }
            }
            for (stream, payload) in payloads {
                hub.publish(&stream, &payload);
            }
        }
        if !minis.is_empty() {
            hub.publish("!miniTicker@arr", &Value::Array(minis));
        }
    }
}

/// Stream field ← REST field of the 24-hour ticker.
const TICKER_KEYS: &[(&str, &str)] = &[
    ("p", "priceChange"),
    ("P", "priceChangePercent"),
    ("w", "weightedAvgPrice"),
    ("x", "prevClosePrice"),
    ("c", "lastPrice"),
    ("Q", "lastQty"),
    ("b", "bidPrice"),
    ("B", "bidQty"),
    ("a", "askPrice"),
    ("A", "askQty"),
    ("o", "openPrice"),
    ("h", "highPrice"),
    ("l", "lowPrice"),
    ("v", "volume"),
    ("q", "quoteVolume"),
    ("O", "openTime"),
    ("C", "closeTime"),
    ("F", "firstId"),
    ("L", "lastId"),
    ("n", "count"),
];

/// Stream field ← REST field of the mini ticker.
const MINI_KEYS: &[(&str, &str)] = &[
    ("c", "lastPrice"),
    ("o", "openPrice"),
    ("h", "highPrice"),
    ("l", "lowPrice"),
    ("v", "volume"),
    ("q", "quoteVolume"),
];

/// Stream field ← REST field of the rolling-window ticker.
const WINDOW_KEYS: &[(&str, &str)] = &[
    ("p", "priceChange"),
    ("P", "priceChangePercent"),
    ("o", "openPrice"),
    ("h", "highPrice"),
    ("l", "lowPrice"),
    ("c", "lastPrice"),
    ("w", "weightedAvgPrice"),
    ("v", "volume"),
    ("q", "quoteVolume"),
    ("O", "openTime"),
    ("C", "closeTime"),
    ("F", "firstId"),
    ("L", "lastId"),
    ("n", "count"),
];

/// A REST ticker in a stream's short field names, with its event type and time.
fn stream_ticker(event: &str, now: u64, rest: &Value, keys: &[(&str, &str)]) -> Value {
    let mut out = serde_json::Map::new();
    out.insert("e".into(), json!(event));
    out.insert("E".into(), json!(now));
    out.insert("s".into(), rest["symbol"].clone());
    for (short, long) in keys {
        out.insert((*short).into(), rest[*long].clone());
    }
    Value::Object(out)
}
