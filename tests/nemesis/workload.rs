//! The clients: traders sending a random mix to any process, an operator
//! making accounts and keys, crediting, rotating and revoking, a chain
//! client depositing and withdrawing, and a client spending its weight
//! budget to the end. Every operation is recorded with when it was invoked,
//! when it completed and how it was answered: the history the checker reads.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use alloy_primitives::{Address, U256};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

use crate::common::chain::Chain;
use crate::common::{Key, now_ms, try_signed_request};
use crate::schedule::Fault;

/// How an operation was answered.
#[derive(Debug, Clone)]
pub enum Answer {
    /// An HTTP status and its JSON body (Null where not kept).
    Status(u16, Value),
    /// No answer: the connection failed or the client timed out.
    Nothing,
}

impl Answer {
    /// Acknowledged.
    pub fn ok(&self) -> bool {
        matches!(self, Self::Status(200 | 201, _))
    }

    /// Refused outright: not applied, by the API's promise.
    pub fn refused(&self) -> bool {
        matches!(self, Self::Status(400..=499, _))
    }

    /// The outcome class, for the tally.
    pub fn class(&self) -> &'static str {
        match self {
            Self::Status(200 | 201, _) => "ok",
            Self::Status(429, _) => "429",
            Self::Status(418, _) => "418",
            Self::Status(400..=499, _) => "refused",
            Self::Status(_, _) => "unknown (5xx)",
            Self::Nothing => "unknown (no answer)",
        }
    }

    /// The body, if any.
    pub fn body(&self) -> &Value {
        match self {
            Self::Status(_, body) => body,
            Self::Nothing => &Value::Null,
        }
    }
}

/// What was asked. Every field is in the history a failed run prints,
/// though the checker reads only some.
#[derive(Debug, Clone)]
#[allow(dead_code)]
pub enum What {
    Place {
        trader: usize,
        id: String,
    },
    Cancel {
        trader: usize,
        id: String,
    },
    Replace {
        trader: usize,
        cancel: String,
        id: String,
    },
    /// An amendment, after which the order goes by `new_id`.
    Amend {
        trader: usize,
        id: String,
        new_id: String,
    },
    Read {
        trader: usize,
        path: &'static str,
    },
    /// A one-cancels-the-other order list, its two legs named `legs`.
    PlaceList {
        trader: usize,
        list: String,
        legs: [String; 2],
    },
    CancelList {
        trader: usize,
        list: String,
    },
    NewAccount,
    NewKey {
        account: u64,
    },
    Credit {
        account: u64,
        asset: &'static str,
        amount: String,
    },
    Revoke {
        key: String,
    },
    Rotate {
        key: String,
    },
    /// A request with a revoked key (`revoked`) or a rotated key's new
    /// secret, sent by a probe started at `since_ms`, once the change was
    /// acknowledged.
    KeyProbe {
        key: String,
        process: usize,
        revoked: bool,
        since_ms: u64,
    },
    Deposit {
        trader: usize,
        amount: String,
        tx: String,
    },
    Withdraw {
        trader: usize,
        destination: Address,
        amount: String,
    },
    /// One weight of the budget-spending client.
    Weight {
        process: usize,
    },
    /// A fault: invoked when injected, completed when healed.
    Fault(Fault),
}

impl What {
    /// Its kind, for the tally.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Place { .. } => "place order",
            Self::Cancel { .. } => "cancel order",
            Self::Replace { .. } => "cancel-replace",
            Self::Amend { .. } => "amend order",
            Self::Read { path, .. } => path,
            Self::PlaceList { .. } => "place OCO order list",
            Self::CancelList { .. } => "cancel order list",
            Self::NewAccount => "create account",
            Self::NewKey { .. } => "create key",
            Self::Credit { .. } => "admin credit",
            Self::Revoke { .. } => "revoke key",
            Self::Rotate { .. } => "rotate key",
            Self::KeyProbe { revoked: true, .. } => "use a revoked key",
            Self::KeyProbe { .. } => "use a rotated key",
            Self::Deposit { .. } => "deposit on the chain",
            Self::Withdraw { .. } => "withdraw",
            Self::Weight { .. } => "spend weight",
            Self::Fault(_) => "fault",
        }
    }
}

