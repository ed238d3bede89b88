//! Who holds which slices, so that no slice outlives its process.
//!
//! Slices outlive no process: Redis records what each holder (a process's
//! name and the incarnation of its leases) was granted, and the holder
//! reports what it spent at every heartbeat. A graceful stop hands the
//! unspent rest back; a holder whose heartbeats lapse, or that its own
//! process replaced (restarted under the same name), is reclaimed by the
//! next heartbeat of any process: granted less reported spent goes back to
//! each window. A process that could not announce itself for a while
//! (stopped, cut off) drops its slices before anyone may reclaim them, so a
//! slice is never spent twice; what a dead holder spent after its last
//! report is given back too (at most one heartbeat interval of its spending).

use std::sync::Arc;
use std::sync::LazyLock;
use std::sync::atomic::Ordering;

use redis::Script;

use std::net::IpAddr;

use super::{Budgets, window_start};
use crate::cluster::{SharedError, ToRedisArgsDyn, names};

/// A holder's heartbeat (or its leaving, when ARGV[1] is empty): every
/// holder whose heartbeat lapsed, or that this process replaced, gives
/// back what it was granted and did not report spent; then this holder is
/// announced alive (or, leaving, gives back its own rest).
static RECLAIM: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local function reclaim(holder)
  local held = redis.call('HGETALL', 'weiport:held:' .. holder)
  local back = 0
  for i = 1, #held, 2 do
    local name, granted = held[i], tonumber(held[i + 1])
    local spent = tonumber(redis.call('HGET', 'weiport:spent:' .. holder, name) or '0')
    local used = tonumber(redis.call('GET', name) or '0')
    local amount = math.min(granted - spent, used)
    if amount > 0 then
      redis.call('DECRBY', name, amount)
      back = back + amount
    end
  end
  redis.call('DEL', 'weiport:held:' .. holder, 'weiport:spent:' .. holder)
  redis.call('ZREM', KEYS[1], holder)
  return back
end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local me, prefix = ARGV[1], ARGV[2] .. '|'
local back = 0
local holders = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
for i = 1, #holders, 2 do
  local holder, seen = holders[i], tonumber(holders[i + 1])
  local mine = string.sub(holder, 1, #prefix) == prefix
  if holder ~= me and (seen < now - tonumber(ARGV[3]) or mine) then
    back = back + reclaim(holder)
  end
end
if me ~= '' then redis.call('ZADD', KEYS[1], now, me) end
return back
",
    )
});

/// Puts one holder's slices back into a Redis that lost its data: for each
/// window (KEYS[i + 1], ARGV at 3i + 1..3: granted, spent alone, expiry)
/// what this process was granted and Redis does not know yet (grants of
/// the new lifetime are already counted), plus what it admitted on its own
/// share; the holder's record of grants is made whole (KEYS[1]) and the
/// holder announced, so its slices are reclaimed if it dies.
static RESTORE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
for i = 2, #KEYS do
  local name, at = KEYS[i], (i - 2) * 3
  local granted, alone, expiry = tonumber(ARGV[at + 1]), tonumber(ARGV[at + 2]), ARGV[at + 3]
  local known = tonumber(redis.call('HGET', KEYS[1], name) or '0')
  local add = math.max(granted - known, 0) + alone
  if add > 0 then
    redis.call('INCRBY', name, add)
    redis.call('PEXPIRE', name, expiry)
  end
  if granted > known then redis.call('HSET', KEYS[1], name, granted) end
end
redis.call('PEXPIRE', KEYS[1], 120000)
local time = redis.call('TIME')
redis.call('ZADD', ARGV[#ARGV], 'NX', tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000), ARGV[#ARGV - 1])
return 0
",
    )
});

/// A fresh holder name for this process's slices: `node|incarnation`.
pub(super) fn new_holder(node: &str) -> Arc<str> {
    format!("{node}|{}", crate::keys::random_token()).into()
}

