//! `weiport sandbox` run as a newcomer would: a fresh directory, no
//! configuration, loopback ports the OS picks; then used through unchanged
//! client libraries with nothing but what `sandbox.json` says.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::eventually;
use futures::StreamExt;
use serde_json::{Value, json};

/// The sandbox's own process, killed if a test fails half-way.
struct Sandbox {
    child: Child,
    /// Where its throw-away data dir goes (`TMPDIR`).
    tmp: tempfile::TempDir,
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn sandbox_command(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> std::process::Command {
    let anvil = common::anvil_binary();
    let mut full_env = vec![("WEIPORT_ANVIL", anvil.to_str().unwrap())];
    full_env.extend_from_slice(env);
    let mut command = common::weiport_command(args, &full_env);
    command.current_dir(cwd).stdin(Stdio::null());
    command
}

/// Starts `weiport sandbox` in a new directory with its temp files inside it.
fn start() -> Sandbox {
    let tmp = tempfile::tempdir().unwrap();
    let child = sandbox_command(
        tmp.path(),
        &["sandbox"],
        &[
            ("WEIPORT_SERVER__LISTEN", "127.0.0.1:0"),
            ("WEIPORT_ADMIN__LISTEN", "127.0.0.1:0"),
            ("WEIPORT_LOG__LEVEL", "warn"),
        ],
    )
    .env("TMPDIR", tmp.path())
    .stdout(Stdio::piped())
    .stderr(Stdio::inherit())
    .spawn()
    .expect("start weiport sandbox");
    Sandbox { child, tmp }
}

/// Waits for `<throw-away dir>/sandbox.json` and reads it.
async fn description(sandbox: &Sandbox) -> (PathBuf, Value) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let found = std::fs::read_dir(sandbox.tmp.path())
            .unwrap()
            .flatten()
            .map(|entry| entry.path().join("sandbox.json"))
            .find(|path| path.is_file());
        if let Some(path) = found {
            // Written whole, then read: a half-written file fails to parse.
            if let Ok(value) = serde_json::from_slice(&std::fs::read(&path).unwrap()) {
                return (path, value);
            }
        }
        assert!(Instant::now() < deadline, "no sandbox.json within 60 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn rpc(url: &str, method: &str, params: Value) -> Value {
    common::json_rpc(url, method, params).await["result"].clone()
}

async fn last_price(rest: &str) -> String {
    let ticker: Value = reqwest::get(format!("{rest}/api/v3/ticker/price?symbol=ETHUSDT"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    ticker["price"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newcomer_trades_reads_balances_and_sees_markets_move_then_stops_it() {
    let mut sandbox = start();
    let (json_path, described) = description(&sandbox).await;
    let rest = described["rest_url"].as_str().unwrap().to_owned();
    let node = described["node_url"].as_str().unwrap().to_owned();
    let anvil_pid = described["node_pid"]
        .as_u64()
        .expect("the anvil it started");
    let data_dir = json_path.parent().unwrap().to_owned();
    assert_eq!(described["accounts"].as_array().unwrap().len(), 2);
    // Two anvils: the second with its own chain id, indexed and listed.
    let chains = described["chains"].as_array().unwrap();
    assert_eq!(chains.len(), 2, "{described}");
    assert_eq!(chains[0]["node_url"], described["node_url"]);
    assert_eq!(
        (chains[1]["chain_id"].clone(), chains[1]["network"].clone()),
        (json!(31338), json!("ARBITRUM"))
    );
    let second_pid = chains[1]["node_pid"].as_u64().expect("the second anvil");
    let listed: Value = reqwest::get(format!("{rest}/v2/chainlist"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["totalcount"], 2, "{listed}");
    let key = described["read_key"]["api_key"].as_str().unwrap();
    let block_number = || async {
        reqwest::get(format!(
            "{rest}/v2/api?chainid=31338&module=proxy&action=eth_blockNumber&apikey={key}"
        ))
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap()
    };
    // The second chain's index answers once its first block is in: the
    // sandbox describes itself as its indexers start, not after.
    eventually("the second chain indexed", async || {
        block_number().await["result"] != "Error! The index is not ready yet"
    })
    .await;
    let counted = block_number().await;
    assert!(
        counted["result"]
            .as_str()
            .is_some_and(|n| n.starts_with("0x")),
        "{counted}"
    );
    for account in described["accounts"].as_array().unwrap() {
        assert_eq!(account["permissions"], json!(["read", "trade"]));
        assert_eq!(account["balances"]["USDT"], "100000.00000000");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&json_path).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "sandbox.json holds secrets");
    }

    // The markets move on their own: a trade on the stream, a new price.
    let first_price = last_price(&rest).await;
    let ws = described["ws_url"].as_str().unwrap();
    let (mut stream, _) = tokio_tungstenite::connect_async(format!("{ws}/ethusdt@trade"))
        .await
        .unwrap();
    let trade = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let message = stream.next().await.unwrap().unwrap();
            if let Ok(text) = message.to_text() {
                let event: Value = serde_json::from_str(text).unwrap();
                if event["e"] == "trade" {
                    return event;
                }
            }
        }
    })
    .await
    .expect("a trade on /ws/ethusdt@trade within 10 s");
    assert_eq!(trade["s"], "ETHUSDT");
    let deadline = Instant::now() + Duration::from_secs(10);
    while last_price(&rest).await == first_price {
        assert!(
            Instant::now() < deadline,
            "the ticker stayed at {first_price}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    drop(stream);

    // The chain moves too; wait for a block with an internal transfer in it.
    let recipients: Vec<String> = (1..=3)
        .map(|n| format!("0x73616e64626f78{}{n:02x}", "0".repeat(24)))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut total = 0u128;
        for address in &recipients {
            let wei = rpc(&node, "eth_getBalance", json!([address, "latest"])).await;
            total +=
                u128::from_str_radix(wei.as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
        }
        if total > 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no transfer reached a fresh address"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Clients that only know the base URL and the keys.
    let dev_accounts = rpc(&node, "eth_accounts", json!([])).await;
    let mut addresses: Vec<String> = recipients.clone();
    addresses.push(dev_accounts[0].as_str().unwrap().to_owned());
    let mut args = vec![json_path.to_str().unwrap().to_owned()];
    args.extend(addresses.iter().cloned());
    let printed = common::run_client("sandbox_newcomer.py", args).await;
    let read: Value = serde_json::from_str(&printed).unwrap();
    let block = read["block"].as_u64().unwrap();
    assert!(block > 0);
    let mut moved = 0;
    for address in &addresses {
        let at = rpc(
            &node,
            "eth_getBalance",
            json!([address, format!("{block:#x}")]),
        )
        .await;
        let node_wei =
            u128::from_str_radix(at.as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
        let indexed: u128 = read["balances"][address].as_str().unwrap().parse().unwrap();
        assert_eq!(indexed, node_wei, "{address} at block {block}");
        moved += usize::from(node_wei > 0);
    }
    assert!(moved >= 2, "balances read: {read}");

    // Ctrl-C: everything stops within 5 s, and nothing is left behind.
    let pid = sandbox.child.id().to_string();
    assert!(
        std::process::Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    let status = loop {
        if let Some(status) = sandbox.child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "still running 5 s after SIGINT");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status}");
    assert!(
        !Path::new(&format!("/proc/{anvil_pid}")).exists()
            && !Path::new(&format!("/proc/{second_pid}")).exists(),
        "an anvil ({anvil_pid}, {second_pid}) outlived the sandbox"
    );
    assert!(
        !data_dir.exists(),
        "the throw-away data dir was left behind"
    );
    let mut screen = String::new();
    std::io::Read::read_to_string(&mut sandbox.child.stdout.take().unwrap(), &mut screen).unwrap();
    let trader_key = described["accounts"][0]["api_key"].as_str().unwrap();
    for shown in [
        trader_key,
        &rest,
        &node,
        "openssl dgst -sha256 -hmac",
        "simple/price",
    ] {
        assert!(
            screen.contains(shown),
            "the screen lacks {shown}:\n{screen}"
        );
    }
}

/// Runs the sandbox expecting it to fail at start; returns its stderr.
fn refused(args: &[&str], env: &[(&str, &str)]) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let output = sandbox_command(tmp.path(), args, env)
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let last = stderr.lines().last().unwrap_or_default().to_owned();
    assert!(last.starts_with("weiport: "), "{stderr}");
    // Nothing it started is left: its temp dir holds no data dir.
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    last
}

#[test]
fn a_taken_port_a_missing_anvil_or_an_unwritable_data_dir_is_one_clear_line() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let line = refused(
        &["sandbox"],
        &[
            ("WEIPORT_SERVER__LISTEN", &address),
            ("WEIPORT_ADMIN__LISTEN", "127.0.0.1:0"),
        ],
    );
    assert!(
        line.contains(&format!("cannot listen on server.listen = {address}")),
        "{line}"
    );

    let line = refused(&["sandbox"], &[("WEIPORT_ANVIL", "/nonexistent/anvil")]);
    assert!(
        line.contains("WEIPORT_ANVIL") && line.contains("setup.sh"),
        "{line}"
    );

    let file = tempfile::NamedTempFile::new().unwrap();
    let inside_a_file = file.path().join("data");
    let line = refused(
        &["sandbox", "--data-dir", inside_a_file.to_str().unwrap()],
        &[],
    );
    assert!(line.contains("is not writable"), "{line}");
}
