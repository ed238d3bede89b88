//! A data dir's command log brought level with the journal before the
//! engine starts.

use futures::StreamExt;
use weiport_journal::Journal;
use weiport_storage::{CommandRecord, JournalEntry, Store};

use crate::ReplicationError;

/// Commands per entry when a local log is first copied into an empty journal.
const SEED_BATCH: usize = 1024;

/// Brings `store`'s command log level with the journal: the commands the
/// journal has and the log lacks are written to it (a fresh data dir takes
/// the whole history); a log older than an empty journal is copied into it.
/// The journal's last sequence, where this process's appends continue.
pub async fn catch_up(
    journal: &Journal,
    store: &Store,
    writer: &str,
) -> Result<u64, ReplicationError> {
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
        let entry = JournalEntry::decode(&bytes).map_err(|error| {
            ReplicationError::Diverged(format!("journal entry {sequence} cannot be read: {error}"))
        })?;
        let end = entry.first_sequence + entry.commands.len() as u64;
        if entry.first_sequence != journal_commands + 1 {
            return Err(ReplicationError::Diverged(format!(
                "journal entry {sequence} starts at command {}, after command {journal_commands}",
                entry.first_sequence
            )));
        }
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
    if local > journal_commands {
        return Err(ReplicationError::Diverged(format!(
            "the data dir's command log holds {local} commands, the journal {journal_commands}: this log was not made through the journal"
        )));
    }
    tracing::info!(
        entries = last,
        commands = journal_commands,
        copied,
        "command log caught up with the journal"
    );
    Ok(last)
}

/// Copies a local log into an empty journal (the exchange becoming replicated).
async fn seed(journal: &Journal, store: &Store, writer: &str) -> Result<u64, ReplicationError> {
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
