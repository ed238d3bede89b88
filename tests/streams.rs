//! Binance-compatible WebSocket market streams on `weiport serve`, over real
//! sockets: raw and combined connections, control messages, trade events
//! equal to REST's trades, and a local book kept by Binance's recipe (REST
//! snapshot plus diff depth) that ends equal to REST's book.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::ws::{connect, next, public, send};
use common::{order, serve, two_traders};
use futures::{SinkExt, StreamExt};
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trades_reach_raw_and_combined_connections_and_control_messages_answer_as_binance() {
    let (weiport, _dir, maker, taker) = two_traders().await;

    let mut raw = connect(&weiport, "/ws/ethusdt@trade").await;
    let mut combined = connect(&weiport, "/stream?streams=ethusdt@trade/ethusdt@bookTicker").await;
    // ccxt.pro opens a numbered slot and subscribes by message.
    let mut slot = connect(&weiport, "/ws/0").await;
    assert_eq!(
        send(
            &mut slot,
            json!({"method": "SUBSCRIBE", "params": ["ethusdt@aggTrade"], "id": 1})
        )
        .await,
        json!({"result": null, "id": 1})
    );
    assert_eq!(
        send(
            &mut slot,
            json!({"method": "LIST_SUBSCRIPTIONS", "id": "list"})
        )
        .await,
        json!({"result": ["ethusdt@aggTrade"], "id": "list"})
    );
    assert_eq!(
        send(
            &mut slot,
            json!({"method": "SUBSCRIBE", "params": ["ETHUSDT@trade"], "id": 2})
        )
        .await,
        json!({"error": {"code": 2, "msg": "Invalid request: invalid stream"}, "id": 2})
    );
    assert_eq!(
        send(
            &mut slot,
            json!({"method": "GET_PROPERTY", "params": ["combined"], "id": 3})
        )
        .await,
        json!({"result": false, "id": 3})
    );
    assert_eq!(
        send(
            &mut slot,
            json!({"method": "SET_PROPERTY", "params": ["combined", 1], "id": 4})
        )
        .await,
        json!({"error": {"code": 1, "msg": "Invalid value type: expected Boolean"}, "id": 4})
    );
    assert_eq!(
        send(
            &mut slot,
            json!({"method": "GET_PROPERTY", "params": ["speed"], "id": 5})
        )
        .await,
        json!({"error": {"code": 0, "msg": "Unknown property"}, "id": 5})
    );
    let reply = send(&mut slot, json!("not a request")).await;
    assert_eq!(reply["error"]["code"], 2, "{reply}");
    tokio::time::sleep(Duration::from_millis(210)).await;
    slot.send(Message::Text("{".into())).await.unwrap();
    assert_eq!(next(&mut slot).await["error"]["code"], 3);

    order(
        &weiport,
        &maker,
        "symbol=ETHUSDT&side=SELL&type=LIMIT&timeInForce=GTC&quantity=1.5&price=3000",
    )
    .await;
    // The book ticker follows the new best ask.
    let top = next(&mut combined).await;
    assert_eq!(top["stream"], "ethusdt@bookTicker");
    assert_eq!(top["data"]["a"], "3000.00000000");
    assert_eq!(top["data"]["A"], "1.50000000");
    assert_eq!(top["data"]["s"], "ETHUSDT");

    order(
        &weiport,
        &taker,
        "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=1&price=3010",
    )
    .await;
    let rest = public(&weiport, "/api/v3/trades?symbol=ETHUSDT").await;
    let rest = &rest[0];

    let trade = next(&mut raw).await;
    assert_eq!(trade["e"], "trade");
    assert_eq!(trade["s"], "ETHUSDT");
    assert_eq!(trade["t"], rest["id"]);
    assert_eq!(trade["p"], rest["price"]);
    assert_eq!(trade["q"], rest["qty"]);
    assert_eq!(trade["T"], rest["time"]);
    assert_eq!(trade["m"], rest["isBuyerMaker"]);
    assert_eq!(trade["M"], true);

    let wrapped = next(&mut combined).await;
    assert_eq!(wrapped["stream"], "ethusdt@trade");
    assert_eq!(wrapped["data"]["t"], rest["id"]);
    let top = next(&mut combined).await;
    assert_eq!(
        (top["stream"].clone(), top["data"]["A"].clone()),
        (json!("ethusdt@bookTicker"), json!("0.50000000"))
    );

    let agg = next(&mut slot).await;
    let rest_agg = public(&weiport, "/api/v3/aggTrades?symbol=ETHUSDT").await;
    assert_eq!(agg["e"], "aggTrade");
    assert_eq!(agg["a"], rest_agg[0]["a"]);
    assert_eq!(agg["p"], rest_agg[0]["p"]);
    assert_eq!(agg["q"], rest_agg[0]["q"]);
    assert_eq!(
        (agg["f"].clone(), agg["l"].clone()),
        (rest_agg[0]["f"].clone(), rest_agg[0]["l"].clone())
    );

    // Unsubscribed, the slot hears nothing more of aggregate trades.
    assert_eq!(
        send(
            &mut slot,
            json!({"method": "UNSUBSCRIBE", "params": ["ethusdt@aggTrade"], "id": 6})
        )
        .await,
        json!({"result": null, "id": 6})
    );
    assert_eq!(
        send(&mut slot, json!({"method": "LIST_SUBSCRIPTIONS", "id": 7})).await,
        json!({"result": [], "id": 7})
    );
}

