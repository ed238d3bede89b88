//! What the protocol needs of the engine, and the sequencer's answer.

use futures::future::BoxFuture;
use weiport_exchange::sequencer::{Replication, Sequencer};
use weiport_storage::JournalEntry;

/// The engine as the protocol drives it: how far its log goes, applying
/// the primary's commands, and switching between leading and following.
pub trait ReplicatedEngine: Send + Sync + 'static {
    /// Commands in the engine's log.
    fn applied_commands(&self) -> u64;
    /// Applies `entry`'s commands as the primary sequenced them; the
    /// reason when they cannot be (this build cannot read them, the log
    /// does not continue where they start).
    fn apply_sequenced(&self, entry: JournalEntry) -> BoxFuture<'_, Result<(), String>>;
    /// Takes clients' commands, each batch made durable through `replication`.
    fn lead(&self, replication: Box<dyn Replication>);
    /// Refuses clients' commands; applies only the journal's.
    fn follow(&self);
    /// Resolves once the engine found the journal moved on without it.
    fn deposed(&self) -> BoxFuture<'_, ()>;
}

impl ReplicatedEngine for Sequencer {
    fn applied_commands(&self) -> u64 {
        self.view().sequence
    }

    fn apply_sequenced(&self, entry: JournalEntry) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            Sequencer::apply_sequenced(self, entry)
                .await
                .map_err(|e| e.to_string())
        })
    }

    fn lead(&self, replication: Box<dyn Replication>) {
        Sequencer::lead(self, replication);
    }

    fn follow(&self) {
        Sequencer::follow(self);
    }

    fn deposed(&self) -> BoxFuture<'_, ()> {
        Box::pin(Sequencer::deposed(self))
    }
}