/// One operation of the history.
#[derive(Debug, Clone)]
pub struct Op {
    pub what: What,
    pub invoked_ms: u64,
    pub completed_ms: u64,
    pub answer: Answer,
}

/// The history, shared by every client.
#[derive(Clone, Default)]
pub struct History(Arc<Mutex<Vec<Op>>>);

impl History {
    pub fn record(&self, what: What, invoked_ms: u64, answer: Answer) {
        self.0.lock().unwrap().push(Op {
            what,
            invoked_ms,
            completed_ms: now_ms(),
            answer,
        });
    }

    pub fn ops(&self) -> Vec<Op> {
        self.0.lock().unwrap().clone()
    }
}

/// A trader: its key and the loopback address it sends from (its own IP,
/// so each client has its own weight budget).
#[derive(Clone)]
pub struct Trader {
    pub key: Key,
    pub ip: IpAddr,
    pub deposit_address: Address,
}

/// A client sending from `ip`, giving up after 10 s.
pub fn client_from(ip: IpAddr) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(ip)
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

/// A client sending from one address, recording what it is answered.
struct Caller {
    history: History,
    client: reqwest::Client,
}

impl Caller {
    fn new(history: &History, ip: IpAddr) -> Self {
        Self {
            history: history.clone(),
            client: client_from(ip),
        }
    }

    /// A signed call, its answer recorded as `what`.
    async fn signed(
        &self,
        url: &str,
        method: reqwest::Method,
        path: &str,
        key: &Key,
        params: &str,
        what: What,
    ) -> Answer {
        let invoked = now_ms();
        let answer = match try_signed_request(&self.client, url, method, path, key, params, 0).await
        {
            Ok((status, body)) => Answer::Status(status, body),
            Err(_) => Answer::Nothing,
        };
        self.history.record(what, invoked, answer.clone());
        answer
    }
}

/// Clients stop when this is set.
pub type Stop = Arc<AtomicBool>;

