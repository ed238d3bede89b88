//! weiport's exchange: fixed-point amounts, the matching engine and ledger,
//! and the Binance Spot-compatible API around them.

pub mod amount;

pub use amount::{Amount, AmountError};
