//! Budgets shared by every process: request weight per IP and per key, query
//! calls per account, spent from slices leased from Redis so the request
//! path rarely waits on it; order counts taken exactly in Redis; bans and
//! invalid-key blocks announced to every process.
//!
//! Exactness: a slice is taken from the window's counter in Redis by a
//! script that never hands out more than the limit, and a process spends
//! only what it was handed, so across any number of processes a client is
//! admitted at most its budget per window while Redis answers. What the
//! slices cost is the other way: weight leased by one process and unspent
//! when the window ends is refused elsewhere (a slice is at most 1/16 of
//! the limit, and shrinks to 1/(2N) of what is left as the budget drains).
//! While Redis is away each process admits up to its share, limit / N (N:
//! the processes alive at the last heartbeat), on top of what it leased.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use dashmap::DashMap;
use redis::Script;

use super::LimitsConfig;
use crate::AccessError;
use crate::cluster::{Redis, SharedError, names};

mod holders;
mod orders;

use holders::new_holder;
use orders::OrderCounts;

/// The Redis names of `account`'s order counters (10 seconds, a day) for
/// the windows `now_ms` is in.
fn order_counters(account: u64, now_ms: u64) -> (String, String) {
    let name = |scope: Scope| scope.name(window_start(now_ms, scope.window_ms()));
    (
        name(Scope::Orders10s(account)),
        name(Scope::OrdersDay(account)),
    )
}

/// Takes a slice of a window's budget: as much as wanted, never past the
/// limit, nothing if not even the request at hand fits.
/// First, grants the holder never heard of (their answers were lost to a
/// timeout; ARGV[7] is what it knows it was granted) go back to the window,
/// so a Redis that was paused, or a reply that came too late, costs no
/// client its budget.
/// The grant is recorded against the holder, with what the holder has
/// spent of the window so far, and the holder is announced if it is not
/// yet, so a holder that dies before its first heartbeat is reclaimed too.
static LEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local limit, need, nodes = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local known = tonumber(ARGV[7])
local used = tonumber(redis.call('GET', KEYS[1]) or '0')
local held = tonumber(redis.call('HGET', KEYS[2], KEYS[1]) or '0')
if held > known then
  local lost = math.min(held - known, used)
  if lost > 0 then
    redis.call('DECRBY', KEYS[1], lost)
    used = used - lost
  end
  redis.call('HSET', KEYS[2], KEYS[1], known)
end
local free = limit - used
if free < need then return {0, used} end
local want = math.max(need, math.min(math.floor(limit / 16), math.floor(free / (2 * nodes))))
local grant = math.min(want, free)
local total = redis.call('INCRBY', KEYS[1], grant)
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('HINCRBY', KEYS[2], KEYS[1], grant)
redis.call('PEXPIRE', KEYS[2], 120000)
redis.call('HSET', KEYS[4], KEYS[1], ARGV[6])
redis.call('PEXPIRE', KEYS[4], 120000)
local time = redis.call('TIME')
redis.call('ZADD', KEYS[3], 'NX', tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000), ARGV[5])
return {grant, total}
",
    )
});

/// One more 429 of an IP; past the threshold within a minute, a ban for
/// every process, doubling with each ban of the day.
static REJECTION: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], 60000) end
if n <= tonumber(ARGV[1]) then return 0 end
redis.call('DEL', KEYS[1])
local bans = redis.call('INCR', KEYS[2])
redis.call('PEXPIRE', KEYS[2], 86400000)
local length = math.floor(math.min(tonumber(ARGV[2]) * math.pow(2, math.min(bans - 1, 20)), tonumber(ARGV[3])))
local ends = tonumber(ARGV[4]) + length
redis.call('SET', KEYS[3], string.format('%d', ends), 'PX', length)
redis.call('PUBLISH', ARGV[5], 'ban ' .. ARGV[6] .. ' ' .. string.format('%d', ends))
return ends
",
    )
});

/// One more bad credential from an IP; past the budget, a block for every
/// process.
static INVALID_KEY: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], 30000) end
if n <= tonumber(ARGV[1]) then return 0 end
local ends = tonumber(ARGV[3]) + tonumber(ARGV[2])
redis.call('SET', KEYS[2], string.format('%d', ends), 'PX', ARGV[2])
redis.call('PUBLISH', ARGV[4], 'block ' .. ARGV[5] .. ' ' .. string.format('%d', ends))
return ends
",
    )
});

