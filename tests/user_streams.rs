//! Binance-compatible user data streams on `weiport serve`, over real
//! sockets: listen-key streams (every order change and balance of one
//! account) and the WebSocket API's logon and subscriptions.

mod common;

use std::time::Duration;

use common::Key;
use common::Weiport;
use common::ws::{Socket, connect, ed25519_key, next, public, send};
use common::{order, two_traders};
use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

/// The amount `drain` credits and debits as its end marker.
const MARKER: &str = "0.00000001";

/// Every event on `key`'s listen-key stream caused by what the test did so
/// far. The account is then credited and debited a marker amount, which
/// nets to nothing: a stream delivers an account's events in the order of
/// their commands, so once the debit's position arrives every earlier event
/// has, and the marker's own events are cut off.
async fn drain(weiport: &Weiport, key: &Key, socket: &mut Socket) -> Vec<Value> {
    for direction in ["credit", "debit"] {
        let (status, answer) = weiport
            .admin(
                reqwest::Method::POST,
                &format!("/admin/accounts/{}/{direction}", key.account),
                json!({"asset": "USDT", "amount": MARKER}),
            )
            .await;
        assert_eq!(status, 200, "{answer}");
    }
    let debit = format!("-{MARKER}");
    let mut events: Vec<Value> = Vec::new();
    let mut debited = false;
    loop {
        let message = tokio::time::timeout(Duration::from_secs(30), socket.next())
            .await
            .expect("the marker's events within 30 s")
            .expect("the stream stays open")
            .expect("a readable message");
        let Message::Text(text) = message else {
            continue;
        };
        let event: Value = serde_json::from_str(&text).unwrap();
        let ends = debited && event["e"] == "outboundAccountPosition";
        debited |= event["e"] == "balanceUpdate" && event["d"] == debit.as_str();
        events.push(event);
        if ends {
            break;
        }
    }
    let marker = events
        .iter()
        .position(|e| e["e"] == "balanceUpdate" && e["d"] == MARKER)
        .expect("the marker's credit before its debit");
    events.truncate(marker);
    events
}

