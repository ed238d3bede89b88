//! `weiport sandbox`: its command line, and the sandbox (the
//! `weiport-sandbox` crate) wired around the server. SIGINT or SIGTERM
//! stops all of it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use weiport_exchange::Catalog;
use weiport_exchange::sequencer::Sequencer;
use weiport_sandbox::{Sandbox, SandboxSettings};

use crate::config::Config;
use crate::serve::{self, ShutdownSignals};

/// `weiport sandbox` options.
#[derive(Debug, clap::Args)]
pub struct SandboxArgs {
    /// Data directory kept across runs (with the chain's state when anvil
    /// is started here); default: a throw-away one, removed on exit.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// JSON-RPC URL of a node to use instead of starting anvil.
    #[arg(long)]
    node: Option<String>,
    /// Wipe the data dir given with --data-dir first.
    #[arg(long, requires = "data_dir")]
    reset: bool,
    /// Run no market maker (the book stays as clients leave it).
    #[arg(long)]
    no_market_maker: bool,
    /// Test accounts to make on a new data dir (default: `sandbox.accounts`).
    #[arg(long)]
    accounts: Option<u32>,
}

/// Runs the sandbox until SIGINT or SIGTERM.
pub async fn run(mut config: Config, args: SandboxArgs) -> anyhow::Result<()> {
    let mut signals = ShutdownSignals::install()?;
    let sandbox = Sandbox::prepare(settings(&config, args)).await?;
    config.data_dir = sandbox.data_dir().to_owned();
    config.node.url = sandbox.node_url().to_owned();
    if let Some((chain_id, url)) = sandbox.second_chain() {
        config.chains = sandbox_chains(&config, chain_id, url);
    }
    // A sandbox stops at once: nothing in flight is worth a long wait.
    config.server.shutdown_grace_secs = config.server.shutdown_grace_secs.min(2);

    let mut server = serve::start(&config).await?;
    // The hot wallet signs its own transactions: traffic never uses its nonces.
    let reserved = server
        .exchange
        .wallets
        .iter()
        .map(|wallet| wallet.hot_address())
        .collect();
    let mut running = sandbox
        .start(weiport_sandbox::Server {
            rest: server.local,
            admin: server.admin_local,
            admin_token_file: config.data_dir.join("admin.token"),
            keys: &server.access.keys,
            venue: Arc::new(Venue(server.exchange.clone())),
            reserved,
        })
        .await?;

    let outcome = tokio::select! {
        signal = signals.recv() => {
            tracing::info!(signal, "stopping the sandbox");
            Ok(())
        }
        error = server.failed() => Err(error),
        error = running.node_stopped() => Err(error.into()),
    };
    running.stop_activity().await;
    server.stop().await?;
    running.stop().await;
    outcome
}

/// The sandbox's settings: the command line over the configuration.
fn settings(config: &Config, args: SandboxArgs) -> SandboxSettings {
    let sandbox = &config.sandbox;
    SandboxSettings {
        data_dir: args.data_dir,
        reset: args.reset,
        node: args.node,
        node_options: config.node.options(),
        catalog: Arc::new(Catalog::new(config.exchange.markets.clone())),
        accounts: args.accounts.unwrap_or(sandbox.accounts),
        balances: sandbox.balances.clone(),
        reference_prices: sandbox.reference_prices.clone(),
        market_maker: sandbox.market_maker.clone(),
        run_market_makers: !args.no_market_maker,
        chain_transfer: (sandbox.chain_transfer_ms > 0)
            .then(|| Duration::from_millis(sandbox.chain_transfer_ms)),
        second_chain_id: (sandbox.second_chain_id > 0).then_some(sandbox.second_chain_id),
        first_network: config.wallet.network.clone(),
    }
}

/// `[[chains]]` of the sandbox's two anvils: the first (the data dir's own,
/// `[node]`'s) and the second, its blocks indexed as they come.
fn sandbox_chains(config: &Config, chain_id: u64, url: &str) -> Vec<crate::config::ChainSection> {
    let chain = |id: u64, name: &str, url: &str, network: &str| crate::config::ChainSection {
        id,
        name: name.to_owned(),
        url: url.to_owned(),
        coin: None,
        network: network.to_owned(),
        confirmations: None,
        hot_wallet_key: None,
        withdraw_fee: None,
        withdraw_min: None,
        withdraw_max: None,
        indexer: toml::Table::new(),
    };
    let (name, network) = weiport_sandbox::SECOND_CHAIN;
    vec![
        chain(
            weiport_sandbox::FIRST_CHAIN_ID,
            "Anvil",
            &config.node.url,
            &config.wallet.network,
        ),
        chain(chain_id, name, url, network),
    ]
}

/// The engine, as the sandbox sends to it.
struct Venue(Arc<weiport_exchange_api::Exchange>);

impl AsRef<Sequencer> for Venue {
    fn as_ref(&self) -> &Sequencer {
        &self.0.sequencer
    }
}
