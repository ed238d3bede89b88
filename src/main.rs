//! The `weiport` binary: command line, configuration and wiring of the crates.

mod adapters;
mod admin_cli;
mod backup;
mod chains;
mod config;
mod sandbox;
mod serve;
mod telemetry;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::config::Config;

// Request handling allocates many small short-lived buffers across worker
// threads; mimalloc serves them with less contention than the system
// allocator (measured in docs/benchmarks-journal.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Ethereum balance indexer with Etherscan- and Binance-compatible APIs.
#[derive(Debug, Parser)]
#[command(name = "weiport", version, about)]
struct Cli {
    /// Configuration file overriding the embedded defaults.
    #[arg(long, global = true, env = "WEIPORT_CONFIG")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the HTTP server, and the indexer unless `indexer.enabled = false`.
    Serve,
    /// Start a dev node, the server, test accounts with keys and funds, and
    /// a market maker: a living exchange and chain to try clients against.
    Sandbox(sandbox::SandboxArgs),
    /// Run only the indexer, in the foreground.
    Index {
        /// Exit once this block is indexed.
        #[arg(long)]
        until: Option<u64>,
    },
    /// Print the effective configuration (defaults, file and environment merged).
    Config,
    /// Manage API keys (through the running server, or on the data dir).
    Keys {
        #[command(subcommand)]
        command: admin_cli::KeysCommand,
    },
    /// Manage accounts (through the running server, or on the data dir).
    Accounts {
        #[command(subcommand)]
        command: admin_cli::AccountsCommand,
    },
    /// Copy the whole database, consistent, into DIR (missing or empty),
    /// through the running server or from the data dir; prints what it holds.
    Backup {
        /// Where the backup goes.
        dir: PathBuf,
        /// Copy the master key and the admin token too.
        #[arg(long)]
        secrets: bool,
    },
    /// Restore the backup in DIR into the configured data dir (which must
    /// hold no database).
    Restore {
        /// The backup.
        dir: PathBuf,
    },
    /// Check a proof of reserves (what GET /sapi/v1/reserves/proof answered)
    /// against nodes of your choosing: the leaf's path to the published root
    /// and totals, each address's signature, its balance and the block's
    /// hash on your node; prints reserves over liabilities per asset.
    VerifyReserves {
        /// The proof document.
        proof: PathBuf,
        /// A JSON-RPC node: URL (for every chain) or CHAIN_ID=URL; repeat.
        #[arg(long = "node", required = true)]
        nodes: Vec<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let config = match Config::load(cli.config.as_deref(), std::env::vars()) {
        Ok(config) => config,
        Err(error) => return fail(&error),
    };
    let result = match cli.command {
        Command::Config => match toml::to_string_pretty(&config.redacted()) {
            Ok(text) => {
                print!("{text}");
                Ok(())
            }
            Err(e) => Err(anyhow::Error::from(e)),
        },
        Command::Keys { command } => admin_cli::keys(&config, command),
        Command::Accounts { command } => admin_cli::accounts(&config, command),
        Command::Backup { dir, secrets } => admin_cli::backup(&config, &dir, secrets),
        Command::Restore { dir } => admin_cli::restore(&config, &dir),
        Command::Serve => run_async(&config, serve::run(config.clone())),
        Command::Sandbox(args) => run_async(&config, sandbox::run(config.clone(), args)),
        Command::Index { until } => run_async(&config, serve::index(config.clone(), until)),
        Command::VerifyReserves { proof, nodes } => {
            run_async(&config, verify_reserves(proof, nodes))
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => fail(format_args!("{error:#}")),
    }
}

/// `weiport verify-reserves`: prints what holds and what fails.
async fn verify_reserves(proof: PathBuf, nodes: Vec<String>) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&proof)?;
    let verdict = weiport_reserves::verify(&text, &nodes).await?;
    for line in &verdict.lines {
        println!("{line}");
    }
    for failure in &verdict.failures {
        println!("FAILED: {failure}");
    }
    anyhow::ensure!(
        verdict.failures.is_empty(),
        "{} checks failed",
        verdict.failures.len()
    );
    Ok(())
}

fn run_async(
    config: &Config,
    job: impl std::future::Future<Output = anyhow::Result<()>>,
) -> anyhow::Result<()> {
    telemetry::init_logging(&config.log);
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(anyhow::Error::from)?
        .block_on(job)
}

/// Reports a fatal error on one line of stderr and returns the failure code.
fn fail(error: impl std::fmt::Display) -> ExitCode {
    eprintln!("weiport: {error}");
    ExitCode::FAILURE
}
