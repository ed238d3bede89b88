//! The checker: reads the history and the final state of every process and
//! of a fresh replay of the journal, and names every broken promise.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use alloy_primitives::U256;
use serde_json::{Value, json};

use crate::common::chain::Chain;
use crate::common::drill::{self, Told};
use crate::common::{Key, Weiport, signed_request};
use crate::schedule::Fault;
use crate::topology::IP_LIMIT;
use crate::workload::{Op, Trader, What};

/// How long after a revocation (or rotation) was acknowledged every process
/// connected to Redis refuses the old key (or takes the new secret).
pub const KEY_BOUND_MS: u64 = 2_000;
/// How long after a fault that touches Redis is healed the bound above
/// applies again (a cut-off process compares versions every poll).
pub const KEY_RECOVERY_MS: u64 = 3_000;
/// A budget slice: at most 1/16 of the limit.
const SLICE: u32 = IP_LIMIT / 16;

/// What the checker found.
#[derive(Default)]
pub struct Report {
    pub violations: Vec<String>,
    /// Refusals past the budget bounds: a violation in the long form, an
    /// open defect the suite's quick form reports without failing (issue
    /// 57: refusals under the limit around Redis faults).
    pub budget_violations: Vec<String>,
    pub faults: BTreeMap<&'static str, u32>,
    pub operations: BTreeMap<(&'static str, &'static str), u32>,
    pub checked: Vec<String>,
}

impl Report {
    fn violation(&mut self, text: String) {
        if self.violations.len() < 200 {
            self.violations.push(text);
        }
    }

    fn budget_violation(&mut self, text: String) {
        if self.budget_violations.len() < 200 {
            self.budget_violations.push(text);
        }
    }

    /// The tallies and the verdict, one line each.
    pub fn print(&self, seed: u64) {
        println!("nemesis: seed {seed}");
        for (kind, count) in &self.faults {
            println!("nemesis: fault {kind}: {count}");
        }
        let mut by_kind: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for ((kind, class), count) in &self.operations {
            by_kind
                .entry(kind)
                .or_default()
                .push(format!("{class} {count}"));
        }
        for (kind, classes) in by_kind {
            println!("nemesis: operation {kind}: {}", classes.join(", "));
        }
        for check in &self.checked {
            println!("nemesis: checked {check}");
        }
        println!("nemesis: violations {}", self.violations.len());
        for violation in &self.violations {
            println!("nemesis: VIOLATION {violation}");
        }
        println!(
            "nemesis: budget bounds broken {}",
            self.budget_violations.len()
        );
        for violation in &self.budget_violations {
            println!("nemesis: BUDGET {violation}");
        }
    }
}

/// Fixed-point units of 1e-8, as the exchange keeps them.
fn units(text: &str) -> i128 {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let mut fraction = fraction.to_owned();
    fraction.truncate(8);
    while fraction.len() < 8 {
        fraction.push('0');
    }
    let sign = if whole.starts_with('-') { -1 } else { 1 };
    let whole: i128 = whole.trim_start_matches('-').parse().unwrap_or(0);
    sign * (whole * 100_000_000 + fraction.parse::<i128>().unwrap_or(0))
}

/// Intervals (ms) in which a fault touching Redis was in force, with the
/// recovery after each.
fn redis_trouble(ops: &[Op]) -> Vec<(u64, u64)> {
    ops.iter()
        .filter_map(|op| match op.what {
            What::Fault(fault) if fault.touches_redis() => {
                Some((op.invoked_ms, op.completed_ms + KEY_RECOVERY_MS))
            }
            _ => None,
        })
        .collect()
}

/// The end of the bound on a key change acknowledged at `acknowledged`.
fn key_deadline(trouble: &[(u64, u64)], acknowledged: u64) -> u64 {
    let mut deadline = acknowledged + KEY_BOUND_MS;
    // Troubles that begin before the deadline push it to their end.
    let mut moved = true;
    while moved {
        moved = false;
        for &(from, to) in trouble {
            if from <= deadline && to > deadline {
                deadline = to;
                moved = true;
            }
        }
    }
    deadline
}

