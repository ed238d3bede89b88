//! The hub: subscriptions, the hub's copy of each book, and the fan-out of
//! each event, rendered once per stream, to bounded connection buffers.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::extract::ws::Utf8Bytes;
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};
use weiport_access::keys::random_token;
use weiport_exchange::engine::{AccountId, Event};
use weiport_exchange::history::History;
use weiport_exchange::order::Side;
use weiport_exchange::sequencer::{Outcome, Sink};
use weiport_exchange::view::View;
use weiport_exchange::{Amount, Catalog, MarketId};

use super::tally;
use super::user::{UserState, user_events};

/// A kline stream's `<interval>[@<zone>]`: the interval's length and the
/// zone's offset from UTC, both in ms.
pub(crate) fn kline_stream(text: &str) -> Option<(u64, i64)> {
    let (interval, zone) = match text.split_once('@') {
        Some((interval, zone)) => (interval, crate::calendar::parse_time_zone(zone)?),
        None => (text, 0),
    };
    Some((crate::calendar::interval_ms(interval)?, zone))
}

/// The internal stream of one account's user events (WebSocket API subscriptions).
pub(crate) fn user_stream(account: AccountId) -> String {
    user_stream_name(account).to_string()
}

/// [`user_stream`] without an allocation: "user:" and a u64 always fit.
fn user_stream_name(account: AccountId) -> arrayvec::ArrayString<32> {
    use std::fmt::Write;
    let mut name = arrayvec::ArrayString::new();
    let _ = write!(name, "user:{account}");
    name
}

/// The streams of every market's tickers at once.
pub(crate) const ALL_MARKET_ARRAYS: [&str; 5] = [
    "!miniTicker@arr",
    "!ticker@arr",
    "!ticker_1h@arr",
    "!ticker_4h@arr",
    "!ticker_1d@arr",
];

/// Diff and partial depth push at 100 ms (`@100ms`) or 1000 ms.
const FAST_TICK: Duration = Duration::from_millis(100);

/// One event rendered for one stream, in both connection formats.
pub(crate) struct Frame {
    pub(crate) stream: Arc<str>,
    pub(crate) raw: Utf8Bytes,
    pub(super) combined: Utf8Bytes,
}

impl Frame {
    fn new(stream: &str, data: &Value) -> Arc<Self> {
        let raw = data.to_string();
        let combined = format!("{{\"stream\":\"{stream}\",\"data\":{raw}}}");
        Arc::new(Self {
            stream: stream.into(),
            raw: raw.into(),
            combined: combined.into(),
        })
    }
}

/// A connection as the hub sees it.
pub(crate) struct Connection {
    pub(super) frames: mpsc::Sender<Arc<Frame>>,
    pub(super) combined: AtomicBool,
    /// Times in microseconds (`timeUnit=MICROSECOND`), fixed at connection.
    pub(crate) microseconds: bool,
    /// Set when its buffer overflowed: the connection closes itself.
    pub(crate) too_slow: Notify,
    /// Counted among the open connections while it lives.
    _open: tally::Open,
}

impl Connection {
    /// A connection whose buffer holds `buffer` frames, and that buffer's reading end.
    pub(crate) fn new(
        buffer: usize,
        combined: bool,
        microseconds: bool,
    ) -> (Arc<Self>, mpsc::Receiver<Arc<Frame>>) {
        let (frames, outgoing) = mpsc::channel(buffer);
        let connection = Arc::new(Self {
            frames,
            combined: AtomicBool::new(combined),
            microseconds,
            too_slow: Notify::new(),
            _open: tally::Open::new(),
        });
        (connection, outgoing)
    }
}

/// The time fields of each event type, which `timeUnit=MICROSECOND` scales.
fn time_fields(event_type: &str) -> &'static [&'static str] {
    match event_type {
        "trade" | "aggTrade" | "balanceUpdate" => &["E", "T"],
        "executionReport" => &["E", "T", "O", "W"],
        "outboundAccountPosition" => &["E", "u"],
        "avgPrice" => &["E", "T"],
        "24hrTicker" | "24hrMiniTicker" | "1hTicker" | "4hTicker" | "1dTicker" => &["E", "O", "C"],
        _ => &["E"],
    }
}

