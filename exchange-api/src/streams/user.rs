//! User data events of one committed command, per account, as Binance
//! sends them: `executionReport` for every execution (NEW, each TRADE, the
//! final CANCELED / EXPIRED / TRADE_PREVENTION), `balanceUpdate` for
//! credits and debits, and `outboundAccountPosition` with the changed assets.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use serde_json::{Value, json};
use weiport_exchange::catalog::AssetId;
use weiport_exchange::engine::{AccountId, Event, Execution, ExecutionKind, OrderStatus};
use weiport_exchange::history::{History, OrderView};
use weiport_exchange::order::{Contingency, OrderType};
use weiport_exchange::sequencer::Outcome;
use weiport_exchange::{Amount, Catalog, MarketId};

use crate::wire::{
    cancel_client_id, contingency_name, list_id, side_name, status_name, stp_name, tif_name,
    type_name,
};

/// What the hub remembers between commands to describe the next one.
#[derive(Default)]
pub(super) struct UserState {
    /// Free amount per account and asset, for `balanceUpdate`'s delta.
    pub(super) free: HashMap<(AccountId, AssetId), Amount>,
    /// Execution ids (`I`), one per report.
    pub(super) next_execution: u64,
    /// Order lists placed since the hub started, while any order is open.
    pub(super) lists: HashMap<u64, ListState>,
}

/// What `listStatus` reports of a list.
pub(super) struct ListState {
    account: AccountId,
    market: MarketId,
    contingency: Contingency,
    client_id: String,
    /// Its orders: id, client id, whether still open.
    orders: Vec<(u64, String, bool)>,
}

/// What `listStatus` needs of a list placed before the hub started.
fn stored_list(history: &History, account: AccountId, list_id: u64) -> Option<ListState> {
    let list = history
        .find_order_list(account, Some(list_id), None)
        .ok()??;
    let orders = list
        .order_ids
        .iter()
        .map(|id| {
            let order = history.order(list.market, *id).ok()??;
            Some((
                order.order_id,
                order.client_order_id.clone(),
                order.is_open(),
            ))
        })
        .collect::<Option<Vec<_>>>()?;
    Some(ListState {
        account,
        market: list.market,
        contingency: list.contingency,
        client_id: list.list_client_id,
        orders,
    })
}

/// `listStatus` for each order list whose orders the command changed:
/// EXEC_STARTED / EXECUTING while any is open, then ALL_DONE.
fn list_events(
    catalog: &Catalog,
    history: Option<&History>,
    outcome: &Outcome,
    state: &mut UserState,
    now: u64,
    wanted: &dyn Fn(AccountId) -> bool,
    out: &mut Vec<(AccountId, Value)>,
) {
    let changes = &outcome.changes;
    if let Some(list) = &changes.list {
        let orders = list
            .order_ids
            .iter()
            .filter_map(|id| changes.orders.iter().find(|(o, _)| o.order_id == *id))
            .map(|(o, _)| (o.order_id, o.client_order_id.clone(), true))
            .collect();
        state.lists.insert(
            list.list_id,
            ListState {
                account: list.account,
                market: list.market,
                contingency: list.contingency,
                client_id: list.list_client_id.clone(),
                orders,
            },
        );
    }
    let mut touched: Vec<u64> = Vec::new();
    for (order, _) in &changes.orders {
        let Some(list_id) = order.order_list_id else {
            continue;
        };
        if !state.lists.contains_key(&list_id)
            && let Some(known) = history.and_then(|h| stored_list(h, order.account, list_id))
        {
            // Placed before the hub started: from the history.
            state.lists.insert(list_id, known);
        }
        let Some(list) = state.lists.get_mut(&list_id) else {
            continue;
        };
        if let Some(entry) = list
            .orders
            .iter_mut()
            .find(|(id, ..)| *id == order.order_id)
        {
            entry.2 = order.is_open();
        }
        if !touched.contains(&list_id) {
            touched.push(list_id);
        }
    }
    for list_id in touched {
        let Some(list) = state.lists.get(&list_id) else {
            continue;
        };
        let done = list.orders.iter().all(|(_, _, open)| !open);
        if wanted(list.account) {
            let symbol = catalog.symbol(list.market);
            out.push((
                list.account,
                json!({
                    "e": "listStatus", "E": now, "s": symbol, "g": list_id,
                    "c": contingency_name(list.contingency),
                    "l": if done { "ALL_DONE" } else { "EXEC_STARTED" },
                    "L": if done { "ALL_DONE" } else { "EXECUTING" },
                    "r": "NONE", "C": list.client_id,
                    "T": outcome.time_ms.unwrap_or(now),
                    "O": list.orders.iter()
                        .map(|(id, client, _)| json!({"s": symbol, "i": id, "c": client}))
                        .collect::<Vec<_>>(),
                }),
            ));
        }
        if done {
            state.lists.remove(&list_id);
        }
    }
}

