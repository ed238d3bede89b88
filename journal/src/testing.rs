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

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("a free port")
        .local_addr()
        .expect("its address")
        .port()
}

/// Debian's binary, or the one on PATH.
fn binary() -> &'static str {
    if std::path::Path::new("/usr/sbin/nats-server").exists() {
        "/usr/sbin/nats-server"
    } else {
        "nats-server"
    }
}

impl NatsServer {
    /// A server alone.
    pub fn start() -> Self {
        let mut servers = Self::configure(1);
        let server = servers.remove(0);
        server.wait_ready();
        server
    }

    /// Three servers routed to each other; returns once JetStream answers
    /// on every one.
    pub fn cluster() -> Vec<Self> {
        let servers = Self::configure(3);
        for server in &servers {
            server.wait_ready();
        }
        servers
    }

    fn configure(count: usize) -> Vec<Self> {
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
                let mut text = format!(
                    "server_name: n{n}\nlisten: 127.0.0.1:{client}\nhttp: 127.0.0.1:{monitor}\n\
                     jetstream {{ store_dir: \"{}\" }}\n",
                    dir.path().join("js").display()
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
            .expect("nats-server (scripts/setup.sh installs it)");
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

/// `GET path` on the monitor port answers 200.
fn healthy(monitor: u16, path: &str) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", monitor)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = format!("GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.starts_with("HTTP/1.0 200") || answer.starts_with("HTTP/1.1 200")
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill();
    }
}
