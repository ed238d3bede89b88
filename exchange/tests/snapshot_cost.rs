//! What a snapshot costs with many resting orders (release build; ignored
//! in the suite): the engine's pause while it copies its state for one, its
//! size, and a start from it against a replay of the whole log.
//!   cargo test --release -p weiport-exchange --test snapshot_cost -- --ignored --nocapture

use std::sync::Arc;
use std::time::Instant;

use weiport_exchange::engine::Command;
use weiport_exchange::market::tests_support::eth_usdt;
use weiport_exchange::order::{NewOrder, OrderType, ResponseType, Side, TimeInForce};
use weiport_exchange::sequencer::{EngineSettings, Role, SNAPSHOT_FORMAT, Sequencer};
use weiport_exchange::{Amount, Catalog, MarketId, StpMode};
use weiport_storage::Store;

// The allocator the binary ships with: a copy's cost is mostly its memory.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn settings(snapshot_every: u64) -> EngineSettings {
    EngineSettings {
        fee_account: 99,
        capacity: 4096,
        snapshot_every,
    }
}

/// Commands timed one after another, with and without a snapshot.
const STREAM: u64 = 300;
/// Snapshots taken, one after another.
const ROUNDS: u64 = 5;

fn ms(duration: std::time::Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn resting(account: u64, n: u64) -> Command {
    let side = if n.is_multiple_of(2) {
        Side::Buy
    } else {
        Side::Sell
    };
    let price = match side {
        Side::Buy => 1000 + n % 500,
        Side::Sell => 5000 + n % 500,
    };
    Command::Place {
        account,
        time_ms: 1,
        order: NewOrder {
            market: MarketId(0),
            side,
            order_type: OrderType::Limit,
            time_in_force: TimeInForce::Gtc,
            quantity: Some("0.01".parse().unwrap()),
            quote_quantity: None,
            price: Some(Amount::from_units(price * 100_000_000)),
            client_order_id: None,
            response_type: ResponseType::Ack,
            stp: StpMode::None,
            trigger: None,
        },
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: run in release with --ignored --nocapture"]
async fn snapshot_cost_with_many_resting_orders() {
    let orders: u64 = std::env::var("SNAPSHOT_ORDERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), &Default::default()).unwrap();
    let catalog = Arc::new(Catalog::new(vec![eth_usdt()]));
    let start = |every| {
        Sequencer::start_replicated(
            store.clone(),
            catalog.clone(),
            settings(every),
            vec![],
            Role::Alone,
        )
        .unwrap()
    };
    let sequencer = Arc::new(start(0));
    // At most 100 resting orders an account: under every market's limit.
    let accounts = orders / 100 + 1;
    for account in 1..=accounts {
        for asset in ["USDT", "ETH"] {
            let credit = Command::Credit {
                account,
                asset: catalog.asset_id(asset).unwrap(),
                amount: "1000000".parse().unwrap(),
            };
            sequencer.submit(credit).await.unwrap();
        }
    }
    let handles: Vec<_> = (0..orders)
        .map(|n| {
            let sequencer = sequencer.clone();
            tokio::spawn(async move { sequencer.submit(resting(1 + n / 100, n)).await.unwrap() })
        })
        .collect();
    for handle in handles {
        assert!(handle.await.unwrap().accepted());
    }
    // Commands one after another, each timed: first alone, then from the
    // moment a snapshot is taken, while the engine copies its state and the
    // writer encodes and syncs it; the slowest of each shows the pause.
    // Several snapshots: the first copies into fresh memory, later ones
    // into the memory of the one before.
    let one_by_one = |first: u64, until_written: Option<u64>| {
        let (sequencer, store, catalog) = (sequencer.clone(), store.clone(), catalog.clone());
        async move {
            let started = Instant::now();
            let mut latencies = Vec::new();
            for n in first.. {
                let written = || {
                    let header = store.exchange_snapshot_header().unwrap();
                    until_written
                        .is_none_or(|sequence| header.is_some_and(|(_, at, _)| at >= sequence))
                };
                if n >= first + STREAM && written() {
                    break;
                }
                // A credit: logged and synced like an order, and never
                // refused for too many open orders.
                let credit = Command::Credit {
                    account: accounts + 1 + n % 7,
                    asset: catalog.asset_id("USDT").unwrap(),
                    amount: "1".parse().unwrap(),
                };
                let sent = Instant::now();
                assert!(sequencer.submit(credit).await.unwrap().accepted());
                latencies.push(sent.elapsed());
            }
            Latencies::of(latencies, started.elapsed())
        }
    };
    let alone = one_by_one(0, None).await;
    let mut snapshots = Vec::new();
    for round in 1..=ROUNDS {
        // The last writer's thread ends after its file is in place: a
        // snapshot due while it runs is put off to a later batch.
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        // Due at the next command and not again for as long: one snapshot,
        // whenever the engine thread comes to it.
        let last_at = store
            .exchange_snapshot_header()
            .unwrap()
            .map_or(0, |(_, at, _)| at);
        sequencer.snapshot_every(sequencer.view().sequence + 1 - last_at);
        let trigger = sequencer.submit(resting(accounts, 0)).await.unwrap();
        let latencies = one_by_one(round * 100_000, Some(trigger.sequence)).await;
        sequencer.snapshot_every(0);
        snapshots.push((
            sequencer.snapshot_pause().expect("a snapshot taken"),
            latencies,
        ));
    }
    eprintln!("snapshot: commands one by one, no snapshot: {alone}");
    for (round, (paused, latencies)) in snapshots.iter().enumerate() {
        eprintln!(
            "snapshot: snapshot {}: the engine paused {:.2} ms to copy; {latencies}",
            round + 1,
            ms(*paused)
        );
    }
    let commands = sequencer.view().sequence;
    Arc::into_inner(sequencer).unwrap().shutdown();
    let (format, _, bytes) = store
        .exchange_snapshot_header()
        .unwrap()
        .expect("a snapshot");
    assert_eq!(format, SNAPSHOT_FORMAT);

    let started = Instant::now();
    let restarted = start(0);
    let from_snapshot = started.elapsed();
    assert!(restarted.started_from() > 0);
    drop(restarted);
    store.drop_exchange_snapshot().unwrap();
    let started = Instant::now();
    let replayed = start(0);
    let whole_log = started.elapsed();
    assert_eq!(replayed.started_from(), 0);
    eprintln!(
        "snapshot: {orders} resting orders, {commands} commands; {:.1} MB ({} bytes a resting order); a start from it {:.0} ms, a replay of the whole log {:.0} ms",
        bytes as f64 / 1e6,
        bytes as u64 / orders,
        from_snapshot.as_secs_f64() * 1000.0,
        whole_log.as_secs_f64() * 1000.0,
    );
}

/// Commands' latencies, sorted, and how long they took together.
struct Latencies(Vec<std::time::Duration>, std::time::Duration);

impl Latencies {
    fn of(mut latencies: Vec<std::time::Duration>, over: std::time::Duration) -> Self {
        latencies.sort();
        Self(latencies, over)
    }
}

impl std::fmt::Display for Latencies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Self(sorted, over) = self;
        let at = |share: f64| ms(sorted[((sorted.len() - 1) as f64 * share) as usize]);
        write!(
            f,
            "{} commands over {:.0} ms: median {:.2} ms, p99 {:.2} ms, slowest {:.2} ms",
            sorted.len(),
            ms(*over),
            at(0.5),
            at(0.99),
            at(1.0),
        )
    }
}
