//! Seeded fuzzing of the whole server over real sockets: requests generated
//! from `/openapi.json` (every Binance route with valid, hostile, missing,
//! repeated and unread parameters, signed right and wrong, in the query or a
//! form body, oversize), from Etherscan's and CoinGecko's parameter spaces,
//! raw junk (methods, paths, headers), WebSocket sessions sending junk
//! control frames, and WebSocket API requests of every method (from the
//! document's `x-ws-api`) with the same hostile parameters, signed right and
//! wrong, and junk frames between them on one connection. Nothing may panic or answer 5xx, every refusal comes in
//! its API's own shape, the command log grows by exactly the requests that
//! were accepted, and the state rebuilt from that log after a restart is the
//! state the server held: a refused request changed nothing.
//!
//! `FUZZ_REQUESTS` (default 2,000 a seed) and `FUZZ_SEEDS` (comma-separated,
//! default 1 and 90210: each seed its own server and run) set the runs;
//! `scripts/fuzz.sh` runs 100,000 a seed over three seeds and prints the
//! figures.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::hostile::hostile_values;
use common::raw_http::{Answer, Connection};
use common::{Anvil, Key, Weiport, now_ms};
use futures::{SinkExt, StreamExt};
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use weiport_access::sign_hmac_sha256;
use weiport_storage::{Store, StoreOptions};

/// One Binance route as `/openapi.json` describes it.
struct Route {
    method: String,
    path: String,
    signed: bool,
    names: Vec<String>,
}

/// One WebSocket API method as `/openapi.json` describes it.
struct WsMethod {
    name: String,
    signed: bool,
    names: Vec<String>,
    /// Whether an accepted call is one engine command.
    changes: bool,
}

/// What the run saw.
#[derive(Default, Debug)]
struct Tally {
    requests: u64,
    by_status: BTreeMap<u16, u64>,
    /// Connections the server closed instead of answering (oversize heads).
    closed: u64,
    /// Answers to engine-changing routes that were accepted (2xx, or 409:
    /// a cancel-replace that did one of its parts).
    accepted_changes: u64,
    /// Deposit addresses handed out: each was assigned by one engine command.
    deposit_addresses: std::collections::BTreeSet<String>,
    ws_sessions: u64,
    ws_frames: u64,
    /// WebSocket API requests, and their answers by status.
    ws_api_requests: u64,
    ws_api_by_status: BTreeMap<u16, u64>,
    failures: Vec<String>,
}

impl Tally {
    fn fail(&mut self, what: String) {
        if self.failures.len() < 20 {
            self.failures.push(what);
        }
    }
}

/// A valid value for a parameter the routes read, so that the hostile part
/// of a request reaches the code behind the first check.
fn valid_value(name: &str, rng: &mut StdRng) -> Option<String> {
    let pick = |rng: &mut StdRng, options: &[&str]| options.choose(rng).unwrap().to_string();
    Some(match name {
        "symbol" => pick(rng, &["ETHUSDT", "ETHBTC"]),
        "symbols" => "%5B%22ETHUSDT%22%5D".into(),
        "side" | "workingSide" | "pendingSide" => pick(rng, &["BUY", "SELL"]),
        "type" | "workingType" => pick(rng, &["LIMIT", "MARKET", "LIMIT_MAKER", "STOP_LOSS_LIMIT"]),
        "timeInForce" => pick(rng, &["GTC", "IOC", "FOK"]),
        "quantity" | "workingQuantity" | "pendingQuantity" => pick(rng, &["0.01", "1", "0.001"]),
        "price" | "workingPrice" | "abovePrice" | "belowPrice" => {
            pick(rng, &["3000", "2500", "0.05"])
        }
        "stopPrice" | "belowStopPrice" => "2900".into(),
        "quoteOrderQty" => "100".into(),
        "interval" => pick(rng, &["1m", "1h", "1d", "1M"]),
        "orderId" | "fromId" | "orderListId" | "cancelOrderId" => {
            rng.random_range(1..50u32).to_string()
        }
        "limit" => pick(rng, &["1", "5", "100", "1000"]),
        "startTime" | "endTime" => now_ms().to_string(),
        "newOrderRespType" => pick(rng, &["ACK", "RESULT", "FULL"]),
        "cancelReplaceMode" => pick(rng, &["STOP_ON_FAILURE", "ALLOW_FAILURE"]),
        "coin" | "asset" => pick(rng, &["ETH", "USDT"]),
        "network" => "ETH".into(),
        "address" => "0xa0Ee7A142d267C1f36714E4a8F75612F20a79720".into(),
        "amount" => pick(rng, &["0.01", "1"]),
        "windowSize" => pick(rng, &["1m", "1h", "1d"]),
        "timeZone" => pick(rng, &["0", "8", "-1:30"]),
        _ => return None,
    })
}

