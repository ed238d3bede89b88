//! What a snapshot costs with many resting orders (release build; ignored
//! in the suite): the engine's pause while it writes one, its size, and a
//! start from it against a replay of the whole log.
//!   cargo test --release -p weiport-exchange --test snapshot_cost -- --ignored --nocapture

use std::sync::Arc;
use std::time::Instant;

use weiport_exchange::engine::Command;
use weiport_exchange::market::tests_support::eth_usdt;
use weiport_exchange::order::{NewOrder, OrderType, ResponseType, Side, TimeInForce};
use weiport_exchange::sequencer::{EngineSettings, Role, SNAPSHOT_FORMAT, Sequencer};
use weiport_exchange::{Amount, Catalog, MarketId, StpMode};
use weiport_storage::Store;

fn settings(snapshot_every: u64) -> EngineSettings {
    EngineSettings {
        fee_account: 99,
        capacity: 4096,
        snapshot_every,
    }
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
    // The next command after asking for a snapshot waits behind it.
    sequencer.snapshot_every(1);
    sequencer.submit(resting(accounts, 0)).await.unwrap();
    let paused = Instant::now();
    sequencer.snapshot_every(0);
    sequencer.submit(resting(accounts, 1)).await.unwrap();
    let paused = paused.elapsed();
    let commands = sequencer.view().sequence;
    Arc::into_inner(sequencer).unwrap().shutdown();
    let bytes: usize = {
        let (_, state) = store
            .exchange_snapshot::<serde_json::Value>(SNAPSHOT_FORMAT)
            .unwrap()
            .expect("a snapshot");
        serde_json::to_vec(&state).unwrap().len()
    };

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
        "snapshot: {orders} resting orders, {commands} commands: written in about {:.0} ms (the engine's pause), {:.1} MB; a start from it {:.0} ms, a replay of the whole log {:.0} ms",
        paused.as_secs_f64() * 1000.0,
        bytes as f64 / 1e6,
        from_snapshot.as_secs_f64() * 1000.0,
        whole_log.as_secs_f64() * 1000.0,
    );
}
