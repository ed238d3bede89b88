//! Proof of reserves' snapshots: what the exchange owes (the ledger's read
//! side at one sequence) against what its addresses hold (the index at one
//! final block of each chain), the latest few kept. Published by
//! `reserves_api`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use weiport_exchange::catalog::Catalog;
use weiport_exchange::sequencer::Sequencer;
use weiport_reserves::{ChainReserves, Holding, Owed, ReservesError, Snapshot};

use crate::chain_wallet::ChainWallet;

/// Why a snapshot could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// A wallet's index or keys failed.
    #[error("the {network} wallet: {error}")]
    Wallet {
        /// The wallet's network.
        network: String,
        /// What failed.
        error: crate::chain_wallet::WalletFailure,
    },
    /// A chain's index has no final block yet.
    #[error("the {0} index has no final block yet")]
    NotIndexed(String),
    /// The tree could not be built.
    #[error(transparent)]
    Tree(#[from] ReservesError),
}

/// The snapshots taken, newest last, and how to take the next.
pub struct ReserveKeeper {
    secret: [u8; 32],
    fee_account: u64,
    keep: usize,
    kept: Mutex<VecDeque<Arc<Snapshot>>>,
}

impl ReserveKeeper {
    /// Keeps `keep` snapshots; leaves salted from `secret` (the same on
    /// every process of the exchange); `fee_account`'s fee income is the
    /// exchange's own, not owed to anyone.
    pub fn new(secret: [u8; 32], fee_account: u64, keep: usize) -> Self {
        Self {
            secret,
            fee_account,
            keep: keep.max(1),
            kept: Mutex::new(VecDeque::new()),
        }
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, VecDeque<Arc<Snapshot>>> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The newest snapshot.
    pub fn latest(&self) -> Option<Arc<Snapshot>> {
        self.kept().back().cloned()
    }

    /// The kept snapshot of ledger sequence `sequence`.
    pub fn at(&self, sequence: u64) -> Option<Arc<Snapshot>> {
        self.kept()
            .iter()
            .rev()
            .find(|s| s.sequence == sequence)
            .cloned()
    }

    /// Every kept snapshot, oldest first.
    pub fn all(&self) -> Vec<Arc<Snapshot>> {
        self.kept().iter().cloned().collect()
    }

    /// Takes a snapshot now and keeps it: what every account is owed at
    /// the read side's sequence (copied under its lock, the tree built
    /// after), the reserves at each chain's last final block.
    pub fn take(
        &self,
        sequencer: &Sequencer,
        catalog: &Catalog,
        wallets: &[Arc<dyn ChainWallet>],
        now_ms: u64,
    ) -> Result<Arc<Snapshot>, SnapshotError> {
        let assets: Vec<String> = catalog.assets().map(|(_, name)| name.to_owned()).collect();
        // Each chain's block is fixed before the ledger is read: a deposit
        // final by then is in the reserves, and credited in the liabilities
        // if the ledger got to it. Read the other way round, a deposit
        // credited in between would be in the reserves and owed nowhere.
        let blocks = wallets
            .iter()
            .map(|wallet| snapshot_block(wallet.as_ref()))
            .collect::<Result<Vec<u64>, _>>()?;
        // Nothing moved since the last one (the same ledger, the same blocks
        // with the same hashes): it stands, neither copied nor signed again.
        if let Some(last) = self.latest()
            && last.sequence == sequencer.view().sequence
            && unmoved(&last, wallets, &blocks)
        {
            return Ok(last);
        }
        let (sequence, owed) = self.liabilities(sequencer, assets.len());
        let mut chains = Vec::with_capacity(wallets.len());
        for (wallet, block) in wallets.iter().zip(blocks) {
            chains.push(reserves_of(wallet.as_ref(), block, sequence)?);
        }
        let snapshot = Arc::new(Snapshot::take(
            &self.secret,
            sequence,
            now_ms,
            assets,
            owed,
            chains,
        )?);
        let mut kept = self.kept();
        // Nothing moved since the last one: the same snapshot, kept once.
        if kept.back().is_some_and(|last| {
            last.sequence == snapshot.sequence && last.chains == snapshot.chains
        }) {
            return Ok(kept.back().cloned().unwrap_or(snapshot));
        }
        kept.push_back(snapshot.clone());
        while kept.len() > self.keep {
            kept.pop_front();
        }
        Ok(snapshot)
    }

    /// Every account's claim per asset at the read side's sequence, copied
    /// under its lock (the tree is built after).
    fn liabilities(&self, sequencer: &Sequencer, assets: usize) -> (u64, Vec<Owed>) {
        let view = sequencer.view();
        let claims = view.claims(self.fee_account, assets);
        let sequence = view.sequence;
        drop(view);
        let owed = claims
            .iter()
            .map(|(account, amounts)| Owed {
                account,
                amounts: amounts.to_vec(),
            })
            .collect();
        (sequence, owed)
    }
}

/// Whether each chain's snapshot block is `last`'s, with the same hash.
fn unmoved(last: &Snapshot, wallets: &[Arc<dyn ChainWallet>], blocks: &[u64]) -> bool {
    last.chains.len() == wallets.len()
        && last
            .chains
            .iter()
            .zip(wallets)
            .zip(blocks)
            .all(|((chain, wallet), block)| {
                chain.block == *block
                    && wallet
                        .block_hash(*block)
                        .ok()
                        .flatten()
                        .is_some_and(|hash| format!("{hash:#x}") == chain.block_hash)
            })
}

/// The block a chain's reserves are read at: its last final one (before
/// any is, the genesis block: nothing takes it back).
fn snapshot_block(wallet: &dyn ChainWallet) -> Result<u64, SnapshotError> {
    wallet
        .final_block()
        .or_else(|| wallet.indexed_head().map(|_| 0))
        .ok_or_else(|| SnapshotError::NotIndexed(wallet.coin().network.clone()))
}

/// What one chain's addresses hold at `block`, each signed.
fn reserves_of(
    wallet: &dyn ChainWallet,
    block: u64,
    sequence: u64,
) -> Result<ChainReserves, SnapshotError> {
    let network = &wallet.coin().network;
    let failed = |error| SnapshotError::Wallet {
        network: network.clone(),
        error,
    };
    let not_indexed = || SnapshotError::NotIndexed(network.clone());
    let hash = wallet
        .block_hash(block)
        .map_err(failed)?
        .ok_or_else(not_indexed)?;
    let chain_id = wallet.chain_id().map_err(failed)?.ok_or_else(not_indexed)?;
    let mut chain = ChainReserves {
        chain_id,
        coin: wallet.coin().coin.clone(),
        block,
        block_hash: format!("{hash:#x}"),
        addresses: Vec::new(),
    };
    let message = |address: alloy_primitives::Address| {
        Snapshot::message(sequence, &chain, &format!("{address:#x}"))
    };
    let holdings = wallet.signed_reserves(block, &message).map_err(failed)?;
    chain.addresses = holdings
        .into_iter()
        .map(|holding| {
            Ok(Holding {
                address: format!("{:#x}", holding.address),
                balance_wei: u128::try_from(holding.wei).map_err(|_| ReservesError::Overflow)?,
                message: holding.message,
                signature: format!("0x{}", weiport_reserves::to_hex(&holding.signature)),
            })
        })
        .collect::<Result<_, ReservesError>>()?;
    Ok(chain)
}

/// When snapshots are taken.
#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    /// Time between snapshots; `None`: not on time.
    pub every: Option<std::time::Duration>,
    /// Blocks of the first chain's final block between snapshots; 0: not on
    /// blocks.
    pub every_blocks: u64,
}