/// A budget shared across processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Scope {
    /// Request weight of an IP (network, for IPv6) per minute.
    IpWeight(IpAddr),
    /// Request weight of a key per minute.
    KeyWeight(u64),
    /// Query-API calls of an account per second.
    Query(u64),
    /// Orders of an account per 10 s, counted locally only while Redis is away.
    Orders10s(u64),
    /// Orders of an account per day, likewise.
    OrdersDay(u64),
}

impl Scope {
    /// The length of the scope's windows.
    fn window_ms(&self) -> u64 {
        match self {
            Self::IpWeight(_) | Self::KeyWeight(_) => 60_000,
            Self::Query(_) => 1_000,
            Self::Orders10s(_) => 10_000,
            Self::OrdersDay(_) => 86_400_000,
        }
    }

    fn name(&self, window_start: u64) -> String {
        match self {
            Self::IpWeight(ip) => format!("weiport:lease:ip:{ip}:{window_start}"),
            Self::KeyWeight(slot) => format!("weiport:lease:key:{slot}:{window_start}"),
            Self::Query(account) => format!("weiport:lease:query:{account}:{window_start}"),
            Self::Orders10s(account) => format!("weiport:orders:10s:{account}:{window_start}"),
            Self::OrdersDay(account) => format!("weiport:orders:day:{account}:{window_start}"),
        }
    }
}

/// What this process holds of one scope's current window.
#[derive(Debug, Default, Clone, Copy)]
struct Lease {
    window_start: u64,
    /// Leased from Redis by the current holder.
    granted: u32,
    /// Spent of `granted`.
    spent: u32,
    /// Spent of this process's own share while Redis was away.
    alone: u32,
    /// The window's counter in Redis after this process's last lease.
    total: u32,
}

impl Lease {
    fn unspent(&self) -> u32 {
        self.granted.saturating_sub(self.spent)
    }
}

/// Which allowance a spend came from, to give it back to the same one.
#[derive(Debug, Clone, Copy)]
enum SpentFrom {
    Lease,
    Share,
}

/// One charge: a scope, its limit and window, the amount.
#[derive(Debug, Clone, Copy)]
struct Charge {
    scope: Scope,
    limit: u32,
    window_ms: u64,
    amount: u32,
}

/// The charges a request makes on shared budgets once the local ones passed.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Charges {
    /// The IP group and the request's weight.
    pub ip: Option<(IpAddr, u32)>,
    /// The key's limiter slot, the weight, and whether the sender proved it
    /// holds the key (its excess then counts toward a ban).
    pub key: Option<(u64, u32, bool)>,
    /// The account and its tier's calls per second.
    pub query: Option<(u64, u32)>,
    /// The account placing an order.
    pub order: Option<u64>,
}

impl Charges {
    /// Whether there is nothing to charge.
    pub(crate) fn is_empty(&self) -> bool {
        self.ip.is_none() && self.key.is_none() && self.query.is_none() && self.order.is_none()
    }
}

/// How the shared budgets answered.
#[derive(Debug)]
pub(crate) enum Settled {
    /// Admitted: the IP's weight used this minute across processes (an
    /// upper estimate), and the account's order counts if an order was counted.
    Admitted {
        /// `X-MBX-USED-WEIGHT-1M`.
        ip_weight: Option<u32>,
        /// Orders in the 10-second and day windows.
        orders: Option<(u32, u32)>,
    },
    /// Refused, and whether the refusal counts toward a ban of the IP.
    Refused(AccessError, bool),
    /// This process's slices do not cover it: ask Redis ([`Budgets::settle`]).
    Wait,
}

/// The shared budgets of one process.
pub(crate) struct Budgets {
    redis: Arc<Redis>,
    config: LimitsConfig,
    leases: DashMap<Scope, Lease, std::hash::RandomState>,
    /// `node|incarnation`: whom Redis records this process's grants
    /// against; a new incarnation each time the slices are dropped.
    holder: std::sync::RwLock<Arc<str>>,
    /// When this process last announced its holder alive (its clock, ms).
    announced_ms: AtomicU64,
    /// Whether the current holder may hold unspent grants.
    holding: AtomicBool,
    /// One lease of a scope at a time from this process: what the holder
    /// tells Redis it was granted is then exact, and requests that lack
    /// the same slice wait for one lease instead of taking one each.
    gates: DashMap<Scope, Arc<tokio::sync::Mutex<()>>, std::hash::RandomState>,
    /// Orders' counts, taken in Redis a batch of concurrent orders at a time.
    order_counts: Arc<OrderCounts>,
}

