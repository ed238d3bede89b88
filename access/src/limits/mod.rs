//! One rate limiter for every face: request weight per IP and per key,
//! orders per account, query calls per key tier; GCRA (governor) enforces,
//! fixed windows report usage the way Binance's headers do; clients that
//! ignore 429 answers are banned for escalating periods.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use dashmap::DashMap;
use governor::clock::{Clock, DefaultClock};
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};

mod shared;
#[cfg(test)]
mod tests;

use crate::AccessError;
use crate::cluster::Redis;
pub(crate) use shared::Charges;
use shared::{Budgets, Settled};

/// The hasher of tables keyed by what a client picks: its address (an IPv6
/// client picks among the networks of its prefix). SipHash with a random
/// key, so that no one who can time the server learns enough to aim all
/// its addresses at one bucket.
type AddressHasher = std::hash::RandomState;

/// The hasher of tables keyed by ids the server assigns (accounts, key
/// slots, key ids, tier names): seeded per process, several times cheaper
/// than SipHash, and safe where the keys are not the client's to choose (a
/// client may look up any key id, but a lookup cannot lengthen a probe).
pub(crate) type IdHasher = foldhash::fast::RandomState;

/// A GCRA limiter per key.
type KeyedLimiter<K, S> = RateLimiter<K, DefaultKeyedStateStore<K, S>, DefaultClock>;

/// Limits, from configuration.
#[derive(Debug, Clone)]
pub struct LimitsConfig {
    /// Request weight per IP per minute.
    pub ip_weight_per_minute: u32,
    /// Request weight per API key per minute.
    pub key_weight_per_minute: u32,
    /// New orders per account per 10 seconds.
    pub orders_per_10s: u32,
    /// New orders per account per day.
    pub orders_per_day: u32,
    /// Query-API calls per second, by key tier.
    pub query_tiers: HashMap<String, u32>,
    /// 429 answers within a minute after which an IP is banned.
    pub ban_after_rejections: u32,
    /// First ban length; each further ban doubles it.
    pub ban_initial: Duration,
    /// Longest ban.
    pub ban_max: Duration,
    /// Invalid keys from one IP tolerated per 30 s.
    pub invalid_keys_per_30s: u32,
    /// How long an IP over that budget is refused.
    pub invalid_key_block: Duration,
    /// IPv6 clients are counted per network of this prefix length (an end
    /// site gets a whole /64, so per-address budgets would be 2^64 budgets).
    pub ipv6_prefix: u8,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            ip_weight_per_minute: 6000,
            key_weight_per_minute: 6000,
            orders_per_10s: 100,
            orders_per_day: 200_000,
            query_tiers: HashMap::from([("default".to_owned(), 5)]),
            ban_after_rejections: 20,
            ban_initial: Duration::from_secs(120),
            ban_max: Duration::from_secs(3 * 24 * 3600),
            invalid_keys_per_30s: 5,
            invalid_key_block: Duration::from_secs(30),
            ipv6_prefix: 64,
        }
    }
}

/// Usage figures for response headers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Weight used by the IP in the current minute (`X-MBX-USED-WEIGHT-1M`).
    pub ip_weight_1m: u32,
    /// Orders of the account in the current 10 s and day, when an order was counted.
    pub orders: Option<(u32, u32)>,
}

#[derive(Debug, Default, Clone, Copy)]
struct Window {
    start_ms: u64,
    used: u32,
}

impl Window {
    fn add(&mut self, now_ms: u64, length_ms: u64, amount: u32) -> u32 {
        let start = now_ms - now_ms % length_ms;
        if self.start_ms != start {
            *self = Self {
                start_ms: start,
                used: 0,
            };
        }
        self.used = self.used.saturating_add(amount);
        self.used
    }
}

#[derive(Debug, Default)]
struct Offender {
    rejections: u32,
    last_rejection_ms: u64,
    bans: u32,
    banned_until_ms: u64,
}

#[derive(Debug, Default)]
struct BadKeys {
    window: Window,
    blocked_until_ms: u64,
}

fn nonzero(n: u32) -> NonZeroU32 {
    NonZeroU32::new(n.max(1)).expect("at least 1")
}

fn keyed<K: std::hash::Hash + Eq + Clone, S: BuildHasher + Clone + Default>(
    quota: Quota,
) -> KeyedLimiter<K, S> {
    RateLimiter::dashmap_with_hasher(quota, S::default())
}

