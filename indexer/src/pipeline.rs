//! The indexing loop: bootstrap, head tracking, concurrent fetching with
//! in-order commits, reorganisation handling, progress reporting.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use alloy_primitives::{Address, U256};
use futures::StreamExt;
use tokio::sync::{mpsc, watch};
use tracing::Instrument;
use weiport_storage::{BlockRecord, Cursor, IndexBatch, StorageError, Store};

use crate::genesis::{GenesisError, read_genesis_alloc};
use crate::node::{NodeClient, NodeError};
pub use crate::progress::Progress;
use crate::source::{self, BalanceSource, BlockChanges, NodePlan};
use crate::transfers::Histories;

/// What the indexer is told to do.
#[derive(Debug, Clone)]
pub struct IndexerConfig {
    /// First block to index; 0 means from genesis, with genesis balances seeded.
    pub start_block: u64,
    /// Genesis file (geth `alloc` format) to seed balances from; without it,
    /// the node's `eth_accounts` are seeded (dev nodes).
    pub genesis_file: Option<PathBuf>,
    /// Forced balance source; `None` probes the node.
    pub balance_source: Option<BalanceSource>,
    /// Blocks fetched at once.
    pub concurrency: usize,
    /// Most blocks written in one atomic batch while catching up.
    pub batch_blocks: usize,
    /// How often the head is polled once caught up.
    pub poll_interval: Duration,
    /// Deepest reorganisation handled; deeper ones stop the indexer.
    pub max_reorg_depth: u64,
    /// Stop once this block is indexed.
    pub until: Option<u64>,
    /// Keep each address's transactions (`txlist`): the block's bodies and
    /// receipts are fetched with it.
    pub transactions: bool,
    /// Keep internal transfers from call traces (`txlistinternal`); needs
    /// `transactions`.
    pub internal_transactions: bool,
    /// Keep ERC-20 transfers and holders' balances (`tokentx`,
    /// `tokenbalance`); needs `transactions`.
    pub tokens: bool,
    /// The chain id the node must answer (none: whatever it is, as long as
    /// the data dir's index is of the same chain).
    pub chain_id: Option<u64>,
    /// The `chain` label of this indexer's metrics and the field of its logs.
    pub label: String,
}

impl IndexerConfig {
    /// The histories kept on a node that answers as `plan` says: transfers
    /// are shown with the transactions that carried them, so they are kept
    /// only with those.
    fn histories(&self, plan: &NodePlan) -> Histories {
        Histories {
            transactions: self.transactions,
            internal: self.transactions && self.internal_transactions && plan.call_traces,
            tokens: self.transactions && self.tokens,
        }
    }
}

impl Default for IndexerConfig {
    fn default() -> Self {
        Self {
            start_block: 0,
            genesis_file: None,
            balance_source: None,
            concurrency: 8,
            batch_blocks: 100,
            poll_interval: Duration::from_millis(500),
            max_reorg_depth: 128,
            until: None,
            transactions: true,
            internal_transactions: true,
            tokens: true,
            chain_id: None,
            label: "default".to_owned(),
        }
    }
}

/// Why the indexer stopped.
#[derive(Debug, thiserror::Error)]
pub enum IndexerError {
    /// The node failed in a way that waiting will not fix.
    #[error(transparent)]
    Node(#[from] NodeError),
    /// The database failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The genesis file is unusable.
    #[error(transparent)]
    Genesis(#[from] GenesisError),
    /// The node answers another chain id than the one configured for it.
    #[error(
        "the node answers chain id {node}, but this chain is configured as chain id {configured}"
    )]
    NotTheConfiguredChain {
        /// The configured id.
        configured: u64,
        /// The node's.
        node: u64,
    },
    /// The node serves another chain than the one indexed in the data dir.
    #[error("node is on {node} but the data directory indexes {stored}; refusing to mix chains")]
    WrongChain {
        /// What the data dir holds.
        stored: String,
        /// What the node serves.
        node: String,
    },
    /// A reorganisation deeper than allowed.
    #[error(
        "chain reorganisation deeper than max_reorg_depth ({max}) below block {tip}; re-index from a fresh data directory"
    )]
    ReorgTooDeep {
        /// The indexed tip when it was found.
        tip: u64,
        /// The configured bound.
        max: u64,
    },
    /// The node's chain diverges below the first indexed block.
    #[error("the node's chain diverges at or below block {floor}, where this index starts")]
    ReorgBelowStart {
        /// Lowest block the index knows.
        floor: u64,
    },
    /// The genesis file disagrees with the node.
    #[error("genesis file says {address} holds {file} wei, the node says {node}")]
    GenesisMismatch {
        /// The address.
        address: Address,
        /// From the file.
        file: U256,
        /// From the node.
        node: U256,
    },
    /// The index is inconsistent (a missing block record inside the window).
    #[error("index is inconsistent: {0}")]
    Inconsistent(String),
    /// The node lacks a method or parameter form the chosen plan needs.
    #[error("{client} cannot serve the indexer: {source}")]
    NodeLacks {
        /// The node's `web3_clientVersion`.
        client: String,
        /// What it refused.
        source: NodeError,
    },
}

