//! The exchange's replicated journal wired to its engine: the catch-up of
//! this process's command log from the journal before the engine starts,
//! and the engine thread's appends.

use std::time::Duration;

use anyhow::Context;
use futures::StreamExt;
use weiport_exchange::sequencer::{Deposed, Replication};
use weiport_journal::{Journal, JournalConfig, JournalError};
use weiport_storage::{CommandRecord, JournalEntry, Store};

/// Commands per entry when a local log is first copied into an empty journal.
const SEED_BATCH: usize = 1024;

/// Opens the journal at `urls`.
pub async fn open_journal(urls: &[String], timeout: Duration) -> anyhow::Result<Journal> {
    let config = JournalConfig {
        urls: urls.to_vec(),
        stream: "WEIPORT_EXCHANGE".into(),
        replicas: urls.len().min(3),
        timeout,
    };
    Journal::open(&config)
        .await
        .context("opening the exchange's journal (cluster.nats_urls)")
}

/// Brings `store`'s command log level with the journal: the commands the
/// journal has and the log lacks are written to it (a fresh data dir takes
/// the whole history); a log older than an empty journal is copied into it.
/// The journal's last sequence, where this process's appends continue.
pub async fn catch_up(journal: &Journal, store: &Store, writer: &str) -> anyhow::Result<u64> {
    let last = journal.last_sequence().await?;
    let local = store.last_command_sequence()?;
    if last == 0 {
        return seed(journal, store, writer).await;
    }
    let mut entries = journal.entries(1).await?;
    let mut journal_commands = 0;
    let mut copied = 0;
    while let Some(next) = entries.next().await {
        let (sequence, bytes) = next?;
        let entry = JournalEntry::decode(&bytes).context("a journal entry")?;
        let end = entry.first_sequence + entry.commands.len() as u64;
        anyhow::ensure!(
            entry.first_sequence == journal_commands + 1,
            "journal entry {sequence} starts at command {}, after command {journal_commands}",
            entry.first_sequence
        );
        journal_commands = end - 1;
        if journal_commands > local {
            let skip = local.saturating_sub(entry.first_sequence - 1) as usize;
            let tail = JournalEntry {
                first_sequence: entry.first_sequence + skip as u64,
                commands: entry.commands[skip..].to_vec(),
            };
            store.append_replicated(&tail)?;
            copied += tail.commands.len();
        }
        if sequence >= last {
            break;
        }
    }
    anyhow::ensure!(
        local <= journal_commands,
        "the data dir's command log holds {local} commands, the journal {journal_commands}: this log was not made through the journal"
    );
    tracing::info!(
        entries = last,
        commands = journal_commands,
        copied,
        "command log caught up with the journal"
    );
    Ok(last)
}

/// Copies a local log into an empty journal (the exchange becoming replicated).
async fn seed(journal: &Journal, store: &Store, writer: &str) -> anyhow::Result<u64> {
    let commands: Vec<(u64, CommandRecord)> = store.commands().collect::<Result<_, _>>()?;
    let mut last = 0;
    for chunk in commands.chunks(SEED_BATCH) {
        let entry = JournalEntry {
            first_sequence: chunk[0].0,
            commands: chunk.iter().map(|(_, command)| command.clone()).collect(),
        };
        let id = format!("{writer}-{}", entry.first_sequence);
        last = journal.append(last, &id, entry.encode().into()).await?;
    }
    if !commands.is_empty() {
        tracing::info!(
            commands = commands.len(),
            entries = last,
            "the local command log copied into the empty journal"
        );
    }
    Ok(last)
}

/// The engine thread's side: each batch appended after the journal's last
/// known entry, retried (under the same id) until the servers take it.
pub struct JournalReplication {
    journal: Journal,
    runtime: tokio::runtime::Handle,
    last: u64,
    writer: String,
}

impl JournalReplication {
    /// Appends after entry `last`, as `writer` (unique to this run of this process).
    pub fn new(
        journal: Journal,
        runtime: tokio::runtime::Handle,
        last: u64,
        writer: String,
    ) -> Self {
        Self {
            journal,
            runtime,
            last,
            writer,
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
