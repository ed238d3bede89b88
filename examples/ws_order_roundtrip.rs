//! An order's round trip over REST (one kept-alive HTTP/1.1 connection per
//! client) and over the WebSocket API (one connection per client), from the
//! same generator (`scripts/bench-ws-api.sh`): each client sends one signed
//! order, waits for its answer, and sends the next, for SECONDS. The request
//! is signed once and sent as the same bytes every time (as wrk sends its
//! one request): the generator spends its time on sockets, not signing,
//! alike for both transports. Every order is an IOC buy far under an empty
//! book, so each one is a full engine command (logged, durable) that
//! expires. Prints "orders_per_second p50_us p99_us refused". With `ping`
//! last, the request is the unsigned `ping` instead (`GET /api/v3/ping`):
//! the transport's own cost, with no engine behind it.
//!
//! Usage: ws_order_roundtrip HOST:PORT KEY SECRET SECONDS CONNECTIONS rest|ws [ping]

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;

/// The order, as both transports send it.
const ORDER: [(&str, &str); 7] = [
    ("newOrderRespType", "ACK"),
    ("price", "1000"),
    ("quantity", "0.01"),
    ("side", "BUY"),
    ("symbol", "ETHUSDT"),
    ("timeInForce", "IOC"),
    ("type", "LIMIT"),
];

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis()
}

/// One client's figures: each round trip's time, and refusals.
#[derive(Default)]
struct Tally {
    micros: Vec<u32>,
    refused: u64,
}

/// The signed REST request, whole.
fn rest_request(host: &str, key: &str, secret: &str) -> Vec<u8> {
    let mut body: Vec<String> = ORDER.iter().map(|(n, v)| format!("{n}={v}")).collect();
    body.push("recvWindow=60000".into());
    body.push(format!("timestamp={}", now_ms()));
    let body = body.join("&");
    let signature = weiport_access::sign_hmac_sha256(secret.as_bytes(), body.as_bytes());
    let body = format!("{body}&signature={signature}");
    format!(
        "POST /api/v3/order HTTP/1.1\r\nHost: {host}\r\nX-MBX-APIKEY: {key}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The signed WebSocket API request, whole (parameters sorted by name).
fn ws_request(key: &str, secret: &str) -> String {
    let mut params: Vec<(String, String)> = ORDER
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect();
    params.push(("apiKey".into(), key.into()));
    params.push(("recvWindow".into(), "60000".into()));
    params.push(("timestamp".into(), now_ms().to_string()));
    params.sort();
    let payload: Vec<String> = params.iter().map(|(n, v)| format!("{n}={v}")).collect();
    let signature =
        weiport_access::sign_hmac_sha256(secret.as_bytes(), payload.join("&").as_bytes());
    let mut object = serde_json::Map::new();
    for (name, value) in params {
        object.insert(name, serde_json::Value::String(value));
    }
    object.insert("signature".into(), serde_json::Value::String(signature));
    serde_json::json!({ "id": 1, "method": "order.place", "params": object }).to_string()
}

/// Round trips over one kept-alive HTTP/1.1 connection until `until`.
async fn rest_client(address: String, request: Vec<u8>, until: Instant) -> Tally {
    let mut stream = TcpStream::connect(&address).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let mut tally = Tally::default();
    let mut buffer = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    while Instant::now() < until {
        let started = Instant::now();
        stream.write_all(&request).await.unwrap();
        buffer.clear();
        // Headers, then as much body as Content-Length says.
        let (head_end, length) = loop {
            let read = stream.read(&mut chunk).await.unwrap();
            assert!(read > 0, "the server closed the connection");
            buffer.extend_from_slice(&chunk[..read]);
            if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = std::str::from_utf8(&buffer[..end])
                    .unwrap()
                    .to_ascii_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .map_or(0, |v| v.trim().parse().unwrap());
                break (end + 4, length);
            }
        };
        while buffer.len() < head_end + length {
            let read = stream.read(&mut chunk).await.unwrap();
            assert!(read > 0, "the server closed the connection");
            buffer.extend_from_slice(&chunk[..read]);
        }
        tally.micros.push(started.elapsed().as_micros() as u32);
        if !buffer.starts_with(b"HTTP/1.1 200") {
            tally.refused += 1;
        }
    }
    tally
}

/// Round trips over one WebSocket API connection until `until`.
async fn ws_client(address: String, request: String, until: Instant) -> Tally {
    let url = format!("ws://{address}/ws-api/v3");
    // Nagle off, as on the REST client's socket.
    let (mut socket, _) = tokio_tungstenite::connect_async_with_config(url, None, true)
        .await
        .unwrap();
    let request = tokio_tungstenite::tungstenite::Utf8Bytes::from(request);
    let mut tally = Tally::default();
    while Instant::now() < until {
        let started = Instant::now();
        socket.send(Message::Text(request.clone())).await.unwrap();
        let answer = loop {
            match socket.next().await {
                Some(Ok(Message::Text(text))) => break text,
                Some(Ok(_)) => continue,
                other => panic!("the connection ended: {other:?}"),
            }
        };
        tally.micros.push(started.elapsed().as_micros() as u32);
        if !answer.contains("\"status\":200") {
            tally.refused += 1;
        }
    }
    tally
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (args, ping) = match &args[..] {
        [rest @ .., last] if last == "ping" => (rest, true),
        all => (all, false),
    };
    let [_, address, key, secret, seconds, connections, transport] = args else {
        eprintln!(
            "usage: ws_order_roundtrip HOST:PORT KEY SECRET SECONDS CONNECTIONS rest|ws [ping]"
        );
        std::process::exit(2);
    };
    let seconds: u64 = seconds.parse().unwrap();
    let connections: usize = connections.parse().unwrap();
    let started = Instant::now();
    let until = started + Duration::from_secs(seconds);
    let clients: Vec<_> = (0..connections)
        .map(|_| {
            let address = address.clone();
            match (transport.as_str(), ping) {
                ("rest", false) => tokio::spawn(rest_client(
                    address.clone(),
                    rest_request(&address, key, secret),
                    until,
                )),
                ("rest", true) => {
                    let request = format!("GET /api/v3/ping HTTP/1.1\r\nHost: {address}\r\n\r\n");
                    tokio::spawn(rest_client(address, request.into_bytes(), until))
                }
                ("ws", false) => tokio::spawn(ws_client(address, ws_request(key, secret), until)),
                ("ws", true) => {
                    let request = r#"{"id":1,"method":"ping"}"#.to_owned();
                    tokio::spawn(ws_client(address, request, until))
                }
                (other, _) => panic!("unknown transport {other}"),
            }
        })
        .collect();
    let mut micros = Vec::new();
    let mut refused = 0;
    for client in clients {
        let tally = client.await.unwrap();
        micros.extend(tally.micros);
        refused += tally.refused;
    }
    let elapsed = started.elapsed().as_secs_f64();
    micros.sort_unstable();
    let at = |q: f64| micros[((micros.len() as f64 * q) as usize).min(micros.len() - 1)];
    println!(
        "{:.0} {} {} {refused}",
        micros.len() as f64 / elapsed,
        at(0.50),
        at(0.99)
    );
}