/// The shared limiter.
pub struct Limiter {
    config: LimitsConfig,
    clock: DefaultClock,
    ip_weight: KeyedLimiter<IpAddr, AddressHasher>,
    key_weight: KeyedLimiter<u64, IdHasher>,
    orders_10s: KeyedLimiter<u64, IdHasher>,
    orders_day: KeyedLimiter<u64, IdHasher>,
    query: HashMap<String, KeyedLimiter<u64, IdHasher>, IdHasher>,
    ip_windows: DashMap<IpAddr, Window, AddressHasher>,
    order_windows: DashMap<u64, (Window, Window), IdHasher>,
    offenders: DashMap<IpAddr, Offender, AddressHasher>,
    bad_keys: DashMap<IpAddr, BadKeys, AddressHasher>,
    /// No IP is banned or blocked from this time on: the latest end of
    /// any ban or block set. Nearly always past, which spares every
    /// request the look-ups of [`Limiter::check_ip`].
    refusals_end_ms: AtomicU64,
    /// The budgets shared with other processes, when in a cluster.
    budgets: OnceLock<Arc<Budgets>>,
}

impl Limiter {
    /// A limiter enforcing `config`.
    pub fn new(config: LimitsConfig) -> Self {
        let query = config
            .query_tiers
            .iter()
            .map(|(tier, per_second)| {
                (tier.clone(), keyed(Quota::per_second(nonzero(*per_second))))
            })
            .collect();
        Self {
            ip_weight: keyed(Quota::per_minute(nonzero(config.ip_weight_per_minute))),
            key_weight: keyed(Quota::per_minute(nonzero(config.key_weight_per_minute))),
            orders_10s: keyed(
                Quota::with_period(Duration::from_secs(10) / config.orders_per_10s.max(1))
                    .expect("non-zero period")
                    .allow_burst(nonzero(config.orders_per_10s)),
            ),
            orders_day: keyed(
                Quota::with_period(Duration::from_secs(86_400) / config.orders_per_day.max(1))
                    .expect("non-zero period")
                    .allow_burst(nonzero(config.orders_per_day)),
            ),
            query,
            clock: DefaultClock::default(),
            ip_windows: DashMap::default(),
            order_windows: DashMap::default(),
            offenders: DashMap::default(),
            bad_keys: DashMap::default(),
            refusals_end_ms: AtomicU64::new(0),
            budgets: OnceLock::new(),
            config,
        }
    }

    /// The configured limits.
    pub fn config(&self) -> &LimitsConfig {
        &self.config
    }

    /// Tier names known to the query limiter.
    pub fn tiers(&self) -> Vec<String> {
        let mut tiers: Vec<String> = self.query.keys().cloned().collect();
        tiers.sort();
        tiers
    }

    fn wait<K: std::hash::Hash + Eq + Clone>(
        &self,
        limiter: &KeyedLimiter<K, impl BuildHasher + Clone>,
        key: &K,
        n: u32,
    ) -> Option<Duration> {
        if n == 0 {
            return None;
        }
        match limiter.check_key_n(key, nonzero(n)) {
            Ok(Ok(())) => None,
            Ok(Err(not_until)) => Some(
                not_until
                    .wait_time_from(self.clock.now())
                    .max(Duration::from_secs(1)),
            ),
            // More weight than the whole quota: it can never pass.
            Err(_) => Some(Duration::from_secs(60)),
        }
    }

    /// Shares every budget and ban with the processes using `redis`, on top
    /// of this process's own limits.
    pub(crate) fn share(&self, redis: Arc<Redis>) {
        let _ = self
            .budgets
            .set(Arc::new(Budgets::new(redis, self.config.clone())));
    }

    /// The shared budgets, in a cluster.
    pub(crate) fn budgets(&self) -> Option<&Arc<Budgets>> {
        self.budgets.get()
    }

    /// Whether budgets are shared with other processes.
    pub fn is_shared(&self) -> bool {
        self.budgets.get().is_some()
    }

    /// Bans in force here: (IP group, end).
    pub(crate) fn bans(&self, now_ms: u64) -> Vec<(IpAddr, u64)> {
        self.offenders
            .iter()
            .filter(|o| o.banned_until_ms > now_ms)
            .map(|o| (*o.key(), o.banned_until_ms))
            .collect()
    }

