//! `[[chains]]`: the chains one process indexes and moves coins on, each
//! with its node, its network's name on the exchange and its indexer's
//! options. Without the table, `[node]`, `[indexer]` and `[wallet]` make
//! the one chain.

use serde::{Deserialize, Serialize};

use super::{Config, ConfigError, IndexerSection};

/// One `[[chains]]` entry as written.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChainSection {
    /// The chain id its node must answer.
    pub id: u64,
    /// Its name, as `chainlist` and `capital/config/getall` show it.
    pub name: String,
    /// The node's JSON-RPC URL.
    pub url: String,
    /// The exchange asset that is its native coin (default: `wallet.coin`).
    #[serde(default)]
    pub coin: Option<String>,
    /// Binance's name of the network (ETH, ARBITRUM, OPTIMISM, BASE…).
    pub network: String,
    /// Blocks a deposit must be under before it is credited (default:
    /// `exchange.deposit_confirmations`).
    #[serde(default)]
    pub confirmations: Option<u64>,
    /// The hot wallet's key on this chain (default: `wallet.hot_wallet_key`).
    #[serde(default)]
    pub hot_wallet_key: Option<String>,
    /// Fee kept per withdrawal (default: `wallet.withdraw_fee`).
    #[serde(default)]
    pub withdraw_fee: Option<weiport_exchange::Amount>,
    /// Smallest withdrawal (default: `wallet.withdraw_min`).
    #[serde(default)]
    pub withdraw_min: Option<weiport_exchange::Amount>,
    /// Largest withdrawal (default: `wallet.withdraw_max`).
    #[serde(default)]
    pub withdraw_max: Option<weiport_exchange::Amount>,
    /// `[indexer]` keys this chain sets otherwise (`start_block`,
    /// `poll_interval_ms`, `tokens`…).
    #[serde(default)]
    pub indexer: toml::Table,
}

/// One chain with every default filled in: what the process runs for it.
#[derive(Debug, Clone)]
pub struct Chain {
    /// The configured chain id (none for the `[node]` shorthand: whatever
    /// the node is).
    pub id: Option<u64>,
    /// Its name.
    pub name: String,
    /// The node's URL.
    pub url: String,
    /// Its native coin's asset name.
    pub coin: String,
    /// Its network's name.
    pub network: String,
    /// Deposit confirmations.
    pub confirmations: u64,
    /// The hot wallet's key; empty for the dev default.
    pub hot_wallet_key: String,
    /// Fee per withdrawal.
    pub withdraw_fee: weiport_exchange::Amount,
    /// Smallest withdrawal.
    pub withdraw_min: weiport_exchange::Amount,
    /// Largest withdrawal.
    pub withdraw_max: weiport_exchange::Amount,
    /// Its indexer's options.
    pub indexer: IndexerSection,
    /// 0 for the first chain (its index in the data dir's own families, its
    /// deposits and withdrawals the ledger's network 0), else its chain id.
    pub ledger_network: u64,
}

impl Chain {
    /// The chain's label in metrics and logs: its id, or "default".
    pub fn label(&self) -> String {
        self.id
            .map_or_else(|| "default".to_owned(), |id| id.to_string())
    }
}

impl Config {
    /// The chains this process follows, the first being the data dir's
    /// own: `[[chains]]`, or the one `[node]` names.
    pub fn chains(&self) -> Vec<Chain> {
        if self.chains.is_empty() {
            return vec![Chain {
                id: None,
                name: "Ethereum".to_owned(),
                url: self.node.url.clone(),
                coin: self.wallet.coin.clone(),
                network: self.wallet.network.clone(),
                confirmations: self.exchange.deposit_confirmations,
                hot_wallet_key: self.wallet.hot_wallet_key.clone(),
                withdraw_fee: self.wallet.withdraw_fee,
                withdraw_min: self.wallet.withdraw_min,
                withdraw_max: self.wallet.withdraw_max,
                indexer: self.indexer.clone(),
                ledger_network: 0,
            }];
        }
        self.chains
            .iter()
            .enumerate()
            .map(|(n, chain)| Chain {
                id: Some(chain.id),
                name: chain.name.clone(),
                url: chain.url.clone(),
                coin: chain
                    .coin
                    .clone()
                    .unwrap_or_else(|| self.wallet.coin.clone()),
                network: chain.network.clone(),
                confirmations: chain
                    .confirmations
                    .unwrap_or(self.exchange.deposit_confirmations),
                hot_wallet_key: chain
                    .hot_wallet_key
                    .clone()
                    .unwrap_or_else(|| self.wallet.hot_wallet_key.clone()),
                withdraw_fee: chain.withdraw_fee.unwrap_or(self.wallet.withdraw_fee),
                withdraw_min: chain.withdraw_min.unwrap_or(self.wallet.withdraw_min),
                withdraw_max: chain.withdraw_max.unwrap_or(self.wallet.withdraw_max),
                // Checked by `validate_chains`.
                indexer: indexer_of(&self.indexer, &chain.indexer).unwrap_or(self.indexer.clone()),
                ledger_network: if n == 0 { 0 } else { chain.id },
            })
            .collect()
    }

    /// The further chains' ids (every chain but the first), whose indexes
    /// live in families of their own.
    pub fn further_chain_ids(&self) -> Vec<u64> {
        self.chains.iter().skip(1).map(|chain| chain.id).collect()
    }

    /// Refuses a `[[chains]]` table the process could not run: ids or
    /// networks named twice, a bad URL, unknown indexer keys.
    pub(super) fn validate_chains(&self) -> Result<(), ConfigError> {
        let invalid = |key: String, message: String| Err(ConfigError::Value { key, message });
        for (n, chain) in self.chains.iter().enumerate() {
            let key = |field: &str| format!("chains[{n}].{field}");
            if self.chains[..n].iter().any(|c| c.id == chain.id) {
                return invalid(key("id"), format!("chain id {} is listed twice", chain.id));
            }
            if chain.name.trim().is_empty() {
                return invalid(key("name"), "must not be empty".into());
            }
            let coin = chain.coin.as_deref().unwrap_or(&self.wallet.coin);
            if self.chains[..n].iter().any(|c| {
                c.network == chain.network && c.coin.as_deref().unwrap_or(&self.wallet.coin) == coin
            }) {
                return invalid(
                    key("network"),
                    format!("{coin} on network {} is listed twice", chain.network),
                );
            }
            if chain.network.is_empty() {
                return invalid(key("network"), "must not be empty".into());
            }
            if let Err(e) = weiport_indexer::NodeClient::new(&chain.url, self.node.options()) {
                return invalid(key("url"), e.to_string());
            }
            if let Err(message) = indexer_of(&self.indexer, &chain.indexer) {
                return invalid(key("indexer"), message);
            }
        }
        Ok(())
    }
}

/// `[indexer]` with a chain's own keys laid over it.
fn indexer_of(base: &IndexerSection, overlay: &toml::Table) -> Result<IndexerSection, String> {
    let toml::Value::Table(mut merged) = toml::Value::try_from(base).map_err(|e| e.to_string())?
    else {
        return Err("the [indexer] section is not a table".into());
    };
    for (key, value) in overlay {
        if !merged.contains_key(key) {
            return Err(format!("unknown indexer key `{key}`"));
        }
        merged.insert(key.clone(), value.clone());
    }
    toml::Value::Table(merged)
        .try_into()
        .map_err(|e: toml::de::Error| e.message().trim().to_owned())
}
