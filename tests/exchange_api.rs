//! The Binance-compatible exchange API over real HTTP on `weiport serve`:
//! unchanged SDKs (ccxt, binance-sdk-spot) through a full trading
//! lifecycle, raw requests (a JSON body signed over its raw text) and every
//! refusal with Binance's code, message and status.

mod common;

use common::{Key, Weiport};
use serde_json::{Value, json};
use weiport_access::sign_hmac_sha256;

struct Setup {
    weiport: Weiport,
    http: reqwest::Client,
    dir: tempfile::TempDir,
}

fn now_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
}

impl Setup {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let weiport = Weiport::serve(dir.path(), &[("WEIPORT_INDEXER__ENABLED", "false")]);
        Self {
            weiport,
            http: reqwest::Client::new(),
            dir,
        }
    }

    /// Stops the server with SIGTERM and starts it again on the same data.
    fn restart(&mut self) {
        let status = self
            .weiport
            .stop("TERM", std::time::Duration::from_secs(10));
        assert!(status.is_some_and(|s| s.success()), "clean stop");
        self.weiport = Weiport::serve(self.dir.path(), &[("WEIPORT_INDEXER__ENABLED", "false")]);
    }

    /// A trading key on a new account holding `usdt` and `eth`.
    async fn funded_key(&self, usdt: &str, eth: &str) -> Key {
        self.weiport
            .funded_key(&["read", "trade"], &[("USDT", usdt), ("ETH", eth)])
            .await
    }

    /// A signed request with `params` in the query (timestamp added).
    async fn signed(
        &self,
        method: reqwest::Method,
        path: &str,
        key: &Key,
        params: &str,
    ) -> (u16, Value) {
        self.weiport.signed(method, path, key, params).await
    }

    async fn public(&self, path_and_query: &str) -> (u16, Value) {
        let response = self
            .http
            .get(format!("{}{path_and_query}", self.weiport.url))
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ccxt_and_the_official_sdk_trade_through_a_full_lifecycle() {
    let setup = Setup::start();
    let a = setup.funded_key("100000", "10").await;
    let b = setup.funded_key("100000", "10").await;
    let args = [&setup.weiport.url, &a.id, &a.secret, &b.id, &b.secret];
    let printed = common::run_client("binance_sdks.py", args.map(String::clone).to_vec()).await;
    assert!(printed.contains("all clients ok"), "{printed}");

    // Every order the clients placed has ended: nothing rests on the book.
    let (status, book) = setup.public("/api/v3/depth?symbol=ETHUSDT").await;
    assert_eq!(status, 200);
    assert_eq!(book["bids"], json!([]));
    assert_eq!(book["asks"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_body_order_signed_over_its_raw_text_and_market_data() {
    let setup = Setup::start();
    let maker = setup.funded_key("100000", "10").await;
    let taker = setup.funded_key("100000", "10").await;

    // JSON body, signed over the body text exactly as sent; signature in the query.
    let body = r#"{"symbol":"ETHUSDT","side":"SELL","type":"LIMIT","timeInForce":"GTC","quantity":"1.5","price":"3000.5","newClientOrderId":"json-1"}"#;
    let query = format!("timestamp={}", now_ms());
    let signature = sign_hmac_sha256(maker.secret.as_bytes(), format!("{query}{body}").as_bytes());
    let response = setup
        .http
        .post(format!(
            "{}/api/v3/order?{query}&signature={signature}",
            setup.weiport.url
        ))
        .header("X-MBX-APIKEY", &maker.id)
        .header("Content-Type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let placed: Value = response.json().await.unwrap();
    assert_eq!(placed["status"], "NEW");
    assert_eq!(placed["clientOrderId"], "json-1");
    assert_eq!(placed["origQty"], "1.50000000");
    assert_eq!(placed["fills"], json!([]));

    // Form body (python-binance style).
    let form = format!(
        "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=1&price=3001&newOrderRespType=RESULT&timestamp={}",
        now_ms()
    );
    let signature = sign_hmac_sha256(taker.secret.as_bytes(), form.as_bytes());
    let response = setup
        .http
        .post(format!("{}/api/v3/order", setup.weiport.url))
        .header("X-MBX-APIKEY", &taker.id)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(format!("{form}&signature={signature}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let taken: Value = response.json().await.unwrap();
    assert_eq!(taken["status"], "FILLED");
    assert_eq!(taken["cummulativeQuoteQty"], "3000.50000000");
    assert!(taken.get("fills").is_none(), "RESULT has no fills");

    let (_, price) = setup.public("/api/v3/ticker/price?symbol=ETHUSDT").await;
    assert_eq!(
        price,
        json!({ "symbol": "ETHUSDT", "price": "3000.50000000" })
    );
    let (_, prices) = setup
        .public("/api/v3/ticker/price?symbols=%5B%22ETHUSDT%22%5D")
        .await;
    assert_eq!(prices[0]["price"], "3000.50000000");
    let (_, depth) = setup.public("/api/v3/depth?symbol=ETHUSDT&limit=5").await;
    assert_eq!(depth["asks"], json!([["3000.50000000", "0.50000000"]]));
    assert!(depth["lastUpdateId"].as_u64().unwrap() > 0);
    let (_, trades) = setup.public("/api/v3/trades?symbol=ETHUSDT").await;
    assert_eq!(trades[0]["qty"], "1.00000000");
    assert_eq!(trades[0]["isBuyerMaker"], false);
    let (_, klines) = setup
        .public("/api/v3/klines?symbol=ETHUSDT&interval=1m")
        .await;
    assert_eq!(klines[0][1], "3000.50000000");
    assert_eq!(klines[0][5], "1.00000000");
    assert_eq!(klines[0][8], 1);
    let (_, stats) = setup.public("/api/v3/ticker/24hr?symbol=ETHUSDT").await;
    assert_eq!(
        (stats["count"].clone(), stats["askQty"].clone()),
        (json!(1), json!("0.50000000"))
    );
    let (_, info) = setup.public("/api/v3/exchangeInfo?symbol=ETHUSDT").await;
    assert_eq!(info["symbols"][0]["filters"][0]["tickSize"], "0.01000000");
    let (_, avg) = setup.public("/api/v3/avgPrice?symbol=ETHUSDT").await;
    assert_eq!(avg["price"], "3000.50000000");

    // Read by client order id, and the account view.
    let (status, order) = setup
        .signed(
            reqwest::Method::GET,
            "/api/v3/order",
            &maker,
            "symbol=ETHUSDT&origClientOrderId=json-1",
        )
        .await;
    assert_eq!(status, 200, "{order}");
    assert_eq!(
        (order["status"].clone(), order["executedQty"].clone()),
        (json!("PARTIALLY_FILLED"), json!("1.00000000"))
    );
    let (_, account) = setup
        .signed(
            reqwest::Method::GET,
            "/api/v3/account",
            &maker,
            "omitZeroBalances=true",
        )
        .await;
    let eth = balance(&account, "ETH");
    assert_eq!(
        eth,
        json!({ "asset": "ETH", "free": "8.50000000", "locked": "0.50000000" })
    );
    let (_, limits) = setup
        .signed(reqwest::Method::GET, "/api/v3/rateLimit/order", &maker, "")
        .await;
    assert_eq!(limits[0]["count"], 1);

    // Cancel-all answers with the canceled orders; then there is nothing left.
    let (status, canceled) = setup
        .signed(
            reqwest::Method::DELETE,
            "/api/v3/openOrders",
            &maker,
            "symbol=ETHUSDT",
        )
        .await;
    assert_eq!(status, 200, "{canceled}");
    assert_eq!(canceled[0]["origClientOrderId"], "json-1");
    assert_eq!(canceled[0]["status"], "CANCELED");

    // A restart rebuilds orders, trades, balances and market data from the log.
    let (_, depth_before) = setup.public("/api/v3/depth?symbol=ETHUSDT").await;
    let (_, trades_before) = setup
        .signed(
            reqwest::Method::GET,
            "/api/v3/myTrades",
            &taker,
            "symbol=ETHUSDT",
        )
        .await;
    let (_, account_before) = setup
        .signed(reqwest::Method::GET, "/api/v3/account", &maker, "")
        .await;
    let mut setup = setup;
    setup.restart();
    let (_, order) = setup
        .signed(
            reqwest::Method::GET,
            "/api/v3/order",
            &maker,
            "symbol=ETHUSDT&origClientOrderId=json-1",
        )
        .await;
    assert_eq!(
        (order["status"].clone(), order["executedQty"].clone()),
        (json!("CANCELED"), json!("1.00000000"))
    );
    let (_, trades_after) = setup
        .signed(
            reqwest::Method::GET,
            "/api/v3/myTrades",
            &taker,
            "symbol=ETHUSDT",
        )
        .await;
    assert_eq!(trades_after, trades_before);
    let (_, account_after) = setup
        .signed(reqwest::Method::GET, "/api/v3/account", &maker, "")
        .await;
    assert_eq!(account_after["balances"], account_before["balances"]);
    let (_, depth_after) = setup.public("/api/v3/depth?symbol=ETHUSDT").await;
    assert_eq!(depth_after, depth_before);
    let (_, price) = setup.public("/api/v3/ticker/price?symbol=ETHUSDT").await;
    assert_eq!(price["price"], "3000.50000000");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_document_lists_exactly_the_routes_that_answer() {
    let setup = Setup::start();
    let (status, document) = setup.public("/openapi.json").await;
    assert_eq!(status, 200);
    assert_eq!(document["openapi"], "3.1.0");
    let paths = document["paths"].as_object().unwrap();
    for required in [
        "/api/v3/order",
        "/api/v3/depth",
        "/api/v3/ticker/price",
        "/api/v3/account",
        "/api/v3/myTrades",
        "/api/v3/allOrders",
        "/api/v3/openOrders",
    ] {
        assert!(paths.contains_key(required), "{required} is documented");
    }
    let mut operations = 0;
    for (path, methods) in paths {
        for (method, operation) in methods.as_object().unwrap() {
            let method = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let response = setup
                .http
                .request(method.clone(), format!("{}{path}", setup.weiport.url))
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            // Every documented operation is routed: it answers, or refuses
            // the missing key or parameters, never "no such route".
            assert!(![404, 405].contains(&status), "{method} {path}: {status}");
            let signed = !operation["security"].as_array().unwrap().is_empty();
            if signed {
                assert_eq!(status, 401, "{method} {path} needs a key");
            }
            operations += 1;
        }
    }
    assert!(operations >= 30, "{operations} operations");
    let response = setup
        .http
        .get(format!("{}/api/v3/nothing", setup.weiport.url))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_refusal_has_binances_code_message_and_status() {
    let setup = Setup::start();
    let key = setup.funded_key("1000", "1").await;
    let post = reqwest::Method::POST;
    let cases: Vec<(reqwest::Method, &str, &str, u16, i64, &str)> = vec![
        (
            post.clone(),
            "/api/v3/order",
            "symbol=BTCUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=1&price=1",
            400,
            -1121,
            "Invalid symbol.",
        ),
        (
            post.clone(),
            "/api/v3/order",
            "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&price=1",
            400,
            -1102,
            "Mandatory parameter 'quantity' was not sent, was empty/null, or malformed.",
        ),
        (
            post.clone(),
            "/api/v3/order",
            "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=1&price=3000.001",
            400,
            -1013,
            "Filter failure: PRICE_FILTER",
        ),
        (
            post.clone(),
            "/api/v3/order",
            "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=1&price=3000",
            400,
            -2010,
            "Account has insufficient balance for requested action.",
        ),
        (
            post.clone(),
            "/api/v3/order",
            "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=0.01&price=3000&newClientOrderId=same",
            200,
            0,
            "",
        ),
        (
            post.clone(),
            "/api/v3/order",
            "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=0.01&price=3000&newClientOrderId=same",
            400,
            -2010,
            "Duplicate order sent.",
        ),
        (
            post.clone(),
            "/api/v3/order",
            "symbol=ETHUSDT&side=SELL&type=LIMIT_MAKER&quantity=0.01&price=2999",
            400,
            -2010,
            "Order would immediately match and take.",
        ),
        (
            reqwest::Method::DELETE,
            "/api/v3/order",
            "symbol=ETHUSDT&orderId=999",
            400,
            -2011,
            "Unknown order sent.",
        ),
        (
            reqwest::Method::DELETE,
            "/api/v3/order",
            "symbol=ETHUSDT",
            400,
            -1102,
            "Param 'origClientOrderId' or 'orderId' must be sent, but both were empty/null!",
        ),
        (
            reqwest::Method::GET,
            "/api/v3/order",
            "symbol=ETHUSDT&orderId=999",
            400,
            -2013,
            "Order does not exist.",
        ),
        (
            reqwest::Method::GET,
            "/api/v3/myTrades",
            "symbol=ETHUSDT&startTime=0&endTime=90000000",
            400,
            -1127,
            "More than 24 hours between startTime and endTime.",
        ),
    ];
    for (method, path, params, status, code, msg) in cases {
        let (got, body) = setup.signed(method.clone(), path, &key, params).await;
        assert_eq!(got, status, "{method} {path}?{params}: {body}");
        if status != 200 {
            assert_eq!(
                body,
                json!({ "code": code, "msg": msg }),
                "{method} {path}?{params}"
            );
        }
    }
    // Nothing refused moved funds: 30 USDT of the accepted order is locked.
    let (_, account) = setup
        .signed(reqwest::Method::GET, "/api/v3/account", &key, "")
        .await;
    let usdt = balance(&account, "USDT");
    assert_eq!(
        usdt,
        json!({ "asset": "USDT", "free": "970.00000000", "locked": "30.00000000" })
    );

    let (status, body) = setup
        .public("/api/v3/klines?symbol=ETHUSDT&interval=2m")
        .await;
    assert_eq!(
        (status, body),
        (400, json!({ "code": -1120, "msg": "Invalid interval." }))
    );
    let (status, body) = setup.public("/api/v3/depth?symbol=NOPE").await;
    assert_eq!(
        (status, body),
        (400, json!({ "code": -1121, "msg": "Invalid symbol." }))
    );
    let stranger = Key {
        id: "x".repeat(64),
        secret: "y".repeat(64),
        account: 0,
    };
    let (status, body) = setup
        .signed(reqwest::Method::GET, "/api/v3/account", &stranger, "")
        .await;
    assert_eq!((status, body["code"].clone()), (401, json!(-2015)));
    // An unknown asset or account cannot be credited.
    let (status, _) = setup
        .weiport
        .admin(
            reqwest::Method::POST,
            &format!("/admin/accounts/{}/credit", key.account),
            json!({ "asset": "DOGE", "amount": "1" }),
        )
        .await;
    assert_eq!(status, 400);
    let (status, _) = setup
        .weiport
        .admin(
            reqwest::Method::POST,
            &format!("/admin/accounts/{}/debit", key.account),
            json!({ "asset": "ETH", "amount": "2" }),
        )
        .await;
    assert_eq!(status, 409);
}

/// The `field` of each object in `list`.
fn field(list: &Value, name: &str) -> Vec<u64> {
    list.as_array()
        .unwrap_or_else(|| panic!("a list: {list}"))
        .iter()
        .map(|item| item[name].as_u64().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_pages_and_windows_follow_binance_and_survive_a_restart() {
    let mut setup = Setup::start();
    let maker = setup.funded_key("100000", "10").await;
    let taker = setup.funded_key("100000", "10").await;
    let started = now_ms();
    // Orders 1..=12: the maker's sells at rising prices; 13..=24: the
    // taker's buys, each taking one of them (trades 1..=12).
    for i in 0..12 {
        let (status, answer) = setup
            .signed(
                reqwest::Method::POST,
                "/api/v3/order",
                &maker,
                &format!(
                    "symbol=ETHUSDT&side=SELL&type=LIMIT&timeInForce=GTC&quantity=0.1&price={}",
                    3000 + i
                ),
            )
            .await;
        assert_eq!(status, 200, "{answer}");
    }
    for i in 0..12 {
        let (status, answer) = setup
            .signed(
                reqwest::Method::POST,
                "/api/v3/order",
                &taker,
                &format!(
                    "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=IOC&quantity=0.1&price={}",
                    3000 + i
                ),
            )
            .await;
        assert_eq!((status, answer["status"].clone()), (200, json!("FILLED")));
    }
    let finished = now_ms();

    let mut answers = Vec::new();
    for round in 0..2 {
        let signed = |key: &'static str, path: &'static str, params: String| {
            let key = if key == "maker" { &maker } else { &taker };
            let setup = &setup;
            async move {
                let (status, answer) = setup.signed(reqwest::Method::GET, path, key, &params).await;
                assert_eq!(status, 200, "{path}?{params}: {answer}");
                answer
            }
        };
        let public = |path: String| {
            let setup = &setup;
            async move {
                let (status, answer) = setup.public(&path).await;
                assert_eq!(status, 200, "{path}: {answer}");
                answer
            }
        };
        let all = "symbol=ETHUSDT".to_owned();
        // allOrders: newest `limit` without a start; from `orderId` on with one.
        let latest = signed("maker", "/api/v3/allOrders", format!("{all}&limit=5")).await;
        assert_eq!(field(&latest, "orderId"), [8, 9, 10, 11, 12]);
        let from = signed(
            "maker",
            "/api/v3/allOrders",
            format!("{all}&orderId=3&limit=4"),
        )
        .await;
        assert_eq!(field(&from, "orderId"), [3, 4, 5, 6]);
        let window = format!("{all}&startTime={started}&endTime={finished}");
        let windowed = signed("taker", "/api/v3/allOrders", window.clone()).await;
        assert_eq!(field(&windowed, "orderId"), (13..=24).collect::<Vec<_>>());
        let future = format!("{all}&startTime={}", finished + 3_600_000);
        assert_eq!(
            signed("taker", "/api/v3/allOrders", future.clone()).await,
            json!([])
        );

        // myTrades: by fromId, newest, one order's, in a window.
        let from = signed(
            "taker",
            "/api/v3/myTrades",
            format!("{all}&fromId=4&limit=3"),
        )
        .await;
        assert_eq!(field(&from, "id"), [4, 5, 6]);
        let newest = signed("maker", "/api/v3/myTrades", format!("{all}&limit=2")).await;
        assert_eq!(field(&newest, "id"), [11, 12]);
        assert_eq!(newest[1]["isMaker"], true);
        let one = signed("taker", "/api/v3/myTrades", format!("{all}&orderId=14")).await;
        assert_eq!(
            (field(&one, "id"), field(&one, "orderId")),
            (vec![2], vec![14])
        );
        let windowed = signed("taker", "/api/v3/myTrades", window).await;
        assert_eq!(windowed.as_array().unwrap().len(), 12);
        assert_eq!(signed("taker", "/api/v3/myTrades", future).await, json!([]));

        // Public trades: newest, and from an id on.
        let recent = public("/api/v3/trades?symbol=ETHUSDT&limit=3".into()).await;
        assert_eq!(field(&recent, "id"), [10, 11, 12]);
        let old = signed(
            "taker",
            "/api/v3/historicalTrades",
            format!("{all}&fromId=2&limit=2"),
        )
        .await;
        assert_eq!(field(&old, "id"), [2, 3]);
        let aggs = public("/api/v3/aggTrades?symbol=ETHUSDT&fromId=5&limit=2".into()).await;
        assert_eq!(field(&aggs, "a"), [5, 6]);
        assert_eq!(
            (aggs[0]["f"].clone(), aggs[0]["p"].clone()),
            (json!(5), json!("3004.00000000"))
        );
        let aggs = public(format!(
            "/api/v3/aggTrades?symbol=ETHUSDT&startTime={started}&limit=1"
        ))
        .await;
        assert_eq!(field(&aggs, "a"), [1]);
        let aggs = public("/api/v3/aggTrades?symbol=ETHUSDT&limit=1".into()).await;
        assert_eq!(field(&aggs, "a"), [12]);

        // Klines from candles (1m, 1d) and from trades (1s) agree on totals.
        for interval in ["1s", "1m", "1d", "1M"] {
            let klines = public(format!("/api/v3/klines?symbol=ETHUSDT&interval={interval}")).await;
            let klines = klines.as_array().unwrap();
            let count: u64 = klines.iter().map(|k| k[8].as_u64().unwrap()).sum();
            assert_eq!(count, 12, "{interval}");
            let high = klines
                .iter()
                .map(|k| k[2].as_str().unwrap().to_owned())
                .max()
                .unwrap();
            assert_eq!(high, "3011.00000000", "{interval}");
            assert_eq!(klines[0][1], "3000.00000000", "{interval}");
        }
        let stats = public("/api/v3/ticker/24hr?symbol=ETHUSDT".into()).await;
        assert_eq!(
            (
                stats["count"].clone(),
                stats["firstId"].clone(),
                stats["lastId"].clone()
            ),
            (json!(12), json!(1), json!(12))
        );
        assert_eq!(
            (stats["openPrice"].clone(), stats["lastPrice"].clone()),
            (json!("3000.00000000"), json!("3011.00000000"))
        );
        assert!(stats.get("bidPrice").is_some() && stats.get("lastQty").is_some());

        // Rolling window: Binance's FULL fields, without the 24-hour ticker's book.
        let hour = public("/api/v3/ticker?symbol=ETHUSDT&windowSize=1h".into()).await;
        assert_eq!(
            (hour["count"].clone(), hour["priceChange"].clone()),
            (json!(12), json!("11.00000000"))
        );
        assert!(
            hour.get("bidPrice").is_none() && hour.get("prevClosePrice").is_none(),
            "{hour}"
        );
        let mini = public("/api/v3/ticker?symbols=%5B%22ETHUSDT%22%5D&type=MINI".into()).await;
        assert!(
            mini[0].get("priceChange").is_none() && mini[0]["count"] == json!(12),
            "{mini}"
        );

        // Trading day: from local midnight in `timeZone`, counting the trades since.
        let times: Vec<u64> = public("/api/v3/trades?symbol=ETHUSDT&limit=12".into())
            .await
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["time"].as_u64().unwrap())
            .collect();
        for (zone, offset_minutes) in [("0", 0), ("8", 480), ("-5:30", -330), ("14:00", 840)] {
            let day = public(format!(
                "/api/v3/ticker/tradingDay?symbol=ETHUSDT&timeZone={zone}"
            ))
            .await;
            let open = day["openTime"].as_u64().unwrap();
            assert_eq!(
                day["closeTime"].as_u64().unwrap() - open,
                86_399_999,
                "{day}"
            );
            let local_midnight = open as i64 + offset_minutes * 60_000;
            assert_eq!(local_midnight % 86_400_000, 0, "{zone}: {day}");
            let since = times.iter().filter(|&&t| t >= open).count();
            assert_eq!(day["count"], json!(since), "{zone}: {day}");
            assert!(day.get("priceChange").is_some() && day.get("bidPrice").is_none());
        }
        answers.push(stats["volume"].clone());
        if round == 0 {
            setup.restart();
        }
    }
    assert_eq!(answers[0], "1.20000000");
    assert_eq!(answers[0], answers[1]);

    for (path, code) in [
        ("/api/v3/ticker/tradingDay", -1102),
        (
            "/api/v3/ticker/tradingDay?symbol=ETHUSDT&timeZone=15",
            -1130,
        ),
        (
            "/api/v3/ticker/tradingDay?symbol=ETHUSDT&timeZone=1:60",
            -1130,
        ),
        ("/api/v3/ticker/tradingDay?symbol=ETHUSDT&type=HUGE", -1139),
        (
            "/api/v3/klines?symbol=ETHUSDT&interval=1d&timeZone=-13",
            -1130,
        ),
    ] {
        let (status, answer) = setup.public(path).await;
        assert_eq!(
            (status, answer["code"].clone()),
            (400, json!(code)),
            "{path}: {answer}"
        );
    }
}

/// One asset's entry in an `/api/v3/account` answer.
fn balance(account: &Value, asset: &str) -> Value {
    account["balances"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["asset"] == asset)
        .unwrap_or_else(|| panic!("no {asset} in {account}"))
        .clone()
}
