//! What the sandbox is given: its settings, and the server its caller
//! started on the sandbox's data dir and node.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use alloy_primitives::Address;
use weiport_access::KeyStore;
use weiport_exchange::{Amount, Catalog};
use weiport_indexer::NodeOptions;

use crate::market_maker::MakerSettings;

/// What the sandbox needs of the command line and the configuration.
#[derive(Debug, Clone)]
pub struct SandboxSettings {
    /// Data directory kept across runs; none for a throw-away one.
    pub data_dir: Option<PathBuf>,
    /// Wipe `data_dir` first (refused unless a sandbox made it).
    pub reset: bool,
    /// JSON-RPC URL of a node to use; none to start anvil here.
    pub node: Option<String>,
    /// How the chain traffic's client talks to the node.
    pub node_options: NodeOptions,
    /// The exchange's markets and assets.
    pub catalog: Arc<Catalog>,
    /// Test accounts to make on a new data dir (at least one is made).
    pub accounts: u32,
    /// Fictitious balances of each test account, by asset.
    pub balances: BTreeMap<String, Amount>,
    /// Price each market's maker starts from; markets not named get no maker.
    pub reference_prices: BTreeMap<String, Amount>,
    /// The market maker and its taker flow.
    pub market_maker: MakerSettings,
    /// Whether the market makers run (their accounts are made either way).
    pub run_market_makers: bool,
    /// Time between two transfers on the dev chain; none for no transfers.
    pub chain_transfer: Option<Duration>,
    /// The chain id of a second anvil started beside the first (faster
    /// blocks, like an L2); none for one chain. Only when anvil is started here.
    pub second_chain_id: Option<u64>,
    /// The first chain's network name on the exchange.
    pub first_network: String,
}

/// The server the sandbox provisions and trades on, started by the caller.
pub struct Server<'a, V> {
    /// The public listener's address.
    pub rest: SocketAddr,
    /// The admin listener's address.
    pub admin: SocketAddr,
    /// Where the admin API's bearer token is kept.
    pub admin_token_file: PathBuf,
    /// The server's accounts and API keys.
    pub keys: &'a KeyStore,
    /// The engine, as the sandbox's commands reach it.
    pub venue: Arc<V>,
    /// Accounts another signer owns the nonces of (the hot wallet): the
    /// chain traffic never sends from them.
    pub reserved: Vec<Address>,
}
