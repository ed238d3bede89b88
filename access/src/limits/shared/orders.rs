//! Order counts taken in Redis, the counts of orders placed at the same
//! time in one round trip: each order's two INCRs stay its own (no two
//! orders see the same count, so the counts stay exact), but a batch goes
//! out as one pipeline, as a group commit writes one log entry for many.
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
        let mut pipe = redis::pipe();
        for order in &batch {
            pipe.incr(&order.ten_seconds, 1)
                .pexpire(&order.ten_seconds, 20_000)
                .ignore()
                .incr(&order.day, 1)
                .pexpire(&order.day, 2 * 86_400_000)
                .ignore();
        }
        let counts: Option<Vec<u32>> = self.redis.pipeline(&pipe).await.ok();
        for (n, order) in batch.into_iter().enumerate() {
            let pair = counts
                .as_ref()
                .and_then(|counts| Some((*counts.get(2 * n)?, *counts.get(2 * n + 1)?)));
            let _ = order.answer.send(pair);
        }
    }

    /// Lets go of `sending`; if orders came while it was held, takes it
    /// again for a task that sends them, so no order waits on nobody.
    fn pass_on(self: &Arc<Self>) {
        self.sending.store(false, Ordering::SeqCst);
        if self.waiting().is_empty() || self.sending.swap(true, Ordering::SeqCst) {
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
                counts.sending.store(false, Ordering::SeqCst);
                if counts.waiting().is_empty() || counts.sending.swap(true, Ordering::SeqCst) {
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