/// A trader's loop: places, cancels, amends, cancel-replaces and reads at
/// any process, as drawn from `seed`, until `stop`.
pub async fn trade(
    n: usize,
    trader: Trader,
    urls: Vec<String>,
    seed: u64,
    history: History,
    stop: Stop,
) {
    let mut rng = StdRng::seed_from_u64(seed);
    let caller = Caller::new(&history, trader.ip);
    // Orders believed open: client id and quantity in hundredths.
    let mut open: Vec<(String, u32)> = Vec::new();
    let mut lists: Vec<String> = Vec::new();
    let mut sequence = 0u64;
    let mut next_id = |rng: &mut StdRng| {
        sequence += 1;
        format!("n{n}-{sequence}-{}", rng.random_range(0..1_000u32))
    };
    while !stop.load(Ordering::Relaxed) {
        let url = &urls[rng.random_range(0..urls.len())];
        let side = if rng.random_bool(0.5) { "BUY" } else { "SELL" };
        let price = rng.random_range(1_995..=2_005);
        let hundredths = rng.random_range(2..=5u32);
        let order = format!(
            "symbol=ETHUSDT&side={side}&type=LIMIT&timeInForce=GTC&quantity=0.0{hundredths}&price={price}"
        );
        let key = &trader.key;
        let roll = rng.random_range(0..100);
        let pick = |rng: &mut StdRng, open: &mut Vec<(String, u32)>| {
            (!open.is_empty()).then(|| open.swap_remove(rng.random_range(0..open.len())))
        };
        match roll {
            0..50 => {
                let id = next_id(&mut rng);
                let params = format!("{order}&newClientOrderId={id}");
                let what = What::Place {
                    trader: n,
                    id: id.clone(),
                };
                let answer = caller
                    .signed(
                        url,
                        reqwest::Method::POST,
                        "/api/v3/order",
                        key,
                        &params,
                        what,
                    )
                    .await;
                if answer.ok() {
                    open.push((id, hundredths));
                }
            }
            50..65 => {
                if let Some((id, _)) = pick(&mut rng, &mut open) {
                    let params = format!("symbol=ETHUSDT&origClientOrderId={id}");
                    let what = What::Cancel { trader: n, id };
                    caller
                        .signed(
                            url,
                            reqwest::Method::DELETE,
                            "/api/v3/order",
                            key,
                            &params,
                            what,
                        )
                        .await;
                }
            }
            65..75 => {
                if let Some((cancel, _)) = pick(&mut rng, &mut open) {
                    let id = next_id(&mut rng);
                    let params = format!(
                        "{order}&cancelReplaceMode=STOP_ON_FAILURE&cancelOrigClientOrderId={cancel}&newClientOrderId={id}"
                    );
                    let what = What::Replace {
                        trader: n,
                        cancel,
                        id: id.clone(),
                    };
                    let answer = caller
                        .signed(
                            url,
                            reqwest::Method::POST,
                            "/api/v3/order/cancelReplace",
                            key,
                            &params,
                            what,
                        )
                        .await;
                    if answer.ok() {
                        open.push((id, hundredths));
                    }
                }
            }
            75..85 => {
                if let Some((id, quantity)) = pick(&mut rng, &mut open) {
                    let new_id = next_id(&mut rng);
                    let params = format!(
                        "symbol=ETHUSDT&origClientOrderId={id}&newQty=0.01&newClientOrderId={new_id}"
                    );
                    let what = What::Amend {
                        trader: n,
                        id: id.clone(),
                        new_id: new_id.clone(),
                    };
                    let answer = caller
                        .signed(
                            url,
                            reqwest::Method::PUT,
                            "/api/v3/order/amend/keepPriority",
                            key,
                            &params,
                            what,
                        )
                        .await;
                    if answer.ok() {
                        open.push((new_id, 1));
                    } else if quantity > 1 {
                        open.push((id, quantity));
                    }
                }
            }
            85..89 => {
                let list = next_id(&mut rng);
                let legs = [next_id(&mut rng), next_id(&mut rng)];
                // Both legs away from the book: a limit maker above (a
                // sell) or below (a buy), a stop-loss limit on the other side.
                let params = if side == "SELL" {
                    format!(
                        "symbol=ETHUSDT&side=SELL&quantity=0.01&listClientOrderId={list}&aboveType=LIMIT_MAKER&abovePrice=2020&aboveClientOrderId={}&belowType=STOP_LOSS_LIMIT&belowStopPrice=1980&belowPrice=1979&belowTimeInForce=GTC&belowClientOrderId={}",
                        legs[0], legs[1]
                    )
                } else {
                    format!(
                        "symbol=ETHUSDT&side=BUY&quantity=0.01&listClientOrderId={list}&aboveType=STOP_LOSS_LIMIT&aboveStopPrice=2020&abovePrice=2021&aboveTimeInForce=GTC&aboveClientOrderId={}&belowType=LIMIT_MAKER&belowPrice=1980&belowClientOrderId={}",
                        legs[0], legs[1]
                    )
                };
                let what = What::PlaceList {
                    trader: n,
                    list: list.clone(),
                    legs,
                };
                let answer = caller
                    .signed(
                        url,
                        reqwest::Method::POST,
                        "/api/v3/orderList/oco",
                        key,
                        &params,
                        what,
                    )
                    .await;
                if answer.ok() {
                    lists.push(list);
                }
            }
            89..91 => {
                if !lists.is_empty() {
                    let list = lists.swap_remove(rng.random_range(0..lists.len()));
                    let params = format!("symbol=ETHUSDT&listClientOrderId={list}");
                    let what = What::CancelList { trader: n, list };
                    caller
                        .signed(
                            url,
                            reqwest::Method::DELETE,
                            "/api/v3/orderList",
                            key,
                            &params,
                            what,
                        )
                        .await;
                }
            }
            91..96 => {
                let what = What::Read {
                    trader: n,
                    path: "/api/v3/openOrders",
                };
                caller
                    .signed(
                        url,
                        reqwest::Method::GET,
                        "/api/v3/openOrders",
                        key,
                        "symbol=ETHUSDT",
                        what,
                    )
                    .await;
            }
            _ => {
                let what = What::Read {
                    trader: n,
                    path: "/api/v3/account",
                };
                caller
                    .signed(url, reqwest::Method::GET, "/api/v3/account", key, "", what)
                    .await;
            }
        }
        tokio::time::sleep(Duration::from_millis(rng.random_range(50..250))).await;
    }
}

