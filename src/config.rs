//! Configuration: the embedded defaults, an optional file, then `WEIPORT_*`
//! environment variables, merged key by key and checked into typed values.

mod chains;
mod validate;

pub use chains::{Chain, ChainSection};

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The embedded default configuration, every key commented.
pub const DEFAULT_TOML: &str = include_str!("../config/default.toml");

const ENV_PREFIX: &str = "WEIPORT_";

/// Tables keyed by names the user chooses; a file replaces each whole.
const USER_TABLES: &[&str] = &[
    "access.query_tiers",
    "coingecko.ids",
    "coingecko.vs_currencies",
    "coingecko.supply",
    "coingecko.contracts",
    "sandbox.balances",
    "sandbox.reference_prices",
];

/// Environment variables with the prefix that are not configuration keys.
const ENV_NOT_CONFIG: &[&str] = &[
    "WEIPORT_CONFIG",
    "WEIPORT_MASTER_KEY",
    "WEIPORT_ANVIL",
    "WEIPORT_PYTHON",
    "WEIPORT_NATS_SERVER",
];

/// A configuration that could not be loaded; the message names the key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid TOML.
    #[error("config file {path} is not valid TOML: {message}")]
    Syntax {
        /// The file.
        path: String,
        /// The parser's message.
        message: String,
    },
    /// A key has a value of the wrong type or out of range.
    #[error("invalid configuration value for `{key}`: {message}")]
    Value {
        /// Dotted path of the key.
        key: String,
        /// What is wrong.
        message: String,
    },
    /// A key that does not exist (probably a typo).
    #[error("unknown configuration key `{key}` (from {source_name})")]
    UnknownKey {
        /// Dotted path of the key.
        key: String,
        /// Where it came from.
        source_name: String,
    },
}

/// The whole configuration.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Database directory.
    pub data_dir: PathBuf,
    /// Public HTTP listener.
    pub server: ServerConfig,
    /// Admin listener.
    pub admin: AdminConfig,
    /// Keys and rate limits.
    pub access: AccessConfig,
    /// The Etherscan-compatible API.
    pub query: QuerySection,
    /// Markets of the exchange.
    pub exchange: weiport_exchange::ExchangeConfig,
    /// The CoinGecko-compatible price face: ids, vs-currencies, supplies.
    #[serde(default)]
    pub coingecko: weiport_coingecko_api::CoinConfig,
    /// What `weiport sandbox` makes and runs.
    pub sandbox: SandboxConfig,
    /// The Ethereum node.
    pub node: NodeConfig,
    /// The balance indexer.
    pub indexer: IndexerSection,
    /// The on-chain wallet: deposits, sweeps, withdrawals.
    pub wallet: WalletSection,
    /// Proof of reserves.
    pub reserves: ReservesSection,
    /// RocksDB tuning.
    pub storage: StorageConfig,
    /// Logging.
    pub log: LogConfig,
    /// Other processes sharing keys, limits and bans.
    pub cluster: ClusterSection,
    /// Several chains, each with its node; empty: the one `[node]` names.
    #[serde(default)]
    pub chains: Vec<ChainSection>,
}

/// `[reserves]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReservesSection {
    /// Whether snapshots are taken and published.
    pub enabled: bool,
    /// Seconds between snapshots; 0: not on time.
    pub every_secs: u64,
    /// Blocks of the first chain between snapshots; 0: not on blocks.
    pub every_blocks: u64,
    /// Snapshots kept.
    pub keep: usize,
}

/// `[cluster]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterSection {
    /// The shared Redis; empty: a process alone.
    pub redis_url: String,
    /// This process's name; empty: host name and public port.
    pub node_name: String,
    /// Longest wait on Redis, in milliseconds.
    pub timeout_ms: u64,
    /// Milliseconds between version checks and heartbeats.
    pub poll_ms: u64,
    /// The JetStream servers of the exchange's journal.
    pub nats_urls: Vec<String>,
    /// How long the primary's lease lasts unless renewed, in milliseconds.
    pub lease_ms: u64,
    /// The URL other processes reach this one's public listener at; empty:
    /// `http://` and the listener's address.
    pub advertise_url: String,
}

