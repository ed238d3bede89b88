//! weiport's Etherscan-compatible query API: request parsing, the
//! `status`/`message`/`result` envelope, and the `/api` router.

mod history;
mod logs;
pub mod params;
pub mod proxy;
mod router;
mod transfers;

pub use params::{AddressError, BlockTag, parse_address, parse_block_tag};
pub use proxy::{NodeProxy, ProxyFailure};
pub use router::{MAX_MULTI_ADDRESSES, QueryConfig, QueryError, router};
