//! weiport's CoinGecko-compatible price API: `/api/v3/simple/price` and the
//! coin list, markets and charts, priced from the exchange's own markets
//! (last trades, rolling statistics, candles). It reads market data only.
//!
//! ```text
//!   request ─▶ router (access guard, CoinGecko's keys and refusals)
//!                │
//!                ├─ simple   /simple/price, /simple/supported_vs_currencies
//!                ├─ listing  /coins/list, /coins/markets
//!                └─ chart    /coins/{id}/market_chart
//!                      │
//!                      └─▶ quote: a coin's price and 24 h figures in a
//!                          vs-currency, from the exchange's `Markets`
//! ```

mod chart;
mod coins;
mod decimal;
mod listing;
mod params;
mod quote;
mod reply;
mod router;
mod simple;
mod state;

pub use coins::{BadCoinConfig, Coin, CoinConfig, CoinTable};
pub use router::router;
pub use state::Markets;