impl ClusterSection {
    /// The access layer's cluster settings, if a Redis is configured.
    pub fn config(&self, listen: SocketAddr) -> Option<weiport_access::cluster::ClusterConfig> {
        if self.redis_url.is_empty() {
            return None;
        }
        let node = if self.node_name.is_empty() {
            let host = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
            format!("{}:{}", host.trim(), listen.port())
        } else {
            self.node_name.clone()
        };
        Some(weiport_access::cluster::ClusterConfig {
            redis_url: self.redis_url.clone(),
            node,
            timeout: Duration::from_millis(self.timeout_ms.max(1)),
            poll: Duration::from_millis(self.poll_ms.max(10)),
        })
    }
}

/// `[server]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// Address of the public listener.
    pub listen: SocketAddr,
    /// Seconds given to in-flight requests on shutdown.
    pub shutdown_grace_secs: u64,
    /// Largest request body in bytes.
    pub max_body_bytes: usize,
    /// Seconds a client has to send a request's head once it started it.
    pub header_read_timeout_secs: u64,
    /// Seconds a client has to send a request's body.
    pub body_read_timeout_secs: u64,
    /// Seconds an idle keep-alive connection stays open.
    pub keep_alive_idle_secs: u64,
    /// Open connections on one listener.
    pub max_connections: usize,
    /// Open connections from one client address (IPv6: its network).
    pub max_connections_per_ip: usize,
}

/// `[sandbox]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxConfig {
    /// Test accounts made on a new data dir.
    pub accounts: u32,
    /// Fictitious balances of each test account, by asset.
    pub balances: std::collections::BTreeMap<String, weiport_exchange::Amount>,
    /// Price each market's maker starts from; markets not named get no maker.
    pub reference_prices: std::collections::BTreeMap<String, weiport_exchange::Amount>,
    /// Milliseconds between two transfers on the dev chain; 0 for none.
    pub chain_transfer_ms: u64,
    /// Chain id of the second anvil (faster blocks, like an L2) started
    /// beside the first; 0 for one chain.
    pub second_chain_id: u64,
    /// The market maker and its taker flow.
    pub market_maker: weiport_sandbox::MakerSettings,
}

/// `[wallet]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WalletSection {
    /// Whether the wallet runs (it needs the indexer).
    pub enabled: bool,
    /// The hot wallet's private key (hex); empty for the dev default.
    pub hot_wallet_key: String,
    /// The exchange asset that is the chain's coin.
    pub coin: String,
    /// The network's name.
    pub network: String,
    /// Whether deposits are credited.
    pub deposit_enable: bool,
    /// Whether withdrawals are taken.
    pub withdraw_enable: bool,
    /// Fee per withdrawal.
    pub withdraw_fee: weiport_exchange::Amount,
    /// Smallest withdrawal.
    pub withdraw_min: weiport_exchange::Amount,
    /// Largest withdrawal.
    pub withdraw_max: weiport_exchange::Amount,
    /// Deposit addresses holding this much are swept.
    pub sweep_threshold: weiport_exchange::Amount,
    /// Gas limit of a withdrawal to an address with code.
    pub contract_gas_limit: u64,
    /// Seconds before a stuck withdrawal transaction is replaced.
    pub replace_after_secs: u64,
    /// Milliseconds between passes.
    pub poll_ms: u64,
}

/// `[admin]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AdminConfig {
    /// Listener address.
    pub listen: SocketAddr,
    /// Bearer token; empty for a generated one.
    pub token: String,
    /// Whether a listen address beyond loopback is allowed.
    pub allow_remote: bool,
}

/// `[access]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AccessConfig {
    /// Trusted proxies.
    pub trusted_proxies: Vec<String>,
    /// Weight per IP per minute.
    pub ip_weight_per_minute: u32,
    /// Weight per key per minute.
    pub key_weight_per_minute: u32,
    /// Orders per account per 10 s.
    pub orders_per_10s: u32,
    /// Orders per account per day.
    pub orders_per_day: u32,
    /// 429s before a ban.
    pub ban_after_rejections: u32,
    /// First ban length.
    pub ban_initial_secs: u64,
    /// Longest ban.
    pub ban_max_secs: u64,
    /// Invalid keys tolerated per 30 s.
    pub invalid_keys_per_30s: u32,
    /// Block after too many invalid keys.
    pub invalid_key_block_secs: u64,
    /// Tier of new keys.
    pub default_tier: String,
    /// Calls per second by tier.
    pub query_tiers: std::collections::BTreeMap<String, u32>,
    /// Prefix length by which IPv6 clients are grouped.
    pub ipv6_prefix: u8,
}

