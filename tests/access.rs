//! The shared access layer over real HTTP: keys made through the admin API,
//! Binance-signed and Etherscan-keyed requests, every refusal's exact status
//! and body, rate limits with 429, Retry-After and 418 bans.

mod common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{Anvil, Weiport};
use serde_json::{Value, json};
use weiport_access::sign_hmac_sha256;

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

struct Server {
    weiport: Weiport,
    http: reqwest::Client,
    _dir: tempfile::TempDir,
    _anvil: Anvil,
}

struct Key {
    id: String,
    secret: String,
}

impl Server {
    async fn start(env: &[(&str, &str)]) -> Self {
        let anvil = Anvil::start(&["--accounts", "2"]);
        let dir = tempfile::tempdir().unwrap();
        let mut all = vec![
            ("WEIPORT_NODE__URL", anvil.url.as_str()),
            ("WEIPORT_INDEXER__POLL_INTERVAL_MS", "20"),
        ];
        all.extend_from_slice(env);
        let weiport = Weiport::serve(dir.path(), &all);
        // The query API answers once the index has its genesis.
        weiport.wait_indexed(0).await;
        Self {
            weiport,
            http: reqwest::Client::new(),
            _dir: dir,
            _anvil: anvil,
        }
    }

    async fn admin(&self, method: reqwest::Method, path: &str, body: Value) -> (u16, Value) {
        self.weiport.admin(method, path, body).await
    }

    async fn key(&self, permissions: &[&str], ips: &[&str]) -> Key {
        let key = self
            .weiport
            .create_key(json!({ "permissions": permissions, "allowed_ips": ips }))
            .await;
        Key {
            id: key["id"].as_str().unwrap().into(),
            secret: key["secret"].as_str().unwrap().into(),
        }
    }

    async fn get(
        &self,
        path_and_query: &str,
        headers: &[(&str, &str)],
    ) -> (u16, reqwest::header::HeaderMap, String) {
        let mut request = self
            .http
            .get(format!("{}{path_and_query}", self.weiport.url));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        (status, headers, response.text().await.unwrap())
    }

    /// A signed Binance GET of `path` with `params` (timestamp added unless present).
    async fn signed(&self, path: &str, key: &Key, params: &str) -> (u16, Value) {
        let query = if params.contains("timestamp=") {
            params.to_owned()
        } else {
            format!("{params}timestamp={}", now_ms())
        };
        let signature = sign_hmac_sha256(key.secret.as_bytes(), query.as_bytes());
        let (status, _, body) = self
            .get(
                &format!("{path}?{query}&signature={signature}"),
                &[("X-MBX-APIKEY", &key.id)],
            )
            .await;
        (status, serde_json::from_str(&body).unwrap())
    }
}

const RESTRICTIONS: &str = "/sapi/v1/account/apiRestrictions";

