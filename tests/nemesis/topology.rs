//! What the nemesis runs against: three weiport processes of one replicated
//! exchange, three NATS servers, Redis and anvil, all real; each process
//! reaches Redis, every NATS server and (through its advertised URL) the
//! others through fault proxies, so it can be cut off from any of them.

use std::time::Duration;

use serde_json::Value;
use weiport_journal::testing::NatsServer;

use crate::common::proxy::{Fault as Cut, FaultProxy};
use crate::common::redis::RedisServer;
use crate::common::replicated::MASTER_KEY;
use crate::common::{Anvil, Weiport};
use crate::schedule::Fault;

/// Weight per minute each client IP may spend.
pub const IP_LIMIT: u32 = 6_000;

/// One weiport process: its disk, fixed ports, and the proxies it reaches
/// the shared parts through.
pub struct Node {
    pub name: String,
    dir: tempfile::TempDir,
    pub port: u16,
    admin_port: u16,
    pub process: Option<Weiport>,
    pub paused: bool,
    redis_proxy: FaultProxy,
    nats_proxies: Vec<FaultProxy>,
    inbound_proxy: FaultProxy,
    node_url: String,
    /// Limits out of the way (for the checker's reads at the end).
    pub generous: bool,
}

impl Node {
    /// The public URL clients use: the same across restarts.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The admin URL: the same across restarts.
    pub fn admin_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.admin_port)
    }

    /// The admin bearer token (kept in the data dir).
    pub fn admin_token(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("admin.token")).unwrap_or_default()
    }

    fn env(&self) -> Vec<(String, String)> {
        let nats: Vec<String> = self
            .nats_proxies
            .iter()
            .map(|p| format!("\"{}\"", p.url.replace("http://", "nats://")))
            .collect();
        let mut env: Vec<(String, String)> = crate::common::GENEROUS[1..]
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let limit = if self.generous { 100_000_000 } else { IP_LIMIT };
        for (k, v) in [
            ("WEIPORT_ACCESS__IP_WEIGHT_PER_MINUTE", limit.to_string()),
            ("WEIPORT_ACCESS__BAN_INITIAL_SECS", "5".into()),
            // Probes of revoked keys present invalid keys on purpose.
            ("WEIPORT_ACCESS__INVALID_KEYS_PER_30S", "1000000".into()),
            ("WEIPORT_NODE__URL", self.node_url.clone()),
            ("WEIPORT_INDEXER__POLL_INTERVAL_MS", "50".into()),
            ("WEIPORT_EXCHANGE__DEPOSIT_CONFIRMATIONS", "4".into()),
            ("WEIPORT_WALLET__POLL_MS", "100".into()),
            ("WEIPORT_WALLET__SWEEP_THRESHOLD", "1000000".into()),
            ("WEIPORT_WALLET__REPLACE_AFTER_SECS", "600".into()),
            (
                "WEIPORT_CLUSTER__REDIS_URL",
                self.redis_proxy.url.replace("http://", "redis://"),
            ),
            (
                "WEIPORT_CLUSTER__NATS_URLS",
                format!("[{}]", nats.join(",")),
            ),
            ("WEIPORT_CLUSTER__NODE_NAME", self.name.clone()),
            ("WEIPORT_CLUSTER__LEASE_MS", "1000".into()),
            (
                "WEIPORT_CLUSTER__ADVERTISE_URL",
                self.inbound_proxy.url.clone(),
            ),
            ("WEIPORT_EXCHANGE__DURABILITY", "replicated".into()),
            ("WEIPORT_MASTER_KEY", MASTER_KEY.into()),
            ("WEIPORT_SERVER__LISTEN", format!("127.0.0.1:{}", self.port)),
            (
                "WEIPORT_ADMIN__LISTEN",
                format!("127.0.0.1:{}", self.admin_port),
            ),
            ("WEIPORT_SERVER__SHUTDOWN_GRACE_SECS", "2".into()),
        ] {
            env.push((k.to_owned(), v));
        }
        env
    }

    /// Starts the process on its disk (off the runtime: startup blocks).
    pub async fn start(&mut self) {
        assert!(self.process.is_none());
        let env = self.env();
        let dir = self.dir.path().to_owned();
        let process = tokio::task::spawn_blocking(move || {
            let env: Vec<(&str, &str)> =
                env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            Weiport::serve_within(&dir, &env, Duration::from_secs(120))
        })
        .await
        .unwrap();
        self.process = Some(process);
        self.paused = false;
    }

    /// Stops it with `signal` and waits for the exit.
    pub async fn stop(&mut self, signal: &'static str) {
        if let Some(mut process) = self.process.take() {
            if self.paused {
                process.signal("CONT");
                self.paused = false;
            }
            tokio::task::spawn_blocking(move || {
                if process.stop(signal, Duration::from_secs(20)).is_none() {
                    process.stop("KILL", Duration::from_secs(10));
                }
            })
            .await
            .unwrap();
        }
    }

    fn signal(&mut self, signal: &str) {
        if let Some(process) = &self.process {
            process.signal(signal);
            self.paused = signal == "STOP";
        }
    }
}

