//! One run of the sandbox, in the order its parts start and stop around
//! the caller's server.

use std::path::Path;

use tokio::sync::watch;
use tokio::task::JoinSet;
use weiport_exchange::sequencer::Sequencer;

use crate::DESCRIPTION_FILE;
use crate::anvil::Anvil;
use crate::chain::{self, ChainTraffic};
use crate::data_dir::DataDir;
use crate::description::ChainNode;
use crate::error::SandboxError;
use crate::input::{SandboxSettings, Server};
use crate::market_maker;
use crate::provision::{provision, traders};
use crate::screen::screen;

/// The sandbox before its server starts: a data dir, and a node (anvil
/// started here unless one was given).
pub struct Sandbox {
    // Fields drop in order: an anvil that is still running is killed
    // before a throw-away data dir holding its log is removed.
    anvil: Option<Anvil>,
    second: Option<(u64, Anvil)>,
    data: DataDir,
    node_url: String,
    settings: SandboxSettings,
}

/// The first chain's id when anvil is started here.
pub const FIRST_CHAIN_ID: u64 = 31337;
/// The second chain's name and network on the exchange.
pub const SECOND_CHAIN: (&str, &str) = ("Anvil L2", "ARBITRUM");

impl Sandbox {
    /// Makes (or resets) the data dir, checks the names `[sandbox]` uses
    /// against the markets, and starts anvil unless a node was given.
    pub async fn prepare(settings: SandboxSettings) -> Result<Self, SandboxError> {
        let data = DataDir::prepare(settings.data_dir.as_deref(), settings.reset)?;
        check_names(&settings)?;
        let (anvil, node_url) = match &settings.node {
            Some(url) => (None, url.clone()),
            None => {
                let anvil = Anvil::start(&data, "anvil", &[]).await?;
                let url = anvil.url.clone();
                (Some(anvil), url)
            }
        };
        let second = match (&settings.node, settings.second_chain_id) {
            (None, Some(chain_id)) => {
                // Faster blocks than the first chain's, like an L2.
                let args =
                    ["--chain-id", &chain_id.to_string(), "--block-time", "1"].map(str::to_owned);
                Some((chain_id, Anvil::start(&data, "anvil-l2", &args).await?))
            }
            _ => None,
        };
        Ok(Self {
            anvil,
            second,
            data,
            node_url,
            settings,
        })
    }

    /// The data dir the server is to open.
    pub fn data_dir(&self) -> &Path {
        &self.data.path
    }

    /// The node the server is to index.
    pub fn node_url(&self) -> &str {
        &self.node_url
    }

    /// The second chain started here, if one was: its id and node URL.
    pub fn second_chain(&self) -> Option<(u64, &str)> {
        self.second
            .as_ref()
            .map(|(chain_id, anvil)| (*chain_id, anvil.url.as_str()))
    }

    /// Every chain, as `sandbox.json` names them.
    fn chain_nodes(&self, first_network: &str) -> Vec<ChainNode> {
        let mut chains = vec![ChainNode {
            chain_id: FIRST_CHAIN_ID,
            name: "Anvil".to_owned(),
            network: first_network.to_owned(),
            node_url: self.node_url.clone(),
            node_pid: self.anvil.as_ref().map(|a| a.pid),
        }];
        if let Some((chain_id, anvil)) = &self.second {
            chains.push(ChainNode {
                chain_id: *chain_id,
                name: SECOND_CHAIN.0.to_owned(),
                network: SECOND_CHAIN.1.to_owned(),
                node_url: anvil.url.clone(),
                node_pid: Some(anvil.pid),
            });
        }
        chains
    }

