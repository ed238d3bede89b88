//! Load generator for the trade stream's fan-out (`scripts/bench-streams.sh`):
//! opens N WebSocket connections to `<url>/ws/ethusdt@trade`, then places
//! crossing orders at a steady rate over REST with two funded keys, and
//! reports how long each trade took from its engine time (`T`, stamped when
//! the engine took up the order's batch, before matching and the synced
//! write) to its arrival at each client, as p50/p99 over every delivery.
//!
//! Usage: stream_fanout URL CONNECTIONS TRADES RATE_PER_S MAKER_KEY MAKER_SECRET TAKER_KEY TAKER_SECRET

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::StreamExt;
use tokio::sync::Mutex;
use tokio_tungstenite::tungstenite::Message;

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64
}

async fn signed_order(http: &reqwest::Client, url: &str, key: &str, secret: &str, params: &str) {
    let query = format!("{params}&timestamp={}", now_us() / 1000);
    let signature = weiport_access::sign_hmac_sha256(secret.as_bytes(), query.as_bytes());
    let response = http
        .post(format!("{url}/api/v3/order?{query}&signature={signature}"))
        .header("X-MBX-APIKEY", key)
        .send()
        .await
        .expect("order sent");
    assert!(
        response.status().is_success(),
        "{}",
        response.text().await.unwrap_or_default()
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 1)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [
        _,
        url,
        connections,
        trades,
        rate,
        maker_key,
        maker_secret,
        taker_key,
        taker_secret,
    ] = &args[..]
    else {
        eprintln!(
            "usage: stream_fanout URL CONNECTIONS TRADES RATE_PER_S MAKER_KEY MAKER_SECRET TAKER_KEY TAKER_SECRET"
        );
        std::process::exit(2);
    };
    let connections: usize = connections.parse().unwrap();
    let trades: u64 = trades.parse().unwrap();
    let rate: u64 = rate.parse().unwrap();
    let ws_url = format!("{}/ws/ethusdt@trade", url.replacen("http://", "ws://", 1));

    let latencies = Arc::new(Mutex::new(Vec::with_capacity(
        connections * trades as usize,
    )));
    let received = Arc::new(AtomicU64::new(0));
    let mut readers = Vec::with_capacity(connections);
    for i in 0..connections {
        let (mut socket, _) = loop {
            match tokio_tungstenite::connect_async(&ws_url).await {
                Ok(connected) => break connected,
                // The server admits connections at its own pace; retry briefly.
                Err(error) if i > 0 => {
                    eprintln!("connection {i}: {error}; retrying");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(error) => panic!("connecting: {error}"),
            }
        };
        let (latencies, received) = (latencies.clone(), received.clone());
        readers.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            while let Some(Ok(message)) = socket.next().await {
                if let Message::Text(text) = message {
                    let arrived = now_us();
                    let event: serde_json::Value = serde_json::from_str(&text).unwrap();
                    let engine_ms = event["T"].as_u64().unwrap();
                    mine.push(arrived.saturating_sub(engine_ms * 1000));
                    if received.fetch_add(1, Ordering::Relaxed) + 1 == trades * connections as u64 {
                        break;
                    }
                    if mine.len() as u64 == trades {
                        break;
                    }
                }
            }
            latencies.lock().await.extend(mine);
        }));
    }
    eprintln!("{connections} connections open");

    let http = reqwest::Client::new();
    let maker_params = "symbol=ETHUSDT&side=SELL&type=LIMIT&timeInForce=GTC&quantity=0.01&price=3000&newOrderRespType=ACK";
    let taker_params = "symbol=ETHUSDT&side=BUY&type=MARKET&quantity=0.01&newOrderRespType=ACK";
    let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / rate.max(1)));
    for _ in 0..trades {
        tick.tick().await;
        signed_order(&http, url, maker_key, maker_secret, maker_params).await;
        signed_order(&http, url, taker_key, taker_secret, taker_params).await;
    }
    let waited =
        tokio::time::timeout(Duration::from_secs(30), futures::future::join_all(readers)).await;
    if waited.is_err() {
        eprintln!("some readers did not get every trade within 30 s");
    }
    let mut all = latencies.lock().await.clone();
    all.sort_unstable();
    let at = |q: f64| {
        all.get(((all.len().max(1) - 1) as f64 * q) as usize)
            .copied()
            .unwrap_or(0)
    };
    println!(
        "| {connections} | {trades} at {rate}/s | {} of {} | {:.2} | {:.2} | {:.2} |",
        all.len(),
        trades * connections as u64,
        at(0.5) as f64 / 1000.0,
        at(0.99) as f64 / 1000.0,
        at(1.0) as f64 / 1000.0,
    );
}