/// A value no client should send: the shared hostile list, or random bytes
/// percent-encoded.
fn hostile_value(rng: &mut StdRng, hostile: &[String]) -> String {
    if rng.random_bool(0.8) {
        hostile.choose(rng).unwrap().clone()
    } else {
        let len = rng.random_range(1..40);
        (0..len)
            .map(|_| format!("%{:02X}", rng.random::<u8>()))
            .collect()
    }
}

/// Whether an accepted call of this route is one engine command.
fn changes_the_engine(method: &str, path: &str) -> bool {
    method != "GET"
        && path != "/api/v3/order/test"
        && (path.starts_with("/api/v3/order")
            || path == "/api/v3/openOrders"
            || path == "/sapi/v1/capital/withdraw/apply")
}

/// The server's keys for the run.
struct Keys {
    trader: Key,
    reader: Key,
    withdrawer: Key,
}

struct Fuzzer {
    rng: StdRng,
    routes: Vec<Route>,
    ws_methods: Vec<WsMethod>,
    hostile: Vec<String>,
    keys: Keys,
    tally: Tally,
}

impl Fuzzer {
    /// One Binance request: method, target, headers, body, and whether it
    /// goes to a route that changes the engine when accepted.
    fn binance(&mut self) -> (String, String, Vec<(String, String)>, Vec<u8>, bool) {
        let route = &self.routes[self.rng.random_range(0..self.routes.len())];
        let (method, path) = (route.method.clone(), route.path.clone());
        let path = path.replace("{*streams}", "ethusdt@trade");
        let mut params: Vec<(String, String)> = Vec::new();
        for name in &route.names {
            if ["timestamp", "recvWindow", "signature"].contains(&name.as_str()) {
                continue;
            }
            if let Some(value) = valid_value(name, &mut self.rng)
                && self.rng.random_bool(0.85)
            {
                params.push((name.clone(), value));
            }
        }
        for _ in 0..self.rng.random_range(0..=3) {
            match self.rng.random_range(0..6) {
                0 | 1 if !route.names.is_empty() => {
                    let name = route.names.choose(&mut self.rng).unwrap().clone();
                    let value = hostile_value(&mut self.rng, &self.hostile);
                    params.retain(|(n, _)| *n != name);
                    params.push((name, value));
                }
                2 if !params.is_empty() => {
                    let at = self.rng.random_range(0..params.len());
                    params.remove(at);
                }
                3 if !params.is_empty() => {
                    let again = params.choose(&mut self.rng).unwrap().clone();
                    params.push(again);
                }
                4 => params.push((
                    ["junk", "%C3%A9", "", "symbol%00", "a%3Db"]
                        .choose(&mut self.rng)
                        .unwrap()
                        .to_string(),
                    "1".into(),
                )),
                _ => {}
            }
        }
        let mut query: Vec<String> = params.iter().map(|(n, v)| format!("{n}={v}")).collect();
        let mut headers: Vec<(String, String)> = Vec::new();
        if route.signed {
            let key = match self.rng.random_range(0..10) {
                0..=5 => &self.keys.trader,
                6 | 7 => &self.keys.reader,
                _ => &self.keys.withdrawer,
            };
            let timestamp = match self.rng.random_range(0..20) {
                0 => now_ms() - 600_000,
                1 => now_ms() + 10_000,
                _ => now_ms(),
            };
            if self.rng.random_range(0..20) != 0 {
                query.push(format!("timestamp={timestamp}"));
            }
            let payload = query.join("&");
            let mut signature = sign_hmac_sha256(key.secret.as_bytes(), payload.as_bytes());
            match self.rng.random_range(0..20) {
                0 => signature
                    .replace_range(0..1, if signature.starts_with('a') { "b" } else { "a" }),
                1 => signature.clear(),
                2 => query.push("late=1".into()),
                _ => {}
            }
            if !signature.is_empty() {
                query.push(format!("signature={signature}"));
            }
            match self.rng.random_range(0..20) {
                0 => {}
                1 => headers.push(("X-MBX-APIKEY".into(), "unknown-key".into())),
                _ => headers.push(("X-MBX-APIKEY".into(), key.id.clone())),
            }
        }
        let text = query.join("&");
        let (target, body) = if method != "GET" && self.rng.random_bool(0.4) {
            headers.push((
                "Content-Type".into(),
                "application/x-www-form-urlencoded".into(),
            ));
            (path.clone(), text.into_bytes())
        } else if text.is_empty() {
            (path.clone(), Vec::new())
        } else {
            (format!("{path}?{text}"), Vec::new())
        };
        let body = if self.rng.random_range(0..200) == 0 {
            vec![b'a'; 70_000]
        } else {
            body
        };
        let changes = changes_the_engine(&method, &path);
        (method, target, headers, body, changes)
    }