impl AccessConfig {
    /// The limiter's configuration.
    pub fn limits(&self) -> weiport_access::LimitsConfig {
        weiport_access::LimitsConfig {
            ip_weight_per_minute: self.ip_weight_per_minute,
            key_weight_per_minute: self.key_weight_per_minute,
            orders_per_10s: self.orders_per_10s,
            orders_per_day: self.orders_per_day,
            query_tiers: self.query_tiers.clone().into_iter().collect(),
            ban_after_rejections: self.ban_after_rejections,
            ban_initial: Duration::from_secs(self.ban_initial_secs),
            ban_max: Duration::from_secs(self.ban_max_secs),
            invalid_keys_per_30s: self.invalid_keys_per_30s,
            invalid_key_block: Duration::from_secs(self.invalid_key_block_secs),
            ipv6_prefix: self.ipv6_prefix,
        }
    }

    /// The trusted proxies, parsed (validated at load).
    pub fn trusted_proxies(&self) -> Vec<weiport_access::IpRule> {
        self.trusted_proxies
            .iter()
            .filter_map(|p| p.parse().ok())
            .collect()
    }
}

/// `[query]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct QuerySection {
    /// HTTP 200 for every error.
    pub http_200_errors: bool,
    /// Final proxy answers kept in memory.
    pub proxy_cache_entries: usize,
    /// Depth below the indexed head at which proxy answers are final.
    pub proxy_final_depth: u64,
}

/// `[node]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    /// JSON-RPC URL.
    pub url: String,
    /// Per-request deadline in milliseconds.
    pub request_timeout_ms: u64,
    /// Retries of transient failures.
    pub max_retries: u32,
    /// First retry delay in milliseconds.
    pub initial_backoff_ms: u64,
    /// Largest retry delay in milliseconds.
    pub max_backoff_ms: u64,
}

impl NodeConfig {
    /// The node client's options.
    pub fn options(&self) -> weiport_indexer::NodeOptions {
        weiport_indexer::NodeOptions {
            request_timeout: Duration::from_millis(self.request_timeout_ms),
            max_retries: self.max_retries,
            initial_backoff: Duration::from_millis(self.initial_backoff_ms),
            max_backoff: Duration::from_millis(self.max_backoff_ms),
        }
    }
}

/// `[indexer]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct IndexerSection {
    /// Run the indexer inside `serve`.
    pub enabled: bool,
    /// First block indexed.
    pub start_block: u64,
    /// Genesis file; empty for none.
    pub genesis_file: String,
    /// Balance source or "auto".
    pub balance_source: BalanceSourceChoice,
    /// Blocks fetched at once.
    pub concurrency: usize,
    /// Blocks per batch.
    pub batch_blocks: usize,
    /// Head polling interval in milliseconds.
    pub poll_interval_ms: u64,
    /// Deepest reorganisation undone.
    pub max_reorg_depth: u64,
    /// Largest lag still reported ready.
    pub ready_max_lag: u64,
    /// Index each address's transactions (`txlist`).
    pub transactions: bool,
    /// Index internal transfers from call traces (`txlistinternal`).
    pub internal_transactions: bool,
    /// Index ERC-20 transfers and holders' balances (`tokentx`,
    /// `tokenbalance`, `addresstokenbalance`).
    pub tokens: bool,
}

/// `indexer.balance_source`.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum BalanceSourceChoice {
    /// Probe the node.
    Auto,
    /// prestateTracer diff mode.
    Prestate,
    /// trace_replayBlockTransactions stateDiff.
    Statediff,
    /// debug_traceTransaction struct logs, value-moving addresses re-read.
    Structlogs,
    /// Touched addresses re-read.
    Touched,
}

