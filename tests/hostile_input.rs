//! `weiport serve` against a hostile client, over real sockets: every route
//! with malformed parameters, a signed order whose query/body boundary was
//! moved, made-up methods, half-sent and idle connections, and history reads
//! aimed far from the data. Nothing may panic, answer 5xx, drop a healthy
//! connection, change state on a refusal, or cost work out of proportion.
//!
//! The comparison of history reads' median times is a timing and leaves the
//! default run: `scripts/hmac-timing.sh` runs it and prints its figures.

mod common;

use std::time::{Duration, Instant};

use common::hostile::hostile_values;
use common::raw_http::Connection;
use common::{Key, Weiport, eventually, now_ms};
use serde_json::{Value, json};
use weiport_access::sign_hmac_sha256;

async fn funded_key(weiport: &Weiport, permissions: &[&str]) -> Key {
    weiport
        .funded_key(permissions, &[("USDT", "100000"), ("ETH", "100")])
        .await
}

/// `params` with a fresh timestamp and its signature, as a query string.
fn signed_query(key: &Key, params: &str) -> String {
    let payload = if params.is_empty() {
        format!("timestamp={}", now_ms())
    } else {
        format!("{params}&timestamp={}", now_ms())
    };
    let signature = sign_hmac_sha256(key.secret.as_bytes(), payload.as_bytes());
    format!("{payload}&signature={signature}")
}

/// A valid value for parameters that most routes need, so that the
/// hostile value reaches the code behind the first check.
fn base_value(name: &str) -> Option<&'static str> {
    Some(match name {
        "symbol" => "ETHUSDT",
        "side" => "BUY",
        "type" => "LIMIT",
        "timeInForce" => "GTC",
        "quantity" => "0.01",
        "price" => "3000",
        "interval" => "1m",
        "orderId" => "1",
        _ => return None,
    })
}

