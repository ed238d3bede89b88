//! weiport's indexer: follows an Ethereum node over JSON-RPC and keeps every
//! address's exact Wei balance in storage, across reorganisations and crashes.

pub mod genesis;
pub mod node;
mod pipeline;
mod plan;
mod reads;
pub mod source;
mod transactions;
mod transfers;

pub use node::{NodeClient, NodeError, NodeOptions, StateAt};
pub use pipeline::{Indexer, IndexerConfig, IndexerError, Progress};
pub use plan::{BalanceSource, NodePlan, ReceiptSource, StateReads};
