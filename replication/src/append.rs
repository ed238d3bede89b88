//! The primary's appends: each batch of the engine thread into the journal.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use weiport_exchange::sequencer::{Deposed, Replication};
use weiport_journal::{Journal, JournalError};
use weiport_storage::JournalEntry;

use crate::{ClusterStatus, Joined};

/// The engine thread's side: each batch appended after the journal's last
/// known entry, retried (under the same id) until the servers take it.
pub struct JournalReplication {
    journal: Journal,
    runtime: tokio::runtime::Handle,
    last: u64,
    writer: String,
    status: Arc<ClusterStatus>,
}

impl JournalReplication {
    /// Appends after the entry the log caught up to, as this run's writer.
    pub fn new(joined: &Joined, runtime: tokio::runtime::Handle) -> Self {
        Self::after(
            joined.journal.clone(),
            runtime,
            joined.caught_up,
            joined.writer.clone(),
            joined.status.clone(),
        )
    }

    /// Appends after entry `last`, as `writer`.
    pub(crate) fn after(
        journal: Journal,
        runtime: tokio::runtime::Handle,
        last: u64,
        writer: String,
        status: Arc<ClusterStatus>,
    ) -> Self {
        Self {
            journal,
            runtime,
            last,
            writer,
            status,
        }
    }
}

impl Replication for JournalReplication {
    fn replicate(&mut self, entry: &JournalEntry) -> Result<(), Deposed> {
        let id = format!("{}-{}", self.writer, entry.first_sequence);
        let bytes = bytes::Bytes::from(entry.encode());
        let mut attempts = 0u32;
        loop {
            let appended =
                self.runtime
                    .block_on(self.journal.append(self.last, &id, bytes.clone()));
            match appended {
                Ok(sequence) => {
                    self.last = sequence;
                    self.status.applied_entry.store(sequence, Ordering::Release);
                    return Ok(());
                }
                Err(JournalError::Fenced { expected, last }) => {
                    tracing::error!(
                        expected,
                        last,
                        "the journal moved on: another process appended"
                    );
                    return Err(Deposed);
                }
                Err(error) => {
                    // Nothing is acknowledged until the journal has it:
                    // the batch waits, and so do the commands behind it.
                    if attempts.is_multiple_of(50) {
                        tracing::warn!(%error, "the journal does not take the batch yet; retrying");
                    }
                    attempts += 1;
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
    }
}