/// The time now in microseconds.
pub(crate) fn now_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// `data` with every time in microseconds instead of milliseconds; the
/// event time `E` (which is `event_us` in milliseconds) keeps its precision.
pub(crate) fn in_microseconds(data: &Value, event_us: u64) -> Value {
    let scale = |event: &mut Value| {
        let Some(fields) = event.as_object_mut() else {
            return;
        };
        let names = time_fields(fields.get("e").and_then(Value::as_str).unwrap_or(""));
        for name in names {
            if let Some(ms) = fields.get(*name).and_then(Value::as_u64) {
                let us = if *name == "E" {
                    event_us
                } else {
                    ms.saturating_mul(1000)
                };
                fields.insert((*name).into(), json!(us));
            }
        }
        if let Some(kline) = fields.get_mut("k").and_then(Value::as_object_mut) {
            for name in ["t", "T"] {
                if let Some(ms) = kline.get(name).and_then(Value::as_u64) {
                    kline.insert(name.into(), json!(ms.saturating_mul(1000)));
                }
            }
        }
    };
    let mut data = data.clone();
    match &mut data {
        Value::Array(events) => events.iter_mut().for_each(scale),
        event => scale(event),
    }
    data
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
    /// Where lists placed before the hub started are looked up.
    history: Option<History>,
    /// Stream name → subscribed connections by id.
    subscribers: Mutex<HashMap<String, HashMap<u64, Arc<Connection>>>>,
    pub(crate) next_connection: AtomicU64,
    /// Batches from the engine thread, taken by [`StreamHub::run`].
    batches: Mutex<Option<mpsc::UnboundedReceiver<Committed>>>,
    /// Books and balances as of the start, handed over by the engine thread.
    start: Mutex<Option<(Vec<Book>, UserState)>>,
    /// Active listen keys: key → (account, expiry ms).
    listen_keys: Mutex<HashMap<String, (AccountId, u64)>>,
}

/// A committed batch and when it became durable (µs): its events' time `E`.
type Committed = (u64, Vec<Arc<Outcome>>);

/// The hub's end on the engine thread: hands each batch over once, never blocks.
pub struct StreamSink {
    batches: mpsc::UnboundedSender<Committed>,
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
        let mut users = UserState::default();
        for (account, held) in &view.accounts {
            for (asset, (free, _)) in &held.balances {
                users.free.insert((*account, *asset), *free);
            }
        }
        *self
            .hub
            .start
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some((books, users));
    }

    fn committed(&mut self, outcomes: &[Arc<Outcome>]) {
        // The hub task gone (shutdown) is not the engine's concern.
        let _ = self.batches.send((now_us(), outcomes.to_vec()));
    }
}

impl StreamHub {
    /// A hub over the catalog's markets and the sink that feeds it (give it
    /// to the sequencer, then spawn [`StreamHub::run`]); `history` tells it
    /// of order lists placed before it started.
    pub fn new(catalog: Arc<Catalog>, history: Option<History>) -> (Arc<Self>, StreamSink) {
        let (batches, receiver) = mpsc::unbounded_channel();
        tally::register();
        let hub = Arc::new(Self {
            catalog,
            history,
            subscribers: Mutex::default(),
            next_connection: AtomicU64::new(1),
            batches: Mutex::new(Some(receiver)),
            start: Mutex::new(None),
            listen_keys: Mutex::default(),
        });
        (hub.clone(), StreamSink { batches, hub })
    }

    /// The subscribed streams whose kind starts with `prefix` (after the `@`).
    pub(crate) fn subscribed_kinds(&self, prefix: &str) -> Vec<String> {
        let subscribers = self
            .subscribers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        subscribers
            .iter()
            .filter(|(name, connections)| {
                !connections.is_empty()
                    && name
                        .split_once('@')
                        .is_some_and(|(_, kind)| kind.starts_with(prefix))
            })
            .map(|(name, _)| name.clone())
            .collect()
    }

    pub(crate) fn has_subscribers(&self, stream: &str) -> bool {
        self.subscribers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(stream)
            .is_some_and(|s| !s.is_empty())
    }

