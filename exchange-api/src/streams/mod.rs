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

mod connection;
mod hub;
mod tally;
mod upgrade;
mod user;

pub(crate) use connection::connection as serve_market_streams;
pub(crate) use connection::{BUFFER, PING_EVERY, PONG_WITHIN};
pub(crate) use hub::{ALL_MARKET_ARRAYS, kline_stream, now_us};
pub(crate) use hub::{Connection, Frame, in_microseconds as event_in_microseconds, user_stream};
pub use hub::{StreamHub, StreamSink};
pub(crate) use upgrade::{Upgrade, in_microseconds, query_values, upgrade_or_refuse};