/// How Redis answered a lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Leased {
    /// A slice (possibly of nothing left to give, when the window is spent).
    Granted,
    /// Not even the request at hand fits in what is left of the window.
    Exhausted,
    /// Granted to a holder this process dropped meanwhile: Redis gives it
    /// back when it reclaims that holder; lease again as the new one.
    Stale,
}

fn window_start(now_ms: u64, window_ms: u64) -> u64 {
    now_ms - now_ms % window_ms
}

fn retry_after(now_ms: u64, window_ms: u64) -> Duration {
    let left = window_start(now_ms, window_ms) + window_ms - now_ms;
    Duration::from_millis(left).max(Duration::from_secs(1))
}

impl Budgets {
    /// Budgets of `config`'s limits, shared through `redis`.
    pub(crate) fn new(redis: Arc<Redis>, config: LimitsConfig) -> Self {
        let holder = new_holder(&redis.config().node);
        let order_counts = OrderCounts::new(redis.clone());
        Self {
            redis,
            config,
            leases: DashMap::default(),
            holder: std::sync::RwLock::new(holder),
            announced_ms: AtomicU64::new(crate::clock::now_ms()),
            holding: AtomicBool::new(false),
            gates: DashMap::default(),
            order_counts,
        }
    }

    fn charges(&self, charges: &Charges) -> smallvec::SmallVec<[Charge; 3]> {
        let mut list = smallvec::SmallVec::new();
        if let Some((ip, weight)) = charges.ip.filter(|(_, w)| *w > 0) {
            list.push(Charge {
                scope: Scope::IpWeight(ip),
                limit: self.config.ip_weight_per_minute,
                window_ms: 60_000,
                amount: weight,
            });
        }
        if let Some((slot, weight, _)) = charges.key.filter(|(_, w, _)| *w > 0) {
            list.push(Charge {
                scope: Scope::KeyWeight(slot),
                limit: self.config.key_weight_per_minute,
                window_ms: 60_000,
                amount: weight,
            });
        }
        if let Some((account, per_second)) = charges.query {
            list.push(Charge {
                scope: Scope::Query(account),
                limit: per_second,
                window_ms: 1_000,
                amount: 1,
            });
        }
        list
    }

    /// The refusal a charge that does not fit earns, and whether it counts
    /// toward a ban.
    fn refusal(&self, charge: &Charge, charges: &Charges, now_ms: u64) -> (AccessError, bool) {
        let retry_after = retry_after(now_ms, charge.window_ms);
        match charge.scope {
            Scope::IpWeight(_) => (
                AccessError::TooMuchWeight {
                    limit: charge.limit,
                    retry_after,
                },
                true,
            ),
            Scope::KeyWeight(_) => (
                AccessError::TooMuchWeight {
                    limit: charge.limit,
                    retry_after,
                },
                charges.key.is_some_and(|(_, _, proven)| proven),
            ),
            Scope::Query(_) => (
                AccessError::TooManyCalls {
                    per_second: charge.limit,
                    retry_after,
                },
                false,
            ),
            Scope::Orders10s(_) => (
                AccessError::TooManyOrders {
                    limit: charge.limit,
                    interval: "10 SECOND",
                    retry_after,
                },
                true,
            ),
            Scope::OrdersDay(_) => (
                AccessError::TooManyOrders {
                    limit: charge.limit,
                    interval: "1 DAY",
                    retry_after,
                },
                true,
            ),
        }
    }

    /// Spends `charge` from this process's slice of its window (and, while
    /// Redis is away, its share of the budget) if it fits: one map entry.
    fn try_spend(&self, charge: &Charge, now_ms: u64, alone: bool) -> Option<(Lease, SpentFrom)> {
        let start = window_start(now_ms, charge.window_ms);
        let mut lease = self.leases.entry(charge.scope).or_default();
        if lease.window_start != start {
            *lease = Lease {
                window_start: start,
                ..Lease::default()
            };
        }
        if lease.unspent() >= charge.amount {
            lease.spent += charge.amount;
            return Some((*lease, SpentFrom::Lease));
        }
        let share = charge.limit / self.redis.nodes();
        if alone && share.saturating_sub(lease.alone) >= charge.amount {
            lease.alone += charge.amount;
            return Some((*lease, SpentFrom::Share));
        }
        None
    }

