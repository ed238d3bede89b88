//! A JSON-RPC proxy in front of the real node that makes it look like a
//! node with fewer capabilities: chosen methods answer "not supported" (as
//! Hardhat does for block tracing and block receipts) and EIP-1898 block
//! objects can be refused (as Ganache does). Everything else is forwarded
//! unchanged, in batches as sent; the proxy counts what it forwarded.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::routing::post;
use serde_json::{Value, json};

/// What the filtered node lacks.
#[derive(Debug, Clone, Default)]
pub struct Lacks {
    /// Methods answered with -32601.
    pub methods: Vec<&'static str>,
    /// Parameters of the form `{"blockHash": …}` answered with Ganache's -32700.
    pub block_hash_objects: bool,
}

struct Inner {
    upstream: String,
    lacks: Lacks,
    http: reqwest::Client,
    forwarded: Mutex<HashMap<String, usize>>,
}

/// A running filter.
pub struct RpcFilter {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    inner: Arc<Inner>,
}

impl RpcFilter {
    /// Listens on an OS-chosen loopback port, forwarding to `upstream`.
    pub async fn start(upstream: &str, lacks: Lacks) -> Self {
        let inner = Arc::new(Inner {
            upstream: upstream.to_owned(),
            lacks,
            http: reqwest::Client::new(),
            forwarded: Mutex::default(),
        });
        let app = axum::Router::new()
            .route("/", post(handle))
            .with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self { url, inner }
    }

    /// How many calls of `method` reached the node.
    pub fn forwarded(&self, method: &str) -> usize {
        self.inner
            .forwarded
            .lock()
            .unwrap()
            .get(method)
            .copied()
            .unwrap_or(0)
    }
}

fn refusal(call: &Value, code: i64, message: String) -> Value {
    json!({ "jsonrpc": "2.0", "id": call["id"], "error": { "code": code, "message": message } })
}

async fn handle(State(inner): State<Arc<Inner>>, body: Bytes) -> axum::Json<Value> {
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let (calls, batch) = match request {
        Value::Array(calls) => (calls, true),
        single => (vec![single], false),
    };
    let mut answers: Vec<Option<Value>> = vec![None; calls.len()];
    let mut forward = Vec::new();
    for (at, call) in calls.iter().enumerate() {
        let method = call["method"].as_str().unwrap_or_default();
        let hash_object = call["params"]
            .as_array()
            .is_some_and(|params| params.iter().any(|p| p.get("blockHash").is_some()));
        if inner.lacks.methods.contains(&method) {
            answers[at] = Some(refusal(
                call,
                -32601,
                format!("Method {method} is not supported"),
            ));
        } else if inner.lacks.block_hash_objects && hash_object {
            answers[at] = Some(refusal(
                call,
                -32700,
                "Cannot wrap a \"object\" as a json-rpc type".into(),
            ));
        } else {
            *inner
                .forwarded
                .lock()
                .unwrap()
                .entry(method.to_owned())
                .or_default() += 1;
            forward.push(at);
        }
    }
    if !forward.is_empty() {
        let sent: Vec<&Value> = forward.iter().map(|at| &calls[*at]).collect();
        let reply: Value = inner
            .http
            .post(&inner.upstream)
            .json(&sent)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        for answer in reply.as_array().cloned().unwrap_or_default() {
            if let Some(at) = forward.iter().find(|at| calls[**at]["id"] == answer["id"]) {
                answers[*at] = Some(answer);
            }
        }
    }
    let answers: Vec<Value> = answers.into_iter().map(Option::unwrap_or_default).collect();
    axum::Json(if batch {
        Value::Array(answers)
    } else {
        answers.into_iter().next().unwrap_or_default()
    })
}
