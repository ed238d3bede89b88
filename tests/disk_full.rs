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
use common::{Anvil, GENEROUS, Key, Weiport, try_signed_request};
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
                    Err(error) if error.raw_os_error() == Some(ENOSPC) => break,
                    Err(error) => panic!("filling the disk: {error}"),
                }
            }
        }
        path
    }
}

/// "No space left on device" on Linux.
const ENOSPC: i32 = 28;

impl Drop for SmallDisk {
    fn drop(&mut self) {
        privileged("umount", &["-l", self.mount.to_str().unwrap()]);
    }
}

enum Attempt {
    Acknowledged(u64),
    Refused,
    /// No answer in time: a write stalled on the full disk. Whether it was
    /// applied is asked by its client order id once space returns.
    Unknown(String),
}

/// Outcomes of the orders sent, by key: (key index, order id) acknowledged,
/// client ids of orders without an answer.
#[derive(Default)]
struct Outcomes {
    acknowledged: Vec<(usize, u64)>,
    refused: u32,
    unknown: Vec<(usize, String)>,
    sent: u64,
}

/// A small limit order at 3000: acknowledged, refused as the server's own
/// failure (503, -1001), or unanswered within 3 s; never anything else.
async fn order(
    client: &reqwest::Client,
    weiport: &Weiport,
    key: &Key,
    side: &str,
    id: &str,
) -> Attempt {
    let params = format!(
        "symbol=ETHUSDT&side={side}&type=LIMIT&timeInForce=GTC&quantity=0.01&price=3000&newClientOrderId={id}"
    );
    let answer = try_signed_request(
        client,
        &weiport.url,
        Method::POST,
        "/api/v3/order",
        key,
        &params,
        0,
    )
    .await;
    match answer {
        Ok((200, answer)) => Attempt::Acknowledged(answer["orderId"].as_u64().unwrap()),
        Ok((503, answer)) if answer["code"] == -1001 => Attempt::Refused,
        Ok((status, answer)) => panic!("{side} order: {status} {answer}"),
        Err(error) if error.is_timeout() => Attempt::Unknown(id.to_owned()),
        Err(error) => panic!("{side} order: {error}"),
    }
}

/// The maker sells and the taker buys what rests; returns how many of the
/// two were refused or unanswered.
async fn cross(
    client: &reqwest::Client,
    weiport: &Weiport,
    traders: [&Key; 2],
    outcomes: &mut Outcomes,
) -> u32 {
    let mut failed = 0;
    for (who, side) in [(0, "SELL"), (1, "BUY")] {
        outcomes.sent += 1;
        let id = format!("drill-{}", outcomes.sent);
        match order(client, weiport, traders[who], side, &id).await {
            Attempt::Acknowledged(order) => outcomes.acknowledged.push((who, order)),
            Attempt::Refused => {
                outcomes.refused += 1;
                failed += 1;
            }
            Attempt::Unknown(id) => {
                outcomes.unknown.push((who, id));
                failed += 1;
            }
        }
    }
    failed
}

/// Settles the unanswered orders: each is found (then it was applied, and
/// counts as acknowledged) or unknown to the server (never applied).
async fn settle(weiport: &Weiport, traders: [&Key; 2], outcomes: &mut Outcomes) -> (usize, usize) {
    let (mut applied, mut dropped) = (0, 0);
    for (who, id) in std::mem::take(&mut outcomes.unknown) {
        let (status, answer) = weiport
            .signed(
                Method::GET,
                "/api/v3/order",
                traders[who],
                &format!("symbol=ETHUSDT&origClientOrderId={id}"),
            )
            .await;
        match (status, answer["code"].as_i64()) {
            (200, _) => {
                outcomes
                    .acknowledged
                    .push((who, answer["orderId"].as_u64().unwrap()));
                applied += 1;
            }
            (400, Some(-2013)) => dropped += 1,
            _ => panic!("order {id}: {status} {answer}"),
        }
    }
    (applied, dropped)
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
    // Orders get 3 s: a write stalled on the full disk must not hold the
    // drill (the ballast is deleted by this very task).
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(3))
        .build()
        .unwrap();
    let mut outcomes = Outcomes::default();
    assert_eq!(cross(&client, &weiport, traders, &mut outcomes).await, 0);

    let ballast = disk.fill();
    let (mut pairs, started) = (0, Instant::now());
    let mut to = 10u8;
    let mut last_balance_read = Instant::now();
    // Until writes fail or stall, or 3,000 pairs or a minute have passed:
    // RocksDB may also keep taking writes into its reused log files while
    // its flushes wait for space, and those acknowledgements must hold like
    // any other (each is looked up afterwards, so their number is bounded).
    while outcomes.refused < 20
        && outcomes.unknown.is_empty()
        && pairs < 3_000
        && started.elapsed() < Duration::from_secs(60)
    {
        for _ in 0..20 {
            if cross(&client, &weiport, traders, &mut outcomes).await > 0
                && !outcomes.unknown.is_empty()
            {
                break;
            }
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
    if outcomes.refused > 0 {
        weiport.wait_for_log("writing the command log failed").await;
    }

    std::fs::remove_file(&ballast).unwrap();
    let resumed = Instant::now();
    while cross(&client, &weiport, traders, &mut outcomes).await > 0 {
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
    let (applied, dropped) = settle(&weiport, traders, &mut outcomes).await;
    let acknowledged = outcomes.acknowledged.clone();
    println!(
        "disk full: {pairs} order pairs sent over {:.1} s, {} orders acknowledged, {} refused, {} unanswered while the disk was full ({applied} of them applied, {dropped} not); orders taken again {:.1} s and the index at the head {:.1} s after space returned",
        full_for.as_secs_f64(),
        acknowledged.len(),
        outcomes.refused,
        applied + dropped,
        orders_again.as_secs_f64(),
        resumed.elapsed().as_secs_f64()
    );

    all_found(&weiport, traders, &acknowledged).await;
    let before = weiport.books(&traders).await;
    weiport.stop("TERM", Duration::from_secs(20));
    let log = weiport.read_log_to_end().join("\n");
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
