//! Genesis allocations: balances that exist before any block and that no
//! standard JSON-RPC call can enumerate.

use std::collections::BTreeMap;
use std::path::Path;

use alloy_primitives::{Address, U256};
use serde::Deserialize;

/// Why a genesis file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum GenesisError {
    /// The file could not be read.
    #[error("cannot read genesis file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a geth genesis document.
    #[error("genesis file {path} is not valid: {message}")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
}

#[derive(Deserialize)]
struct GenesisDocument {
    alloc: BTreeMap<String, Allocation>,
}

#[derive(Deserialize)]
struct Allocation {
    #[serde(default)]
    balance: Option<String>,
}

/// Reads the `alloc` section of a geth-format genesis file: address → Wei.
/// Addresses may omit `0x`; balances may be decimal or `0x` hex.
pub fn read_genesis_alloc(path: &Path) -> Result<BTreeMap<Address, U256>, GenesisError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| GenesisError::Read {
        path: shown.clone(),
        source,
    })?;
    parse_genesis_alloc(&text).map_err(|message| GenesisError::Invalid {
        path: shown,
        message,
    })
}

fn parse_genesis_alloc(text: &str) -> Result<BTreeMap<Address, U256>, String> {
    let document: GenesisDocument = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let mut balances = BTreeMap::new();
    for (key, allocation) in document.alloc {
        let hex = key.strip_prefix("0x").unwrap_or(&key);
        let address: Address = hex
            .parse()
            .map_err(|_| format!("bad address {key:?} in alloc"))?;
        let balance = match allocation.balance.as_deref() {
            None | Some("") => U256::ZERO,
            Some(text) => text
                .parse::<U256>()
                .map_err(|_| format!("bad balance {text:?} for {key}"))?,
        };
        balances.insert(address, balance);
    }
    Ok(balances)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_hex_and_decimal_balances_with_or_without_0x() {
        let text = r#"{
            "config": { "chainId": 1337 },
            "alloc": {
                "0x0000000000000000000000000000000000000001": { "balance": "0x10" },
                "0000000000000000000000000000000000000002": { "balance": "1000000000000000000000" },
                "0x0000000000000000000000000000000000000003": { "code": "0x60", "storage": {} }
            }
        }"#;
        let alloc = parse_genesis_alloc(text).unwrap();
        assert_eq!(alloc[&Address::with_last_byte(1)], U256::from(16));
        assert_eq!(
            alloc[&Address::with_last_byte(2)],
            U256::from(10u128.pow(21))
        );
        assert_eq!(alloc[&Address::with_last_byte(3)], U256::ZERO);
    }

    #[test]
    fn refuses_bad_documents() {
        assert!(parse_genesis_alloc("{}").is_err());
        assert!(parse_genesis_alloc(r#"{"alloc":{"0xzz":{"balance":"1"}}}"#).is_err());
        assert!(
            parse_genesis_alloc(
                r#"{"alloc":{"0x0000000000000000000000000000000000000001":{"balance":"-1"}}}"#
            )
            .is_err()
        );
    }
}