/// Checks the history alone: tallies, keys, limits.
pub fn check_history(ops: &[Op], report: &mut Report) {
    for op in ops {
        match op.what {
            What::Fault(fault) => *report.faults.entry(fault.kind()).or_default() += 1,
            _ => {
                *report
                    .operations
                    .entry((op.what.kind(), op.answer.class()))
                    .or_default() += 1
            }
        }
    }
    check_keys(ops, report);
    check_refusals(ops, report);
    check_budget(ops, report);
    check_account_ids(ops, report);
}

fn check_keys(ops: &[Op], report: &mut Report) {
    let trouble = redis_trouble(ops);
    // Per key, its revocation or latest rotation acknowledged, and when the
    // next change of it was asked (a rotated secret is judged only until
    // the key changes again).
    let mut changes: BTreeMap<&str, Vec<(u64, u64, bool)>> = BTreeMap::new();
    for op in ops {
        if let What::Revoke { key } | What::Rotate { key } = &op.what {
            let acknowledged = if op.answer.ok() {
                op.completed_ms
            } else {
                u64::MAX
            };
            changes.entry(key).or_default().push((
                op.invoked_ms,
                acknowledged,
                matches!(op.what, What::Revoke { .. }),
            ));
        }
    }
    for list in changes.values_mut() {
        list.sort_unstable();
    }
    let mut probes = 0;
    for op in ops {
        let What::KeyProbe {
            key,
            process,
            revoked,
            since_ms,
        } = &op.what
        else {
            continue;
        };
        probes += 1;
        let list = changes.get(key.as_str()).map_or(&[][..], Vec::as_slice);
        // The change this probe tests: the key's revocation, or the last
        // rotation asked before the probe, if no other change was asked
        // before the probe completed.
        let tested = if *revoked {
            list.iter().find(|(_, _, revocation)| *revocation)
        } else {
            // The rotation whose secret the probe holds: the last one
            // acknowledged before the probe began; judged only if no other
            // change of the key was asked before the probe's answer.
            list.iter().rfind(|c| c.1 <= *since_ms).filter(|tested| {
                !list
                    .iter()
                    .any(|c| c.0 > tested.0 && c.0 <= op.completed_ms)
            })
        };
        let Some(&(_, acknowledged, _)) = tested else {
            continue;
        };
        if acknowledged == u64::MAX || op.invoked_ms <= key_deadline(&trouble, acknowledged) {
            continue;
        }
        let Some(status) = (match &op.answer {
            crate::workload::Answer::Status(status, _) => Some(*status),
            crate::workload::Answer::Nothing => None,
        }) else {
            continue;
        };
        if *revoked && status == 200 {
            report.violation(format!(
                "revoked key {key} accepted by process {process} {} ms after its revocation was acknowledged",
                op.invoked_ms - acknowledged
            ));
        }
        if !*revoked && status == 401 {
            report.violation(format!(
                "rotated key {key}'s new secret refused by process {process} {} ms after the rotation was acknowledged",
                op.invoked_ms - acknowledged
            ));
        }
    }
    report.checked.push(format!(
        "{probes} uses of revoked or rotated keys: refused (or taken) everywhere within {KEY_BOUND_MS} ms of the acknowledgement, {KEY_RECOVERY_MS} ms after a fault touching Redis healed"
    ));
}

/// Nobody far under a limit is refused or banned: every client but the
/// budget spender stays well inside its budget.
fn check_refusals(ops: &[Op], report: &mut Report) {
    let mut answers = 0;
    for op in ops {
        if matches!(op.what, What::Weight { .. } | What::Fault(_)) {
            continue;
        }
        answers += 1;
        if let crate::workload::Answer::Status(status @ (418 | 429), body) = &op.answer {
            report.budget_violation(format!(
                "{} answered {status} to a client far under its limits: {body}",
                op.what.kind()
            ));
        }
    }
    report.checked.push(format!(
        "{answers} answers to clients under their limits: none 429 or 418"
    ));
}