    /// A ban (or, if not `is_ban`, an invalid-key block) decided by any
    /// process of the cluster, enforced here until `ends_ms`.
    pub(crate) fn install_refusal(&self, ip: IpAddr, ends_ms: u64, is_ban: bool) {
        let ip = self.client_group(ip);
        if is_ban {
            let mut offender = self.offenders.entry(ip).or_default();
            offender.banned_until_ms = offender.banned_until_ms.max(ends_ms);
        } else {
            let mut bad = self.bad_keys.entry(ip).or_default();
            bad.blocked_until_ms = bad.blocked_until_ms.max(ends_ms);
        }
        self.refusals_end_ms.fetch_max(ends_ms, Ordering::Relaxed);
    }

    /// Settles `charges` against the shared budgets from this process's
    /// slices; `Ok(false)` when Redis must be asked ([`Limiter::settle_shared`]).
    pub(crate) fn settle_shared_now(
        &self,
        charges: &Charges,
        ip: IpAddr,
        now_ms: u64,
        usage: &mut Usage,
    ) -> Result<bool, AccessError> {
        match self.budgets.get() {
            Some(budgets) if !charges.is_empty() => {
                self.settled(budgets.settle_now(charges, now_ms), ip, now_ms, usage)
            }
            _ => Ok(true),
        }
    }

    /// Settles `charges` against the shared budgets, asking Redis.
    pub(crate) async fn settle_shared(
        &self,
        charges: &Charges,
        ip: IpAddr,
        now_ms: u64,
        usage: &mut Usage,
    ) -> Result<(), AccessError> {
        if let Some(budgets) = self.budgets.get() {
            let settled = budgets.settle(charges, now_ms).await;
            self.settled(settled, ip, now_ms, usage)?;
        }
        Ok(())
    }

    fn settled(
        &self,
        settled: Settled,
        ip: IpAddr,
        now_ms: u64,
        usage: &mut Usage,
    ) -> Result<bool, AccessError> {
        match settled {
            Settled::Admitted { ip_weight, orders } => {
                if let Some(used) = ip_weight {
                    usage.ip_weight_1m = usage.ip_weight_1m.max(used);
                }
                if orders.is_some() {
                    usage.orders = orders;
                }
                Ok(true)
            }
            Settled::Refused(error, bans) => Err(if bans {
                self.rejected(self.client_group(ip), now_ms, error)
            } else {
                error
            }),
            Settled::Wait => Ok(false),
        }
    }

    /// Counts a new order of `account` here and, in a cluster, across
    /// processes (exactly); the counts of its 10-second and day windows.
    pub async fn count_order(
        &self,
        ip: IpAddr,
        account: u64,
        now_ms: u64,
    ) -> Result<(u32, u32), AccessError> {
        let counts = self.charge_order(ip, account, now_ms)?;
        let mut usage = Usage {
            orders: Some(counts),
            ..Usage::default()
        };
        let charges = Charges {
            order: Some(account),
            ..Charges::default()
        };
        self.settle_shared(&charges, ip, now_ms, &mut usage).await?;
        Ok(usage.orders.unwrap_or(counts))
    }

    /// Orders `account` placed in the current windows, across processes
    /// when in a cluster.
    pub async fn current_order_counts(&self, account: u64, now_ms: u64) -> (u32, u32) {
        if let Some(budgets) = self.budgets.get()
            && let Some(counts) = budgets.order_counts(account, now_ms).await
        {
            return counts;
        }
        self.order_counts(account, now_ms)
    }

    /// Refuses a banned or bad-key-blocked IP before any other work.
    pub fn check_ip(&self, ip: IpAddr, now_ms: u64) -> Result<(), AccessError> {
        if now_ms >= self.refusals_end_ms.load(Ordering::Relaxed) {
            return Ok(());
        }
        let ip = self.client_group(ip);
        if let Some(offender) = self.offenders.get(&ip)
            && offender.banned_until_ms > now_ms
        {
            return Err(AccessError::Banned {
                until_ms: offender.banned_until_ms,
                retry_after: Duration::from_millis(offender.banned_until_ms - now_ms),
            });
        }
        if let Some(bad) = self.bad_keys.get(&ip)
            && bad.blocked_until_ms > now_ms
        {
            return Err(AccessError::TooManyInvalidKeys {
                retry_after: Duration::from_millis(bad.blocked_until_ms - now_ms),
            });
        }
        Ok(())
    }

