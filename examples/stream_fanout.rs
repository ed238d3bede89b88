//! Load generator for the trade stream's fan-out (`scripts/bench-streams.sh`):
//! opens N WebSocket connections to `<url>/ws/ethusdt@trade` (times in
//! microseconds), then places crossing orders at a steady rate over REST
//! with two funded keys, and reports how long each trade took from its
//! commit (the event time `E`: when the batch holding it became durable,
//! as the engine hands it to the stream hub) to its arrival at each client,
//! as p50/p99 over every delivery.
//!
//! Usage: stream_fanout URL CONNECTIONS TRADES RATE_PER_S [MAKER_KEY MAKER_SECRET TAKER_KEY TAKER_SECRET]
//! (without keys it only listens, for examples/fanout_baseline.rs). URL may
//! be several, comma-separated: the connections are spread over them in
//! turn and the orders go to the first (a replicated exchange's primary).
//! With `FANOUT_CLOCK=trade` latency is counted from the trade time `T`
//! instead (the primary's engine time, whole milliseconds): on a follower
//! `E` is its own commit, `T` the primary's, so the journal's hop counts.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::StreamExt;
use tokio::sync::Mutex;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64
}

/// The event time `E` of a frame, read without parsing the whole event so
/// that the generator's per-frame cost stays below the server's.
fn event_time_us(text: &str, field: &str) -> u64 {
    let at = text.find(field).expect("an event time") + field.len();
    text[at..]
        .bytes()
        .take_while(u8::is_ascii_digit)
        .fold(0, |n, digit| n * 10 + u64::from(digit - b'0'))
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
    // Without keys the generator only listens: the server sends on its own
    // (examples/fanout_baseline.rs).
    let (url, connections, trades, rate, keys) = match &args[..] {
        [_, url, connections, trades, rate] => (url, connections, trades, rate, None),
        [
            _,
            url,
            connections,
            trades,
            rate,
            maker_key,
            maker_secret,
            taker_key,
            taker_secret,
        ] => (
            url,
            connections,
            trades,
            rate,
            Some((maker_key, maker_secret, taker_key, taker_secret)),
        ),
        _ => {
            eprintln!(
                "usage: stream_fanout URL CONNECTIONS TRADES RATE_PER_S [MAKER_KEY MAKER_SECRET TAKER_KEY TAKER_SECRET]"
            );
            std::process::exit(2);
        }
    };
    let connections: usize = connections.parse().unwrap();
    let trades: u64 = trades.parse().unwrap();
    let rate: u64 = rate.parse().unwrap();
    // Times in microseconds: `E` is when the trade's batch became durable.
    let urls: Vec<&str> = url.split(',').collect();
    let url = urls[0];
    let ws_urls: Vec<String> = urls
        .iter()
        .map(|url| {
            format!(
                "{}/ws/ethusdt@trade?timeUnit=MICROSECOND",
                url.replacen("http://", "ws://", 1)
            )
        })
        .collect();
    let field: &'static str = match std::env::var("FANOUT_CLOCK").as_deref() {
        Ok("trade") => "\"T\":",
        _ => "\"E\":",
    };

    let latencies = Arc::new(Mutex::new(Vec::with_capacity(
        connections * trades as usize,
    )));
    let received = Arc::new(AtomicU64::new(0));
    let mut readers = Vec::with_capacity(connections);
    for i in 0..connections {
        let (mut socket, _) = loop {
            // tungstenite zeroes its whole read buffer (128 KiB by default)
            // before every read: a small one keeps the generator's cost per
            // frame below the server's.
            let config = WebSocketConfig::default().read_buffer_size(4096);
            let ws_url = &ws_urls[i % ws_urls.len()];
            match tokio_tungstenite::connect_async_with_config(ws_url, Some(config), false).await {
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
                    mine.push(arrived.saturating_sub(event_time_us(&text, field)));
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

    let mut achieved = rate as f64;
    if let Some((maker_key, maker_secret, taker_key, taker_secret)) = keys {
        let http = reqwest::Client::new();
        let maker_params = "symbol=ETHUSDT&side=SELL&type=LIMIT&timeInForce=GTC&quantity=0.01&price=3000&newOrderRespType=ACK";
        let taker_params = "symbol=ETHUSDT&side=BUY&type=MARKET&quantity=0.01&newOrderRespType=ACK";
        let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / rate.max(1)));
        let started = std::time::Instant::now();
        for _ in 0..trades {
            tick.tick().await;
            signed_order(&http, url, maker_key, maker_secret, maker_params).await;
            signed_order(&http, url, taker_key, taker_secret, taker_params).await;
        }
        // Orders wait for their answers: a server that falls behind slows
        // the flow, so the rate reached is part of the result.
        achieved = trades as f64 / started.elapsed().as_secs_f64();
    }
    let wait = Duration::from_secs(30 + trades / rate.max(1));
    let waited = tokio::time::timeout(wait, futures::future::join_all(readers)).await;
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
        "| {connections} | {trades} at {achieved:.1}/s | {} of {} | {:.2} | {:.2} | {:.2} |",
        all.len(),
        trades * connections as u64,
        at(0.5) as f64 / 1000.0,
        at(0.99) as f64 / 1000.0,
        at(1.0) as f64 / 1000.0,
    );
}
