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

/// Whose commands this engine applies, and where they are made durable.
pub enum Role {
    /// A process alone: clients' commands, made durable on this disk.
    Alone,
    /// The primary: clients' commands, made durable through the journal
    /// first, then on this disk.
    Leads(Box<dyn Replication>),
    /// A follower: only the journal's commands; clients' are refused.
    Follows,
}

impl Role {
    /// Whether this role refuses clients' commands.
    pub fn follows(&self) -> bool {
        matches!(self, Self::Follows)
    }
}
