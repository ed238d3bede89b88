//! Throwaway NATS JetStream servers on free loopback ports with their own
//! directories, for tests: one alone, or three in a cluster.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One `nats-server` with JetStream.
pub struct NatsServer {
    child: Option<Child>,
    /// Its client port.
    pub port: u16,
    config: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

/// When JetStream writes what it acknowledged to the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sync {
    /// Before it acknowledges (`sync_interval: always`): weiport's setting.
    Always,
    /// The server's default: every two minutes, acknowledging before.
    Lazy,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("a free port")
        .local_addr()
        .expect("its address")
        .port()
}

/// The pinned server `scripts/setup.sh` installs (`WEIPORT_NATS_SERVER`,
/// else where setup puts it); never an older one found on the PATH.
pub fn binary() -> std::path::PathBuf {
    if let Some(path) = std::env::var_os("WEIPORT_NATS_SERVER") {
        return path.into();
    }
    let home = std::env::var_os("HOME").unwrap_or_default();
    std::path::Path::new(&home).join(".cache/weiport/venv/bin/nats-server")
}

impl NatsServer {
    /// A server alone, syncing before it acknowledges.
    pub fn start() -> Self {
        let mut servers = Self::configure(1, Sync::Always, &[]);
        let server = servers.remove(0);
        server.wait_ready();
        server
    }

    /// Three servers routed to each other, syncing before they acknowledge;
    /// returns once JetStream answers on every one.
    pub fn cluster() -> Vec<Self> {
        Self::cluster_on(Sync::Always, &[])
    }

    /// Three servers routed to each other, syncing as `sync` says, server n
    /// keeping its store in `stores[n]` where given (e.g. on a disk whose
    /// power a drill cuts), else in its own temporary directory.
    pub fn cluster_on(sync: Sync, stores: &[std::path::PathBuf]) -> Vec<Self> {
        let servers = Self::configure(3, sync, stores);
        for server in &servers {
            server.wait_ready();
        }
        servers
    }

    fn configure(count: usize, sync: Sync, stores: &[std::path::PathBuf]) -> Vec<Self> {
        let ports: Vec<(u16, u16, u16)> = (0..count)
            .map(|_| (free_port(), free_port(), free_port()))
            .collect();
        let routes: Vec<String> = ports
            .iter()
            .map(|(_, cluster, _)| format!("\"nats-route://127.0.0.1:{cluster}\""))
            .collect();
        ports
            .iter()
            .enumerate()
            .map(|(n, (client, cluster, monitor))| {
                let dir = tempfile::tempdir().expect("a temporary directory");
                let store = stores
                    .get(n)
                    .cloned()
                    .unwrap_or_else(|| dir.path().join("js"));
                let sync = match sync {
                    Sync::Always => ", sync_interval: always",
                    Sync::Lazy => "",
                };
                let mut text = format!(
                    "server_name: n{n}\nlisten: 127.0.0.1:{client}\nhttp: 127.0.0.1:{monitor}\n\
                     jetstream {{ store_dir: \"{}\"{sync} }}\n",
                    store.display()
                );
                if count > 1 {
                    text.push_str(&format!(
                        "cluster {{ name: weiport, listen: 127.0.0.1:{cluster}, routes: [{}] }}\n",
                        routes.join(", ")
                    ));
                }
                let config = dir.path().join("nats.conf");
                std::fs::write(&config, text).expect("writing nats.conf");
                let mut server = Self {
                    child: None,
                    port: *client,
                    config,
                    _dir: dir,
                };
                server.spawn();
                server
            })
            .collect()
    }

    fn spawn(&mut self) {
        let child = Command::new(binary())
            .arg("-c")
            .arg(&self.config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|error| {
                panic!(
                    "{}: {error} (scripts/setup.sh installs the pinned nats-server)",
                    binary().display()
                )
            });
        self.child = Some(child);
    }

    /// `nats://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    fn monitor_port(&self) -> u16 {
        let text = std::fs::read_to_string(&self.config).expect("nats.conf");
        text.lines()
            .find_map(|line| line.strip_prefix("http: 127.0.0.1:"))
            .and_then(|port| port.trim().parse().ok())
            .expect("a monitor port")
    }

    /// Waits until the server says JetStream is enabled.
    pub fn wait_ready(&self) {
        self.wait_healthy("/healthz?js-enabled-only=true");
    }

    /// Waits until the server says every stream and consumer it holds is
    /// current (a restarted server has caught up with the others).
    pub fn wait_current(&self) {
        self.wait_healthy("/healthz");
    }

    fn wait_healthy(&self, path: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        let monitor = self.monitor_port();
        loop {
            if healthy(monitor, path) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "nats-server did not become ready"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The server's `/varz` (version, configuration, JetStream settings).
    pub fn varz(&self) -> Option<String> {
        monitor_get(self.monitor_port(), "/varz")
    }

    /// Its monitoring endpoint, to watch from another thread.
    pub fn monitor(&self) -> Monitor {
        Monitor {
            port: self.monitor_port(),
        }
    }

    /// The server that leads `stream`'s replicas, as this server sees it
    /// (None: no leader now, or this server does not answer).
    pub fn stream_leader(&self, stream: &str) -> Option<String> {
        self.monitor().stream_leader(stream)
    }

    /// Its `server_name` (n0, n1, n2 in a cluster).
    pub fn name(&self) -> String {
        let text = std::fs::read_to_string(&self.config).expect("nats.conf");
        text.lines()
            .find_map(|line| line.strip_prefix("server_name: "))
            .expect("a server name")
            .trim()
            .to_owned()
    }

    /// SIGKILL.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again with its directory as it was left.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "already running");
        self.spawn();
    }
}

/// A server's monitoring port.
#[derive(Debug, Clone, Copy)]
pub struct Monitor {
    port: u16,
}

impl Monitor {
    /// The server that leads `stream`'s replicas, as this server sees it
    /// (None: no leader now, or this server does not answer).
    pub fn stream_leader(&self, stream: &str) -> Option<String> {
        let jsz = monitor_get(self.port, "/jsz?accounts=true&streams=true")?;
        let jsz: serde_json::Value = serde_json::from_str(&jsz).ok()?;
        jsz["account_details"]
            .as_array()?
            .iter()
            .filter_map(|account| account["stream_detail"].as_array())
            .flatten()
            .find(|detail| detail["name"] == stream)?["cluster"]["leader"]
            .as_str()
            .filter(|leader| !leader.is_empty())
            .map(str::to_owned)
    }
}

/// `GET path` on the monitor port answers 200.
fn healthy(monitor: u16, path: &str) -> bool {
    monitor_get(monitor, path).is_some()
}

/// The body of `GET path` on the monitor port, if it answers 200.
fn monitor_get(monitor: u16, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", monitor)).ok()?;
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    if !(answer.starts_with("HTTP/1.0 200") || answer.starts_with("HTTP/1.1 200")) {
        return None;
    }
    answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill();
    }
}