    /// Records a request with a bad credential; blocks the IP past the budget.
    pub fn record_invalid_key(&self, ip: IpAddr, now_ms: u64) {
        let ip = self.client_group(ip);
        if let Some(budgets) = self.budgets.get() {
            budgets.report_invalid_key(ip, now_ms);
        }
        let mut bad = self.bad_keys.entry(ip).or_default();
        if bad.window.add(now_ms, 30_000, 1) > self.config.invalid_keys_per_30s {
            bad.blocked_until_ms = now_ms + self.config.invalid_key_block.as_millis() as u64;
            self.refusals_end_ms
                .fetch_max(bad.blocked_until_ms, Ordering::Relaxed);
        }
    }

    /// The weight the client's IP used in the current minute, charging
    /// nothing (for answers that report usage after a refusal).
    pub fn ip_weight_used(&self, ip: IpAddr, now_ms: u64) -> u32 {
        let ip = self.client_group(ip);
        self.ip_windows.get(&ip).map_or(0, |window| {
            if window.start_ms == now_ms - now_ms % 60_000 {
                window.used
            } else {
                0
            }
        })
    }

    /// Charges `weight` to the client's IP (network, for IPv6); returns the
    /// usage figures. Runs before any costly check, so failed requests pay too.
    pub fn charge_ip_weight(
        &self,
        ip: IpAddr,
        weight: u32,
        now_ms: u64,
    ) -> Result<Usage, AccessError> {
        let ip = self.client_group(ip);
        let used = self
            .ip_windows
            .entry(ip)
            .or_default()
            .add(now_ms, 60_000, weight);
        let limit = self.config.ip_weight_per_minute;
        if let Some(retry_after) = self.wait(&self.ip_weight, &ip, weight) {
            return Err(self.rejected(
                ip,
                now_ms,
                AccessError::TooMuchWeight { limit, retry_after },
            ));
        }
        Ok(Usage {
            ip_weight_1m: used,
            orders: None,
        })
    }

    /// Charges `weight` to a key's budget. `proven` says the sender signed
    /// the request, so the excess is its own and counts toward a ban of its
    /// IP; a bare key id (the query API's) can be anyone's.
    pub fn charge_key_weight(
        &self,
        ip: IpAddr,
        key_slot: u64,
        weight: u32,
        proven: bool,
        now_ms: u64,
    ) -> Result<(), AccessError> {
        let Some(retry_after) = self.wait(&self.key_weight, &key_slot, weight) else {
            return Ok(());
        };
        let limit = self.config.key_weight_per_minute;
        let error = AccessError::TooMuchWeight { limit, retry_after };
        Err(if proven {
            self.rejected(self.client_group(ip), now_ms, error)
        } else {
            error
        })
    }

    /// Charges `weight` to the IP and (if any) the key, as one signed request would.
    pub fn charge_weight(
        &self,
        ip: IpAddr,
        key_slot: Option<u64>,
        weight: u32,
        now_ms: u64,
    ) -> Result<Usage, AccessError> {
        let usage = self.charge_ip_weight(ip, weight, now_ms)?;
        if let Some(slot) = key_slot {
            self.charge_key_weight(ip, slot, weight, true, now_ms)?;
        }
        Ok(usage)
    }

    /// Counts a new order of `account`.
    pub fn charge_order(
        &self,
        ip: IpAddr,
        account: u64,
        now_ms: u64,
    ) -> Result<(u32, u32), AccessError> {
        if let Some(retry_after) = self.wait(&self.orders_10s, &account, 1) {
            let limit = self.config.orders_per_10s;
            return Err(self.rejected(
                self.client_group(ip),
                now_ms,
                AccessError::TooManyOrders {
                    limit,
                    interval: "10 SECOND",
                    retry_after,
                },
            ));
        }
        if let Some(retry_after) = self.wait(&self.orders_day, &account, 1) {
            let limit = self.config.orders_per_day;
            return Err(self.rejected(
                self.client_group(ip),
                now_ms,
                AccessError::TooManyOrders {
                    limit,
                    interval: "1 DAY",
                    retry_after,
                },
            ));
        }
        let mut windows = self.order_windows.entry(account).or_default();
        let ten = windows.0.add(now_ms, 10_000, 1);
        let day = windows.1.add(now_ms, 86_400_000, 1);
        Ok((ten, day))
    }

