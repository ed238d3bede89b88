//! Binance's WebSocket API on `weiport serve`, over real sockets: every
//! trading, account and market method answers what the REST route answers,
//! signed per request (HMAC) or after an Ed25519 `session.logon`; the same
//! refusals, limits and `rateLimits`; hostile frames answered one by one.

mod common;

use std::time::Duration;

use common::ws::{Socket, connect, ed25519_key, public, ws_api_signed};
use common::{Key, Weiport, now_ms, two_traders};
use futures::{SinkExt, StreamExt};
use reqwest::Method;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

/// A WebSocket API client: numbered requests, answers matched by id.
struct Api {
    socket: Socket,
    next_id: u64,
}

impl Api {
    async fn open(weiport: &Weiport, query: &str) -> Self {
        Self {
            socket: connect(weiport, &format!("/ws-api/v3{query}")).await,
            next_id: 0,
        }
    }

    /// Sends `text` as it is.
    async fn raw(&mut self, text: &str) {
        self.socket
            .send(Message::Text(text.to_owned().into()))
            .await
            .unwrap();
    }

    /// The next answer (user data events skipped).
    async fn answer(&mut self) -> Value {
        loop {
            let message = tokio::time::timeout(Duration::from_secs(10), self.socket.next())
                .await
                .expect("an answer within 10 s")
                .expect("the connection stays open")
                .unwrap();
            if let Message::Text(text) = message {
                let frame: Value = serde_json::from_str(&text).unwrap();
                if frame.get("subscriptionId").is_none() {
                    return frame;
                }
            }
        }
    }

    /// Calls `method` with `params`; the whole answer.
    async fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = format!("req-{}", self.next_id);
        let request = json!({ "id": id, "method": method, "params": params });
        self.raw(&request.to_string()).await;
        let answer = self.answer().await;
        assert_eq!(answer["id"], id.as_str(), "{answer}");
        answer
    }

    /// Calls `method` signed with `key`'s HMAC secret, as Binance's
    /// WebSocket API is signed: parameters sorted by name.
    async fn signed(&mut self, key: &Key, method: &str, params: Value) -> Value {
        let params = ws_api_signed(key, params);
        self.call(method, params).await
    }

    /// The `result` of a call that must succeed.
    async fn ok(&mut self, key: Option<&Key>, method: &str, params: Value) -> Value {
        let answer = match key {
            Some(key) => self.signed(key, method, params).await,
            None => self.call(method, params).await,
        };
        assert_eq!(answer["status"], 200, "{method}: {answer}");
        answer["result"].clone()
    }
}

/// What REST answers to `key`'s signed `method path?params`.
async fn rest(weiport: &Weiport, key: &Key, method: Method, path: &str, params: &str) -> Value {
    let (status, answer) = weiport.signed(method, path, key, params).await;
    assert_eq!(status, 200, "{path}: {answer}");
    answer
}