/// Checks a Binance-face answer: below 500, and a refusal in `{code,msg}`.
fn check_binance(what: &str, answer: &common::raw_http::Answer) {
    assert!(answer.status < 500, "{what}: {answer:?}");
    if answer.status != 200 {
        let body = answer.json();
        assert!(
            body["code"].is_i64() && body["msg"].is_string(),
            "{what}: {} {body}",
            answer.status
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_route_refuses_hostile_parameters_in_its_own_shape() {
    let dir = tempfile::tempdir().unwrap();
    let weiport = Weiport::serve(dir.path(), &common::GENEROUS);
    let key = funded_key(&weiport, &["read", "trade"]).await;
    let document = weiport.openapi().await;
    let mut connection = Connection::open(&weiport.url).await;
    let values = hostile_values();
    let mut requests = 0;
    for (path, methods) in document["paths"].as_object().unwrap() {
        for (method, operation) in methods.as_object().unwrap() {
            let method = method.to_uppercase();
            let signed = !operation["security"].as_array().unwrap().is_empty();
            let names: Vec<&str> = operation["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["name"].as_str().unwrap())
                .filter(|n| !["timestamp", "recvWindow", "signature"].contains(n))
                .collect();
            let base: Vec<(&str, &str)> = names
                .iter()
                .filter_map(|n| base_value(n).map(|v| (*n, v)))
                .collect();
            // Each parameter with each hostile value, once alone in place of
            // its valid value and once sent twice; plus a name the route
            // does not read.
            let mut cases: Vec<String> = Vec::new();
            for name in &names {
                for value in &values {
                    let mut params: Vec<String> = base
                        .iter()
                        .filter(|(n, _)| n != name)
                        .map(|(n, v)| format!("{n}={v}"))
                        .collect();
                    params.push(format!("{name}={value}"));
                    cases.push(params.join("&"));
                }
                cases.push(format!("{name}=1&{name}=2"));
            }
            cases.push("notAParameter=1".into());
            cases.push("%C3%A9=1".into());
            for params in cases {
                let target = if signed {
                    format!("{path}?{}", signed_query(&key, &params))
                } else {
                    format!("{path}?{params}")
                };
                let headers: &[(&str, &str)] = if signed {
                    &[("X-MBX-APIKEY", &key.id)]
                } else {
                    &[]
                };
                let what = format!("{method} {}", &target[..target.len().min(160)]);
                let answer = connection
                    .request(&method, &target, headers, b"")
                    .await
                    .unwrap_or_else(|| panic!("{what}: connection dropped"));
                check_binance(&what, &answer);
                requests += 1;
            }
        }
    }
    assert!(requests > 1000, "{requests} requests");

    // The query API, in Etherscan's shape.
    let reader = funded_key(&weiport, &["read"]).await;
    for (name, base) in [
        ("module", "account"),
        ("action", "balance"),
        ("address", "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"),
        ("tag", "latest"),
        ("apikey", reader.id.as_str()),
        ("blockno", "1"),
    ] {
        for value in values.iter().map(String::as_str).chain([base]) {
            let mut params = vec![
                ("module", "account"),
                ("action", "balance"),
                ("address", "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"),
                ("apikey", reader.id.as_str()),
            ];
            params.retain(|(n, _)| *n != name);
            params.push((name, value));
            let query: Vec<String> = params.iter().map(|(n, v)| format!("{n}={v}")).collect();
            let target = format!("/api?{}", query.join("&"));
            common::hostile::assert_etherscan_shape(&mut connection, &target).await;
        }
    }
    let health = connection.request("GET", "/healthz", &[], b"").await;
    assert_eq!(health.map(|a| a.status), Some(200), "server alive");
}

/// A URL's percent-encoded text as the text it stands for (invalid UTF-8
/// replaced): the hostile values as a socket client would send them.
fn decoded(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Every WebSocket API method, each parameter with each hostile value (as
/// text, and as JSON numbers, arrays, objects and null), signed: every
/// answer is Binance's frame with the request's id and a status under 500,
/// requests go out 32 at a time on one connection, and the account is as it
/// was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_websocket_api_method_refuses_hostile_parameters_in_binance_frames() {
    use futures::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;

    let dir = tempfile::tempdir().unwrap();
    let weiport = Weiport::serve(dir.path(), &common::GENEROUS);
    let key = funded_key(&weiport, &["read", "trade"]).await;
    let mut connection = Connection::open(&weiport.url).await;
    let before = account_state(&mut connection, &key).await;
    let document = weiport.openapi().await;
    let url = format!("{}/ws-api/v3", weiport.url.replacen("http://", "ws://", 1));
    let mut socket = tokio_tungstenite::connect_async(url).await.unwrap().0;
    let mut values: Vec<Value> = hostile_values().iter().map(|v| json!(decoded(v))).collect();
    values.extend([
        json!(-1),
        json!(1.5e300),
        json!([1, [2]]),
        json!({"a": {}}),
        json!(null),
        json!(true),
    ]);
    let mut frames = Vec::new();
    for (method, description) in document["x-ws-api"]["methods"].as_object().unwrap() {
        let signed = description["security"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s.get("signature").is_some());
        let names: Vec<&str> = description["params"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_str().unwrap())
            .filter(|n| !["timestamp", "recvWindow", "signature"].contains(n))
            .collect();
        // Changing methods get the hostile value in their parameters only
        // where the rest cannot make a valid order of it.
        for name in names
            .iter()
            .copied()
            .chain(["notAParameter", "returnRateLimits"])
        {
            for value in &values {
                let mut params = serde_json::Map::new();
                for base in &names {
                    if let Some(v) = base_value(base).filter(|_| base != &name) {
                        params.insert((*base).to_owned(), json!(v));
                    }
                }
                params.insert(name.to_owned(), value.clone());
                // Something always wrong beside it, so no order goes in.
                params.insert("quantity".into(), json!("0"));
                let params = Value::Object(params);
                let params = if signed {
                    common::ws::ws_api_signed(&key, params)
                } else {
                    params
                };
                frames.push((method.clone(), params));
            }
        }
    }
    let mut answered = 0;
    for batch in frames.chunks(32) {
        for (n, (method, params)) in batch.iter().enumerate() {
            let frame =
                json!({ "id": format!("h{answered}-{n}"), "method": method, "params": params });
            socket
                .send(Message::Text(frame.to_string().into()))
                .await
                .unwrap();
        }
        let mut ids = Vec::new();
        while ids.len() < batch.len() {
            let message = tokio::time::timeout(Duration::from_secs(10), socket.next())
                .await
                .expect("an answer within 10 s")
                .expect("the connection stays open")
                .unwrap();
            let Message::Text(text) = message else {
                continue;
            };
            let answer: Value = serde_json::from_str(&text).unwrap();
            let status = answer["status"].as_u64().unwrap_or(0);
            assert!((200..500).contains(&status), "{answer}");
            if status != 200 {
                assert!(
                    answer["error"]["code"].is_i64() && answer["error"]["msg"].is_string(),
                    "{answer}"
                );
            }
            ids.push(answer["id"].as_str().unwrap().to_owned());
        }
        ids.sort();
        let mut sent: Vec<String> = (0..batch.len())
            .map(|n| format!("h{answered}-{n}"))
            .collect();
        sent.sort();
        assert_eq!(ids, sent, "each request answered once, by its id");
        answered += batch.len();
    }
    assert!(answered > 2000, "{answered} requests");
    assert_eq!(
        account_state(&mut connection, &key).await,
        before,
        "nothing changed"
    );
}

/// Balances, open orders and all orders of `key`, to compare before and after.
async fn account_state(connection: &mut Connection, key: &Key) -> Vec<Value> {
    let mut state = Vec::new();
    for (path, params) in [
        ("/api/v3/account", ""),
        ("/api/v3/openOrders", "symbol=ETHUSDT"),
        ("/api/v3/allOrders", "symbol=ETHUSDT"),
    ] {
        let target = format!("{path}?{}", signed_query(key, params));
        let answer = connection
            .request("GET", &target, &[("X-MBX-APIKEY", &key.id)], b"")
            .await
            .unwrap();
        assert_eq!(answer.status, 200, "{path}: {answer:?}");
        let mut body = answer.json();
        if let Some(account) = body.as_object_mut() {
            account.remove("updateTime");
        }
        state.push(body);
    }
    let depth = connection
        .request("GET", "/api/v3/depth?symbol=ETHUSDT", &[], b"")
        .await
        .unwrap();
    state.push(depth.json());
    state
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moved_signature_boundary_and_unread_parameters_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let weiport = Weiport::serve(dir.path(), &common::GENEROUS);
    let key = funded_key(&weiport, &["read", "trade"]).await;
    let mut connection = Connection::open(&weiport.url).await;
    let before = account_state(&mut connection, &key).await;
    let form = [
        ("X-MBX-APIKEY", key.id.as_str()),
        ("Content-Type", "application/x-www-form-urlencoded"),
    ];

    // The captured order: price 3000.
    let timestamp = now_ms();
    let original = format!(
        "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=0.01&price=3000&timestamp={timestamp}"
    );
    let signature = sign_hmac_sha256(key.secret.as_bytes(), original.as_bytes());
    // Its boundary moved: the query ends at price=3, the body starts `000`.
    let query = format!(
        "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=0.01&price=3&signature={signature}"
    );
    let body = format!("000&timestamp={timestamp}");
    let answer = connection
        .request(
            "POST",
            &format!("/api/v3/order?{query}"),
            &form,
            body.as_bytes(),
        )
        .await
        .unwrap();
    assert_eq!(answer.status, 400, "{answer:?}");
    assert_eq!(answer.json()["code"], -1100, "{answer:?}");
    // Inside a name, and across the `=`: each leaves a fragment without a name.
    for (query_part, body_part) in [
        (
            "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=0.01&pri",
            format!("ce=3000&timestamp={timestamp}"),
        ),
        (
            "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=0.01&price",
            format!("=3000&timestamp={timestamp}"),
        ),
    ] {
        let answer = connection
            .request(
                "POST",
                &format!("/api/v3/order?{query_part}&signature={signature}"),
                &form,
                body_part.as_bytes(),
            )
            .await
            .unwrap();
        assert_eq!(answer.status, 400, "{answer:?}");
    }

    // A parameter the endpoint does not read, even properly signed.
    let target = format!(
        "/api/v3/order?{}",
        signed_query(
            &key,
            "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=0.01&price=3000&icebergPart=5"
        )
    );
    let answer = connection
        .request("POST", &target, &[("X-MBX-APIKEY", &key.id)], b"")
        .await
        .unwrap();
    assert_eq!(answer.status, 400);
    assert_eq!(
        answer.json(),
        json!({"code": -1104, "msg": "Not all sent parameters were read; read '8' parameter(s) but was sent '9'."})
    );
    // A JSON number is read as written, never through a float.
    let json_body = format!(
        r#"{{"symbol":"ETHUSDT","side":"BUY","type":"LIMIT","timeInForce":"GTC","quantity":0.01,"price":3000.000000001,"timestamp":{}}}"#,
        now_ms()
    );
    let signature = sign_hmac_sha256(key.secret.as_bytes(), json_body.as_bytes());
    let answer = connection
        .request(
            "POST",
            &format!("/api/v3/order?signature={signature}"),
            &[
                ("X-MBX-APIKEY", key.id.as_str()),
                ("Content-Type", "application/json"),
            ],
            json_body.as_bytes(),
        )
        .await
        .unwrap();
    assert_eq!(
        answer.json(),
        json!({"code": -1111, "msg": "Parameter 'price' has too much precision."})
    );

    // Market orders meet NOTIONAL too (`applyMinToMarket`).
    let target = format!(
        "/api/v3/order?{}",
        signed_query(&key, "symbol=ETHUSDT&side=BUY&type=MARKET&quoteOrderQty=1")
    );
    let answer = connection
        .request("POST", &target, &[("X-MBX-APIKEY", &key.id)], b"")
        .await
        .unwrap();
    assert_eq!(
        answer.json(),
        json!({"code": -1013, "msg": "Filter failure: NOTIONAL"})
    );

    assert_eq!(account_state(&mut connection, &key).await, before);

    // The genuine order still works: the refusals above were not luck.
    let answer = connection
        .request(
            "POST",
            "/api/v3/order",
            &form,
            format!(
                "{original}&signature={signature}",
                signature = sign_hmac_sha256(key.secret.as_bytes(), original.as_bytes())
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    assert_eq!(answer.status, 200, "{answer:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_authentication_costs_weight_and_soon_blocks_the_sender() {
    let dir = tempfile::tempdir().unwrap();
    let weiport = Weiport::serve(dir.path(), &[("WEIPORT_INDEXER__ENABLED", "false")]);
    let key = funded_key(&weiport, &["read", "trade"]).await;
    let mut connection = Connection::open(&weiport.url).await;
    let bad_signature = format!(
        "/api/v3/account?timestamp={}&signature={}",
        now_ms(),
        "0".repeat(64)
    );
    for _ in 0..5 {
        let answer = connection
            .request("GET", &bad_signature, &[("X-MBX-APIKEY", &key.id)], b"")
            .await
            .unwrap();
        assert_eq!(answer.json()["code"], -1022, "{answer:?}");
    }
    // Each refused request was charged its weight (20) before the check.
    let ping = connection
        .request("GET", "/api/v3/ping", &[], b"")
        .await
        .unwrap();
    let used: u32 = ping
        .header("x-mbx-used-weight-1m")
        .unwrap()
        .parse()
        .unwrap();
    assert!(used > 5 * 20, "used weight {used}");
    // One more failure and the address is refused before any work, even
    // with a correct signature.
    let answer = connection
        .request("GET", &bad_signature, &[("X-MBX-APIKEY", &key.id)], b"")
        .await
        .unwrap();
    assert_eq!(answer.status, 401);
    let target = format!("/api/v3/account?{}", signed_query(&key, ""));
    let answer = connection
        .request("GET", &target, &[("X-MBX-APIKEY", &key.id)], b"")
        .await
        .unwrap();
    assert_eq!(answer.status, 429, "{answer:?}");
    assert_eq!(answer.json()["code"], -1003);
}

async fn metrics_size(connection: &mut Connection) -> usize {
    connection
        .request("GET", "/metrics", &[], b"")
        .await
        .unwrap()
        .body
        .len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn made_up_methods_and_paths_add_no_metric_series() {
    let dir = tempfile::tempdir().unwrap();
    let weiport = Weiport::serve(dir.path(), &common::GENEROUS);
    let mut connection = Connection::open(&weiport.url).await;
    for round in 0..10 {
        let answer = connection
            .request(
                &format!("WARMUP{round}"),
                &format!("/warm{round}"),
                &[],
                b"",
            )
            .await;
        assert!(answer.is_some_and(|a| a.status < 500));
    }
    // The first scrape adds the series of `/metrics` itself.
    metrics_size(&mut connection).await;
    let warm = metrics_size(&mut connection).await;
    for n in 0..300 {
        let answer = connection
            .request(&format!("QWERTY{n}"), &format!("/nope{n}"), &[], b"")
            .await
            .unwrap();
        assert!(answer.status < 500, "{answer:?}");
    }
    let after = metrics_size(&mut connection).await;
    assert!(
        after <= warm + 512,
        "300 made-up methods grew /metrics from {warm} to {after} bytes"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_and_idle_connections_are_closed_while_others_are_served() {
    let dir = tempfile::tempdir().unwrap();
    let mut env = common::GENEROUS.to_vec();
    env.extend([
        ("WEIPORT_SERVER__HEADER_READ_TIMEOUT_SECS", "1"),
        ("WEIPORT_SERVER__BODY_READ_TIMEOUT_SECS", "1"),
        ("WEIPORT_SERVER__KEEP_ALIVE_IDLE_SECS", "2"),
        ("WEIPORT_SERVER__MAX_CONNECTIONS_PER_IP", "120"),
    ]);
    let weiport = Weiport::serve(dir.path(), &env);
    let key = funded_key(&weiport, &["read", "trade"]).await;

    // 100 connections that start a request head and never finish it.
    let mut slow = Vec::new();
    for _ in 0..100 {
        let mut connection = Connection::open(&weiport.url).await;
        connection
            .send_raw(b"GET /api/v3/ping HTTP/1.1\r\nHost: x\r\nX-Slow:")
            .await
            .unwrap();
        slow.push(connection);
    }
    // Meanwhile a normal client is served.
    let mut normal = Connection::open(&weiport.url).await;
    let started = Instant::now();
    while started.elapsed() < Duration::from_millis(1500) {
        let answer = normal.request("GET", "/api/v3/ping", &[], b"").await;
        assert_eq!(answer.map(|a| a.status), Some(200));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Every half-sent connection is gone within a few header timeouts.
    for connection in &mut slow {
        assert!(connection.closed_within(Duration::from_secs(4)).await);
    }
    drop(slow);

    // A body that never fully arrives is refused in Binance's shape.
    let mut partial = Connection::open(&weiport.url).await;
    let query = signed_query(&key, "symbol=ETHUSDT");
    partial
        .send_raw(
            format!(
                "POST /api/v3/order?{query} HTTP/1.1\r\nHost: x\r\nX-MBX-APIKEY: {}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\nside=BUY",
                key.id
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let answer = partial.read_answer().await.expect("an answer");
    assert_eq!(answer.status, 408, "{answer:?}");
    assert!(answer.json()["code"].is_i64());

    // An idle keep-alive connection is closed after its idle time.
    let mut idle = Connection::open(&weiport.url).await;
    assert_eq!(
        idle.request("GET", "/api/v3/ping", &[], b"")
            .await
            .map(|a| a.status),
        Some(200)
    );
    assert!(idle.closed_within(Duration::from_secs(6)).await);

    // Connections beyond the per-address cap are closed at once; those
    // within it are served.
    drop((normal, partial));
    let mut many = Vec::new();
    for _ in 0..130 {
        many.push(Connection::open(&weiport.url).await);
    }
    for connection in &mut many[..5] {
        let answer = connection.request("GET", "/api/v3/ping", &[], b"").await;
        assert_eq!(answer.map(|a| a.status), Some(200), "within the cap");
    }
    for connection in &mut many[120..] {
        assert!(
            connection.closed_within(Duration::from_millis(500)).await,
            "beyond the cap of 120"
        );
    }
    drop(many);
    // Places come back as the server sees the closes.
    eventually("served again once the connections closed", async || {
        let mut after = Connection::open(&weiport.url).await;
        let answer = after.request("GET", "/api/v3/ping", &[], b"").await;
        answer
            .inspect(|answer| assert_eq!(answer.status, 200))
            .is_some()
    })
    .await;
}

/// Median time of `runs` answers to `target` (all must be 200).
async fn median_time(connection: &mut Connection, target: &str, key: Option<&Key>) -> Duration {
    let mut times = Vec::new();
    for _ in 0..15 {
        let (target, headers) = match key {
            Some(key) => {
                let (path, params) = target.split_once('?').unwrap();
                (
                    format!("{path}?{}", signed_query(key, params)),
                    vec![("X-MBX-APIKEY", key.id.as_str())],
                )
            }
            None => (target.to_owned(), vec![]),
        };
        let started = Instant::now();
        let answer = connection
            .request("GET", &target, &headers, b"")
            .await
            .unwrap();
        times.push(started.elapsed());
        assert_eq!(answer.status, 200, "{target}: {answer:?}");
    }
    times.sort();
    times[times.len() / 2]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "statistical timing check: scripts/hmac-timing.sh runs it"]
async fn history_reads_far_from_the_data_cost_what_reads_near_it_cost() {
    let dir = tempfile::tempdir().unwrap();
    let (first_ms, last_ms) = common::log::write_trading_log(dir.path(), 100_000);
    let weiport = Weiport::serve(dir.path(), &common::GENEROUS);
    // The accounts of the log get their keys (account ids start at 1).
    let buyer = funded_key(&weiport, &["read"]).await;
    assert_eq!(buyer.account, 1, "the log's buyer");
    let mut connection = Connection::open(&weiport.url).await;
    let far_future = last_ms + 3_600_000;
    let cases: Vec<(String, String, bool)> = vec![
        (
            format!(
                "/api/v3/klines?symbol=ETHUSDT&interval=1s&limit=10&endTime={}",
                last_ms
            ),
            "/api/v3/klines?symbol=ETHUSDT&interval=1s&limit=10&endTime=1".into(),
            false,
        ),
        (
            format!(
                "/api/v3/klines?symbol=ETHUSDT&interval=1s&limit=10&endTime={}",
                first_ms + 20_000
            ),
            format!(
                "/api/v3/klines?symbol=ETHUSDT&interval=1s&limit=10&endTime={}",
                first_ms - 86_400_000
            ),
            false,
        ),
        (
            format!(
                "/api/v3/myTrades?symbol=ETHUSDT&limit=10&startTime={}",
                last_ms - 20_000
            ),
            format!("/api/v3/myTrades?symbol=ETHUSDT&limit=10&startTime={far_future}"),
            true,
        ),
        (
            format!(
                "/api/v3/myTrades?symbol=ETHUSDT&limit=10&endTime={}",
                last_ms
            ),
            format!(
                "/api/v3/myTrades?symbol=ETHUSDT&limit=10&endTime={}",
                first_ms - 1
            ),
            true,
        ),
        (
            format!(
                "/api/v3/allOrders?symbol=ETHUSDT&limit=10&startTime={}",
                last_ms - 20_000
            ),
            format!("/api/v3/allOrders?symbol=ETHUSDT&limit=10&startTime={far_future}"),
            true,
        ),
        (
            "/api/v3/klines?symbol=ETHUSDT&interval=1m&limit=30".into(),
            "/api/v3/klines?symbol=ETHUSDT&interval=1M&limit=500".into(),
            false,
        ),
        (
            format!(
                "/api/v3/klines?symbol=ETHUSDT&interval=1m&limit=30&startTime={}",
                last_ms - 600_000
            ),
            format!(
                "/api/v3/klines?symbol=ETHUSDT&interval=1w&startTime={}",
                first_ms - 86_400_000
            ),
            false,
        ),
        (
            "/api/v3/myTrades?symbol=ETHUSDT&orderId=199998".into(),
            "/api/v3/myTrades?symbol=ETHUSDT&orderId=2".into(),
            true,
        ),
    ];
    for (near, far, signed) in cases {
        let key = signed.then_some(&buyer);
        let near_time = median_time(&mut connection, &near, key).await;
        let far_time = median_time(&mut connection, &far, key).await;
        println!(
            "median of 15: far {far_time:?} vs near {near_time:?} ({:.2}×): {far}",
            far_time.as_secs_f64() / near_time.as_secs_f64()
        );
        // Before reads sought to their window, `far` walked all 100,000
        // rows: hundreds of times `near`. A small factor allows for noise.
        assert!(
            far_time <= near_time * 4 + Duration::from_millis(2),
            "{far}: {far_time:?} against {near}: {near_time:?}"
        );
    }
}
