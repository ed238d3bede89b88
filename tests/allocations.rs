//! Heap allocations of the busiest reads, counted by a global allocator:
//! the application's share of a request (routing, access guard with
//! telemetry, parameters, handler, response) for `ticker/price`, `depth`
//! and Etherscan's `balance`. The listener and hyper add their own few per
//! request on top, as they do for any handler. Of the bounds below, about
//! twelve are the router's own (its extensions, and a boxed clone and
//! future per layer); the rest are ours: the caller's extension, the
//! guard's future, the body, the response's headers.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use alloy_primitives::{Address, B256, U256};
use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::Request;
use tower::ServiceExt;
use weiport_access::{Access, KeyStore, Limiter, LimitsConfig, MasterKey, NewKey, Permission};
use weiport_exchange::Catalog;
use weiport_exchange::engine::Command;
use weiport_storage::{Cursor, Store, StoreOptions};

/// Counts every allocation (and reallocation) made on the current thread.
struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    // During thread teardown the counter may be gone; nothing to count then.
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
}

// SAFETY: every call is passed on to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// Mean allocations on this thread per answer of `uri` (after a warm-up
/// that registers the route's metric handles and fills caches).
async fn allocations_per_request(router: &Router, uri: &str) -> f64 {
    let peer: SocketAddr = "127.0.0.1:40000".parse().unwrap();
    let request = || {
        Request::builder()
            .uri(uri)
            .extension(ConnectInfo(peer))
            .body(Body::empty())
            .unwrap()
    };
    for _ in 0..100 {
        let response = router.clone().oneshot(request()).await.unwrap();
        assert_eq!(response.status(), 200, "{uri}");
    }
    const REQUESTS: u64 = 1_000;
    let mut counted = 0;
    for _ in 0..REQUESTS {
        let request = request();
        let before = ALLOCATIONS.with(Cell::get);
        let response = router.clone().oneshot(request).await.unwrap();
        counted += ALLOCATIONS.with(Cell::get) - before;
        drop(response);
    }
    counted as f64 / REQUESTS as f64
}

/// A good-till-canceled limit order for 0.01 at `price`.
fn limit(
    market: weiport_exchange::catalog::MarketId,
    side: weiport_exchange::order::Side,
    price: &str,
) -> weiport_exchange::order::NewOrder {
    use weiport_exchange::market::StpMode;
    use weiport_exchange::order::{NewOrder, OrderType, ResponseType, TimeInForce};
    NewOrder {
        market,
        side,
        order_type: OrderType::Limit,
        time_in_force: TimeInForce::Gtc,
        quantity: Some("0.01".parse().unwrap()),
        quote_quantity: None,
        price: Some(price.parse().unwrap()),
        client_order_id: None,
        response_type: ResponseType::Ack,
        stp: StpMode::None,
        trigger: None,
    }
}

fn access(store: &Store, dir: &std::path::Path) -> (Arc<Access>, String) {
    let limits = LimitsConfig {
        ip_weight_per_minute: u32::MAX,
        key_weight_per_minute: u32::MAX,
        query_tiers: HashMap::from([("default".to_owned(), u32::MAX)]),
        ..LimitsConfig::default()
    };
    let limiter = Limiter::new(limits);
    let master = MasterKey::load(None, &dir.join("master.key")).unwrap();
    let keys = KeyStore::open(store.clone(), master, limiter.tiers(), "default".into()).unwrap();
    let account = keys.create_account("reader").unwrap().id;
    let key = keys
        .create_key(NewKey {
            account,
            permissions: vec![Permission::Read, Permission::Trade],
            ..NewKey::default()
        })
        .unwrap();
    (
        Arc::new(Access::new(keys, limiter, vec![], 65_536)),
        key.info.id,
    )
}

#[tokio::test(flavor = "current_thread")]
async fn market_data_reads_stay_within_their_allocation_budget() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
    let (access, _) = access(&store, dir.path());
    let market = weiport_exchange::market::tests_support::eth_usdt();
    let catalog = Arc::new(Catalog::new(vec![market]));
    let exchange = Arc::new(
        weiport_exchange_api::Exchange::open(
            store,
            catalog.clone(),
            weiport_exchange::sequencer::EngineSettings {
                fee_account: 0,
                capacity: 64,
                snapshot_every: 0,
            },
            access,
            Vec::new(),
            weiport_exchange::sequencer::Role::Alone,
        )
        .unwrap(),
    );
    // A book and a last trade to show.
    let (eth, usdt) = (
        catalog.asset_id("ETH").unwrap(),
        catalog.asset_id("USDT").unwrap(),
    );
    let market_id = catalog.market_id("ETHUSDT").unwrap();
    for (account, asset) in [(1, usdt), (2, eth)] {
        let amount = "1000000".parse().unwrap();
        let credit = Command::Credit {
            account,
            asset,
            amount,
        };
        exchange.sequencer.submit(credit).await.unwrap();
    }
    for level in 0..50u64 {
        for (account, side, price) in [
            (1, weiport_exchange::order::Side::Buy, 2000 + level),
            (2, weiport_exchange::order::Side::Sell, 3000 + level),
        ] {
            let order = limit(market_id, side, &price.to_string());
            let place = Command::Place {
                account,
                order,
                time_ms: weiport_exchange::now_ms(),
            };
            exchange.sequencer.submit(place).await.unwrap();
        }
    }
    let taker = limit(market_id, weiport_exchange::order::Side::Buy, "3000");
    let place = Command::Place {
        account: 1,
        order: taker,
        time_ms: weiport_exchange::now_ms(),
    };
    exchange.sequencer.submit(place).await.unwrap();
    let router = weiport_exchange_api::router(exchange);

    let ticker = allocations_per_request(&router, "/api/v3/ticker/price?symbol=ETHUSDT").await;
    let depth = allocations_per_request(&router, "/api/v3/depth?symbol=ETHUSDT&limit=100").await;
    eprintln!("allocations per request: ticker/price {ticker:.1}, depth {depth:.1}");
    assert!(
        ticker <= 17.0,
        "ticker/price: {ticker:.1} allocations per request"
    );
    assert!(depth <= 15.0, "depth: {depth:.1} allocations per request");
}

#[tokio::test(flavor = "current_thread")]
async fn an_etherscan_balance_stays_within_its_allocation_budget() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
    let (access, key) = access(&store, dir.path());
    let holder: Address = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
        .parse()
        .unwrap();
    let mut batch = store.index_batch();
    batch.set_chain(31337, &B256::ZERO, 0);
    for block in 0..=150u64 {
        batch.set_balance(&holder, block, &U256::from(10u64.pow(18) + block));
    }
    batch.set_cursor(&Cursor {
        number: 150,
        hash: B256::ZERO,
    });
    batch.commit().unwrap();
    let router = weiport_query_api::router(
        vec![weiport_query_api::ChainIndex::of(store, None)],
        access,
        Default::default(),
    );

    let latest = allocations_per_request(
        &router,
        &format!("/api?module=account&action=balance&address={holder}&tag=latest&apikey={key}"),
    )
    .await;
    let past = allocations_per_request(
        &router,
        &format!(
            "/api?module=account&action=balancehistory&address={holder}&blockno=100&apikey={key}"
        ),
    )
    .await;
    eprintln!("allocations per request: balance {latest:.1}, balancehistory {past:.1}");
    assert!(
        latest <= 13.0,
        "balance: {latest:.1} allocations per request"
    );
    assert!(
        past <= 13.0,
        "balancehistory: {past:.1} allocations per request"
    );
}
