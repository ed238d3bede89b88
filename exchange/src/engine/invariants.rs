//! What must always hold of the engine, checked after every command in tests,
//! and a canonical snapshot for comparing two engines.

use rustc_hash::FxHashMap;

use super::*;

impl Engine {
    /// A canonical description of the whole state (balances, resting orders
    /// in book order, id counters), for comparing two engines.
    pub fn snapshot(&self) -> Vec<String> {
        let mut lines: Vec<String> = Vec::new();
        for (slot, account) in self.ledger.accounts.iter().enumerate() {
            for (asset, name) in self.catalog.assets() {
                let b = self.ledger.rows[slot * self.ledger.assets + usize::from(asset.0)];
                if !b.free.is_zero() || !b.locked.is_zero() {
                    lines.push(format!("balance {account} {name} {} {}", b.free, b.locked));
                }
            }
        }
        lines.sort();
        for book in &self.books {
            lines.push(format!(
                "book {} next order {} next trade {} next prevented {}",
                book.market.symbol, book.next_order_id, book.next_trade_id, book.next_prevented_id
            ));
            if let Some(last) = book.last_price {
                lines.push(format!("last price {last}"));
            }
            let mut lists: Vec<_> = book.lists.iter().collect();
            lists.sort_by_key(|(id, _)| **id);
            for (id, l) in lists {
                lines.push(format!(
                    "list {id} account {} {:?} working {:?} pair {:?} open {:?} deferred {:?}",
                    l.account, l.contingency, l.working, l.pair, l.open, l.deferred
                ));
            }
            for p in &book.pending {
                lines.push(format!(
                    "waiting #{} account {} locked {} tracking {} extremum {:?} {:?}",
                    p.order_id, p.account, p.locked, p.tracking, p.extremum, p.order
                ));
            }
            for (side, levels) in [("bid", &book.bids), ("ask", &book.asks)] {
                for (price, level) in levels {
                    for slot in book.level_slots(level) {
                        let o = &book.slab[slot as usize];
                        lines.push(format!(
                            "{side} {price} #{} account {} remaining {} executed {} quote {} locked {} {:?} {:?}",
                            o.order_id, o.account, o.remaining, o.executed, o.cumulative_quote, o.locked, o.stp, o.client_order_id
                        ));
                    }
                }
            }
        }
        lines.push(format!("next list {}", self.next_list_id));
        lines.push(format!(
            "last deposits {:?} next withdrawal {}",
            self.chain.last_deposit_ids, self.chain.next_withdrawal_id
        ));
        let mut withdrawals: Vec<_> = self.chain.all.iter().collect();
        withdrawals.sort_by_key(|(id, _)| **id);
        for (id, w) in withdrawals {
            lines.push(format!("withdrawal {id} {w:?}"));
        }
        for (asset, name) in self.catalog.assets() {
            lines.push(format!(
                "supply {name} {}",
                self.ledger.supply[usize::from(asset.0)]
            ));
        }
        lines
    }