impl IndexerSection {
    /// The indexer's configuration; `until` comes from the command line.
    pub fn config(&self, until: Option<u64>) -> weiport_indexer::IndexerConfig {
        use weiport_indexer::BalanceSource;
        weiport_indexer::IndexerConfig {
            start_block: self.start_block,
            genesis_file: (!self.genesis_file.is_empty())
                .then(|| PathBuf::from(&self.genesis_file)),
            balance_source: match self.balance_source {
                BalanceSourceChoice::Auto => None,
                BalanceSourceChoice::Prestate => Some(BalanceSource::Prestate),
                BalanceSourceChoice::Statediff => Some(BalanceSource::StateDiff),
                BalanceSourceChoice::Structlogs => Some(BalanceSource::StructLogs),
                BalanceSourceChoice::Touched => Some(BalanceSource::Touched),
            },
            concurrency: self.concurrency,
            batch_blocks: self.batch_blocks,
            poll_interval: Duration::from_millis(self.poll_interval_ms),
            max_reorg_depth: self.max_reorg_depth,
            until,
            transactions: self.transactions,
            internal_transactions: self.internal_transactions,
            tokens: self.tokens,
            chain_id: None,
            label: "default".to_owned(),
        }
    }
}

/// `[storage]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StorageConfig {
    /// Block cache size in MiB.
    pub block_cache_mb: usize,
    /// Background jobs.
    pub background_jobs: i32,
    /// Memtable size per column family in MiB.
    pub write_buffer_mb: usize,
    /// All memtables together, in MiB.
    pub memtable_budget_mb: usize,
}

impl StorageConfig {
    /// The store's options.
    pub fn options(&self) -> weiport_storage::StoreOptions {
        weiport_storage::StoreOptions {
            block_cache_bytes: self.block_cache_mb << 20,
            background_jobs: self.background_jobs,
            write_buffer_bytes: self.write_buffer_mb << 20,
            memtable_budget_bytes: self.memtable_budget_mb << 20,
            further_chains: Vec::new(),
        }
    }
}

/// `[log]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LogConfig {
    /// EnvFilter directives.
    pub level: String,
    /// Output format.
    pub format: LogFormat,
}

/// How log lines look.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

impl WalletSection {
    /// The wallet's settings on `chain` over the exchange's `catalog`.
    pub fn config(
        &self,
        catalog: &weiport_exchange::Catalog,
        chain: &Chain,
    ) -> Option<weiport_wallet::WalletConfig> {
        Some(weiport_wallet::WalletConfig {
            ledger_network: chain.ledger_network,
            chain_id: chain.id,
            chain_name: chain.name.clone(),
            confirmations: chain.confirmations,
            asset: catalog.asset_id(&chain.coin)?,
            coin: chain.coin.clone(),
            network: chain.network.clone(),
            deposit_enable: self.deposit_enable,
            withdraw_enable: self.withdraw_enable,
            withdraw_fee: chain.withdraw_fee,
            withdraw_min: chain.withdraw_min,
            withdraw_max: chain.withdraw_max,
            sweep_threshold: alloy_primitives::U256::from(self.sweep_threshold.units())
                * alloy_primitives::U256::from(weiport_wallet::WEI_PER_UNIT),
            contract_gas_limit: self.contract_gas_limit,
            replace_after: std::time::Duration::from_secs(self.replace_after_secs),
            poll: std::time::Duration::from_millis(self.poll_ms),
        })
    }
}

