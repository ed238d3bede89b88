//! The bare axum application the HTTP benchmarks measure weiport against:
//! constant Etherscan-, Binance- and CoinGecko-shaped bodies (a balance, a
//! new-order acknowledgement, a price, a book, a simple price), served over
//! sockets by `examples/baseline_server.rs` and called in process by
//! `benches/request_path.rs`; and one durable route, a group commit with
//! nothing else, the floor of any order acknowledged only once on disk.

use axum::Router;
use axum::body::Bytes;
use axum::routing::{get, post};

const BODY: &str = r#"{"status":"1","message":"OK","result":"10000000000000000000000"}"#;
const ORDER: &str = r#"{"symbol":"ETHUSDT","orderId":1,"orderListId":-1,"clientOrderId":"6gCrw2kRUAF9CvJDGP16IP","transactTime":1507725176595}"#;
const PRICE: &str = r#"{"symbol":"ETHUSDT","price":"3000.00000000"}"#;
const SIMPLE_PRICE: &str = r#"{"ethereum":{"usd":3000,"usd_24h_change":0.0,"usd_24h_vol":30,"last_updated_at":1711356300}}"#;

/// A book of the size the benchmark builds (90 levels a side), so both
/// servers send the same bytes.
fn depth_body() -> &'static str {
    let level = |price: u32| format!("[\"{price}.00000000\",\"0.01000000\"]");
    let bids: Vec<String> = (2000..2090).rev().map(level).collect();
    let asks: Vec<String> = (4000..4090).map(level).collect();
    let body = format!(
        r#"{{"lastUpdateId":1027024,"bids":[{}],"asks":[{}]}}"#,
        bids.join(","),
        asks.join(",")
    );
    Box::leak(body.into_boxed_str())
}

fn json(body: &'static str) -> impl axum::response::IntoResponse {
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body,
    )
}

/// The routes, each answering its constant body.
pub fn app() -> Router {
    Router::new()
        .route("/api", get(|| async { json(BODY) }))
        // Reads the body, as a real order handler must.
        .route(
            "/api/v3/order",
            post(|body: Bytes| async move {
                std::hint::black_box(body);
                json(ORDER)
            }),
        )
        // Acknowledged once the body is on disk, as weiport's orders are.
        .route(
            "/durable/api/v3/order",
            post(|body: Bytes| async move {
                durable::append(body).await;
                json(ORDER)
            }),
        )
        .route("/api/v3/ticker/price", get(|| async { json(PRICE) }))
        .route("/api/v3/simple/price", get(|| async { json(SIMPLE_PRICE) }))
        .route("/api/v3/depth", {
            let depth = depth_body();
            get(move || async move { json(depth) })
        })
}

/// A group commit and nothing else: one thread appends every waiting body
/// to a log file with one write and one `fdatasync`, then acknowledges them,
/// shaped as weiport's engine thread commits (it lets the request workers
/// run first, drains its queue, and runs under `SCHED_BATCH`) without an
/// engine, a store or anything recorded. What a durable order costs on this
/// machine however little else it does.
mod durable {
    use std::io::Write;
    use std::sync::OnceLock;
    use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, sync_channel};

    use axum::body::Bytes;
    use tokio::sync::oneshot;

    type Pending = (Bytes, oneshot::Sender<()>);

    /// Appends `body` to the log and returns once it is on disk.
    pub async fn append(body: Bytes) {
        static QUEUE: OnceLock<SyncSender<Pending>> = OnceLock::new();
        let queue = QUEUE.get_or_init(|| {
            let (queue, pending) = sync_channel(4096);
            std::thread::spawn(move || commit(pending));
            queue
        });
        let (done, committed) = oneshot::channel();
        // The queue holds far more than any benchmark's connections, so
        // this send, blocking in an async handler, never waits.
        queue.send((body, done)).expect("the committer runs");
        committed.await.expect("the committer answers");
    }

    fn commit(pending: Receiver<Pending>) {
        let dir = std::env::var_os("BASELINE_LOG_DIR").map_or_else(std::env::temp_dir, Into::into);
        let path = dir.join(format!("baseline-{}.log", std::process::id()));
        let mut log = std::fs::File::create(&path).expect("creating the baseline log");
        // SAFETY: reads the parameter block it is given, for this thread.
        unsafe {
            let param = libc::sched_param { sched_priority: 0 };
            libc::sched_setscheduler(0, libc::SCHED_BATCH, &param);
        }
        let mut bytes = Vec::new();
        let mut batch = Vec::new();
        while let Ok(first) = pending.recv() {
            std::thread::yield_now();
            batch.push(first);
            while batch.len() < 1024 {
                match pending.try_recv() {
                    Ok(more) => batch.push(more),
                    Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
                }
            }
            bytes.clear();
            for (body, _) in &batch {
                bytes.extend_from_slice(&(body.len() as u32).to_le_bytes());
                bytes.extend_from_slice(body);
            }
            log.write_all(&bytes)
                .expect("appending to the baseline log");
            log.sync_data().expect("syncing the baseline log");
            for (_, done) in batch.drain(..) {
                let _ = done.send(());
            }
        }
    }
}
