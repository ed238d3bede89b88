//! The application's share of a request, in process: weiport's router
//! (access guard, telemetry, parameters, handler, response) against the bare
//! axum application of the HTTP benchmarks, both called with
//! `tower::ServiceExt::oneshot` and their bodies collected. No sockets, so
//! neither the kernel nor a load generator's wake-ups weigh in: what is left
//! is the work a faster request path can remove.
//!
//! `scripts/bench.sh request_path`; or, with `REQUEST_PATH_COUNT=N` and
//! `REQUEST_PATH_CASE=<case>` (see [`CASES`]), N requests of one case in
//! [`repeat`], for counting instructions per request under callgrind
//! (`scripts/bench-instructions.sh`), which a noisy host cannot blur.

#[path = "support/baseline_app.rs"]
mod baseline_app;

// The allocator the server runs on (src/main.rs), for both applications:
// counted here, glibc's malloc and free cost several times as much.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::Request;
use criterion::{Criterion, criterion_group};
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

/// The address whose balance the query cases read, and the blocks indexed.
const ADDRESS: &str = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed";
const INDEXED_BLOCKS: u64 = 150;

/// weiport's routers over a fresh store, with limits that never refuse, a
/// key allowed to trade: the exchange, its admin router (to fund the key's
/// account) and the query API, whose index holds `ADDRESS`'s balance
/// changed in every one of `INDEXED_BLOCKS` blocks.
struct Routers {
    exchange: Router,
    admin: Router,
    query: Router,
    key: Key,
    account: u64,
}

