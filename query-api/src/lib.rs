//! weiport's Etherscan-compatible query API: request parsing, the
//! `status`/`message`/`result` envelope, and the `/api` router.

pub mod params;

pub use params::{AddressError, BlockTag, parse_address, parse_block_tag};