    /// Gives back what [`Budgets::try_spend`] took for a request refused
    /// on another charge.
    fn give_back(&self, charge: &Charge, from: SpentFrom) {
        if let Some(mut lease) = self.leases.get_mut(&charge.scope) {
            match from {
                SpentFrom::Lease => lease.spent = lease.spent.saturating_sub(charge.amount),
                SpentFrom::Share => lease.alone = lease.alone.saturating_sub(charge.amount),
            }
        }
    }

    /// Spends every charge or none; `Err(i)`: charge `i` does not fit.
    fn spend_all(&self, list: &[Charge], now_ms: u64, alone: bool) -> Result<Option<u32>, usize> {
        let mut ip_weight = None;
        let mut taken: smallvec::SmallVec<[SpentFrom; 3]> = smallvec::SmallVec::new();
        for (i, charge) in list.iter().enumerate() {
            let Some((lease, from)) = self.try_spend(charge, now_ms, alone) else {
                for (spent, from) in list.iter().zip(taken) {
                    self.give_back(spent, from);
                }
                return Err(i);
            };
            taken.push(from);
            if matches!(charge.scope, Scope::IpWeight(_)) {
                // Other processes' unspent slices count as used: an upper estimate.
                let used = lease.total.saturating_sub(lease.unspent());
                ip_weight = Some(used.max(lease.spent) + lease.alone);
            }
        }
        Ok(ip_weight)
    }

    /// Settles `charges` from this process's slices alone, all or nothing;
    /// [`Settled::Wait`] when Redis must be asked.
    pub(crate) fn settle_now(&self, charges: &Charges, now_ms: u64) -> Settled {
        self.drop_slices_if_unannounced(now_ms);
        self.settle_here(charges, now_ms, !self.redis.is_up())
    }

    /// [`Budgets::settle_now`]; `alone`: Redis is away, so this process
    /// spends its share of each budget and never answers [`Settled::Wait`].
    fn settle_here(&self, charges: &Charges, now_ms: u64, alone: bool) -> Settled {
        if charges.order.is_some() && !alone {
            return Settled::Wait;
        }
        let list = self.charges(charges);
        let ip_weight = match self.spend_all(&list, now_ms, alone) {
            Ok(ip_weight) => ip_weight,
            Err(_) if !alone => return Settled::Wait,
            Err(i) => {
                let (error, bans) = self.refusal(&list[i], charges, now_ms);
                return Settled::Refused(error, bans);
            }
        };
        let orders = match charges.order {
            Some(account) => match self.order_alone(account, now_ms, charges) {
                Ok(counts) => Some(counts),
                Err((error, bans)) => return Settled::Refused(error, bans),
            },
            None => None,
        };
        Settled::Admitted { ip_weight, orders }
    }

    /// An order counted against this process's share while Redis is away.
    fn order_alone(
        &self,
        account: u64,
        now_ms: u64,
        charges: &Charges,
    ) -> Result<(u32, u32), (AccessError, bool)> {
        let windows = [
            self.order_window(account, true),
            self.order_window(account, false),
        ];
        let spent = |charge: &Charge| self.try_spend(charge, now_ms, true);
        let (ten, from) =
            spent(&windows[0]).ok_or_else(|| self.refusal(&windows[0], charges, now_ms))?;
        let Some((day, _)) = spent(&windows[1]) else {
            self.give_back(&windows[0], from);
            return Err(self.refusal(&windows[1], charges, now_ms));
        };
        Ok((ten.spent + ten.alone, day.spent + day.alone))
    }

    /// One order against `account`'s 10-second (or day) budget.
    fn order_window(&self, account: u64, ten_seconds: bool) -> Charge {
        let (scope, limit) = if ten_seconds {
            (Scope::Orders10s(account), self.config.orders_per_10s)
        } else {
            (Scope::OrdersDay(account), self.config.orders_per_day)
        };
        Charge {
            scope,
            limit,
            window_ms: scope.window_ms(),
            amount: 1,
        }
    }

    /// What this process has left of `charge`'s window.
    fn room(&self, charge: &Charge, now_ms: u64) -> u32 {
        let start = window_start(now_ms, charge.window_ms);
        self.leases
            .get(&charge.scope)
            .filter(|lease| lease.window_start == start)
            .map_or(0, |lease| lease.unspent())
    }

