//! Parsing of Etherscan request parameters, tolerant the way real clients need:
//! addresses in any letter case, decimal or `0x` block numbers; and the
//! request's parameters themselves, from the query string and a form body.

use std::borrow::Cow;

use alloy_primitives::Address;
use smallvec::SmallVec;
use weiport_access::params::{lenient_body_pairs, lenient_pairs};

use crate::error::QueryError;

/// Why an address parameter was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddressError {
    /// Not `0x` followed by 40 hex digits.
    #[error("Error! Invalid address format")]
    Format,
}

/// Parses `0x` + 40 hex digits in any letter case. Etherscan does not
/// enforce EIP-55 checksums, so neither does this: a client that sends a
/// wrongly cased address gets its balance there and must here too.
pub fn parse_address(text: &str) -> Result<Address, AddressError> {
    let hex = text
        .strip_prefix("0x")
        .or_else(|| text.strip_prefix("0X"))
        .ok_or(AddressError::Format)?;
    if hex.len() != 40 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(AddressError::Format);
    }
    hex.parse().map_err(|_| AddressError::Format)
}

/// The block a balance is asked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockTag {
    /// `latest` or `pending`: the newest indexed block.
    Latest,
    /// `earliest`: the first indexed block.
    Earliest,
    /// `safe`.
    Safe,
    /// `finalized`.
    Finalized,
    /// A block number, decimal or `0x` hex.
    Number(u64),
}

/// Parses a `tag` or `blockno` value; `None` when it is none of the accepted forms.
pub fn parse_block_tag(text: &str) -> Option<BlockTag> {
    Some(match text {
        "latest" | "pending" => BlockTag::Latest,
        "earliest" => BlockTag::Earliest,
        "safe" => BlockTag::Safe,
        "finalized" => BlockTag::Finalized,
        _ => match text.strip_prefix("0x") {
            Some(hex) if !hex.is_empty() && hex.len() <= 16 => {
                BlockTag::Number(u64::from_str_radix(hex, 16).ok()?)
            }
            Some(_) => return None,
            None if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) => {
                BlockTag::Number(text.parse().ok()?)
            }
            None => return None,
        },
    })
}

/// Request parameters, from the query string and a form body alike,
/// borrowed from the request where no decoding changed them.
pub(crate) struct Params<'a> {
    pairs: SmallVec<[(Cow<'a, str>, Cow<'a, str>); 8]>,
}

impl<'a> Params<'a> {
    /// The parameters of a request with this query string and body.
    pub(crate) fn new(query: &'a str, body: &'a [u8]) -> Self {
        let mut pairs: SmallVec<_> = lenient_pairs(query).collect();
        if !body.is_empty() {
            pairs.extend(lenient_body_pairs(body));
        }
        Self { pairs }
    }

    /// The first value of `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_ref())
    }
}

/// A decimal parameter, `default` when absent or empty.
pub(crate) fn number(params: &Params, name: &str, default: u64) -> Result<u64, QueryError> {
    match params.get(name) {
        None | Some("") => Ok(default),
        Some(text) => text
            .parse()
            .map_err(|_| QueryError::bad(format!("Error! Invalid {name}"))),
    }
}

/// A block tag parameter; an absent or empty `tag` is `latest`.
pub(crate) fn tag_param(params: &Params, name: &str) -> Result<BlockTag, QueryError> {
    match params.get(name) {
        None | Some("") if name == "tag" => Ok(BlockTag::Latest),
        None | Some("") => Err(QueryError::bad(format!("Error! Missing or invalid {name}"))),
        Some(text) => {
            parse_block_tag(text).ok_or_else(|| QueryError::bad(format!("Error! Invalid {name}")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHECKSUMMED: &str = "0xde0B295669a9FD93d5F28D9Ec85E40f4cb697BAe";

    #[test]
    fn accepts_every_letter_case() {
        let expected = parse_address(&CHECKSUMMED.to_ascii_lowercase()).unwrap();
        assert_eq!(parse_address(CHECKSUMMED).unwrap(), expected);
        assert_eq!(
            parse_address(&format!("0x{}", CHECKSUMMED[2..].to_ascii_uppercase())).unwrap(),
            expected
        );
    }

    #[test]
    fn refuses_bad_shapes_but_not_bad_checksums() {
        let wrong_case = CHECKSUMMED.replace("de0B", "de0b");
        assert_eq!(
            parse_address(&wrong_case),
            parse_address(CHECKSUMMED),
            "any letter case, as Etherscan"
        );
        for bad in [
            "",
            "0x",
            "de0b295669a9fd93d5f28d9ec85e40f4cb697bae",
            "0xde0b",
            "0xzz0b295669a9fd93d5f28d9ec85e40f4cb697bae",
            "0xde0b295669a9fd93d5f28d9ec85e40f4cb697bae00",
        ] {
            assert_eq!(parse_address(bad), Err(AddressError::Format), "{bad}");
        }
    }

    #[test]
    fn block_tags_in_every_form_clients_send() {
        assert_eq!(parse_block_tag("latest"), Some(BlockTag::Latest));
        assert_eq!(parse_block_tag("pending"), Some(BlockTag::Latest));
        assert_eq!(parse_block_tag("earliest"), Some(BlockTag::Earliest));
        assert_eq!(parse_block_tag("0x1b4"), Some(BlockTag::Number(436)));
        assert_eq!(parse_block_tag("436"), Some(BlockTag::Number(436)));
        assert_eq!(parse_block_tag("0"), Some(BlockTag::Number(0)));
        for bad in [
            "",
            "0x",
            "-1",
            "1.5",
            "0xg",
            "LATEST",
            "18446744073709551616",
            "0x10000000000000000",
        ] {
            assert_eq!(parse_block_tag(bad), None, "{bad}");
        }
    }
}