    /// Checks the ledger and books: no crossed book, every index agrees with
    /// the resting orders, locked funds equal open orders' reservations, and
    /// per asset the holdings and pending withdrawals equal credits minus
    /// debits.
    pub fn check_invariants(&self) -> Result<(), String> {
        let assets = self.ledger.assets;
        let mut reserved = vec![Amount::ZERO; self.ledger.rows.len()];
        for book in &self.books {
            let symbol = &book.market.symbol;
            if let (Some((bid, _)), Some((ask, _))) =
                (book.bids.last_key_value(), book.asks.first_key_value())
                && bid >= ask
            {
                return Err(format!("{symbol}: book crossed, bid {bid} ≥ ask {ask}"));
            }
            let mut resting = 0usize;
            for side in [Side::Buy, Side::Sell] {
                for (price, level) in book.levels(side) {
                    let (mut orders, mut quantity) = (0u32, Amount::ZERO);
                    for slot in book.level_slots(level) {
                        let o = &book.slab[slot as usize];
                        if o.price != *price || o.side != side {
                            return Err(format!(
                                "{symbol}: order #{} in the wrong level",
                                o.order_id
                            ));
                        }
                        if book.slots.get(o.order_id) != Some(slot) {
                            return Err(format!("{symbol}: order #{} not indexed", o.order_id));
                        }
                        orders += 1;
                        quantity = quantity.saturating_add(o.remaining);
                        let owner = *self
                            .ledger
                            .slots
                            .get(&o.account)
                            .ok_or("an order's owner has no ledger row")?
                            as usize;
                        let cell =
                            &mut reserved[owner * assets + usize::from(book.locked_asset(side).0)];
                        *cell = cell.checked_add(o.locked).ok_or("reservation overflow")?;
                    }
                    if orders == 0 || orders != level.orders || quantity != level.quantity {
                        return Err(format!(
                            "{symbol}: level {price} counts {} orders / {} but holds {orders} / {quantity}",
                            level.orders, level.quantity
                        ));
                    }
                    resting += orders as usize;
                }
            }
            if resting != book.slots.len() {
                return Err(format!("{symbol}: the order index holds stale ids"));
            }
            let mut owned = 0usize;
            for (account, own) in &book.own {
                let slots: Vec<u32> = book.own_slots(*account).collect();
                if slots.len() != own.count as usize
                    || slots
                        .iter()
                        .any(|s| book.slab[*s as usize].account != *account)
                {
                    return Err(format!("{symbol}: account {account}'s order list is wrong"));
                }
                owned += slots.len();
            }
            if owned != resting {
                return Err(format!(
                    "{symbol}: open-order counts disagree with the book"
                ));
            }
            let mut waiting: FxHashMap<AccountId, u32> = FxHashMap::default();
            for (i, pending) in book.pending.iter().enumerate() {
                if i > 0 && book.pending[i - 1].order_id >= pending.order_id {
                    return Err(format!("{symbol}: waiting orders out of order"));
                }
                if !pending.order.order_type.is_conditional() || pending.order.trigger.is_none() {
                    return Err(format!(
                        "{symbol}: order #{} waits without a trigger",
                        pending.order_id
                    ));
                }
                *waiting.entry(pending.account).or_default() += 1;
                let owner = *self
                    .ledger
                    .slots
                    .get(&pending.account)
                    .ok_or("a waiting order's owner has no ledger row")?
                    as usize;
                let asset = book.locked_asset(pending.order.side);
                let cell = &mut reserved[owner * assets + usize::from(asset.0)];
                *cell = cell
                    .checked_add(pending.locked)
                    .ok_or("reservation overflow")?;
            }
            if waiting != book.pending_per_account {
                return Err(format!("{symbol}: waiting-order counts disagree"));
            }
            for (list_id, list) in &book.lists {
                for id in &list.open {
                    let deferred = list.deferred.iter().any(|(d, _)| d == id);
                    let placed = book.slots.get(*id).is_some()
                        || book.pending.iter().any(|p| p.order_id == *id);
                    if deferred == placed || book.list_of.get(id) != Some(list_id) {
                        return Err(format!("{symbol}: list {list_id}'s order #{id} is lost"));
                    }
                }
                if list.open.is_empty() || list.pair.iter().any(|id| !list.open.contains(id)) {
                    return Err(format!("{symbol}: list {list_id} holds ended orders"));
                }
            }
            if book.list_of.len() != book.lists.values().map(|l| l.open.len()).sum::<usize>() {
                return Err(format!(
                    "{symbol}: orders point to lists that do not hold them"
                ));
            }
            let named = book
                .slots
                .iter()
                .filter(|s| book.slab[*s as usize].client_order_id.is_some())
                .count()
                + book
                    .pending
                    .iter()
                    .filter(|p| p.order.client_order_id.is_some())
                    .count()
                + book
                    .lists
                    .values()
                    .flat_map(|l| &l.deferred)
                    .filter(|(_, o)| o.client_order_id.is_some())
                    .count();
            if named != book.client_ids.values().map(FxHashMap::len).sum::<usize>() {
                return Err(format!("{symbol}: client order ids disagree with the book"));
            }
        }
        let mut held = vec![0u128; assets];
        for (slot, account) in self.ledger.accounts.iter().enumerate() {
            for (asset, name) in self.catalog.assets() {
                let i = slot * assets + usize::from(asset.0);
                let balance = self.ledger.rows[i];
                if balance.locked != reserved[i] {
                    return Err(format!(
                        "account {account} {name}: locked {} but orders reserve {}",
                        balance.locked, reserved[i]
                    ));
                }
                held[usize::from(asset.0)] +=
                    u128::from(balance.free.units()) + u128::from(balance.locked.units());
            }
        }
        let mut pending: FxHashMap<AssetId, u128> = FxHashMap::default();
        for w in self.chain.all.values().filter(|w| w.pending) {
            *pending.entry(w.asset).or_default() +=
                u128::from(w.amount.units()) + u128::from(w.fee.units());
        }
        for (asset, name) in self.catalog.assets() {
            let withdrawing = pending.get(&asset).copied().unwrap_or(0);
            if withdrawing != u128::from(self.withdrawals_held(asset).units()) {
                return Err(format!(
                    "{name}: pending withdrawals disagree with their sum"
                ));
            }
            let supply = self.ledger.supply[usize::from(asset.0)];
            let total = held[usize::from(asset.0)] + withdrawing;
            if total != u128::from(supply.units()) {
                return Err(format!(
                    "{name}: ledger holds {total} units, credits − debits = {}",
                    supply.units()
                ));
            }
        }
        Ok(())
    }
}
