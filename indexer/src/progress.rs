//! The indexer's live figures: what `/readyz`, the status page and the
//! metrics read while it runs.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Live figures shared with `/readyz` and the metrics.
#[derive(Debug, Default)]
pub struct Progress {
    head: AtomicU64,
    indexed: AtomicU64,
    /// 1 once the index is bootstrapped and following.
    following: AtomicU64,
    /// The `chain` label of the metrics.
    pub(crate) label: String,
    /// Why the last call to the node failed, until it answers again.
    node_failure: Mutex<Option<String>>,
}

impl Progress {
    /// Figures of the chain labelled `label`, all zero.
    pub(crate) fn labelled(label: String) -> Self {
        Self {
            label,
            ..Self::default()
        }
    }

    /// The chain's label in metrics and logs.
    pub fn label(&self) -> &str {
        &self.label
    }

    pub(crate) fn count(&self, counter: &'static str, n: u64) {
        metrics::counter!(counter, "chain" => self.label.clone()).increment(n);
    }

    /// Why the node is failing (unreachable, or answering wrongly) while
    /// the indexer waits to retry; none once it answers again.
    pub fn node_failure(&self) -> Option<String> {
        self.node_failure
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn set_node_failure(&self, failure: Option<String>) {
        *self
            .node_failure
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = failure;
    }

    /// The node's head as last seen.
    pub fn head(&self) -> u64 {
        self.head.load(Ordering::Relaxed)
    }

    /// The last committed block.
    pub fn indexed(&self) -> u64 {
        self.indexed.load(Ordering::Relaxed)
    }

    /// Blocks between the node's head and the index.
    pub fn lag(&self) -> u64 {
        self.head().saturating_sub(self.indexed())
    }

    /// Whether bootstrapping is done and blocks are being followed.
    pub fn is_following(&self) -> bool {
        self.following.load(Ordering::Relaxed) == 1
    }

    pub(crate) fn set_following(&self) {
        self.following.store(1, Ordering::Relaxed);
    }

    pub(crate) fn set_head(&self, head: u64) {
        self.set_node_failure(None);
        self.head.store(head, Ordering::Relaxed);
        let chain = self.label.clone();
        metrics::gauge!("weiport_indexer_head_block", "chain" => chain.clone()).set(head as f64);
        metrics::gauge!("weiport_indexer_lag_blocks", "chain" => chain).set(self.lag() as f64);
    }

    pub(crate) fn set_indexed(&self, indexed: u64) {
        self.indexed.store(indexed, Ordering::Relaxed);
        let chain = self.label.clone();
        metrics::gauge!("weiport_indexer_indexed_block", "chain" => chain.clone())
            .set(indexed as f64);
        metrics::gauge!("weiport_indexer_lag_blocks", "chain" => chain).set(self.lag() as f64);
    }
}
