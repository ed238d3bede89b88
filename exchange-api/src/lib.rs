//! weiport's Binance Spot-compatible face over the exchange domain
//! (`weiport-exchange`): the route table and OpenAPI document, extractors
//! and parameters, the one mapping of domain refusals to Binance's codes,
//! and the handlers.
//!
//! ```text
//!  HTTP ──▶ access guard ──▶ extractor (Params: -1104, -1101…) ──▶ handler
//!                                                         │
//!        Binance JSON ◀── wire shapes ◀── Outcome / View / History
//! ```

mod account;
mod admin;
pub mod api;
mod calendar;
mod capital;
pub mod error;
mod extract;
mod lists;
mod market_data;
mod modify;
mod params;
mod routes;
mod sapi;
pub mod streams;
mod ticker;
mod trading;
mod wire;

pub use admin::admin_router;
pub use api::Exchange;
pub use error::{BinanceError, BinanceFace};
pub use routes::{openapi, router};
pub use weiport_exchange::now_ms;
