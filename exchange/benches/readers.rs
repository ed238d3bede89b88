//! Order acknowledgement latency while clients read a deep book, measured
//! three ways in the same run: with no readers (the baseline), with readers
//! that render the depth while holding the view's read lock (how `depth` read
//! the book before books were published as snapshots), and with readers that
//! take the published snapshot and render it with no lock held.
//! `scripts/bench.sh readers` (env BENCH_ORDERS, default 4000).
//!
//! The book holds 5,000 bid and 5,000 ask levels; one client places and
//! cancels a resting order in turn (each changes the book, so every read
//! after it renders anew) through the durable sequencer, and 8 reader
//! threads render `depth?limit=5000` the way the handler does: one shared
//! rendering per book update, rendered by the first reader to miss it.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod support;

use support::{MARKET, catalog, limit};
use weiport_exchange::engine::Command;
use weiport_exchange::order::Side;
use weiport_exchange::sequencer::Sequencer;
use weiport_exchange::{Amount, AssetId};

const LEVELS: u64 = 5_000;
const READERS: usize = 8;

#[derive(Clone, Copy, PartialEq)]
enum Readers {
    None,
    UnderLock,
    Snapshot,
}

/// The depth body, written as the handler writes it.
fn render<'a>(
    update_id: u64,
    bids: impl Iterator<Item = (&'a Amount, &'a Amount)>,
    asks: impl Iterator<Item = (&'a Amount, &'a Amount)>,
) -> String {
    let mut body = String::with_capacity(64 + 48 * 1000);
    let _ = write!(body, "{{\"lastUpdateId\":{update_id}");
    for (name, levels) in [
        ("bids", &mut bids.take(5000) as &mut dyn Iterator<Item = _>),
        ("asks", &mut asks.take(5000)),
    ] {
        let _ = write!(body, ",\"{name}\":[");
        for (i, (price, quantity)) in levels.enumerate() {
            body.push_str(if i == 0 { "[\"" } else { ",[\"" });
            price.push_to(&mut body);
            body.push_str("\",\"");
            quantity.push_to(&mut body);
            body.push_str("\"]");
        }
        body.push(']');
    }
    body.push('}');
    body
}

fn read_once(sequencer: &Sequencer, mode: Readers, cache: &Mutex<(u64, Arc<String>)>) -> usize {
    let cached = |update_id: u64| {
        let cache = cache.lock().unwrap();
        (cache.0 == update_id).then(|| cache.1.clone())
    };
    let body = match mode {
        Readers::None => unreachable!(),
        Readers::UnderLock => {
            let view = sequencer.view();
            let book = view.market(MARKET).unwrap();
            cached(book.update_id).unwrap_or_else(|| {
                let body = Arc::new(render(
                    book.update_id,
                    book.bids.iter().rev(),
                    book.asks.iter(),
                ));
                *cache.lock().unwrap() = (book.update_id, body.clone());
                body
            })
        }
        Readers::Snapshot => {
            let book = sequencer.book(MARKET).unwrap();
            cached(book.update_id).unwrap_or_else(|| {
                let body = Arc::new(render(
                    book.update_id,
                    book.bids.iter().map(|(p, q)| (p, q)),
                    book.asks.iter().map(|(p, q)| (p, q)),
                ));
                *cache.lock().unwrap() = (book.update_id, body.clone());
                body
            })
        }
    };
    body.len()
}

