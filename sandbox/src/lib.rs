//! Activity for weiport's sandbox, so that a newcomer's exchange and chain
//! move on their own: a market maker with a taker flow, driven through the
//! exchange's sequencer like any other client's commands, and a trickle of
//! transfers on a dev node's unlocked accounts.
//!
//! ```text
//! MarketMaker::requote ─┐                      ChainTraffic::send
//! TakerFlow::next_order ┴─ run ─► Sequencer     └─ eth_sendTransaction ─► node
//! ```

pub mod chain;
pub mod market_maker;

pub use chain::ChainTraffic;
pub use market_maker::{MakerSettings, MarketMaker, TakerFlow};