fn weiport_routers(dir: &std::path::Path) -> Routers {
    let store = Store::open(dir, &StoreOptions::default()).expect("store");
    let address = ADDRESS.parse().expect("address");
    let mut batch = store.index_batch();
    batch.set_chain(1, &Default::default(), 0);
    for block in 0..INDEXED_BLOCKS {
        let wei = alloy_primitives::U256::from(10u128.pow(22) - u128::from(block));
        batch.set_balance(&address, block, &wei);
    }
    batch.set_cursor(&weiport_storage::Cursor {
        number: INDEXED_BLOCKS - 1,
        hash: Default::default(),
    });
    batch.commit().expect("index");
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
    let query = weiport_query_api::router(
        vec![weiport_query_api::ChainIndex::of(store.clone(), None)],
        access.clone(),
        weiport_query_api::QueryConfig::default(),
    );
    let exchange = Arc::new(
        weiport_exchange_api::Exchange::open(
            store,
            catalog,
            weiport_exchange::sequencer::EngineSettings {
                fee_account: 0,
                capacity: 64,
                snapshot_every: 0,
            },
            access,
            Vec::new(),
            weiport_exchange::sequencer::Role::Alone,
        )
        .expect("exchange"),
    );
    Routers {
        exchange: weiport_exchange_api::router(exchange.clone()),
        admin: weiport_exchange_api::admin_router(exchange),
        query,
        key,
        account,
    }
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

/// The measured cases: a name, the router that answers, and its request.
const CASES: [&str; 9] = [
    "bare-balance",
    "weiport-balance",
    "weiport-balance-history",
    "bare-ticker",
    "weiport-ticker",
    "bare-order",
    "weiport-order-test",
    "bare-durable-order",
    "weiport-order",
];

/// Both routers and the signed key, on a store in `dir`.
struct Setup {
    runtime: tokio::runtime::Runtime,
    weiport: Router,
    query: Router,
    bare: Router,
    key: Key,
}

impl Setup {
    fn new(dir: &std::path::Path) -> Self {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let Routers {
            exchange: weiport,
            admin,
            query,
            key,
            account,
        } = runtime.block_on(async { weiport_routers(dir) });
        // Enough quote asset for every order the durable case sends: each
        // expires unfilled (immediate-or-cancel below the book) and frees it.
        let credit = Request::builder()
            .method("POST")
            .uri(format!("/admin/accounts/{account}/credit"))
            .header("Content-Type", "application/json")
            .body(Body::from(r#"{"asset":"USDT","amount":"100000000"}"#))
            .expect("request");
        runtime.block_on(answer(&admin, credit));
        Self {
            runtime,
            weiport,
            query,
            bare: baseline_app::app(),
            key,
        }
    }

    /// A request maker for `case`, and the router it goes to. The order
    /// body is signed once: fresh for a minute.
    fn case(&self, case: &str) -> (&Router, Box<dyn Fn() -> Request<Body> + '_>) {
        const TICKER: &str = "/api/v3/ticker/price?symbol=ETHUSDT";
        let body = signed_order(&self.key);
        let key = self.key.id.clone();
        let balance =
            format!("/api?module=account&action=balance&address={ADDRESS}&tag=latest&apikey={key}");
        let history = format!(
            "/api?module=account&action=balancehistory&address={ADDRESS}&blockno=100&apikey={key}"
        );
        // The signed order, posted to `path` of `router`.
        let signed = move |router, path: &'static str| -> (&Router, Box<dyn Fn() -> _>) {
            (router, Box::new(move || post(path, &key, &body)))
        };
        match case {
            "bare-balance" => (&self.bare, Box::new(move || get(&balance))),
            "weiport-balance" => (&self.query, Box::new(move || get(&balance))),
            "weiport-balance-history" => (&self.query, Box::new(move || get(&history))),
            "bare-ticker" => (&self.bare, Box::new(|| get(TICKER))),
            "weiport-ticker" => (&self.weiport, Box::new(|| get(TICKER))),
            "bare-order" => signed(&self.bare, "/api/v3/order"),
            "weiport-order-test" => signed(&self.weiport, "/api/v3/order/test"),
            "bare-durable-order" => signed(&self.bare, "/durable/api/v3/order"),
            "weiport-order" => signed(&self.weiport, "/api/v3/order"),
            other => panic!("no case {other}; cases: {CASES:?}"),
        }
    }
}

fn request_path(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let setup = Setup::new(dir.path());
    let mut group = c.benchmark_group("request_path");
    for case in CASES {
        // Signed per case, so that each case's body stays within its
        // recvWindow however long the ones before it ran.
        let (router, request) = setup.case(case);
        group.bench_function(case, |b| {
            b.iter(|| setup.runtime.block_on(answer(router, request())))
        });
    }
    group.finish();
}

/// `count` requests of one case: the span callgrind counts.
#[inline(never)]
fn repeat(setup: &Setup, router: &Router, request: &dyn Fn() -> Request<Body>, count: u64) {
    for _ in 0..count {
        setup.runtime.block_on(answer(router, request()));
    }
}

criterion_group!(benches, request_path);

fn main() {
    // The bare group commit's log, removed with this directory at the end.
    let logs = tempfile::tempdir().expect("temp dir");
    if std::env::var_os("BASELINE_LOG_DIR").is_none() {
        // SAFETY: no other thread runs yet to read the environment.
        unsafe { std::env::set_var("BASELINE_LOG_DIR", logs.path()) };
    }
    let Ok(count) = std::env::var("REQUEST_PATH_COUNT") else {
        benches();
        Criterion::default().configure_from_args().final_summary();
        return;
    };
    let count = count.parse().expect("REQUEST_PATH_COUNT: a number");
    let case = std::env::var("REQUEST_PATH_CASE").expect("REQUEST_PATH_CASE");
    let dir = tempfile::tempdir().expect("temp dir");
    let setup = Setup::new(dir.path());
    let (router, request) = setup.case(&case);
    // Caches, metric handles and the allocator's pages, as a running
    // server has them; outside `repeat`, so not counted.
    for _ in 0..200 {
        setup.runtime.block_on(answer(router, request()));
    }
    repeat(&setup, router, &request, count);
}