    /// One WebSocket API frame: its text, the id its answer must carry,
    /// and whether the method changes the engine when accepted.
    fn ws_api(&mut self) -> (String, Value, bool) {
        let junk = [
            ("{", Value::Null),
            ("[]", Value::Null),
            ("null", Value::Null),
            (r#"{"id":{"a":1},"method":"ping"}"#, Value::Null),
            (r#"{"id":"j1"}"#, json!("j1")),
            (r#"{"id":"j2","method":7}"#, json!("j2")),
            (r#"{"id":"j3","method":"ping","params":[1]}"#, json!("j3")),
            (r#"{"id":"j4","method":"order.teleport"}"#, json!("j4")),
            (
                r#"{"id":-5,"method":"session.logout","params":null}"#,
                json!(-5),
            ),
        ];
        if self.rng.random_range(0..10) == 0 {
            let (text, id) = junk.choose(&mut self.rng).unwrap().clone();
            return (text.to_owned(), id, false);
        }
        let method = &self.ws_methods[self.rng.random_range(0..self.ws_methods.len())];
        let (name, signed, changes) = (method.name.clone(), method.signed, method.changes);
        let mut params = serde_json::Map::new();
        for param in &method.names {
            if ["timestamp", "recvWindow", "signature"].contains(&param.as_str()) {
                continue;
            }
            if let Some(value) = valid_value(param, &mut self.rng)
                && self.rng.random_bool(0.85)
            {
                // The HTTP form's encoding is the query's, not the socket's.
                let value = value.replace("%5B%22ETHUSDT%22%5D", r#"["ETHUSDT"]"#);
                let value = match value.parse::<u64>() {
                    Ok(number) if self.rng.random_bool(0.5) => json!(number),
                    _ => json!(value),
                };
                params.insert(param.clone(), value);
            }
        }
        for _ in 0..self.rng.random_range(0..=3) {
            let value = match self.rng.random_range(0..8) {
                0 => Value::Null,
                1 => json!([1, "a", null]),
                2 => json!({ "nested": true }),
                3 => json!(-1.5e300),
                _ => json!(hostile_value(&mut self.rng, &self.hostile)),
            };
            let param = if !method.names.is_empty() && self.rng.random_bool(0.7) {
                method.names.choose(&mut self.rng).unwrap().clone()
            } else {
                ["junk", "é", "", "symbol\u{0}", "returnRateLimits"]
                    .choose(&mut self.rng)
                    .unwrap()
                    .to_string()
            };
            params.insert(param, value);
        }
        if signed {
            let key = match self.rng.random_range(0..10) {
                0..=5 => &self.keys.trader,
                6 | 7 => &self.keys.reader,
                _ => &self.keys.withdrawer,
            };
            match self.rng.random_range(0..20) {
                0 => {}
                1 => drop(params.insert("apiKey".into(), json!("unknown-key"))),
                _ => drop(params.insert("apiKey".into(), json!(key.id))),
            }
            let timestamp = match self.rng.random_range(0..20) {
                0 => now_ms() - 600_000,
                1 => now_ms() + 10_000,
                _ => now_ms(),
            };
            if self.rng.random_range(0..20) != 0 {
                params.insert("timestamp".into(), json!(timestamp));
            }
            let payload = common::ws::ws_api_payload(&params);
            let mut signature = sign_hmac_sha256(key.secret.as_bytes(), payload.as_bytes());
            match self.rng.random_range(0..20) {
                0 => signature
                    .replace_range(0..1, if signature.starts_with('a') { "b" } else { "a" }),
                1 => signature.clear(),
                2 => drop(params.insert("late".into(), json!(1))),
                _ => {}
            }
            if !signature.is_empty() {
                params.insert("signature".into(), json!(signature));
            }
        }
        let id = json!(format!("f{}", self.tally.ws_api_requests));
        let frame = json!({ "id": id, "method": name, "params": params });
        (frame.to_string(), id, changes)
    }

    /// One Etherscan request.
    fn etherscan(&mut self) -> (String, String, Vec<(String, String)>, Vec<u8>) {
        let rng = &mut self.rng;
        let mut params: Vec<(String, String)> = Vec::new();
        let module = [
            "account",
            "account",
            "proxy",
            "logs",
            "stats",
            "block",
            "transaction",
            "gastracker",
            "token",
            "contract",
        ]
        .choose(rng)
        .unwrap();
        params.push(("module".into(), module.to_string()));
        let action = [
            "balance",
            "balancemulti",
            "balancehistory",
            "txlist",
            "txlist",
            "txlistinternal",
            "tokentx",
            "tokennfttx",
            "getminedblocks",
            "addresstokennftbalance",
            "addresstokennftinventory",
            "txsBeaconWithdrawal",
            "token1155tx",
            "tokenbalance",
            "addresstokenbalance",
            "getLogs",
            "eth_blockNumber",
            "eth_getBalance",
            "eth_getTransactionByHash",
            "eth_getTransactionReceipt",
            "eth_getBlockByNumber",
            "eth_call",
            "eth_getCode",
            "getblockreward",
            "getblockcountdown",
            "getblocknobytime",
            "getstatus",
            "gettxreceiptstatus",
            "gasoracle",
            "gasestimate",
            "ethsupply",
            "ethprice",
            "nodecount",
            "tokensupply",
            "tokensupplyhistory",
            "tokeninfo",
            "tokenholderlist",
            "tokenholdercount",
            "getabi",
            "getsourcecode",
            "getcontractcreation",
        ]
        .choose(rng)
        .unwrap();
        params.push(("action".into(), action.to_string()));
        let address = match rng.random_range(0..6) {
            0 => "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266".to_string(),
            1 => vec!["0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"; rng.random_range(1..25)]
                .join(","),
            2 => hostile_value(rng, &self.hostile),
            _ => "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266".to_string(),
        };
        params.push(("address".into(), address));
        if rng.random_bool(0.5) {
            let tag = [
                "latest",
                "earliest",
                "pending",
                "0x1",
                "3",
                "0xffffffffffffffffff",
            ]
            .choose(rng)
            .unwrap()
            .to_string();
            params.push(("tag".into(), tag));
        }
        if rng.random_bool(0.3) {
            params.push(("blockno".into(), rng.random_range(0..100u32).to_string()));
        }
        // The history lists' paging and the proxy's own parameters.
        for (name, values) in [
            ("page", &["1", "2", "0", "10001", "-1"][..]),
            (
                "offset",
                &["1", "10", "0", "10000", "99999999999999999999"][..],
            ),
            ("sort", &["asc", "desc", "up"][..]),
            ("startblock", &["0", "2", "99999999"][..]),
            ("endblock", &["1", "99999999", "x"][..]),
            (
                "txhash",
                &[
                    "0x0000000000000000000000000000000000000000000000000000000000000001",
                    "0x12",
                ][..],
            ),
            ("boolean", &["true", "false", "maybe"][..]),
            (
                "fromBlock",
                &["0", "latest", "-5", "99999999999999999999"][..],
            ),
            (
                "topic0",
                &[
                    "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef",
                    "0x12",
                ][..],
            ),
            ("topic0_1_opr", &["and", "or", "nand"][..]),
            (
                "contractaddress",
                &["0x5fbdb2315678afecb367f032d93f642f64180aa3", "0x5f", ""][..],
            ),
            (
                "to",
                &["0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266", "0x1"][..],
            ),
            ("data", &["0x", "0x70a08231", "0xzz"][..]),
            (
                "timestamp",
                &["0", "1700000000", "99999999999999", "-1"][..],
            ),
            ("closest", &["before", "after", "never"][..]),
            ("gasprice", &["1", "2000000000", "0", "1e9"][..]),
            (
                "contractaddresses",
                &[
                    "0x5fbdb2315678afecb367f032d93f642f64180aa3",
                    "0x5fbdb2315678afecb367f032d93f642f64180aa3,0x1",
                    "0x1,0x2,0x3,0x4,0x5,0x6",
                ][..],
            ),
        ] {
            if rng.random_bool(0.15) {
                params.push((name.into(), values.choose(rng).unwrap().to_string()));
            }
        }
        match rng.random_range(0..10) {
            0 => {}
            1 => params.push(("apikey".into(), "unknown".into())),
            _ => params.push(("apikey".into(), self.keys.reader.id.clone())),
        }
        if rng.random_bool(0.2) {
            let at = rng.random_range(0..params.len());
            params[at].1 = hostile_value(rng, &self.hostile);
        }
        let path = if rng.random_bool(0.2) {
            params.push(("chainid".into(), "31337".into()));
            "/v2/api"
        } else {
            "/api"
        };
        let text: Vec<String> = params.iter().map(|(n, v)| format!("{n}={v}")).collect();
        let text = text.join("&");
        if rng.random_bool(0.15) {
            let headers = vec![(
                "Content-Type".to_string(),
                "application/x-www-form-urlencoded".to_string(),
            )];
            ("POST".into(), path.into(), headers, text.into_bytes())
        } else {
            (
                "GET".into(),
                format!("{path}?{text}"),
                Vec::new(),
                Vec::new(),
            )
        }
    }

    /// One CoinGecko request.
    fn coingecko(&mut self) -> (String, String, Vec<(String, String)>, Vec<u8>) {
        let rng = &mut self.rng;
        let id = ["ethereum", "tether", "bitcoin", "%C3%A9", ""]
            .choose(rng)
            .unwrap();
        let path = [
            "/api/v3/simple/price".to_string(),
            "/api/v3/simple/supported_vs_currencies".to_string(),
            "/api/v3/coins/list".to_string(),
            "/api/v3/coins/markets".to_string(),
            format!("/api/v3/coins/{id}/market_chart"),
            format!("/api/v3/coins/{id}/market_chart/range"),
            format!("/api/v3/coins/{id}/ohlc"),
            format!("/api/v3/coins/{id}"),
            format!("/api/v3/coins/{id}/"),
            format!("/api/v3/coins/{id}/tickers"),
            format!("/api/v3/coins/{id}/history"),
            format!("/api/v3/coins/{id}/contract/0xdac17f958d2ee523a2206206994597c13d831ec7"),
            format!("/api/v3/simple/token_price/{id}"),
            "/api/v3/exchanges".to_string(),
            format!("/api/v3/exchanges/{id}"),
            "/api/v3/exchanges/weiport/tickers".to_string(),
            "/api/v3/search".to_string(),
            "/api/v3/global".to_string(),
        ]
        .choose(rng)
        .unwrap()
        .clone();
        let mut params = Vec::new();
        for (name, good) in [
            ("ids", "ethereum,tether"),
            ("vs_currencies", "usd,eth"),
            ("vs_currency", "usd"),
            ("include_market_cap", "true"),
            ("include_24hr_vol", "true"),
            ("include_24hr_change", "true"),
            ("include_last_updated_at", "true"),
            ("precision", "full"),
            ("days", "1"),
            ("per_page", "10"),
            ("page", "1"),
            ("symbols", "eth,usdt"),
            (
                "contract_addresses",
                "0xdac17f958d2ee523a2206206994597c13d831ec7",
            ),
            ("from", "0"),
            ("to", "99999999999"),
            ("date", "26-11-2026"),
            ("query", "eth"),
            ("coin_ids", "ethereum"),
            ("tickers", "false"),
            ("market_data", "false"),
        ] {
            match rng.random_range(0..6) {
                0 | 1 => params.push(format!("{name}={good}")),
                2 => params.push(format!("{name}={}", hostile_value(rng, &self.hostile))),
                _ => {}
            }
        }
        let mut headers = Vec::new();
        match rng.random_range(0..4) {
            0 => headers.push(("x-cg-demo-api-key".to_string(), "unknown".to_string())),
            1 => headers.push(("x-cg-pro-api-key".to_string(), self.keys.reader.id.clone())),
            _ => {}
        }
        let target = if params.is_empty() {
            path
        } else {
            format!("{path}?{}", params.join("&"))
        };
        ("GET".into(), target, headers, Vec::new())
    }

    /// Junk no API describes.
    fn raw(&mut self) -> (String, String, Vec<(String, String)>, Vec<u8>) {
        let rng = &mut self.rng;
        let method = ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "BREW"]
            .choose(rng)
            .unwrap()
            .to_string();
        let path = [
            "/".to_string(),
            "/api/v3".to_string(),
            "/api/v3/../../etc/passwd".to_string(),
            "/%ZZ".to_string(),
            format!("/api/v3/{}", "a".repeat(rng.random_range(1..3000))),
            "/sapi/v1/capital/withdraw/apply".to_string(),
            "/admin/accounts".to_string(),
            "/api?module=account".to_string(),
        ]
        .choose(rng)
        .unwrap()
        .clone();
        let mut headers = Vec::new();
        match rng.random_range(0..5) {
            0 => headers.push((
                "X-Junk".to_string(),
                "x".repeat(rng.random_range(1..20_000)),
            )),
            1 => headers.push(("Content-Type".to_string(), "application/json".to_string())),
            2 => headers.push(("X-MBX-APIKEY".to_string(), "%00".to_string())),
            _ => {}
        }
        let body: Vec<u8> = (0..rng.random_range(0..200))
            .map(|_| rng.random())
            .collect();
        (method, path, headers, body)
    }

    /// A WebSocket session sending junk control frames as fast as it can.
    async fn websocket(&mut self, url: &str) {
        let frames = [
            "{",
            "[]",
            "null",
            r#"{"method":"SUBSCRIBE","params":["ethusdt@trade"],"id":1}"#,
            r#"{"method":"SUBSCRIBE","params":[123],"id":"x"}"#,
            r#"{"method":"UNSUBSCRIBE","params":"ethusdt@trade","id":2}"#,
            r#"{"method":"LIST_SUBSCRIPTIONS","id":null}"#,
            r#"{"method":"SET_PROPERTY","params":["combined","yes"],"id":3}"#,
            r#"{"method":"GET_PROPERTY","params":["nothing"],"id":4}"#,
            r#"{"method":"SUBSCRIBE","params":["%C3%A9@trade"],"id":18446744073709551616}"#,
        ];
        let path = [
            "/ws",
            "/ws/ethusdt@depth",
            "/stream?streams=ethusdt@trade/junk",
        ]
        .choose(&mut self.rng)
        .unwrap();
        let ws_url = format!("{}{path}", url.replacen("http://", "ws://", 1));
        let Ok((mut socket, _)) = tokio_tungstenite::connect_async(ws_url).await else {
            self.tally
                .fail(format!("websocket {path}: could not connect"));
            return;
        };
        self.tally.ws_sessions += 1;
        use tokio_tungstenite::tungstenite::Message;
        for _ in 0..self.rng.random_range(1..8) {
            let message = if self.rng.random_range(0..10) == 0 {
                Message::Binary(vec![0xff; self.rng.random_range(1..4096)].into())
            } else {
                let text = frames.choose(&mut self.rng).unwrap();
                Message::Text((*text).into())
            };
            if socket.send(message).await.is_err() {
                break;
            }
            self.tally.ws_frames += 1;
        }
        // Read whatever comes until the server goes quiet or closes.
        while let Ok(Some(Ok(_))) =
            tokio::time::timeout(Duration::from_millis(150), socket.next()).await
        {}
        let _ = socket.close(None).await;
    }
}

/// The refusal shape each face must use.
fn check(face: &str, target: &str, answer: &Answer, tally: &mut Tally) {
    let what = || {
        format!(
            "{face} {}: {}",
            &target[..target.len().min(120)],
            answer.status
        )
    };
    if answer.status >= 500 {
        tally.fail(format!(
            "{}: {}",
            what(),
            String::from_utf8_lossy(&answer.body)
        ));
        return;
    }
    if answer.status == 200 && face != "etherscan" {
        return;
    }
    let Ok(body) = serde_json::from_slice::<Value>(&answer.body) else {
        if face != "raw" && !answer.body.is_empty() {
            tally.fail(format!("{}: not JSON", what()));
        }
        return;
    };
    let shaped = match face {
        "binance" => body["code"].is_i64() && body["msg"].is_string(),
        "etherscan" => {
            (answer.status == 200 && body["status"] != "0")
                || (body["message"] == "NOTOK" && body["result"].is_string())
                // Not errors to Etherscan: an empty page, a page beyond the window.
                || (answer.status == 200
                    && body["status"] == "0"
                    && (((body["message"] == "No transactions found"
                        || body["message"] == "No records found")
                        && body["result"] == json!([]))
                        || (body["message"]
                            .as_str()
                            .is_some_and(|m| m.starts_with("Result window is too large"))
                            && body["result"].is_null())
                        // Etherscan's answer for, e.g., the creation of an
                        // address no contract was created at.
                        || (body["message"] == "No data found" && body["result"].is_null())))
                || (body["jsonrpc"] == "2.0"
                    && (body.get("result").is_some() || body["error"]["message"].is_string()))
        }
        "coingecko" => body["error"].is_string() || body["status"]["error_code"].is_u64(),
        _ => true,
    };
    if !shaped {
        tally.fail(format!("{}: {body}", what()));
    }
}

/// A WebSocket API answer must be Binance's frame: the request's id, an
/// HTTP-like status under 500, and a result or a `{code, msg}` error.
fn check_ws(frame: &str, answer: &Value, id: &Value, tally: &mut Tally) -> u16 {
    let status = answer["status"].as_u64().unwrap_or(0) as u16;
    let shaped = answer["id"] == *id
        && (200..500).contains(&status)
        && if status == 200 {
            answer.get("result").is_some() && answer.get("error").is_none()
        } else {
            answer["error"]["code"].is_i64() && answer["error"]["msg"].is_string()
        };
    if !shaped {
        tally.fail(format!(
            "ws api {}: {answer}",
            &frame[..frame.len().min(160)]
        ));
    }
    status
}

/// Every account's balances and open orders as the server shows them.
async fn state(weiport: &Weiport, keys: &[&Key]) -> Vec<Value> {
    let mut out = Vec::new();
    for key in keys {
        for (path, params) in [
            ("/api/v3/account", "omitZeroBalances=false"),
            ("/api/v3/openOrders", ""),
        ] {
            let (status, mut answer) = weiport
                .signed(reqwest::Method::GET, path, key, params)
                .await;
            assert_eq!(status, 200, "{answer}");
            if let Some(object) = answer.as_object_mut() {
                object.remove("updateTime");
            }
            out.push(answer);
        }
    }
    out
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The commands in the log: all of them, and those the wallet logged when
/// it signed an accepted withdrawal (not a request's own).
fn log_length(dir: &std::path::Path) -> (usize, usize) {
    let store = Store::open(dir, &StoreOptions::default()).unwrap();
    let (mut all, mut signed) = (0, 0);
    for command in store.commands() {
        let (_, command) = command.expect("the log reads back");
        all += 1;
        if matches!(
            command,
            weiport_storage::CommandRecord::WithdrawalSigned { .. }
        ) {
            signed += 1;
        }
    }
    (all, signed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seeded_hostile_requests_never_panic_answer_5xx_or_change_state() {
    let requests = env_number("FUZZ_REQUESTS", 2_000);
    let seeds = std::env::var("FUZZ_SEEDS").unwrap_or_else(|_| "1,90210".into());
    for seed in seeds.split(',') {
        let seed = seed
            .trim()
            .parse()
            .expect("FUZZ_SEEDS: numbers, comma-separated");
        fuzz(requests, seed).await;
    }
}

/// One seeded run against a server of its own.
async fn fuzz(requests: u64, seed: u64) {
    let anvil = Anvil::start(&[]);
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("WEIPORT_NODE__URL", anvil.url.as_str()),
        ("WEIPORT_ACCESS__IP_WEIGHT_PER_MINUTE", "1000000000"),
        ("WEIPORT_ACCESS__KEY_WEIGHT_PER_MINUTE", "1000000000"),
        ("WEIPORT_ACCESS__ORDERS_PER_10S", "100000000"),
        ("WEIPORT_ACCESS__ORDERS_PER_DAY", "1000000000"),
        ("WEIPORT_ACCESS__QUERY_TIERS__DEFAULT", "1000000"),
        // Blocks and bans would soon answer every request alike (they have
        // tests of their own); the fuzzer wants the code behind them.
        ("WEIPORT_ACCESS__INVALID_KEYS_PER_30S", "1000000000"),
        ("WEIPORT_ACCESS__BAN_AFTER_REJECTIONS", "1000000000"),
        // Withdrawals the fuzzer gets through stay pending: none settles behind its back.
        ("WEIPORT_EXCHANGE__DEPOSIT_CONFIRMATIONS", "1000000000"),
    ];
    let mut weiport = Weiport::serve(dir.path(), &env);
    // Fuzz the server at work, not one still catching up (that answers 503).
    weiport.wait_indexed(0).await;
    let funds = [("USDT", "1000000"), ("ETH", "1000")];
    let trader = weiport.funded_key(&["read", "trade"], &funds).await;
    let reader = weiport.funded_key(&["read"], &[]).await;
    let withdrawer = weiport
        .key(json!({ "permissions": ["read", "withdraw"], "allowed_ips": ["127.0.0.1"] }))
        .await;
    weiport
        .admin(
            reqwest::Method::POST,
            &format!("/admin/accounts/{}/credit", withdrawer.account),
            json!({ "asset": "ETH", "amount": "100" }),
        )
        .await;
    let document = weiport.openapi().await;
    let mut routes = Vec::new();
    for (path, methods) in document["paths"].as_object().unwrap() {
        // WebSocket routes get sessions of their own below.
        if path.starts_with("/ws") || path == "/stream" {
            continue;
        }
        for (method, operation) in methods.as_object().unwrap() {
            routes.push(Route {
                method: method.to_uppercase(),
                path: path.clone(),
                signed: !operation["security"].as_array().unwrap().is_empty(),
                names: operation["parameters"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| p["name"].as_str().unwrap().to_owned())
                    .collect(),
            });
        }
    }
    let changes = |same_as: &Value| {
        let (method, path) = same_as.as_str().unwrap_or(" ").split_once(' ').unwrap();
        changes_the_engine(method, path)
    };
    let ws_methods = document["x-ws-api"]["methods"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, method)| WsMethod {
            name: name.clone(),
            signed: method["security"]
                .as_array()
                .unwrap()
                .iter()
                .any(|s| s.get("signature").is_some()),
            names: method["params"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p.as_str().unwrap().to_owned())
                .collect(),
            changes: changes(&method["sameAs"]),
        })
        .collect();
    let mut fuzzer = Fuzzer {
        rng: StdRng::seed_from_u64(seed),
        routes,
        ws_methods,
        hostile: hostile_values(),
        keys: Keys {
            trader,
            reader,
            withdrawer,
        },
        tally: Tally::default(),
    };

    let started = Instant::now();
    let mut connection = Connection::open(&weiport.url).await;
    let ws_api_url = format!("{}/ws-api/v3", weiport.url.replacen("http://", "ws://", 1));
    let mut ws_api = tokio_tungstenite::connect_async(&ws_api_url)
        .await
        .unwrap()
        .0;
    while fuzzer.tally.requests < requests {
        let roll = fuzzer.rng.random_range(0..100);
        if roll == 0 && fuzzer.tally.requests.is_multiple_of(4) {
            let url = weiport.url.clone();
            fuzzer.websocket(&url).await;
        }
        if (55..=64).contains(&roll) {
            use tokio_tungstenite::tungstenite::Message;
            let (frame, id, changes) = fuzzer.ws_api();
            fuzzer.tally.requests += 1;
            fuzzer.tally.ws_api_requests += 1;
            ws_api
                .send(Message::Text(frame.clone().into()))
                .await
                .expect("the WebSocket API connection stays open");
            let answer = loop {
                match tokio::time::timeout(Duration::from_secs(10), ws_api.next()).await {
                    Ok(Some(Ok(Message::Text(text)))) => {
                        let answer: Value = serde_json::from_str(&text).unwrap_or_default();
                        // User data events, if a subscription was made.
                        if answer.get("subscriptionId").is_none() {
                            break answer;
                        }
                    }
                    Ok(Some(Ok(_))) => {}
                    other => panic!("ws api {frame}: no answer ({other:?})"),
                }
            };
            let status = check_ws(&frame, &answer, &id, &mut fuzzer.tally);
            *fuzzer.tally.ws_api_by_status.entry(status).or_default() += 1;
            if changes && (status == 200 || status == 409) {
                fuzzer.tally.accepted_changes += 1;
            }
            if status == 200 && answer["result"]["address"].is_string() {
                let address = answer["result"]["address"].as_str().unwrap().to_owned();
                fuzzer.tally.deposit_addresses.insert(address);
            }
            continue;
        }
        let (face, (method, target, headers, body), changes) = match roll {
            0..=64 => {
                let (m, t, h, b, c) = fuzzer.binance();
                ("binance", (m, t, h, b), c)
            }
            65..=82 => ("etherscan", fuzzer.etherscan(), false),
            83..=94 => ("coingecko", fuzzer.coingecko(), false),
            _ => ("raw", fuzzer.raw(), false),
        };
        let header_refs: Vec<(&str, &str)> = headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        fuzzer.tally.requests += 1;
        match connection
            .request(&method, &target, &header_refs, &body)
            .await
        {
            Some(answer) => {
                *fuzzer.tally.by_status.entry(answer.status).or_default() += 1;
                if changes && (answer.status / 100 == 2 || answer.status == 409) {
                    fuzzer.tally.accepted_changes += 1;
                }
                if answer.status == 200 && target.starts_with("/sapi/v1/capital/deposit/address?") {
                    let address = answer.json()["address"].as_str().map(str::to_owned);
                    fuzzer.tally.deposit_addresses.extend(address);
                }
                check(face, &target, &answer, &mut fuzzer.tally);
                let closes = answer
                    .header("connection")
                    .is_some_and(|c| c.eq_ignore_ascii_case("close"));
                if closes {
                    connection = Connection::open(&weiport.url).await;
                }
            }
            None => {
                fuzzer.tally.closed += 1;
                if face == "binance"
                    && headers.iter().all(|(_, v)| v.len() < 8192)
                    && body.len() < 65536
                {
                    fuzzer.tally.fail(format!(
                        "{face} {method} {}: connection closed",
                        &target[..target.len().min(120)]
                    ));
                }
                connection = Connection::open(&weiport.url).await;
            }
        }
    }
    let elapsed = started.elapsed();

    // The state the server holds, then the state its log rebuilds.
    let keys = [
        &fuzzer.keys.trader,
        &fuzzer.keys.reader,
        &fuzzer.keys.withdrawer,
    ];
    let held = state(&weiport, &keys).await;
    let panicked: Vec<String> = weiport
        .drain_log()
        .iter()
        .filter(|line| line.contains("panicked"))
        .cloned()
        .collect();
    weiport
        .stop("TERM", Duration::from_secs(30))
        .expect("stopped");
    let (logged, signed_withdrawals) = log_length(dir.path());
    let weiport = Weiport::serve(dir.path(), &env);
    let rebuilt = state(&weiport, &keys).await;

    let tally = &fuzzer.tally;
    eprintln!(
        "fuzz: seed {seed}, {} requests in {:.1} s ({:.0}/s), statuses {:?}, {} connections closed by the server, {} accepted engine changes, {} commands logged in all, {} WebSocket sessions with {} junk frames, {} WebSocket API requests answered {:?}",
        tally.requests,
        elapsed.as_secs_f64(),
        tally.requests as f64 / elapsed.as_secs_f64(),
        tally.by_status,
        tally.closed,
        tally.accepted_changes,
        logged,
        tally.ws_sessions,
        tally.ws_frames,
        tally.ws_api_requests,
        tally.ws_api_by_status,
    );
    assert!(tally.failures.is_empty(), "{:#?}", tally.failures);
    assert!(panicked.is_empty(), "{panicked:#?}");
    // Three credits funded the accounts; every other command is an accepted
    // request, an account's first deposit address, or the wallet's
    // signature of an accepted withdrawal.
    let assigned = tally.deposit_addresses.len() as u64;
    assert_eq!(
        logged as u64,
        3 + tally.accepted_changes + assigned + signed_withdrawals as u64,
        "commands logged"
    );
    assert_eq!(held, rebuilt, "the state rebuilt from the log");
}
