//! The floor for `scripts/bench-streams.sh`: a bare WebSocket server that
//! does nothing but fan one trade-shaped frame out to every connection,
//! on the same runtime and socket settings as `weiport serve` (Tokio, TCP
//! no-delay, 4 KiB read buffers), so that weiport's fan-out latency can be
//! reported as a ratio against what this machine's loopback allows.
//!
//! Once CONNECTIONS clients are connected, it sends FRAMES frames at RATE
//! a second, each stamped with its send time `E` in microseconds, to all
//! of them through one broadcast channel.
//!
//! Usage: fanout_baseline LISTEN_ADDRESS CONNECTIONS FRAMES RATE_PER_S

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::{SinkExt, StreamExt};
use tokio::sync::broadcast;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, address, connections, frames, rate] = &args[..] else {
        eprintln!("usage: fanout_baseline LISTEN_ADDRESS CONNECTIONS FRAMES RATE_PER_S");
        std::process::exit(2);
    };
    let connections: usize = connections.parse().unwrap();
    let frames: u64 = frames.parse().unwrap();
    let rate: u64 = rate.parse().unwrap();
    let listener = tokio::net::TcpListener::bind(address.as_str())
        .await
        .unwrap();
    let (events, _) = broadcast::channel::<Message>(1024);
    let (connected, mut ready) = tokio::sync::mpsc::unbounded_channel();
    let accepting = events.clone();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            stream.set_nodelay(true).unwrap();
            let mut receiver = accepting.subscribe();
            let connected = connected.clone();
            tokio::spawn(async move {
                let config = WebSocketConfig::default().read_buffer_size(4096);
                let Ok(mut socket) =
                    tokio_tungstenite::accept_async_with_config(stream, Some(config)).await
                else {
                    return;
                };
                let _ = connected.send(());
                loop {
                    tokio::select! {
                        biased;
                        event = receiver.recv() => {
                            let Ok(event) = event else { break };
                            if socket.send(event).await.is_err() {
                                break;
                            }
                        }
                        incoming = socket.next() => {
                            if !matches!(incoming, Some(Ok(_))) {
                                break;
                            }
                        }
                    }
                }
            });
        }
    });
    for _ in 0..connections {
        ready.recv().await.unwrap();
    }
    let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / rate.max(1)));
    for trade in 0..frames {
        tick.tick().await;
        let now = now_us();
        let frame = format!(
            "{{\"E\":{now},\"M\":true,\"T\":{},\"e\":\"trade\",\"m\":false,\"p\":\"3000.00000000\",\"q\":\"0.01000000\",\"s\":\"ETHUSDT\",\"t\":{trade}}}",
            now / 1000
        );
        let _ = events.send(Message::Text(frame.into()));
    }
    // Long enough for the generator to read every frame and report.
    tokio::time::sleep(Duration::from_secs(30)).await;
}
