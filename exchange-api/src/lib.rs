//! weiport's exchange: fixed-point amounts, the matching engine and ledger,
//! and the Binance Spot-compatible API around them.

pub mod amount;
pub mod error;
mod routes;

pub use amount::{Amount, AmountError};
pub use error::{BinanceError, BinanceFace};
pub use routes::router;
