//! Disk-full drill: `weiport serve` (indexer, exchange, wallet) on a small
//! tmpfs that a ballast file fills up while blocks are mined and orders sent.
//! Every order is either acknowledged and durable or refused with Binance's
//! 503 -1001 and absent after a restart; reads keep answering; the log says
//! why; once the ballast is deleted the server takes orders and indexes
//! again by itself, and the index equals the node at every block.
//!
//! Mounting needs root (or passwordless sudo), as in CI. Small memtables
//! (`storage.write_buffer_mb = 1`) make RocksDB need fresh space within a
//! few hundred orders instead of 64 MiB of them.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use alloy_primitives::Address;
use common::chain::{Chain, assert_index_matches, ether};
use common::{Anvil, GENEROUS, Key, Weiport};
use reqwest::Method;
use serde_json::Value;
use weiport_storage::{Store, StoreOptions};

/// A tmpfs of a fixed size, unmounted on drop.
struct SmallDisk {
    mount: PathBuf,
    _root: tempfile::TempDir,
}

fn privileged(program: &str, args: &[&str]) -> std::process::ExitStatus {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| out.stdout.trim_ascii() == b"0");
    let mut command = if root {
        Command::new(program)
    } else {
        let mut sudo = Command::new("sudo");
        sudo.args(["-n", program]);
        sudo
    };
    command.args(args).status().unwrap()
}

impl SmallDisk {
    fn mount(megabytes: u32) -> Self {
        let root = tempfile::tempdir().unwrap();
        let mount = root.path().join("disk");
        std::fs::create_dir(&mount).unwrap();
        let size = format!("size={megabytes}m");
        let status = privileged(
            "mount",
            &["-t", "tmpfs", "-o", &size, "tmpfs", mount.to_str().unwrap()],
        );
        assert!(
            status.success(),
            "mounting a {megabytes} MiB tmpfs needs root or passwordless sudo"
        );
        Self { mount, _root: root }
    }

    /// Writes a ballast file until the disk refuses another byte.
    fn fill(&self) -> PathBuf {
        let path = self.mount.join("ballast");
        let mut file = std::fs::File::create(&path).unwrap();
        for chunk in [1 << 20, 4096, 1] {
            let bytes = vec![0xa5u8; chunk];
            loop {
                match file.write_all(&bytes).and_then(|()| file.sync_data()) {
                    Ok(()) => {}
                    Err(error) if error.raw_os_error() == Some(libc_enospc()) => break,
                    Err(error) => panic!("filling the disk: {error}"),
                }
            }
        }
        path
    }
}

fn libc_enospc() -> i32 {
    28 // ENOSPC on Linux
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        privileged("umount", &["-l", self.mount.to_str().unwrap()]);
    }
}

enum Attempt {
    Acknowledged(u64),
    Refused,
}

/// A small limit order at 3000: acknowledged, or refused as the server's
/// own failure (503, -1001), never anything else.
async fn order(weiport: &Weiport, key: &Key, side: &str) -> Attempt {
    let params =
        format!("symbol=ETHUSDT&side={side}&type=LIMIT&timeInForce=GTC&quantity=0.01&price=3000");
    let (status, answer) = weiport
        .signed(Method::POST, "/api/v3/order", key, &params)
        .await;
    match (status, answer["code"].as_i64()) {
        (200, _) => Attempt::Acknowledged(answer["orderId"].as_u64().unwrap()),
        (503, Some(-1001)) => Attempt::Refused,
        _ => panic!("{side} order: {status} {answer}"),
    }
}

/// The maker sells and the taker buys what rests: each order either
/// acknowledged (its id kept) or refused (counted).
async fn cross(weiport: &Weiport, traders: [&Key; 2], acknowledged: &mut Vec<(usize, u64)>) -> u32 {
    let mut refused = 0;
    for (who, side) in [(0, "SELL"), (1, "BUY")] {
        match order(weiport, traders[who], side).await {
            Attempt::Acknowledged(id) => acknowledged.push((who, id)),
            Attempt::Refused => refused += 1,
        }
    }
    refused
}

async fn get_ok(url: String) -> Value {
    let response = reqwest::get(&url).await.unwrap();
    assert_eq!(response.status(), 200, "{url}");
    response.json().await.unwrap()
}

/// Every acknowledged order is known to the server.
async fn all_found(weiport: &Weiport, traders: [&Key; 2], acknowledged: &[(usize, u64)]) {
    for (who, id) in acknowledged {
        let (status, answer) = weiport
            .signed(
                Method::GET,
                "/api/v3/order",
                traders[*who],
                &format!("symbol=ETHUSDT&orderId={id}"),
            )
            .await;
        assert_eq!(status, 200, "acknowledged order {id} lost: {answer}");
    }
}

