//! weiport's exchange domain: fixed-point amounts, markets and their filters,
//! the matching engine and ledger (a deterministic state machine, no I/O),
//! the command log with its sequencer, and the projections it feeds.
//!
//! ```text
//!  command ──▶ Sequencer ──▶ Engine::apply ──▶ events (Placed, Order, Execution, Trade, Level, Balance)
//!                 │ (engine thread)        └──▶ Recorder ──▶ history Changes
//!                 ├──▶ command log + history rows: one synced RocksDB batch per group commit
//!                 └──▶ Sink::committed, once durable, before callers are answered:
//!                        View (depth snapshots, balances, open orders, recent candles)
//!                        the published feed, streams, deposits …
//!  History ◀── storage: orders, trades, aggregate trades, candles
//! ```
//!
//! It knows no wire format: the Binance face (`weiport-exchange-api`) maps
//! its types and refusals to Binance's.

#![warn(unreachable_pub)]

pub mod amount;
pub mod catalog;
pub mod engine;
pub mod history;
pub mod market;
#[cfg(test)]
mod oracle;
pub mod order;
pub mod sequencer;
pub mod view;

pub use amount::{Amount, AmountError};
pub use catalog::{AssetId, Catalog, MarketId};
pub use market::{Durability, ExchangeConfig, FilterFailure, Market, StpMode};

/// Wall-clock time in ms since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
