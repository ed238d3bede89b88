//! Following the others: the change feed applied as it arrives, the
//! version compared every poll (a process that missed messages, or was cut
//! off, reloads before it trusts its table again), a Redis that lost its
//! data given back what this process holds.

use std::sync::{Arc, Weak};

use futures::StreamExt;

use crate::Access;
use crate::clock::now_ms;
use crate::cluster::{Redis, SharedError, names, table};

/// Starts following the cluster, if `access` is in one; stops when
/// `access` is dropped.
pub(crate) fn spawn(access: &Arc<Access>) {
    let Some(redis) = access.cluster().cloned() else {
        return;
    };
    let access = Arc::downgrade(access);
    tokio::spawn(async move { follow(access, redis).await });
}

/// What this process has applied of Redis's table.
#[derive(Default)]
struct Applied {
    /// The Redis lifetime it was applied from.
    epoch: Option<String>,
    /// Every change up to this version is applied.
    version: u64,
    /// The Redis lifetime this process's budgets were put back into: once
    /// per lifetime, however often the resync is retried (each put-back
    /// adds to the window counters).
    restored: Option<String>,
}

async fn follow(access: Weak<Access>, redis: Arc<Redis>) {
    let poll = redis.config().poll;
    let mut applied = Applied::default();
    loop {
        if access.strong_count() == 0 {
            return;
        }
        match redis.subscribe().await {
            Ok(feed) => {
                follow_feed(&access, &redis, feed, &mut applied).await;
            }
            Err(error) => {
                tracing::debug!(%error, "change feed unavailable");
            }
        }
        tokio::time::sleep(poll).await;
    }
}

/// Applies the feed until it breaks. Subscribed before the first sync, so
/// no change falls between the snapshot and the first message.
async fn follow_feed(
    access: &Weak<Access>,
    redis: &Redis,
    feed: redis::aio::PubSub,
    applied: &mut Applied,
) {
    let Some(strong) = access.upgrade() else {
        return;
    };
    if let Err(error) = sync(&strong, redis, applied).await {
        tracing::warn!(%error, "could not load the shared key table");
        return;
    }
    drop(strong);
    let mut messages = feed.into_on_message();
    let mut tick = tokio::time::interval(redis.config().poll);
    loop {
        tokio::select! {
            message = messages.next() => {
                let Some(message) = message else {
                    tracing::warn!("change feed lost: serving on the cached key table");
                    return;
                };
                let Some(access) = access.upgrade() else { return };
                let Ok(text) = message.get_payload::<String>() else { continue };
                if let Err(error) = apply(&access, redis, &text, applied).await {
                    tracing::debug!(%error, "change not applied; the next poll reloads");
                }
            }
            _ = tick.tick() => {
                let Some(access) = access.upgrade() else { return };
                if let Err(error) = check(&access, redis, applied).await {
                    tracing::debug!(%error, "cluster poll failed");
                    return;
                }
            }
        }
    }
}

/// The poll: heartbeat, then a reload if the version or the epoch moved
/// past what was applied.
async fn check(access: &Access, redis: &Redis, applied: &mut Applied) -> Result<(), SharedError> {
    heartbeat(access, redis).await?;
    let mut pipe = redis::pipe();
    pipe.get(names::EPOCH).get(names::VERSION);
    let (epoch, version): (Option<String>, Option<u64>) = redis.pipeline(&pipe).await?;
    if epoch != applied.epoch || version.unwrap_or(0) > applied.version {
        sync(access, redis, applied).await?;
    }
    Ok(())
}

/// Announces this process alive: in the node count, and as the holder of
/// its budget slices (reclaiming those of holders that died).
async fn heartbeat(access: &Access, redis: &Redis) -> Result<(), SharedError> {
    redis.heartbeat().await?;
    if let Some(budgets) = access.limiter.budgets() {
        budgets.heartbeat(now_ms()).await?;
    }
    Ok(())
}

/// One message of the feed.
async fn apply(
    access: &Access,
    redis: &Redis,
    text: &str,
    applied: &mut Applied,
) -> Result<(), SharedError> {
    let mut words = text.split(' ');
    let (kind, first, second) = (words.next(), words.next(), words.next());
    let number = |word: Option<&str>| word.and_then(|w| w.parse::<u64>().ok());
    match kind {
        Some("key") => {
            let (Some(version), Some(id)) = (number(first), second) else {
                return Ok(());
            };
            if let Some((revision, record)) = table::fetch_key(redis, id).await? {
                access.keys.apply_shared(revision, &record);
            }
            advance(applied, version);
        }
        Some("account") => {
            let (Some(version), Some(id)) = (number(first), number(second)) else {
                return Ok(());
            };
            if let Some(record) = table::fetch_account(redis, id).await? {
                access.keys.apply_shared_account(&record);
            }
            advance(applied, version);
        }
        Some(kind @ ("ban" | "block")) => {
            let (Some(ip), Some(ends)) = (first.and_then(|w| w.parse().ok()), number(second))
            else {
                return Ok(());
            };
            access.limiter.install_refusal(ip, ends, kind == "ban");
        }
        _ => {}
    }
    Ok(())
}

/// A change applied in order moves the applied version; one that skipped
/// a version leaves it, and the next poll reloads what was skipped.
fn advance(applied: &mut Applied, version: u64) {
    if version == applied.version + 1 {
        applied.version = version;
    }
}

/// Loads the whole table; first gives a Redis that is new to this process
/// (its first connection, or Redis lost its data) what this process holds.
async fn sync(access: &Access, redis: &Redis, applied: &mut Applied) -> Result<(), SharedError> {
    let started = std::time::Instant::now();
    let mut snapshot = table::snapshot(redis).await?;
    if snapshot.epoch.is_none() || snapshot.epoch != applied.epoch {
        let restarted = applied.epoch.is_some();
        let (keys, accounts) = access.keys.local_table();
        let epoch = table::seed(redis, &keys, &accounts).await?;
        if restarted && applied.restored.as_ref() != Some(&epoch) {
            tracing::warn!("Redis lost the shared state: restoring it from this process");
            if let Some(budgets) = access.limiter.budgets() {
                // Marked first: a put-back that fails half-way is not
                // repeated (under-counting is the safer side).
                applied.restored = Some(epoch);
                budgets
                    .restore(&access.limiter.bans(now_ms()), now_ms())
                    .await?;
            }
        }
        snapshot = table::snapshot(redis).await?;
    }
    for (revision, record) in &snapshot.keys {
        access.keys.apply_shared(*revision, record);
    }
    for account in &snapshot.accounts {
        access.keys.apply_shared_account(account);
    }
    if let Some(budgets) = access.limiter.budgets() {
        for (ip, ends, is_ban) in budgets.refusals().await? {
            access.limiter.install_refusal(ip, ends, is_ban);
        }
    }
    heartbeat(access, redis).await?;
    tracing::info!(
        version = snapshot.version,
        keys = snapshot.keys.len(),
        elapsed = ?started.elapsed(),
        "shared key table loaded"
    );
    applied.epoch = snapshot.epoch;
    applied.version = snapshot.version;
    Ok(())
}
