//! The route table against the router: guards, weights and answers.

use super::*;
use axum::body::Body;
use axum::http::Request;
use tower::ServiceExt;
use weiport_access::{KeyStore, Limiter, LimitsConfig, MasterKey, NewKey};
use weiport_exchange::Catalog;
use weiport_exchange::engine::Command;
use weiport_exchange::market::tests_support::eth_usdt;
use weiport_storage::{Store, StoreOptions};

/// The exchange over a store in `dir`, with one funded trading key.
fn exchange(dir: &tempfile::TempDir) -> (Arc<Exchange>, String, String) {
    let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
    let master = MasterKey::load(None, &dir.path().join("master.key")).unwrap();
    let limiter = Limiter::new(LimitsConfig::default());
    let keys = KeyStore::open(store.clone(), master, limiter.tiers(), "default".into()).unwrap();
    let account = keys.create_account("test").unwrap().id;
    let created = keys
        .create_key(NewKey {
            account,
            permissions: vec![Permission::Read, Permission::Trade],
            ..NewKey::default()
        })
        .unwrap();
    let access = Arc::new(weiport_access::Access::new(keys, limiter, vec![], 65_536));
    let catalog = Arc::new(Catalog::new(vec![eth_usdt()]));
    let exchange = Arc::new(
        Exchange::open(
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
        .unwrap(),
    );
    (exchange, created.info.id, created.secret.unwrap())
}

async fn call(
    router: &Router,
    method: &str,
    uri: &str,
    key: Option<&str>,
) -> (u16, serde_json::Value) {
    let mut request = Request::builder().method(method).uri(uri);
    if let Some(key) = key {
        request = request.header("X-MBX-APIKEY", key);
    }
    let response = router
        .clone()
        .oneshot(request.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status().as_u16();
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    (status, serde_json::from_slice(&bytes).unwrap_or_default())
}

fn signed(secret: &str, params: &str) -> String {
    let payload = format!("{params}&timestamp={}", weiport_exchange::now_ms());
    let signature = weiport_access::sign_hmac_sha256(secret.as_bytes(), payload.as_bytes());
    format!("{payload}&signature={signature}")
}

#[tokio::test]
async fn handlers_answer_in_process_without_a_server() {
    let dir = tempfile::tempdir().unwrap();
    let (exchange, key, secret) = exchange(&dir);
    exchange
        .sequencer
        .submit(Command::Credit {
            account: 1,
            asset: exchange.catalog.asset_id("USDT").unwrap(),
            amount: "10000".parse().unwrap(),
        })
        .await
        .unwrap();
    let router = router(exchange);

    let (status, depth) = call(&router, "GET", "/api/v3/depth?symbol=ETHUSDT&limit=5", None).await;
    assert_eq!(
        (status, depth["bids"].as_array().map(Vec::len)),
        (200, Some(0))
    );
    let (status, refused) =
        call(&router, "GET", "/api/v3/depth?symbol=ETHUSDT&extra=1", None).await;
    assert_eq!(status, 400);
    assert_eq!(
        refused["msg"],
        "Not all sent parameters were read; read '1' parameter(s) but was sent '2'."
    );

    let order = signed(
        &secret,
        "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=0.5&price=3000&newOrderRespType=RESULT",
    );
    let (status, placed) = call(
        &router,
        "POST",
        &format!("/api/v3/order?{order}"),
        Some(&key),
    )
    .await;
    assert_eq!(status, 200, "{placed}");
    assert_eq!(
        (placed["status"].as_str(), placed["orderId"].as_u64()),
        (Some("NEW"), Some(1))
    );
    let open = signed(&secret, "symbol=ETHUSDT");
    let (_, open) = call(
        &router,
        "GET",
        &format!("/api/v3/openOrders?{open}"),
        Some(&key),
    )
    .await;
    assert_eq!(open.as_array().map(Vec::len), Some(1));
    let (status, _) = call(&router, "GET", "/api/v3/account", None).await;
    assert_eq!(status, 401, "signed routes need a key");
}

/// Binance's WebSocket API methods, each of which the table must name once.
const BINANCE_WS_METHODS: &[&str] = &[
    "ping",
    "time",
    "exchangeInfo",
    "depth",
    "trades.recent",
    "trades.historical",
    "trades.aggregate",
    "klines",
    "uiKlines",
    "avgPrice",
    "ticker.24hr",
    "ticker.tradingDay",
    "ticker",
    "ticker.price",
    "ticker.book",
    "order.place",
    "order.test",
    "order.status",
    "order.cancel",
    "order.cancelReplace",
    "order.amend.keepPriority",
    "openOrders.status",
    "openOrders.cancelAll",
    "orderList.place.oco",
    "orderList.place.oto",
    "orderList.place.otoco",
    "orderList.status",
    "orderList.cancel",
    "openOrderLists.status",
    "allOrderLists",
    "allOrders",
    "myTrades",
    "myPreventedMatches",
    "account.status",
    "account.rateLimits.orders",
    "account.commission",
    "session.logon",
    "session.status",
    "session.logout",
    "userDataStream.subscribe",
    "userDataStream.subscribe.signature",
    "userDataStream.unsubscribe",
];

#[test]
fn the_websocket_api_names_each_binance_method_once() {
    let table = routes();
    let names: Vec<&str> = table.iter().filter_map(|r| r.ws).collect();
    let mut unique = names.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "a method named twice");
    for wanted in BINANCE_WS_METHODS {
        assert!(names.contains(wanted), "{wanted} is not served");
    }
    assert!(
        table
            .iter()
            .filter(|r| r.method == SOCKET)
            .all(|r| r.ws.is_some() && r.path.starts_with('/'))
    );
    // The document shows each method once, and no socket-only route as a path.
    let document = openapi();
    let methods = document["x-ws-api"]["methods"].as_object().unwrap();
    assert_eq!(methods.len(), names.len());
    assert_eq!(methods["order.place"]["sameAs"], "POST /api/v3/order");
    assert_eq!(methods["session.logon"]["sameAs"], serde_json::Value::Null);
    assert_eq!(
        document["paths"]["/api/v3/order"]["post"]["x-ws-api-method"],
        "order.place"
    );
    assert!(document["paths"].get("/session.logon").is_none());
}
