//! weiport's access control, shared by the query API and the exchange: API
//! keys, request signatures, permissions, IP allow-lists and rate limits.

pub mod signature;

pub use signature::{SignatureError, SignedPayload, sign_hmac_sha256};
