//! Matching engine and sequencer throughput, against baselines measured in
//! the same run. `scripts/bench.sh engine` (env BENCH_COMMANDS; BENCH_ENGINE_ONLY=1
//! skips the sequencer, e.g. for profiling).
//!
//! - engine: a realistic mix (70 % limit orders near the touch, 25 % cancels,
//!   5 % market orders) over 100 funded accounts, one thread, no I/O;
//!   baseline: the bare price-level bookkeeping (BTreeMap of FIFO queues) for
//!   the same inserts and removals.
//! - sequencer: the same mix submitted by 1, 16 and 256 concurrent tasks
//!   through the durable group-commit path (RocksDB, WAL synced).

use std::collections::{BTreeMap, VecDeque};
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use weiport_exchange::engine::{Command, Engine};
use weiport_exchange::market::{Market, StpMode};
use weiport_exchange::order::{NewOrder, OrderType, ResponseType, Side, TimeInForce};
use weiport_exchange::sequencer::Sequencer;
use weiport_exchange::{Amount, AssetId, Catalog, MarketId};

const ACCOUNTS: u64 = 100;

fn catalog() -> Arc<Catalog> {
    Arc::new(Catalog::new(vec![market()]))
}

fn market() -> Market {
    Market {
        max_num_orders: 1_000_000,
        default_stp: StpMode::None,
        allowed_stp: vec![StpMode::None],
        ..weiport_exchange::market::tests_support::eth_usdt()
    }
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn funding() -> Vec<Command> {
    (1..=ACCOUNTS)
        .flat_map(|account| {
            [AssetId(0), AssetId(1)].map(|asset| Command::Credit {
                account,
                asset,
                amount: "10000000".parse().unwrap(),
            })
        })
        .collect()
}

/// The mix; cancels come from the owner of an earlier order, mostly a recent
/// one (some already filled or canceled by then).
fn mix(count: usize, seed: u64) -> Vec<Command> {
    let mut rng = Rng(seed);
    let mut owners: Vec<u64> = Vec::new();
    (0..count)
        .map(|_| {
            let roll = rng.next() % 100;
            let account = 1 + rng.next() % ACCOUNTS;
            if roll < 25 && !owners.is_empty() {
                // Every place takes the next order id (none is refused here).
                let back = (rng.next() % 1000).min(owners.len() as u64 - 1);
                let order_id = owners.len() as u64 - back;
                return Command::Cancel {
                    account: owners[order_id as usize - 1],
                    market: MarketId(0),
                    order_id,
                    cancel_client_id: None,
                    time_ms: 0,
                };
            }
            owners.push(account);
            let side = if rng.next().is_multiple_of(2) {
                Side::Buy
            } else {
                Side::Sell
            };
            let market_order = roll >= 95;
            // Near the touch: ±10 ticks around 3000, buys below, sells above, mostly.
            let offset = rng.next() % 10;
            let ticks = if side == Side::Buy {
                300_000 - offset
            } else {
                300_000 + offset - 2
            };
            Command::Place {
                account,
                time_ms: 0,
                order: NewOrder {
                    market: MarketId(0),
                    side,
                    order_type: if market_order {
                        OrderType::Market
                    } else {
                        OrderType::Limit
                    },
                    time_in_force: TimeInForce::Gtc,
                    quantity: Some(Amount::from_units((1 + rng.next() % 50) * 1_000_000)),
                    quote_quantity: None,
                    price: (!market_order).then(|| Amount::from_units(ticks * 1_000_000)),
                    client_order_id: None,
                    response_type: ResponseType::Ack,
                    stp: weiport_exchange::StpMode::None,
                    trigger: None,
                },
            }
        })
        .collect()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p) as usize]
}

fn engine_bench(count: usize, preallocated: usize) {
    let commands = mix(count, 0x5eed);
    // Baseline: the price-level structure alone doing one insert or removal per command.
    let started = Instant::now();
    let mut levels: BTreeMap<u64, VecDeque<u64>> = BTreeMap::new();
    for (id, command) in commands.iter().enumerate() {
        match command {
            Command::Place { order, .. } => levels
                .entry(order.price.map_or(0, Amount::units))
                .or_default()
                .push_back(id as u64),
            _ => {
                if let Some(mut entry) = levels.first_entry() {
                    entry.get_mut().pop_front();
                    if entry.get().is_empty() {
                        entry.remove();
                    }
                }
            }
        }
    }
    black_box(&levels);
    let baseline = started.elapsed();

    let mut engine = Engine::with_capacity(catalog(), 0, preallocated);
    for command in funding() {
        engine.apply(command);
    }
    // Commands are prepared up front and moved in, as a parsed request would be.
    // Events go to one reused buffer, as the sequencer's loop would use it.
    let prepared = commands.clone();
    let mut events = Vec::with_capacity(64);
    let started = Instant::now();
    for command in prepared {
        events.clear();
        engine.apply_into(command, &mut events);
        black_box(&events);
    }
    let total = started.elapsed();

    let resting = engine.resting_orders(MarketId(0));
    // Latency per command on a second, identical run.
    let mut engine = Engine::with_capacity(catalog(), 0, preallocated);
    for command in funding() {
        engine.apply(command);
    }
    let mut latencies: Vec<Duration> = commands
        .into_iter()
        .map(|command| {
            events.clear();
            let t = Instant::now();
            engine.apply_into(command, &mut events);
            black_box(&events);
            t.elapsed()
        })
        .collect();
    latencies.sort();
    let rate = |d: Duration| count as f64 / d.as_secs_f64();
    eprintln!("{resting} orders rest on the book at the end");
    println!(
        "| engine, {count} commands, {preallocated} orders preallocated | {:.2} M/s | {:.2} M/s | {:.3}× | {:?} | {:?} |",
        rate(baseline) / 1e6,
        rate(total) / 1e6,
        rate(total) / rate(baseline),
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
    );
}

fn sequencer_bench(count: usize, submitters: usize) {
    let dir = tempfile::tempdir().unwrap();
    let store = weiport_storage::Store::open(dir.path(), &Default::default()).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let sequencer = Arc::new(Sequencer::start(store, catalog(), 0, 4096).unwrap());
    runtime.block_on(async {
        for command in funding() {
            sequencer.submit(command).await.unwrap();
        }
    });
    let commands = mix(count, 0xfeed);
    let per_task = count / submitters;
    let started = Instant::now();
    runtime.block_on(async {
        let tasks: Vec<_> = commands
            .chunks(per_task.max(1))
            .map(|chunk| {
                let chunk = chunk.to_vec();
                let sequencer = sequencer.clone();
                tokio::spawn(async move {
                    for command in chunk {
                        sequencer.submit(command).await.unwrap();
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
    });
    let elapsed = started.elapsed();
    println!(
        "| sequencer, {submitters} submitters, {count} commands | {:.0} commands/s |",
        count as f64 / elapsed.as_secs_f64()
    );
}

fn main() {
    let count: usize = std::env::var("BENCH_COMMANDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    println!("| run | baseline | engine | ratio | p50 | p99 |\n|---|---|---|---|---|---|");
    // Growing on demand, then with order memory allocated and touched up
    // front, as a production engine sizes its pools at start.
    engine_bench(count, 0);
    engine_bench(count, count);
    if std::env::var_os("BENCH_ENGINE_ONLY").is_some() {
        return;
    }
    println!();
    for submitters in [1, 16, 256] {
        let commands = if submitters == 1 {
            count / 100
        } else {
            count / 10
        };
        sequencer_bench(commands.max(submitters), submitters);
    }
}
