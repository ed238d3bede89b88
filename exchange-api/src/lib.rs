//! weiport's exchange: fixed-point amounts, the matching engine and ledger,
//! and the Binance Spot-compatible API around them.

pub mod amount;
pub mod api;
pub mod catalog;
pub mod engine;
pub mod error;
pub mod history;
pub mod market;
#[cfg(test)]
mod oracle;
pub mod order;
mod routes;
pub mod sequencer;
pub mod view;

pub use amount::{Amount, AmountError};
pub use api::Exchange;
pub use catalog::{AssetId, Catalog, MarketId};
pub use error::{BinanceError, BinanceFace};
pub use market::{ExchangeConfig, Market, StpMode};
pub use routes::{admin_router, openapi, router};

/// Wall-clock time in ms since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
