//! The baseline of the HTTP benchmarks: a bare axum server answering a
//! constant Etherscan-shaped body, with the same runtime and listener setup
//! as weiport, so a ratio against it isolates weiport's own per-request work.
//!
//! usage: baseline_server 127.0.0.1:PORT

use axum::Router;
use axum::routing::get;

const BODY: &str = r#"{"status":"1","message":"OK","result":"10000000000000000000000"}"#;

#[tokio::main]
async fn main() {
    let listen = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:18090".into());
    let app = Router::new().route(
        "/api",
        get(|| async {
            (
                [(axum::http::header::CONTENT_TYPE, "application/json")],
                BODY,
            )
        }),
    );
    let listener = tokio::net::TcpListener::bind(&listen).await.expect("bind");
    eprintln!("baseline listening on {listen}");
    axum::serve(listener, app).await.expect("serve");
}