impl IndexerError {
    /// Errors that pause indexing instead of stopping it.
    fn is_transient(&self) -> bool {
        match self {
            Self::Node(e) => e.is_transient() || matches!(e, NodeError::Rpc { .. }),
            Self::Storage(e) => e.is_unavailable(),
            _ => false,
        }
    }
}

/// Follows a node and keeps the store's balances equal to the node's.
pub struct Indexer {
    node: NodeClient,
    store: Store,
    config: IndexerConfig,
    progress: Arc<Progress>,
}

/// Aborts a spawned task when dropped, so an early return never leaks a fetcher.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Periodic progress line: head, indexed, lag, speed, ETA.
struct ProgressLog {
    since: Instant,
    from_block: u64,
}

impl ProgressLog {
    const EVERY: Duration = Duration::from_secs(10);

    fn new(indexed: u64) -> Self {
        Self {
            since: Instant::now(),
            from_block: indexed,
        }
    }

    fn tick(&mut self, progress: &Progress) {
        let elapsed = self.since.elapsed();
        if elapsed < Self::EVERY {
            return;
        }
        let done = progress.indexed().saturating_sub(self.from_block);
        let rate = done as f64 / elapsed.as_secs_f64();
        let lag = progress.lag();
        let eta_secs = if rate > 0.0 {
            (lag as f64 / rate).round() as u64
        } else {
            0
        };
        tracing::info!(
            head = progress.head(),
            indexed = progress.indexed(),
            lag,
            blocks_per_sec = format!("{rate:.1}"),
            eta_secs,
            "indexing"
        );
        *self = Self::new(progress.indexed());
    }
}

/// Blocks fetched but not yet committed.
struct PendingBatch {
    blocks: Vec<BlockChanges>,
}

/// Resolves once a stop is requested; never, if no one can request one.
async fn stop_requested(shutdown: &mut watch::Receiver<bool>) {
    if shutdown.wait_for(|stop| *stop).await.is_err() {
        std::future::pending::<()>().await;
    }
}

impl Indexer {
    /// An indexer over `store`, following `node`.
    pub fn new(node: NodeClient, store: Store, config: IndexerConfig) -> Self {
        let progress = Arc::new(Progress::labelled(config.label.clone()));
        Self {
            node,
            store,
            config,
            progress,
        }
    }

    /// The live figures, for health checks.
    pub fn progress(&self) -> Arc<Progress> {
        self.progress.clone()
    }

    /// Runs until `shutdown` turns true, `until` is reached, or an error that
    /// waiting cannot fix. Node outages pause it; they never corrupt the index.
    pub async fn run(self, shutdown: watch::Receiver<bool>) -> Result<(), IndexerError> {
        crate::show_counters(&self.progress);
        let span = tracing::info_span!("chain", chain = %self.progress.label);
        self.run_in_span(shutdown).instrument(span).await
    }

