//! Order counts taken in Redis, the counts of orders placed at the same
//! time in one round trip, as a group commit writes one log entry for
//! many: a batch goes out as one pipeline, and the orders of one account
//! in it raise its counters once, by how many they are, each taking its
//! own count below the new value (no two orders see the same count, so
//! the counts stay exact).
//!
//! No task of its own: the first order to find no batch on its way sends
//! the ones waiting (its own among them); orders that arrive meanwhile
//! wait for the next batch, sent by a task spawned when this one is
//! answered. One order alone costs one round trip, as it did unbatched.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use crate::cluster::Redis;

/// The most orders in one pipeline; the rest go in the next.
const MOST_IN_A_BATCH: usize = 256;

/// One order's windows and where its counts go.
struct Pending {
    ten_seconds: String,
    day: String,
    answer: oneshot::Sender<Option<(u32, u32)>>,
}

/// Orders waiting for their counts, and whether a batch is on its way.
pub(super) struct OrderCounts {
    redis: Arc<Redis>,
    pending: Mutex<Vec<Pending>>,
    sending: AtomicBool,
}

impl OrderCounts {
    /// Counts taken through `redis`.
    pub(super) fn new(redis: Arc<Redis>) -> Arc<Self> {
        Arc::new(Self {
            redis,
            pending: Mutex::new(Vec::new()),
            sending: AtomicBool::new(false),
        })
    }

    /// Raises the order counters `ten_seconds` and `day` by one; the counts
    /// after, `None` if Redis did not answer in time.
    pub(super) async fn count(
        self: &Arc<Self>,
        ten_seconds: String,
        day: String,
    ) -> Option<(u32, u32)> {
        let (answer, counts) = oneshot::channel();
        self.waiting().push(Pending {
            ten_seconds,
            day,
            answer,
        });
        if !self.sending.swap(true, Ordering::SeqCst) {
            // Passed on when this is answered, or dropped half-way.
            let _sending = Sending(self);
            self.send_batch().await;
        }
        counts.await.ok().flatten()
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, Vec<Pending>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sends the orders waiting (the earliest, up to a batch) as one
    /// pipeline and answers each. Called holding `sending`.
    async fn send_batch(&self) {
        let batch: Vec<Pending> = {
            let mut waiting = self.waiting();
            let taken = waiting.len().min(MOST_IN_A_BATCH);
            waiting.drain(..taken).collect()
        };
        if batch.is_empty() {
            return;
        }
        // Orders of one account in the same windows raise its counters
        // once, by how many they are, and take the counts below the new
        // value in their order: still one count each, fewer commands.
        let mut groups: Vec<(&str, &str, u32)> = Vec::new();
        let mut group_of = Vec::with_capacity(batch.len());
        for order in &batch {
            let keys = (order.ten_seconds.as_str(), order.day.as_str());
            let found = groups.iter().position(|(ten, day, _)| (*ten, *day) == keys);
            let group = found.unwrap_or_else(|| {
                groups.push((keys.0, keys.1, 0));
                groups.len() - 1
            });
            groups[group].2 += 1;
            group_of.push((group, groups[group].2));
        }
        let mut pipe = redis::pipe();
        for (ten_seconds, day, orders) in &groups {
            pipe.incr(*ten_seconds, *orders)
                .pexpire(*ten_seconds, 20_000)
                .ignore()
                .incr(*day, *orders)
                .pexpire(*day, 2 * 86_400_000)
                .ignore();
        }
        let counts: Option<Vec<u32>> = self.redis.pipeline(&pipe).await.ok();
        let answers: Vec<Option<(u32, u32)>> = group_of
            .iter()
            .map(|&(group, nth)| {
                let counts = counts.as_ref()?;
                let orders = groups[group].2;
                let (ten, day) = (*counts.get(2 * group)?, *counts.get(2 * group + 1)?);
                // The group's counts run up to the new value; this order's
                // is its place among them.
                let below = orders - nth;
                Some((ten.checked_sub(below)?, day.checked_sub(below)?))
            })
            .collect();
        for (order, counts) in batch.into_iter().zip(answers) {
            let _ = order.answer.send(counts);
        }
    }

    /// Lets go of `sending`; takes it again, answering whether it did, if
    /// orders came while it was held (they wait for whoever holds it).
    fn release(&self) -> bool {
        self.sending.store(false, Ordering::SeqCst);
        !self.waiting().is_empty() && !self.sending.swap(true, Ordering::SeqCst)
    }

    /// [`OrderCounts::release`], leaving the orders that came meanwhile to
    /// a task that sends them, so no order waits on nobody.
    fn pass_on(self: &Arc<Self>) {
        if !self.release() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            // No runtime (shutting down): nobody is left to answer.
            self.waiting().clear();
            self.sending.store(false, Ordering::SeqCst);
            return;
        };
        let counts = self.clone();
        runtime.spawn(async move {
            loop {
                counts.send_batch().await;
                if !counts.release() {
                    return;
                }
            }
        });
    }
}

/// Holding the right to send the next batch; passed on when dropped.
struct Sending<'a>(&'a Arc<OrderCounts>);

impl Drop for Sending<'_> {
    fn drop(&mut self) {
        self.0.pass_on();
    }
}
