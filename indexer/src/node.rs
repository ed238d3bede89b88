//! JSON-RPC client for an Ethereum node: timeouts, batching, and retries with
//! capped exponential backoff and jitter. Errors are classified so callers can
//! tell "wait and retry" from "stop and report".

use std::time::Duration;

use alloy::rpc::client::RpcClient;
use alloy::rpc::json_rpc::{RpcRecv, RpcSend};
use alloy::transports::{TransportError, TransportErrorKind};
use alloy_primitives::{Address, B256, U64, U256};
use rand::Rng;
use serde::Deserialize;

/// How the client talks to the node.
#[derive(Debug, Clone)]
pub struct NodeOptions {
    /// Deadline for one HTTP round trip.
    pub request_timeout: Duration,
    /// Retries after the first attempt for errors that may pass.
    pub max_retries: u32,
    /// First backoff delay; doubles on each retry.
    pub initial_backoff: Duration,
    /// Upper bound of one backoff delay.
    pub max_backoff: Duration,
}

impl Default for NodeOptions {
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_secs(30),
            max_retries: 5,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
        }
    }
}

/// Why a node call failed.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// The URL is not an http(s) URL.
    #[error("invalid node URL {url:?}: {reason}")]
    BadUrl {
        /// What was given.
        url: String,
        /// Why it was refused.
        reason: String,
    },
    /// No answer: connection refused or reset, timeout, HTTP 5xx or 429.
    #[error("node unreachable during {method}: {detail}")]
    Unreachable {
        /// The JSON-RPC method.
        method: &'static str,
        /// The transport's description.
        detail: String,
    },
    /// The node answered with something that is not the expected JSON.
    #[error("malformed answer to {method}: {detail}")]
    Malformed {
        /// The JSON-RPC method.
        method: &'static str,
        /// What was wrong.
        detail: String,
    },
    /// The node no longer keeps the state asked for (pruned or out of its history window).
    #[error(
        "node has no state for that block ({method}: {message}); use an archive node or a larger state history"
    )]
    StateUnavailable {
        /// The JSON-RPC method.
        method: &'static str,
        /// The node's message.
        message: String,
    },
    /// The node does not implement the method.
    #[error("node does not support {method}: {message}")]
    Unsupported {
        /// The JSON-RPC method.
        method: &'static str,
        /// The node's message.
        message: String,
    },
    /// Any other JSON-RPC error answer.
    #[error("node refused {method}: {message} (code {code})")]
    Rpc {
        /// The JSON-RPC method.
        method: &'static str,
        /// JSON-RPC error code.
        code: i64,
        /// The node's message.
        message: String,
        /// The error's `data` as the node sent it (raw JSON), e.g. a
        /// reverted call's return data.
        data: Option<String>,
    },
}

impl NodeError {
    /// Whether trying again later may succeed.
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Unreachable { .. } | Self::Malformed { .. })
    }

    /// Classifies a JSON-RPC error answer (or a per-item error inside a result) by its text.
    pub fn from_rpc_error(method: &'static str, code: i64, message: String) -> Self {
        let lower = message.to_ascii_lowercase();
        // A method the node lacks, or a parameter form it cannot read (an
        // EIP-1898 block object on Ganache: -32700 "Cannot wrap …"): a
        // capability answer, never an outage to wait out.
        // Not by code -32700 alone: Ganache answers every error with it.
        if code == -32601
            || lower.contains("method not found")
            || lower.contains("not supported")
            || lower.contains("does not exist/is not available")
            || lower.contains("cannot wrap")
        {
            Self::Unsupported { method, message }
        } else if lower.contains("blockoutofrange")
            || lower.contains("missing trie node")
            || lower.contains("historical state")
            || lower.contains("state is not available")
            || lower.contains("resource not found")
            || lower.contains("pruned")
        {
            Self::StateUnavailable { method, message }
        } else {
            Self::Rpc {
                method,
                code,
                message,
                data: None,
            }
        }
    }

    fn classify(method: &'static str, error: TransportError) -> Self {
        match error {
            TransportError::ErrorResp(payload) => {
                let mut error =
                    Self::from_rpc_error(method, payload.code, payload.message.to_string());
                if let Self::Rpc { data, .. } = &mut error {
                    *data = payload.data.as_ref().map(|raw| raw.get().to_owned());
                }
                error
            }
            TransportError::NullResp => Self::Malformed {
                method,
                detail: "null result".into(),
            },
            TransportError::DeserError { err, text } => Self::Malformed {
                method,
                detail: format!("{err}: {}", truncate(&text, 200)),
            },
            TransportError::Transport(TransportErrorKind::HttpError(http))
                if (400..500).contains(&http.status) && http.status != 429 =>
            {
                Self::Rpc {
                    method,
                    code: i64::from(http.status),
                    message: truncate(&http.body, 200).to_owned(),
                    data: None,
                }
            }
            other => Self::Unreachable {
                method,
                detail: other.to_string(),
            },
        }
    }
}

fn truncate(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((at, _)) => &text[..at],
        None => text,
    }
}

