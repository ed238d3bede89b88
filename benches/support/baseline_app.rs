//! The bare axum application the HTTP benchmarks measure weiport against:
//! constant Etherscan-, Binance- and CoinGecko-shaped bodies (a balance, a
//! new-order acknowledgement, a price, a book, a simple price), served over
//! sockets by `examples/baseline_server.rs` and called in process by
//! `benches/request_path.rs`.

use axum::Router;
use axum::body::Bytes;
use axum::routing::{get, post};

const BODY: &str = r#"{"status":"1","message":"OK","result":"10000000000000000000000"}"#;
const ORDER: &str = r#"{"symbol":"ETHUSDT","orderId":1,"orderListId":-1,"clientOrderId":"6gCrw2kRUAF9CvJDGP16IP","transactTime":1507725176595}"#;
const PRICE: &str = r#"{"symbol":"ETHUSDT","price":"3000.00000000"}"#;
const SIMPLE_PRICE: &str = r#"{"ethereum":{"usd":3000,"usd_24h_change":0.0,"usd_24h_vol":30,"last_updated_at":1711356300}}"#;

/// A book of the size the benchmark builds (90 levels a side), so both
/// servers send the same bytes.
fn depth_body() -> &'static str {
    let level = |price: u32| format!("[\"{price}.00000000\",\"0.01000000\"]");
    let bids: Vec<String> = (2000..2090).rev().map(level).collect();
    let asks: Vec<String> = (4000..4090).map(level).collect();
    let body = format!(
        r#"{{"lastUpdateId":1027024,"bids":[{}],"asks":[{}]}}"#,
        bids.join(","),
        asks.join(",")
    );
    Box::leak(body.into_boxed_str())
}

fn json(body: &'static str) -> impl axum::response::IntoResponse {
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body,
    )
}

/// The routes, each answering its constant body.
pub fn app() -> Router {
    Router::new()
        .route("/api", get(|| async { json(BODY) }))
        // Reads the body, as a real order handler must.
        .route(
            "/api/v3/order",
            post(|body: Bytes| async move {
                std::hint::black_box(body);
                json(ORDER)
            }),
        )
        .route("/api/v3/ticker/price", get(|| async { json(PRICE) }))
        .route("/api/v3/simple/price", get(|| async { json(SIMPLE_PRICE) }))
        .route("/api/v3/depth", {
            let depth = depth_body();
            get(move || async move { json(depth) })
        })
}
