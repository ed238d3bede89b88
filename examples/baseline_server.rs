//! The baseline of the HTTP benchmarks: a bare axum server answering
//! constant Etherscan-, Binance- and CoinGecko-shaped bodies (a balance, a
//! new-order acknowledgement, a price, a book, a simple price), with the same runtime and listener
//! setup as weiport, so a ratio against it isolates weiport's own work.
//!
//! usage: baseline_server 127.0.0.1:PORT

#[path = "../benches/support/baseline_app.rs"]
mod baseline_app;

#[tokio::main]
async fn main() {
    let listen = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:18090".into());
    let app = baseline_app::app();
    let listener = tokio::net::TcpListener::bind(&listen).await.expect("bind");
    eprintln!("baseline listening on {listen}");
    axum::serve(listener, app).await.expect("serve");
}