/// The budget spender, window by window: never admitted past the limit
/// plus the bound, never refused below the limit less the bound, never
/// banned before it earned it.
fn check_budget(ops: &[Op], report: &mut Report) {
    let mut windows: BTreeMap<u64, Vec<&Op>> = BTreeMap::new();
    for op in ops {
        if let What::Weight { .. } = op.what {
            windows.entry(op.invoked_ms / 60_000).or_default().push(op);
        }
    }
    let faults: Vec<(Fault, u64, u64)> = ops
        .iter()
        .filter_map(|op| match op.what {
            What::Fault(fault) => Some((fault, op.invoked_ms, op.completed_ms)),
            _ => None,
        })
        .collect();
    let mut checked = 0;
    let mut rejections_before: u32 = 0;
    for (&window, requests) in &windows {
        let (start, end) = (window * 60_000, window * 60_000 + 60_000);
        // A window the spender did not see whole is not judged.
        if requests
            .first()
            .is_none_or(|op| op.invoked_ms > start + 1_000)
            || requests.last().is_none_or(|op| op.invoked_ms < end - 1_000)
        {
            continue;
        }
        let overlapping = |from: u64, to: u64| from < end && to + 5_000 > start;
        let redis = faults
            .iter()
            .any(|(f, from, to)| f.touches_redis() && overlapping(*from, *to));
        let kills = faults
            .iter()
            .filter(|(f, from, to)| f.kills() && overlapping(*from, *to))
            .count() as u32;
        // While Redis is away each process admits its share (limit / 3) on
        // top of what it leased; a process alone refuses past its share.
        let (over_bound, under_bound) = if redis {
            (IP_LIMIT + 3 * SLICE, IP_LIMIT / 2)
        } else {
            ((kills + 1) * SLICE, 2 * SLICE)
        };
        let mut admitted = 0u32;
        let mut first_refusal = None;
        for op in requests {
            match op.answer.class() {
                "ok" => admitted += 1,
                "429" => {
                    rejections_before += 1;
                    first_refusal.get_or_insert(admitted);
                }
                "418" if rejections_before == 0 => report.violation(format!(
                    "the spender was banned in minute {window} without a refusal before"
                )),
                _ => {}
            }
        }
        checked += 1;
        if admitted > IP_LIMIT + over_bound {
            report.budget_violation(format!(
                "minute {window}: {admitted} weight admitted, limit {IP_LIMIT} + bound {over_bound}"
            ));
        }
        if let Some(at) = first_refusal
            && at + under_bound < IP_LIMIT
        {
            report.budget_violation(format!(
                "minute {window}: refused after {at} weight, limit {IP_LIMIT} - bound {under_bound}"
            ));
        }
    }
    report.checked.push(format!(
        "{checked} whole minutes of the weight spender: admitted ≤ limit + (kills + 1) slices and refused only past limit - 2 slices ({IP_LIMIT} a minute, slices of {SLICE}); in minutes with Redis trouble, ≤ 2 × limit + 3 slices and refused only past half the limit"
    ));
}

fn check_account_ids(ops: &[Op], report: &mut Report) {
    let mut seen = BTreeSet::new();
    for op in ops {
        if let What::NewAccount = op.what
            && op.answer.ok()
        {
            let id = op.answer.body()["id"].as_u64().unwrap_or(0);
            if !seen.insert(id) {
                report.violation(format!("account id {id} issued twice"));
            }
        }
    }
    report
        .checked
        .push(format!("{} account ids issued, none twice", seen.len()));
}

