//! The key table in Redis: every account and key record, the revision each
//! change got, and the scripts that change them all or nothing.

use std::collections::HashMap;
use std::sync::LazyLock;

use redis::Script;
use weiport_storage::{AccountRecord, ApiKeyRecord};

use super::{Redis, SharedError, names};

/// Writes a key record if its revision is still the one the writer read,
/// and never un-revokes: the only way two processes changing one key
/// cannot undo each other.
static PUT_KEY: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local meta = redis.call('HGET', KEYS[2], ARGV[1])
local revision, revoked = 0, '0'
if meta then
  local space = string.find(meta, ' ', 1, true)
  revision = tonumber(string.sub(meta, 1, space - 1))
  revoked = string.sub(meta, space + 1)
end
if revision ~= tonumber(ARGV[4]) then return {-1, revision} end
if revoked == '1' and ARGV[3] == '0' then return {-2, revision} end
local next = redis.call('INCR', KEYS[3])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[1], next .. ' ' .. ARGV[3])
redis.call('PUBLISH', ARGV[5], 'key ' .. next .. ' ' .. ARGV[1])
return {next, revision}
",
    )
});

/// A process's own copy of a key, offered to a Redis that lacks it (or
/// lacks its revocation) after Redis lost its data.
static MERGE_KEY: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local meta = redis.call('HGET', KEYS[2], ARGV[1])
if meta then
  local space = string.find(meta, ' ', 1, true)
  if string.sub(meta, space + 1) == '1' or ARGV[3] == '0' then return 0 end
end
local next = redis.call('INCR', KEYS[3])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[1], next .. ' ' .. ARGV[3])
redis.call('PUBLISH', ARGV[4], 'key ' .. next .. ' ' .. ARGV[1])
return next
",
    )
});

/// An account record, once: ids are handed out by `INCR` and a seeded
/// account raises the counter past itself, so no id is ever reused.
static PUT_ACCOUNT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
local last = tonumber(redis.call('GET', KEYS[3]) or '0')
if tonumber(ARGV[1]) > last then redis.call('SET', KEYS[3], ARGV[1]) end
local next = redis.call('INCR', KEYS[2])
redis.call('PUBLISH', ARGV[3], 'account ' .. next .. ' ' .. ARGV[1])
return next
",
    )
});

/// Raises the version counter to at least a process's highest revision,
/// so revisions stay increasing across a Redis that lost its data; starts
/// the Redis lifetime (its epoch and when it began) if none is running.
static RAISE_VERSION: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if current < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1]) end
if redis.call('SET', KEYS[2], ARGV[2], 'NX') then
  local time = redis.call('TIME')
  redis.call('SET', KEYS[3], tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000))
end
return redis.call('GET', KEYS[2])
",
    )
});

/// The next account id, only once this Redis lifetime is settled: it has
/// lasted a liveness window (so every live process has announced itself)
/// and every process alive now, the caller included, has given it its
/// accounts. Before that an id could be one a process holds and Redis forgot.
static NEXT_ACCOUNT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local began = tonumber(redis.call('GET', KEYS[1]) or '0')
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
if began == 0 or now - began < tonumber(ARGV[2]) then return -1 end
if redis.call('SISMEMBER', KEYS[3], ARGV[1]) == 0 then return -1 end
for _, node in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], now - tonumber(ARGV[2]), '+inf')) do
  if redis.call('SISMEMBER', KEYS[3], node) == 0 then return -1 end
end
return redis.call('INCR', KEYS[4])
",
    )
});

/// The outcome of a conditional key write.
pub(crate) enum Written {
    /// Stored with this revision.
    At(u64),
    /// Someone changed the key since it was read; read again.
    Conflict,
    /// The key is revoked in Redis: nothing but a revocation may follow.
    Revoked,
}

fn corrupt(what: &str, error: impl std::fmt::Display) -> SharedError {
    SharedError::Unexpected(format!("{what}: {error}"))
}