    /// Takes a slice of `charge`'s window from Redis, enough for `need`;
    /// call it holding the scope's gate.
    async fn lease(&self, charge: &Charge, need: u32, now_ms: u64) -> Result<Leased, SharedError> {
        let start = window_start(now_ms, charge.window_ms);
        let name = charge.scope.name(start);
        let holder = self.holder();
        let held = format!("weiport:held:{holder}");
        let spent_name = format!("weiport:spent:{holder}");
        let (spent, known) = self
            .leases
            .get(&charge.scope)
            .filter(|lease| lease.window_start == start)
            .map_or((0, 0), |lease| (lease.spent, lease.granted));
        let (granted, total): (u32, u32) = self
            .redis
            .script(
                &LEASE,
                &[&name, &held, names::HOLDERS, &spent_name],
                &[
                    &charge.limit,
                    &need,
                    &self.redis.nodes(),
                    &(charge.window_ms * 2),
                    &&*holder,
                    &spent,
                    &known,
                ],
            )
            .await?;
        if granted > 0 {
            self.holding.store(true, Ordering::Relaxed);
        }
        if *self.holder() != *holder {
            return Ok(Leased::Stale);
        }
        let mut lease = self.leases.entry(charge.scope).or_default();
        if lease.window_start != start {
            *lease = Lease {
                window_start: start,
                ..Lease::default()
            };
        }
        lease.granted = lease.granted.saturating_add(granted);
        lease.total = lease.total.max(total);
        Ok(if granted == 0 {
            Leased::Exhausted
        } else {
            Leased::Granted
        })
    }

    /// Makes sure this process's slice of `charge`'s window covers it,
    /// leasing (one lease of a scope at a time) if not.
    async fn cover(&self, charge: &Charge, now_ms: u64) -> Result<Leased, SharedError> {
        if self.room(charge, now_ms) >= charge.amount {
            return Ok(Leased::Granted);
        }
        let gate = self.gates.entry(charge.scope).or_default().clone();
        let _leasing = gate.lock().await;
        // Another request may have leased while this one waited.
        let room = self.room(charge, now_ms);
        if room >= charge.amount {
            return Ok(Leased::Granted);
        }
        if !self.redis.is_up() {
            return Err(SharedError::Unreachable("Redis failed a moment ago".into()));
        }
        self.lease(charge, charge.amount - room, now_ms).await
    }

    /// Settles `charges`, leasing what the slices lack and counting an order
    /// exactly; on its own share if Redis does not answer in time. The
    /// weight is spent before the order is counted: a refused order has
    /// still cost its request's weight, as on Binance.
    pub(crate) async fn settle(&self, charges: &Charges, now_ms: u64) -> Settled {
        const ATTEMPTS: usize = 3;
        self.drop_slices_if_unannounced(now_ms);
        let list = self.charges(charges);
        let mut attempt = 0;
        let ip_weight = loop {
            attempt += 1;
            let mut exhausted = None;
            for (i, charge) in list.iter().enumerate() {
                match self.cover(charge, now_ms).await {
                    Ok(Leased::Granted | Leased::Stale) => {}
                    Ok(Leased::Exhausted) => exhausted = exhausted.or(Some(i)),
                    Err(_) => return self.settle_here(charges, now_ms, true),
                }
            }
            match self.spend_all(&list, now_ms, false) {
                Ok(ip_weight) => break ip_weight,
                // A slice spent by concurrent requests, or granted to a
                // dropped holder, is no refusal: Redis has the last word.
                Err(i) if exhausted != Some(i) && attempt < ATTEMPTS => continue,
                Err(i) => {
                    let (error, bans) = self.refusal(&list[i], charges, now_ms);
                    return Settled::Refused(error, bans);
                }
            }
        };
        let orders = match charges.order {
            Some(account) => match self.order(account, now_ms, charges).await {
                Ok(counts) => Some(counts),
                Err(Some((error, bans))) => return Settled::Refused(error, bans),
                Err(None) => match self.order_alone(account, now_ms, charges) {
                    Ok(counts) => Some(counts),
                    Err((error, bans)) => return Settled::Refused(error, bans),
                },
            },
            None => None,
        };
        Settled::Admitted { ip_weight, orders }
    }