impl Budgets {
    pub(super) fn holder(&self) -> Arc<str> {
        self.holder
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// How long slices are kept without a heartbeat: well inside the time
    /// after which other processes reclaim them.
    fn keep_without_heartbeat_ms(&self) -> u64 {
        let timeout = self.redis.config().timeout.as_millis() as u64;
        self.redis.liveness_ms().saturating_sub(timeout) / 2
    }

    /// Drops every slice (a new holder takes over) if this process has not
    /// announced itself for long enough that others may reclaim them.
    pub(super) fn drop_slices_if_unannounced(&self, now_ms: u64) {
        if !self.holding.load(Ordering::Relaxed)
            || now_ms.saturating_sub(self.announced_ms.load(Ordering::Relaxed))
                <= self.keep_without_heartbeat_ms()
        {
            return;
        }
        let mut holder = self.holder.write().unwrap_or_else(|e| e.into_inner());
        if !self.holding.swap(false, Ordering::Relaxed) {
            return;
        }
        *holder = new_holder(&self.redis.config().node);
        // The new holder is unknown to Redis until its first lease announces
        // it (at that lease's time or later), so nobody can reclaim it
        // before `now_ms` plus the liveness: its clock starts here. Left at
        // the old holder's last heartbeat, every request until the next
        // heartbeat would drop the slice the one before it leased, and the
        // dropped grants, counted until a heartbeat reclaims them, would
        // drain the window of a client that spent almost nothing.
        self.announced_ms.fetch_max(now_ms, Ordering::Relaxed);
        for mut lease in self.leases.iter_mut() {
            lease.granted = 0;
            lease.spent = 0;
        }
        tracing::warn!("no heartbeat for a while: dropped this process's budget slices");
    }

    /// The heartbeat of this process's slices: reports what it spent of
    /// each, reclaims the slices of holders that died or were replaced,
    /// and announces this holder alive. Returns the weight reclaimed.
    pub(crate) async fn heartbeat(&self, now_ms: u64) -> Result<u64, SharedError> {
        let holder = self.holder();
        let mut pipe = redis::pipe();
        if self.report_spent(&mut pipe, &holder, now_ms) {
            let () = self.redis.pipeline(&pipe).await?;
        }
        let reclaimed: u64 = self
            .redis
            .script(
                &RECLAIM,
                &[names::HOLDERS],
                &[
                    &&*holder,
                    &self.redis.config().node,
                    &self.redis.liveness_ms(),
                ],
            )
            .await?;
        if reclaimed > 0 {
            tracing::info!(
                reclaimed,
                "gave back the unspent budget slices of stopped processes"
            );
        }
        if *self.holder() == *holder {
            self.announced_ms.fetch_max(now_ms, Ordering::Relaxed);
        }
        Ok(reclaimed)
    }

    /// Adds to `pipe` what `holder` spent of each slice of the current
    /// windows; whether there was any.
    fn report_spent(&self, pipe: &mut redis::Pipeline, holder: &str, now_ms: u64) -> bool {
        let spent_name = format!("weiport:spent:{holder}");
        let mut any = false;
        for entry in self.leases.iter() {
            let (scope, lease) = (entry.key(), entry.value());
            if lease.granted == 0 || lease.window_start != window_start(now_ms, scope.window_ms()) {
                continue;
            }
            pipe.hset(&spent_name, scope.name(lease.window_start), lease.spent)
                .ignore();
            any = true;
        }
        if any {
            pipe.pexpire(&spent_name, 120_000).ignore();
        }
        any
    }

    /// After Redis lost its data: puts back what this process leased in the
    /// current windows and the bans it enforces, so a restart of Redis is
    /// no fresh budget for anyone.
    pub(crate) async fn restore(
        &self,
        bans: &[(IpAddr, u64)],
        now_ms: u64,
    ) -> Result<(), SharedError> {
        let holder = self.holder();
        let mut keys = vec![format!("weiport:held:{holder}")];
        let mut args: Vec<u64> = Vec::new();
        for entry in self.leases.iter() {
            let (scope, lease) = (entry.key(), entry.value());
            let window_ms = scope.window_ms();
            if lease.window_start != window_start(now_ms, window_ms) {
                continue;
            }
            keys.push(scope.name(lease.window_start));
            args.extend([
                u64::from(lease.granted),
                u64::from(lease.alone),
                window_ms * 2,
            ]);
        }
        if keys.len() > 1 {
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            let mut list: Vec<&dyn ToRedisArgsDyn> =
                args.iter().map(|a| a as &dyn ToRedisArgsDyn).collect();
            let holder_arg: &str = &holder;
            list.push(&holder_arg);
            list.push(&names::HOLDERS);
            let _: i64 = self.redis.script(&RESTORE, &keys, &list).await?;
        }
        let mut pipe = redis::pipe();
        let mut commands = 0;
        for (ip, ends) in bans {
            let left = ends.saturating_sub(now_ms);
            if left > 0 {
                pipe.cmd("SET")
                    .arg(format!("weiport:ban:{ip}"))
                    .arg(ends)
                    .arg("PX")
                    .arg(left)
                    .arg("NX")
                    .ignore();
                commands += 1;
            }
        }
        // Redis refuses an empty transaction-less pipeline as an empty command.
        if commands > 0 {
            let () = self.redis.pipeline(&pipe).await?;
        }
        Ok(())
    }

    /// A graceful stop: reports what was spent and gives the rest of every
    /// slice back, so a restart costs the clients nothing.
    pub(crate) async fn leave(&self, now_ms: u64) -> Result<u64, SharedError> {
        let holder = self.holder();
        let mut pipe = redis::pipe();
        self.report_spent(&mut pipe, &holder, now_ms);
        pipe.zrem(names::NODES, &self.redis.config().node).ignore();
        let () = self.redis.pipeline(&pipe).await?;
        // Nothing spent from here on is covered by a slice.
        self.holding.store(false, Ordering::Relaxed);
        self.leases.clear();
        self.redis
            .script(
                &RECLAIM,
                &[names::HOLDERS],
                &[&"", &self.redis.config().node, &self.redis.liveness_ms()],
            )
            .await
    }
}
