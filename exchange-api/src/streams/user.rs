//! User data events of one committed command, per account, as Binance
//! sends them: `executionReport` for every execution (NEW, each TRADE, the
//! final CANCELED / EXPIRED / TRADE_PREVENTION), `balanceUpdate` for
//! credits and debits, and `outboundAccountPosition` with the changed assets.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Value, json};
use weiport_exchange::catalog::AssetId;
use weiport_exchange::engine::{AccountId, Event, OrderStatus, Trade};
use weiport_exchange::history::{History, OrderView};
use weiport_exchange::order::{Contingency, OrderType, Side};
use weiport_exchange::sequencer::Outcome;
use weiport_exchange::{Amount, Catalog, MarketId};

use crate::wire::{
    contingency_name, list_id, side_name, status_name, stp_name, tif_name, type_name, working_time,
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

/// One fill as one side of it saw it.
struct Fill<'a> {
    trade: &'a Trade,
    maker: bool,
}

impl Fill<'_> {
    /// The fee this side paid and the asset it paid it in (what it received).
    fn fee(&self, base: AssetId, quote: AssetId) -> (Amount, AssetId) {
        let buyer = self.maker == (self.trade.taker_side == Side::Sell);
        let fee = if self.maker {
            self.trade.maker_fee
        } else {
            self.trade.taker_fee
        };
        (fee, if buyer { base } else { quote })
    }
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
    // Each order's fills in this command, in trade order.
    let mut fills: BTreeMap<(MarketId, u64), Vec<Fill>> = BTreeMap::new();
    for trade in &outcome.changes.trades {
        fills
            .entry((trade.market, trade.taker.0))
            .or_default()
            .push(Fill {
                trade,
                maker: false,
            });
        fills
            .entry((trade.market, trade.maker.0))
            .or_default()
            .push(Fill { trade, maker: true });
    }
    // Each order's last prevented match: its id, what the order lost, and
    // the order it would have met.
    let mut prevented: HashMap<(MarketId, u64), (u64, Amount, u64)> = HashMap::new();
    for event in &outcome.events {
        if let Event::Prevented(p) = event {
            prevented.insert((p.market, p.taker.0), (p.id, p.taker_quantity, p.maker.0));
            prevented.insert((p.market, p.maker.0), (p.id, p.maker_quantity, p.taker.0));
        }
    }
    let mut report = |order: &OrderView,
                      execution: &str,
                      status: OrderStatus,
                      fill: Option<(&Fill, Amount, Amount)>| {
        state.next_execution += 1;
        let symbol = catalog.symbol(order.market);
        let Some((base, quote)) = catalog.pair(order.market) else {
            return;
        };
        let (last_qty, last_price, last_quote, fee, fee_asset, trade_id, maker, time) = match &fill
        {
            Some((fill, _, _)) => {
                let (fee, asset) = fill.fee(base, quote);
                let t = fill.trade;
                (
                    t.quantity,
                    t.price,
                    t.quote_quantity,
                    fee,
                    json!(catalog.asset(asset)),
                    t.trade_id as i64,
                    fill.maker,
                    t.time_ms,
                )
            }
            None => (
                Amount::ZERO,
                Amount::ZERO,
                Amount::ZERO,
                Amount::ZERO,
                Value::Null,
                -1,
                false,
                order.update_ms,
            ),
        };
        let (executed, cumulative_quote) = fill
            .as_ref()
            .map_or((order.executed, order.cumulative_quote), |(_, z, zq)| {
                (*z, *zq)
            });
        // A conditional order is on the book only once triggered, and only
        // as a limit order.
        let on_book = order.working_ms.is_some()
            && order.order_type.working() != OrderType::Market
            && matches!(status, OrderStatus::New | OrderStatus::PartiallyFilled);
        let original = if execution == "CANCELED" {
            order.client_order_id.as_str()
        } else {
            ""
        };
        let mut event = json!({
            "e": "executionReport", "E": now, "s": symbol,
            "c": order.client_order_id, "S": side_name(order.side),
            "o": type_name(order.order_type), "f": tif_name(order.time_in_force),
            "q": order.orig_qty.to_string(), "p": order.price.to_string(),
            "P": order.stop_price.unwrap_or_default().to_string(), "F": "0.00000000", "g": list_id(order), "C": original,
            "x": execution, "X": status_name(status), "r": "NONE", "i": order.order_id,
            "l": last_qty.to_string(), "z": executed.to_string(), "L": last_price.to_string(),
            "n": fee.to_string(), "N": fee_asset, "T": time, "t": trade_id,
            "I": state.next_execution, "w": on_book, "m": maker, "M": false,
            "O": order.time_ms, "Z": cumulative_quote.to_string(), "Y": last_quote.to_string(),
            "Q": order.orig_quote_qty.to_string(),
            "W": working_time(order),
            "V": stp_name(order.stp),
        });
        if execution == "TRADE_PREVENTION"
            && let Some((id, quantity, counter)) = prevented.get(&(order.market, order.order_id))
        {
            // `A` is this match's quantity: earlier matches are not summed.
            event["v"] = json!(id);
            event["A"] = json!(quantity.to_string());
            event["B"] = json!(quantity.to_string());
            event["U"] = json!(counter);
            event["Cs"] = json!(symbol);
        }
        if let Some(delta) = order.trailing_delta {
            event["d"] = json!(delta);
            event["D"] = json!(order.trailing_ms.map_or(-1, |ms| ms as i64));
        }
        out.push((order.account, event));
    };
    let triggered: Vec<(MarketId, u64)> = outcome
        .events
        .iter()
        .filter_map(|event| match event {
            Event::Triggered { market, order_id } => Some((*market, *order_id)),
            _ => None,
        })
        .collect();
    let decremented: Vec<(MarketId, u64)> = outcome
        .events
        .iter()
        .filter_map(|event| match event {
            Event::Prevented(p) if p.mode == weiport_exchange::StpMode::Decrement => {
                Some([(p.market, p.taker.0), (p.market, p.maker.0)])
            }
            _ => None,
        })
        .flatten()
        .collect();
    let amended: Vec<(MarketId, u64)> = outcome
        .events
        .iter()
        .filter_map(|event| match event {
            Event::Amended {
                market, order_id, ..
            } => Some((*market, *order_id)),
            _ => None,
        })
        .collect();
    for (order, placed) in &outcome.changes.orders {
        if !wanted(order.account) {
            continue;
        }
        let key = (order.market, order.order_id);
        let own = fills.get(&key).map_or(&[][..], Vec::as_slice);
        let fresh = || {
            let mut fresh = (*order).clone();
            fresh.executed = Amount::ZERO;
            fresh.cumulative_quote = Amount::ZERO;
            fresh
        };
        if *placed {
            let mut placed = fresh();
            placed.update_ms = placed.time_ms;
            // As it was placed: a list's pending order PENDING_NEW, and
            // anything that began working later in this command not yet.
            let pending_new = outcome.events.iter().any(|e| {
                matches!(e, Event::Order(s) if (s.market, s.order_id) == key
                    && s.status == OrderStatus::PendingNew)
            });
            if triggered.contains(&key) {
                placed.working_ms = None;
            }
            let status = if pending_new {
                OrderStatus::PendingNew
            } else {
                OrderStatus::New
            };
            report(&placed, "NEW", status, None);
        }
        if triggered.contains(&key) {
            // Triggered: it is announced again, now working.
            report(&fresh(), "NEW", OrderStatus::New, None);
        }
        if amended.contains(&key) {
            report(order, "REPLACED", order.status, None);
        }
        // DECREMENT took quantity off an order that goes on.
        if order.is_open() && decremented.contains(&key) {
            report(order, "TRADE_PREVENTION", order.status, None);
        }
        // Running totals from what the order had before this command.
        let (done, done_quote) = own.iter().fold((Amount::ZERO, Amount::ZERO), |(q, v), f| {
            (
                q.saturating_add(f.trade.quantity),
                v.saturating_add(f.trade.quote_quantity),
            )
        });
        let mut executed = order.executed.saturating_sub(done);
        let mut cumulative_quote = order.cumulative_quote.saturating_sub(done_quote);
        for (i, fill) in own.iter().enumerate() {
            executed = executed.saturating_add(fill.trade.quantity);
            cumulative_quote = cumulative_quote.saturating_add(fill.trade.quote_quantity);
            let last = i + 1 == own.len();
            let status = if last
                && matches!(
                    order.status,
                    OrderStatus::Filled | OrderStatus::PartiallyFilled
                ) {
                order.status
            } else {
                OrderStatus::PartiallyFilled
            };
            report(
                order,
                "TRADE",
                status,
                Some((fill, executed, cumulative_quote)),
            );
        }
        let ended = match order.status {
            OrderStatus::Canceled => Some("CANCELED"),
            OrderStatus::Expired => Some("EXPIRED"),
            OrderStatus::ExpiredInMatch => Some("TRADE_PREVENTION"),
            OrderStatus::Rejected => Some("REJECTED"),
            OrderStatus::New
            | OrderStatus::PartiallyFilled
            | OrderStatus::Filled
            | OrderStatus::PendingNew => None,
        };
        if let Some(execution) = ended {
            report(order, execution, order.status, None);
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