impl Schedule {
    /// Every `secs` seconds (0: not on time) and every `blocks` blocks (0:
    /// not on blocks).
    pub fn every(secs: u64, blocks: u64) -> Self {
        Self {
            every: (secs > 0).then(|| std::time::Duration::from_secs(secs)),
            every_blocks: blocks,
        }
    }
}

/// Describes the proof of reserves' gauges.
pub fn describe_metrics() {
    metrics::describe_gauge!(
        "weiport_reserves",
        "What the exchange's addresses hold on chain per asset at the latest snapshot (coins)"
    );
    metrics::describe_gauge!(
        "weiport_liabilities",
        "What the exchange owes its accounts per asset at the latest snapshot (coins)"
    );
    metrics::describe_gauge!(
        "weiport_reserves_ratio",
        "Reserves over liabilities per asset at the latest snapshot"
    );
    metrics::describe_gauge!(
        "weiport_reserves_sequence",
        "The ledger sequence of the latest proof-of-reserves snapshot"
    );
}

/// The gauges and the log line of a snapshot taken.
pub(crate) fn record(snapshot: &Snapshot) {
    let Ok(coverage) = snapshot.coverage() else {
        return;
    };
    for asset in &coverage {
        let label = asset.asset.clone();
        metrics::gauge!("weiport_liabilities", "asset" => label.clone())
            .set(asset.liabilities as f64 / 1e8);
        if let Some(wei) = asset.reserves_wei {
            metrics::gauge!("weiport_reserves", "asset" => label.clone()).set(wei as f64 / 1e18);
        }
        if let Some(ratio) = asset.ratio() {
            metrics::gauge!("weiport_reserves_ratio", "asset" => label).set(ratio);
        }
    }
    metrics::gauge!("weiport_reserves_sequence").set(snapshot.sequence as f64);
    tracing::info!(
        sequence = snapshot.sequence,
        accounts = snapshot.accounts(),
        root = %weiport_reserves::to_hex(&snapshot.root_hash()),
        "proof of reserves: snapshot taken"
    );
}
