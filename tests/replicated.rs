//! The exchange with `exchange.durability = "replicated"` on a real
//! `nats-server` (keys shared through a real `redis-server`): every
//! acknowledged command is in the journal before the client hears of it,
//! so a process on an empty disk rebuilds the same exchange from it; one
//! process holds the primary's lease and the others follow its journal;
//! a primary frozen past its lease is fenced when it wakes; the wallet
//! moves with the lead, following a withdrawal the old primary signed.

mod common;

use common::replicated::Shared;
use common::{GENEROUS, Key, Weiport, eventually, signed_request};
use serde_json::{Value, json};

/// Longer than the processes' lease (1 s).
const LEASE_LAPSE: std::time::Duration = std::time::Duration::from_millis(1500);

/// Waits until `key`'s account holds `assets` assets at `weiport` (a key and
/// credits made at the primary reach a follower a moment later).
async fn holds_at(weiport: &Weiport, key: &Key, assets: usize) {
    eventually("the follower has the key and its credits", async || {
        let (_, account) = weiport
            .signed(
                reqwest::Method::GET,
                "/api/v3/account",
                key,
                "omitZeroBalances=true",
            )
            .await;
        account["balances"]
            .as_array()
            .is_some_and(|held| held.len() == assets)
    })
    .await;
}

async fn get(weiport: &Weiport, key: &Key, path: &str, params: &str) -> Value {
    let (status, body) = weiport
        .signed(reqwest::Method::GET, path, key, params)
        .await;
    assert_eq!(status, 200, "{path}: {body}");
    body
}

/// What a client can see of the exchange: both accounts, their trades and
/// open orders, and the book.
async fn state(weiport: &Weiport, maker: &Key, taker: &Key) -> Value {
    let mut seen = Vec::new();
    for key in [maker, taker] {
        let mut account = get(weiport, key, "/api/v3/account", "").await;
        account["updateTime"] = Value::Null;
        seen.push(account);
        seen.push(get(weiport, key, "/api/v3/myTrades", "symbol=ETHUSDT").await);
        seen.push(get(weiport, key, "/api/v3/allOrders", "symbol=ETHUSDT").await);
    }
    seen.push(depth(weiport).await);
    Value::Array(seen)
}

/// The ETHUSDT book, as any client reads it.
async fn depth(weiport: &Weiport) -> Value {
    let url = format!("{}/api/v3/depth?symbol=ETHUSDT", weiport.url);
    reqwest::get(url).await.unwrap().json().await.unwrap()
}

