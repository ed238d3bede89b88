//! Clock-skew drill: `weiport serve` runs on a clock shifted with libfaketime
//! (`scripts/setup.sh` installs it), which is then stepped an hour back and an
//! hour ahead while it trades, as a bad NTP correction would. Clients that
//! sign with their own clock are refused with Binance's -1021 and change
//! nothing; clients that take the server's time from `/api/v3/time` (as
//! ccxt's `load_time_difference` does) keep trading; trade times hold still
//! while the clock is behind (engine time never goes backwards) and jump with
//! it when it is ahead; the market data still answers; a restart replays the
//! same ledger.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{GENEROUS, Key, Weiport, now_ms, run_client};
use reqwest::Method;
use serde_json::Value;

const LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";

/// Starts the server with its wall clock read through `clock_file` (an
/// offset such as `+0` or `-3600s`, re-read every second). The monotonic
/// clock stays true, as it does when NTP steps the wall clock.
fn serve_on_clock(data_dir: &Path, clock_file: &Path) -> Weiport {
    assert!(
        Path::new(LIBFAKETIME).exists(),
        "{LIBFAKETIME} missing (scripts/setup.sh installs faketime)"
    );
    let clock_file = clock_file.to_str().unwrap();
    let mut env = GENEROUS.to_vec();
    env.extend([
        ("LD_PRELOAD", LIBFAKETIME),
        ("FAKETIME_TIMESTAMP_FILE", clock_file),
        ("FAKETIME_CACHE_DURATION", "1"),
        ("DONT_FAKE_MONOTONIC", "1"),
    ]);
    Weiport::serve(data_dir, &env)
}