/// What the traders were told of their orders, as the drill's audit reads
/// it (each order under the client id its last amendment gave it), and the
/// orders whose id an unanswered amendment may or may not have changed:
/// (trader, the ids it may go by).
pub fn told(ops: &[Op], traders: usize) -> (Told, Vec<(usize, Vec<String>)>) {
    let mut told = Told {
        acknowledged: vec![Vec::new(); traders],
        unanswered: 0,
    };
    let mut renamed: BTreeMap<&str, (&str, bool)> = BTreeMap::new();
    for op in ops {
        if let What::Amend { id, new_id, .. } = &op.what
            && !op.answer.refused()
        {
            renamed.insert(id, (new_id, op.answer.ok()));
        }
    }
    let mut uncertain = Vec::new();
    for op in ops {
        if let What::PlaceList { trader, legs, .. } = &op.what {
            if op.answer.ok() {
                told.acknowledged[*trader].extend(legs.iter().cloned());
            } else {
                told.unanswered += 1;
            }
            continue;
        }
        let (trader, id) = match &op.what {
            What::Place { trader, id } | What::Replace { trader, id, .. } => (*trader, id),
            _ => continue,
        };
        if !op.answer.ok() {
            told.unanswered += 1;
            continue;
        }
        let mut names = vec![id.clone()];
        let mut sure = true;
        while let Some((next, acknowledged)) = renamed.get(names.last().unwrap().as_str()) {
            sure &= *acknowledged;
            names.push((*next).to_owned());
        }
        if sure {
            told.acknowledged[trader].push(names.pop().unwrap());
        } else {
            uncertain.push((trader, names));
        }
    }
    (told, uncertain)
}

/// Every page of a signed list read by `from_field` ids.
async fn pages(
    weiport: &Weiport,
    key: &Key,
    path: &str,
    params: &str,
    cursor: &str,
    id: &str,
) -> Vec<Value> {
    let mut all = Vec::new();
    let mut from = 0u64;
    loop {
        let query = format!("{params}&{cursor}={from}&limit=1000");
        let (status, page) = weiport
            .signed(reqwest::Method::GET, path, key, &query)
            .await;
        assert_eq!(status, 200, "{path}: {page}");
        let page = page.as_array().cloned().unwrap_or_default();
        let Some(last) = page.last() else {
            return all;
        };
        from = last[id].as_u64().unwrap() + 1;
        let full = page.len() == 1000;
        all.extend(page);
        if !full {
            return all;
        }
    }
}