async fn trade(weiport: &Weiport, maker: &Key, taker: &Key, round: u32) {
    let price = 2000 + round;
    common::order(
        weiport,
        maker,
        &format!("symbol=ETHUSDT&side=SELL&type=LIMIT&timeInForce=GTC&quantity=0.5&price={price}"),
    )
    .await;
    common::order(
        weiport,
        taker,
        &format!("symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=0.2&price={price}"),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_acknowledged_order_is_lost_with_the_machine() {
    let shared = Shared::start();
    let first_disk = tempfile::tempdir().unwrap();
    let mut first = shared.process(first_disk.path(), "first").await;
    let (maker, taker) = first.two_traders().await;
    for round in 0..10 {
        trade(&first, &maker, &taker, round).await;
    }
    let before = state(&first, &maker, &taker).await;

    // The machine is gone: its process killed, its disk lost; its lease
    // lapses, and the next process to start takes it.
    first.stop("KILL", std::time::Duration::from_secs(10));
    drop(first_disk);
    tokio::time::sleep(LEASE_LAPSE).await;

    let second_disk = tempfile::tempdir().unwrap();
    let second = shared.process(second_disk.path(), "second").await;
    assert_eq!(state(&second, &maker, &taker).await, before);
    // It carries on from there: the next trade ids follow the first's.
    let trades = |body: Value| -> Vec<u64> {
        let ids = body
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_u64().unwrap());
        ids.collect()
    };
    let earlier = trades(get(&second, &taker, "/api/v3/myTrades", "symbol=ETHUSDT").await);
    trade(&second, &maker, &taker, 10).await;
    let later = trades(get(&second, &taker, "/api/v3/myTrades", "symbol=ETHUSDT").await);
    assert!(later.len() > earlier.len());
    assert_eq!(later[..earlier.len()], earlier[..]);
    assert!(later[earlier.len()] > *earlier.last().unwrap());
}

async fn cluster(weiport: &Weiport) -> Value {
    let (status, body) = weiport
        .admin(reqwest::Method::GET, "/admin/cluster", Value::Null)
        .await;
    assert_eq!(status, 200, "{body}");
    body
}

/// A signed new order, whatever the answer.
async fn place(weiport: &Weiport, key: &Key, params: &str) -> (u16, Value) {
    let client = reqwest::Client::new();
    let path = "/api/v3/order";
    signed_request(
        &client,
        &weiport.url,
        reqwest::Method::POST,
        path,
        key,
        params,
        0,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn followers_replay_the_primary_and_a_frozen_primary_is_fenced() {
    let shared = Shared::start();
    let disks: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut a = shared.process(disks[0].path(), "a").await;
    let (maker, taker) = a.two_traders().await;
    trade(&a, &maker, &taker, 0).await;
    assert_eq!(cluster(&a).await["role"], "primary");

    // Frozen past its lease: another process takes the lease and leads.
    a.signal("STOP");
    tokio::time::sleep(LEASE_LAPSE).await;
    let b = shared.process(disks[1].path(), "b").await;
    let c = shared.process(disks[2].path(), "c").await;
    let (b_role, c_role) = (cluster(&b).await, cluster(&c).await);
    assert_eq!(
        (&b_role["role"], &b_role["primary"]),
        (&json!("primary"), &json!("b"))
    );
    assert_eq!(
        (&c_role["role"], &c_role["primary"]),
        (&json!("follower"), &json!("b"))
    );
    // A follower's streams carry what the primary sequences.
    let mut trades_there = common::ws::connect(&c, "/ws/ethusdt@trade").await;
    trade(&b, &maker, &taker, 1).await;
    let pushed = common::ws::next(&mut trades_there).await;
    let at_primary = get(&b, &taker, "/api/v3/myTrades", "symbol=ETHUSDT").await;
    let latest = at_primary.as_array().unwrap().last().unwrap().clone();
    let seen = (&pushed["e"], &pushed["t"]);
    assert_eq!(seen, (&json!("trade"), &latest["id"]), "{pushed}");

    // The follower replays what the primary sequences, to the same state.
    let led = state(&b, &maker, &taker).await;
    eventually("the follower replays the primary's journal", async || {
        state(&c, &maker, &taker).await == led
    })
    .await;
    // Its metrics say so: its role, who holds the lease, no entry behind,
    // Redis answering, three processes heartbeating.
    eventually(
        "the follower's metrics show its place in the cluster",
        async || {
            let text = c.metrics().await;
            [
                r#"weiport_cluster_role{role="follower"} 1"#,
                r#"weiport_cluster_role{role="primary"} 0"#,
                r#"weiport_cluster_lease_holder{holder="b"} 1"#,
                "weiport_journal_lag_entries 0",
                "weiport_cluster_redis_up 1",
            ]
            .iter()
            .all(|line| text.lines().any(|l| l == *line))
                && text.lines().any(|l| {
                    l.strip_prefix("weiport_journal_applied_entry ")
                        .is_some_and(|n| n != "0")
                })
        },
    )
    .await;

    // An order sent to the follower is sequenced by the primary and
    // answered once the follower's own replay has it: the client's next
    // read there sees it, and the primary has it too.
    let order = "symbol=ETHUSDT&side=SELL&type=LIMIT&timeInForce=GTC&quantity=0.5&price=2400";
    let (status, placed) = place(&c, &maker, order).await;
    assert_eq!(status, 200, "{placed}");
    let id = placed["orderId"].as_u64().unwrap();
    let open_here = get(&c, &maker, "/api/v3/openOrders", "symbol=ETHUSDT").await;
    assert!(
        open_here
            .to_string()
            .contains(&format!("\"orderId\":{id},")),
        "{open_here}"
    );
    let at_primary = get(
        &b,
        &maker,
        "/api/v3/order",
        &format!("symbol=ETHUSDT&orderId={id}"),
    )
    .await;
    assert_eq!(at_primary["price"], "2400.00000000", "{at_primary}");
    let (status, refused) = place(
        &c,
        &maker,
        "symbol=ETHUSDT&side=SELL&type=LIMIT&timeInForce=GTC&quantity=5000&price=2400",
    )
    .await;
    assert_eq!(
        (status, &refused["code"]),
        (400, &json!(-2010)),
        "the primary's refusal, relayed: {refused}"
    );

    // So is an administrator's transfer.
    let credit = format!("/admin/accounts/{}/credit", maker.account);
    let body = json!({"asset": "USDT", "amount": "5"});
    let (status, credited) = c.admin(reqwest::Method::POST, &credit, body).await;
    assert_eq!(status, 200, "{credited}");
    assert_eq!(credited["asset"], "USDT", "{credited}");

    // Woken, the old primary is behind the journal: an order it takes is
    // either fenced (refused, applied nowhere) or, once it has stepped
    // down, forwarded to the new primary; either way it ends at the
    // journal's state.
    a.signal("CONT");
    let late = "symbol=ETHUSDT&side=SELL&type=LIMIT&timeInForce=GTC&quantity=0.5&price=2500";
    let (status, answer) = place(&a, &maker, late).await;
    assert!(status == 503 || status == 200, "{answer}");
    eventually("the old primary follows the new one", async || {
        cluster(&a).await["role"] == "follower"
    })
    .await;
    let led = state(&b, &maker, &taker).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while state(&a, &maker, &taker).await != led {
        if std::time::Instant::now() > deadline {
            let log: Vec<&String> = a
                .drain_log()
                .iter()
                .filter(|l| !l.contains(" INFO "))
                .collect();
            panic!("the old primary did not replay the journal: {log:#?}");
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let orders = get(&b, &maker, "/api/v3/allOrders", "symbol=ETHUSDT").await;
    assert_eq!(
        orders.to_string().contains("2500.0"),
        status == 200,
        "{orders}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_takes_over_when_the_primary_dies() {
    let shared = Shared::start();
    let disks: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut a = shared.process(disks[0].path(), "a").await;
    let (maker, taker) = a.two_traders().await;
    for round in 0..5 {
        trade(&a, &maker, &taker, round).await;
    }
    let b = shared.process(disks[1].path(), "b").await;
    assert_eq!(cluster(&b).await["role"], "follower");
    let led = state(&a, &maker, &taker).await;
    eventually("the follower is level with the primary", async || {
        state(&b, &maker, &taker).await == led
    })
    .await;

    a.stop("KILL", std::time::Duration::from_secs(10));
    let killed = std::time::Instant::now();
    let order = "symbol=ETHUSDT&side=SELL&type=LIMIT&timeInForce=GTC&quantity=0.5&price=2100";
    loop {
        let (status, body) = place(&b, &maker, order).await;
        if status == 200 {
            break;
        }
        assert_eq!(status, 503, "{body}");
        assert!(
            killed.elapsed() < std::time::Duration::from_secs(30),
            "no takeover"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    println!(
        "the follower took the orders {:?} after the primary was killed (lease 1 s)",
        killed.elapsed()
    );
    let role = cluster(&b).await;
    assert_eq!(
        (&role["role"], &role["primary"]),
        (&json!("primary"), &json!("b"))
    );
    // Nothing the dead primary acknowledged is lost, and a new process
    // follows the new primary to the same state.
    let trades = get(&b, &taker, "/api/v3/myTrades", "symbol=ETHUSDT").await;
    let before = led[4].as_array().unwrap().len();
    assert_eq!(trades.as_array().unwrap().len(), before);
    let c = shared.process(disks[2].path(), "c").await;
    let now = state(&b, &maker, &taker).await;
    eventually("a new process follows the new primary", async || {
        state(&c, &maker, &taker).await == now
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ccxt_and_the_official_sdk_trade_through_a_follower() {
    let shared = Shared::start();
    let disks: Vec<_> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let primary = shared.process(disks[0].path(), "primary").await;
    let follower = shared.process(disks[1].path(), "follower").await;
    assert_eq!(cluster(&follower).await["role"], "follower");
    let funds = [("USDT", "100000"), ("ETH", "10")];
    let a = primary.funded_key(&["read", "trade"], &funds).await;
    let b = primary.funded_key(&["read", "trade"], &funds).await;
    for key in [&a, &b] {
        holds_at(&follower, key, 2).await;
    }
    // The clients know only the follower's URL.
    let args = [&follower.url, &a.id, &a.secret, &b.id, &b.secret];
    let printed = common::run_client("binance_sdks.py", args.map(String::clone).to_vec()).await;
    assert!(printed.contains("all clients ok"), "{printed}");
    // The primary sequenced all of it: nothing rests on its book either.
    let book = depth(&primary).await;
    assert_eq!(
        (&book["bids"], &book["asks"]),
        (&json!([]), &json!([])),
        "{book}"
    );
    assert_eq!(
        state(&primary, &a, &b).await,
        state(&follower, &a, &b).await
    );
}

/// A process of a replicated exchange on `anvil`, its wallet looking every
/// 100 ms, never replacing a withdrawal's transaction within the test.
async fn chain_process(shared: &Shared, dir: &std::path::Path, name: &str, anvil: &str) -> Weiport {
    let mut env: Vec<(&str, &str)> = GENEROUS[1..].to_vec();
    env.extend([
        ("WEIPORT_NODE__URL", anvil),
        ("WEIPORT_INDEXER__POLL_INTERVAL_MS", "50"),
        ("WEIPORT_EXCHANGE__DEPOSIT_CONFIRMATIONS", "4"),
        ("WEIPORT_WALLET__POLL_MS", "100"),
        ("WEIPORT_WALLET__SWEEP_THRESHOLD", "1000000"),
        ("WEIPORT_WALLET__REPLACE_AFTER_SECS", "600"),
        ("WEIPORT_RESERVES__EVERY_SECS", "1"),
    ]);
    shared.process_with(dir, name, &env).await
}

/// `key`'s withdrawals as `/sapi/v1/capital/withdraw/history` lists them.
async fn withdrawals(weiport: &Weiport, key: &Key) -> Value {
    get(
        weiport,
        key,
        "/sapi/v1/capital/withdraw/history",
        "coin=ETH",
    )
    .await
}

/// `key`'s free ETH.
async fn eth_free(weiport: &Weiport, key: &Key) -> Value {
    let account = get(weiport, key, "/api/v3/account", "omitZeroBalances=true").await;
    let balances = account["balances"].as_array().cloned().unwrap_or_default();
    let eth = balances.iter().find(|b| b["asset"] == "ETH");
    eth.map_or(Value::Null, |b| b["free"].clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wallet_moves_with_the_lead_and_follows_what_the_old_primary_signed() {
    use alloy_primitives::{Address, U256};
    use common::chain::{Chain, ether};
    let shared = Shared::start();
    let anvil = common::Anvil::start(&[]);
    let chain = Chain::new(&anvil.url);
    let dev = chain.accounts().await;
    let disks: Vec<_> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut a = chain_process(&shared, disks[0].path(), "a", &anvil.url).await;
    let b = chain_process(&shared, disks[1].path(), "b", &anvil.url).await;
    assert_eq!(cluster(&b).await["role"], "follower");
    let alice = a
        .key(json!({"permissions": ["read", "withdraw"], "allowed_ips": ["127.0.0.1"]}))
        .await;

    // The address a follower hands out is the cluster's: the primary
    // credits what reaches it, and both processes show the deposit.
    let path = "/sapi/v1/capital/deposit/address";
    let eventually_known = async || {
        let mut found = Value::Null;
        eventually("the key reaches the follower", async || {
            let client = reqwest::Client::new();
            let (status, body) = signed_request(
                &client,
                &b.url,
                reqwest::Method::GET,
                path,
                &alice,
                "coin=ETH",
                0,
            )
            .await;
            found = body;
            status == 200
        })
        .await;
        found
    };
    let at_follower = eventually_known().await;
    let at_primary = get(&a, &alice, path, "coin=ETH").await;
    assert_eq!(
        at_follower["address"], at_primary["address"],
        "{at_primary}"
    );
    let address: Address = at_follower["address"].as_str().unwrap().parse().unwrap();
    chain.transfer(dev[0], address, ether(2)).await;
    chain.mine_many(4).await;
    for process in [&a, &b] {
        eventually("the deposit credited", async || {
            eth_free(process, &alice).await == json!("2.00000000")
        })
        .await;
    }
    // The follower lists the deposit from its own wallet's rows, which its
    // listener writes from its own index: they may trail the credit.
    eventually("the deposit listed by the follower", async || {
        let history = get(&b, &alice, "/sapi/v1/capital/deposit/hisrec", "coin=ETH").await;
        history.as_array().map(Vec::len) == Some(1)
    })
    .await;

    // A withdrawal asked of the follower is signed by the primary's wallet
    // and waits in the pool; the follower shows its transaction.
    chain.set_automine(false).await;
    let destination = Address::repeat_byte(0x6c);
    let params = format!("coin=ETH&address={destination}&amount=0.7");
    let client = reqwest::Client::new();
    let (status, taken) = signed_request(
        &client,
        &b.url,
        reqwest::Method::POST,
        "/sapi/v1/capital/withdraw/apply",
        &alice,
        &params,
        0,
    )
    .await;
    assert_eq!(status, 200, "{taken}");
    let mut signed = String::new();
    eventually("the follower shows the primary's transaction", async || {
        let listed = withdrawals(&b, &alice).await;
        signed = listed[0]["txId"].as_str().unwrap_or_default().to_owned();
        signed.starts_with("0x")
    })
    .await;
    let hot = Address::from_slice(
        &alloy_primitives::hex::decode("a0Ee7A142d267C1f36714E4a8F75612F20a79720").unwrap(),
    );
    let nonce = |v: Value| u64::from_str_radix(v.as_str().unwrap().trim_start_matches("0x"), 16);
    let before = nonce(
        chain
            .rpc("eth_getTransactionCount", json!([hot, "latest"]))
            .await,
    );

    // The primary dies before the transaction is mined: the follower
    // leads, and its wallet follows that transaction, never signing anew.
    a.stop("KILL", std::time::Duration::from_secs(10));
    eventually("the follower leads", async || {
        cluster(&b).await["role"] == "primary"
    })
    .await;
    chain.set_automine(true).await;
    chain.mine_many(5).await;
    eventually("the withdrawal completed", async || {
        withdrawals(&b, &alice).await[0]["status"] == json!(6)
    })
    .await;
    assert_eq!(withdrawals(&b, &alice).await[0]["txId"], json!(signed));
    let after = nonce(
        chain
            .rpc("eth_getTransactionCount", json!([hot, "latest"]))
            .await,
    );
    assert_eq!(after.unwrap(), before.unwrap() + 1, "one nonce: paid once");
    let paid = chain
        .node
        .balance(destination, weiport_indexer::StateAt::Latest)
        .await
        .unwrap();
    assert_eq!(paid, ether(7) / U256::from(10));
    assert_eq!(eth_free(&b, &alice).await, json!("1.29950000"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ccxt_pro_and_python_binance_watch_their_orders_and_trades_on_a_follower() {
    for (script, done) in [
        ("binance_streams.py", "streams ok"),
        ("binance_sdk_streams.py", "sdk streams ok"),
    ] {
        // A new exchange per client: each expects an empty book. Traders
        // funded at the primary; the clients know only the follower's URL:
        // their orders are forwarded, their streams come from its replay.
        let shared = Shared::start();
        let disks: Vec<_> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
        let primary = shared.process(disks[0].path(), "primary").await;
        let follower = shared.process(disks[1].path(), "follower").await;
        assert_eq!(cluster(&follower).await["role"], "follower");
        let (maker, taker) = primary.two_traders().await;
        for key in [&maker, &taker] {
            holds_at(&follower, key, 1).await;
        }
        let args = [
            &follower.url,
            &maker.id,
            &maker.secret,
            &taker.id,
            &taker.secret,
        ];
        let printed = common::run_client(script, args.map(String::clone).to_vec()).await;
        assert!(printed.contains(done), "{script}: {printed}");
    }
}

/// A server older than the crash-loss fixes (Debian 12's 2.9.10, kept
/// installed for this test alone) is refused at start with one line.
#[test]
fn a_nats_server_older_than_the_crash_loss_fixes_is_refused_at_start() {
    let old = std::path::Path::new("/usr/sbin/nats-server");
    assert!(
        old.exists(),
        "Debian's nats-server (scripts/setup.sh installs it)"
    );
    let store = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = std::process::Command::new(old)
        .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
        .arg(store.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let urls = format!("[\"nats://127.0.0.1:{port}\"]");
    let refused = common::weiport_command(
        &["serve"],
        &[
            ("WEIPORT_DATA_DIR", dir.path().to_str().unwrap()),
            ("WEIPORT_SERVER__LISTEN", "127.0.0.1:0"),
            ("WEIPORT_ADMIN__LISTEN", "127.0.0.1:0"),
            ("WEIPORT_CLUSTER__NATS_URLS", &urls),
            ("WEIPORT_CLUSTER__NODE_NAME", "old"),
            ("WEIPORT_EXCHANGE__DURABILITY", "replicated"),
            ("WEIPORT_MASTER_KEY", common::replicated::MASTER_KEY),
            ("WEIPORT_WALLET__ENABLED", "false"),
        ],
    )
    .output()
    .unwrap();
    let _ = server.kill();
    let _ = server.wait();
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    let refusal: Vec<&str> = said
        .lines()
        .filter(|line| line.contains("older than 2.10.23"))
        .collect();
    assert_eq!(refusal.len(), 1, "{said}");
    assert!(
        refusal[0].contains("nats-server 2.9.10 is older than 2.10.23"),
        "{said}"
    );
}

/// Keys, limits and account ids are shared only through Redis: without it
/// a second process would know none of the first's keys, so it is refused
/// at start, saying why; the first, alone, serves and warns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_process_without_redis_is_refused_at_start_saying_why() {
    let nats = weiport_journal::testing::NatsServer::start();
    let urls = format!("[\"{}\"]", nats.url());
    let env = |name: &'static str| {
        vec![
            ("WEIPORT_CLUSTER__NATS_URLS", urls.clone()),
            ("WEIPORT_CLUSTER__NODE_NAME", name.to_owned()),
            ("WEIPORT_EXCHANGE__DURABILITY", "replicated".to_owned()),
            (
                "WEIPORT_MASTER_KEY",
                common::replicated::MASTER_KEY.to_owned(),
            ),
            ("WEIPORT_WALLET__ENABLED", "false".to_owned()),
        ]
    };
    let (first_dir, second_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let first_env = env("first");
    let first_env: Vec<(&str, &str)> = first_env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut first = Weiport::serve(first_dir.path(), &first_env);
    first.wait_for_log("cluster.redis_url is not set").await;
    let (maker, _) = first.two_traders().await;
    let (status, _) = first
        .signed(reqwest::Method::GET, "/api/v3/account", &maker, "")
        .await;
    assert_eq!(status, 200, "the first serves alone");

    let second_env = env("second");
    let mut second_env: Vec<(&str, &str)> =
        second_env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let data_dir = second_dir.path().to_str().unwrap();
    second_env.extend([
        ("WEIPORT_DATA_DIR", data_dir),
        ("WEIPORT_SERVER__LISTEN", "127.0.0.1:0"),
        ("WEIPORT_ADMIN__LISTEN", "127.0.0.1:0"),
    ]);
    let refused = common::weiport_command(&["serve"], &second_env)
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("another process (first) leads this replicated exchange")
            && said.contains("set cluster.redis_url (the one first uses)"),
        "{said}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_that_joins_late_lists_every_deposit_credited_before() {
    use common::chain::{Chain, ether};
    let shared = Shared::start();
    let anvil = common::Anvil::start(&[]);
    let chain = Chain::new(&anvil.url);
    let dev = chain.accounts().await;
    let disks: Vec<_> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let a = chain_process(&shared, disks[0].path(), "a", &anvil.url).await;
    let alice = a.key(json!({"permissions": ["read"]})).await;
    let address = get(&a, &alice, "/sapi/v1/capital/deposit/address", "coin=ETH").await;
    let address = address["address"].as_str().unwrap().parse().unwrap();

    // Three deposits in blocks far apart, all credited by the primary.
    for n in 1..=3u64 {
        chain.transfer(dev[0], address, ether(n)).await;
        chain.mine_many(6).await;
    }
    eventually("three deposits credited", async || {
        eth_free(&a, &alice).await == json!("6.00000000")
    })
    .await;

    // A process on an empty disk replays the journal, whose last credit is
    // the third deposit, and indexes the chain: it lists all three.
    let b = chain_process(&shared, disks[1].path(), "b", &anvil.url).await;
    eventually("the late process lists all three deposits", async || {
        let (status, listed) = b
            .signed(
                reqwest::Method::GET,
                "/sapi/v1/capital/deposit/hisrec",
                &alice,
                "coin=ETH",
            )
            .await;
        status == 200 && listed.as_array().is_some_and(|l| l.len() == 3)
    })
    .await;
    assert_eq!(eth_free(&b, &alice).await, json!("6.00000000"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_process_publishes_the_same_reserves_root_for_a_sequence() {
    use common::chain::{Chain, ether};
    let shared = Shared::start();
    let anvil = common::Anvil::start(&[]);
    let chain = Chain::new(&anvil.url);
    let dev = chain.accounts().await;
    let disks: Vec<_> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let a = chain_process(&shared, disks[0].path(), "a", &anvil.url).await;
    let b = chain_process(&shared, disks[1].path(), "b", &anvil.url).await;
    let mut keys = Vec::new();
    for n in 1..=3u64 {
        let key = a.key(json!({"permissions": ["read"]})).await;
        let address = get(&a, &key, "/sapi/v1/capital/deposit/address", "coin=ETH").await;
        let address = address["address"].as_str().unwrap().parse().unwrap();
        chain.transfer(dev[0], address, ether(n)).await;
        keys.push(key);
    }
    chain.mine_many(6).await;
    eventually("the deposits credited on both processes", async || {
        eth_free(&a, &keys[2]).await == json!("3.00000000")
            && eth_free(&b, &keys[2]).await == json!("3.00000000")
    })
    .await;

    // Each takes its own snapshots on its own clock; once both have one of
    // the same sequence, its root and totals are the same.
    let (mut on_a, mut on_b) = (Value::Null, Value::Null);
    eventually("a snapshot of the same sequence on both", async || {
        on_a = a.public("/sapi/v1/reserves").await;
        on_b = b.public("/sapi/v1/reserves").await;
        on_a["sequence"].is_u64()
            && on_a["sequence"] == on_b["sequence"]
            && on_a["totals"] == on_b["totals"]
            && on_a["accounts"] == json!(3)
    })
    .await;
    assert_eq!(on_a["root"], on_b["root"], "{on_a} {on_b}");
    assert_eq!(on_a["totals"], on_b["totals"]);
    // And each account's proof from either checks against the same root.
    for key in &keys {
        let proof_a = get(&a, key, "/sapi/v1/reserves/proof", "").await;
        let proof_b = get(&b, key, "/sapi/v1/reserves/proof", "").await;
        assert_eq!(proof_a["proof"], proof_b["proof"]);
    }
}
