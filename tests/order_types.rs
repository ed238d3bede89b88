//! Binance's conditional order types on `weiport serve` over real HTTP:
//! stop-loss, take-profit and trailing orders placed through ccxt's unified
//! methods, triggered by the last trade, and kept across a restart.

mod common;

use common::{GENEROUS, Key, Weiport, order};
use serde_json::Value;

async fn funded(weiport: &Weiport) -> Key {
    weiport
        .funded_key(&["read", "trade"], &[("USDT", "100000"), ("ETH", "10")])
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ccxt_places_stops_take_profits_and_trailing_stops_that_trigger_on_the_last_trade() {
    let (weiport, _dir) = common::serve();
    let (a, b, c) = (
        funded(&weiport).await,
        funded(&weiport).await,
        funded(&weiport).await,
    );
    let mut args = vec![weiport.url.clone()];
    for key in [&a, &b, &c] {
        args.extend([key.id.clone(), key.secret.clone()]);
    }
    let printed = common::run_client("order_types.py", args).await;
    assert!(printed.contains("order types ok"), "{printed}");
}

/// A trade of 0.1 ETH at `price`: `buyer` bids, `seller` sells into it.
async fn trade_at(weiport: &Weiport, buyer: &Key, seller: &Key, price: &str) {
    order(
        weiport,
        buyer,
        &format!("symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=0.1&price={price}"),
    )
    .await;
    order(
        weiport,
        seller,
        "symbol=ETHUSDT&side=SELL&type=MARKET&quantity=0.1",
    )
    .await;
}

async fn query_order(weiport: &Weiport, key: &Key, order_id: &Value) -> Value {
    let (status, answer) = weiport
        .signed(
            reqwest::Method::GET,
            "/api/v3/order",
            key,
            &format!("symbol=ETHUSDT&orderId={order_id}"),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    answer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_stop_survives_a_restart_and_triggers_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut weiport = Weiport::serve(dir.path(), &GENEROUS);
    let (a, b) = (funded(&weiport).await, funded(&weiport).await);
    trade_at(&weiport, &b, &a, "3000").await;
    // A trailing take-profit sell: tracks from 3100 up, triggers 2 % below the high.
    let placed = order(
        &weiport,
        &a,
        "symbol=ETHUSDT&side=SELL&type=TAKE_PROFIT_LIMIT&timeInForce=GTC&quantity=1&price=3000&stopPrice=3100&trailingDelta=200&newOrderRespType=RESULT",
    )
    .await;
    assert_eq!(
        (
            placed["status"].as_str(),
            placed["type"].as_str(),
            placed["stopPrice"].as_str(),
            placed["trailingDelta"].as_u64(),
            placed["trailingTime"].as_i64(),
            placed["workingTime"].as_i64(),
        ),
        (
            Some("NEW"),
            Some("TAKE_PROFIT_LIMIT"),
            Some("3100.00000000"),
            Some(200),
            Some(-1),
            Some(-1)
        ),
        "{placed}"
    );
    let status = weiport.stop("KILL", std::time::Duration::from_secs(10));
    assert!(status.is_some(), "killed");
    weiport = Weiport::serve(dir.path(), &GENEROUS);
    let id = &placed["orderId"];
    let waiting = query_order(&weiport, &a, id).await;
    assert_eq!(
        (waiting["status"].as_str(), waiting["isWorking"].as_bool()),
        (Some("NEW"), Some(false)),
        "{waiting}"
    );
    // 3100 starts tracking; 3200 is the high; 3136 is exactly 2 % below it.
    trade_at(&weiport, &b, &a, "3100").await;
    let tracking = query_order(&weiport, &a, id).await;
    assert!(tracking["trailingTime"].as_i64().unwrap() > 0, "{tracking}");
    trade_at(&weiport, &b, &a, "3200").await;
    trade_at(&weiport, &b, &a, "3136.01").await;
    assert_eq!(
        query_order(&weiport, &a, id).await["isWorking"],
        false,
        "not yet 2 % down"
    );
    trade_at(&weiport, &b, &a, "3136").await;
    let working = query_order(&weiport, &a, id).await;
    assert_eq!(working["isWorking"], true, "{working}");
    assert!(working["workingTime"].as_i64().unwrap() >= working["time"].as_i64().unwrap());
    // Nothing bid at 3000 or more once it works: it rests as a limit sell.
    assert_eq!(working["status"], "NEW");
    let (_, book) = weiport
        .signed(
            reqwest::Method::GET,
            "/api/v3/openOrders",
            &a,
            "symbol=ETHUSDT",
        )
        .await;
    assert_eq!(book[0]["orderId"], *id);
    let depth = common::ws::public(&weiport, "/api/v3/depth?symbol=ETHUSDT").await;
    assert_eq!(
        depth["asks"][0],
        serde_json::json!(["3000.00000000", "1.00000000"])
    );
}