/// Binance's `executionReport` of one `execution` of `order` (the order as
/// the command left it), numbered `execution_id`. A cancel's report names
/// the cancel request of `outcome` in `c` and the order in `C`.
fn execution_report(
    catalog: &Catalog,
    order: &OrderView,
    execution: &Execution,
    execution_id: u64,
    outcome: &Outcome,
    now: u64,
) -> Value {
    let symbol = catalog.symbol(order.market);
    let (name, fill, prevented) = match execution.kind {
        ExecutionKind::New { .. } | ExecutionKind::Triggered => ("NEW", None, None),
        ExecutionKind::Replaced => ("REPLACED", None, None),
        ExecutionKind::Trade(fill) => ("TRADE", Some(fill), None),
        ExecutionKind::Canceled => ("CANCELED", None, None),
        ExecutionKind::Expired => ("EXPIRED", None, None),
        ExecutionKind::Prevented(prevented) => ("TRADE_PREVENTION", None, Some(prevented)),
    };
    // Accepted to wait (for its trigger, or its list's working order): it
    // had no working time then.
    let working_ms = match execution.kind {
        ExecutionKind::New { working: false } => None,
        _ => order.working_ms,
    };
    // A conditional order is on the book only once triggered, and only
    // as a limit order.
    let on_book = working_ms.is_some()
        && order.order_type.working() != OrderType::Market
        && matches!(
            execution.status,
            OrderStatus::New | OrderStatus::PartiallyFilled
        );
    // Made only for a cancel's report: most commands cancel nothing.
    let (client_id, original) = if name == "CANCELED" {
        (
            Cow::Owned(cancel_client_id(outcome)),
            order.client_order_id.as_str(),
        )
    } else {
        (Cow::Borrowed(order.client_order_id.as_str()), "")
    };
    let (last_qty, last_price, last_quote, fee, fee_asset, trade_id, maker) = match fill {
        Some(fill) => (
            fill.quantity,
            fill.price,
            fill.quote_quantity,
            fill.fee,
            json!(catalog.asset(fill.fee_asset)),
            fill.trade_id as i64,
            fill.maker,
        ),
        None => (
            Amount::ZERO,
            Amount::ZERO,
            Amount::ZERO,
            Amount::ZERO,
            Value::Null,
            -1,
            false,
        ),
    };
    let mut event = json!({
        "e": "executionReport", "E": now, "s": symbol,
        "c": client_id, "S": side_name(order.side),
        "o": type_name(order.order_type), "f": tif_name(order.time_in_force),
        "q": order.orig_qty.to_string(), "p": order.price.to_string(),
        "P": order.stop_price.unwrap_or_default().to_string(), "F": "0.00000000", "g": list_id(order), "C": original,
        "x": name, "X": status_name(execution.status), "r": "NONE", "i": order.order_id,
        "l": last_qty.to_string(), "z": execution.executed.to_string(), "L": last_price.to_string(),
        "n": fee.to_string(), "N": fee_asset, "T": execution.time_ms, "t": trade_id,
        "I": execution_id, "w": on_book, "m": maker, "M": false,
        "O": order.time_ms, "Z": execution.cumulative_quote.to_string(), "Y": last_quote.to_string(),
        "Q": order.orig_quote_qty.to_string(),
        "W": working_ms.map_or(-1, |ms| ms as i64),
        "V": stp_name(order.stp),
    });
    if let Some(prevented) = prevented {
        // `A` is this match's quantity: earlier matches are not summed.
        event["v"] = json!(prevented.id);
        event["A"] = json!(prevented.quantity.to_string());
        event["B"] = json!(prevented.quantity.to_string());
        event["U"] = json!(prevented.counter_order_id);
        event["Cs"] = json!(symbol);
    }
    if let Some(delta) = order.trailing_delta {
        event["d"] = json!(delta);
        event["D"] = json!(order.trailing_ms.map_or(-1, |ms| ms as i64));
    }
    event
}

