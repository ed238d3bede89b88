//! Several processes, one key store and one limiter: what [`crate::Access`]
//! shares through Redis when `[cluster] redis_url` is set. Each process
//! keeps serving from memory; Redis holds the truth that processes agree on
//! (keys, accounts, budgets, bans) and carries the change feed between them.

pub(crate) mod table;

use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{FromRedisValue, ToRedisArgs};

use crate::clock::now_ms;

/// How a process joins the others.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// `redis://host:port/db`.
    pub redis_url: String,
    /// This process's name, unique in the cluster (shown in logs and Redis).
    pub node: String,
    /// The longest any request waits on Redis before the process acts on
    /// its own (cached keys, its share of each budget).
    pub timeout: Duration,
    /// How often a process compares its key table's version with Redis's
    /// (the safety net under the change feed) and announces itself alive.
    pub poll: Duration,
}

/// Why a shared operation did not happen.
#[derive(Debug, thiserror::Error)]
pub enum SharedError {
    /// Redis did not answer within the timeout, or refused the connection.
    #[error("the shared key store (Redis) is unreachable: {0}")]
    Unreachable(String),
    /// Redis answered something this version cannot read.
    #[error("the shared key store answered unexpectedly: {0}")]
    Unexpected(String),
    /// Redis lost its data and not every live process has given it back
    /// what it holds yet: an id taken now could be one already issued.
    #[error(
        "the shared key store is being restored from the processes after losing its data; retry in a few seconds"
    )]
    Restoring,
}

impl From<redis::RedisError> for SharedError {
    fn from(error: redis::RedisError) -> Self {
        if error.is_io_error() || error.is_timeout() || error.is_connection_dropped() {
            Self::Unreachable(error.to_string())
        } else {
            Self::Unexpected(error.to_string())
        }
    }
}

/// The names of everything weiport keeps in Redis.
pub(crate) mod names {
    /// Set once per Redis lifetime: a new value means Redis lost its data.
    pub(crate) const EPOCH: &str = "weiport:epoch";
    /// When the epoch began (Redis's clock, ms).
    pub(crate) const EPOCH_MS: &str = "weiport:epoch_ms";
    /// The processes that gave this Redis lifetime their copy of the table.
    pub(crate) const SEEDED: &str = "weiport:seeded";
    /// Bumped by every change of a key or an account.
    pub(crate) const VERSION: &str = "weiport:version";
    /// Key id → stored key record (secrets sealed).
    pub(crate) const KEYS: &str = "weiport:keys";
    /// Key id → "revision revoked(0|1)".
    pub(crate) const KEY_META: &str = "weiport:key_meta";
    /// Account id → stored account record.
    pub(crate) const ACCOUNTS: &str = "weiport:accounts";
    /// The last account id handed out.
    pub(crate) const LAST_ACCOUNT: &str = "weiport:last_account";
    /// Node name → last heartbeat (ms), as a sorted set.
    pub(crate) const NODES: &str = "weiport:nodes";
    /// The change feed.
    pub(crate) const CHANGES: &str = "weiport:changes";
    /// Holders of budget slices → last heartbeat (Redis's clock, ms); each
    /// holder's grants in `weiport:held:<holder>`, its reported spending in
    /// `weiport:spent:<holder>`.
    pub(crate) const HOLDERS: &str = "weiport:holders";
}

/// One connection to Redis for the request path (multiplexed, reconnecting)
/// and one for administrative writes (blocking, used off the runtime).
pub struct Redis {
    client: redis::Client,
    config: ClusterConfig,
    shared: Mutex<Option<ConnectionManager>>,
    blocking: Mutex<Option<redis::Connection>>,
    /// Calls are not attempted before this time after a failure, so a
    /// stopped Redis costs each request nothing rather than a timeout.
    down_until_ms: AtomicU64,
    /// Live processes at the last heartbeat: the divisor of each budget
    /// while Redis is away.
    nodes: AtomicU32,
}

impl Redis {
    /// A handle on the Redis at `config.redis_url`; connects on first use.
    pub fn new(config: ClusterConfig) -> Result<Self, SharedError> {
        let client = redis::Client::open(config.redis_url.as_str())
            .map_err(|e| SharedError::Unexpected(format!("cluster.redis_url: {e}")))?;
        Ok(Self {
            client,
            config,
            shared: Mutex::new(None),
            blocking: Mutex::new(None),
            down_until_ms: AtomicU64::new(0),
            nodes: AtomicU32::new(1),
        })
    }

    /// The configuration it was made with.
    pub fn config(&self) -> &ClusterConfig {
        &self.config
    }

    /// Whether calls are attempted now.
    pub fn is_up(&self) -> bool {
        now_ms() >= self.down_until_ms.load(Ordering::Relaxed)
    }

    /// Live processes, at least one.
    pub fn nodes(&self) -> u32 {
        self.nodes.load(Ordering::Relaxed).max(1)
    }

    fn failed(&self, error: &SharedError) {
        if matches!(error, SharedError::Unreachable(_)) {
            let backoff = self.config.timeout.max(Duration::from_millis(200));
            let until = now_ms() + backoff.as_millis() as u64;
            let was = self.down_until_ms.swap(until, Ordering::Relaxed);
            if was < now_ms() {
                tracing::warn!(%error, "Redis unreachable: serving on cached keys and local budget shares");
            }
        }
    }