    async fn run_in_span(self, mut shutdown: watch::Receiver<bool>) -> Result<(), IndexerError> {
        let mut failures = 0u32;
        let mut plan = None;
        loop {
            if *shutdown.borrow() {
                return Ok(());
            }
            let mut follow_shutdown = shutdown.clone();
            let attempt = async {
                let chosen = match plan {
                    Some(chosen) => chosen,
                    None => self.prepare().await?,
                };
                plan = Some(chosen);
                self.follow(chosen, &mut follow_shutdown).await
            };
            // A stop ends the attempt wherever it waits (a node call being
            // retried, a fetch): what it had not committed is fetched again
            // on the next start, and a commit already handed to RocksDB
            // completes whole or not at all.
            let outcome = tokio::select! {
                outcome = attempt => outcome,
                () = stop_requested(&mut shutdown) => return Ok(()),
            };
            match outcome {
                Ok(()) => return Ok(()),
                Err(error) if error.is_transient() => {
                    failures += 1;
                    let delay = Duration::from_millis(250u64 << failures.min(5));
                    if let IndexerError::Storage(_) = error {
                        self.progress
                            .count("weiport_indexer_storage_errors_total", 1);
                        tracing::error!(%error, ?delay, "indexing paused: the store refused a write (disk full?); nothing of the block was kept; retrying");
                    } else {
                        self.progress.count("weiport_indexer_node_errors_total", 1);
                        self.progress.set_node_failure(Some(error.to_string()));
                        tracing::warn!(%error, ?delay, "indexing paused: node unavailable or inconsistent; retrying");
                    }
                    tokio::select! {
                        _ = tokio::time::sleep(delay) => {}
                        _ = shutdown.changed() => {}
                    }
                }
                Err(IndexerError::Node(error @ NodeError::Unsupported { .. })) => {
                    let client = self
                        .node
                        .call::<_, String>("web3_clientVersion", ())
                        .await
                        .unwrap_or_else(|_| format!("the node at {}", self.node.url()));
                    return Err(IndexerError::NodeLacks {
                        client,
                        source: error,
                    });
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// Checks the chain, probes the node, bootstraps an empty index.
    async fn prepare(&self) -> Result<NodePlan, IndexerError> {
        let chain_id = self.node.chain_id().await?;
        if let Some(configured) = self.config.chain_id
            && configured != chain_id
        {
            return Err(IndexerError::NotTheConfiguredChain {
                configured,
                node: chain_id,
            });
        }
        let genesis = self
            .node
            .block(0)
            .await?
            .ok_or_else(|| NodeError::Malformed {
                method: "eth_getBlockByNumber",
                detail: "no genesis block".into(),
            })?;
        match (self.store.chain_id()?, self.store.genesis_hash()?) {
            (Some(stored), _) if stored != chain_id => {
                return Err(IndexerError::WrongChain {
                    stored: format!("chain id {stored}"),
                    node: format!("chain id {chain_id}"),
                });
            }
            (Some(_), Some(stored)) if stored != genesis.hash => {
                return Err(IndexerError::WrongChain {
                    stored: format!("genesis {stored}"),
                    node: format!("genesis {}", genesis.hash),
                });
            }
            _ => {}
        }
        let head = self.node.block_number().await?;
        let plan = source::probe(&self.node, head, self.config.balance_source).await?;
        if plan.balances == BalanceSource::Touched {
            tracing::warn!(
                %plan,
                "node offers no tracing at all: internal transfers to otherwise untouched addresses are MISSED"
            );
        } else {
            tracing::info!(%plan, "node plan");
        }
        if self.config.internal_transactions && !plan.call_traces {
            tracing::warn!(
                "node has no callTracer: internal transfers are not indexed (txlistinternal answers that)"
            );
        }
        if self.store.chain_id()?.is_none() {
            self.bootstrap(chain_id, &genesis, &plan).await?;
        }
        self.reconcile_history_marks(&plan).await?;
        Ok(plan)
    }

    /// Records from which block each kept history begins (see
    /// [`crate::transfers::history_marks`]).
    async fn reconcile_history_marks(&self, plan: &NodePlan) -> Result<(), IndexerError> {
        let cursor = self
            .store
            .cursor()?
            .ok_or_else(|| IndexerError::Inconsistent("bootstrapped index has no cursor".into()))?;
        let histories = self.config.histories(plan);
        if let Some(batch) = crate::transfers::history_marks(&self.store, &cursor, histories)? {
            commit(batch).await?;
        }
        Ok(())
    }

    async fn bootstrap(
        &self,
        chain_id: u64,
        genesis: &crate::node::BlockSummary,
        plan: &NodePlan,
    ) -> Result<(), IndexerError> {
        let start = self.config.start_block;
        let mut batch = self.store.index_batch();
        let cursor = if start == 0 {
            let seeded = self.genesis_balances(genesis, plan).await?;
            for (address, wei) in &seeded {
                batch.set_balance(address, 0, wei);
            }
            let touched = seeded.iter().map(|(a, _)| *a).collect();
            batch.put_block(
                0,
                &BlockRecord {
                    hash: genesis.hash,
                    parent_hash: genesis.parent_hash,
                    touched,
                },
            );
            tracing::info!(chain_id, accounts = seeded.len(), "index starts at genesis");
            Cursor {
                number: 0,
                hash: genesis.hash,
            }
        } else {
            let anchor = self
                .node
                .block(start - 1)
                .await?
                .ok_or_else(|| NodeError::Malformed {
                    method: "eth_getBlockByNumber",
                    detail: format!("start_block {start} is above the node's head; waiting"),
                })?;
            batch.put_block(
                start - 1,
                &BlockRecord {
                    hash: anchor.hash,
                    parent_hash: anchor.parent_hash,
                    touched: vec![],
                },
            );
            tracing::info!(
                chain_id,
                start,
                "index starts above genesis: addresses not touched since then have no known balance"
            );
            Cursor {
                number: start - 1,
                hash: anchor.hash,
            }
        };
        batch.set_chain(chain_id, &genesis.hash, start);
        batch.set_cursor(&cursor);
        commit(batch).await?;
        Ok(())
    }

    async fn genesis_balances(
        &self,
        genesis: &crate::node::BlockSummary,
        plan: &NodePlan,
    ) -> Result<Vec<(Address, U256)>, IndexerError> {
        let Some(path) = &self.config.genesis_file else {
            let accounts = self.node.accounts().await?;
            let balances = self
                .stable_genesis_balances(&accounts, genesis, plan)
                .await?;
            return Ok(accounts
                .into_iter()
                .zip(balances)
                .filter(|(_, wei)| !wei.is_zero())
                .collect());
        };
        let alloc: Vec<(Address, U256)> = read_genesis_alloc(path)?
            .into_iter()
            .filter(|(_, w)| !w.is_zero())
            .collect();
        let addresses: Vec<Address> = alloc.iter().map(|(a, _)| *a).collect();
        match self
            .stable_genesis_balances(&addresses, genesis, plan)
            .await
        {
            Ok(node_balances) => {
                for ((address, file), node) in alloc.iter().zip(node_balances) {
                    if *file != node {
                        return Err(IndexerError::GenesisMismatch {
                            address: *address,
                            file: *file,
                            node,
                        });
                    }
                }
            }
            Err(NodeError::StateUnavailable { .. }) => {
                tracing::warn!(
                    "node has no genesis state to check the genesis file against; trusting the file"
                );
            }
            Err(other) => return Err(other.into()),
        }
        Ok(alloc)
    }

    /// Reads genesis balances so that a block being mined meanwhile cannot
    /// leak into them: some dev nodes (anvil) answer state queries for their
    /// head block from the live state, which a block being mined is changing.
    /// Two equal reads with the same head before and after are accepted.
    async fn stable_genesis_balances(
        &self,
        addresses: &[Address],
        genesis: &crate::node::BlockSummary,
        plan: &NodePlan,
    ) -> Result<Vec<U256>, NodeError> {
        let block = (0, genesis.hash);
        loop {
            let head_before = self.node.block_number().await?;
            let first = source::balances_after(&self.node, plan, block, addresses).await?;
            tokio::time::sleep(Duration::from_millis(20)).await;
            let second = source::balances_after(&self.node, plan, block, addresses).await?;
            if first == second && self.node.block_number().await? == head_before {
                return Ok(first);
            }
        }
    }

    async fn follow(
        &self,
        plan: NodePlan,
        shutdown: &mut watch::Receiver<bool>,
    ) -> Result<(), IndexerError> {
        let mut cursor = self
            .store
            .cursor()?
            .ok_or_else(|| IndexerError::Inconsistent("bootstrapped index has no cursor".into()))?;
        self.progress.set_indexed(cursor.number);
        self.progress.set_following();
        let mut log = ProgressLog::new(cursor.number);
        loop {
            if *shutdown.borrow() {
                return Ok(());
            }
            if self
                .config
                .until
                .is_some_and(|until| cursor.number >= until)
            {
                tracing::info!(indexed = cursor.number, "reached --until");
                return Ok(());
            }
            let head = self.node.block_number().await?;
            self.progress.set_head(head);
            if !self.is_canonical(&cursor).await? {
                cursor = self.rewind(cursor).await?;
                continue;
            }
            let target = self.config.until.map_or(head, |until| until.min(head));
            if cursor.number >= target {
                tokio::select! {
                    _ = tokio::time::sleep(self.config.poll_interval) => {}
                    _ = shutdown.changed() => {}
                }
                continue;
            }
            cursor = self
                .catch_up(plan, cursor, target, shutdown, &mut log)
                .await?;
        }
    }

    async fn is_canonical(&self, cursor: &Cursor) -> Result<bool, IndexerError> {
        Ok(self
            .node
            .block(cursor.number)
            .await?
            .is_some_and(|b| b.hash == cursor.hash))
    }

    /// Fetches `cursor+1..=target` concurrently and commits in order. Returns
    /// the new cursor; stops early at a reorganisation (after undoing it).
    async fn catch_up(
        &self,
        plan: NodePlan,
        mut cursor: Cursor,
        target: u64,
        shutdown: &watch::Receiver<bool>,
        log: &mut ProgressLog,
    ) -> Result<Cursor, IndexerError> {
        let (tx, mut rx) = mpsc::channel(self.config.concurrency * 4);
        let node = self.node.clone();
        let concurrency = self.config.concurrency;
        let histories = self.config.histories(&plan);
        let store = self.store.clone();
        let first = cursor.number + 1;
        let _fetcher = AbortOnDrop(tokio::spawn(async move {
            let mut blocks = futures::stream::iter(first..=target)
                .map(|number| fetch_block(&node, plan, number, histories, &store))
                .buffered(concurrency);
            while let Some(fetched) = blocks.next().await {
                let failed = fetched.is_err();
                if tx.send(fetched).await.is_err() || failed {
                    break;
                }
            }
        }));

        let mut pending = PendingBatch { blocks: Vec::new() };
        while let Some(fetched) = rx.recv().await {
            let changes = match fetched {
                Ok(changes) => changes,
                Err(error) => {
                    self.commit_pending(&mut pending, &cursor).await?;
                    return Err(error.into());
                }
            };
            if changes.parent_hash != cursor.hash {
                self.commit_pending(&mut pending, &cursor).await?;
                tracing::warn!(
                    block = changes.number,
                    "parent hash does not match the indexed chain: reorganisation"
                );
                return self.rewind(cursor).await;
            }
            cursor = Cursor {
                number: changes.number,
                hash: changes.hash,
            };
            pending.blocks.push(changes);
            if pending.blocks.len() >= self.config.batch_blocks
                || rx.is_empty()
                || *shutdown.borrow()
            {
                self.commit_pending(&mut pending, &cursor).await?;
                log.tick(&self.progress);
                if *shutdown.borrow() {
                    break;
                }
            }
        }
        self.commit_pending(&mut pending, &cursor).await?;
        Ok(cursor)
    }

    /// Writes the pending blocks, their undo lists and the cursor in one batch.
    async fn commit_pending(
        &self,
        pending: &mut PendingBatch,
        cursor: &Cursor,
    ) -> Result<(), IndexerError> {
        if pending.blocks.is_empty() {
            return Ok(());
        }
        let mut batch = self.store.index_batch();
        let first = pending.blocks[0].number;
        for block in &pending.blocks {
            for (address, wei) in &block.balances {
                batch.set_balance(address, block.number, wei);
            }
            block.history.write(&mut batch, block.number);
            let keep_undo =
                cursor.number.saturating_sub(block.number) <= self.config.max_reorg_depth;
            let touched = if keep_undo {
                block.balances.iter().map(|(a, _)| *a).collect()
            } else {
                Vec::new()
            };
            batch.put_block(
                block.number,
                &BlockRecord {
                    hash: block.hash,
                    parent_hash: block.parent_hash,
                    touched,
                },
            );
        }
        // Undo lists are needed only inside the reorg window: drop the ones
        // that just left it.
        let window_start = cursor.number.saturating_sub(self.config.max_reorg_depth);
        let leaving =
            first.saturating_sub(self.config.max_reorg_depth + 1)..window_start.min(first);
        self.prune_undo(&mut batch, leaving)?;
        batch.set_cursor(cursor);
        commit(batch).await?;
        let count = pending.blocks.len() as u64;
        pending.blocks.clear();
        self.progress.count("weiport_indexer_blocks_total", count);
        self.progress.set_indexed(cursor.number);
        Ok(())
    }

    fn prune_undo(
        &self,
        batch: &mut IndexBatch,
        blocks: std::ops::Range<u64>,
    ) -> Result<(), IndexerError> {
        for number in blocks {
            if let Some(mut record) = self.store.block(number)?
                && !record.touched.is_empty()
            {
                record.touched.clear();
                batch.put_block(number, &record);
            }
        }
        Ok(())
    }

    /// Walks back from `tip` to the newest block the node still agrees with,
    /// undoes everything after it, and returns it as the new cursor.
    async fn rewind(&self, tip: Cursor) -> Result<Cursor, IndexerError> {
        let floor = self.store.index_start()?.unwrap_or(0).saturating_sub(1);
        let mut number = tip.number;
        let ancestor = loop {
            if tip.number - number > self.config.max_reorg_depth {
                return Err(IndexerError::ReorgTooDeep {
                    tip: tip.number,
                    max: self.config.max_reorg_depth,
                });
            }
            let stored = self.store.block(number)?.ok_or_else(|| {
                IndexerError::Inconsistent(format!("no record of indexed block {number}"))
            })?;
            if self
                .node
                .block(number)
                .await?
                .is_some_and(|b| b.hash == stored.hash)
            {
                break Cursor {
                    number,
                    hash: stored.hash,
                };
            }
            if number <= floor {
                return Err(IndexerError::ReorgBelowStart { floor });
            }
            number -= 1;
        };
        let mut batch = self.store.index_batch();
        let mut touched = BTreeSet::new();
        for dropped in ancestor.number + 1..=tip.number {
            let record = self.store.block(dropped)?.ok_or_else(|| {
                IndexerError::Inconsistent(format!("no record of indexed block {dropped}"))
            })?;
            touched.extend(record.touched);
            batch.delete_block(dropped);
            batch.delete_block_transactions(dropped)?;
            batch.delete_block_transfers(dropped)?;
        }
        for address in &touched {
            batch.rewind_address(address, ancestor.number)?;
        }
        batch.set_cursor(&ancestor);
        commit(batch).await?;
        self.progress.count("weiport_indexer_reorgs_total", 1);
        self.progress.set_indexed(ancestor.number);
        tracing::warn!(
            dropped = tip.number - ancestor.number,
            ancestor = ancestor.number,
            addresses = touched.len(),
            "chain reorganisation undone; re-indexing the new branch"
        );
        Ok(ancestor)
    }
}

async fn fetch_block(
    node: &NodeClient,
    plan: NodePlan,
    number: u64,
    histories: Histories,
    store: &Store,
) -> Result<BlockChanges, NodeError> {
    let block = node
        .block(number)
        .await?
        .ok_or_else(|| NodeError::Malformed {
            method: "eth_getBlockByNumber",
            detail: format!("block {number} vanished (chain reorganised)"),
        })?;
    let mut changes = source::block_changes(node, &plan, &block).await?;
    changes.history =
        crate::transfers::block_history(node, &plan, &block, histories, store).await?;
    Ok(changes)
}

/// Commits on a blocking thread: the synced WAL write must not stall the runtime.
async fn commit(batch: IndexBatch) -> Result<(), StorageError> {
    tokio::task::spawn_blocking(move || batch.commit())
        .await
        .unwrap_or_else(|join| std::panic::resume_unwind(join.into_panic()))
}
