//! The state every handler shares: the markets, the engine behind its
//! sequencer, the history in storage, the access layer, the stream hub and,
//! when the server runs one, the on-chain wallet.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use weiport_access::Access;
use weiport_exchange::catalog::{Catalog, MarketId};
use weiport_exchange::engine::{Command, Event};
use weiport_exchange::history::{History, HistoryError};
use weiport_exchange::sequencer::{EngineSettings, Outcome, Role, Sequencer, SequencerError};

use crate::chain_wallet::ChainWallet;
use crate::primary_link::{Forwarded, PrimaryLink};

/// How long a follower waits for its replay to pass a forwarded command.
const REPLAY_WAIT: std::time::Duration = std::time::Duration::from_secs(10);
use crate::error::BinanceError;
use crate::streams::StreamHub;

/// The exchange as the API sees it: the markets, the engine behind its
/// sequencer, and the access layer (for order-count figures).
pub struct Exchange {
    /// Markets and assets.
    pub catalog: Arc<Catalog>,
    /// The engine thread; shared with whoever else drives the engine (the
    /// wallet), and stopped when the last holder lets it go.
    pub sequencer: Arc<Sequencer>,
    /// Orders, trades and candles in storage.
    pub history: History,
    /// Keys and limits.
    pub access: Arc<Access>,
    /// Last `depth` body per market and limit, with the book version it shows.
    pub depth_cache: Mutex<HashMap<(MarketId, usize), (u64, Bytes)>>,
    /// The WebSocket streams, fed by the sequencer.
    pub streams: Arc<StreamHub>,
    /// The on-chain wallets (deposits and withdrawals), one per network;
    /// the first of a coin's is its default network. None: the server runs
    /// no wallet.
    pub wallets: Vec<Arc<dyn ChainWallet>>,
    /// Where commands go while this process follows a replicated journal.
    primary: std::sync::OnceLock<Arc<dyn PrimaryLink>>,
    /// The proof-of-reserves snapshots, when the server takes them.
    reserves: std::sync::OnceLock<Arc<crate::reserves::ReserveKeeper>>,
}

impl Exchange {
    /// Replays the command log of `store` and starts the engine thread (a
    /// queue of `capacity` commands, fees to `fee_account`) with the stream
    /// hub as one of its sinks; spawns the hub on the current Tokio runtime.
    /// `wallets` are what the capital endpoints answer from (none: they
    /// refuse as unsupported); `role`, whether it runs alone, leads a replicated
    /// journal or follows one.
    pub fn open(
        store: weiport_storage::Store,
        catalog: Arc<Catalog>,
        settings: EngineSettings,
        access: Arc<Access>,
        wallets: Vec<Arc<dyn ChainWallet>>,
        role: Role,
    ) -> Result<Self, SequencerError> {
        let history = History::new(store.clone(), catalog.clone());
        let (streams, sink) = StreamHub::new(catalog.clone(), Some(history.clone()));
        let sequencer = Sequencer::start_replicated(
            store.clone(),
            catalog.clone(),
            settings,
            vec![Box::new(sink)],
            role,
        )?;
        tokio::spawn(streams.clone().run());
        Ok(Self {
            history,
            catalog,
            sequencer: Arc::new(sequencer),
            access,
            depth_cache: Default::default(),
            streams,
            wallets,
            primary: std::sync::OnceLock::new(),
            reserves: std::sync::OnceLock::new(),
        })
    }

    /// Publishes `keeper`'s proof-of-reserves snapshots.
    pub fn keep_reserves(&self, keeper: Arc<crate::reserves::ReserveKeeper>) {
        let _ = self.reserves.set(keeper);
    }

    /// The proof-of-reserves snapshots, if the server takes them.
    pub fn reserves(&self) -> Option<&crate::reserves::ReserveKeeper> {
        self.reserves.get().map(|keeper| &**keeper)
    }

    /// Sends the commands this process may not sequence (while it follows)
    /// through `link` to the primary.
    pub fn link_to_primary(&self, link: Arc<dyn PrimaryLink>) {
        let _ = self.primary.set(link);
    }

    /// Sequences `command` (here, or at the primary while this process
    /// follows); the engine's refusal comes back as Binance's error.
    pub(crate) async fn submit(&self, command: Command) -> Result<Arc<Outcome>, BinanceError> {
        if self.sequencer.is_following()
            && let Some(link) = self.primary.get()
        {
            return self.forward(link, command).await;
        }
        self.submit_here(command).await
    }

    /// Sequences `command` on this process's engine, never elsewhere.
    pub(crate) async fn submit_here(&self, command: Command) -> Result<Arc<Outcome>, BinanceError> {
        let outcome = self.sequencer.submit(command).await.map_err(|error| {
            tracing::error!(%error, "the exchange engine refused work");
            BinanceError::unavailable()
        })?;
        match outcome.events.first() {
            Some(Event::Rejected(reject)) => Err(BinanceError::from(*reject)),
            _ => Ok(outcome),
        }
    }
}

/// A history read's result, its failure logged and answered as Binance's internal error.
pub(crate) fn stored<T>(result: Result<T, HistoryError>) -> Result<T, BinanceError> {
    result.map_err(|error| {
        tracing::error!(%error, "reading the exchange history failed");
        BinanceError::unavailable()
    })
}

/// The first `limit` items of `rows`, stopping at the first failure.
pub(crate) fn first<T>(
    rows: impl Iterator<Item = Result<T, HistoryError>>,
    limit: usize,
) -> Result<Vec<T>, BinanceError> {
    stored(rows.take(limit).collect())
}

/// The last `limit` items before `from`, read backwards, in ascending order.
pub(crate) fn latest<T>(
    rows: impl Iterator<Item = Result<T, HistoryError>>,
    limit: usize,
) -> Result<Vec<T>, BinanceError> {
    let mut out = first(rows, limit)?;
    out.reverse();
    Ok(out)
}

impl Exchange {
    /// `command` sequenced by the primary and answered from this process's
    /// replay of it.
    pub(crate) async fn forward(
        &self,
        link: &Arc<dyn PrimaryLink>,
        command: Command,
    ) -> Result<Arc<Outcome>, BinanceError> {
        // Subscribed first: the replay of the command cannot pass unseen.
        let mut feed = self.sequencer.subscribe();
        let bytes = self.sequencer.encode_command(&command);
        let sequence = match link.forward(bytes).await {
            Ok(Forwarded::Accepted { sequence }) => sequence,
            Ok(Forwarded::Refused { status, code, msg }) => {
                let status = axum::http::StatusCode::from_u16(status)
                    .unwrap_or(axum::http::StatusCode::BAD_REQUEST);
                return Err(BinanceError { status, code, msg });
            }
            Err(error) => {
                tracing::warn!(%error, "forwarding a command to the primary failed");
                return Err(BinanceError::unavailable());
            }
        };
        let deadline = tokio::time::Instant::now() + REPLAY_WAIT;
        loop {
            match tokio::time::timeout_at(deadline, feed.recv()).await {
                Ok(Ok(outcome)) if outcome.sequence == sequence => return Ok(outcome),
                Ok(Ok(_)) => {}
                _ => {
                    tracing::warn!(
                        sequence,
                        "the replay did not reach a forwarded command in time"
                    );
                    return Err(BinanceError::unavailable());
                }
            }
        }
    }
}
