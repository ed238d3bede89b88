//! The checks a loaded configuration passes before anything starts: each
//! refusal names its key.

use std::path::Path;

use super::{Config, ConfigError};

impl Config {
    /// Refuses values the types let through but the program cannot run
    /// with: zero limits, ranges, names of things that do not exist.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |key: &str, message: &str| {
            Err(ConfigError::Value {
                key: key.into(),
                message: message.into(),
            })
        };
        if self.data_dir.as_os_str().is_empty() {
            return invalid("data_dir", "must not be empty");
        }
        self.validate_chains()?;
        if let Err(e) = weiport_indexer::NodeClient::new(&self.node.url, self.node.options()) {
            return invalid("node.url", &e.to_string());
        }
        if self.node.request_timeout_ms == 0 {
            return invalid("node.request_timeout_ms", "must be at least 1");
        }
        if self.node.initial_backoff_ms > self.node.max_backoff_ms {
            return invalid(
                "node.initial_backoff_ms",
                "must not exceed node.max_backoff_ms",
            );
        }
        if !(1..=256).contains(&self.indexer.concurrency) {
            return invalid("indexer.concurrency", "must be between 1 and 256");
        }
        if !(1..=100_000).contains(&self.indexer.batch_blocks) {
            return invalid("indexer.batch_blocks", "must be between 1 and 100000");
        }
        if self.indexer.max_reorg_depth == 0 {
            return invalid("indexer.max_reorg_depth", "must be at least 1");
        }
        if !self.indexer.genesis_file.is_empty() && !Path::new(&self.indexer.genesis_file).is_file()
        {
            return invalid("indexer.genesis_file", "no such file");
        }
        for proxy in &self.access.trusted_proxies {
            if proxy.parse::<weiport_access::IpRule>().is_err() {
                return invalid(
                    "access.trusted_proxies",
                    &format!("{proxy:?} is not an address or CIDR block"),
                );
            }
        }
        for (name, limit) in [
            (
                "access.ip_weight_per_minute",
                self.access.ip_weight_per_minute,
            ),
            (
                "access.key_weight_per_minute",
                self.access.key_weight_per_minute,
            ),
            ("access.orders_per_10s", self.access.orders_per_10s),
            ("access.orders_per_day", self.access.orders_per_day),
        ] {
            if limit == 0 {
                return invalid(name, "must be at least 1");
            }
        }
        if self.access.query_tiers.values().any(|v| *v == 0) {
            return invalid(
                "access.query_tiers",
                "every tier needs at least 1 call per second",
            );
        }
        if !self
            .access
            .query_tiers
            .contains_key(&self.access.default_tier)
        {
            return invalid("access.default_tier", "names no tier of access.query_tiers");
        }
        if let Err(e) = self.exchange.validate() {
            return invalid("exchange.markets", &e.to_string());
        }
        if !self.admin.listen.ip().is_loopback() && !self.admin.allow_remote {
            return invalid(
                "admin.listen",
                "not a loopback address; set admin.allow_remote = true to serve the admin API beyond this host",
            );
        }
        if self.exchange.deposit_confirmations == 0 {
            return invalid("exchange.deposit_confirmations", "must be at least 1");
        }
        if self.wallet.enabled {
            if !self
                .exchange
                .markets
                .iter()
                .any(|m| m.base == self.wallet.coin || m.quote == self.wallet.coin)
            {
                return invalid("wallet.coin", "no market trades it");
            }
            if !self.wallet.hot_wallet_key.is_empty()
                && weiport_wallet::hot_wallet(&self.wallet.hot_wallet_key).is_err()
            {
                return invalid("wallet.hot_wallet_key", "not a 32-byte hex private key");
            }
            if self.wallet.withdraw_min > self.wallet.withdraw_max {
                return invalid("wallet.withdraw_min", "above wallet.withdraw_max");
            }
            if self.wallet.poll_ms == 0 {
                return invalid("wallet.poll_ms", "must be at least 1");
            }
        }
        if self.reserves.enabled {
            if self.reserves.every_secs == 0 && self.reserves.every_blocks == 0 {
                return invalid(
                    "reserves.every_secs",
                    "0 with reserves.every_blocks 0: no snapshot would ever be taken",
                );
            }
            if self.reserves.keep == 0 {
                return invalid("reserves.keep", "must be at least 1");
            }
        }
        if self.storage.background_jobs < 1 {
            return invalid("storage.background_jobs", "must be at least 1");
        }
        if !(1..=4096).contains(&self.storage.write_buffer_mb) {
            return invalid("storage.write_buffer_mb", "must be 1 to 4096");
        }
        if !(1..=65536).contains(&self.storage.memtable_budget_mb) {
            return invalid("storage.memtable_budget_mb", "must be 1 to 65536");
        }
        if self.server.max_body_bytes == 0 {
            return invalid("server.max_body_bytes", "must be at least 1");
        }
        for (name, value) in [
            (
                "server.header_read_timeout_secs",
                self.server.header_read_timeout_secs,
            ),
            (
                "server.body_read_timeout_secs",
                self.server.body_read_timeout_secs,
            ),
            (
                "server.keep_alive_idle_secs",
                self.server.keep_alive_idle_secs,
            ),
            ("server.max_connections", self.server.max_connections as u64),
            (
                "server.max_connections_per_ip",
                self.server.max_connections_per_ip as u64,
            ),
        ] {
            if value == 0 {
                return invalid(name, "must be at least 1");
            }
        }
        if self.access.ipv6_prefix > 128 {
            return invalid("access.ipv6_prefix", "must be between 0 and 128");
        }
        if let Err(e) = tracing_subscriber::EnvFilter::try_new(&self.log.level) {
            return invalid("log.level", &e.to_string());
        }
        Ok(())
    }
}