/// Binance's local order book: buffer diff events, take a REST snapshot,
/// drop what it already holds, then apply the rest, checking continuity.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_book_kept_from_the_diff_stream_equals_the_rest_book() {
    let (weiport, _dir) = serve();
    let mut keys = Vec::new();
    for _ in 0..4 {
        keys.push(
            weiport
                .funded_key(&["read", "trade"], &[("ETH", "1000"), ("USDT", "10000000")])
                .await,
        );
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let place = async |rng: &mut rand::rngs::StdRng| {
        let key = &keys[rng.random_range(0..keys.len())];
        let side = if rng.random_bool(0.5) { "BUY" } else { "SELL" };
        let price = 2990 + rng.random_range(0..20);
        let quantity = rng.random_range(1..50);
        let (status, answer) = weiport
            .signed(
                reqwest::Method::POST,
                "/api/v3/order",
                key,
                &format!("symbol=ETHUSDT&side={side}&type=LIMIT&timeInForce=GTC&quantity=0.{quantity:02}&price={price}"),
            )
            .await;
        assert_eq!(status, 200, "{answer}");
        (key.clone(), answer["orderId"].as_u64().unwrap())
    };
    // A book before the stream opens, so the snapshot matters.
    let mut open = Vec::new();
    for _ in 0..100 {
        open.push(place(&mut rng).await);
    }

    let mut stream = connect(&weiport, "/ws/ethusdt@depth@100ms").await;
    let events = tokio::spawn(async move {
        let mut events = Vec::new();
        while let Ok(Some(Ok(message))) =
            tokio::time::timeout(Duration::from_secs(2), stream.next()).await
        {
            if let Message::Text(text) = message {
                events.push(serde_json::from_str::<Value>(&text).unwrap());
            }
        }
        events
    });
    for _ in 0..150 {
        open.push(place(&mut rng).await);
    }
    let snapshot = public(&weiport, "/api/v3/depth?symbol=ETHUSDT&limit=5000").await;
    for i in 0..750 {
        if i % 3 == 0 && !open.is_empty() {
            let (key, id) = open.swap_remove(rng.random_range(0..open.len()));
            // Filled orders are gone already: -2011 is fine.
            weiport
                .signed(
                    reqwest::Method::DELETE,
                    "/api/v3/order",
                    &key,
                    &format!("symbol=ETHUSDT&orderId={id}"),
                )
                .await;
        } else {
            open.push(place(&mut rng).await);
        }
    }
    let events = events.await.unwrap();
    let last = public(&weiport, "/api/v3/depth?symbol=ETHUSDT&limit=5000").await;

    let levels = |side: &Value| -> BTreeMap<String, String> {
        side.as_array()
            .unwrap()
            .iter()
            .map(|l| {
                (
                    l[0].as_str().unwrap().to_owned(),
                    l[1].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let mut book_id = snapshot["lastUpdateId"].as_u64().unwrap();
    let (mut bids, mut asks) = (levels(&snapshot["bids"]), levels(&snapshot["asks"]));
    let first = events[0]["U"].as_u64().unwrap();
    assert!(
        book_id + 1 >= first,
        "the snapshot is not older than the first event"
    );
    let mut applied = 0;
    for event in &events {
        assert_eq!(event["e"], "depthUpdate");
        assert_eq!(event["s"], "ETHUSDT");
        let (from, to) = (event["U"].as_u64().unwrap(), event["u"].as_u64().unwrap());
        if to <= book_id {
            continue;
        }
        assert!(from <= book_id + 1, "no gap: U {from} after book {book_id}");
        for (side, book) in [("b", &mut bids), ("a", &mut asks)] {
            for (price, quantity) in levels(&event[side]) {
                applied += 1;
                if quantity.parse::<f64>().unwrap() == 0.0 {
                    book.remove(&price);
                } else {
                    book.insert(price, quantity);
                }
            }
        }
        book_id = to;
    }
    // Counted in levels, not events: how many 100 ms events the orders
    // span depends on the machine's speed.
    assert!(
        applied > 10,
        "the stream carried the changes ({applied} level updates)"
    );
    assert_eq!(book_id, last["lastUpdateId"].as_u64().unwrap());
    assert_eq!(bids, levels(&last["bids"]));
    assert_eq!(asks, levels(&last["asks"]));
}

/// Runs `tests/clients/<script>` against a server with two traders; it must
/// print `done`.
async fn python_client(script: &str, done: &str) {
    let (weiport, _dir, a, b) = two_traders().await;
    let args = [&weiport.url, &a.id, &a.secret, &b.id, &b.secret];
    let printed = common::run_client(script, args.map(String::clone).to_vec()).await;
    assert!(printed.contains(done), "{printed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ccxt_pro_watches_trades_the_book_the_ticker_orders_and_the_balance() {
    python_client("binance_streams.py", "streams ok").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_binance_and_the_official_sdk_read_market_and_user_streams() {
    python_client("binance_sdk_streams.py", "sdk streams ok").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kline_streams_push_the_current_kline_as_rest_computes_it() {
    let (weiport, _dir, maker, taker) = two_traders().await;
    order(
        &weiport,
        &maker,
        "symbol=ETHUSDT&side=SELL&type=LIMIT&timeInForce=GTC&quantity=1&price=3000",
    )
    .await;
    order(
        &weiport,
        &taker,
        "symbol=ETHUSDT&side=BUY&type=MARKET&quantity=0.25",
    )
    .await;
    for (stream, query) in [
        ("ethusdt@kline_1m", "interval=1m"),
        ("ethusdt@kline_1d@+08:00", "interval=1d&timeZone=8"),
        ("ethusdt@kline_1s", "interval=1s"),
    ] {
        let mut socket = connect(&weiport, &format!("/ws/{stream}")).await;
        let event = next(&mut socket).await;
        let rest = public(
            &weiport,
            &format!("/api/v3/klines?symbol=ETHUSDT&{query}&limit=1"),
        )
        .await;
        let rest = &rest[0];
        let k = &event["k"];
        assert_eq!(
            (event["e"].clone(), event["s"].clone()),
            (json!("kline"), json!("ETHUSDT"))
        );
        assert_eq!(k["t"], rest[0], "{stream}");
        assert_eq!(k["T"], rest[6], "{stream}");
        for (field, index) in [
            ("o", 1),
            ("h", 2),
            ("l", 3),
            ("c", 4),
            ("v", 5),
            ("q", 7),
            ("V", 9),
            ("Q", 10),
        ] {
            assert_eq!(k[field], rest[index], "{stream} {field}");
        }
        assert_eq!(k["n"], rest[8]);
        assert_eq!((k["f"].clone(), k["L"].clone()), (json!(1), json!(1)));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_close_from_the_client_is_answered_with_a_close_frame() {
    let (weiport, _dir) = serve();
    for path in [
        "/ws/ethusdt@trade",
        "/stream?streams=ethusdt@trade",
        "/ws-api/v3",
    ] {
        let mut socket = connect(&weiport, path).await;
        socket.close(None).await.unwrap();
        let reply = tokio::time::timeout(Duration::from_secs(5), socket.next())
            .await
            .expect("an answer within 5 s");
        assert!(
            matches!(reply, Some(Ok(Message::Close(_)))),
            "{path}: {reply:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_market_ticker_arrays_carry_what_rest_tickers_show() {
    let (weiport, _dir, maker, taker) = two_traders().await;
    order(
        &weiport,
        &maker,
        "symbol=ETHUSDT&side=SELL&type=LIMIT&timeInForce=GTC&quantity=2&price=3000",
    )
    .await;
    order(
        &weiport,
        &taker,
        "symbol=ETHUSDT&side=BUY&type=MARKET&quantity=0.75",
    )
    .await;
    let mut arrays = connect(
        &weiport,
        "/stream?streams=!ticker@arr/!miniTicker@arr/!ticker_1h@arr",
    )
    .await;
    let day = public(&weiport, "/api/v3/ticker/24hr?symbol=ETHUSDT").await;
    let hour = public(&weiport, "/api/v3/ticker?symbol=ETHUSDT&windowSize=1h").await;
    let mut seen = BTreeMap::new();
    while seen.len() < 3 {
        let frame = next(&mut arrays).await;
        let stream = frame["stream"].as_str().unwrap().to_owned();
        let tickers = frame["data"].as_array().unwrap();
        assert_eq!(tickers.len(), 1, "{frame}");
        seen.insert(stream, tickers[0].clone());
    }
    let full = &seen["!ticker@arr"];
    assert_eq!(full["e"], "24hrTicker");
    assert_eq!(
        (&full["s"], &full["c"], &full["v"], &full["n"]),
        (
            &day["symbol"],
            &day["lastPrice"],
            &day["volume"],
            &day["count"]
        )
    );
    let mini = &seen["!miniTicker@arr"];
    assert_eq!(mini["e"], "24hrMiniTicker");
    assert_eq!(
        (&mini["c"], &mini["v"]),
        (&day["lastPrice"], &day["volume"])
    );
    let rolling = &seen["!ticker_1h@arr"];
    assert_eq!(rolling["e"], "1hTicker");
    assert_eq!(
        (&rolling["c"], &rolling["v"], &rolling["q"]),
        (&hour["lastPrice"], &hour["volume"], &hour["quoteVolume"])
    );
}