impl Config {
    /// Loads defaults, then `file`, then the given environment variables.
    pub fn load(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, ConfigError> {
        let mut merged: toml::Table =
            DEFAULT_TOML
                .parse()
                .map_err(|e: toml::de::Error| ConfigError::Syntax {
                    path: "(embedded defaults)".into(),
                    message: e.message().to_owned(),
                })?;
        let defaults = merged.clone();
        if let Some(path) = file {
            let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                path: path.to_owned(),
                source,
            })?;
            let overlay: toml::Table =
                text.parse()
                    .map_err(|e: toml::de::Error| ConfigError::Syntax {
                        path: path.display().to_string(),
                        message: e.message().trim().to_owned(),
                    })?;
            merge(&mut merged, overlay, "", &path.display().to_string())?;
        }
        for (name, raw) in env {
            let Some(rest) = name.strip_prefix(ENV_PREFIX) else {
                continue;
            };
            if ENV_NOT_CONFIG.contains(&name.as_str()) || rest.is_empty() {
                continue;
            }
            let path: Vec<String> = rest.split("__").map(str::to_ascii_lowercase).collect();
            let key = path.join(".");
            // A table of the user's own names is given whole, as inline TOML.
            let whole_table = USER_TABLES.contains(&key.as_str());
            let Some(default) = lookup(&defaults, &path, whole_table) else {
                return Err(ConfigError::UnknownKey {
                    key,
                    source_name: name,
                });
            };
            let value = env_value(default, &raw).ok_or_else(|| ConfigError::Value {
                key: key.clone(),
                message: format!("{name}={raw:?} is not a {}", default.type_str()),
            })?;
            set(&mut merged, &path, value);
        }
        let config: Config =
            serde_path_to_error::deserialize(toml::Value::Table(merged)).map_err(|e| {
                ConfigError::Value {
                    key: e.path().to_string(),
                    message: e.into_inner().message().trim().to_owned(),
                }
            })?;
        config.validate()?;
        Ok(config)
    }

    /// The configuration with its secrets replaced, for printing.
    pub fn redacted(&self) -> Self {
        let mut shown = self.clone();
        if !shown.admin.token.is_empty() {
            shown.admin.token = "(set, not shown)".into();
        }
        if !shown.wallet.hot_wallet_key.is_empty() {
            shown.wallet.hot_wallet_key = "(set, not shown)".into();
        }
        for chain in &mut shown.chains {
            if chain
                .hot_wallet_key
                .as_ref()
                .is_some_and(|key| !key.is_empty())
            {
                chain.hot_wallet_key = Some("(set, not shown)".into());
            }
        }
        shown
    }
}

fn merge(
    base: &mut toml::Table,
    overlay: toml::Table,
    prefix: &str,
    source_name: &str,
) -> Result<(), ConfigError> {
    for (key, value) in overlay {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match (base.get_mut(&key), value) {
            // Tables whose keys are the user's own names (tiers, coin ids,
            // assets, markets): replaced whole, not checked key by key.
            (Some(slot), value) if USER_TABLES.contains(&path.as_str()) => *slot = value,
            (None, _) => {
                return Err(ConfigError::UnknownKey {
                    key: path,
                    source_name: source_name.into(),
                });
            }
            (Some(toml::Value::Table(inner)), toml::Value::Table(over)) => {
                merge(inner, over, &path, source_name)?
            }
            (Some(slot), value) => *slot = value,
        }
    }
    Ok(())
}

/// The default at `path`: a value, or a table when `table_ok`.
fn lookup<'a>(table: &'a toml::Table, path: &[String], table_ok: bool) -> Option<&'a toml::Value> {
    let (last, parents) = path.split_last()?;
    let mut table = table;
    for part in parents {
        table = table.get(part)?.as_table()?;
    }
    table.get(last).filter(|v| table_ok || !v.is_table())
}

fn set(table: &mut toml::Table, path: &[String], value: toml::Value) {
    let (last, parents) = path
        .split_last()
        .expect("lookup succeeded, so the path is not empty");
    let mut table = table;
    for part in parents {
        table = table
            .get_mut(part)
            .and_then(toml::Value::as_table_mut)
            .expect("lookup succeeded, so every parent is a table");
    }
    table.insert(last.clone(), value);
}

/// Reads an environment value as the type the key has in the defaults, so
/// that `WEIPORT_LOG__LEVEL=1` stays a string and `..._MS=abc` is an error.
fn env_value(default: &toml::Value, raw: &str) -> Option<toml::Value> {
    Some(match default {
        toml::Value::String(_) => toml::Value::String(raw.to_owned()),
        toml::Value::Integer(_) => toml::Value::Integer(raw.trim().parse().ok()?),
        toml::Value::Float(_) => toml::Value::Float(raw.trim().parse().ok()?),
        toml::Value::Boolean(_) => toml::Value::Boolean(raw.trim().parse().ok()?),
        _ => toml::from_str::<toml::Table>(&format!("v = {raw}"))
            .ok()?
            .remove("v")?,
    })
}

#[cfg(test)]
mod tests;