/// The user events `outcome` produced for the accounts `wanted` accepts
/// (those someone follows), in order, with their accounts. `state` follows
/// every account either way.
pub(super) fn user_events(
    catalog: &Catalog,
    history: Option<&History>,
    outcome: &Outcome,
    state: &mut UserState,
    now: u64,
    wanted: &dyn Fn(AccountId) -> bool,
) -> Vec<(AccountId, Value)> {
    let mut out = Vec::new();
    let orders = &outcome.changes.orders;
    if orders.iter().any(|(order, _)| wanted(order.account)) {
        // The engine's executions by order, each order's in the order they
        // happened; reported order by order, as the history lists them.
        let mut executions: HashMap<(MarketId, u64), Vec<&Execution>> = HashMap::new();
        for event in &outcome.events {
            if let Event::Execution(execution) = event {
                executions
                    .entry((execution.market, execution.order_id))
                    .or_default()
                    .push(execution);
            }
        }
        for (order, _) in orders.iter().filter(|(order, _)| wanted(order.account)) {
            let key = (order.market, order.order_id);
            for execution in executions.get(&key).into_iter().flatten() {
                state.next_execution += 1;
                let id = state.next_execution;
                let report = execution_report(catalog, order, execution, id, outcome, now);
                out.push((order.account, report));
            }
        }
    }

    list_events(catalog, history, outcome, state, now, wanted, &mut out);

    let mut positions: BTreeMap<AccountId, BTreeMap<AssetId, (Amount, Amount)>> = BTreeMap::new();
    for event in &outcome.events {
        if let Event::Balance {
            account,
            asset,
            free,
            locked,
        } = event
        {
            if wanted(*account) {
                positions
                    .entry(*account)
                    .or_default()
                    .insert(*asset, (*free, *locked));
            } else {
                // Kept all the same: a balance update's delta, once someone
                // follows the account, starts from here.
                state.free.insert((*account, *asset), *free);
            }
        }
    }
    let time = outcome.time_ms.unwrap_or(now);
    for (account, assets) in positions {
        for (asset, (free, _)) in &assets {
            let before = state
                .free
                .insert((account, *asset), *free)
                .unwrap_or_default();
            // Credits and debits carry no engine time: they are balance updates.
            if outcome.time_ms.is_none() && *free != before {
                let delta = if *free >= before {
                    free.saturating_sub(before).to_string()
                } else {
                    format!("-{}", before.saturating_sub(*free))
                };
                out.push((
                    account,
                    json!({ "e": "balanceUpdate", "E": now, "a": catalog.asset(*asset), "d": delta, "T": now }),
                ));
            }
        }
        let balances: Vec<Value> = assets
            .iter()
            .map(|(asset, (free, locked))| {
                json!({ "a": catalog.asset(*asset), "f": free.to_string(), "l": locked.to_string() })
            })
            .collect();
        out.push((
            account,
            json!({ "e": "outboundAccountPosition", "E": now, "u": time, "B": balances }),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use weiport_exchange::history::Changes;

    fn credit(account: AccountId, asset: AssetId, free: u64) -> Outcome {
        Outcome {
            sequence: 1,
            time_ms: None,
            events: vec![Event::Balance {
                account,
                asset,
                free: Amount::from_units(free),
                locked: Amount::ZERO,
            }],
            changes: Changes::default(),
        }
    }

    #[test]
    fn a_balance_update_counts_from_changes_made_while_nobody_followed() {
        let catalog = Catalog::new(vec![weiport_exchange::market::tests_support::eth_usdt()]);
        let usdt = catalog.asset_id("USDT").expect("USDT");
        let mut state = UserState::default();
        // Account 7 credited up to `free`, with `followed` saying whether anyone follows it.
        let mut credited = |free, followed: bool| {
            user_events(
                &catalog,
                None,
                &credit(7, usdt, free),
                &mut state,
                1,
                &move |_| followed,
            )
        };
        let unfollowed = credited(100, false);
        assert!(unfollowed.is_empty(), "{unfollowed:?}");

        let followed = credited(130, true);
        let update = followed
            .iter()
            .find(|(_, event)| event["e"] == "balanceUpdate")
            .expect("a balance update");
        assert_eq!(update.0, 7);
        assert_eq!(update.1["d"], Amount::from_units(30).to_string());
        assert!(
            followed
                .iter()
                .any(|(_, event)| event["e"] == "outboundAccountPosition")
        );
    }
}
