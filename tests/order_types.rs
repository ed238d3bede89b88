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

/// Runs client `script` against a new server with three funded accounts
/// (their keys and secrets its arguments after the URL); what it printed.
async fn run_with_three_accounts(script: &str) -> String {
    let (weiport, _dir) = common::serve();
    let mut args = vec![weiport.url.clone()];
    for _ in 0..3 {
        let key = funded(&weiport).await;
        args.extend([key.id, key.secret]);
    }
    common::run_client(script, args).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ccxt_places_stops_take_profits_and_trailing_stops_that_trigger_on_the_last_trade() {
    let printed = run_with_three_accounts("order_types.py").await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_binance_places_an_oco_and_the_official_sdk_an_oto() {
    let printed = run_with_three_accounts("order_lists.py").await;
    assert!(printed.contains("order lists ok"), "{printed}");
}

async fn call(
    weiport: &Weiport,
    method: reqwest::Method,
    path: &str,
    key: &Key,
    params: &str,
) -> Value {
    let (status, answer) = weiport.signed(method, path, key, params).await;
    assert_eq!(status, 200, "{path} {params}: {answer}");
    answer
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn order_lists_are_queried_canceled_and_kept_across_a_restart() {
    use reqwest::Method;
    let dir = tempfile::tempdir().unwrap();
    let mut weiport = Weiport::serve(dir.path(), &GENEROUS);
    let (a, b) = (funded(&weiport).await, funded(&weiport).await);
    trade_at(&weiport, &b, &a, "3000").await;
    // An OTOCO: buy 1 at 2990, then sell it at 3100 or stop out at 2900.
    let otoco = call(
        &weiport,
        Method::POST,
        "/api/v3/orderList/otoco",
        &a,
        "symbol=ETHUSDT&listClientOrderId=my-otoco&workingType=LIMIT&workingSide=BUY&workingPrice=2990&workingQuantity=1&workingTimeInForce=GTC\
         &pendingSide=SELL&pendingQuantity=0.999&pendingAboveType=LIMIT_MAKER&pendingAbovePrice=3100\
         &pendingBelowType=STOP_LOSS&pendingBelowStopPrice=2900",
    )
    .await;
    // Binance names an OTOCO an OTO (whose pending orders are a pair).
    assert_eq!(otoco["contingencyType"], "OTO");
    let statuses: Vec<&str> = otoco["orderReports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["NEW", "PENDING_NEW", "PENDING_NEW"], "{otoco}");
    // A legacy OCO next to it: sell 1 at 3200, stop at 2800 selling down to 2790.
    let legacy = call(
        &weiport,
        Method::POST,
        "/api/v3/order/oco",
        &a,
        "symbol=ETHUSDT&side=SELL&quantity=1&price=3200&stopPrice=2800&stopLimitPrice=2790&stopLimitTimeInForce=GTC",
    )
    .await;
    let types: Vec<&str> = legacy["orderReports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["STOP_LOSS_LIMIT", "LIMIT_MAKER"], "{legacy}");
    let bad = weiport
        .signed(
            Method::POST,
            "/api/v3/order/oco",
            &a,
            "symbol=ETHUSDT&side=SELL&quantity=1&price=2700&stopPrice=2800",
        )
        .await;
    assert_eq!(
        (bad.0, bad.1["code"].as_i64()),
        (400, Some(-2010)),
        "prices the wrong way round: {}",
        bad.1
    );

    // Both are open lists; the OTOCO by its client id.
    let open = call(&weiport, Method::GET, "/api/v3/openOrderList", &a, "").await;
    assert_eq!(open.as_array().unwrap().len(), 2, "{open}");
    let by_client = call(
        &weiport,
        Method::GET,
        "/api/v3/orderList",
        &a,
        "origClientOrderId=my-otoco",
    )
    .await;
    assert_eq!(by_client["orderListId"], otoco["orderListId"]);

    weiport.stop("KILL", std::time::Duration::from_secs(10));
    weiport = Weiport::serve(dir.path(), &GENEROUS);
    // The working buy fills after the restart: the pair is placed.
    order(
        &weiport,
        &b,
        "symbol=ETHUSDT&side=SELL&type=LIMIT&timeInForce=GTC&quantity=1&price=2990",
    )
    .await;
    let list = call(
        &weiport,
        Method::GET,
        "/api/v3/orderList",
        &a,
        &format!("orderListId={}", otoco["orderListId"]),
    )
    .await;
    assert_eq!(list["listStatusType"], "EXEC_STARTED", "{list}");
    let pair: Vec<Value> = list["orders"].as_array().unwrap()[1..].to_vec();
    for leg in &pair {
        let state = query_order(&weiport, &a, &leg["orderId"]).await;
        assert_eq!(state["status"], "NEW", "{state}");
        assert_eq!(state["orderListId"], otoco["orderListId"]);
    }
    // Cancel the OTOCO's pair as a list: ALL_DONE, both canceled.
    let canceled = call(
        &weiport,
        Method::DELETE,
        "/api/v3/orderList",
        &a,
        "symbol=ETHUSDT&listClientOrderId=my-otoco",
    )
    .await;
    assert_eq!(
        (
            canceled["listStatusType"].as_str(),
            canceled["listOrderStatus"].as_str()
        ),
        (Some("ALL_DONE"), Some("ALL_DONE")),
        "{canceled}"
    );
    assert_eq!(canceled["orderReports"].as_array().unwrap().len(), 2);
    let all = call(
        &weiport,
        Method::GET,
        "/api/v3/allOrderList",
        &a,
        "limit=10",
    )
    .await;
    let ids: Vec<&Value> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|l| &l["orderListId"])
        .collect();
    assert_eq!(ids, [&otoco["orderListId"], &legacy["orderListId"]]);
    let open = call(&weiport, Method::GET, "/api/v3/openOrderList", &a, "").await;
    assert_eq!(
        open.as_array().unwrap().len(),
        1,
        "only the legacy OCO: {open}"
    );
    let missing = weiport
        .signed(Method::GET, "/api/v3/orderList", &a, "orderListId=99")
        .await;
    assert_eq!((missing.0, missing.1["code"].as_i64()), (400, Some(-2013)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_replace_answers_each_part_and_keeps_what_succeeded() {
    use reqwest::Method;
    let dir = tempfile::tempdir().unwrap();
    let mut env = GENEROUS.to_vec();
    env.retain(|(name, _)| *name != "WEIPORT_ACCESS__ORDERS_PER_10S");
    env.push(("WEIPORT_ACCESS__ORDERS_PER_10S", "5"));
    let weiport = Weiport::serve(dir.path(), &env);
    let a = funded(&weiport).await;
    let bid = "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=1";
    let first = order(&weiport, &a, &format!("{bid}&price=2900")).await;
    let replace = |mode: &str, target: &Value, price: &str| {
        format!(
            "{bid}&price={price}&cancelReplaceMode={mode}&cancelOrderId={target}&newOrderRespType=RESULT"
        )
    };
    // Both succeed: 200 with both answers.
    let (status, both) = weiport
        .signed(
            Method::POST,
            "/api/v3/order/cancelReplace",
            &a,
            &replace("STOP_ON_FAILURE", &first["orderId"], "2910"),
        )
        .await;
    assert_eq!(status, 200, "{both}");
    assert_eq!(
        (
            both["cancelResult"].as_str(),
            both["newOrderResult"].as_str(),
            both["cancelResponse"]["status"].as_str(),
            both["newOrderResponse"]["status"].as_str()
        ),
        (
            Some("SUCCESS"),
            Some("SUCCESS"),
            Some("CANCELED"),
            Some("NEW")
        )
    );
    let second = &both["newOrderResponse"]["orderId"];
    // The first order is gone: STOP_ON_FAILURE places nothing (400, -2022).
    let (status, stopped) = weiport
        .signed(
            Method::POST,
            "/api/v3/order/cancelReplace",
            &a,
            &replace("STOP_ON_FAILURE", &first["orderId"], "2920"),
        )
        .await;
    assert_eq!(
        (status, stopped["code"].as_i64()),
        (400, Some(-2022)),
        "{stopped}"
    );
    assert_eq!(
        (
            stopped["data"]["cancelResult"].as_str(),
            stopped["data"]["newOrderResult"].as_str(),
            stopped["data"]["cancelResponse"]["code"].as_i64()
        ),
        (Some("FAILURE"), Some("NOT_ATTEMPTED"), Some(-2011))
    );
    // ALLOW_FAILURE places it anyway: 409, -2021.
    let (status, allowed) = weiport
        .signed(
            Method::POST,
            "/api/v3/order/cancelReplace",
            &a,
            &replace("ALLOW_FAILURE", &first["orderId"], "2930"),
        )
        .await;
    assert_eq!(
        (status, allowed["code"].as_i64()),
        (409, Some(-2021)),
        "{allowed}"
    );
    assert_eq!(allowed["data"]["newOrderResponse"]["status"], "NEW");
    // The cancel succeeds but the new order cannot be paid for: it stays canceled.
    let (status, partial) = weiport
        .signed(
            Method::POST,
            "/api/v3/order/cancelReplace",
            &a,
            &format!(
                "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=500&price=2900&cancelReplaceMode=STOP_ON_FAILURE&cancelOrderId={second}"
            ),
        )
        .await;
    assert_eq!(
        (status, partial["code"].as_i64()),
        (409, Some(-2021)),
        "{partial}"
    );
    assert_eq!(
        (
            partial["data"]["cancelResult"].as_str(),
            partial["data"]["newOrderResult"].as_str(),
            partial["data"]["newOrderResponse"]["code"].as_i64()
        ),
        (Some("SUCCESS"), Some("FAILURE"), Some(-2010))
    );
    let second_now = query_order(&weiport, &a, second).await;
    assert_eq!(second_now["status"], "CANCELED");
    // The order limit (5 per 10 s, a new order not attempted counted too)
    // is used up: DO_NOTHING changes nothing, CANCEL_ONLY still cancels (429).
    let third = &allowed["data"]["newOrderResponse"]["orderId"];
    let (status, limited) = weiport
        .signed(
            Method::POST,
            "/api/v3/order/cancelReplace",
            &a,
            &replace("STOP_ON_FAILURE", third, "2940"),
        )
        .await;
    assert_eq!(
        (status, limited["code"].as_i64()),
        (429, Some(-1015)),
        "{limited}"
    );
    assert_eq!(query_order(&weiport, &a, third).await["status"], "NEW");
    let (status, cancel_only) = weiport
        .signed(
            Method::POST,
            "/api/v3/order/cancelReplace",
            &a,
            &format!(
                "{}&orderRateLimitExceededMode=CANCEL_ONLY",
                replace("STOP_ON_FAILURE", third, "2940")
            ),
        )
        .await;
    assert_eq!(
        (status, cancel_only["code"].as_i64()),
        (429, Some(-2021)),
        "{cancel_only}"
    );
    assert_eq!(cancel_only["data"]["newOrderResponse"]["code"], -1015);
    assert_eq!(query_order(&weiport, &a, third).await["status"], "CANCELED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn canceling_every_open_order_answers_each_list_once() {
    use reqwest::Method;
    let (weiport, _dir) = common::serve();
    let a = funded(&weiport).await;
    order(
        &weiport,
        &a,
        "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=1&price=2900",
    )
    .await;
    let oco = call(
        &weiport,
        Method::POST,
        "/api/v3/orderList/oco",
        &a,
        "symbol=ETHUSDT&side=SELL&quantity=1&aboveType=LIMIT_MAKER&abovePrice=3100&belowType=STOP_LOSS&belowStopPrice=2800",
    )
    .await;
    let two_stops = weiport
        .signed(
            Method::POST,
            "/api/v3/orderList/oco",
            &a,
            "symbol=ETHUSDT&side=SELL&quantity=1&aboveType=STOP_LOSS&aboveStopPrice=3100&belowType=STOP_LOSS&belowStopPrice=2800",
        )
        .await;
    assert_eq!(two_stops.1["code"], -1014, "{}", two_stops.1);
    let all = call(
        &weiport,
        Method::DELETE,
        "/api/v3/openOrders",
        &a,
        "symbol=ETHUSDT",
    )
    .await;
    let all = all.as_array().unwrap();
    assert_eq!(all.len(), 2, "{all:?}");
    assert_eq!(all[0]["status"], "CANCELED");
    assert_eq!(
        (
            all[1]["orderListId"].clone(),
            all[1]["listStatusType"].clone()
        ),
        (oco["orderListId"].clone(), Value::from("ALL_DONE"))
    );
    assert_eq!(all[1]["orderReports"].as_array().unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decrement_prevents_a_self_trade_and_the_match_is_listed() {
    use reqwest::Method;
    let (weiport, _dir) = common::serve();
    let a = funded(&weiport).await;
    let bid = order(
        &weiport,
        &a,
        "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=6&price=3000",
    )
    .await;
    let sell = order(
        &weiport,
        &a,
        "symbol=ETHUSDT&side=SELL&type=LIMIT&timeInForce=GTC&quantity=2&price=3000&selfTradePreventionMode=DECREMENT",
    )
    .await;
    assert_eq!(
        (sell["status"].as_str(), sell["executedQty"].as_str()),
        (Some("EXPIRED_IN_MATCH"), Some("0.00000000")),
        "{sell}"
    );
    let depth = common::ws::public(&weiport, "/api/v3/depth?symbol=ETHUSDT").await;
    assert_eq!(
        depth["bids"][0],
        serde_json::json!(["3000.00000000", "4.00000000"])
    );
    let by_order = call(
        &weiport,
        Method::GET,
        "/api/v3/myPreventedMatches",
        &a,
        &format!("symbol=ETHUSDT&orderId={}", bid["orderId"]),
    )
    .await;
    let matches = by_order.as_array().unwrap();
    assert_eq!(matches.len(), 1, "{by_order}");
    let prevented = &matches[0];
    assert_eq!(
        (
            prevented["takerOrderId"].clone(),
            prevented["makerOrderId"].clone(),
            prevented["selfTradePreventionMode"].as_str(),
            prevented["makerPreventedQuantity"].as_str(),
            prevented["takerPreventedQuantity"].as_str(),
            prevented["price"].as_str(),
        ),
        (
            sell["orderId"].clone(),
            bid["orderId"].clone(),
            Some("DECREMENT"),
            Some("2.00000000"),
            Some("2.00000000"),
            Some("3000.00000000")
        )
    );
    let by_id = call(
        &weiport,
        Method::GET,
        "/api/v3/myPreventedMatches",
        &a,
        &format!(
            "symbol=ETHUSDT&preventedMatchId={}",
            prevented["preventedMatchId"]
        ),
    )
    .await;
    assert_eq!(by_id[0], *prevented);
    let stranger = funded(&weiport).await;
    let none = call(
        &weiport,
        Method::GET,
        "/api/v3/myPreventedMatches",
        &stranger,
        &format!(
            "symbol=ETHUSDT&preventedMatchId={}",
            prevented["preventedMatchId"]
        ),
    )
    .await;
    assert_eq!(
        none,
        serde_json::json!([]),
        "another account's match is not shown"
    );
}
