//! A replicated exchange's shared parts for tests: a real `redis-server`
//! and real `nats-server`s (one, or a cluster of three) on loopback, and
//! weiport processes joined to them.

use weiport_journal::testing::NatsServer;

use super::redis::RedisServer;
use super::{GENEROUS, Weiport};

/// The master key every process of the test cluster shares.
pub const MASTER_KEY: &str = "7265706c6963617465642d6a6f75726e616c2d746573742d6d61737465722121";

/// Redis and the journal's servers.
pub struct Shared {
    redis: RedisServer,
    /// The journal's servers (one, or three routed to each other).
    pub nats: Vec<NatsServer>,
}

impl Shared {
    /// Redis and one NATS server.
    pub fn start() -> Self {
        Self {
            redis: RedisServer::start(),
            nats: vec![NatsServer::start()],
        }
    }

    /// Redis and a three-server NATS cluster (the journal kept on three).
    pub fn start_three() -> Self {
        Self {
            redis: RedisServer::start(),
            nats: NatsServer::cluster(),
        }
    }

    /// Redis and the NATS servers given (e.g. on a disk whose power a drill cuts).
    pub fn with_nats(nats: Vec<NatsServer>) -> Self {
        Self {
            redis: RedisServer::start(),
            nats,
        }
    }

    /// The journal's URLs, as `cluster.nats_urls` takes them.
    pub fn nats_urls(&self) -> Vec<String> {
        self.nats.iter().map(NatsServer::url).collect()
    }

    /// A replicated exchange process on `dir`, without the chain.
    pub async fn process(&self, dir: &std::path::Path, name: &str) -> Weiport {
        self.process_with(dir, name, &GENEROUS).await
    }

    /// A replicated exchange process on `dir` with the settings in `extra`.
    pub async fn process_with(
        &self,
        dir: &std::path::Path,
        name: &str,
        extra: &[(&str, &str)],
    ) -> Weiport {
        let redis = self.redis.url();
        let urls: Vec<String> = self
            .nats_urls()
            .iter()
            .map(|url| format!("\"{url}\""))
            .collect();
        let nats = format!("[{}]", urls.join(","));
        let mut env: Vec<(&str, &str)> = extra.to_vec();
        env.extend([
            ("WEIPORT_CLUSTER__REDIS_URL", redis.as_str()),
            ("WEIPORT_CLUSTER__NATS_URLS", nats.as_str()),
            ("WEIPORT_CLUSTER__NODE_NAME", name),
            ("WEIPORT_EXCHANGE__DURABILITY", "replicated"),
            ("WEIPORT_MASTER_KEY", MASTER_KEY),
            ("WEIPORT_CLUSTER__LEASE_MS", "1000"),
        ]);
        if !extra.iter().any(|(name, _)| *name == "WEIPORT_NODE__URL") {
            env.push(("WEIPORT_WALLET__ENABLED", "false"));
        }
        let mut weiport = Weiport::serve(dir, &env);
        weiport.wait_for_log("shared key table loaded").await;
        weiport
    }
}