/// Everything running.
pub struct Topology {
    pub redis: RedisServer,
    redis_paused: bool,
    pub nats: Vec<NatsServer>,
    pub anvil: Anvil,
    pub nodes: Vec<Node>,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Topology {
    /// Starts Redis, three NATS servers, anvil and three processes.
    pub async fn start() -> Self {
        let redis = RedisServer::start();
        let nats = NatsServer::cluster();
        let anvil = Anvil::start(&[]);
        let mut topology = Self {
            redis,
            redis_paused: false,
            nats,
            anvil,
            nodes: Vec::new(),
        };
        for name in ["a", "b", "c"] {
            let node = topology.node(name).await;
            topology.nodes.push(node);
        }
        for node in &mut topology.nodes {
            node.start().await;
            let process = node.process.as_mut().unwrap();
            process.wait_for_log("shared key table loaded").await;
        }
        topology
    }

    async fn node(&self, name: &str) -> Node {
        let port = free_port();
        let mut nats_proxies = Vec::new();
        for server in &self.nats {
            nats_proxies
                .push(FaultProxy::start(&format!("http://127.0.0.1:{}", server.port)).await);
        }
        Node {
            name: name.into(),
            dir: tempfile::tempdir().unwrap(),
            port,
            admin_port: free_port(),
            process: None,
            paused: false,
            redis_proxy: FaultProxy::start(&format!("http://127.0.0.1:{}", self.redis.port)).await,
            nats_proxies,
            inbound_proxy: FaultProxy::start(&format!("http://127.0.0.1:{port}")).await,
            node_url: self.anvil.url.clone(),
            generous: false,
        }
    }

    /// A fourth process on an empty disk: it rebuilds the exchange from the
    /// journal alone.
    pub async fn add_replay(&mut self) {
        let mut node = self.node("replay").await;
        node.generous = true;
        node.start().await;
        self.nodes.push(node);
    }

    /// The public URLs of the three processes (fixed across restarts).
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(Node::url).collect()
    }

    /// The process leading now, if one answers as primary.
    pub async fn primary(&self) -> Option<usize> {
        for (index, node) in self.nodes.iter().enumerate() {
            if node.process.is_none() || node.paused {
                continue;
            }
            if cluster_report(node)
                .await
                .is_some_and(|r| r["role"] == "primary")
            {
                return Some(index);
            }
        }
        None
    }

    /// Injects `fault`; returns the fault as applied (the primary named).
    pub async fn inject(&mut self, fault: Fault) -> Fault {
        match fault {
            Fault::KillPrimary => match self.primary().await {
                Some(index) => {
                    self.nodes[index].stop("KILL").await;
                    Fault::KillProcess(index)
                }
                None => fault,
            },
            Fault::KillProcess(n) => {
                self.nodes[n].stop("KILL").await;
                fault
            }
            Fault::PauseProcess(n) => {
                self.nodes[n].signal("STOP");
                fault
            }
            Fault::RestartProcess(n) => {
                self.nodes[n].stop("TERM").await;
                self.nodes[n].start().await;
                fault
            }
            Fault::RedisLost => {
                self.redis.kill();
                fault
            }
            Fault::RedisPaused => {
                self.redis.signal("STOP");
                self.redis_paused = true;
                fault
            }
            Fault::KillNats(n) => {
                self.nats[n].kill();
                fault
            }
            Fault::CutFromRedis(n) => {
                self.nodes[n].redis_proxy.set(Cut::Drop);
                fault
            }
            Fault::CutFromNats(n) => {
                for proxy in &self.nodes[n].nats_proxies {
                    proxy.set(Cut::Drop);
                }
                fault
            }
            Fault::CutFromOthers(n) => {
                self.nodes[n].inbound_proxy.set(Cut::Drop);
                fault
            }
        }
    }

    /// Heals `fault` (as [`Topology::inject`] returned it).
    pub async fn heal(&mut self, fault: Fault) {
        match fault {
            Fault::KillProcess(n) => self.nodes[n].start().await,
            Fault::PauseProcess(n) => self.nodes[n].signal("CONT"),
            Fault::RestartProcess(_) | Fault::KillPrimary => {}
            Fault::RedisLost => self.redis.restart(),
            Fault::RedisPaused => {
                self.redis.signal("CONT");
                self.redis_paused = false;
            }
            Fault::KillNats(n) => {
                self.nats[n].restart();
                self.nats[n].wait_ready();
            }
            Fault::CutFromRedis(n) => self.nodes[n].redis_proxy.set(Cut::None),
            Fault::CutFromNats(n) => {
                for proxy in &self.nodes[n].nats_proxies {
                    proxy.set(Cut::None);
                }
            }
            Fault::CutFromOthers(n) => self.nodes[n].inbound_proxy.set(Cut::None),
        }
    }

    /// Waits until every process runs and has applied the whole journal.
    pub async fn settled(&self) {
        crate::common::eventually("every process applied the whole journal", async || {
            let mut applied = Vec::new();
            for node in &self.nodes {
                match cluster_report(node).await {
                    Some(report) => applied.push(report["appliedSequence"].as_u64()),
                    None => return false,
                }
            }
            applied.windows(2).all(|w| w[0] == w[1])
        })
        .await;
    }
}

/// `/admin/cluster` of `node`, if it answers within a second.
pub async fn cluster_report(node: &Node) -> Option<Value> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    let response = client
        .get(format!("{}/admin/cluster", node.admin_url()))
        .bearer_auth(node.admin_token())
        .send()
        .await
        .ok()?;
    if response.status() != 200 {
        return None;
    }
    response.json().await.ok()
}