fn meta_of(meta: &str) -> Result<(u64, bool), SharedError> {
    let (revision, revoked) = meta
        .split_once(' ')
        .ok_or_else(|| corrupt("key meta", meta))?;
    let revision = revision.parse().map_err(|e| corrupt("key revision", e))?;
    Ok((revision, revoked == "1"))
}

/// The key `id` and its revision, as Redis holds it now (blocking).
pub(crate) fn read_key(
    redis: &Redis,
    id: &str,
) -> Result<Option<(u64, ApiKeyRecord)>, SharedError> {
    let (bytes, meta): (Option<Vec<u8>>, Option<String>) = redis.blocking(|connection| {
        redis::pipe()
            .hget(names::KEYS, id)
            .hget(names::KEY_META, id)
            .query(connection)
    })?;
    match (bytes, meta) {
        (Some(bytes), Some(meta)) => {
            let record = ApiKeyRecord::decode(&bytes).map_err(|e| corrupt("key record", e))?;
            Ok(Some((meta_of(&meta)?.0, record)))
        }
        _ => Ok(None),
    }
}

/// Stores `record` if Redis still holds revision `expected` of it (0: absent).
pub(crate) fn write_key(
    redis: &Redis,
    record: &ApiKeyRecord,
    expected: u64,
) -> Result<Written, SharedError> {
    let revoked = if record.revoked_ms.is_some() {
        "1"
    } else {
        "0"
    };
    let (outcome, _): (i64, u64) = redis.blocking(|connection| {
        PUT_KEY
            .key(names::KEYS)
            .key(names::KEY_META)
            .key(names::VERSION)
            .arg(&record.id)
            .arg(record.encode())
            .arg(revoked)
            .arg(expected)
            .arg(names::CHANGES)
            .invoke(connection)
    })?;
    Ok(match outcome {
        -1 => Written::Conflict,
        -2 => Written::Revoked,
        revision => Written::At(revision as u64),
    })
}

/// Creates an account with the next id no process has used (blocking);
/// waits up to a liveness window for a Redis that lost its data to be
/// given back every live process's accounts, else [`SharedError::Restoring`].
pub(crate) fn create_account(redis: &Redis, label: &str) -> Result<AccountRecord, SharedError> {
    let patience =
        std::time::Instant::now() + std::time::Duration::from_millis(redis.liveness_ms() + 1_000);
    let id = loop {
        let next: i64 = redis.blocking(|connection| {
            NEXT_ACCOUNT
                .key(names::EPOCH_MS)
                .key(names::NODES)
                .key(names::SEEDED)
                .key(names::LAST_ACCOUNT)
                .arg(&redis.config().node)
                .arg(redis.liveness_ms())
                .invoke(connection)
        })?;
        if let Ok(id) = u64::try_from(next) {
            break id;
        }
        if std::time::Instant::now() > patience {
            return Err(SharedError::Restoring);
        }
        std::thread::sleep(
            redis
                .config()
                .poll
                .min(std::time::Duration::from_millis(200)),
        );
    };
    let created_ms = crate::clock::now_ms();
    redis.blocking(|connection| {
        let record = AccountRecord {
            id,
            label: label.to_owned(),
            created_ms,
        };
        let _: u64 = PUT_ACCOUNT
            .key(names::ACCOUNTS)
            .key(names::VERSION)
            .key(names::LAST_ACCOUNT)
            .arg(id)
            .arg(record.encode())
            .arg(names::CHANGES)
            .invoke(connection)?;
        Ok(record)
    })
}

/// One key as Redis holds it now (for a change announced on the feed).
pub(crate) async fn fetch_key(
    redis: &Redis,
    id: &str,
) -> Result<Option<(u64, ApiKeyRecord)>, SharedError> {
    let mut pipe = redis::pipe();
    pipe.hget(names::KEYS, id).hget(names::KEY_META, id);
    let (bytes, meta): (Option<Vec<u8>>, Option<String>) = redis.pipeline(&pipe).await?;
    match (bytes, meta) {
        (Some(bytes), Some(meta)) => {
            let record = ApiKeyRecord::decode(&bytes).map_err(|e| corrupt("key record", e))?;
            Ok(Some((meta_of(&meta)?.0, record)))
        }
        _ => Ok(None),
    }
}

