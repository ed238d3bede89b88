//! The exchange's failover protocol over its replicated journal.
//!
//! A process joins a cluster by bringing its command log level with the
//! journal ([`join`]), then plays its part until it stops ([`play_role`]):
//! the holder of the primary's lease sequences clients' commands and
//! appends each batch to the journal before answering
//! ([`JournalReplication`]); the others apply the journal's entries as the
//! primary sequenced them, forward clients' commands to it
//! ([`ForwardToPrimary`]), and take the lease when it lapses, after
//! applying the journal to its end. The journal fences a deposed writer:
//! it can never append after another has.
//!
//! The engine is reached through [`ReplicatedEngine`], a narrow trait the
//! exchange's sequencer implements; the protocol's tests drive it with an
//! engine of their own against a real JetStream server.

#![warn(unreachable_pub)]

mod append;
mod catch_up;
mod engine;
mod forward;
mod role;
mod status;

pub use append::JournalReplication;
pub use catch_up::catch_up;
pub use engine::ReplicatedEngine;
pub use forward::ForwardToPrimary;
pub use role::play_role;
pub use status::{ClusterStatus, JoinSettings, Joined, join, join_with_retries};

/// Why joining the cluster failed.
#[derive(Debug, thiserror::Error)]
pub enum ReplicationError {
    /// The journal refused or did not answer.
    #[error("the exchange's journal: {0}")]
    Journal(#[from] weiport_journal::JournalError),
    /// The data dir's store failed.
    #[error("the data dir: {0}")]
    Storage(#[from] weiport_storage::StorageError),
    /// The journal and this data dir's command log tell different histories.
    #[error("{0}")]
    Diverged(String),
}