/// An admin call to any process; its answer recorded as `what`.
async fn admin(
    history: &History,
    admins: &[(String, String)],
    rng: &mut StdRng,
    method: reqwest::Method,
    path: &str,
    body: Value,
    what: What,
) -> Answer {
    let (url, token) = &admins[rng.random_range(0..admins.len())];
    let invoked = now_ms();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let answer = match client
        .request(method, format!("{url}{path}"))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
    {
        Ok(response) => {
            let status = response.status().as_u16();
            Answer::Status(status, response.json().await.unwrap_or(Value::Null))
        }
        Err(_) => Answer::Nothing,
    };
    history.record(what, invoked, answer.clone());
    answer
}

/// The operator's loop: new accounts with keys and credits, credits to
/// traders, rotations and revocations (each followed by probes of the
/// key at every process), until `stop`.
pub async fn operate(
    admins: Vec<(String, String)>,
    urls: Vec<String>,
    traders: Vec<Trader>,
    seed: u64,
    history: History,
    stop: Stop,
) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut fresh: Vec<Key> = Vec::new();
    let mut probes = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let roll = rng.random_range(0..100);
        if roll < 40 || fresh.is_empty() {
            let answer = admin(
                &history,
                &admins,
                &mut rng,
                reqwest::Method::POST,
                "/admin/accounts",
                json!({}),
                What::NewAccount,
            )
            .await;
            if let Some(account) = answer.ok().then(|| answer.body()["id"].as_u64()).flatten() {
                let request = json!({"account": account, "permissions": ["read", "trade"]});
                let what = What::NewKey { account };
                let created = admin(
                    &history,
                    &admins,
                    &mut rng,
                    reqwest::Method::POST,
                    "/admin/keys",
                    request,
                    what,
                )
                .await;
                if created.ok() {
                    let body = created.body();
                    fresh.push(Key {
                        id: body["id"].as_str().unwrap_or_default().into(),
                        secret: body["secret"].as_str().unwrap_or_default().into(),
                        account,
                    });
                    let amount = "1000".to_owned();
                    let what = What::Credit {
                        account,
                        asset: "USDT",
                        amount: amount.clone(),
                    };
                    let path = format!("/admin/accounts/{account}/credit");
                    let body = json!({"asset": "USDT", "amount": amount});
                    admin(
                        &history,
                        &admins,
                        &mut rng,
                        reqwest::Method::POST,
                        &path,
                        body,
                        what,
                    )
                    .await;
                }
            }
        } else if roll < 60 {
            let key = fresh.swap_remove(rng.random_range(0..fresh.len()));
            let path = format!("/admin/keys/{}/revoke", key.id);
            let what = What::Revoke {
                key: key.id.clone(),
            };
            let answer = admin(
                &history,
                &admins,
                &mut rng,
                reqwest::Method::POST,
                &path,
                json!({}),
                what,
            )
            .await;
            if answer.ok() {
                let n = (probes.len() % 250) as u8 + 1;
                probes.push(tokio::spawn(probe_key(
                    key,
                    true,
                    urls.clone(),
                    history.clone(),
                    n,
                )));
            }
        } else if roll < 80 {
            let index = rng.random_range(0..fresh.len());
            let path = format!("/admin/keys/{}/rotate", fresh[index].id);
            let what = What::Rotate {
                key: fresh[index].id.clone(),
            };
            let answer = admin(
                &history,
                &admins,
                &mut rng,
                reqwest::Method::POST,
                &path,
                json!({"grace_secs": 0}),
                what,
            )
            .await;
            if answer.ok()
                && let Some(secret) = answer.body()["secret"].as_str()
            {
                fresh[index].secret = secret.into();
                let n = (probes.len() % 250) as u8 + 1;
                probes.push(tokio::spawn(probe_key(
                    fresh[index].clone(),
                    false,
                    urls.clone(),
                    history.clone(),
                    n,
                )));
            }
        } else {
            let trader = &traders[rng.random_range(0..traders.len())];
            let account = trader.key.account;
            let amount = format!("{}", rng.random_range(1..100));
            let what = What::Credit {
                account,
                asset: "USDT",
                amount: amount.clone(),
            };
            let path = format!("/admin/accounts/{account}/credit");
            let body = json!({"asset": "USDT", "amount": amount});
            admin(
                &history,
                &admins,
                &mut rng,
                reqwest::Method::POST,
                &path,
                body,
                what,
            )
            .await;
        }
        tokio::time::sleep(Duration::from_millis(rng.random_range(500..2_000))).await;
    }
    for probe in probes {
        let _ = probe.await;
    }
}