/// `value` without the fields that tell the time of the answer itself.
fn timeless(mut value: Value) -> Value {
    if let Some(object) = value.as_object_mut() {
        for field in ["serverTime", "closeTime", "openTime", "updateTime"] {
            object.remove(field);
        }
        for (_, inner) in object.iter_mut() {
            *inner = timeless(inner.take());
        }
    } else if let Some(array) = value.as_array_mut() {
        for inner in array {
            *inner = timeless(inner.take());
        }
    }
    value
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_method_answers_over_one_socket_what_rest_answers() {
    let (weiport, _dir, maker, taker) = two_traders().await;
    let mut api = Api::open(&weiport, "").await;

    // Trading: place, read, amend, cancel-replace, trade, cancel.
    let answer = api
        .signed(
            &maker,
            "order.place",
            json!({ "symbol": "ETHUSDT", "side": "SELL", "type": "LIMIT", "timeInForce": "GTC",
                    "quantity": "1", "price": "3000", "newClientOrderId": "ws-1" }),
        )
        .await;
    assert_eq!(answer["status"], 200, "{answer}");
    let placed = &answer["result"];
    assert_eq!(placed["clientOrderId"], "ws-1");
    let limits = answer["rateLimits"].as_array().expect("rateLimits");
    assert_eq!(
        limits.len(),
        3,
        "weight, orders per 10 s and per day: {answer}"
    );
    assert_eq!(
        (&limits[0]["rateLimitType"], &limits[1]["rateLimitType"]),
        (&json!("REQUEST_WEIGHT"), &json!("ORDERS"))
    );
    assert_eq!(limits[1]["count"], 1);
    let order_id = placed["orderId"].as_u64().unwrap();
    let reference = format!("symbol=ETHUSDT&orderId={order_id}");
    let status = api
        .ok(
            Some(&maker),
            "order.status",
            json!({ "symbol": "ETHUSDT", "orderId": order_id }),
        )
        .await;
    let by_rest = rest(&weiport, &maker, Method::GET, "/api/v3/order", &reference).await;
    assert_eq!(status, by_rest);
    // A client that sends ids as strings (ccxt.pro) reads the same order.
    let by_text = api
        .ok(
            Some(&maker),
            "order.status",
            json!({ "symbol": "ETHUSDT", "orderId": order_id.to_string() }),
        )
        .await;
    assert_eq!(by_text, by_rest);

    let amended = api
        .ok(
            Some(&maker),
            "order.amend.keepPriority",
            json!({ "symbol": "ETHUSDT", "orderId": order_id, "newQty": "0.9" }),
        )
        .await;
    assert_eq!(amended["amendedOrder"]["qty"], "0.90000000", "{amended}");
    let replaced = api
        .ok(
            Some(&maker),
            "order.cancelReplace",
            json!({ "symbol": "ETHUSDT", "cancelReplaceMode": "STOP_ON_FAILURE", "cancelOrderId": order_id,
                    "side": "SELL", "type": "LIMIT", "timeInForce": "GTC", "quantity": "1", "price": "3000" }),
        )
        .await;
    assert_eq!(
        (&replaced["cancelResult"], &replaced["newOrderResult"]),
        (&json!("SUCCESS"), &json!("SUCCESS")),
        "{replaced}"
    );
    let open = api
        .ok(
            Some(&maker),
            "openOrders.status",
            json!({ "symbol": "ETHUSDT" }),
        )
        .await;
    let by_rest = rest(
        &weiport,
        &maker,
        Method::GET,
        "/api/v3/openOrders",
        "symbol=ETHUSDT",
    )
    .await;
    assert_eq!(open, by_rest);
    assert_eq!(open.as_array().map(Vec::len), Some(1));

    let bought = api
        .ok(
            Some(&taker),
            "order.place",
            json!({ "symbol": "ETHUSDT", "side": "BUY", "type": "MARKET", "quantity": "0.4" }),
        )
        .await;
    assert_eq!(bought["status"], "FILLED", "{bought}");
    assert_eq!(bought["fills"][0]["price"], "3000.00000000");

    for (method, path, params) in [
        (
            "myTrades",
            "/api/v3/myTrades",
            json!({ "symbol": "ETHUSDT" }),
        ),
        (
            "allOrders",
            "/api/v3/allOrders",
            json!({ "symbol": "ETHUSDT" }),
        ),
        (
            "account.commission",
            "/api/v3/account/commission",
            json!({ "symbol": "ETHUSDT" }),
        ),
        (
            "account.rateLimits.orders",
            "/api/v3/rateLimit/order",
            json!({}),
        ),
        (
            "myPreventedMatches",
            "/api/v3/myPreventedMatches",
            json!({ "symbol": "ETHUSDT", "orderId": order_id }),
        ),
        ("openOrderLists.status", "/api/v3/openOrderList", json!({})),
        ("allOrderLists", "/api/v3/allOrderList", json!({})),
    ] {
        for key in [&maker, &taker] {
            let socket = api.ok(Some(key), method, params.clone()).await;
            let query: Vec<String> = params
                .as_object()
                .unwrap()
                .iter()
                .map(|(name, value)| match value {
                    Value::String(text) => format!("{name}={text}"),
                    other => format!("{name}={other}"),
                })
                .collect();
            let by_rest = rest(&weiport, key, Method::GET, path, &query.join("&")).await;
            assert_eq!(socket, by_rest, "{method}");
        }
    }
    let balances = api.ok(Some(&taker), "account.status", json!({})).await;
    let by_rest = rest(&weiport, &taker, Method::GET, "/api/v3/account", "").await;
    assert_eq!(timeless(balances), timeless(by_rest));

    let tested = api
        .ok(
            Some(&taker),
            "order.test",
            json!({ "symbol": "ETHUSDT", "side": "BUY", "type": "LIMIT", "timeInForce": "GTC",
                    "quantity": "0.1", "price": "2000", "computeCommissionRates": true }),
        )
        .await;
    assert!(
        tested["standardCommissionForOrder"]["maker"].is_string(),
        "{tested}"
    );

    // Order lists: place, read, cancel.
    let list = api
        .ok(
            Some(&maker),
            "orderList.place.oco",
            json!({ "symbol": "ETHUSDT", "side": "SELL", "quantity": "1", "aboveType": "LIMIT_MAKER",
                    "abovePrice": "3500", "belowType": "STOP_LOSS", "belowStopPrice": "2500" }),
        )
        .await;
    let list_id = list["orderListId"].as_u64().expect("an order list");
    let status = api
        .ok(
            Some(&maker),
            "orderList.status",
            json!({ "orderListId": list_id }),
        )
        .await;
    let by_rest = rest(
        &weiport,
        &maker,
        Method::GET,
        "/api/v3/orderList",
        &format!("orderListId={list_id}"),
    )
    .await;
    assert_eq!(status, by_rest);
    let canceled = api
        .ok(
            Some(&maker),
            "orderList.cancel",
            json!({ "symbol": "ETHUSDT", "orderListId": list_id }),
        )
        .await;
    assert_eq!(canceled["listOrderStatus"], "ALL_DONE", "{canceled}");

    let resting = api
        .ok(
            Some(&maker),
            "openOrders.status",
            json!({ "symbol": "ETHUSDT" }),
        )
        .await;
    let resting_id = resting[0]["orderId"].as_u64().unwrap();
    let canceled = api
        .ok(
            Some(&maker),
            "order.cancel",
            json!({ "symbol": "ETHUSDT", "orderId": resting_id }),
        )
        .await;
    assert_eq!(canceled["status"], "CANCELED", "{canceled}");
    api.ok(
        Some(&maker),
        "order.place",
        json!({ "symbol": "ETHUSDT", "side": "SELL", "type": "LIMIT", "timeInForce": "GTC", "quantity": "0.1", "price": "3300" }),
    )
    .await;
    let all = api
        .ok(
            Some(&maker),
            "openOrders.cancelAll",
            json!({ "symbol": "ETHUSDT" }),
        )
        .await;
    assert_eq!(all.as_array().map(Vec::len), Some(1), "{all}");
    assert_eq!(
        rest(
            &weiport,
            &maker,
            Method::GET,
            "/api/v3/openOrders",
            "symbol=ETHUSDT"
        )
        .await,
        json!([])
    );

    // Market data, unsigned: the REST route's answer.
    for (method, path, params) in [
        ("ping", "/api/v3/ping", json!({})),
        (
            "depth",
            "/api/v3/depth?symbol=ETHUSDT&limit=5",
            json!({ "symbol": "ETHUSDT", "limit": 5 }),
        ),
        (
            "trades.recent",
            "/api/v3/trades?symbol=ETHUSDT",
            json!({ "symbol": "ETHUSDT" }),
        ),
        (
            "trades.historical",
            "/api/v3/historicalTrades?symbol=ETHUSDT&fromId=0",
            json!({ "symbol": "ETHUSDT", "fromId": 0 }),
        ),
        (
            "trades.aggregate",
            "/api/v3/aggTrades?symbol=ETHUSDT",
            json!({ "symbol": "ETHUSDT" }),
        ),
        (
            "klines",
            "/api/v3/klines?symbol=ETHUSDT&interval=1d",
            json!({ "symbol": "ETHUSDT", "interval": "1d" }),
        ),
        (
            "uiKlines",
            "/api/v3/uiKlines?symbol=ETHUSDT&interval=1h",
            json!({ "symbol": "ETHUSDT", "interval": "1h" }),
        ),
        (
            "avgPrice",
            "/api/v3/avgPrice?symbol=ETHUSDT",
            json!({ "symbol": "ETHUSDT" }),
        ),
        (
            "ticker.24hr",
            "/api/v3/ticker/24hr?symbol=ETHUSDT",
            json!({ "symbol": "ETHUSDT" }),
        ),
        ("ticker.price", "/api/v3/ticker/price", json!({})),
        (
            "ticker.book",
            "/api/v3/ticker/bookTicker?symbols=%5B%22ETHUSDT%22%5D",
            json!({ "symbols": ["ETHUSDT"] }),
        ),
        (
            "ticker",
            "/api/v3/ticker?symbol=ETHUSDT&windowSize=1h",
            json!({ "symbol": "ETHUSDT", "windowSize": "1h" }),
        ),
        (
            "ticker.tradingDay",
            "/api/v3/ticker/tradingDay?symbol=ETHUSDT",
            json!({ "symbol": "ETHUSDT" }),
        ),
        (
            "exchangeInfo",
            "/api/v3/exchangeInfo?symbol=ETHUSDT",
            json!({ "symbol": "ETHUSDT" }),
        ),
    ] {
        let socket = api.ok(None, method, params).await;
        assert_eq!(
            timeless(socket),
            timeless(public(&weiport, path).await),
            "{method}"
        );
    }
    let time = api.ok(None, "time", json!({})).await;
    assert!(time["serverTime"].as_u64().unwrap() >= now_ms() - 60_000);

    // Listen keys over the socket (a key, no signature).
    let started = api
        .ok(None, "userDataStream.start", json!({ "apiKey": maker.id }))
        .await;
    let listen_key = started["listenKey"]
        .as_str()
        .expect("a listen key")
        .to_owned();
    api.ok(
        None,
        "userDataStream.ping",
        json!({ "apiKey": maker.id, "listenKey": listen_key }),
    )
    .await;
    api.ok(
        None,
        "userDataStream.stop",
        json!({ "apiKey": maker.id, "listenKey": listen_key }),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_logged_on_session_trades_unsigned_until_its_key_is_revoked() {
    let (weiport, _dir, maker, _taker) = two_traders().await;
    let (ed_key, sign) = ed25519_key(&weiport, maker.account, &["read", "trade"]).await;
    let mut api = Api::open(&weiport, "?returnRateLimits=false").await;
    let timestamp = now_ms();
    let logon = api
        .ok(
            None,
            "session.logon",
            json!({ "apiKey": ed_key, "timestamp": timestamp,
                    "signature": sign(&format!("apiKey={ed_key}&timestamp={timestamp}")) }),
        )
        .await;
    assert_eq!(logon["apiKey"], ed_key.as_str());
    assert_eq!(logon["returnRateLimits"], false);

    // Unsigned but timed: the session's key places and reads.
    let answer = api
        .call(
            "order.place",
            json!({ "symbol": "ETHUSDT", "side": "SELL", "type": "LIMIT", "timeInForce": "GTC",
                    "quantity": "0.5", "price": "3200", "timestamp": now_ms() }),
        )
        .await;
    assert_eq!(answer["status"], 200, "{answer}");
    assert!(
        answer.get("rateLimits").is_none(),
        "hidden on this connection: {answer}"
    );
    let order_id = answer["result"]["orderId"].as_u64().unwrap();
    let answer = api
        .call(
            "account.status",
            json!({ "returnRateLimits": true, "timestamp": now_ms() }),
        )
        .await;
    assert_eq!(answer["status"], 200, "{answer}");
    assert_eq!(
        answer["rateLimits"][0]["rateLimitType"], "REQUEST_WEIGHT",
        "shown when asked"
    );
    let answer = api.call("account.status", json!({})).await;
    assert_eq!(
        answer["error"]["code"], -1102,
        "a session's request is still timed: {answer}"
    );
    // A request signed by another key is that key's, logon or not.
    let answer = api
        .signed(
            &maker,
            "order.status",
            json!({ "symbol": "ETHUSDT", "orderId": order_id }),
        )
        .await;
    assert_eq!(answer["result"]["orderId"], order_id);

    // Revoked: the session's next request is refused, and changes nothing.
    let (status, revoked) = weiport
        .admin(
            Method::POST,
            &format!("/admin/keys/{ed_key}/revoke"),
            json!({}),
        )
        .await;
    assert!(status < 300, "{revoked}");
    let answer = api
        .call(
            "order.cancel",
            json!({ "symbol": "ETHUSDT", "orderId": order_id, "timestamp": now_ms() }),
        )
        .await;
    assert_eq!(answer["status"], 401, "{answer}");
    let open = rest(
        &weiport,
        &maker,
        Method::GET,
        "/api/v3/openOrders",
        "symbol=ETHUSDT",
    )
    .await;
    assert_eq!(open.as_array().map(Vec::len), Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_carry_the_request_id_and_change_nothing() {
    let (weiport, _dir, maker, _taker) = two_traders().await;
    let reader = weiport.funded_key(&["read"], &[("USDT", "1000")]).await;
    let elsewhere = weiport
        .key(json!({ "permissions": ["read", "trade"], "allowed_ips": ["10.0.0.1"] }))
        .await;
    let mut api = Api::open(&weiport, "").await;
    let order = json!({ "symbol": "ETHUSDT", "side": "SELL", "type": "LIMIT", "timeInForce": "GTC",
                        "quantity": "0.1", "price": "3000" });
    let code = |answer: &Value| (answer["status"].clone(), answer["error"]["code"].clone());

    api.raw("this is not json").await;
    let answer = api.answer().await;
    assert_eq!(
        (&answer["id"], code(&answer).1),
        (&Value::Null, json!(-1100))
    );
    let answer = api.call("order.teleport", json!({})).await;
    assert_eq!(code(&answer).1, -1020, "{answer}");
    let mut unsigned = order.clone();
    unsigned["apiKey"] = json!(maker.id);
    unsigned["timestamp"] = json!(now_ms());
    let answer = api.call("order.place", unsigned.clone()).await;
    assert_eq!(code(&answer).1, -1102, "no signature: {answer}");
    unsigned["signature"] = json!("00".repeat(32));
    let answer = api.call("order.place", unsigned).await;
    assert_eq!(code(&answer), (json!(401), json!(-1022)), "{answer}");
    let mut stale = order.clone();
    stale["timestamp"] = json!(now_ms() - 120_000);
    let answer = api.signed(&maker, "order.place", stale).await;
    assert_eq!(code(&answer).1, -1021, "{answer}");
    let answer = api.signed(&reader, "order.place", order.clone()).await;
    assert_eq!(
        code(&answer),
        (json!(401), json!(-2015)),
        "no trade permission: {answer}"
    );
    let answer = api.signed(&elsewhere, "account.status", json!({})).await;
    assert_eq!(code(&answer).1, -2015, "off the key's addresses: {answer}");
    let mut unread = order.clone();
    unread["colour"] = json!("blue");
    let answer = api.signed(&maker, "order.place", unread).await;
    assert_eq!(code(&answer).1, -1104, "{answer}");
    let mut unknown = order.clone();
    unknown["symbol"] = json!("NOPE");
    let answer = api.signed(&maker, "order.place", unknown).await;
    assert_eq!(code(&answer).1, -1121, "{answer}");
    let answer = api
        .call("ping", json!({ "returnRateLimits": "maybe" }))
        .await;
    assert_eq!(code(&answer).1, -1130, "{answer}");
    for answer in [
        api.call("depth", json!({ "symbol": "ETHUSDT", "limit": "many" }))
            .await,
        api.call("klines", json!({ "symbol": "ETHUSDT", "interval": "7s" }))
            .await,
    ] {
        assert_eq!(answer["status"], 400, "{answer}");
    }
    let open = rest(
        &weiport,
        &maker,
        Method::GET,
        "/api/v3/openOrders",
        "symbol=ETHUSDT",
    )
    .await;
    assert_eq!(open, json!([]), "no refused request placed anything");

    // Frames sent back to back, garbage among them: each answered, by id.
    let mut expected = Vec::new();
    for n in 0..20 {
        match n % 4 {
            0 => api.raw("{\"id\":").await,
            1 => api.raw(&format!(r#"{{"id":{n},"method":"ping"}}"#)).await,
            2 => {
                api.raw(&format!(
                    r#"{{"id":{n},"method":"depth","params":{{"symbol":"ETHUSDT"}}}}"#
                ))
                .await
            }
            _ => {
                api.raw(&format!(r#"{{"id":{n},"method":"ping","params":[]}}"#))
                    .await
            }
        }
        expected.push(n);
    }
    let mut answered = Vec::new();
    for _ in 0..20 {
        let answer = api.answer().await;
        let status = answer["status"].as_u64().unwrap();
        let id = answer["id"].as_u64();
        match id {
            Some(id) if id % 4 == 1 || id % 4 == 2 => assert_eq!(status, 200, "{answer}"),
            Some(_) => assert_eq!(answer["error"]["code"], -1104, "{answer}"),
            None => assert_eq!(answer["error"]["code"], -1100, "{answer}"),
        }
        answered.push(id);
    }
    for n in expected.iter().filter(|n| *n % 4 != 0) {
        assert!(answered.contains(&Some(*n)), "{n} answered: {answered:?}");
    }
    let answer = api.call("ping", json!({})).await;
    assert_eq!(answer["status"], 200, "the connection serves on: {answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_socket_spends_the_same_budget_as_rest() {
    let dir = tempfile::tempdir().unwrap();
    let weiport = Weiport::serve(
        dir.path(),
        &[
            ("WEIPORT_INDEXER__ENABLED", "false"),
            ("WEIPORT_ACCESS__IP_WEIGHT_PER_MINUTE", "100"),
        ],
    );
    let mut api = Api::open(&weiport, "").await;
    let first = api.call("exchangeInfo", json!({})).await;
    let counted = first["rateLimits"][0]["count"].as_u64().unwrap();
    assert_eq!(first["rateLimits"][0]["limit"], 100);
    // REST spends from the same minute.
    let response = reqwest::get(format!("{}/api/v3/exchangeInfo", weiport.url))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let second = api.call("ping", json!({})).await;
    let now_counted = second["rateLimits"][0]["count"].as_u64().unwrap();
    // Unless the minute turned between the calls (the window starts over).
    assert!(
        now_counted == counted + 21 || now_counted <= 21,
        "{counted} then {now_counted}"
    );
    let refused = loop {
        let answer = api.call("exchangeInfo", json!({})).await;
        if answer["status"] != 200 {
            break answer;
        }
    };
    assert_eq!(refused["status"], 429, "{refused}");
    assert_eq!(refused["error"]["code"], -1003);
    assert!(refused["error"]["data"]["retryAfter"].as_u64().unwrap() > now_ms());
    let minute = now_ms() / 60_000;
    let over_rest = reqwest::get(format!("{}/api/v3/exchangeInfo", weiport.url))
        .await
        .unwrap();
    if now_ms() / 60_000 == minute {
        assert_eq!(
            over_rest.status(),
            429,
            "the socket's spending counts for REST"
        );
    }
}

/// An Ed25519 trading key on `account`: its id and its private key (PEM),
/// for a client that signs by itself.
async fn ed25519_pem(weiport: &Weiport, account: u64) -> (String, String) {
    use ed25519_dalek::pkcs8::{EncodePrivateKey, EncodePublicKey};

    let signing = ed25519_dalek::SigningKey::from_bytes(&[account as u8 + 41; 32]);
    let public = signing
        .verifying_key()
        .to_public_key_pem(Default::default())
        .unwrap();
    let private = signing.to_pkcs8_pem(Default::default()).unwrap();
    let (status, created) = weiport
        .admin(
            Method::POST,
            "/admin/keys",
            json!({ "account": account, "kind": "ed25519", "public_key": public, "permissions": ["read", "trade"] }),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    (
        created["id"].as_str().unwrap().to_owned(),
        private.to_string(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ccxt_pro_python_binance_and_the_sdk_trade_over_the_socket() {
    let (weiport, _dir, maker, taker) = two_traders().await;
    let (ed_key, ed_pem) = ed25519_pem(&weiport, maker.account).await;
    let args = [
        &weiport.url,
        &maker.id,
        &maker.secret,
        &taker.id,
        &taker.secret,
        &ed_key,
        &ed_pem,
    ];
    let printed = common::run_client("binance_ws_api.py", args.map(String::clone).to_vec()).await;
    assert!(printed.contains("ws api ok"), "{printed}");
}