/// One account as Redis holds it now.
pub(crate) async fn fetch_account(
    redis: &Redis,
    id: u64,
) -> Result<Option<AccountRecord>, SharedError> {
    let bytes: Option<Vec<u8>> = redis
        .query(redis::cmd("HGET").arg(names::ACCOUNTS).arg(id))
        .await?;
    bytes
        .map(|bytes| AccountRecord::decode(&bytes).map_err(|e| corrupt("account record", e)))
        .transpose()
}

/// Everything in the key table at one moment.
pub(crate) struct Snapshot {
    /// Redis's lifetime marker; `None` for a Redis that holds nothing of ours.
    pub epoch: Option<String>,
    /// The version counter when it was read.
    pub version: u64,
    /// Every key with its revision.
    pub keys: Vec<(u64, ApiKeyRecord)>,
    /// Every account.
    pub accounts: Vec<AccountRecord>,
}

/// Reads the whole table in one transaction.
pub(crate) async fn snapshot(redis: &Redis) -> Result<Snapshot, SharedError> {
    let mut pipe = redis::pipe();
    pipe.atomic()
        .get(names::EPOCH)
        .get(names::VERSION)
        .hgetall(names::KEYS)
        .hgetall(names::KEY_META)
        .hgetall(names::ACCOUNTS);
    type Table = HashMap<String, Vec<u8>>;
    let (epoch, version, mut records, metas, accounts): (
        Option<String>,
        Option<u64>,
        Table,
        HashMap<String, String>,
        Table,
    ) = redis.pipeline(&pipe).await?;
    let mut keys = Vec::with_capacity(metas.len());
    for (id, meta) in metas {
        let Some(bytes) = records.remove(&id) else {
            continue;
        };
        let record = ApiKeyRecord::decode(&bytes).map_err(|e| corrupt("key record", e))?;
        keys.push((meta_of(&meta)?.0, record));
    }
    let accounts = accounts
        .values()
        .map(|bytes| AccountRecord::decode(bytes).map_err(|e| corrupt("account record", e)))
        .collect::<Result<_, _>>()?;
    Ok(Snapshot {
        epoch,
        version: version.unwrap_or(0),
        keys,
        accounts,
    })
}

/// Offers this process's copy of the table to Redis: accounts and keys it
/// lacks, revocations it lacks, a version counter past every revision seen.
/// Returns the epoch now in force.
pub(crate) async fn seed(
    redis: &Redis,
    keys: &[(u64, ApiKeyRecord)],
    accounts: &[AccountRecord],
) -> Result<String, SharedError> {
    let highest = keys
        .iter()
        .map(|(revision, _)| *revision)
        .max()
        .unwrap_or(0);
    let fresh_epoch = crate::keys::random_token();
    let epoch: String = redis
        .script(
            &RAISE_VERSION,
            &[names::VERSION, names::EPOCH, names::EPOCH_MS],
            &[&highest, &fresh_epoch],
        )
        .await?;
    for account in accounts {
        let _: u64 = redis
            .script(
                &PUT_ACCOUNT,
                &[names::ACCOUNTS, names::VERSION, names::LAST_ACCOUNT],
                &[&account.id, &account.encode(), &names::CHANGES],
            )
            .await?;
    }
    for (_, record) in keys {
        let revoked = if record.revoked_ms.is_some() {
            "1"
        } else {
            "0"
        };
        let _: u64 = redis
            .script(
                &MERGE_KEY,
                &[names::KEYS, names::KEY_META, names::VERSION],
                &[&record.id, &record.encode(), &revoked, &names::CHANGES],
            )
            .await?;
    }
    let _: u64 = redis
        .query(
            redis::cmd("SADD")
                .arg(names::SEEDED)
                .arg(&redis.config().node),
        )
        .await?;
    Ok(epoch)
}