/// Uses `key` at every process every 200 ms for six seconds: a revoked key
/// must be refused everywhere within the bound, a rotated one accepted.
/// Each probe sends from its own address (127.0.1.n), within its budget.
async fn probe_key(key: Key, revoked: bool, urls: Vec<String>, history: History, n: u8) {
    let caller = Caller::new(&history, IpAddr::from([127, 0, 1, n]));
    let since_ms = now_ms();
    for _ in 0..30 {
        for (process, url) in urls.iter().enumerate() {
            let what = What::KeyProbe {
                key: key.id.clone(),
                process,
                revoked,
                since_ms,
            };
            caller
                .signed(
                    url,
                    reqwest::Method::GET,
                    "/api/v3/account",
                    &key,
                    "omitZeroBalances=true",
                    what,
                )
                .await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The chain client: deposits to the traders' addresses and withdrawals
/// from their accounts to fresh addresses, and a block every 300 ms so
/// deposits confirm, until `stop`.
pub async fn bank(
    chain_url: String,
    urls: Vec<String>,
    traders: Vec<Trader>,
    seed: u64,
    history: History,
    stop: Stop,
) {
    let mut rng = StdRng::seed_from_u64(seed);
    let chain = Chain::new(&chain_url);
    let payer = chain.accounts().await[0];
    let mut last_move = now_ms();
    while !stop.load(Ordering::Relaxed) {
        chain.mine().await;
        if now_ms() - last_move > 2_000 {
            last_move = now_ms();
            let n = rng.random_range(0..traders.len());
            let trader = &traders[n];
            if rng.random_bool(0.5) {
                let hundredths = rng.random_range(1..=50u64);
                let wei = U256::from(hundredths) * U256::from(10_000_000_000_000_000u64);
                let invoked = now_ms();
                let tx = chain.transfer(payer, trader.deposit_address, wei).await;
                let what = What::Deposit {
                    trader: n,
                    amount: format!("{}.{:02}", hundredths / 100, hundredths % 100),
                    tx: tx.to_string(),
                };
                history.record(what, invoked, Answer::Status(200, Value::Null));
            } else {
                let destination = Address::from(rng.random::<[u8; 20]>());
                let amount = format!("0.0{}", rng.random_range(1..10));
                let url = &urls[rng.random_range(0..urls.len())];
                let params = format!("coin=ETH&address={destination}&amount={amount}");
                let what = What::Withdraw {
                    trader: n,
                    destination,
                    amount,
                };
                let caller = Caller::new(&history, trader.ip);
                caller
                    .signed(
                        url,
                        reqwest::Method::POST,
                        "/sapi/v1/capital/withdraw/apply",
                        &trader.key,
                        &params,
                        what,
                    )
                    .await;
            }
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

/// The address the budget-spending client sends from.
pub const SPENDER_IP: [u8; 4] = [127, 0, 0, 50];

/// Spends weight (one per request) at every process in turn, about 150
/// a second, past its limit; every answer recorded.
pub async fn spend(urls: Vec<String>, history: History, stop: Stop) {
    let client = client_from(IpAddr::from(SPENDER_IP));
    let mut sent = 0usize;
    while !stop.load(Ordering::Relaxed) {
        let process = sent % urls.len();
        sent += 1;
        let invoked = now_ms();
        let answer = match client
            .get(format!("{}/api/v3/time", urls[process]))
            .send()
            .await
        {
            Ok(response) => Answer::Status(response.status().as_u16(), Value::Null),
            Err(_) => Answer::Nothing,
        };
        history.record(What::Weight { process }, invoked, answer);
        tokio::time::sleep(Duration::from_millis(6)).await;
    }
}
