//! weiport's sandbox: a dev node (anvil, started here unless one is given),
//! test accounts with keys and fictitious funds on the caller's server, one
//! screen and `<data-dir>/sandbox.json` that tell what runs where, and
//! activity so that a newcomer's exchange and chain move on their own: a
//! market maker with a taker flow, driven through the exchange's sequencer
//! like any other client's commands, and a trickle of transfers on a dev
//! node's unlocked accounts.
//!
//! ```text
//! Sandbox::prepare ─► data dir, names checked, anvil
//!        (the caller starts its server on them)
//! Sandbox::start ───► accounts and keys ─► sandbox.json, screen
//!                     MarketMaker::requote ─┐                      ChainTraffic::send
//!                     TakerFlow::next_order ┴─ run ─► Sequencer     └─ eth_sendTransaction ─► node
//! Running::stop_activity, then (the caller stops its server) Running::stop
//! ```

#![warn(unreachable_pub)]

mod anvil;
pub mod chain;
mod data_dir;
pub mod description;
mod error;
mod input;
pub mod market_maker;
mod provision;
mod screen;
mod session;

pub use chain::ChainTraffic;
pub use description::ChainNode;
pub use error::SandboxError;
pub use input::{SandboxSettings, Server};
pub use market_maker::{MakerSettings, MarketMaker, TakerFlow};
pub use session::{FIRST_CHAIN_ID, Running, SECOND_CHAIN, Sandbox};

/// The file in the data dir that describes a running sandbox (and marks a
/// directory as one a sandbox made).
const DESCRIPTION_FILE: &str = "sandbox.json";