fn serve_on(data_dir: &Path, node_url: &str) -> Weiport {
    let mut env = GENEROUS[1..].to_vec();
    env.extend([
        ("WEIPORT_NODE__URL", node_url),
        ("WEIPORT_STORAGE__WRITE_BUFFER_MB", "1"),
        ("WEIPORT_WALLET__SWEEP_THRESHOLD", "1000000"),
    ]);
    Weiport::serve(data_dir, &env)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_refuses_cleanly_and_the_server_resumes_when_space_returns() {
    let disk = SmallDisk::mount(192);
    let anvil = Anvil::start(&[]);
    let chain = Chain::new(&anvil.url);
    let from = chain.accounts().await[0];
    let data_dir = disk.mount.join("data");
    let mut weiport = serve_on(&data_dir, &anvil.url);
    let maker = weiport
        .funded_key(&["read", "trade"], &[("ETH", "1000")])
        .await;
    let taker = weiport
        .funded_key(&["read", "trade"], &[("USDT", "10000000")])
        .await;
    let traders = [&maker, &taker];
    for i in 1..=3u8 {
        chain
            .transfer(from, Address::repeat_byte(i), ether(1))
            .await;
    }
    weiport
        .wait_indexed_within(chain.settled_head().await, Duration::from_secs(30))
        .await;
    let mut acknowledged = Vec::new();
    assert_eq!(cross(&weiport, traders, &mut acknowledged).await, 0);

    let ballast = disk.fill();
    let (mut refused, mut pairs, started) = (0, 0, Instant::now());
    let mut to = 10u8;
    let mut last_balance_read = Instant::now();
    while refused < 20 {
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "no write refused in 5 minutes on a full disk ({} orders acknowledged)",
            acknowledged.len()
        );
        for _ in 0..20 {
            refused += cross(&weiport, traders, &mut acknowledged).await;
            pairs += 1;
        }
        to = to.wrapping_add(1).max(10);
        chain
            .transfer(from, Address::repeat_byte(to), ether(1))
            .await;
        // Reads never need the disk's free space.
        get_ok(format!(
            "{}/api/v3/ticker/price?symbol=ETHUSDT",
            weiport.url
        ))
        .await;
        if last_balance_read.elapsed() > Duration::from_secs(1) {
            // Etherscan's free tier allows a few calls a second per key.
            let balance = get_ok(format!(
                "{}/api?module=account&action=balance&address={from}&apikey={}",
                weiport.url, maker.id
            ))
            .await;
            assert_eq!(balance["status"], "1", "{balance}");
            last_balance_read = Instant::now();
        }
    }
    let full_for = started.elapsed();
    let log = weiport.drain_log().join("\n");
    assert!(log.contains("writing the command log failed"), "{log}");

    std::fs::remove_file(&ballast).unwrap();
    let resumed = Instant::now();
    while cross(&weiport, traders, &mut acknowledged).await > 0 {
        assert!(
            resumed.elapsed() < Duration::from_secs(60),
            "orders refused a minute after space returned"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let orders_again = resumed.elapsed();
    chain
        .transfer(from, Address::repeat_byte(9), ether(1))
        .await;
    let head = chain.settled_head().await;
    weiport
        .wait_indexed_within(head, Duration::from_secs(60))
        .await;
    println!(
        "disk full: {pairs} order pairs sent over {:.1} s, {} orders acknowledged, {refused} refused; orders taken again {:.1} s and the index at the head {:.1} s after space returned",
        full_for.as_secs_f64(),
        acknowledged.len(),
        orders_again.as_secs_f64(),
        resumed.elapsed().as_secs_f64()
    );

    all_found(&weiport, traders, &acknowledged).await;
    let before = weiport.books(&traders).await;
    weiport.stop("TERM", Duration::from_secs(20));
    let log = weiport.drain_log().join("\n");
    assert!(!log.contains("panicked"), "{log}");
    {
        let store = Store::open(&data_dir, &StoreOptions::default()).unwrap();
        let addresses = chain.mentioned_addresses(head).await;
        let blocks: Vec<u64> = (0..=head).collect();
        assert_index_matches(&store, &chain, &addresses, &blocks).await;
    }
    let weiport = serve_on(&data_dir, &anvil.url);
    assert_eq!(weiport.books(&traders).await, before);
    all_found(&weiport, traders, &acknowledged).await;
}
