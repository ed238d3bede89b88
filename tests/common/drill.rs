//! The replicated exchange's drills, shared: traders sending orders to every
//! process as fast as they are answered, what they were told, and the check
//! that every acknowledged order is in the books exactly once and that every
//! process (and a fresh replay of the journal) shows the same exchange.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{Key, Weiport, eventually, try_signed_request};

/// Traders in a drill.
pub const TRADERS: usize = 6;

/// The public URLs of the processes running now, as the traders pick them.
type Urls = Arc<RwLock<Vec<String>>>;

/// What the traders were told.
#[derive(Default)]
pub struct Told {
    /// Client order ids of every acknowledged order, by trader.
    pub acknowledged: Vec<Vec<String>>,
    /// Orders answered otherwise (refused, unavailable, no answer).
    pub unanswered: u64,
}

impl Told {
    /// Orders acknowledged, all traders together.
    pub fn count(&self) -> usize {
        self.acknowledged.iter().map(Vec::len).sum()
    }
}

/// `/admin/cluster` of a process, if it answers.
pub async fn cluster(weiport: &Weiport) -> Option<Value> {
    let (status, body) = weiport
        .admin(reqwest::Method::GET, "/admin/cluster", Value::Null)
        .await;
    (status == 200).then_some(body)
}

/// Six traders' keys, funded through `first`, once every process has them.
pub async fn funded_traders(first: &Weiport, processes: &[&Weiport]) -> Vec<Key> {
    let funds = [("USDT", "100000000"), ("ETH", "100000")];
    let mut keys = Vec::new();
    for _ in 0..TRADERS {
        keys.push(first.funded_key(&["read", "trade"], &funds).await);
    }
    for process in processes {
        eventually("every process has the traders' funds", async || {
            let (status, account) = process
                .signed(
                    reqwest::Method::GET,
                    "/api/v3/account",
                    &keys[TRADERS - 1],
                    "omitZeroBalances=true",
                )
                .await;
            status == 200 && account["balances"].as_array().is_some_and(|b| b.len() == 2)
        })
        .await;
    }
    keys
}

/// Traders at work.
pub struct Traders {
    urls: Urls,
    stop: Arc<AtomicBool>,
    acks: Arc<AtomicU64>,
    ack_times: Arc<Mutex<Vec<Instant>>>,
    handles: Vec<tokio::task::JoinHandle<(Vec<String>, u64)>>,
    started: Instant,
}

impl Traders {
    /// Each key trades against itself at the processes in `urls`, in turn.
    pub fn start(keys: &[Key], urls: Vec<String>) -> Self {
        let urls: Urls = Arc::new(RwLock::new(urls));
        let stop = Arc::new(AtomicBool::new(false));
        let acks = Arc::new(AtomicU64::new(0));
        let ack_times = Arc::new(Mutex::new(Vec::new()));
        let handles = keys
            .iter()
            .enumerate()
            .map(|(n, key)| {
                let acknowledged = Acknowledged {
                    count: acks.clone(),
                    times: ack_times.clone(),
                };
                tokio::spawn(trade(
                    n,
                    key.clone(),
                    urls.clone(),
                    stop.clone(),
                    acknowledged,
                ))
            })
            .collect();
        Self {
            urls,
            stop,
            acks,
            ack_times,
            handles,
            started: Instant::now(),
        }
    }

    /// The processes to send to from now on.
    pub fn send_to(&self, urls: Vec<String>) {
        *self.urls.write().unwrap() = urls;
    }

    /// Orders acknowledged so far.
    pub fn acks(&self) -> u64 {
        self.acks.load(Ordering::Relaxed)
    }

    /// The longest time between `from` and `to` in which no order was
    /// acknowledged.
    pub fn longest_pause(&self, from: Instant, to: Instant) -> Duration {
        let times = self.ack_times.lock().unwrap();
        let mut last = from;
        let mut longest = Duration::ZERO;
        for &time in times.iter().filter(|t| **t > from && **t <= to) {
            longest = longest.max(time - last);
            last = time;
        }
        longest.max(to.saturating_duration_since(last))
    }

