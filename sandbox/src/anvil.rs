//! An anvil node started for the sandbox.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use crate::data_dir::DataDir;
use crate::error::SandboxError;

/// The pinned anvil, relative to a source tree (installed by scripts/setup.sh).
const PINNED: &str = "tools/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil";

/// An anvil process started for the sandbox, on a free loopback port.
pub(crate) struct Anvil {
    child: tokio::process::Child,
    /// Its JSON-RPC URL.
    pub(crate) url: String,
    /// Its process id.
    pub(crate) pid: u32,
}

impl Anvil {
    /// Starts anvil named `name` with `args` added, logging to
    /// `<data>/<name>.log` (keeping its chain in `<name>-state.json` of a
    /// kept data dir), and waits until it answers.
    pub(crate) async fn start(
        data: &DataDir,
        name: &str,
        args: &[String],
    ) -> Result<Self, SandboxError> {
        let binary = anvil_binary()?;
        let port = free_port()?;
        let log_path = data.path.join(format!("{name}.log"));
        let log = std::fs::File::create(&log_path).map_err(|source| SandboxError::Write {
            path: log_path.clone(),
            source,
        })?;
        let mut command = tokio::process::Command::new(&binary);
        command
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(args)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            // Its own process group: a terminal's Ctrl-C reaches only
            // weiport, which stops the node after the indexer.
            .process_group(0)
            .kill_on_drop(true);
        if data.kept {
            // A kept data dir keeps its chain too, or the index would
            // describe blocks the next node never had.
            command
                .arg("--state")
                .arg(data.path.join(format!("{name}-state.json")));
        }
        let mut child = command.spawn().map_err(|source| SandboxError::AnvilSpawn {
            binary: binary.clone(),
            source,
        })?;
        let pid = child.id().unwrap_or(0);
        let url = format!("http://127.0.0.1:{port}");
        let client = reqwest::Client::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = child.try_wait()? {
                return Err(SandboxError::AnvilExited {
                    status,
                    log: log_path,
                });
            }
            let probe = client
                .post(&url)
                .json(
                    &serde_json::json!({"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}),
                )
                .timeout(Duration::from_secs(1))
                .send()
                .await;
            if probe.is_ok_and(|r| r.status().is_success()) {
                return Ok(Self { child, url, pid });
            }
            if tokio::time::Instant::now() > deadline {
                return Err(SandboxError::AnvilSilent { url, log: log_path });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Resolves when the process exits, with its status.
    pub(crate) async fn exited(&mut self) -> String {
        match self.child.wait().await {
            Ok(status) => status.to_string(),
            Err(error) => error.to_string(),
        }
    }

    /// SIGTERM (anvil writes its state and exits), SIGKILL after 5 s.
    pub(crate) async fn stop(mut self) {
        if let Ok(pid) = i32::try_from(self.pid) {
            // SAFETY: `kill` only sends a signal; the pid is our own child,
            // not yet reaped (we still hold it), so it names no other process.
            unsafe { libc::kill(pid, libc::SIGTERM) };
        }
        if tokio::time::timeout(Duration::from_secs(5), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }
}

/// `WEIPORT_ANVIL`, else the pinned anvil under `tools/` of the current
/// directory or of the source tree this was built from.
fn anvil_binary() -> Result<PathBuf, SandboxError> {
    if let Some(path) = std::env::var_os("WEIPORT_ANVIL") {
        let path = PathBuf::from(path);
        if !path.is_file() {
            return Err(SandboxError::AnvilNotAFile(path));
        }
        return Ok(path);
    }
    // This crate sits one level below the workspace root, where tools/ is.
    let source_tree = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_owned);
    let roots = [std::env::current_dir().ok(), source_tree];
    roots
        .into_iter()
        .flatten()
        .map(|root| root.join(PINNED))
        .find(|candidate| candidate.is_file())
        .ok_or(SandboxError::AnvilMissing { pinned: PINNED })
}

/// A loopback port nothing listens on now.
fn free_port() -> Result<u16, SandboxError> {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").map_err(SandboxError::NoPort)?;
    Ok(probe.local_addr()?.port())
}