/// A block as far as the indexer needs it.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct BlockSummary {
    /// Block number.
    pub number: U64,
    /// Block hash.
    pub hash: B256,
    /// Parent block hash.
    pub parent_hash: B256,
    /// Fee recipient.
    pub miner: Address,
    /// Seconds since the Unix epoch.
    #[serde(default)]
    pub timestamp: U64,
    /// Proof-of-work difficulty; zero or absent after the merge.
    #[serde(default)]
    pub difficulty: Option<U256>,
    /// Transaction hashes.
    #[serde(default)]
    pub transactions: Vec<B256>,
    /// Uncle block hashes (proof of work only).
    #[serde(default)]
    pub uncles: Vec<B256>,
    /// EIP-4895 withdrawals, if the chain has them.
    #[serde(default)]
    pub withdrawals: Option<Vec<Withdrawal>>,
    /// EIP-1559 base fee per gas, if the chain has one.
    #[serde(default)]
    pub base_fee_per_gas: Option<U256>,
}

/// An EIP-4895 withdrawal: a credit outside any transaction.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Withdrawal {
    /// Credited address.
    pub address: Address,
    /// Amount in Gwei.
    pub amount: U64,
    /// Its index.
    #[serde(default)]
    pub index: U64,
    /// The validator's index.
    #[serde(default)]
    pub validator_index: U64,
}

/// Which block a state query refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateAt {
    /// The node's newest block.
    Latest,
    /// A block by number.
    Number(u64),
    /// A block by hash (EIP-1898): immune to a reorg between fetch and query.
    Hash(B256),
}

impl serde::Serialize for StateAt {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Latest => s.serialize_str("latest"),
            Self::Number(n) => s.serialize_str(&format!("{n:#x}")),
            Self::Hash(hash) => {
                use serde::ser::SerializeMap;
                let mut map = s.serialize_map(Some(1))?;
                map.serialize_entry("blockHash", hash)?;
                map.end()
            }
        }
    }
}

/// Most requests sent in one JSON-RPC batch: geth's and reth's default
/// `--rpc.batch-request-limit`; a node refuses a longer batch whole, so
/// longer ones (mainnet's 8,893 genesis accounts) go as several.
pub const MAX_BATCH: usize = 1_000;

/// A JSON-RPC connection to one node.
#[derive(Debug, Clone)]
pub struct NodeClient {
    rpc: RpcClient,
    options: NodeOptions,
    url: String,
}

