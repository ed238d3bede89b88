//! This process's part, played until it stops: leading while it holds the
//! lease, following the journal otherwise.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use futures::StreamExt;
use weiport_journal::{Journal, LeaseState};
use weiport_storage::JournalEntry;

use crate::{ClusterStatus, JournalReplication, ReplicatedEngine};

/// Leads while this process holds the lease (renewing it every third of
/// its length), follows the journal otherwise; a follower that finds the
/// lease lapsed applies the journal to its end, takes the lease and leads;
/// a primary that finds it taken follows (the journal's fencing already
/// kept it from appending).
pub async fn play_role<E: ReplicatedEngine>(
    journal: Journal,
    engine: Arc<E>,
    status: Arc<ClusterStatus>,
    writer: String,
) {
    let mut term = 0u32;
    loop {
        if status.following() {
            follow(&journal, engine.as_ref(), &status).await;
            term += 1;
            let last = status.applied_entry.load(Ordering::Acquire);
            let replication = JournalReplication::after(
                journal.clone(),
                tokio::runtime::Handle::current(),
                last,
                format!("{writer}-{term}"),
                status.clone(),
            );
            engine.lead(Box::new(replication));
            status.set_following(false);
            tracing::warn!(
                entry = last,
                commands = engine.applied_commands(),
                "took the primary's lease: this process leads the exchange"
            );
        } else {
            lead(&status, engine.as_ref()).await;
            engine.follow();
            status.set_following(true);
        }
    }
}

/// Renews the lease until another process holds it, or until the engine
/// finds the journal moved on without it (a primary whose lease lapsed
/// appended first): either way this process must follow the journal
/// before it may lead again.
async fn lead<E: ReplicatedEngine>(status: &ClusterStatus, engine: &E) {
    let every = status.lease.ttl() / 3;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = engine.deposed() => {
                tracing::warn!("the journal moved on without this process: following it to its end");
                return;
            }
        }
        match status.lease.acquire().await {
            Ok(LeaseState::Held { .. }) => {}
            Ok(LeaseState::HeldBy(holder)) => {
                tracing::warn!(primary = %holder.holder, "the primary's lease was taken by another process: following it");
                return;
            }
            Err(error) => tracing::warn!(%error, "renewing the primary's lease failed"),
        }
    }
}

/// Applies every journal entry after the last applied, as the primary
/// sequenced it; returns once this process holds the lease and has applied
/// the journal to its end.
async fn follow<E: ReplicatedEngine>(journal: &Journal, engine: &E, status: &ClusterStatus) {
    let mut tick = tokio::time::interval(status.lease.ttl() / 3);
    loop {
        let next = status.applied_entry.load(Ordering::Acquire) + 1;
        let entries = match journal.entries(next).await {
            Ok(entries) => entries,
            Err(error) => {
                tracing::warn!(%error, "the journal is unreachable; retrying");
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        let mut entries = std::pin::pin!(entries);
        loop {
            tokio::select! {
                item = entries.next() => match item {
                    Some(Ok((sequence, bytes))) => {
                        // Not applied (the engine was rebuilding, or cannot
                        // read it): read again from the last entry applied.
                        if !apply(engine, status, sequence, &bytes).await {
                            break;
                        }
                    }
                    Some(Err(error)) => {
                        tracing::warn!(%error, "reading the journal failed; resuming");
                        break;
                    }
                    None => break,
                },
                _ = tick.tick() => {
                    // Holding the lease but not caught up: it is renewed
                    // while the entries are read, and taken up again next tick.
                    if matches!(status.lease.acquire().await, Ok(LeaseState::Held { .. }))
                        && caught_up(journal, engine, status).await
                    {
                        return;
                    }
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// With the lease held: applies what is left of the journal; whether this
/// process is now at its end.
async fn caught_up<E: ReplicatedEngine>(
    journal: &Journal,
    engine: &E,
    status: &ClusterStatus,
) -> bool {
    let Ok(last) = journal.last_sequence().await else {
        return false;
    };
    let next = status.applied_entry.load(Ordering::Acquire) + 1;
    if next > last {
        return true;
    }
    let Ok(entries) = journal.entries(next).await else {
        return false;
    };
    let mut entries = std::pin::pin!(entries);
    while status.applied_entry.load(Ordering::Acquire) < last {
        match entries.next().await {
            Some(Ok((sequence, bytes))) => {
                if !apply(engine, status, sequence, &bytes).await {
                    return false;
                }
            }
            _ => return false,
        }
    }
    true
}

/// Applies journal entry `sequence` (the commands this log lacks of it);
/// whether it was.
async fn apply<E: ReplicatedEngine>(
    engine: &E,
    status: &ClusterStatus,
    sequence: u64,
    bytes: &[u8],
) -> bool {
    let entry = match JournalEntry::decode(bytes) {
        Ok(entry) => entry,
        Err(error) => {
            tracing::error!(%error, sequence, "a journal entry this build cannot read: following stopped");
            return false;
        }
    };
    let applied = engine.applied_commands();
    let skip = applied.saturating_sub(entry.first_sequence - 1) as usize;
    if skip < entry.commands.len() {
        let tail = JournalEntry {
            first_sequence: entry.first_sequence + skip as u64,
            commands: entry.commands[skip..].to_vec(),
        };
        if let Err(error) = engine.apply_sequenced(tail).await {
            tracing::error!(%error, sequence, "the journal's entry could not be applied: following stopped");
            return false;
        }
    }
    status.applied_entry.store(sequence, Ordering::Release);
    true
}
