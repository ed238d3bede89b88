//! `weiport backup` while the server takes orders and indexes blocks, and
//! `weiport restore` into a new data dir: the restored command log is the
//! source's up to the backup's point, its index equals the node at the
//! backup's block, and every order acknowledged before the backup began is
//! served by the restored server.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::chain::{Chain, ether};
use common::{Anvil, Key, Weiport, history_env, signed_request, weiport_command};
use reqwest::Method;
use serde_json::{Value, json};
use weiport_storage::{Store, StoreOptions};

/// Runs `weiport ARGS` with `env`; its JSON answer.
fn cli(args: &[&str], env: &[(&str, &str)]) -> Value {
    let output = weiport_command(args, env).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "weiport {args:?}: {stderr}");
    serde_json::from_slice(&output.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_while_serving_restores_the_exchange_and_the_index_at_its_point() {
    let anvil = Anvil::start(&[]);
    let chain = Arc::new(Chain::new(&anvil.url));
    let source_dir = tempfile::tempdir().unwrap();
    let env = history_env(&anvil.url, &[]);
    let mut source = Weiport::serve(source_dir.path(), &env);
    let (maker, taker) = source.two_traders().await;

    // Load: crossing orders over REST, ETH transfers on the chain.
    let running = Arc::new(AtomicBool::new(true));
    let acknowledged: Arc<Mutex<Vec<(u64, bool)>>> = Arc::default();
    let orders = {
        let (running, acknowledged) = (running.clone(), acknowledged.clone());
        let (maker, taker, url) = (maker.clone(), taker.clone(), source.url.clone());
        let client = reqwest::Client::new();
        tokio::spawn(async move {
            while running.load(Ordering::Relaxed) {
                for (key, params) in [
                    (
                        &maker,
                        "side=SELL&type=LIMIT&timeInForce=GTC&quantity=0.01&price=3000",
                    ),
                    (&taker, "side=BUY&type=MARKET&quantity=0.01"),
                ] {
                    let params = format!("symbol=ETHUSDT&{params}");
                    let (status, answer) = signed_request(
                        &client,
                        &url,
                        Method::POST,
                        "/api/v3/order",
                        key,
                        &params,
                        0,
                    )
                    .await;
                    assert_eq!(status, 200, "{answer}");
                    let is_maker = std::ptr::eq(key, &maker);
                    acknowledged
                        .lock()
                        .unwrap()
                        .push((answer["orderId"].as_u64().unwrap(), is_maker));
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
    };
    let blocks = {
        let (chain, running) = (chain.clone(), running.clone());
        tokio::spawn(async move {
            let accounts = chain.accounts().await;
            let mut n = 0usize;
            while running.load(Ordering::Relaxed) {
                let (from, to) = (accounts[n % 5], accounts[(n + 1) % 5 + 5]);
                chain.transfer(from, to, ether(1)).await;
                n += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    // The indexer is following the blocks being made.
    for _ in 0..300 {
        let ready: Value = reqwest::get(format!("{}/readyz", source.url))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if ready["indexed"].as_u64().is_some_and(|n| n >= 10) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let backup_dir = tempfile::tempdir().unwrap();
    let backup_path = backup_dir.path().join("backup");
    let admin_listen = source.admin_url.trim_start_matches("http://").to_owned();
    let source_path = source_dir.path().to_str().unwrap().to_owned();
    let before: Vec<(u64, bool)> = acknowledged.lock().unwrap().clone();
    let manifest = {
        let backup = backup_path.to_str().unwrap().to_owned();
        let (listen, data) = (admin_listen.clone(), source_path.clone());
        tokio::task::spawn_blocking(move || {
            cli(
                &["backup", &backup, "--secrets"],
                &[
                    ("WEIPORT_ADMIN__LISTEN", &listen),
                    ("WEIPORT_DATA_DIR", &data),
                ],
            )
        })
        .await
        .unwrap()
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    running.store(false, Ordering::Relaxed);
    orders.await.unwrap();
    blocks.await.unwrap();
    let after = acknowledged.lock().unwrap().len();
    assert!(
        before.len() > 20 && after > before.len(),
        "orders went on around the backup: {} then {after}",
        before.len()
    );
    let sequence = manifest["last_command_sequence"].as_u64().unwrap();
    let indexed = manifest["indexed_block"]
        .as_u64()
        .unwrap_or_else(|| panic!("an indexed block: {manifest}"));
    assert_eq!(manifest["secrets"], json!(["master.key", "admin.token"]));
    assert!(indexed > 5, "{manifest}");

    // A second backup through the admin API, without secrets: none copied.
    let bare = backup_dir.path().join("bare");
    let (status, bare_manifest) = source
        .admin(Method::POST, "/admin/backup", json!({ "dir": bare }))
        .await;
    assert_eq!(status, 200, "{bare_manifest}");
    assert_eq!(bare_manifest["secrets"], json!([]));
    assert!(!bare.join("master.key").exists());
    let (status, refused) = source
        .admin(Method::POST, "/admin/backup", json!({ "dir": bare }))
        .await;
    assert_eq!(status, 400, "a backup never writes over another: {refused}");

    source
        .stop("TERM", Duration::from_secs(30))
        .expect("stopped");

    let restored_dir = tempfile::tempdir().unwrap();
    let restored_path = restored_dir.path().join("data");
    let restored_manifest = cli(
        &["restore", backup_path.to_str().unwrap()],
        &[("WEIPORT_DATA_DIR", restored_path.to_str().unwrap())],
    );
    assert_eq!(restored_manifest, manifest);
    let again = weiport_command(
        &["restore", backup_path.to_str().unwrap()],
        &[("WEIPORT_DATA_DIR", restored_path.to_str().unwrap())],
    )
    .output()
    .unwrap();
    assert!(
        !again.status.success(),
        "a restore never writes over a database"
    );
    // Nor into a directory holding anything at all, and it says what.
    let cluttered = tempfile::tempdir().unwrap();
    std::fs::write(cluttered.path().join("notes.txt"), "mine").unwrap();
    let refused = weiport_command(
        &["restore", backup_path.to_str().unwrap()],
        &[("WEIPORT_DATA_DIR", cluttered.path().to_str().unwrap())],
    )
    .output()
    .unwrap();
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("the data directory is not empty (it holds notes.txt)"),
        "{said}"
    );
    assert_eq!(
        std::fs::read_dir(cluttered.path()).unwrap().count(),
        1,
        "nothing was restored beside it"
    );

    {
        // The restored log is the source's, to the backup's point.
        let source_store = Store::open(source_dir.path(), &StoreOptions::default()).unwrap();
        let restored_store = Store::open(&restored_path, &StoreOptions::default()).unwrap();
        let source_log: Vec<_> = source_store
            .commands()
            .map(Result::unwrap)
            .take_while(|(s, _)| *s <= sequence)
            .collect();
        let restored_log: Vec<_> = restored_store.commands().map(Result::unwrap).collect();
        assert_eq!(restored_log.len() as u64, sequence);
        assert!(restored_log == source_log, "the logs differ");
        // The index at the backup's block is the node's.
        assert_eq!(
            restored_store.cursor().unwrap().map(|c| c.number),
            Some(indexed)
        );
        let addresses = chain.mentioned_addresses(indexed).await;
        common::chain::assert_index_matches(&restored_store, &chain, &addresses, &[indexed]).await;
    }

    // The restored server (its own indexer off: the index stays at the
    // backup's block) serves every order acknowledged before the backup.
    let mut restored_env = env.clone();
    restored_env.push(("WEIPORT_INDEXER__ENABLED", "false"));
    let restored = Weiport::serve(&restored_path, &restored_env);
    for (order_id, is_maker) in &before {
        let key: &Key = if *is_maker { &maker } else { &taker };
        let (status, order) = restored
            .signed(
                Method::GET,
                "/api/v3/order",
                key,
                &format!("symbol=ETHUSDT&orderId={order_id}"),
            )
            .await;
        assert_eq!(
            status, 200,
            "order {order_id} acknowledged before the backup: {order}"
        );
    }
    let (status, account) = restored
        .signed(Method::GET, "/api/v3/account", &taker, "")
        .await;
    assert_eq!(status, 200, "{account}");
}
