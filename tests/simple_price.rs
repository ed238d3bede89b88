//! The CoinGecko-compatible price face on `weiport serve`, over real HTTP:
//! prices from our own markets after crossing orders, inverse markets,
//! precision, the coin and currency lists, refusals in CoinGecko's shapes,
//! and pycoingecko driving it unchanged but for its base URL.

mod common;

use common::{Key, Weiport, order};
use serde_json::{Value, json};

async fn get(weiport: &Weiport, path: &str) -> (u16, Value) {
    let response = reqwest::get(format!("{}{path}", weiport.url))
        .await
        .unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

/// A server where ETH traded at 3000 (1.5) and then 3100 (0.5) against USDT.
async fn traded() -> (Weiport, tempfile::TempDir, Key) {
    let (weiport, dir) = common::serve();
    let taker = trade_twice(&weiport).await;
    (weiport, dir, taker)
}

/// ETH traded at 3000 (1.5) and then 3100 (0.5) against USDT on `weiport`;
/// the taker's key.
async fn trade_twice(weiport: &Weiport) -> Key {
    let (maker, taker) = weiport.two_traders().await;
    for (price, quantity) in [("3000", "1.5"), ("3100", "0.5")] {
        order(
            weiport,
            &maker,
            &format!("symbol=ETHUSDT&side=SELL&type=LIMIT&timeInForce=GTC&quantity={quantity}&price={price}"),
        )
        .await;
        order(
            weiport,
            &taker,
            &format!("symbol=ETHUSDT&side=BUY&type=MARKET&quantity={quantity}"),
        )
        .await;
    }
    taker
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prices_come_from_our_markets_in_coingeckos_shapes() {
    let (weiport, _dir, _) = traded().await;
    let (status, prices) = get(
        &weiport,
        "/api/v3/simple/price?ids=ethereum%2Ctether,bitcoin&vs_currencies=usd,eth&include_24hr_vol=true&include_24hr_change=true",
    )
    .await;
    assert_eq!(status, 200);
    // No market prices bitcoin: left out. Tether in ETH is the inverse of the last price.
    assert_eq!(
        prices,
        json!({
            "ethereum": {
                "usd": 3100, "usd_24h_vol": 6050, "usd_24h_change": 3.3333333333333335,
                "eth": 1, "eth_24h_vol": 0, "eth_24h_change": 0.0,
            },
            "tether": {
                "usd": 1, "usd_24h_vol": 0, "usd_24h_change": 0.0,
                "eth": 0.000322580645161290, "eth_24h_vol": 2, "eth_24h_change": -3.225806451612903,
            },
        })
    );
    let (_, rounded) = get(
        &weiport,
        "/api/v3/simple/price?ids=tether&vs_currencies=eth&precision=6",
    )
    .await;
    assert_eq!(rounded, json!({ "tether": { "eth": 0.000323 } }));
    assert_eq!(
        get(
            &weiport,
            "/api/v3/simple/price?ids=nothing&vs_currencies=usd"
        )
        .await,
        (200, json!({}))
    );
    assert_eq!(
        get(&weiport, "/api/v3/simple/price?ids=ethereum").await,
        (400, json!({ "error": "Missing parameter vs_currencies" }))
    );
    assert_eq!(
        get(
            &weiport,
            "/api/v3/simple/price?ids=ethereum&vs_currencies=usd&precision=19"
        )
        .await
        .0,
        400
    );

    let (_, currencies) = get(&weiport, "/api/v3/simple/supported_vs_currencies").await;
    assert_eq!(currencies, json!(["eth", "usd", "usdt"]));
    let (_, coins) = get(&weiport, "/api/v3/coins/list").await;
    assert_eq!(
        coins,
        json!([
            { "id": "ethereum", "symbol": "eth", "name": "Ethereum" },
            { "id": "tether", "symbol": "usdt", "name": "Tether" },
        ])
    );
    let (status, missing) = get(
        &weiport,
        "/api/v3/coins/bitcoin/market_chart?vs_currency=usd&days=1",
    )
    .await;
    assert_eq!(
        (status, missing),
        (404, json!({ "error": "coin not found" }))
    );
    let (_, markets) = get(
        &weiport,
        "/api/v3/coins/markets?vs_currency=eth&order=id_asc",
    )
    .await;
    let ids: Vec<&str> = markets
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["ethereum", "tether"]);
    assert_eq!(markets[1]["high_24h"], json!(0.000333333333333333));
    assert_eq!(markets[1]["low_24h"], json!(0.00032258064516129));
    assert_eq!(
        markets[1]["market_cap"],
        Value::Null,
        "no supply configured"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_question_sees_the_next_trade() {
    let (weiport, _dir, taker) = traded().await;
    let path = "/api/v3/simple/price?ids=ethereum&vs_currencies=usd&include_last_updated_at=true";
    let (_, before) = get(&weiport, path).await;
    assert_eq!(before["ethereum"]["usd"], 3100);
    assert_eq!(
        get(&weiport, path).await.1,
        before,
        "asked again, answered alike"
    );
    let maker = weiport
        .funded_key(&["read", "trade"], &[("ETH", "1")])
        .await;
    order(
        &weiport,
        &maker,
        "symbol=ETHUSDT&side=SELL&type=LIMIT&timeInForce=GTC&quantity=0.1&price=3200",
    )
    .await;
    order(
        &weiport,
        &taker,
        "symbol=ETHUSDT&side=BUY&type=MARKET&quantity=0.1",
    )
    .await;
    let (_, after) = get(&weiport, path).await;
    assert_eq!(after["ethereum"]["usd"], 3200, "{after}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_are_optional_but_checked_when_given() {
    let (weiport, _dir, key) = traded().await;
    let path = "/api/v3/simple/price?ids=ethereum&vs_currencies=usd";
    let client = reqwest::Client::new();
    for header in ["x-cg-demo-api-key", "x-cg-pro-api-key"] {
        let ok = client
            .get(format!("{}{path}", weiport.url))
            .header(header, &key.id)
            .send()
            .await
            .unwrap();
        assert_eq!(ok.status(), 200);
        let bad = client
            .get(format!("{}{path}", weiport.url))
            .header(header, "Z".repeat(64))
            .send()
            .await
            .unwrap();
        assert_eq!(bad.status(), 401);
        let body: Value = bad.json().await.unwrap();
        assert_eq!(body["status"]["error_code"], 401, "{body}");
    }
    let (status, body) = get(
        &weiport,
        &format!("{path}&x_cg_pro_api_key={}", "Z".repeat(64)),
    )
    .await;
    assert_eq!((status, &body["status"]["error_code"]), (401, &json!(401)));
    let (status, _) = get(&weiport, &format!("{path}&x_cg_demo_api_key={}", key.id)).await;
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pycoingecko_reads_prices_markets_and_charts_equal_to_binance_tickers_and_klines() {
    let (weiport, _dir, key) = traded().await;
    let printed =
        common::run_client("coingecko.py", vec![weiport.url.clone(), key.id.clone()]).await;
    assert!(printed.contains("coingecko ok"), "{printed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pycoingecko_reads_coins_tickers_history_exchanges_search_and_global() {
    let contract = "0xdAC17F958D2ee523a2206206994597C13D831ec7";
    let table = format!("{{ ethereum = {{ \"{contract}\" = \"ethereum\" }} }}");
    let mut env = common::GENEROUS.to_vec();
    env.push(("WEIPORT_COINGECKO__CONTRACTS", &table));
    let dir = tempfile::tempdir().unwrap();
    let weiport = Weiport::serve(dir.path(), &env);
    let taker = trade_twice(&weiport).await;
    let printed = common::run_client(
        "coingecko_breadth.py",
        vec![weiport.url.clone(), taker.id.clone(), contract.to_owned()],
    )
    .await;
    assert!(printed.contains("coingecko breadth ok"), "{printed}");
}