    /// Sends `data`, an event of time `event_us`, on `stream` to every
    /// subscriber; one whose buffer is full is told to close and leaves the stream.
    pub(crate) fn publish(&self, stream: &str, data: &Value, event_us: u64) {
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
        let frame = Frame::new(stream, data);
        let mut in_microseconds_frame = None;
        connections.retain(|_, connection| {
            let frame = if connection.microseconds {
                in_microseconds_frame
                    .get_or_insert_with(|| Frame::new(stream, &in_microseconds(data, event_us)))
                    .clone()
            } else {
                frame.clone()
            };
            match connection.frames.try_send(frame) {
                Ok(()) => true,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    connection.too_slow.notify_one();
                    metrics::counter!(tally::SLOW_CLOSED).increment(1);
                    false
                }
                Err(mpsc::error::TrySendError::Closed(_)) => false,
            }
        });
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
        let (mut books, mut users) = self
            .start
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .unwrap_or_else(|| {
                let books = self.catalog.markets().map(|_| Book::default()).collect();
                (books, UserState::default())
            });
        let mut tick = tokio::time::interval(FAST_TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut ticks = 0u64;
        loop {
            tokio::select! {
                batch = batches.recv() => match batch {
                    Some((committed_us, batch)) => {
                        for outcome in batch {
                            tally::count(&outcome);
                            self.outcome(&outcome, &mut books, committed_us);
                            self.user_events(&outcome, &mut users, committed_us);
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

    pub(crate) fn symbol(&self, market: MarketId) -> String {
        self.catalog.symbol(market).to_ascii_lowercase()
    }

    /// Publishes the user events of `outcome` to each account's user streams:
    /// `user:<account>` (the WebSocket API) and the account's listen keys.
    /// Events of accounts nobody follows are not built.
    fn user_events(&self, outcome: &Outcome, users: &mut UserState, event_us: u64) {
        // A command touches few accounts, each asked about for every order
        // and balance it changed: each is looked up once.
        let asked = std::cell::RefCell::new(smallvec::SmallVec::<[(AccountId, bool); 4]>::new());
        let wanted = |account| {
            if let Some(&(_, followed)) = asked.borrow().iter().find(|(a, _)| *a == account) {
                return followed;
            }
            let followed = self.followed(account);
            asked.borrow_mut().push((account, followed));
            followed
        };
        let now = event_us / 1000;
        let events = user_events(
            &self.catalog,
            self.history.as_ref(),
            outcome,
            users,
            now,
            &wanted,
        );
        for (account, event) in events {
            for stream in self.user_streams(account) {
                self.publish(&stream, &event, event_us);
            }
        }
    }

    /// Whether any of the account's user streams has a subscriber, asked of
    /// every account a command touches: no allocation for an account nobody
    /// follows through the WebSocket API and that holds no listen key.
    fn followed(&self, account: AccountId) -> bool {
        self.has_subscribers(&user_stream_name(account))
            || self
                .listen_keys_of(account)
                .iter()
                .any(|key| self.has_subscribers(key))
    }

    /// The account's user streams that have subscribers.
    fn user_streams(&self, account: AccountId) -> Vec<String> {
        let mut streams = vec![user_stream(account)];
        streams.extend(self.listen_keys_of(account));
        streams.retain(|stream| self.has_subscribers(stream));
        streams
    }

    /// The account's listen keys (copied, so that no lock is held while
    /// their subscribers are looked up).
    fn listen_keys_of(&self, account: AccountId) -> smallvec::SmallVec<[String; 1]> {
        self.listen_keys
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|(_, (owner, _))| *owner == account)
            .map(|(key, _)| key.clone())
            .collect()
    }

    /// The account's listen key, created or extended to `expires_ms`.
    pub(crate) fn listen_key(&self, account: AccountId, expires_ms: u64) -> String {
        let mut keys = self
            .listen_keys
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some((key, entry)) = keys.iter_mut().find(|(_, (owner, _))| *owner == account) {
            entry.1 = expires_ms;
            return key.clone();
        }
        let key = random_token();
        keys.insert(key.clone(), (account, expires_ms));
        key
    }

    /// Extends (`Some(expiry)`) or closes (`None`) the account's `key`;
    /// false when the account has no such key.
    pub(crate) fn keep_listen_key(
        &self,
        account: AccountId,
        key: &str,
        expires_ms: Option<u64>,
    ) -> bool {
        let mut keys = self
            .listen_keys
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match keys.get_mut(key) {
            Some(entry) if entry.0 == account => {
                match expires_ms {
                    Some(expires_ms) => entry.1 = expires_ms,
                    None => {
                        keys.remove(key);
                    }
                }
                true
            }
            _ => false,
        }
    }

    /// Ends listen keys past their expiry: each stream gets `listenKeyExpired`
    /// and loses its subscribers.
    pub(crate) fn expire_listen_keys(&self, now_us: u64) {
        let now = now_us / 1000;
        let expired: Vec<String> = {
            let mut keys = self
                .listen_keys
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let expired = keys
                .iter()
                .filter(|(_, (_, expiry))| *expiry <= now)
                .map(|(key, _)| key.clone())
                .collect();
            keys.retain(|_, (_, expiry)| *expiry > now);
            expired
        };
        for key in expired {
            self.publish(
                &key,
                &json!({ "e": "listenKeyExpired", "E": now, "listenKey": key }),
                now_us,
            );
            self.subscribers
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&key);
        }
    }

    fn outcome(&self, outcome: &Outcome, books: &mut [Book], event_us: u64) {
        let now = event_us / 1000;
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
                    event_us,
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
                    event_us,
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
                event_us,
            );
        }
    }

    /// Pushes diff and partial depth of speed `speed` (0: 100 ms, 1: 1000 ms).
    fn flush_depth(&self, books: &mut [Book], speed: usize) {
        let event_us = now_us();
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
                            "e": "depthUpdate", "E": event_us / 1000,
                            "s": self.catalog.symbol(market),
                            "U": first, "u": book.update_id,
                            "b": side(true), "a": side(false),
                        }),
                        event_us,
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
                        event_us,
                    );
                }
            }
        }
    }

    /// Whether `name` is a stream this hub serves (lower-case symbol, as Binance).
    pub(super) fn known_stream(&self, name: &str) -> bool {
        if ALL_MARKET_ARRAYS.contains(&name)
            || self
                .listen_keys
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .contains_key(name)
        {
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
        if let Some(kline) = kind.strip_prefix("kline_") {
            return kline_stream(kline).is_some();
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

    pub(crate) fn subscribe(&self, id: u64, connection: &Arc<Connection>, stream: &str) {
        self.subscribers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(stream.to_owned())
            .or_default()
            .insert(id, connection.clone());
    }

    pub(crate) fn unsubscribe(&self, id: u64, stream: &str) {
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

#[cfg(test)]
mod tests;
