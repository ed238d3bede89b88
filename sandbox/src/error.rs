//! Why the sandbox could not start or stopped.

use std::path::PathBuf;

/// Why the sandbox could not start or stopped; each message names the
/// path, file or setting to look at.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// No throw-away data dir could be made.
    #[error("cannot make a throw-away data dir")]
    TempDir(#[source] std::io::Error),
    /// `--reset` named a directory a sandbox did not make.
    #[error(
        "refusing to reset {}: it holds no {file}, so it is not a sandbox data dir",
        path.display()
    )]
    NotASandbox {
        /// The directory.
        path: PathBuf,
        /// The description file it lacks.
        file: &'static str,
    },
    /// The data dir could not be wiped.
    #[error("cannot reset data dir {}", path.display())]
    Reset {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The data dir cannot be made or written.
    #[error("data dir {} is not writable", path.display())]
    NotWritable {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `sandbox.balances` names an asset no market trades.
    #[error("sandbox.balances names {0}, which no market trades")]
    UnknownAsset(String),
    /// `sandbox.reference_prices` names a symbol that is not a market.
    #[error("sandbox.reference_prices names {0}, which is not a market")]
    UnknownMarket(String),
    /// `WEIPORT_ANVIL` names no file.
    #[error(
        "WEIPORT_ANVIL = {} is not a file: run scripts/setup.sh (it installs the pinned anvil), or give --node URL",
        .0.display()
    )]
    AnvilNotAFile(PathBuf),
    /// The pinned anvil is not installed.
    #[error(
        "anvil is not installed ({pinned} not found): run `npm ci --prefix tools` or scripts/setup.sh, set WEIPORT_ANVIL, or give --node URL"
    )]
    AnvilMissing {
        /// Where it was looked for, under the current directory and the source tree.
        pinned: &'static str,
    },
    /// No loopback port was free for anvil.
    #[error("no free loopback port")]
    NoPort(#[source] std::io::Error),
    /// A file could not be written.
    #[error("cannot write {}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// anvil could not be started.
    #[error("cannot start anvil ({})", binary.display())]
    AnvilSpawn {
        /// The executable.
        binary: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// anvil exited before it answered.
    #[error("anvil exited at start ({status}); see {}", log.display())]
    AnvilExited {
        /// Its exit status.
        status: std::process::ExitStatus,
        /// Its log.
        log: PathBuf,
    },
    /// anvil did not answer in time.
    #[error("anvil did not answer on {url} within 30 s; see {}", log.display())]
    AnvilSilent {
        /// Its JSON-RPC URL.
        url: String,
        /// Its log.
        log: PathBuf,
    },
    /// The anvil started here stopped while the sandbox ran.
    #[error("anvil stopped on its own ({status}); see {}", log.display())]
    AnvilStopped {
        /// Its exit status (or why it could not be waited for).
        status: String,
        /// Its log.
        log: PathBuf,
    },
    /// The engine refused to credit a test account.
    #[error("crediting account {0} was refused")]
    CreditRefused(u64),
    /// A kept data dir describes a maker for a market no longer configured.
    #[error("market {0} is gone from the configuration")]
    MarketGone(String),
    /// A kept data dir describes a maker whose market has no reference price.
    #[error("no sandbox.reference_prices for {0}")]
    NoReferencePrice(String),
    /// An I/O failure with nothing more to say.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The key store refused an account or a key.
    #[error(transparent)]
    Keys(#[from] weiport_access::KeyStoreError),
    /// The engine is gone.
    #[error(transparent)]
    Sequencer(#[from] weiport_exchange::sequencer::SequencerError),
    /// The node's URL or client is unusable.
    #[error(transparent)]
    Node(#[from] weiport_indexer::NodeError),
    /// The description could not be encoded.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}
