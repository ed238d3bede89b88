//! Shared harness of the end-to-end tests: a real anvil node and the real
//! `weiport` binary, both on loopback ports chosen by the OS.

#![allow(dead_code)]

pub mod chain;
pub mod drill;
pub mod history;
pub mod hostile;
pub mod log;
pub mod proxy;
pub mod raw_http;
pub mod redis;
pub mod replicated;
pub mod rpc_filter;
pub mod tokens;
pub mod wallet;
pub mod ws;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// `relative` inside the repository. The test runner's `CARGO_MANIFEST_DIR`
/// comes first: a test binary reused from a shared target dir may have been
/// compiled in another checkout, whose path `env!` would have baked in.
pub fn repo_path(relative: &str) -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
        .join(relative)
}

/// Runs `tests/clients/<script>` with `args` under [`python`] (off the async
/// workers), asserts that it succeeded, and returns what it printed.
pub async fn run_client(script: &str, args: Vec<String>) -> String {
    let output = client_output(script, args, None).await;
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Runs `tests/clients/<script>` with `args`, writes `input` as JSON to its
/// standard input, asserts that it succeeded and parses what it printed.
pub async fn run_client_with_input(
    script: &str,
    args: Vec<String>,
    input: serde_json::Value,
) -> serde_json::Value {
    let output = client_output(script, args, Some(input)).await;
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Runs a client script to its end (at most 170 s), its output in
/// files rather than pipes: the run ends when the script's process does,
/// even if something it started still holds its output open (once, under
/// load, a client that had exited was never read to the end of its pipe).
async fn client_output(
    script: &str,
    args: Vec<String>,
    input: Option<serde_json::Value>,
) -> std::process::Output {
    let script = repo_text(&format!("tests/clients/{script}"));
    let output = tokio::task::spawn_blocking(move || {
        use std::io::{Read, Seek, Write};
        let mut stdout = tempfile::tempfile().unwrap();
        let mut stderr = tempfile::tempfile().unwrap();
        let mut child = Command::new(python())
            .arg(&script)
            .args(&args)
            .stdin(if input.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(stdout.try_clone().unwrap())
            .stderr(stderr.try_clone().unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("{script}: {e} (scripts/setup.sh installs the clients)"));
        if let Some(input) = input {
            let mut stdin = child.stdin.take().unwrap();
            stdin.write_all(input.to_string().as_bytes()).unwrap();
        }
        // Under nextest's three minutes, so a hang says what the client printed.
        let deadline = std::time::Instant::now() + Duration::from_secs(170);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                let mut said = String::new();
                stderr.rewind().unwrap();
                let _ = stderr.read_to_string(&mut said);
                panic!("{script} did not end within 170 s: {said}");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let read = |file: &mut std::fs::File| {
            let mut bytes = Vec::new();
            file.rewind().unwrap();
            file.read_to_end(&mut bytes).unwrap();
            bytes
        };
        std::process::Output {
            status,
            stdout: read(&mut stdout),
            stderr: read(&mut stderr),
        }
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    output
}

/// One JSON-RPC call to the node at `url`: its whole answer, `result` or
/// `error` as the node sent it.
pub async fn json_rpc(url: &str, method: &str, params: serde_json::Value) -> serde_json::Value {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    reqwest::Client::new()
        .post(url)
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// Wall-clock time in ms since the Unix epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Waits until `check` holds, asking again every 100 ms; fails the test
/// with `what` if it does not within a minute. A check that something did
/// not happen waits here for a sign that the system has moved past the point
/// where it would have happened, never for a fixed time.
pub async fn eventually(what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !check().await {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for: {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// [`repo_path`] as text, for command lines.
pub fn repo_text(relative: &str) -> String {
    repo_path(relative).to_string_lossy().into_owned()
}

/// Path of the anvil binary installed by `scripts/setup.sh`.
pub fn anvil_binary() -> PathBuf {
    if let Ok(path) = std::env::var("WEIPORT_ANVIL") {
        return path.into();
    }
    repo_path("tools/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil")
}

/// The Python that has the pinned client libraries (`scripts/setup.sh` makes it).
pub fn python() -> String {
    std::env::var("WEIPORT_PYTHON").unwrap_or_else(|_| {
        format!(
            "{}/.cache/weiport/venv/bin/python",
            std::env::var("HOME").unwrap_or_default()
        )
    })
}

/// Reads a child's output lines on a thread (so the pipe never fills) and
/// hands them over until `marker` is seen.
fn watch_output(stream: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                // Nobody listens any more: keep draining so the child never blocks.
                continue;
            }
        }
    });
    rx
}

fn wait_for_line(
    rx: &mpsc::Receiver<String>,
    marker: &str,
    timeout: Duration,
    seen: &mut Vec<String>,
) -> Option<String> {
    let deadline = std::time::Instant::now() + timeout;
    while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(line) => {
                let found = line.contains(marker);
                seen.push(line.clone());
                if found {
                    return Some(line);
                }
            }
            Err(_) => return None,
        }
    }
    None
}

/// A running anvil node, killed on drop.
pub struct Anvil {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub url: String,
}

impl Anvil {
    /// Starts anvil with `args` added to the defaults, once it answers
    /// JSON-RPC. An anvil that announced its port but does not answer (seen
    /// rarely under load) is replaced by a fresh one, up to three times.
    pub fn start(args: &[&str]) -> Self {
        for _ in 0..3 {
            let anvil = Self::spawn(args);
            if answers_json_rpc(&anvil.url, Duration::from_secs(10)) {
                return anvil;
            }
        }
        panic!("anvil did not answer JSON-RPC three times in a row");
    }

    fn spawn(args: &[&str]) -> Self {
        let mut child = Command::new(anvil_binary())
            .args(["--host", "127.0.0.1", "--port", "0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start anvil at {}: {e} (run scripts/setup.sh)",
                    anvil_binary().display()
                )
            });
        let lines = watch_output(child.stdout.take().unwrap());
        let mut seen = Vec::new();
        let line = wait_for_line(&lines, "Listening on ", Duration::from_secs(30), &mut seen)
            .unwrap_or_else(|| panic!("anvil did not start: {seen:?}"));
        let address = line.trim().trim_start_matches("Listening on ").to_owned();
        Self {
            child,
            url: format!("http://{address}"),
        }
    }
}

/// Whether the node at `url` (`http://host:port`) answers `eth_chainId`
/// within `timeout`.
fn answers_json_rpc(url: &str, timeout: Duration) -> bool {
    use std::io::{Read, Write};
    let Ok(address) = url
        .trim_start_matches("http://")
        .parse::<std::net::SocketAddr>()
    else {
        return false;
    };
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}"#;
    let request = format!(
        "POST / HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let Ok(mut stream) = std::net::TcpStream::connect_timeout(&address, timeout) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(timeout));
    let mut answer = String::new();
    stream.write_all(request.as_bytes()).is_ok()
        && stream.read_to_string(&mut answer).is_ok()
        && answer.contains("\"result\"")
}

impl Drop for Anvil {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Limits high enough that thousands of requests are never refused for
/// rate, with the indexer off (for tests of the exchange alone).
pub const GENEROUS: [(&str, &str); 5] = [
    ("WEIPORT_INDEXER__ENABLED", "false"),
    ("WEIPORT_ACCESS__IP_WEIGHT_PER_MINUTE", "100000000"),
    ("WEIPORT_ACCESS__KEY_WEIGHT_PER_MINUTE", "100000000"),
    ("WEIPORT_ACCESS__ORDERS_PER_10S", "1000000"),
    ("WEIPORT_ACCESS__ORDERS_PER_DAY", "100000000"),
];

/// The environment of a server that indexes `node_url` and answers
/// history reads: generous limits, a high Etherscan tier, and no deposit
/// sweeps (they would mine blocks of their own), then `extra`.
pub fn history_env<'a>(node_url: &'a str, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut env = GENEROUS[1..].to_vec();
    env.extend([
        ("WEIPORT_NODE__URL", node_url),
        ("WEIPORT_ACCESS__QUERY_TIERS__DEFAULT", "100000"),
        ("WEIPORT_WALLET__SWEEP_THRESHOLD", "1000000"),
    ]);
    env.extend_from_slice(extra);
    env
}

/// An HMAC API key as created, with its secret.
#[derive(Clone)]
pub struct Key {
    pub id: String,
    pub secret: String,
    pub account: u64,
}

/// Which development node a test runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DevNodeKind {
    /// Hardhat Network (EDR), pinned in tools/package.json.
    Hardhat,
    /// Ganache, pinned in tools/package.json.
    Ganache,
}

/// A running Hardhat or Ganache node on a free loopback port, killed on drop.
pub struct DevNode {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    pub kind: DevNodeKind,
}

impl DevNode {
    /// Starts `kind` and waits until it answers JSON-RPC.
    pub fn start(kind: DevNodeKind) -> Self {
        let tools = repo_path("tools");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port()
            .to_string();
        let mut command = match kind {
            DevNodeKind::Hardhat => {
                let mut command = Command::new(tools.join("node_modules/.bin/hardhat"));
                command.args(["node", "--hostname", "127.0.0.1", "--port", &port]);
                command
            }
            DevNodeKind::Ganache => {
                let mut command = Command::new(tools.join("node_modules/.bin/ganache"));
                command.args([
                    "--server.host",
                    "127.0.0.1",
                    "--server.port",
                    &port,
                    "--wallet.deterministic",
                    "--logging.quiet",
                ]);
                command
            }
        };
        let child = command
            .current_dir(&tools)
            .env("HARDHAT_DISABLE_TELEMETRY_PROMPT", "true")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {kind:?}: {e} (run scripts/setup.sh)"));
        let node = Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
            kind,
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(90);
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"web3_clientVersion","params":[]}"#;
        loop {
            let answered = std::net::TcpStream::connect(format!("127.0.0.1:{port}"))
                .ok()
                .and_then(|mut stream| {
                    use std::io::{Read, Write};
                    let request = format!(
                        "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    stream.write_all(request.as_bytes()).ok()?;
                    let mut answer = String::new();
                    stream.read_to_string(&mut answer).ok()?;
                    answer.contains("\"result\"").then_some(())
                });
            if answered.is_some() {
                return node;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{kind:?} did not start on port {port}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for DevNode {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A running `weiport serve`, killed on drop unless stopped.
pub struct Weiport {
    pub child: Child,
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    /// The admin listener, `http://127.0.0.1:<port>`.
    pub admin_url: String,
    /// The admin API's bearer token (generated into the data dir).
    pub admin_token: String,
    pub stderr: mpsc::Receiver<String>,
    pub log: Vec<String>,
}

/// `weiport` with `env` added, and nothing inherited from a `WEIPORT_*` of the caller.
pub fn weiport_command(args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_weiport"));
    command.args(args);
    for (name, _) in std::env::vars() {
        if name.starts_with("WEIPORT_") {
            command.env_remove(name);
        }
    }
    command.env_remove("RUST_LOG");
    command.envs(env.iter().copied());
    command
}

impl Weiport {
    /// Starts `weiport serve` on an OS-chosen port with `data_dir` and `env`.
    pub fn serve(data_dir: &Path, env: &[(&str, &str)]) -> Self {
        Self::serve_within(data_dir, env, Duration::from_secs(30))
    }

    /// [`Weiport::serve`], waiting at most `startup` for it to listen (a
    /// long command log takes a while to replay).
    pub fn serve_within(data_dir: &Path, env: &[(&str, &str)], startup: Duration) -> Self {
        let data_dir = data_dir.to_str().unwrap();
        let mut full_env = vec![
            ("WEIPORT_SERVER__LISTEN", "127.0.0.1:0"),
            ("WEIPORT_ADMIN__LISTEN", "127.0.0.1:0"),
            ("WEIPORT_DATA_DIR", data_dir),
        ];
        full_env.extend_from_slice(env);
        let mut child = weiport_command(&["serve"], &full_env)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start weiport");
        let stderr = watch_output(child.stderr.take().unwrap());
        let mut log = Vec::new();
        let line = wait_for_line(&stderr, "weiport serving", startup, &mut log)
            .unwrap_or_else(|| panic!("weiport did not start: {log:#?}"));
        let field = |name: &str| {
            line.split_whitespace()
                .find_map(|word| word.strip_prefix(name))
                .unwrap_or_else(|| panic!("no {name} in {line}"))
                .to_owned()
        };
        let (address, admin) = (field("listen="), field("admin="));
        let admin_token =
            std::fs::read_to_string(Path::new(data_dir).join("admin.token")).unwrap_or_default();
        Self {
            child,
            url: format!("http://{address}"),
            admin_url: format!("http://{admin}"),
            admin_token,
            stderr,
            log,
        }
    }

    /// `GET /api?{query}` (the Etherscan face); its JSON answer.
    pub async fn etherscan(&self, query: &str) -> serde_json::Value {
        reqwest::get(format!("{}/api?{query}", self.url))
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// Calls the admin API; returns the status and the JSON answer.
    pub async fn admin(
        &self,
        method: reqwest::Method,
        path: &str,
        body: serde_json::Value,
    ) -> (u16, serde_json::Value) {
        let response = reqwest::Client::new()
            .request(method, format!("{}{path}", self.admin_url))
            .bearer_auth(&self.admin_token)
            .json(&body)
            .send()
            .await
            .unwrap();
        (response.status().as_u16(), response.json().await.unwrap())
    }

    /// Creates an account and a key on it; returns the key as created (with its secret).
    pub async fn create_key(&self, key: serde_json::Value) -> serde_json::Value {
        let (status, account) = self
            .admin(
                reqwest::Method::POST,
                "/admin/accounts",
                serde_json::json!({}),
            )
            .await;
        assert_eq!(status, 201, "{account}");
        let mut request = key;
        request["account"] = account["id"].clone();
        let (status, created) = self
            .admin(reqwest::Method::POST, "/admin/keys", request)
            .await;
        assert_eq!(status, 201, "{created}");
        created
    }

    /// [`Weiport::create_key`] as a [`Key`].
    pub async fn key(&self, request: serde_json::Value) -> Key {
        let created = self.create_key(request).await;
        Key {
            id: created["id"].as_str().unwrap().into(),
            secret: created["secret"].as_str().unwrap().into(),
            account: created["account"].as_u64().unwrap(),
        }
    }

    /// A key with `permissions` on a new account credited with `funds`
    /// (asset, decimal amount) through the admin API.
    pub async fn funded_key(&self, permissions: &[&str], funds: &[(&str, &str)]) -> Key {
        let key = self
            .key(serde_json::json!({ "permissions": permissions }))
            .await;
        for (asset, amount) in funds {
            let (status, answer) = self
                .admin(
                    reqwest::Method::POST,
                    &format!("/admin/accounts/{}/credit", key.account),
                    serde_json::json!({ "asset": asset, "amount": amount }),
                )
                .await;
            assert_eq!(status, 200, "{answer}");
        }
        key
    }

    /// A request signed by `key` with `params` in the query (timestamp added);
    /// returns the status and the JSON answer.
    pub async fn signed(
        &self,
        method: reqwest::Method,
        path: &str,
        key: &Key,
        params: &str,
    ) -> (u16, serde_json::Value) {
        self.signed_with_clock(method, path, key, params, 0).await
    }

    /// [`Weiport::signed`] from a client whose clock is `clock_offset_ms`
    /// off the true time (a skewed clock, or one corrected by the server's).
    pub async fn signed_with_clock(
        &self,
        method: reqwest::Method,
        path: &str,
        key: &Key,
        params: &str,
        clock_offset_ms: i64,
    ) -> (u16, serde_json::Value) {
        let client = reqwest::Client::new();
        signed_request(
            &client,
            &self.url,
            method,
            path,
            key,
            params,
            clock_offset_ms,
        )
        .await
    }

    /// The server's `/openapi.json`.
    pub async fn openapi(&self) -> serde_json::Value {
        reqwest::get(format!("{}/openapi.json", self.url))
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// An unsigned GET of `path` on the public listener, as JSON.
    pub async fn public(&self, path: &str) -> serde_json::Value {
        reqwest::get(format!("{}{path}", self.url))
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// Its `/metrics` text.
    pub async fn metrics(&self) -> String {
        reqwest::get(format!("{}/metrics", self.url))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    /// Waits at most `limit` until `/readyz` reports `block` indexed,
    /// however far behind the node it says it is.
    pub async fn wait_indexed_within(&self, block: u64, limit: Duration) {
        let deadline = std::time::Instant::now() + limit;
        loop {
            // 503 while it lags: the body still tells how far it is.
            let ready: serde_json::Value = reqwest::get(format!("{}/readyz", self.url))
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if ready["indexed"] == block {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "block {block} not indexed: {ready}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The balances and open orders of `keys`' accounts, as the server
    /// shows them (the moving `updateTime` left out).
    pub async fn books(&self, keys: &[&Key]) -> Vec<serde_json::Value> {
        let mut seen = Vec::new();
        for key in keys {
            for (path, params) in [
                ("/api/v3/account", "omitZeroBalances=true"),
                ("/api/v3/openOrders", "symbol=ETHUSDT"),
            ] {
                let (status, mut answer) =
                    self.signed(reqwest::Method::GET, path, key, params).await;
                assert_eq!(status, 200, "{answer}");
                if let Some(account) = answer.as_object_mut() {
                    account.remove("updateTime");
                }
                seen.push(answer);
            }
        }
        seen
    }

    /// Waits until `/readyz` reports `block` indexed.
    pub async fn wait_indexed(&self, block: u64) {
        // A deadline in time, not in polls: on a loaded machine each poll
        // can take long, and a catch-up of a few blocks may take seconds.
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let response = reqwest::get(format!("{}/readyz", self.url)).await.unwrap();
            let ready: serde_json::Value = response.json().await.unwrap();
            if ready["indexed"] == block && ready["status"] == "ready" {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "block {block} was not indexed in time: {ready}"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// Sends `signal` (STOP, CONT, TERM…) and returns at once.
    pub fn signal(&self, signal: &str) {
        let sent = Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(sent.success());
    }

    /// Sends `signal` and waits for the exit, at most `timeout`.
    pub fn stop(&mut self, signal: &str, timeout: Duration) -> Option<std::process::ExitStatus> {
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success());
        let deadline = std::time::Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status);
            }
            if std::time::Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Log lines seen so far.
    pub fn drain_log(&mut self) -> &[String] {
        while let Ok(line) = self.stderr.try_recv() {
            self.log.push(line);
        }
        &self.log
    }

    /// Waits until a log line contains `marker`; the lines seen so far.
    pub async fn wait_for_log(&mut self, marker: &str) -> &[String] {
        eventually(&format!("a log line with {marker:?}"), async || {
            self.drain_log().iter().any(|line| line.contains(marker))
        })
        .await;
        &self.log
    }

    /// Every log line, read to the end of the output of a server that has
    /// exited: a line written just before the exit may still be on its way
    /// when the process is gone.
    pub fn read_log_to_end(&mut self) -> &[String] {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.stderr.recv_timeout(left) {
                Ok(line) => self.log.push(line),
                Err(mpsc::RecvTimeoutError::Disconnected) => return &self.log,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    panic!("the server's output did not end within 10 s")
                }
            }
        }
    }
}

impl Drop for Weiport {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Places an order with `key`, which must be accepted; its answer.
pub async fn order(weiport: &Weiport, key: &Key, params: &str) -> serde_json::Value {
    let (status, answer) = weiport
        .signed(reqwest::Method::POST, "/api/v3/order", key, params)
        .await;
    assert_eq!(status, 200, "{answer}");
    answer
}

/// A signed Binance request to the server at `base_url` through `client`
/// (kept-alive connections for load), timestamped `clock_offset_ms` off the
/// true time; the status and the JSON answer.
pub async fn signed_request(
    client: &reqwest::Client,
    base_url: &str,
    method: reqwest::Method,
    path: &str,
    key: &Key,
    params: &str,
    clock_offset_ms: i64,
) -> (u16, serde_json::Value) {
    try_signed_request(client, base_url, method, path, key, params, clock_offset_ms)
        .await
        .unwrap()
}

/// [`signed_request`], its transport failure (a client timeout) returned.
pub async fn try_signed_request(
    client: &reqwest::Client,
    base_url: &str,
    method: reqwest::Method,
    path: &str,
    key: &Key,
    params: &str,
    clock_offset_ms: i64,
) -> Result<(u16, serde_json::Value), reqwest::Error> {
    let response =
        signed_response(client, base_url, method, path, key, params, clock_offset_ms).await?;
    Ok((response.status().as_u16(), response.json().await?))
}

/// [`signed_request`]'s response whole, its headers with it.
pub async fn signed_response(
    client: &reqwest::Client,
    base_url: &str,
    method: reqwest::Method,
    path: &str,
    key: &Key,
    params: &str,
    clock_offset_ms: i64,
) -> Result<reqwest::Response, reqwest::Error> {
    let timestamp = now_ms() as i64 + clock_offset_ms;
    let query = format!("{params}&timestamp={timestamp}");
    let signature = weiport_access::sign_hmac_sha256(key.secret.as_bytes(), query.as_bytes());
    client
        .request(
            method,
            format!("{base_url}{path}?{query}&signature={signature}"),
        )
        .header("X-MBX-APIKEY", &key.id)
        .send()
        .await
}

/// A server with the exchange's limits out of the way (indexer off).
pub fn serve() -> (Weiport, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let weiport = Weiport::serve(dir.path(), &GENEROUS);
    (weiport, dir)
}

/// A server with two trading keys: a maker holding 10 ETH, a taker holding 100,000 USDT.
pub async fn two_traders() -> (Weiport, tempfile::TempDir, Key, Key) {
    let (weiport, dir) = serve();
    let (maker, taker) = weiport.two_traders().await;
    (weiport, dir, maker, taker)
}

impl Weiport {
    /// Two trading keys on this server: a maker holding 10 ETH, a taker
    /// holding 100,000 USDT.
    pub async fn two_traders(&self) -> (Key, Key) {
        let maker = self.funded_key(&["read", "trade"], &[("ETH", "10")]).await;
        let taker = self
            .funded_key(&["read", "trade"], &[("USDT", "100000")])
            .await;
        (maker, taker)
    }
}
