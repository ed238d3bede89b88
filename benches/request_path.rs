//! The application's share of a request, in process: weiport's router
//! (access guard, telemetry, parameters, handler, response) against the bare
//! axum application of the HTTP benchmarks, both called with
//! `tower::ServiceExt::oneshot` and their bodies collected. No sockets, so
//! neither the kernel nor a load generator's wake-ups weigh in: what is left
//! is the work a faster request path can remove.
//!
//! `scripts/bench.sh request_path`

#[path = "support/baseline_app.rs"]
mod baseline_app;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::Request;
use criterion::{Criterion, criterion_group, criterion_main};
use tower::ServiceExt;
use weiport_access::{
    Access, KeyStore, Limiter, LimitsConfig, MasterKey, NewKey, Permission, sign_hmac_sha256,
};
use weiport_exchange::Catalog;
use weiport_storage::{Store, StoreOptions};

/// An API key's id and secret.
struct Key {
    id: String,
    secret: String,
}

/// weiport's exchange router over a fresh store, with limits that never
/// refuse, and a key allowed to trade.
fn weiport_router(dir: &std::path::Path) -> (Router, Key) {
    let store = Store::open(dir, &StoreOptions::default()).expect("store");
    let limits = LimitsConfig {
        ip_weight_per_minute: u32::MAX,
        key_weight_per_minute: u32::MAX,
        orders_per_10s: u32::MAX,
        orders_per_day: u32::MAX,
        query_tiers: HashMap::from([("default".to_owned(), u32::MAX)]),
        ..LimitsConfig::default()
    };
    let limiter = Limiter::new(limits);
    let master = MasterKey::load(None, &dir.join("master.key")).expect("master key");
    let keys = KeyStore::open(store.clone(), master, limiter.tiers(), "default".into())
        .expect("key store");
    let account = keys.create_account("bench").expect("account").id;
    let created = keys
        .create_key(NewKey {
            account,
            permissions: vec![Permission::Read, Permission::Trade],
            ..NewKey::default()
        })
        .expect("key");
    let key = Key {
        id: created.info.id,
        secret: created.secret.expect("an HMAC key has a secret"),
    };
    let access = Arc::new(Access::new(keys, limiter, vec![], 65_536));
    let market = weiport_exchange::market::tests_support::eth_usdt();
    let catalog = Arc::new(Catalog::new(vec![market]));
    let exchange =
        weiport_exchange_api::Exchange::open(store, catalog, 0, 64, access).expect("exchange");
    (weiport_exchange_api::router(Arc::new(exchange)), key)
}

/// A signed order body as clients send it, fresh for the next minute.
fn signed_order(key: &Key) -> String {
    let now = weiport_exchange_api::now_ms();
    let body = format!(
        "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=IOC&quantity=0.01&price=1000\
         &newOrderRespType=ACK&timestamp={now}&recvWindow=60000"
    );
    let signature = sign_hmac_sha256(key.secret.as_bytes(), body.as_bytes());
    format!("{body}&signature={signature}")
}

fn get(uri: &str) -> Request<Body> {
    let peer: SocketAddr = "127.0.0.1:40000".parse().expect("address");
    Request::builder()
        .uri(uri)
        .extension(ConnectInfo(peer))
        .body(Body::empty())
        .expect("request")
}

fn post(uri: &str, key: &str, body: &str) -> Request<Body> {
    let peer: SocketAddr = "127.0.0.1:40000".parse().expect("address");
    Request::builder()
        .method("POST")
        .uri(uri)
        .header("X-MBX-APIKEY", key)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .extension(ConnectInfo(peer))
        .body(Body::from(body.to_owned()))
        .expect("request")
}

/// One request through `router`, its body read whole.
async fn answer(router: &Router, request: Request<Body>) {
    let response = router.clone().oneshot(request).await.expect("infallible");
    assert!(response.status().is_success(), "{}", response.status());
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("body");
    std::hint::black_box(body);
}

fn request_path(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let (weiport, key) = runtime.block_on(async { weiport_router(dir.path()) });
    let bare = baseline_app::app();
    let ticker = "/api/v3/ticker/price?symbol=ETHUSDT";
    let mut group = c.benchmark_group("request_path");
    for (name, router) in [("bare", &bare), ("weiport", &weiport)] {
        group.bench_function(format!("{name}: GET ticker/price"), |b| {
            b.iter(|| runtime.block_on(answer(router, get(ticker))))
        });
    }
    // The signed order without the engine (order/test: authenticated,
    // limited, parsed and checked against the market's filters) against a
    // bare handler that reads the same body.
    group.bench_function("bare: POST order (body read)", |b| {
        let body = signed_order(&key);
        b.iter(|| runtime.block_on(answer(&bare, post("/api/v3/order", &key.id, &body))))
    });
    group.bench_function("weiport: POST order/test (signed)", |b| {
        let body = signed_order(&key);
        b.iter(|| runtime.block_on(answer(&weiport, post("/api/v3/order/test", &key.id, &body))))
    });
    group.finish();
}

criterion_group!(benches, request_path);
criterion_main!(benches);
