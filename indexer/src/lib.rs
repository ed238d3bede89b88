//! weiport's indexer: follows an Ethereum node over JSON-RPC and keeps every
//! address's exact Wei balance in storage, across reorganisations and crashes.

#![warn(unreachable_pub)]

pub mod genesis;
pub mod node;
mod pipeline;
mod plan;
mod progress;
mod reads;
pub mod source;
mod transactions;
mod transfers;

pub use node::{NodeClient, NodeError, NodeOptions, StateAt};
pub use pipeline::{Indexer, IndexerConfig, IndexerError, Progress};
pub use plan::{BalanceSource, NodePlan, ReceiptSource, StateReads};

/// Registers the indexer's counters at zero: an alert on their increase
/// needs a series before the first event.
fn show_counters(progress: &Progress) {
    for counter in [
        "weiport_indexer_blocks_total",
        "weiport_indexer_node_errors_total",
        "weiport_indexer_reorgs_total",
        "weiport_indexer_storage_errors_total",
    ] {
        progress.count(counter, 0);
    }
}