    /// Counts one order of `account` in Redis; `Err(None)`: Redis is away.
    /// Both counters are raised in one round trip (shared with the orders
    /// placed at the same time), and taken back if either is then over its
    /// limit: no two orders can see the same count, so at most the limit's
    /// worth are admitted per window, across processes.
    async fn order(
        &self,
        account: u64,
        now_ms: u64,
        charges: &Charges,
    ) -> Result<(u32, u32), Option<(AccessError, bool)>> {
        let (ten, day) = order_counters(account, now_ms);
        let (in_ten, in_day) = self
            .order_counts
            .count(ten.clone(), day.clone())
            .await
            .ok_or(None)?;
        let over = if in_ten > self.config.orders_per_10s {
            self.order_window(account, true)
        } else if in_day > self.config.orders_per_day {
            self.order_window(account, false)
        } else {
            return Ok((in_ten, in_day));
        };
        let mut undo = redis::pipe();
        undo.decr(&ten, 1).ignore().decr(&day, 1).ignore();
        let _: Result<(), _> = self.redis.pipeline(&undo).await;
        Err(Some(self.refusal(&over, charges, now_ms)))
    }

    /// The orders `account` placed in the current windows, across processes.
    pub(crate) async fn order_counts(&self, account: u64, now_ms: u64) -> Option<(u32, u32)> {
        let (ten, day) = order_counters(account, now_ms);
        let mut pipe = redis::pipe();
        pipe.get(ten).get(day);
        let (ten, day): (Option<u32>, Option<u32>) = self.redis.pipeline(&pipe).await.ok()?;
        Some((ten.unwrap_or(0), day.unwrap_or(0)))
    }

    /// Tells every process about a 429 of `ip`; Redis bans past the ladder.
    pub(crate) fn report_rejection(self: &Arc<Self>, ip: IpAddr, now_ms: u64) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if !self.redis.is_up() {
            return;
        }
        let budgets = self.clone();
        runtime.spawn(async move {
            let keys = [
                format!("weiport:rejections:{ip}"),
                format!("weiport:bans:{ip}"),
                format!("weiport:ban:{ip}"),
            ];
            let config = &budgets.config;
            let _: Result<u64, _> = budgets
                .redis
                .script(
                    &REJECTION,
                    &[&keys[0], &keys[1], &keys[2]],
                    &[
                        &config.ban_after_rejections,
                        &(config.ban_initial.as_millis() as u64),
                        &(config.ban_max.as_millis() as u64),
                        &now_ms,
                        &names::CHANGES,
                        &ip.to_string(),
                    ],
                )
                .await;
        });
    }

    /// Tells every process about a bad credential from `ip`.
    pub(crate) fn report_invalid_key(self: &Arc<Self>, ip: IpAddr, now_ms: u64) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if !self.redis.is_up() {
            return;
        }
        let budgets = self.clone();
        runtime.spawn(async move {
            let window = format!("weiport:bad_keys:{ip}:{}", window_start(now_ms, 30_000));
            let block = format!("weiport:block:{ip}");
            let config = &budgets.config;
            let _: Result<u64, _> = budgets
                .redis
                .script(
                    &INVALID_KEY,
                    &[&window, &block],
                    &[
                        &config.invalid_keys_per_30s,
                        &(config.invalid_key_block.as_millis() as u64),
                        &now_ms,
                        &names::CHANGES,
                        &ip.to_string(),
                    ],
                )
                .await;
        });
    }

    /// Bans and blocks in force, as Redis holds them: (ip, ends, is_ban).
    pub(crate) async fn refusals(&self) -> Result<Vec<(IpAddr, u64, bool)>, SharedError> {
        let mut found = Vec::new();
        for (pattern, is_ban) in [("weiport:ban:*", true), ("weiport:block:*", false)] {
            let names: Vec<String> = self.redis.query(redis::cmd("KEYS").arg(pattern)).await?;
            for name in names {
                let ends: Option<u64> = self.redis.query(redis::cmd("GET").arg(&name)).await?;
                let ip = name
                    .strip_prefix(&pattern[..pattern.len() - 1])
                    .and_then(|ip| ip.parse().ok());
                if let (Some(ip), Some(ends)) = (ip, ends) {
                    found.push((ip, ends, is_ban));
                }
            }
        }
        Ok(found)
    }

    /// Drops slices of windows that are over, and idle lease gates.
    pub(crate) fn housekeeping(&self, now_ms: u64) {
        self.leases.retain(|scope, lease| {
            now_ms.saturating_sub(lease.window_start) < 2 * scope.window_ms()
        });
        self.gates.retain(|_, gate| Arc::strong_count(gate) > 1);
    }
}
