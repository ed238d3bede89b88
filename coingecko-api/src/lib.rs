//! weiport's CoinGecko-compatible price API: `/api/v3/simple/price` and the
//! coin list, markets and charts, priced from the exchange's own markets
//! (last trades, rolling statistics, candles). It reads market data only.
//!
//! ```text
//!   request ─▶ router (access guard, CoinGecko's keys and refusals)
//!                │
//!                ├─ simple   /simple/price (ids, symbols), /simple/token_price/{platform},
//!                │           /simple/supported_vs_currencies
//!                ├─ listing  /coins/list, /coins/markets
//!                ├─ detail   /coins/{id}, /coins/{id}/tickers, /coins/{id}/history,
//!                │           /coins/{platform}/contract/{address}
//!                ├─ chart    /coins/{id}/market_chart(/range), /coins/{id}/ohlc
//!                └─ venue    /exchanges(/{id}(/tickers)), /search, /global
//!                      │
//!                      └─▶ quote: a coin's price and 24 h figures in a
//!                          vs-currency, from the exchange's `Markets`
//! ```

#![warn(unreachable_pub)]

mod chart;
mod coins;
mod decimal;
mod detail;
mod listing;
mod params;
mod quote;
mod reply;
mod router;
mod simple;
mod state;
mod venue;

pub use coins::{BadCoinConfig, Coin, CoinConfig, CoinTable};
pub use router::router;
pub use state::Markets;
