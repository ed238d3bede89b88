//! Secrets stay secret: a server at debug log level is driven through keys,
//! signed orders (right and wrong), key rotation, deposits and a withdrawal,
//! and neither its log, nor any answer but the one that creates a key, nor
//! `/metrics`, nor `weiport config` ever shows an API secret, the master
//! key, the admin token, the hot wallet's key or the wallet's seed.

mod common;

use std::time::Duration;

use common::{Anvil, Key, Weiport, weiport_command};
use serde_json::json;
use weiport_access::MasterKey;
use weiport_storage::{Store, StoreOptions};

const MASTER: &str = "5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed";
const HOT: &str = "0x2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6";
const TOKEN: &str = "admin-token-that-must-never-show-0123456789";

/// Everything the server said back, except key creations' own answers.
#[derive(Default)]
struct Heard(Vec<String>);

impl Heard {
    async fn get(&mut self, url: String, headers: &[(&str, &str)]) {
        let mut request = reqwest::Client::new().get(url);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.unwrap();
        self.keep(response).await;
    }

    async fn keep(&mut self, response: reqwest::Response) {
        for (name, value) in response.headers() {
            self.0
                .push(format!("{name}: {}", value.to_str().unwrap_or("")));
        }
        self.0.push(response.text().await.unwrap());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_reaches_a_log_an_answer_or_the_metrics() {
    let anvil = Anvil::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("WEIPORT_NODE__URL", anvil.url.as_str()),
        ("WEIPORT_MASTER_KEY", MASTER),
        ("WEIPORT_ADMIN__TOKEN", TOKEN),
        ("WEIPORT_WALLET__HOT_WALLET_KEY", HOT),
        ("WEIPORT_LOG__LEVEL", "debug"),
    ];
    let mut weiport = Weiport::serve(dir.path(), &env);
    weiport.admin_token = TOKEN.into();
    let trader = weiport
        .funded_key(&["read", "trade"], &[("USDT", "10000"), ("ETH", "10")])
        .await;
    let withdrawer = weiport
        .key(json!({ "permissions": ["read", "withdraw"], "allowed_ips": ["127.0.0.1"] }))
        .await;
    let mut secrets = vec![
        trader.secret.clone(),
        withdrawer.secret.clone(),
        MASTER.to_owned(),
        TOKEN.to_owned(),
        HOT.trim_start_matches("0x").to_owned(),
    ];

    let mut heard = Heard::default();
    for params in [
        "symbol=ETHUSDT&side=SELL&type=LIMIT&timeInForce=GTC&quantity=1&price=3000",
        "symbol=ETHUSDT&side=BUY&type=MARKET&quantity=0.5",
    ] {
        let (_, answer) = weiport
            .signed(reqwest::Method::POST, "/api/v3/order", &trader, params)
            .await;
        heard.0.push(answer.to_string());
    }
    // Wrong signatures, and a key used with another key's secret.
    let forged = Key {
        secret: withdrawer.secret.clone(),
        ..trader.clone()
    };
    for key in [&forged, &trader] {
        let (_, answer) = weiport
            .signed(reqwest::Method::GET, "/api/v3/account", key, "")
            .await;
        heard.0.push(answer.to_string());
    }
    let (_, answer) = weiport
        .signed(
            reqwest::Method::GET,
            "/sapi/v1/capital/deposit/address",
            &trader,
            "coin=ETH",
        )
        .await;
    heard.0.push(answer.to_string());
    weiport
        .admin(
            reqwest::Method::POST,
            &format!("/admin/accounts/{}/credit", withdrawer.account),
            json!({ "asset": "ETH", "amount": "1" }),
        )
        .await;
    let (_, answer) = weiport
        .signed(
            reqwest::Method::POST,
            "/sapi/v1/capital/withdraw/apply",
            &withdrawer,
            "coin=ETH&address=0x5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a&amount=0.1",
        )
        .await;
    heard.0.push(answer.to_string());
    // A rotation shows its new secret once; the old one stays secret after.
    let (_, rotated) = weiport
        .admin(
            reqwest::Method::POST,
            &format!("/admin/keys/{}/rotate", trader.id),
            json!({ "grace_secs": 0 }),
        )
        .await;
    if let Some(secret) = rotated["secret"].as_str() {
        secrets.push(secret.to_owned());
    }
    let (_, keys) = weiport
        .admin(reqwest::Method::GET, "/admin/keys", json!({}))
        .await;
    heard.0.push(keys.to_string());
    heard.get(format!("{}/metrics", weiport.url), &[]).await;
    heard.get(format!("{}/readyz", weiport.url), &[]).await;
    heard
        .get(
            format!("{}/api/v3/account?timestamp=1&signature=00", weiport.url),
            &[("X-MBX-APIKEY", &trader.id)],
        )
        .await;
    // The wallet sends the withdrawal and logs about it; the log is then
    // read to its end.
    weiport.wait_for_log("sending a withdrawal").await;
    weiport
        .stop("TERM", Duration::from_secs(30))
        .expect("stopped");
    let log = weiport.read_log_to_end().join("\n");

    // The wallet's seed, opened as only the server can.
    let store = Store::open(dir.path(), &StoreOptions::default()).unwrap();
    let sealed = store.wallet_seed().unwrap().expect("a seed was made");
    let mut master = [0u8; 32];
    for (i, byte) in master.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&MASTER[2 * i..2 * i + 2], 16).unwrap();
    }
    let seed = MasterKey::from_bytes(&master)
        .open(&sealed, b"weiport wallet seed")
        .expect("the seed opens with the master key");
    secrets.push(alloy_primitives::hex::encode(&seed));
    drop(store);

    let printed = weiport_command(&["config"], &env).output().unwrap();
    let config = String::from_utf8_lossy(&printed.stdout).into_owned();
    assert!(config.contains("[wallet]"), "{config}");

    let everything = [log.as_str(), &heard.0.join("\n"), &config].join("\n");
    // What was read is what the server said: its log, its metrics, the withdrawal sent.
    assert!(log.contains("wallet running"), "the wallet ran: {log}");
    assert!(log.contains("API key rotated"), "{log}");
    assert!(log.contains("sending a withdrawal"), "{log}");
    assert!(everything.contains("# TYPE"), "metrics were read");
    for secret in &secrets {
        assert!(!secret.is_empty());
        let lower = secret.to_ascii_lowercase();
        assert!(
            !everything.to_ascii_lowercase().contains(&lower),
            "a secret ({}…) was shown",
            &secret[..6]
        );
    }
}
