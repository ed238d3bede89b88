//! Trading while proof-of-reserves snapshots are taken, against trading
//! with none, in the same run: one client places and cancels a resting
//! order through the durable sequencer while, in the second run, a thread
//! takes snapshots back to back of every account's claims (copied from the
//! read side under its lock, the tree built off it).
//! `scripts/bench.sh reserves` or `cargo bench -p weiport-exchange --bench
//! reserves` (env BENCH_ACCOUNTS, default 1,000,000; BENCH_ORDERS, 4,000).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use weiport_exchange::engine::Command;
use weiport_exchange::order::Side;
use weiport_exchange::sequencer::Sequencer;
use weiport_exchange::{Amount, AssetId};
use weiport_reserves::{Owed, Snapshot};

mod support;

use support::{catalog, limit};

/// What one run measured.
struct Measured {
    orders_per_second: f64,
    p50: Duration,
    p99: Duration,
    max: Duration,
    snapshots: usize,
    longest_copy: Duration,
    longest_build: Duration,
}

fn run(
    sequencer: &Arc<Sequencer>,
    runtime: &tokio::runtime::Runtime,
    orders: usize,
    snapshots: bool,
) -> Measured {
    let stop = Arc::new(AtomicBool::new(false));
    let taker = snapshots.then(|| {
        let (sequencer, stop) = (sequencer.clone(), stop.clone());
        std::thread::spawn(move || {
            let (mut taken, mut longest_copy, mut longest_build) =
                (0, Duration::ZERO, Duration::ZERO);
            while !stop.load(Ordering::Relaxed) {
                let started = Instant::now();
                let (sequence, claims) = {
                    let view = sequencer.view();
                    (view.sequence, view.claims(0, 2))
                };
                longest_copy = longest_copy.max(started.elapsed());
                let started = Instant::now();
                let owed = claims
                    .iter()
                    .map(|(account, amounts)| Owed {
                        account,
                        amounts: amounts.to_vec(),
                    })
                    .collect();
                let snapshot = Snapshot::take(
                    &[7; 32],
                    sequence,
                    0,
                    vec!["ETH".into(), "USDT".into()],
                    owed,
                    Vec::new(),
                )
                .unwrap();
                std::hint::black_box(snapshot.root());
                longest_build = longest_build.max(started.elapsed());
                taken += 1;
            }
            (taken, longest_copy, longest_build)
        })
    });
    let price: Amount = "700".parse().unwrap();
    let mut latencies = Vec::with_capacity(orders);
    let started = Instant::now();
    runtime.block_on(async {
        for i in 0..orders {
            let command = if i % 2 == 0 {
                Command::Place {
                    account: 1,
                    order: limit(Side::Buy, price),
                    time_ms: 0,
                }
            } else {
                let placed = sequencer.view().accounts[&1].open.iter().next().copied();
                let (market, order_id) = placed.expect("the order just placed rests");
                Command::Cancel {
                    account: 1,
                    market,
                    order_id,
                    cancel_client_id: None,
                    time_ms: 0,
                }
            };
            let sent = Instant::now();
            let outcome = sequencer.submit(command).await.unwrap();
            latencies.push(sent.elapsed());
            assert!(outcome.accepted(), "command {i} accepted");
        }
    });
    let elapsed = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    let (snapshots, longest_copy, longest_build) =
        taker
            .map(|t| t.join().unwrap())
            .unwrap_or((0, Duration::ZERO, Duration::ZERO));
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q) as usize];
    Measured {
        orders_per_second: orders as f64 / elapsed.as_secs_f64(),
        p50: at(0.5),
        p99: at(0.99),
        max: at(1.0),
        snapshots,
        longest_copy,
        longest_build,
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let number = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let accounts = number("BENCH_ACCOUNTS", 1_000_000) as u64;
    let orders = number("BENCH_ORDERS", 4_000);
    let dir = tempfile::tempdir().unwrap();
    let store = weiport_storage::Store::open(dir.path(), &Default::default()).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let sequencer = Arc::new(Sequencer::start(store, catalog(), 0, 65_536).unwrap());
    let started = Instant::now();
    runtime.block_on(async {
        // Submitted in waves, so they share group commits.
        let wave = 20_000;
        for first in (1..=accounts).step_by(wave) {
            let last = (first + wave as u64 - 1).min(accounts);
            let credits: Vec<_> = (first..=last)
                .map(|account| {
                    let sequencer = sequencer.clone();
                    tokio::spawn(async move {
                        let amount = Amount::from_units(100_000_000 + account % 1_000);
                        for asset in [AssetId(0), AssetId(1)] {
                            let credit = Command::Credit {
                                account,
                                asset,
                                amount,
                            };
                            sequencer.submit(credit).await.unwrap();
                        }
                    })
                })
                .collect();
            for credit in credits {
                credit.await.unwrap();
            }
        }
    });
    runtime.block_on(async {
        // The trading client's quote, enough for every bid it places.
        let credit = Command::Credit {
            account: 1,
            asset: AssetId(1),
            amount: "1000000".parse().unwrap(),
        };
        sequencer.submit(credit).await.unwrap();
    });
    println!(
        "{accounts} accounts credited in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let none = run(&sequencer, &runtime, orders, false);
    let taking = run(&sequencer, &runtime, orders, true);
    println!(
        "| snapshots | orders a second | vs none | ack p50 | ack p99 | ack max | snapshots taken | longest copy under the lock | longest tree build |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for (name, m) in [("none (baseline)", &none), ("back to back", &taking)] {
        println!(
            "| {name} | {:.0} | {:.2}× | {:.2?} | {:.2?} | {:.2?} | {} | {:.1?} | {:.1?} |",
            m.orders_per_second,
            m.orders_per_second / none.orders_per_second,
            m.p50,
            m.p99,
            m.max,
            m.snapshots,
            m.longest_copy,
            m.longest_build
        );
    }
}
