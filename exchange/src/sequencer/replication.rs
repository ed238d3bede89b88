//! Where a primary's batches go to be durable beyond this machine before
//! anyone is told they happened. The engine knows no transport: the server
//! plugs one in (the replicated journal), or none for a process alone.

use weiport_storage::JournalEntry;

/// The replicated journal, as the engine thread sees it.
pub trait Replication: Send {
    /// Makes `entry` durable in the journal, waiting as long as that takes;
    /// `Err` when this process may no longer append (another primary has).
    fn replicate(&mut self, entry: &JournalEntry) -> Result<(), Deposed>;
}

/// Another process appended to the journal: this one is not the primary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("another process is the exchange's primary")]
pub struct Deposed;
