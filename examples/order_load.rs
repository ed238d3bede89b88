//! Order throughput while stream subscribers are connected
//! (`scripts/bench-streams.sh`): opens IDLE connections subscribed to
//! IDLE_STREAMS that read whatever comes, and STUCK connections subscribed
//! to the traded market's busiest streams that never read; then WORKERS
//! loops each place a resting SELL (maker key) and a crossing IOC BUY (taker
//! key) over REST, signed and durable, for SECONDS. Prints the accepted
//! orders a second and the trades the stream subscribers were sent.
//!
//! Usage: order_load URL SECONDS WORKERS IDLE IDLE_STREAMS STUCK MAKER_KEY MAKER_SECRET TAKER_KEY TAKER_SECRET

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures::StreamExt;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis()
}

/// Places one signed order; whether it was accepted.
async fn order(http: &reqwest::Client, url: &str, key: &str, secret: &str, params: &str) -> bool {
    let body = format!("{params}&timestamp={}", now_ms());
    let signature = weiport_access::sign_hmac_sha256(secret.as_bytes(), body.as_bytes());
    http.post(format!("{url}/api/v3/order"))
        .header("X-MBX-APIKEY", key)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("{body}&signature={signature}"))
        .send()
        .await
        .is_ok_and(|response| response.status().is_success())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 1)]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [
        _,
        url,
        seconds,
        workers,
        idle,
        idle_streams,
        stuck,
        maker_key,
        maker_secret,
        taker_key,
        taker_secret,
    ] = &args[..]
    else {
        eprintln!(
            "usage: order_load URL SECONDS WORKERS IDLE IDLE_STREAMS STUCK MAKER_KEY MAKER_SECRET TAKER_KEY TAKER_SECRET"
        );
        std::process::exit(2);
    };
    let seconds: u64 = seconds.parse().unwrap();
    let workers: usize = workers.parse().unwrap();
    let idle: usize = idle.parse().unwrap();
    let stuck: usize = stuck.parse().unwrap();
    let ws = url.replacen("http://", "ws://", 1);
    let config = WebSocketConfig::default().read_buffer_size(4096);

    let frames = Arc::new(AtomicU64::new(0));
    for _ in 0..idle {
        let url = format!("{ws}/ws/{idle_streams}");
        let (mut socket, _) =
            tokio_tungstenite::connect_async_with_config(url, Some(config), false)
                .await
                .expect("an idle subscriber connects");
        let frames = frames.clone();
        tokio::spawn(async move {
            while let Some(Ok(_)) = socket.next().await {
                frames.fetch_add(1, Ordering::Relaxed);
            }
        });
    }
    // Held open, never read: the server must drop them, not wait for them.
    let mut never_read = Vec::new();
    for _ in 0..stuck {
        let url = format!("{ws}/ws/ethusdt@trade/ethusdt@depth@100ms/ethusdt@bookTicker");
        never_read.push(
            tokio_tungstenite::connect_async(url)
                .await
                .expect("a stuck subscriber connects"),
        );
    }

    let accepted = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut running = Vec::new();
    for _ in 0..workers {
        let (url, accepted) = (url.clone(), accepted.clone());
        let keys = [maker_key, maker_secret, taker_key, taker_secret].map(String::clone);
        running.push(tokio::spawn(async move {
            let http = reqwest::Client::new();
            let [maker_key, maker_secret, taker_key, taker_secret] = keys;
            while Instant::now() < deadline {
                let sell = "symbol=ETHUSDT&side=SELL&type=LIMIT&timeInForce=GTC&quantity=0.01&price=3000&newOrderRespType=ACK";
                let buy = "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=IOC&quantity=0.01&price=3000&newOrderRespType=ACK";
                let placed = u64::from(order(&http, &url, &maker_key, &maker_secret, sell).await)
                    + u64::from(order(&http, &url, &taker_key, &taker_secret, buy).await);
                accepted.fetch_add(placed, Ordering::Relaxed);
            }
        }));
    }
    futures::future::join_all(running).await;
    let orders = accepted.load(Ordering::Relaxed);
    println!(
        "| {idle} × {idle_streams} | {stuck} | {:.0} | {} |",
        orders as f64 / seconds as f64,
        frames.load(Ordering::Relaxed),
    );
    drop(never_read);
}