impl NodeClient {
    /// Connects lazily to the node at `url` (no request is made here).
    pub fn new(url: &str, options: NodeOptions) -> Result<Self, NodeError> {
        let bad = |reason: String| NodeError::BadUrl {
            url: url.to_owned(),
            reason,
        };
        let parsed: alloy::transports::http::reqwest::Url =
            url.parse().map_err(|e| bad(format!("{e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(bad("only http:// and https:// are supported".into()));
        }
        let http = alloy::transports::http::reqwest::Client::builder()
            .timeout(options.request_timeout)
            .connect_timeout(options.request_timeout.min(Duration::from_secs(5)))
            .build()
            .map_err(|e| bad(e.to_string()))?;
        let is_local = parsed
            .host_str()
            .is_some_and(|h| h == "localhost" || h.starts_with("127.") || h == "[::1]");
        let rpc = alloy::rpc::client::ClientBuilder::default().transport(
            alloy::transports::http::Http::with_client(http, parsed),
            is_local,
        );
        Ok(Self {
            rpc,
            options,
            url: url.to_owned(),
        })
    }

    /// The URL this client talks to.
    pub fn url(&self) -> &str {
        &self.url
    }

    fn backoff(&self, attempt: u32) -> Duration {
        let exponential = self
            .options
            .initial_backoff
            .saturating_mul(1u32 << attempt.min(16))
            .min(self.options.max_backoff);
        // Full jitter: clients that failed together do not retry together.
        let millis = exponential.as_millis().max(1) as u64;
        Duration::from_millis(rand::rng().random_range(millis / 2..=millis))
    }

    async fn with_retries<T, F, Fut>(
        &self,
        method: &'static str,
        mut call: F,
    ) -> Result<T, NodeError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, NodeError>>,
    {
        let mut attempt = 0;
        loop {
            match call().await {
                Ok(value) => return Ok(value),
                Err(error) if error.is_transient() && attempt < self.options.max_retries => {
                    let delay = self.backoff(attempt);
                    tracing::debug!(%error, method, attempt, ?delay, "node call failed; retrying");
                    tokio::time::sleep(delay).await;
                    attempt += 1;
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// Calls `method` with `params`, retrying transient failures.
    pub async fn call<P: RpcSend, R: RpcRecv>(
        &self,
        method: &'static str,
        params: P,
    ) -> Result<R, NodeError> {
        self.with_retries(method, || {
            let request = self.rpc.request::<P, R>(method, params.clone());
            async move { request.await.map_err(|e| NodeError::classify(method, e)) }
        })
        .await
    }

    /// Sends all `params` for `method` in one JSON-RPC batch, retrying the whole
    /// batch on transient failures; answers come back in request order.
    pub async fn call_batch<P: RpcSend, R: RpcRecv>(
        &self,
        method: &'static str,
        params: &[P],
    ) -> Result<Vec<R>, NodeError> {
        self.call_batch_each(method, params)
            .await?
            .into_iter()
            .collect()
    }

    /// Sends all `params` for `method` in one JSON-RPC batch and answers
    /// each request on its own: a call the node refuses (a revert) is that
    /// item's error; transport failures and transient refusals retry the
    /// whole batch.
    pub async fn call_batch_each<P: RpcSend, R: RpcRecv>(
        &self,
        method: &'static str,
        params: &[P],
    ) -> Result<Vec<Result<R, NodeError>>, NodeError> {
        let mut answers = Vec::with_capacity(params.len());
        for chunk in params.chunks(MAX_BATCH) {
            answers.extend(self.one_batch(method, chunk).await?);
        }
        Ok(answers)
    }

    async fn one_batch<P: RpcSend, R: RpcRecv>(
        &self,
        method: &'static str,
        params: &[P],
    ) -> Result<Vec<Result<R, NodeError>>, NodeError> {
        self.with_retries(method, || async move {
            let mut batch = self.rpc.new_batch();
            let mut waiters = Vec::with_capacity(params.len());
            for p in params {
                let waiter = batch
                    .add_call::<P, R>(method, p)
                    .map_err(|e| NodeError::classify(method, e))?;
                waiters.push(waiter);
            }
            batch
                .send()
                .await
                .map_err(|e| NodeError::classify(method, e))?;
            let mut out = Vec::with_capacity(waiters.len());
            for waiter in waiters {
                match waiter.await.map_err(|e| NodeError::classify(method, e)) {
                    Err(error) if error.is_transient() => return Err(error),
                    answer => out.push(answer),
                }
            }
            Ok(out)
        })
        .await
    }

    /// `eth_chainId`.
    pub async fn chain_id(&self) -> Result<u64, NodeError> {
        Ok(self.call::<_, U64>("eth_chainId", ()).await?.to())
    }

    /// `eth_blockNumber`: the node's head.
    pub async fn block_number(&self) -> Result<u64, NodeError> {
        Ok(self.call::<_, U64>("eth_blockNumber", ()).await?.to())
    }

    /// `eth_accounts`: the node's unlocked (on dev nodes: pre-funded) accounts.
    pub async fn accounts(&self) -> Result<Vec<Address>, NodeError> {
        self.call("eth_accounts", ()).await
    }

    /// `eth_getBalance` of one address.
    pub async fn balance(&self, address: Address, at: StateAt) -> Result<U256, NodeError> {
        self.call("eth_getBalance", (address, at)).await
    }

    /// `eth_getBalance` of many addresses at one block, in one batch.
    pub async fn balances(
        &self,
        addresses: &[Address],
        at: StateAt,
    ) -> Result<Vec<U256>, NodeError> {
        let params: Vec<_> = addresses.iter().map(|a| (*a, at)).collect();
        self.call_batch("eth_getBalance", &params).await
    }

    /// `eth_getBlockByNumber` without transaction bodies; `None` above the head.
    pub async fn block(&self, number: u64) -> Result<Option<BlockSummary>, NodeError> {
        self.call("eth_getBlockByNumber", (StateAt::Number(number), false))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_at_serialises_as_the_node_expects() {
        assert_eq!(
            serde_json::to_string(&StateAt::Latest).unwrap(),
            r#""latest""#
        );
        assert_eq!(
            serde_json::to_string(&StateAt::Number(255)).unwrap(),
            r#""0xff""#
        );
        let hash = B256::repeat_byte(0xab);
        assert_eq!(
            serde_json::to_value(StateAt::Hash(hash)).unwrap(),
            serde_json::json!({ "blockHash": hash })
        );
    }

    #[test]
    fn urls_other_than_http_are_refused() {
        assert!(matches!(
            NodeClient::new("ws://127.0.0.1:8545", NodeOptions::default()),
            Err(NodeError::BadUrl { .. })
        ));
        assert!(matches!(
            NodeClient::new("not a url", NodeOptions::default()),
            Err(NodeError::BadUrl { .. })
        ));
    }

    #[test]
    fn backoff_is_capped_and_jittered() {
        let client = NodeClient::new("http://127.0.0.1:1", NodeOptions::default()).unwrap();
        for attempt in 0..40 {
            let delay = client.backoff(attempt);
            assert!(delay <= client.options.max_backoff, "{delay:?}");
            assert!(delay >= Duration::from_millis(50), "{delay:?}");
        }
    }

    #[tokio::test]
    async fn a_closed_port_is_reported_unreachable_after_retries() {
        let options = NodeOptions {
            max_retries: 2,
            initial_backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(2),
            ..NodeOptions::default()
        };
        // Bind then drop a listener to get a port nobody listens on.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let client = NodeClient::new(&format!("http://127.0.0.1:{port}"), options).unwrap();
        let error = client.block_number().await.unwrap_err();
        assert!(
            matches!(
                error,
                NodeError::Unreachable {
                    method: "eth_blockNumber",
                    ..
                }
            ),
            "{error}"
        );
    }
}
