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

#![warn(unreachable_pub)]

mod account;
mod admin;
mod calendar;
mod capital;
pub mod chain_wallet;
pub mod error;
mod exchange;
mod extract;
mod internal;
mod lists;
mod market_data;
mod modify;
mod order_params;
mod params;
pub mod primary_link;
pub mod reserves;
mod reserves_api;
mod routes;
mod sapi;
mod stream_routes;
pub mod streams;
mod ticker;
mod ticker_push;
mod trading;
mod wire;
mod ws_api;

pub use admin::admin_router;
pub use chain_wallet::{ChainWallet, CoinSettings, Deposit, WalletFailure};
pub use error::{BinanceError, BinanceFace};
pub use exchange::Exchange;
pub use internal::internal_router;
pub use primary_link::{Forwarded, PrimaryLink};
pub use reserves::ReserveKeeper;
pub use reserves_api::take_snapshots;
pub use routes::{openapi, router};
pub use ticker_push::push_tickers;
pub use weiport_exchange::now_ms;

/// The answer of every exchange route on a process that does not serve the
/// exchange (`exchange.enabled = false`), as a middleware: another process
/// of the cluster does.
pub async fn served_elsewhere(
    _request: axum::extract::Request,
    _next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let body = serde_json::json!({
        "code": -1000,
        "msg": "This process does not serve the exchange (exchange.enabled = false); send exchange requests to the process that does.",
    });
    (
        axum::http::StatusCode::SERVICE_UNAVAILABLE,
        axum::Json(body),
    )
        .into_response()
}