    /// Waits until `more` orders beyond `since` are acknowledged: how long
    /// it took from `from`, or None after `limit`.
    pub async fn wait_for(
        &self,
        since: u64,
        more: u64,
        from: Instant,
        limit: Duration,
    ) -> Option<Duration> {
        loop {
            if self.acks() >= since + more {
                return Some(from.elapsed());
            }
            if from.elapsed() > limit {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Stops the traders: what they were told, and for how long they traded.
    pub async fn stop(self) -> (Told, Duration) {
        self.stop.store(true, Ordering::Release);
        let mut told = Told::default();
        for handle in self.handles {
            let (acknowledged, unanswered) = handle.await.unwrap();
            told.acknowledged.push(acknowledged);
            told.unanswered += unanswered;
        }
        (told, self.started.elapsed())
    }
}

/// Where the traders count their acknowledgements and note when each came.
struct Acknowledged {
    count: Arc<AtomicU64>,
    times: Arc<Mutex<Vec<Instant>>>,
}

/// Sends orders as `key` to the processes in `urls` in turn, crossing its
/// own side each time so they trade, until `stop`.
async fn trade(
    trader: usize,
    key: Key,
    urls: Urls,
    stop: Arc<AtomicBool>,
    acks: Acknowledged,
) -> (Vec<String>, u64) {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(15))
        .build()
        .unwrap();
    let (mut acknowledged, mut unanswered) = (Vec::new(), 0);
    let mut sent = 0u64;
    while !stop.load(Ordering::Acquire) {
        let url = {
            let urls = urls.read().unwrap();
            urls[(sent as usize + trader) % urls.len()].clone()
        };
        let (side, price) = if sent.is_multiple_of(2) {
            ("BUY", 2001)
        } else {
            ("SELL", 1999)
        };
        let id = format!("t{trader}-{sent}");
        let params = format!(
            "symbol=ETHUSDT&side={side}&type=LIMIT&timeInForce=GTC&quantity=0.01&price={price}&newClientOrderId={id}"
        );
        sent += 1;
        let answer = tokio::time::timeout(
            Duration::from_secs(20),
            try_signed_request(
                &client,
                &url,
                reqwest::Method::POST,
                "/api/v3/order",
                &key,
                &params,
                0,
            ),
        )
        .await;
        match answer {
            Ok(Ok((200, _))) => {
                acknowledged.push(id);
                acks.times.lock().unwrap().push(Instant::now());
                acks.count.fetch_add(1, Ordering::Relaxed);
            }
            _ => {
                unanswered += 1;
                // A process going or gone: the next one, after a breath.
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
    (acknowledged, unanswered)
}

/// Every order of `key`, oldest first, read in pages.
async fn all_orders(weiport: &Weiport, key: &Key) -> Vec<Value> {
    let mut orders = Vec::new();
    let mut from = 0u64;
    loop {
        let params = format!("symbol=ETHUSDT&orderId={from}&limit=1000");
        let (status, page) = weiport
            .signed(reqwest::Method::GET, "/api/v3/allOrders", key, &params)
            .await;
        assert_eq!(status, 200, "{page}");
        let page = page.as_array().unwrap().clone();
        let Some(last) = page.last() else {
            return orders;
        };
        from = last["orderId"].as_u64().unwrap() + 1;
        let full = page.len() == 1000;
        orders.extend(page);
        if !full {
            return orders;
        }
    }
}

/// What a client sees of the exchange: every trader's balances, orders and
/// trades, and the book.
async fn state(weiport: &Weiport, keys: &[Key]) -> Value {
    let mut seen = Vec::new();
    for key in keys {
        let (_, mut account) = weiport
            .signed(reqwest::Method::GET, "/api/v3/account", key, "")
            .await;
        account["updateTime"] = Value::Null;
        seen.push(account);
        seen.push(Value::Array(all_orders(weiport, key).await));
        let (_, trades) = weiport
            .signed(
                reqwest::Method::GET,
                "/api/v3/myTrades",
                key,
                "symbol=ETHUSDT&limit=1000",
            )
            .await;
        seen.push(trades);
    }
    let url = format!("{}/api/v3/depth?symbol=ETHUSDT&limit=5000", weiport.url);
    seen.push(reqwest::get(url).await.unwrap().json().await.unwrap());
    Value::Array(seen)
}

/// What the books hold of what the traders were told.
pub struct Audit {
    /// Acknowledged orders missing from the books.
    pub lost: Vec<String>,
    /// Orders in the books more than once.
    pub doubled: Vec<String>,
}

impl Audit {
    /// Fails the test unless every acknowledged order is there exactly once.
    pub fn assert_kept(&self) {
        assert!(
            self.lost.is_empty(),
            "acknowledged and lost: {:?}",
            self.lost
        );
        assert!(self.doubled.is_empty(), "applied twice: {:?}", self.doubled);
    }
}

/// Waits until every process has applied the primary's whole journal, then
/// asserts they all show the same exchange; what its books hold of `told`.
pub async fn audit(processes: &[&Weiport], keys: &[Key], told: &Told) -> Audit {
    let mut last = 0;
    for process in processes {
        if let Some(report) = cluster(process).await
            && report["role"] == "primary"
        {
            last = report["appliedSequence"].as_u64().unwrap();
        }
    }
    for process in processes {
        eventually("every process applied the whole journal", async || {
            cluster(process)
                .await
                .is_some_and(|r| r["appliedSequence"].as_u64() >= Some(last))
        })
        .await;
    }
    let expected = state(processes[0], keys).await;
    for process in &processes[1..] {
        assert!(state(process, keys).await == expected, "a process differs");
    }
    let mut audit = Audit {
        lost: Vec::new(),
        doubled: Vec::new(),
    };
    for (trader, ids) in told.acknowledged.iter().enumerate() {
        let orders = &expected[trader * 3 + 1];
        let mut seen: BTreeMap<&str, u32> = BTreeMap::new();
        for order in orders.as_array().unwrap() {
            *seen
                .entry(order["clientOrderId"].as_str().unwrap())
                .or_default() += 1;
        }
        audit.doubled.extend(
            seen.iter()
                .filter(|(_, n)| **n > 1)
                .map(|(id, _)| (*id).to_owned()),
        );
        audit.lost.extend(
            ids.iter()
                .filter(|id| !seen.contains_key(id.as_str()))
                .cloned(),
        );
    }
    audit
}

/// The `p` quantile of sorted durations.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}