fn run(orders: usize, mode: Readers, pause: Duration) -> (Duration, Duration, usize) {
    let dir = tempfile::tempdir().unwrap();
    let store = weiport_storage::Store::open(dir.path(), &Default::default()).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let sequencer = Arc::new(Sequencer::start(store, catalog(), 0, 4096).unwrap());
    let tick = Amount::from_units(10_000_000); // 0.1
    runtime.block_on(async {
        for asset in [AssetId(0), AssetId(1)] {
            let amount = "100000000".parse().unwrap();
            let credit = Command::Credit {
                account: 1,
                asset,
                amount,
            };
            sequencer.submit(credit).await.unwrap();
        }
        // Submitted together, so they share group commits.
        let placed: Vec<_> = (0..LEVELS)
            .flat_map(|i| {
                let step = Amount::from_units(tick.units() * i);
                [
                    limit(
                        Side::Buy,
                        "100".parse::<Amount>().unwrap().saturating_add(step),
                    ),
                    limit(
                        Side::Sell,
                        "1000".parse::<Amount>().unwrap().saturating_add(step),
                    ),
                ]
            })
            .map(|order| {
                let sequencer = sequencer.clone();
                tokio::spawn(async move {
                    let command = Command::Place {
                        account: 1,
                        order,
                        time_ms: 0,
                    };
                    sequencer.submit(command).await.unwrap()
                })
            })
            .collect();
        for order in placed {
            order.await.unwrap();
        }
    });
    assert_eq!(
        sequencer.book(MARKET).unwrap().bids.len(),
        LEVELS as usize,
        "the deep book is built"
    );

    let stop = Arc::new(AtomicBool::new(false));
    let cache = Arc::new(Mutex::new((u64::MAX, Arc::new(String::new()))));
    let readers: Vec<_> = (0..if mode == Readers::None { 0 } else { READERS })
        .map(|_| {
            let (sequencer, stop, cache) = (sequencer.clone(), stop.clone(), cache.clone());
            std::thread::spawn(move || {
                let mut reads = 0;
                while !stop.load(Ordering::Relaxed) {
                    std::hint::black_box(read_once(&sequencer, mode, &cache));
                    reads += 1;
                    if !pause.is_zero() {
                        std::thread::sleep(pause);
                    }
                }
                reads
            })
        })
        .collect();

    let mut latencies = Vec::with_capacity(orders);
    runtime.block_on(async {
        let price: Amount = "700".parse().unwrap();
        for i in 0..orders {
            let command = if i % 2 == 0 {
                Command::Place {
                    account: 1,
                    order: limit(Side::Buy, price),
                    time_ms: 0,
                }
            } else {
                let id = 2 * LEVELS + 1 + i as u64 / 2;
                Command::Cancel {
                    account: 1,
                    market: MARKET,
                    order_id: id,
                    cancel_client_id: None,
                    time_ms: 0,
                }
            };
            let started = Instant::now();
            let outcome = sequencer.submit(command).await.unwrap();
            latencies.push(started.elapsed());
            assert!(outcome.accepted(), "order {i} accepted");
        }
    });
    stop.store(true, Ordering::Relaxed);
    let reads = readers.into_iter().map(|r| r.join().unwrap()).sum();
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q) as usize];
    (at(0.5), at(0.99), reads)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let orders: usize = std::env::var("BENCH_ORDERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4_000);
    let (_, none_p99, _) = run(orders, Readers::None, Duration::ZERO);
    println!(
        "| readers ({READERS} threads, depth of {LEVELS}+{LEVELS} levels) | pause between a reader's reads | order ack p50 | order ack p99 | p99 vs no readers | depth reads |"
    );
    println!("|---|---|---|---|---|---|");
    const BEFORE: &str = "render under the view's read lock (before)";
    const AFTER: &str = "render a published snapshot, no lock (after)";
    let mut runs = vec![("none (baseline)", Readers::None, Duration::ZERO)];
    for pause in [100, 10, 1, 0].map(Duration::from_millis) {
        runs.push((BEFORE, Readers::UnderLock, pause));
        runs.push((AFTER, Readers::Snapshot, pause));
    }
    for (name, mode, pause) in runs {
        let (p50, p99, reads) = run(orders, mode, pause);
        let pause = if mode == Readers::None {
            "–".to_owned()
        } else {
            format!("{pause:?}")
        };
        println!(
            "| {name} | {pause} | {p50:.2?} | {p99:.2?} | {:.2}× | {reads} |",
            p99.as_secs_f64() / none_p99.as_secs_f64()
        );
    }
}