    /// Provisions the accounts and keys on `server` (or finds those of an
    /// earlier run), writes `sandbox.json`, prints the screen, and starts
    /// the market makers and the chain traffic.
    pub async fn start<V>(self, server: Server<'_, V>) -> Result<Running, SandboxError>
    where
        V: AsRef<Sequencer> + Send + Sync + 'static,
    {
        let settings = &self.settings;
        let node_pid = self.anvil.as_ref().map(|a| a.pid);
        let chains = if self.second.is_some() {
            self.chain_nodes(&settings.first_network)
        } else {
            Vec::new()
        };
        let description = provision(
            settings,
            &server,
            &self.data,
            &self.node_url,
            node_pid,
            &chains,
        )
        .await?;
        description.write(&self.data.path.join(DESCRIPTION_FILE))?;
        print!("{}", screen(&description, settings, self.data.kept));

        let (stop, stop_rx) = watch::channel(false);
        let mut activity = JoinSet::new();
        if settings.run_market_makers {
            for maker in &description.market_makers {
                let (maker, flow) = traders(settings, &settings.catalog, maker)?;
                activity.spawn(market_maker::run(
                    server.venue.clone(),
                    settings.catalog.clone(),
                    maker,
                    flow,
                    settings.market_maker.clone(),
                    stop_rx.clone(),
                ));
            }
        }
        if let Some(interval) = settings.chain_transfer {
            let second = self.second.as_ref().map(|(_, anvil)| anvil.url.as_str());
            for url in std::iter::once(self.node_url.as_str()).chain(second) {
                let node = weiport_indexer::NodeClient::new(url, settings.node_options.clone())?;
                match ChainTraffic::prepare(node, &server.reserved).await {
                    Ok(Some(traffic)) => {
                        activity.spawn(chain::run(traffic, interval, stop_rx.clone()));
                    }
                    Ok(None) => {
                        tracing::warn!(url, "the node has no unlocked accounts: no chain transfers")
                    }
                    Err(error) => tracing::warn!(url, %error, "no chain transfers"),
                }
            }
        }
        Ok(Running {
            stop,
            activity,
            anvil: self.anvil,
            second: self.second.map(|(_, anvil)| anvil),
            data: self.data,
        })
    }
}

/// The sandbox at work: its activity, its node and its data dir.
pub struct Running {
    stop: watch::Sender<bool>,
    activity: JoinSet<()>,
    anvil: Option<Anvil>,
    second: Option<Anvil>,
    data: DataDir,
}

impl Running {
    /// Resolves only if an anvil started here stops on its own.
    pub async fn node_stopped(&mut self) -> SandboxError {
        let (first_log, second_log) = (
            self.data.path.join("anvil.log"),
            self.data.path.join("anvil-l2.log"),
        );
        tokio::select! {
            error = stopped(self.anvil.as_mut(), first_log) => error,
            error = stopped(self.second.as_mut(), second_log) => error,
        }
    }

    /// Stops the market makers and the chain traffic, and waits for them.
    pub async fn stop_activity(&mut self) {
        let _ = self.stop.send(true);
        while self.activity.join_next().await.is_some() {}
    }

    /// Stops the anvil started here (once the server that indexes it has
    /// stopped), then removes a throw-away data dir.
    pub async fn stop(self) {
        for anvil in [self.anvil, self.second].into_iter().flatten() {
            anvil.stop().await;
        }
        drop(self.data);
    }
}

/// Resolves when `anvil` (if there is one) exits, with its log's path.
async fn stopped(anvil: Option<&mut Anvil>, log: std::path::PathBuf) -> SandboxError {
    match anvil {
        Some(anvil) => SandboxError::AnvilStopped {
            status: anvil.exited().await,
            log,
        },
        None => std::future::pending().await,
    }
}

/// Every asset and market `[sandbox]` names exists, before anything starts.
fn check_names(settings: &SandboxSettings) -> Result<(), SandboxError> {
    let catalog = &settings.catalog;
    for asset in settings.balances.keys() {
        if catalog.asset_id(asset).is_none() {
            return Err(SandboxError::UnknownAsset(asset.clone()));
        }
    }
    for symbol in settings.reference_prices.keys() {
        if catalog.market_id(symbol).is_none() {
            return Err(SandboxError::UnknownMarket(symbol.clone()));
        }
    }
    Ok(())
}
