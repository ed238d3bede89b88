//! What an operator reads of a running weiport: liveness and readiness
//! (`/healthz`, `/readyz`), Prometheus metrics (`/metrics`) and the status
//! page (`/status`, admin listener).
//!
//! This crate knows none of the faces' or the engine's insides: the binary
//! hands it [`Figures`], read afresh at each request or sample, and the
//! Prometheus handle the other crates' metrics are recorded in.

#![warn(unreachable_pub)]

mod health;
mod process;
mod recorder;
mod scrape;
mod status;

use std::sync::Arc;

use axum::Router;
use axum::routing::get;
use metrics_exporter_prometheus::PrometheusHandle;

pub use recorder::{install_recorder, watch_disk};
pub use weiport_storage::EngineFigures;

/// Where the figures come from: implemented by the binary over the parts it
/// wired. Each call reads the state now and must be quick (no I/O beyond
/// memory and the database's properties).
pub trait Figures: Send + Sync + 'static {
    /// The database's schema version, or why it cannot be read.
    fn database(&self) -> Result<u32, String>;
    /// The database engine's own figures (size, compaction, cache).
    fn engine(&self) -> EngineFigures;
    /// Every chain served, in configuration order (the first is the data
    /// dir's own).
    fn chains(&self) -> Vec<ChainFigures>;
    /// Commands in the exchange's log, when this process serves it (the
    /// cheap part of [`Figures::exchange`]).
    fn commands(&self) -> Option<u64>;
    /// The exchange, when this process serves it.
    fn exchange(&self) -> Option<ExchangeFigures>;
    /// This process's part in a cluster, when it is in one.
    fn cluster(&self) -> Option<ClusterFigures>;
}

/// One chain and its indexer.
#[derive(Debug, Clone, Default)]
pub struct ChainFigures {
    /// Its chain id, once known.
    pub id: Option<u64>,
    /// Its configured name.
    pub name: String,
    /// Its indexer, unless indexing is off.
    pub indexer: Option<IndexerFigures>,
}

/// Where a chain's indexer stands.
#[derive(Debug, Clone, Default)]
pub struct IndexerFigures {
    /// The node's head block.
    pub head: u64,
    /// The last block indexed.
    pub indexed: u64,
    /// Blocks behind the head.
    pub lag: u64,
    /// Whether it follows the head (else it is catching up).
    pub following: bool,
    /// Why it is not ready, if it is not.
    pub problem: Option<String>,
}

/// The exchange's state.
#[derive(Debug, Clone, Default)]
pub struct ExchangeFigures {
    /// Commands in its log.
    pub commands: u64,
    /// Each market's symbol and last trade price (none before a trade).
    pub markets: Vec<(String, Option<String>)>,
    /// Each chain's wallet.
    pub wallets: Vec<WalletFigures>,
    /// The latest proof-of-reserves snapshot, per asset.
    pub reserves: Vec<ReservesFigures>,
}

/// One asset at the latest proof-of-reserves snapshot.
#[derive(Debug, Clone)]
pub struct ReservesFigures {
    /// The ledger sequence of the snapshot.
    pub sequence: u64,
    /// The asset.
    pub asset: String,
    /// What the accounts are owed of it, in coins.
    pub liabilities: String,
    /// What the exchange's addresses hold of it on chain (none listed: `None`).
    pub reserves: Option<String>,
    /// Reserves over liabilities.
    pub ratio: Option<String>,
}

/// A chain's wallet against the accounts' books.
#[derive(Debug, Clone)]
pub struct WalletFigures {
    /// The network (chain) it holds coins on.
    pub network: String,
    /// The coin.
    pub coin: String,
    /// What the hot wallet and the deposit addresses hold on chain, in the
    /// coin's units, or why it could not be read.
    pub on_chain: Result<String, String>,
    /// What the accounts' books hold of the coin.
    pub books: String,
}

/// This process's part in a replicated exchange.
#[derive(Debug, Clone, Default)]
pub struct ClusterFigures {
    /// This process's name.
    pub node: String,
    /// Whether it leads (else it follows).
    pub leading: bool,
    /// The holder of the primary's lease, as last read.
    pub lease_holder: Option<String>,
    /// The journal entry last applied (following) or appended (leading).
    pub applied_entry: u64,
    /// The journal's last entry, as last read.
    pub journal_entry: u64,
    /// Whether the shared key store (Redis) answered lately.
    pub redis_reachable: bool,
    /// Processes alive at the last heartbeat.
    pub processes: u32,
}

/// What this build is, for `weiport_build_info`.
#[derive(Debug, Clone, Copy)]
pub struct Build {
    /// The package version.
    pub version: &'static str,
    /// `debug` or `release`.
    pub profile: &'static str,
}

/// The operator endpoints over `figures`.
#[derive(Clone)]
pub struct Operator {
    figures: Arc<dyn Figures>,
    prometheus: PrometheusHandle,
    scrape: Arc<scrape::Scrape>,
}

impl Operator {
    /// Endpoints over `figures`; `/metrics` renders `prometheus` with the
    /// process's, the build's and the figures' metrics added at each scrape.
    pub fn new(figures: Arc<dyn Figures>, prometheus: PrometheusHandle, build: Build) -> Self {
        scrape::describe(build);
        Self {
            figures,
            prometheus,
            scrape: Arc::default(),
        }
    }

    /// `/healthz`, `/readyz` and `/metrics`, for the public listener.
    pub fn router(&self) -> Router {
        use weiport_access::telemetry::tracked;
        Router::new()
            .route("/healthz", tracked(get(health::healthz)))
            .route("/readyz", tracked(get(health::readyz)))
            .route("/metrics", tracked(get(scrape::metrics)))
            .with_state(self.clone())
    }

    /// `/status` and `/admin/cluster`, for the admin listener; starts the
    /// status page's sampler on the current runtime.
    pub fn admin_router(&self) -> Router {
        status::Status::start(self.clone())
            .router()
            .merge(health::cluster_router(self.clone()))
    }

    /// The metrics text, the figures' gauges brought up to date first.
    fn render(&self) -> String {
        self.scrape.update(self.figures.as_ref());
        self.prometheus.render()
    }
}

#[cfg(test)]
mod testing {
    use crate::{ChainFigures, ClusterFigures, EngineFigures, ExchangeFigures, Figures};

    /// Figures fixed by a test.
    pub(crate) struct Fixed {
        pub(crate) database: Result<u32, String>,
        pub(crate) chains: Vec<ChainFigures>,
        pub(crate) exchange: Option<ExchangeFigures>,
        pub(crate) cluster: Option<ClusterFigures>,
    }

    impl Default for Fixed {
        fn default() -> Self {
            Self {
                database: Ok(1),
                chains: Vec::new(),
                exchange: None,
                cluster: None,
            }
        }
    }

    impl Figures for Fixed {
        fn database(&self) -> Result<u32, String> {
            self.database.clone()
        }
        fn engine(&self) -> EngineFigures {
            EngineFigures::default()
        }
        fn chains(&self) -> Vec<ChainFigures> {
            self.chains.clone()
        }
        fn commands(&self) -> Option<u64> {
            self.exchange.as_ref().map(|e| e.commands)
        }
        fn exchange(&self) -> Option<ExchangeFigures> {
            self.exchange.clone()
        }
        fn cluster(&self) -> Option<ClusterFigures> {
            self.cluster.clone()
        }
    }
}