    async fn manager(&self) -> Result<ConnectionManager, SharedError> {
        if let Some(manager) = self
            .shared
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
        {
            return Ok(manager);
        }
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(self.config.timeout))
            .set_response_timeout(Some(self.config.timeout))
            .set_number_of_retries(1);
        let manager = tokio::time::timeout(
            self.config.timeout,
            self.client.get_connection_manager_with_config(config),
        )
        .await
        .map_err(|_| SharedError::Unreachable("connect timed out".into()))??;
        *self.shared.lock().unwrap_or_else(|e| e.into_inner()) = Some(manager.clone());
        Ok(manager)
    }

    /// Runs `command` within the timeout.
    pub(crate) async fn query<T: FromRedisValue>(
        &self,
        command: &redis::Cmd,
    ) -> Result<T, SharedError> {
        let result = async {
            let mut connection = self.manager().await?;
            within(self.config.timeout, command.query_async(&mut connection)).await
        }
        .await;
        self.settle(result)
    }

    /// Runs `pipeline` within the timeout.
    pub(crate) async fn pipeline<T: FromRedisValue>(
        &self,
        pipeline: &redis::Pipeline,
    ) -> Result<T, SharedError> {
        let result = async {
            let mut connection = self.manager().await?;
            within(self.config.timeout, pipeline.query_async(&mut connection)).await
        }
        .await;
        self.settle(result)
    }

    /// Runs `script` with `keys` and `args` within the timeout.
    pub(crate) async fn script<T: FromRedisValue>(
        &self,
        script: &redis::Script,
        keys: &[&str],
        args: &[&dyn ToRedisArgsDyn],
    ) -> Result<T, SharedError> {
        let result = async {
            let mut invocation = script.prepare_invoke();
            for key in keys {
                invocation.key(*key);
            }
            for arg in args {
                invocation.arg(arg.bytes());
            }
            let mut connection = self.manager().await?;
            within(
                self.config.timeout,
                invocation.invoke_async(&mut connection),
            )
            .await
        }
        .await;
        self.settle(result)
    }

    fn settle<T>(&self, result: Result<T, SharedError>) -> Result<T, SharedError> {
        match result {
            Ok(value) => {
                self.down_until_ms.store(0, Ordering::Relaxed);
                Ok(value)
            }
            Err(error) => {
                self.failed(&error);
                Err(error)
            }
        }
    }

    /// Runs `work` on the blocking connection (administrative writes, which
    /// must be all or nothing and are rare): never call it on the runtime.
    pub(crate) fn blocking<T>(
        &self,
        mut work: impl FnMut(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T, SharedError> {
        let mut slot = self.blocking.lock().unwrap_or_else(|e| e.into_inner());
        // A kept connection may have died with a Redis that restarted since:
        // one fresh attempt follows a failure on it.
        for fresh in [slot.is_none(), true] {
            if slot.is_none() {
                *slot = Some(self.settle(self.connect_blocking())?);
            }
            let connection = slot.as_mut().expect("connected above");
            match work(connection) {
                Ok(value) => return self.settle(Ok(value)),
                Err(error) => {
                    *slot = None;
                    let dropped = error.is_io_error() || error.is_connection_dropped();
                    if fresh || !dropped {
                        return self.settle(Err(SharedError::from(error)));
                    }
                }
            }
        }
        Err(SharedError::Unreachable("no connection".into()))
    }

    fn connect_blocking(&self) -> Result<redis::Connection, SharedError> {
        let connection = self
            .client
            .get_connection_with_timeout(self.config.timeout)?;
        connection.set_read_timeout(Some(self.config.timeout))?;
        connection.set_write_timeout(Some(self.config.timeout))?;
        Ok(connection)
    }

    /// A connection subscribed to the change feed.
    pub(crate) async fn subscribe(&self) -> Result<redis::aio::PubSub, SharedError> {
        let timeout = self.config.timeout;
        let mut feed = tokio::time::timeout(timeout, self.client.get_async_pubsub())
            .await
            .map_err(|_| SharedError::Unreachable("connect timed out".into()))??;
        within(timeout, feed.subscribe(names::CHANGES)).await?;
        Ok(feed)
    }

    /// How long a process stays counted as alive after its last heartbeat;
    /// also how long a new Redis lifetime waits for every live process to
    /// give it its table before ids are handed out.
    pub(crate) fn liveness_ms(&self) -> u64 {
        self.config.poll.as_millis() as u64 * 4 + 2_000
    }

    /// Announces this process alive and counts the live ones.
    pub(crate) async fn heartbeat(&self) -> Result<(), SharedError> {
        let now = now_ms();
        let stale = now.saturating_sub(self.liveness_ms());
        let mut pipe = redis::pipe();
        pipe.zadd(names::NODES, &self.config.node, now)
            .ignore()
            .zrembyscore(names::NODES, 0, stale)
            .ignore()
            .zcard(names::NODES);
        let (count,): (u32,) = self.pipeline(&pipe).await?;
        self.nodes.store(count.max(1), Ordering::Relaxed);
        Ok(())
    }
}

/// `call`'s answer, or why there is none within `timeout`.
async fn within<T>(
    timeout: Duration,
    call: impl std::future::Future<Output = redis::RedisResult<T>>,
) -> Result<T, SharedError> {
    tokio::time::timeout(timeout, call)
        .await
        .map_err(|_| SharedError::Unreachable("no answer within cluster.timeout_ms".into()))?
        .map_err(SharedError::from)
}

/// An argument of a script call, whatever its type.
pub(crate) trait ToRedisArgsDyn: Sync {
    /// Its bytes as Redis receives them.
    fn bytes(&self) -> Vec<u8>;
}

impl<T: ToRedisArgs + Sync> ToRedisArgsDyn for T {
    fn bytes(&self) -> Vec<u8> {
        let mut args = self.to_redis_args();
        args.pop().unwrap_or_default()
    }
}