    /// Orders `account` placed in the current 10-second and day windows.
    pub fn order_counts(&self, account: u64, now_ms: u64) -> (u32, u32) {
        self.order_windows.get(&account).map_or((0, 0), |w| {
            let current = |window: &Window, length_ms: u64| {
                if window.start_ms == now_ms - now_ms % length_ms {
                    window.used
                } else {
                    0
                }
            };
            (current(&w.0, 10_000), current(&w.1, 86_400_000))
        })
    }

    /// Charges one query-API call to the account's tier. The key id alone
    /// reaches this budget, so its exhaustion never counts toward a ban of
    /// the IP that happened to hit it.
    pub fn charge_query(&self, account: u64, tier: &str) -> Result<(), AccessError> {
        let Some(limiter) = self.query.get(tier).or_else(|| self.query.get("default")) else {
            return Ok(());
        };
        if let Some(retry_after) = self.wait(limiter, &account, 1) {
            let per_second = self.config.query_tiers.get(tier).copied().unwrap_or(0);
            return Err(AccessError::TooManyCalls {
                per_second,
                retry_after,
            });
        }
        Ok(())
    }

    /// The query-API calls per second of `tier` (unknown tiers: `default`'s).
    pub fn query_per_second(&self, tier: &str) -> u32 {
        let tiers = &self.config.query_tiers;
        tiers
            .get(tier)
            .or_else(|| tiers.get("default"))
            .copied()
            .unwrap_or(u32::MAX)
    }

    /// The address limits key on: IPv4 as is (also when IPv4-mapped), IPv6
    /// masked to its network of `ipv6_prefix` bits.
    pub fn client_group(&self, ip: IpAddr) -> IpAddr {
        client_group(ip, self.config.ipv6_prefix)
    }

    /// Counts a 429 against the IP group; too many in a row turn into a ban.
    fn rejected(&self, ip: IpAddr, now_ms: u64, error: AccessError) -> AccessError {
        if let Some(budgets) = self.budgets.get() {
            budgets.report_rejection(ip, now_ms);
        }
        let mut offender = self.offenders.entry(ip).or_default();
        if now_ms.saturating_sub(offender.last_rejection_ms) > 60_000 {
            offender.rejections = 0;
        }
        offender.rejections += 1;
        offender.last_rejection_ms = now_ms;
        if offender.rejections > self.config.ban_after_rejections {
            let length = self
                .config
                .ban_initial
                .saturating_mul(1 << offender.bans.min(20))
                .min(self.config.ban_max);
            offender.bans += 1;
            offender.rejections = 0;
            offender.banned_until_ms = now_ms + length.as_millis() as u64;
            self.refusals_end_ms
                .fetch_max(offender.banned_until_ms, Ordering::Relaxed);
            tracing::warn!(%ip, ban_secs = length.as_secs(), "client kept sending after 429: banned");
            return AccessError::Banned {
                until_ms: offender.banned_until_ms,
                retry_after: length,
            };
        }
        error
    }

    /// Drops state of idle clients so memory stays bounded; call periodically.
    pub fn housekeeping(&self, now_ms: u64) {
        if let Some(budgets) = self.budgets.get() {
            budgets.housekeeping(now_ms);
        }
        self.ip_weight.retain_recent();
        self.key_weight.retain_recent();
        self.orders_10s.retain_recent();
        self.orders_day.retain_recent();
        for limiter in self.query.values() {
            limiter.retain_recent();
        }
        self.ip_windows
            .retain(|_, w| now_ms.saturating_sub(w.start_ms) < 120_000);
        self.order_windows
            .retain(|_, (_, day)| now_ms.saturating_sub(day.start_ms) < 2 * 86_400_000);
        self.offenders.retain(|_, o| {
            o.banned_until_ms > now_ms || now_ms.saturating_sub(o.last_rejection_ms) < 3_600_000
        });
        self.bad_keys.retain(|_, b| {
            b.blocked_until_ms > now_ms || now_ms.saturating_sub(b.window.start_ms) < 60_000
        });
    }

    /// Clients tracked right now (for metrics and tests).
    pub fn tracked(&self) -> usize {
        self.ip_weight.len()
            + self.key_weight.len()
            + self.ip_windows.len()
            + self.offenders.len()
            + self.bad_keys.len()
    }
}

/// See [`Limiter::client_group`].
pub fn client_group(ip: IpAddr, ipv6_prefix: u8) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let bits = u32::from(ipv6_prefix.min(128));
                let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
                IpAddr::V6((u128::from(v6) & mask).into())
            }
        },
    }
}
