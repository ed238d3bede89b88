//! What `sandbox.json` holds, and the screen shows: where everything runs,
//! and the accounts and keys made for it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use weiport_access::Permission;
use weiport_exchange::Amount;

use crate::error::SandboxError;

/// What `sandbox.json` holds, and the screen shows.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Description {
    pub(crate) rest_url: String,
    pub(crate) ws_url: String,
    pub(crate) admin_url: String,
    pub(crate) admin_token_file: PathBuf,
    pub(crate) node_url: String,
    /// The anvil started here, if one was.
    pub(crate) node_pid: Option<u32>,
    pub(crate) data_dir: PathBuf,
    /// Every chain followed (the first is `node_url`'s).
    #[serde(default)]
    pub(crate) chains: Vec<ChainNode>,
    pub(crate) accounts: Vec<TestAccount>,
    pub(crate) read_key: KeyPair,
    pub(crate) market_makers: Vec<MakerAccounts>,
}

/// One chain the sandbox follows: its id, its network on the exchange and
/// its node.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChainNode {
    /// Chain id.
    pub chain_id: u64,
    /// Its name.
    pub name: String,
    /// The exchange's network name for it.
    pub network: String,
    /// Its node's JSON-RPC URL.
    pub node_url: String,
    /// The anvil started here, if one was.
    pub node_pid: Option<u32>,
}

/// A test account, its trading key and what it was funded with.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct TestAccount {
    pub(crate) account: u64,
    pub(crate) api_key: String,
    pub(crate) secret: String,
    pub(crate) permissions: Vec<Permission>,
    pub(crate) balances: BTreeMap<String, Amount>,
}

/// An HMAC key and the account it belongs to.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct KeyPair {
    pub(crate) account: u64,
    pub(crate) api_key: String,
    pub(crate) secret: String,
}

/// One market's built-in accounts, and a read-only key of the maker's to
/// watch it with.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct MakerAccounts {
    pub(crate) symbol: String,
    pub(crate) account: u64,
    pub(crate) flow_account: u64,
    pub(crate) read_key: KeyPair,
    pub(crate) min_inventory: Amount,
    pub(crate) max_inventory: Amount,
}

impl Description {
    /// The description at `path`, if there is one that parses.
    pub(crate) fn read(path: &Path) -> Option<Self> {
        std::fs::read(path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
    }

    /// Writes it to `path`, readable by its owner only (it holds secrets).
    pub(crate) fn write(&self, path: &Path) -> Result<(), SandboxError> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let bytes = serde_json::to_vec_pretty(self)?;
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(path)
            .and_then(|mut file| file.write_all(&bytes))
            .map_err(|source| SandboxError::Write {
                path: path.to_owned(),
                source,
            })
    }
}
