//! weiport's Etherscan-compatible query API: request parsing, the
//! `status`/`message`/`result` envelope, and the `/api` router.

#![warn(unreachable_pub)]

mod balances;
mod blocks;
mod envelope;
mod error;
mod history;
mod logs;
mod node;
pub mod params;
pub mod proxy;
mod range;
mod router;
mod stats;
mod transfers;

pub use balances::MAX_MULTI_ADDRESSES;
pub use error::QueryError;
pub use params::{AddressError, BlockTag, parse_address, parse_block_tag};
pub use proxy::{NodeProxy, ProxyFailure};
pub use router::{ChainIndex, QueryConfig, router};
pub use stats::CoinPrices;