async fn server_time_ms(weiport: &Weiport) -> i64 {
    let answer: Value = reqwest::get(format!("{}/api/v3/time", weiport.url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    answer["serverTime"].as_i64().unwrap()
}

/// Moves the server's clock to `offset` and waits until `/api/v3/time`
/// shows it; returns the server's clock minus the true one, in ms.
async fn step_clock(weiport: &Weiport, clock_file: &Path, offset: &str, expected_s: i64) -> i64 {
    std::fs::write(clock_file, offset).unwrap();
    for _ in 0..100 {
        let skew = server_time_ms(weiport).await - now_ms() as i64;
        if (skew - expected_s * 1000).abs() < 5_000 {
            return skew;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the server's clock did not move to {offset}");
}

/// The account as the server shows it, asked on the server's clock.
async fn account(weiport: &Weiport, key: &Key, skew_ms: i64) -> Value {
    let (status, answer) = weiport
        .signed_with_clock(
            Method::GET,
            "/api/v3/account",
            key,
            "omitZeroBalances=true",
            skew_ms,
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    answer
}

/// A crossing pair of orders at `price`, both signed on the server's clock;
/// returns the trade's time.
async fn trade(weiport: &Weiport, maker: &Key, taker: &Key, price: &str, skew_ms: i64) -> i64 {
    for (key, side) in [(maker, "SELL"), (taker, "BUY")] {
        let params = format!(
            "symbol=ETHUSDT&side={side}&type=LIMIT&timeInForce=GTC&quantity=0.1&price={price}&newOrderRespType=FULL"
        );
        let (status, answer) = weiport
            .signed_with_clock(Method::POST, "/api/v3/order", key, &params, skew_ms)
            .await;
        assert_eq!(status, 200, "{answer}");
        if side == "BUY" {
            assert_eq!(answer["status"], "FILLED", "{answer}");
            return answer["transactTime"].as_i64().unwrap();
        }
    }
    unreachable!()
}

/// An order signed on the client's own clock, which the server refuses as
/// -1021 without changing anything.
async fn refused_as_skewed(
    weiport: &Weiport,
    key: &Key,
    recv_window: u32,
    clock_ms: i64,
    skew_ms: i64,
) -> Value {
    let before = account(weiport, key, skew_ms).await;
    let params = format!(
        "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=0.1&price=1000&recvWindow={recv_window}"
    );
    let (status, answer) = weiport
        .signed_with_clock(Method::POST, "/api/v3/order", key, &params, clock_ms)
        .await;
    assert_eq!(
        (status, answer["code"].as_i64()),
        (400, Some(-1021)),
        "{answer}"
    );
    let after = account(weiport, key, skew_ms).await;
    assert_eq!(before["balances"], after["balances"]);
    answer
}

async fn ccxt(weiport: &Weiport, key: &Key, mode: &str) -> Value {
    let out = run_client(
        "clock_skew.py",
        vec![
            weiport.url.clone(),
            key.id.clone(),
            key.secret.clone(),
            mode.into(),
        ],
    )
    .await;
    serde_json::from_str(out.trim()).unwrap()
}

async fn public_ok(weiport: &Weiport, path: &str) -> Value {
    let response = reqwest::get(format!("{}{path}", weiport.url))
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{path}");
    response.json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_clock_stepped_back_and_ahead_while_trading() {
    let dir = tempfile::tempdir().unwrap();
    let clock_file = dir.path().join("clock");
    std::fs::write(&clock_file, "+0").unwrap();
    let data_dir = dir.path().join("data");
    let mut weiport = serve_on_clock(&data_dir, &clock_file);
    let (maker, taker) = weiport.two_traders().await;
    let first_trade = trade(&weiport, &maker, &taker, "2000", 0).await;

    // An hour back: the true clock is now an hour ahead of the server's.
    let skew = step_clock(&weiport, &clock_file, "-3600s", -3600).await;
    let refused = refused_as_skewed(&weiport, &taker, 60_000, 0, skew).await;
    assert!(
        refused["msg"].as_str().unwrap().contains("ahead"),
        "{refused}"
    );
    let unsynced = ccxt(&weiport, &taker, "unsynced").await;
    assert_eq!(unsynced["error"], "InvalidNonce", "{unsynced}");
    let synced = ccxt(&weiport, &taker, "synced").await;
    assert_eq!(synced["status"], "open", "{synced}");
    let stepped_back_trade = trade(&weiport, &maker, &taker, "2010", skew).await;
    // Engine time never goes backwards: trades keep their order in time.
    assert!(
        stepped_back_trade >= first_trade,
        "{stepped_back_trade} < {first_trade}"
    );

    // An hour ahead of the true clock: the client's timestamps are an hour old.
    let skew = step_clock(&weiport, &clock_file, "+3600s", 3600).await;
    let refused = refused_as_skewed(&weiport, &maker, 60_000, 0, skew).await;
    assert!(
        refused["msg"].as_str().unwrap().contains("recvWindow"),
        "{refused}"
    );
    // A client 4 s behind a true server stays inside the default 5 s window
    // only when the server is true: here it is refused too.
    refused_as_skewed(&weiport, &maker, 5_000, skew - 6_000, skew).await;
    let synced = ccxt(&weiport, &maker, "synced").await;
    assert_eq!(synced["status"], "open", "{synced}");
    let ahead_trade = trade(&weiport, &maker, &taker, "2020", skew).await;
    assert!(ahead_trade > first_trade);

    // Market data over trades whose times went back and forth.
    let trades = public_ok(&weiport, "/api/v3/trades?symbol=ETHUSDT&limit=10").await;
    let prices: Vec<&str> = trades
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["price"].as_str().unwrap())
        .collect();
    assert_eq!(prices.len(), 3, "{trades}");
    for path in [
        "/api/v3/aggTrades?symbol=ETHUSDT",
        "/api/v3/klines?symbol=ETHUSDT&interval=1m",
        "/api/v3/klines?symbol=ETHUSDT&interval=1d",
        "/api/v3/ticker/24hr?symbol=ETHUSDT",
        "/api/v3/ticker?symbol=ETHUSDT&windowSize=1m",
        "/api/v3/avgPrice?symbol=ETHUSDT",
    ] {
        public_ok(&weiport, path).await;
    }
    let (status, mine) = weiport
        .signed_with_clock(
            Method::GET,
            "/api/v3/myTrades",
            &taker,
            "symbol=ETHUSDT",
            skew,
        )
        .await;
    assert_eq!(
        (status, mine.as_array().map(Vec::len)),
        (200, Some(3)),
        "{mine}"
    );

    // A restart on a true clock replays the same ledger.
    let balances = [
        account(&weiport, &maker, skew).await,
        account(&weiport, &taker, skew).await,
    ];
    weiport.stop("TERM", Duration::from_secs(20));
    let log = weiport.read_log_to_end().join("\n");
    assert!(!log.contains("panicked"), "{log}");
    std::fs::write(&clock_file, "+0").unwrap();
    let weiport = serve_on_clock(&data_dir, &clock_file);
    let replayed = [
        account(&weiport, &maker, 0).await,
        account(&weiport, &taker, 0).await,
    ];
    for (before, after) in balances.iter().zip(&replayed) {
        assert_eq!(before["balances"], after["balances"]);
    }
    let trades = public_ok(&weiport, "/api/v3/trades?symbol=ETHUSDT&limit=10").await;
    assert_eq!(trades.as_array().unwrap().len(), 3, "{trades}");
}