async fn listen_key(
    weiport: &Weiport,
    method: reqwest::Method,
    key: &Key,
    query: &str,
) -> (u16, Value) {
    let response = reqwest::Client::new()
        .request(
            method,
            format!("{}/api/v3/userDataStream{query}", weiport.url),
        )
        .header("X-MBX-APIKEY", &key.id)
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

/// A new listen key of `key`'s account, and a connection to its stream.
async fn user_stream(weiport: &Weiport, key: &Key) -> Socket {
    let (_, created) = listen_key(weiport, reqwest::Method::POST, key, "").await;
    let listen = created["listenKey"].as_str().unwrap().to_owned();
    connect(weiport, &format!("/ws/{listen}")).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listen_key_stream_reports_every_order_change_and_balance_of_its_account_only() {
    let (weiport, _dir, maker, taker) = two_traders().await;
    let trade_only = weiport.funded_key(&["trade"], &[]).await;
    let (status, refused) = listen_key(&weiport, reqwest::Method::POST, &trade_only, "").await;
    assert_eq!(
        (status, refused["code"].clone()),
        (401, json!(-2015)),
        "{refused}"
    );

    let (status, created) = listen_key(&weiport, reqwest::Method::POST, &maker, "").await;
    assert_eq!(status, 200, "{created}");
    let key = created["listenKey"].as_str().unwrap().to_owned();
    let (_, again) = listen_key(&weiport, reqwest::Method::POST, &maker, "").await;
    assert_eq!(
        again["listenKey"],
        key.as_str(),
        "one active key per account"
    );
    let (status, kept) = listen_key(
        &weiport,
        reqwest::Method::PUT,
        &maker,
        &format!("?listenKey={key}"),
    )
    .await;
    assert_eq!((status, kept), (200, json!({})));
    let (status, unknown) = listen_key(
        &weiport,
        reqwest::Method::PUT,
        &taker,
        &format!("?listenKey={key}"),
    )
    .await;
    assert_eq!(
        (status, unknown),
        (
            400,
            json!({"code": -1125, "msg": "This listenKey does not exist."})
        )
    );

    let mut stream = connect(&weiport, &format!("/ws/{key}")).await;
    let placed = order(
        &weiport,
        &maker,
        "symbol=ETHUSDT&side=SELL&type=LIMIT&timeInForce=GTC&quantity=1&price=3000&newClientOrderId=maker-1",
    )
    .await;
    order(
        &weiport,
        &taker,
        "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=0.4&price=3000",
    )
    .await;
    weiport
        .signed(
            reqwest::Method::DELETE,
            "/api/v3/order",
            &maker,
            "symbol=ETHUSDT&origClientOrderId=maker-1&newClientOrderId=cancel-1",
        )
        .await;
    let (status, _) = weiport
        .admin(
            reqwest::Method::POST,
            &format!("/admin/accounts/{}/credit", maker.account),
            json!({"asset": "USDT", "amount": "25"}),
        )
        .await;
    assert_eq!(status, 200);

    let events = drain(&weiport, &maker, &mut stream).await;
    let reports: Vec<(String, String, String, String)> = events
        .iter()
        .filter(|e| e["e"] == "executionReport")
        .map(|e| {
            assert_eq!(
                e["i"], placed["orderId"],
                "only the account's own order: {e}"
            );
            // A cancel's report names the cancel in `c`, its order in `C`.
            let (client, original) = match e["x"].as_str() {
                Some("CANCELED") => ("cancel-1", "maker-1"),
                _ => ("maker-1", ""),
            };
            assert_eq!(
                (e["c"].as_str(), e["C"].as_str()),
                (Some(client), Some(original)),
                "{e}"
            );
            let text = |k: &str| e[k].as_str().unwrap().to_owned();
            (text("x"), text("X"), text("l"), text("z"))
        })
        .collect();
    let s = |t: &str| t.to_owned();
    assert_eq!(
        reports,
        [
            (s("NEW"), s("NEW"), s("0.00000000"), s("0.00000000")),
            (
                s("TRADE"),
                s("PARTIALLY_FILLED"),
                s("0.40000000"),
                s("0.40000000")
            ),
            (
                s("CANCELED"),
                s("CANCELED"),
                s("0.00000000"),
                s("0.40000000")
            ),
        ]
    );
    let trade = events.iter().find(|e| e["x"] == "TRADE").unwrap();
    let rest = public(&weiport, "/api/v3/trades?symbol=ETHUSDT").await;
    assert_eq!(trade["t"], rest[0]["id"]);
    assert_eq!(trade["L"], "3000.00000000");
    assert_eq!(trade["Y"], "1200.00000000");
    assert_eq!(
        (trade["n"].clone(), trade["N"].clone()),
        (json!("1.20000000"), json!("USDT"))
    );
    assert_eq!(trade["m"], true);

    // The last position equals REST's account.
    let positions: Vec<&Value> = events
        .iter()
        .filter(|e| e["e"] == "outboundAccountPosition")
        .collect();
    assert!(positions.len() >= 4, "{events:#?}");
    let update = events.iter().find(|e| e["e"] == "balanceUpdate").unwrap();
    assert_eq!(
        (update["a"].clone(), update["d"].clone()),
        (json!("USDT"), json!("25.00000000"))
    );
    let (_, account) = weiport
        .signed(reqwest::Method::GET, "/api/v3/account", &maker, "")
        .await;
    let usdt = account["balances"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["asset"] == "USDT")
        .unwrap();
    let last = positions.last().unwrap()["B"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["a"] == "USDT")
        .unwrap();
    assert_eq!(
        (last["f"].clone(), last["l"].clone()),
        (usdt["free"].clone(), usdt["locked"].clone())
    );

    let (status, closed) = listen_key(
        &weiport,
        reqwest::Method::DELETE,
        &maker,
        &format!("?listenKey={key}"),
    )
    .await;
    assert_eq!((status, closed), (200, json!({})));
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_websocket_api_logs_on_with_ed25519_and_ends_streams_with_event_stream_terminated() {
    let (weiport, _dir, maker, taker) = two_traders().await;
    let (ed_key, sign) = ed25519_key(&weiport, maker.account, &["read"]).await;
    let mut api = connect(&weiport, "/ws-api/v3?timeUnit=MICROSECOND").await;

    let answer = send(
        &mut api,
        json!({ "id": "a", "method": "userDataStream.subscribe" }),
    )
    .await;
    assert_eq!(
        (&answer["status"], &answer["error"]["code"]),
        (&json!(401), &json!(-1002)),
        "no stream before a logon: {answer}"
    );
    // An HMAC key's valid signature is refused: logon takes Ed25519 keys only.
    let timestamp = now_ms();
    let payload = format!("apiKey={}&timestamp={timestamp}", maker.id);
    let hmac = weiport_access::sign_hmac_sha256(maker.secret.as_bytes(), payload.as_bytes());
    let answer = send(
        &mut api,
        json!({ "id": "b", "method": "session.logon", "params": { "apiKey": maker.id, "timestamp": timestamp, "signature": hmac } }),
    )
    .await;
    assert_eq!(answer["error"]["code"], -4056, "{answer}");
    let answer = send(
        &mut api,
        json!({ "id": "c", "method": "session.logon", "params": { "apiKey": ed_key, "timestamp": timestamp, "signature": sign(&format!("apiKey={ed_key}&timestamp={timestamp}")) } }),
    )
    .await;
    assert_eq!(answer["status"], 200, "{answer}");
    assert_eq!(answer["result"]["apiKey"], ed_key.as_str());
    assert_eq!(answer["result"]["userDataStream"], false);
    let answer = send(
        &mut api,
        json!({ "id": "d", "method": "userDataStream.subscribe" }),
    )
    .await;
    assert_eq!(answer["result"]["subscriptionId"], 0, "{answer}");
    let answer = send(&mut api, json!({ "id": "e", "method": "session.status" })).await;
    assert_eq!(answer["result"]["userDataStream"], true, "{answer}");
    assert_eq!(answer["result"]["apiKey"], ed_key.as_str());

    // The account's order is reported, with every time in microseconds.
    let placed = order(
        &weiport,
        &maker,
        "symbol=ETHUSDT&side=SELL&type=LIMIT&timeInForce=GTC&quantity=1&price=3000",
    )
    .await;
    let report = loop {
        let frame = next(&mut api).await;
        if frame["event"]["e"] == "executionReport" {
            break frame;
        }
    };
    assert_eq!(report["subscriptionId"], 0);
    assert_eq!(report["event"]["i"], placed["orderId"]);
    let created_ms = placed["transactTime"].as_u64().unwrap();
    assert_eq!(report["event"]["O"].as_u64().unwrap(), created_ms * 1000);
    assert!(report["event"]["E"].as_u64().unwrap() >= created_ms * 1000);

    // A trade stream in microseconds shows the trade time REST shows, times 1000.
    let mut trades = connect(&weiport, "/ws/ethusdt@trade?timeUnit=microsecond").await;
    send(
        &mut trades,
        json!({ "method": "LIST_SUBSCRIPTIONS", "id": 1 }),
    )
    .await;
    order(
        &weiport,
        &taker,
        "symbol=ETHUSDT&side=BUY&type=MARKET&quantity=0.5",
    )
    .await;
    let trade = next(&mut trades).await;
    let rest = public(&weiport, "/api/v3/trades?symbol=ETHUSDT").await;
    assert_eq!(trade["t"], rest[0]["id"]);
    assert_eq!(
        trade["T"].as_u64().unwrap(),
        rest[0]["time"].as_u64().unwrap() * 1000
    );

    // Logging out ends the logon's stream with eventStreamTerminated, then answers.
    api.send(Message::Text(
        json!({ "id": "f", "method": "session.logout" })
            .to_string()
            .into(),
    ))
    .await
    .unwrap();
    // The maker's trade reports may still be on their way.
    let terminated = loop {
        let frame = next(&mut api).await;
        let kind = &frame["event"]["e"];
        if kind != "executionReport" && kind != "outboundAccountPosition" {
            break frame;
        }
    };
    assert_eq!(terminated["subscriptionId"], 0, "{terminated}");
    assert_eq!(terminated["event"]["e"], "eventStreamTerminated");
    assert!(terminated["event"]["E"].as_u64().unwrap() > 1_000_000_000_000_000);
    let answer = next(&mut api).await;
    assert_eq!(answer["id"], "f", "{answer}");
    assert_eq!(answer["result"]["apiKey"], Value::Null);
    assert_eq!(answer["result"]["userDataStream"], false);
    let answer = send(
        &mut api,
        json!({ "id": "g", "method": "userDataStream.subscribe" }),
    )
    .await;
    assert_eq!(answer["error"]["code"], -1002, "logged out: {answer}");

    // A time unit Binance does not know is refused before the upgrade.
    let response = reqwest::get(format!(
        "{}/ws/ethusdt@trade?timeUnit=NANOSECOND",
        weiport.url
    ))
    .await
    .unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["code"], -1194, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_order_is_reported_waiting_then_working_when_its_trigger_trades() {
    let (weiport, _dir, maker, taker) = two_traders().await;
    let mut stream = user_stream(&weiport, &maker).await;
    // A trade at `price`: the taker bids 0.1, the maker sells into it.
    let trade_at = |price: &'static str| {
        let (weiport, maker, taker) = (&weiport, &maker, &taker);
        async move {
            order(
                weiport,
                taker,
                &format!(
                    "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=0.1&price={price}"
                ),
            )
            .await;
            order(
                weiport,
                maker,
                "symbol=ETHUSDT&side=SELL&type=MARKET&quantity=0.1",
            )
            .await;
        }
    };
    trade_at("3000").await;
    // A stop-loss limit sell: at 2950 or below it offers 0.5 ETH at 2900.
    let stop = order(
        &weiport,
        &maker,
        "symbol=ETHUSDT&side=SELL&type=STOP_LOSS_LIMIT&timeInForce=GTC&quantity=0.5&price=2900&stopPrice=2950",
    )
    .await;
    trade_at("2960").await;
    trade_at("2950").await;
    let reports: Vec<Value> = drain(&weiport, &maker, &mut stream)
        .await
        .into_iter()
        .filter(|e| e["e"] == "executionReport" && e["i"] == stop["orderId"])
        .collect();
    let summary: Vec<Value> = reports
        .iter()
        .map(|e| {
            json!([
                e["x"],
                e["X"],
                e["o"],
                e["w"],
                e["P"],
                e["W"].as_i64() > Some(0)
            ])
        })
        .collect();
    assert_eq!(
        summary,
        [
            json!([
                "NEW",
                "NEW",
                "STOP_LOSS_LIMIT",
                false,
                "2950.00000000",
                false
            ]),
            json!(["NEW", "NEW", "STOP_LOSS_LIMIT", true, "2950.00000000", true]),
        ],
        "{reports:#?}"
    );
    assert_eq!(reports[0]["W"], -1);
}

/// The `(c, C)` of every CANCELED report in `events`, in order.
fn canceled_ids(events: &[Value]) -> Vec<(Value, Value)> {
    events
        .iter()
        .filter(|e| e["e"] == "executionReport" && e["x"] == "CANCELED")
        .map(|e| (e["c"].clone(), e["C"].clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_is_reported_under_the_client_id_its_answer_gave() {
    let (weiport, _dir, maker, _taker) = two_traders().await;
    let mut stream = user_stream(&weiport, &maker).await;
    let rest = |name: &str| {
        format!(
            "symbol=ETHUSDT&side=SELL&type=LIMIT&timeInForce=GTC&quantity=0.1&price=3500&newClientOrderId={name}"
        )
    };
    let mut expected: Vec<(Value, Value)> = Vec::new();

    // Without an id of its own: the one the answer made up, on both.
    order(&weiport, &maker, &rest("plain")).await;
    let (status, canceled) = weiport
        .signed(
            reqwest::Method::DELETE,
            "/api/v3/order",
            &maker,
            "symbol=ETHUSDT&origClientOrderId=plain",
        )
        .await;
    assert_eq!(status, 200, "{canceled}");
    let made_up = canceled["clientOrderId"].as_str().unwrap().to_owned();
    assert_eq!(made_up.len(), 22, "{canceled}");
    expected.push((json!(made_up), json!("plain")));

    // A malformed id is refused before anything is canceled.
    let (status, refused) = weiport
        .signed(
            reqwest::Method::DELETE,
            "/api/v3/order",
            &maker,
            &format!(
                "symbol=ETHUSDT&origClientOrderId=plain&newClientOrderId={}",
                "x".repeat(37)
            ),
        )
        .await;
    assert_eq!(
        (status, refused["code"].clone()),
        (400, json!(-1100)),
        "{refused}"
    );

    // The cancel part of a cancel-replace.
    order(&weiport, &maker, &rest("replaced")).await;
    let (status, replaced) = weiport
        .signed(
            reqwest::Method::POST,
            "/api/v3/order/cancelReplace",
            &maker,
            &format!(
                "{}&cancelReplaceMode=STOP_ON_FAILURE&cancelOrigClientOrderId=replaced&cancelNewClientOrderId=cancel-part",
                rest("replacement")
            ),
        )
        .await;
    assert_eq!(status, 200, "{replaced}");
    assert_eq!(replaced["cancelResponse"]["clientOrderId"], "cancel-part");
    expected.push((json!("cancel-part"), json!("replaced")));

    // A list's orders, canceled together, share the list cancel's id.
    let (status, oco) = weiport
        .signed(
            reqwest::Method::POST,
            "/api/v3/orderList/oco",
            &maker,
            "symbol=ETHUSDT&side=SELL&quantity=0.1&aboveType=LIMIT_MAKER&abovePrice=3600&belowType=STOP_LOSS&belowStopPrice=2800&listClientOrderId=pair",
        )
        .await;
    assert_eq!(status, 200, "{oco}");
    let (status, list) = weiport
        .signed(
            reqwest::Method::DELETE,
            "/api/v3/orderList",
            &maker,
            "symbol=ETHUSDT&listClientOrderId=pair&newClientOrderId=cancel-pair",
        )
        .await;
    assert_eq!(status, 200, "{list}");
    for report in list["orderReports"].as_array().unwrap() {
        assert_eq!(report["clientOrderId"], "cancel-pair", "{list}");
        expected.push((json!("cancel-pair"), report["origClientOrderId"].clone()));
    }

    // Every order of the account at once: one request, one id.
    order(&weiport, &maker, &rest("all-1")).await;
    order(&weiport, &maker, &rest("all-2")).await;
    let (status, all) = weiport
        .signed(
            reqwest::Method::DELETE,
            "/api/v3/openOrders",
            &maker,
            "symbol=ETHUSDT",
        )
        .await;
    assert_eq!(status, 200, "{all}");
    for report in all.as_array().unwrap() {
        expected.push((
            report["clientOrderId"].clone(),
            report["origClientOrderId"].clone(),
        ));
    }

    let events = drain(&weiport, &maker, &mut stream).await;
    let mut seen = canceled_ids(&events);
    // A list's two reports come in the engine's order; the answer's may differ.
    seen.sort_by_key(|(c, original)| (c.to_string(), original.to_string()));
    expected.sort_by_key(|(c, original)| (c.to_string(), original.to_string()));
    assert_eq!(seen, expected, "{events:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oco_is_reported_as_a_list_from_placement_to_all_done() {
    let (weiport, _dir, maker, taker) = two_traders().await;
    let mut stream = user_stream(&weiport, &maker).await;
    let (status, oco) = weiport
        .signed(
            reqwest::Method::POST,
            "/api/v3/orderList/oco",
            &maker,
            "symbol=ETHUSDT&side=SELL&quantity=1&aboveType=LIMIT_MAKER&abovePrice=3100&belowType=STOP_LOSS&belowStopPrice=2800",
        )
        .await;
    assert_eq!(status, 200, "{oco}");
    // The taker lifts the whole take-profit: the stop expires, the list is done.
    order(
        &weiport,
        &taker,
        "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=1&price=3100",
    )
    .await;
    let events = drain(&weiport, &maker, &mut stream).await;
    let lists: Vec<(Value, Value, usize)> = events
        .iter()
        .filter(|e| e["e"] == "listStatus")
        .map(|e| {
            (
                e["l"].clone(),
                e["g"].clone(),
                e["O"].as_array().unwrap().len(),
            )
        })
        .collect();
    let id = oco["orderListId"].clone();
    assert_eq!(
        lists,
        [
            (json!("EXEC_STARTED"), id.clone(), 2),
            (json!("ALL_DONE"), id.clone(), 2)
        ],
        "{events:#?}"
    );
    let ends: Vec<(Value, Value)> = events
        .iter()
        .filter(|e| e["e"] == "executionReport" && e["x"] != "NEW")
        .map(|e| (e["o"].clone(), e["X"].clone()))
        .collect();
    assert_eq!(
        ends,
        [
            (json!("LIMIT_MAKER"), json!("FILLED")),
            (json!("STOP_LOSS"), json!("EXPIRED"))
        ],
        "{events:#?}"
    );
    assert!(
        events
            .iter()
            .filter(|e| e["e"] == "executionReport")
            .all(|e| e["g"] == id),
        "every report names the list"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_placed_before_a_restart_is_still_reported_when_it_ends() {
    let (mut weiport, dir, maker, taker) = two_traders().await;
    let (status, oco) = weiport
        .signed(
            reqwest::Method::POST,
            "/api/v3/orderList/oco",
            &maker,
            "symbol=ETHUSDT&side=SELL&quantity=1&aboveType=LIMIT_MAKER&abovePrice=3100&belowType=STOP_LOSS&belowStopPrice=2800",
        )
        .await;
    assert_eq!(status, 200, "{oco}");
    weiport.stop("TERM", Duration::from_secs(10));
    weiport = Weiport::serve(dir.path(), &common::GENEROUS);
    let mut stream = user_stream(&weiport, &maker).await;
    order(
        &weiport,
        &taker,
        "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=1&price=3100",
    )
    .await;
    let lists: Vec<Value> = drain(&weiport, &maker, &mut stream)
        .await
        .into_iter()
        .filter(|e| e["e"] == "listStatus")
        .collect();
    assert_eq!(lists.len(), 1, "{lists:#?}");
    assert_eq!(
        (
            lists[0]["l"].clone(),
            lists[0]["g"].clone(),
            lists[0]["C"].clone()
        ),
        (
            json!("ALL_DONE"),
            oco["orderListId"].clone(),
            oco["listClientOrderId"].clone()
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decrement_is_reported_to_both_orders_as_a_trade_prevention() {
    let (weiport, _dir, _maker, taker) = two_traders().await;
    let mut stream = user_stream(&weiport, &taker).await;
    let bid = order(
        &weiport,
        &taker,
        "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=3&price=3000",
    )
    .await;
    // The account holds only USDT: it is credited the ETH it then offers
    // into its own bid, which DECREMENT stops.
    let (status, _) = weiport
        .admin(
            reqwest::Method::POST,
            &format!("/admin/accounts/{}/credit", taker.account),
            json!({"asset": "ETH", "amount": "1"}),
        )
        .await;
    assert_eq!(status, 200);
    let sell = order(
        &weiport,
        &taker,
        "symbol=ETHUSDT&side=SELL&type=LIMIT&timeInForce=GTC&quantity=1&price=3000&selfTradePreventionMode=DECREMENT",
    )
    .await;
    let reports: Vec<Value> = drain(&weiport, &taker, &mut stream)
        .await
        .into_iter()
        .filter(|e| e["e"] == "executionReport" && e["x"] == "TRADE_PREVENTION")
        .collect();
    let seen: Vec<(Value, Value, Value, Value)> = reports
        .iter()
        .map(|e| {
            (
                e["i"].clone(),
                e["X"].clone(),
                e["B"].clone(),
                e["U"].clone(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (
                sell["orderId"].clone(),
                json!("EXPIRED_IN_MATCH"),
                json!("1.00000000"),
                bid["orderId"].clone()
            ),
            (
                bid["orderId"].clone(),
                json!("NEW"),
                json!("1.00000000"),
                sell["orderId"].clone()
            ),
        ],
        "{reports:#?}"
    );
    assert_eq!(reports[0]["v"], reports[1]["v"]);
}