/// Checks the final state against the history: orders, ids, deposits,
/// withdrawals, funds. `processes` are every process and the fresh replay.
pub async fn check_state(
    ops: &[Op],
    processes: &[&Weiport],
    traders: &[Trader],
    chain: &Chain,
    report: &mut Report,
) {
    let keys: Vec<Key> = traders.iter().map(|t| t.key.clone()).collect();
    let (told, uncertain) = told(ops, traders.len());
    let audit = drill::audit(processes, &keys, &told).await;
    for id in &audit.lost {
        report.violation(format!("acknowledged order {id} lost"));
    }
    for id in &audit.doubled {
        report.violation(format!("order {id} applied twice"));
    }
    report.checked.push(format!(
        "{} acknowledged orders in the books once each; {} processes (one a fresh replay of the journal) show the same balances, orders, trades and book",
        told.count(),
        processes.len()
    ));
    let first = processes[0];

    // Refused orders are nowhere; order and trade ids are never reused.
    let mut refused = BTreeSet::new();
    for op in ops {
        if !op.answer.refused() {
            continue;
        }
        match &op.what {
            What::Place { id, .. } | What::Replace { id, .. } => {
                refused.insert(id.clone());
            }
            What::PlaceList { legs, .. } => refused.extend(legs.iter().cloned()),
            _ => {}
        }
    }
    let mut order_ids = BTreeMap::new();
    let mut client_ids: Vec<BTreeSet<String>> = vec![BTreeSet::new(); keys.len()];
    let mut trade_sides: BTreeMap<u64, Vec<bool>> = BTreeMap::new();
    let mut commissions: BTreeMap<String, i128> = BTreeMap::new();
    for (n, key) in keys.iter().enumerate() {
        let orders = pages(
            first,
            key,
            "/api/v3/allOrders",
            "symbol=ETHUSDT",
            "orderId",
            "orderId",
        )
        .await;
        for order in &orders {
            let client_id = order["clientOrderId"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            client_ids[n].insert(client_id.clone());
            if refused.contains(&client_id) {
                report.violation(format!("order {client_id} was refused yet is in the books"));
            }
            let id = order["orderId"].as_u64().unwrap();
            if let Some(other) = order_ids.insert(id, client_id.clone()) {
                report.violation(format!("order id {id} given to {other} and {client_id}"));
            }
        }
        let trades = pages(
            first,
            key,
            "/api/v3/myTrades",
            "symbol=ETHUSDT",
            "fromId",
            "id",
        )
        .await;
        for trade in &trades {
            trade_sides
                .entry(trade["id"].as_u64().unwrap())
                .or_default()
                .push(trade["isBuyer"].as_bool().unwrap());
            *commissions
                .entry(trade["commissionAsset"].as_str().unwrap().to_owned())
                .or_default() += units(trade["commission"].as_str().unwrap());
        }
    }
    for (trader, names) in &uncertain {
        let found = names
            .iter()
            .filter(|id| client_ids[*trader].contains(*id))
            .count();
        if found != 1 {
            report.violation(format!(
                "acknowledged order {names:?} (an amendment unanswered) found {found} times"
            ));
        }
    }
    for (id, sides) in &trade_sides {
        let buyers = sides.iter().filter(|b| **b).count();
        if sides.len() > 2 || buyers > 1 || sides.len() - buyers > 1 {
            report.violation(format!("trade id {id} issued more than once: {sides:?}"));
        }
    }
    report.checked.push(format!(
        "{} orders and {} trades: no refused order in the books, no order or trade id issued twice",
        order_ids.len(),
        trade_sides.len()
    ));

    check_chain(ops, processes, traders, chain, report).await;
    check_funds(ops, first, traders, &commissions, report).await;
}

/// Each deposit credited once; each withdrawal paid once (or, unanswered,
/// at most once), and none paid that was refused.
async fn check_chain(
    ops: &[Op],
    processes: &[&Weiport],
    traders: &[Trader],
    chain: &Chain,
    report: &mut Report,
) {
    let mut deposits: BTreeMap<String, (usize, String)> = BTreeMap::new();
    for op in ops {
        if let What::Deposit { trader, amount, tx } = &op.what {
            deposits.insert(tx.to_lowercase(), (*trader, amount.clone()));
        }
    }
    let clients: Vec<reqwest::Client> = traders
        .iter()
        .map(|t| crate::workload::client_from(t.ip))
        .collect();
    let listed = async |process: &Weiport, n: usize, path: &str| -> Vec<Value> {
        let (status, list) = signed_request(
            &clients[n],
            &process.url,
            reqwest::Method::GET,
            path,
            &traders[n].key,
            "coin=ETH&limit=1000",
            0,
        )
        .await;
        assert_eq!(status, 200, "{list}");
        list.as_array().cloned().unwrap_or_default()
    };
    // A process replaying onto an empty disk indexes the whole chain again
    // before it can list what was deposited: its listings are judged once
    // its index reached the head the others are at.
    // A node that keeps the state of recent blocks only (anvil keeps a few
    // thousand) cannot serve an index started from genesis after a long run:
    // the process says so, and its listings cannot be judged.
    let head = chain.head().await;
    let mut judged = vec![true; processes.len()];
    for (index, process) in processes.iter().enumerate() {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(900);
        loop {
            let ready: Value = match reqwest::get(format!("{}/readyz", process.url)).await {
                Ok(answer) => answer.json().await.unwrap_or_default(),
                Err(_) => Value::Null,
            };
            if ready["indexed"]
                .as_u64()
                .is_some_and(|indexed| indexed >= head)
            {
                break;
            }
            if ready["reason"]
                .as_str()
                .is_some_and(|reason| reason.contains("no state for that block"))
            {
                judged[index] = false;
                report.checked.push(format!(
                    "process {index} could not index the chain from its start (the node keeps no state that old): its deposit listings not judged; its balances are"
                ));
                break;
            }
            if std::time::Instant::now() > deadline {
                report.violation(format!(
                    "process at {} did not index block {head} within 15 minutes: {ready}",
                    process.url
                ));
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        }
    }
    // Deposits take a few blocks to confirm and withdrawals a few to mine.
    let settled = async || {
        for (process, _) in processes.iter().zip(&judged).filter(|(_, judged)| **judged) {
            let mut credited = 0;
            for n in 0..traders.len() {
                credited += listed(process, n, "/sapi/v1/capital/deposit/hisrec")
                    .await
                    .iter()
                    // 6: credited, still on its address; 1: swept.
                    .filter(|d| d["status"] == json!(6) || d["status"] == json!(1))
                    .count();
                let pending = listed(process, n, "/sapi/v1/capital/withdraw/history")
                    .await
                    .iter()
                    .any(|w| w["status"] == json!(4));
                if pending {
                    return false;
                }
            }
            if credited < deposits.len() {
                return false;
            }
        }
        true
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !settled().await && std::time::Instant::now() < deadline {
        chain.mine().await;
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
    for (index, process) in processes.iter().enumerate() {
        if !judged[index] {
            continue;
        }
        let mut seen: BTreeMap<String, u32> = BTreeMap::new();
        for n in 0..traders.len() {
            for deposit in listed(process, n, "/sapi/v1/capital/deposit/hisrec").await {
                let tx = deposit["txId"].as_str().unwrap_or_default().to_lowercase();
                *seen.entry(tx.clone()).or_default() += 1;
                match deposits.get(&tx) {
                    Some((trader, amount))
                        if *trader == n
                            && units(amount)
                                == units(deposit["amount"].as_str().unwrap_or("0")) => {}
                    _ => report.violation(format!(
                        "process {index} lists a deposit {deposit} matching no deposit sent"
                    )),
                }
            }
        }
        for tx in deposits.keys() {
            match seen.get(tx) {
                Some(1) => {}
                Some(n) => {
                    report.violation(format!("process {index} lists deposit {tx} {n} times"))
                }
                None => report.violation(format!("process {index} never lists deposit {tx}")),
            }
        }
    }
    let mut paid = 0;
    for op in ops {
        let What::Withdraw {
            destination,
            amount,
            ..
        } = &op.what
        else {
            continue;
        };
        let balance = chain
            .node
            .balance(*destination, weiport_indexer::StateAt::Latest)
            .await
            .unwrap();
        let expected = U256::from(units(amount) as u128) * U256::from(10_000_000_000u64);
        let ok = if op.answer.ok() {
            balance == expected
        } else if op.answer.refused() {
            balance.is_zero()
        } else {
            balance.is_zero() || balance == expected
        };
        if balance == expected {
            paid += 1;
        }
        if !ok {
            report.violation(format!(
                "withdrawal of {amount} to {destination} answered {}: {balance} wei arrived",
                op.answer.class()
            ));
        }
    }
    report.checked.push(format!(
        "{} deposits credited once each; {paid} withdrawals paid once each, none refused paid, none paid twice",
        deposits.len()
    ));
}

/// Funds are conserved: what every account holds plus the trading fees
/// equals what was credited and deposited less what was withdrawn (with
/// its fee), per asset; credits left unanswered may or may not count.
async fn check_funds(
    ops: &[Op],
    first: &Weiport,
    traders: &[Trader],
    commissions: &BTreeMap<String, i128>,
    report: &mut Report,
) {
    let mut credited: BTreeMap<String, (i128, i128)> = BTreeMap::new();
    for op in ops {
        if let What::Credit { asset, amount, .. } = &op.what {
            let entry = credited.entry((*asset).to_owned()).or_default();
            if op.answer.ok() {
                entry.0 += units(amount);
            } else if !op.answer.refused() {
                entry.1 += units(amount);
            }
        }
    }
    // The traders' starting funds were credited before the history began.
    for asset_and_amount in crate::STARTING_FUNDS {
        let entry = credited.entry(asset_and_amount.0.to_owned()).or_default();
        entry.0 += units(asset_and_amount.1) * traders.len() as i128;
    }
    let mut held: BTreeMap<String, i128> = BTreeMap::new();
    let (status, accounts) = first
        .admin(reqwest::Method::GET, "/admin/accounts", Value::Null)
        .await;
    assert_eq!(status, 200, "{accounts}");
    let mut outflow: BTreeMap<String, i128> = BTreeMap::new();
    let mut inflow: BTreeMap<String, i128> = BTreeMap::new();
    for account in accounts.as_array().unwrap() {
        let id = account["id"].as_u64().unwrap();
        let (status, created) = first
            .admin(
                reqwest::Method::POST,
                "/admin/keys",
                json!({"account": id, "permissions": ["read"]}),
            )
            .await;
        assert_eq!(status, 201, "{created}");
        let reader = Key {
            id: created["id"].as_str().unwrap().into(),
            secret: created["secret"].as_str().unwrap().into(),
            account: id,
        };
        let (status, balances) = first
            .signed(
                reqwest::Method::GET,
                "/api/v3/account",
                &reader,
                "omitZeroBalances=true",
            )
            .await;
        assert_eq!(status, 200, "{balances}");
        for balance in balances["balances"].as_array().unwrap() {
            let asset = balance["asset"].as_str().unwrap().to_owned();
            *held.entry(asset).or_default() += units(balance["free"].as_str().unwrap())
                + units(balance["locked"].as_str().unwrap());
        }
        for (path, flow) in [
            ("/sapi/v1/capital/deposit/hisrec", &mut inflow),
            ("/sapi/v1/capital/withdraw/history", &mut outflow),
        ] {
            let (status, list) = first
                .signed(reqwest::Method::GET, path, &reader, "coin=ETH&limit=1000")
                .await;
            assert_eq!(status, 200, "{list}");
            for row in list.as_array().unwrap() {
                if row["status"] == json!(5) {
                    continue;
                }
                let fee = row["transactionFee"].as_str().map_or(0, units);
                *flow.entry("ETH".into()).or_default() +=
                    units(row["amount"].as_str().unwrap()) + fee;
            }
        }
    }
    let assets: BTreeSet<String> = held
        .keys()
        .chain(credited.keys())
        .chain(commissions.keys())
        .cloned()
        .collect();
    for asset in &assets {
        let holdings =
            held.get(asset).copied().unwrap_or(0) + commissions.get(asset).copied().unwrap_or(0);
        let (sure, unsure) = credited.get(asset).copied().unwrap_or((0, 0));
        let sources = sure + inflow.get(asset).copied().unwrap_or(0)
            - outflow.get(asset).copied().unwrap_or(0);
        let gap = holdings - sources;
        if gap < 0 || gap > unsure {
            report.violation(format!(
                "{asset} not conserved: held plus fees {holdings}, credited and deposited less withdrawn {sources} (unanswered credits {unsure}), in units of 1e-8"
            ));
        }
    }
    report.checked.push(format!(
        "funds conserved in {} assets over {} accounts: held + fees = credits + deposits - withdrawals",
        assets.len(),
        accounts.as_array().unwrap().len()
    ));
}

/// The loopback address trader `n` sends from.
pub fn trader_ip(n: usize) -> IpAddr {
    IpAddr::from([127, 0, 0, 10 + n as u8])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Answer;

    fn op(what: What, invoked_ms: u64, completed_ms: u64, answer: Answer) -> Op {
        Op {
            what,
            invoked_ms,
            completed_ms,
            answer,
        }
    }

    fn ok() -> Answer {
        Answer::Status(200, Value::Null)
    }

    fn probe(at: u64, status: u16) -> Op {
        let what = What::KeyProbe {
            key: "k".into(),
            process: 1,
            revoked: true,
            since_ms: 1_000,
        };
        op(what, at, at + 1, Answer::Status(status, Value::Null))
    }

    fn revoked_at(at: u64) -> Op {
        op(What::Revoke { key: "k".into() }, at - 10, at, ok())
    }

    #[test]
    fn a_revoked_key_taken_past_the_bound_is_a_violation() {
        let mut report = Report::default();
        let ops = [revoked_at(1_000), probe(1_500, 200), probe(3_500, 200)];
        check_history(&ops, &mut report);
        assert_eq!(report.violations.len(), 1, "{:?}", report.violations);

        // Redis away in the meantime: the bound runs from its healing.
        let mut report = Report::default();
        let trouble = op(What::Fault(Fault::RedisLost), 2_000, 4_000, ok());
        let ops = [
            revoked_at(1_000),
            trouble,
            probe(6_500, 200),
            probe(7_500, 200),
        ];
        check_history(&ops, &mut report);
        assert_eq!(report.violations.len(), 1, "{:?}", report.violations);
    }

    #[test]
    fn an_account_id_issued_twice_is_a_violation() {
        let created = |id: u64| {
            op(
                What::NewAccount,
                0,
                1,
                Answer::Status(201, json!({ "id": id })),
            )
        };
        let mut report = Report::default();
        check_history(&[created(7), created(8)], &mut report);
        assert!(report.violations.is_empty());
        check_history(&[created(7), created(7)], &mut report);
        assert_eq!(report.violations.len(), 1);
    }

    #[test]
    fn a_minute_admitted_past_its_bound_is_a_violation() {
        let minute = |admitted: u32, refused: u32| {
            let mut ops = Vec::new();
            let count = admitted + refused;
            for n in 0..count {
                let at = 60_000 + u64::from(n) * 59_000 / u64::from(count) + 500;
                let status = if n < admitted { 200 } else { 429 };
                let what = What::Weight { process: 0 };
                ops.push(op(what, at, at, Answer::Status(status, Value::Null)));
            }
            let mut report = Report::default();
            check_budget(&ops, &mut report);
            report.budget_violations.len()
        };
        assert_eq!(minute(IP_LIMIT, 100), 0);
        assert_eq!(minute(IP_LIMIT + 2 * SLICE, 100), 1, "admitted too much");
        assert_eq!(minute(IP_LIMIT - 3 * SLICE, 100), 1, "refused too soon");
    }

    #[test]
    fn an_amended_order_goes_by_its_new_id() {
        let placed = op(
            What::Place {
                trader: 0,
                id: "a".into(),
            },
            0,
            1,
            ok(),
        );
        let amended = |answer| {
            let what = What::Amend {
                trader: 0,
                id: "a".into(),
                new_id: "b".into(),
            };
            op(what, 2, 3, answer)
        };
        let (sure, uncertain) = told(&[placed.clone(), amended(ok())], 1);
        assert_eq!(sure.acknowledged[0], ["b"]);
        assert!(uncertain.is_empty());
        let (sure, uncertain) = told(&[placed, amended(Answer::Nothing)], 1);
        assert!(sure.acknowledged[0].is_empty());
        assert_eq!(uncertain, [(0, vec!["a".to_owned(), "b".to_owned()])]);
    }
}