fn binance(code: i64, msg: &str) -> Value {
    json!({ "code": code, "msg": msg })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_binance_refusal_has_its_exact_status_and_body() {
    let server = Server::start(&[]).await;
    let reader = server.key(&["read"], &[]).await;
    let (status, body) = server.signed(RESTRICTIONS, &reader, "").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (body["enableReading"].clone(), body["ipRestrict"].clone()),
        (json!(true), json!(false))
    );
    assert_eq!(body["enableSpotAndMarginTrading"], json!(false));

    let invalid_key = binance(-2015, "Invalid API-key, IP, or permissions for action.");
    let format_invalid = binance(-2014, "API-key format invalid.");
    let query = format!("timestamp={}", now_ms());
    let signature = sign_hmac_sha256(reader.secret.as_bytes(), query.as_bytes());
    // (query, headers, expected status, expected body)
    type Case<'a> = (String, Vec<(&'a str, String)>, u16, Value);
    let cases: Vec<Case> = vec![
        (
            format!("{query}&signature={signature}"),
            vec![],
            401,
            format_invalid.clone(),
        ),
        (
            format!("{query}&signature={signature}"),
            vec![("X-MBX-APIKEY", "has spaces!".into())],
            401,
            format_invalid,
        ),
        (
            format!("{query}&signature={signature}"),
            vec![("X-MBX-APIKEY", "A".repeat(64))],
            401,
            invalid_key.clone(),
        ),
        (
            query.clone(),
            vec![("X-MBX-APIKEY", reader.id.clone())],
            400,
            binance(
                -1102,
                "Mandatory parameter 'signature' was not sent, was empty/null, or malformed.",
            ),
        ),
        (
            format!(
                "signature={}",
                sign_hmac_sha256(reader.secret.as_bytes(), b"")
            ),
            vec![("X-MBX-APIKEY", reader.id.clone())],
            400,
            binance(
                -1102,
                "Mandatory parameter 'timestamp' was not sent, was empty/null, or malformed.",
            ),
        ),
        (
            format!("{query}&signature={}", "0".repeat(64)),
            vec![("X-MBX-APIKEY", reader.id.clone())],
            401,
            binance(-1022, "Signature for this request is not valid."),
        ),
    ];
    for (query, headers, status, body) in cases {
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (got, _, text) = server
            .get(&format!("{RESTRICTIONS}?{query}"), &headers)
            .await;
        assert_eq!(
            (got, serde_json::from_str::<Value>(&text).unwrap()),
            (status, body),
            "{query} {headers:?}"
        );
    }

    let stale = format!("timestamp={}", now_ms() - 6_000);
    assert_eq!(
        server.signed(RESTRICTIONS, &reader, &stale).await,
        (
            400,
            binance(
                -1021,
                "Timestamp for this request is outside of the recvWindow."
            )
        )
    );
    let wide = format!("timestamp={}&recvWindow=10000", now_ms() - 6_000);
    assert_eq!(server.signed(RESTRICTIONS, &reader, &wide).await.0, 200);
    let ahead = format!("timestamp={}", now_ms() + 2_000);
    assert_eq!(
        server.signed(RESTRICTIONS, &reader, &ahead).await,
        (
            400,
            binance(
                -1021,
                "Timestamp for this request was 1000ms ahead of the server's time."
            )
        )
    );
    assert_eq!(
        server
            .signed(RESTRICTIONS, &reader, "recvWindow=60001&")
            .await,
        (400, binance(-1131, "recvWindow must be less than 60000"))
    );

    let locked = server.key(&["read"], &["10.9.9.9"]).await;
    assert_eq!(
        server.signed(RESTRICTIONS, &locked, "").await,
        (401, invalid_key.clone())
    );
    let local = server.key(&["read"], &["127.0.0.0/8"]).await;
    let (status, body) = server.signed(RESTRICTIONS, &local, "").await;
    assert_eq!((status, body["ipRestrict"].clone()), (200, json!(true)));
    let trader = server.key(&["trade"], &[]).await;
    assert_eq!(
        server.signed(RESTRICTIONS, &trader, "").await,
        (401, invalid_key.clone()),
        "no read permission"
    );

    let (status, revoked) = server
        .admin(
            reqwest::Method::POST,
            &format!("/admin/keys/{}/revoke", reader.id),
            json!({}),
        )
        .await;
    assert_eq!(status, 200, "{revoked}");
    assert_eq!(
        server.signed(RESTRICTIONS, &reader, "").await,
        (401, invalid_key),
        "refused on the very next request"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etherscan_key_refusals_in_both_status_modes() {
    for http_200 in ["false", "true"] {
        let server = Server::start(&[("WEIPORT_QUERY__HTTP_200_ERRORS", http_200)]).await;
        let key = server.key(&["read"], &[]).await;
        let status = |s: u16| if http_200 == "true" { 200 } else { s };
        let notok = |result: &str| json!({ "status": "0", "message": "NOTOK", "result": result });
        let block_number = "/api?module=proxy&action=eth_blockNumber";
        for (query, expected_status, expected) in [
            (
                block_number.to_owned(),
                status(401),
                notok("Missing/Invalid API Key"),
            ),
            (
                format!("{block_number}&apikey={}", "B".repeat(64)),
                status(401),
                notok("Invalid API Key"),
            ),
            (
                format!("/api?module=nope&apikey={}", key.id),
                status(400),
                notok("Error! Missing Or invalid Module name"),
            ),
            (
                format!("{block_number}&apikey={}", key.id),
                200,
                json!({ "jsonrpc": "2.0", "id": 1, "result": "0x0" }),
            ),
        ] {
            let (got, _, body) = server.get(&query, &[]).await;
            assert_eq!(
                (got, serde_json::from_str::<Value>(&body).unwrap()),
                (expected_status, expected),
                "{query}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bursts_get_429_with_retry_after_then_recover_and_hammering_gets_418() {
    let server = Server::start(&[
        ("WEIPORT_ACCESS__IP_WEIGHT_PER_MINUTE", "30"),
        ("WEIPORT_ACCESS__BAN_AFTER_REJECTIONS", "3"),
        ("WEIPORT_ACCESS__BAN_INITIAL_SECS", "2"),
    ])
    .await;
    let mut previous = 0;
    for _ in 0..30 {
        let (status, headers, _) = server.get("/api/v3/time", &[]).await;
        assert_eq!(status, 200);
        let used: u32 = headers["x-mbx-used-weight-1m"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        // Fixed one-minute windows, like Binance: +1 per call, or 1 after a rollover.
        assert!(
            used == previous + 1 || used == 1,
            "used {used} after {previous}"
        );
        previous = used;
    }
    let (status, headers, body) = server.get("/api/v3/time", &[]).await;
    assert_eq!(status, 429, "{body}");
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["code"], -1003);
    let wait: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!(
        (1..=3).contains(&wait),
        "GCRA frees one weight unit every 2 s: {wait}"
    );
    // The client waits as told: the wait is the behaviour under test.
    tokio::time::sleep(Duration::from_secs(wait)).await;
    assert_eq!(
        server.get("/api/v3/time", &[]).await.0,
        200,
        "after Retry-After the client is served again"
    );

    let mut statuses = Vec::new();
    for _ in 0..5 {
        let (status, headers, body) = server.get("/api/v3/time", &[]).await;
        statuses.push(status);
        if status == 418 {
            let body: Value = serde_json::from_str(&body).unwrap();
            assert_eq!(body["code"], -1003);
            assert!(
                body["msg"]
                    .as_str()
                    .unwrap()
                    .starts_with("Way too much request weight used; IP banned until ")
            );
            assert!(headers.contains_key("retry-after"));
        }
    }
    // The first 429 above counted too: the fourth within a minute turns into a ban.
    assert_eq!(
        statuses,
        vec![429, 429, 418, 418, 418],
        "kept hammering after 429"
    );
    // The operator sees them by face, throttles apart from bans.
    let (_, _, metrics) = server.get("/metrics", &[]).await;
    let count = |labels: &str| {
        metrics
            .lines()
            .find_map(|line| line.strip_prefix(&format!("weiport_rate_limited_total{{{labels}}} ")))
            .unwrap_or_else(|| panic!("no {labels} in {metrics}"))
            .to_owned()
    };
    assert_eq!(count(r#"face="binance",status="429""#), "3");
    assert_eq!(count(r#"face="binance",status="418""#), "3");
    assert_eq!(count(r#"face="etherscan",status="429""#), "0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_never_reach_the_logs() {
    let mut server = Server::start(&[("WEIPORT_LOG__LEVEL", "debug")]).await;
    let key = server.key(&["read"], &[]).await;
    let (status, rotated) = server
        .admin(
            reqwest::Method::POST,
            &format!("/admin/keys/{}/rotate", key.id),
            json!({ "grace_secs": 5 }),
        )
        .await;
    assert_eq!(status, 200);
    let rotated_secret = rotated["secret"].as_str().unwrap().to_owned();
    let (status, listed) = server
        .admin(reqwest::Method::GET, "/admin/keys", json!({}))
        .await;
    assert_eq!(status, 200);
    assert!(
        !listed.to_string().contains(&key.secret) && !listed.to_string().contains(&rotated_secret)
    );
    assert_eq!(
        server.signed(RESTRICTIONS, &key, "").await.0,
        200,
        "old secret inside its grace period"
    );
    // Read to its end, the log holds every line of the requests above.
    server
        .weiport
        .stop("TERM", Duration::from_secs(30))
        .expect("stopped");
    let log = server.weiport.read_log_to_end().join("\n");
    assert!(
        log.contains(&key.id),
        "the key id is logged, so the log was captured"
    );
    assert!(
        !log.contains(&key.secret) && !log.contains(&rotated_secret),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_manages_keys_through_the_server_or_directly_on_the_data_dir() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().to_str().unwrap();
    let cli = |args: &[&str]| {
        let output = common::weiport_command(
            args,
            &[
                ("WEIPORT_DATA_DIR", data_dir),
                ("WEIPORT_ADMIN__LISTEN", "127.0.0.1:1"),
            ],
        )
        .output()
        .unwrap();
        assert!(
            output.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice::<Value>(&output.stdout).unwrap()
    };
    let account = cli(&["accounts", "create", "--label", "desk"]);
    let created = cli(&[
        "keys",
        "create",
        "--account",
        &account["id"].to_string(),
        "--permissions",
        "read,trade",
        "--ip",
        "10.0.0.0/8",
    ]);
    assert_eq!(created["secret"].as_str().unwrap().len(), 64);
    assert_eq!(created["permissions"], json!(["read", "trade"]));
    let listed = cli(&["keys", "list"]);
    assert_eq!(listed[0]["id"], created["id"]);
    assert!(listed[0].get("secret").is_none());
    let revoked = cli(&["keys", "revoke", created["id"].as_str().unwrap()]);
    assert!(revoked["revoked_ms"].is_u64());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_key_reads_but_cannot_trade_and_json_bodies_are_signed_raw() {
    let server = Server::start(&[]).await;
    let reader = server.key(&["read"], &[]).await;
    let trader = server.key(&["read", "trade"], &[]).await;
    let order = "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=0.5&price=3000";
    let post = |key: &Key, query: String, body: Option<String>| {
        let signed = match &body {
            Some(body) => format!("{query}{body}"),
            None => query.clone(),
        };
        let signature = sign_hmac_sha256(key.secret.as_bytes(), signed.as_bytes());
        let mut request = server
            .http
            .post(format!(
                "{}/api/v3/order/test?{query}&signature={signature}",
                server.weiport.url
            ))
            .header("X-MBX-APIKEY", &key.id);
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(body);
        }
        async move {
            let response = request.send().await.unwrap();
            (
                response.status().as_u16(),
                response.json::<Value>().await.unwrap(),
            )
        }
    };
    let query = || format!("{order}&timestamp={}", now_ms());

    assert_eq!(
        server.signed(RESTRICTIONS, &reader, "").await.0,
        200,
        "the read-only key reads"
    );
    assert_eq!(
        post(&reader, query(), None).await,
        (
            401,
            binance(-2015, "Invalid API-key, IP, or permissions for action.")
        ),
        "but cannot trade"
    );
    assert_eq!(post(&trader, query(), None).await, (200, json!({})));
    let rates = post(
        &trader,
        format!("{}&computeCommissionRates=true", query()),
        None,
    )
    .await;
    assert_eq!(
        rates.1["standardCommissionForOrder"],
        json!({ "maker": "0.00100000", "taker": "0.00100000" })
    );

    // A JSON body is signed as its raw text, with the signature in the query.
    let body = r#"{"symbol":"ETHUSDT","side":"SELL","type":"LIMIT","timeInForce":"GTC","quantity":"0.01","price":"3100.50"}"#;
    assert_eq!(
        post(
            &trader,
            format!("timestamp={}", now_ms()),
            Some(body.to_owned())
        )
        .await,
        (200, json!({}))
    );
    let tampered = post(
        &trader,
        format!("timestamp={}", now_ms()),
        Some(body.replace("0.01", "0.02")),
    )
    .await;
    assert_eq!(
        tampered.0, 200,
        "signed over the tampered body itself, so valid"
    );
    let signature = sign_hmac_sha256(
        trader.secret.as_bytes(),
        format!("timestamp=1{body}").as_bytes(),
    );
    let response = server
        .http
        .post(format!(
            "{}/api/v3/order/test?timestamp={}&signature={signature}",
            server.weiport.url,
            now_ms()
        ))
        .header("X-MBX-APIKEY", &trader.id)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.status().as_u16(),
        401,
        "a signature over other bytes is refused"
    );

    // Order validation answers with Binance's codes after authentication.
    let bad_symbol = format!(
        "symbol=NOPE&side=BUY&type=MARKET&quantity=1&timestamp={}",
        now_ms()
    );
    assert_eq!(
        post(&trader, bad_symbol, None).await,
        (400, binance(-1121, "Invalid symbol."))
    );
    let lot = format!(
        "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=0.00001&price=3000&timestamp={}",
        now_ms()
    );
    assert_eq!(
        post(&trader, lot, None).await,
        (400, binance(-1013, "Filter failure: LOT_SIZE"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ed25519_key_registered_by_pem_signs_requests_in_base64() {
    use base64::Engine;
    use ed25519_dalek::Signer;
    use ed25519_dalek::pkcs8::EncodePublicKey;

    let server = Server::start(&[]).await;
    let signing = ed25519_dalek::SigningKey::from_bytes(&[7u8; 32]);
    let pem = signing
        .verifying_key()
        .to_public_key_pem(Default::default())
        .unwrap();
    let key = server
        .weiport
        .create_key(
            json!({ "kind": "ed25519", "public_key": pem, "permissions": ["read", "trade"] }),
        )
        .await;
    assert!(
        key["secret"].is_null(),
        "nothing secret is shown: the client holds the private key"
    );
    let id = key["id"].as_str().unwrap();
    let sign = |payload: &str| {
        let signature = base64::engine::general_purpose::STANDARD
            .encode(signing.sign(payload.as_bytes()).to_bytes());
        signature
            .replace('+', "%2B")
            .replace('/', "%2F")
            .replace('=', "%3D")
    };
    let query = format!("timestamp={}", now_ms());
    let (status, _, body) = server
        .get(
            &format!("{RESTRICTIONS}?{query}&signature={}", sign(&query)),
            &[("X-MBX-APIKEY", id)],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let other = format!("timestamp={}&recvWindow=6000", now_ms());
    let (status, _, body) = server
        .get(
            &format!("{RESTRICTIONS}?{other}&signature={}", sign(&query)),
            &[("X-MBX-APIKEY", id)],
        )
        .await;
    assert_eq!(
        (status, serde_json::from_str::<Value>(&body).unwrap()),
        (
            401,
            binance(-1022, "Signature for this request is not valid.")
        )
    );
}
