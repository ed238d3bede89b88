//! The model's order lists (OCO, OTO, OTOCO), their contingencies, and
//! amends.

use super::*;

impl Model {
    /// What an order working set off, from trade `seen` on: list
    /// contingencies until none is left, then the unseen trades shown to
    /// the waiting orders, and again, until nothing more happens.
    pub(super) fn aftermath(
        &mut self,
        market: MarketId,
        mut seen: usize,
        time_ms: u64,
        outcome: &mut Outcome,
    ) {
        loop {
            if self.follow_lists(market, time_ms, outcome) {
                continue;
            }
            if seen == outcome.trades.len() {
                return;
            }
            let from = seen;
            seen = outcome.trades.len();
            self.show_trades(market, from, time_ms, outcome);
        }
    }

    /// Whether order `id` is open.
    pub(super) fn open(&self, market: MarketId, id: u64) -> bool {
        self.books[usize::from(market.0)].holds(id)
    }

    /// Ends open order `id` (on the book or waiting) with `status`.
    pub(super) fn end_open(
        &mut self,
        market: MarketId,
        id: u64,
        status: OrderStatus,
        time_ms: u64,
        outcome: &mut Outcome,
    ) {
        let book = &mut self.books[usize::from(market.0)];
        if let Some(order) = book.take(|o| o.id == id) {
            self.end(market, order, status, time_ms, outcome);
        } else if let Some(at) = book.waiting.iter().position(|w| w.id == id) {
            let waiting = book.waiting.remove(at);
            self.end_waiting(market, waiting, status, time_ms, outcome);
        }
    }

    /// If `id` is one of an OCO pair whose both orders are open, the other
    /// expires.
    pub(super) fn expire_partner(
        &mut self,
        market: MarketId,
        id: u64,
        time_ms: u64,
        outcome: &mut Outcome,
    ) {
        let book = &mut self.books[usize::from(market.0)];
        let Some(list) = book
            .lists
            .iter_mut()
            .find(|l| l.pair.is_some_and(|(x, y)| x == id || y == id))
        else {
            return;
        };
        let (x, y) = list.pair.take().expect("found by it");
        let partner = if x == id { y } else { x };
        self.end_open(market, partner, OrderStatus::Expired, time_ms, outcome);
    }

    /// A state for an order of a list that was never placed.
    pub(super) fn unplaced(
        &self,
        market: MarketId,
        id: u64,
        account: AccountId,
        status: OrderStatus,
        time_ms: u64,
        outcome: &mut Outcome,
    ) {
        outcome.orders.insert(
            (market, id),
            OrderState {
                market,
                order_id: id,
                account,
                status,
                executed: Amount::ZERO,
                cumulative_quote: Amount::ZERO,
                time_ms,
            },
        );
    }

    /// Applies the rules of the market's lists to what has happened so
    /// far; whether anything changed. A pair's order that traded or ended
    /// expires its partner; a working order that ended places its list's
    /// pending orders if it filled, expires them otherwise — lists whose
    /// working orders ended in the order their last fills happened.
    pub(super) fn follow_lists(
        &mut self,
        market: MarketId,
        time_ms: u64,
        outcome: &mut Outcome,
    ) -> bool {
        let book = &self.books[usize::from(market.0)];
        let traded = |id: u64| {
            outcome
                .trades
                .iter()
                .any(|t| t.maker.0 == id || t.taker.0 == id)
        };
        let mut partners = Vec::new();
        let mut ended = Vec::new();
        for list in &book.lists {
            if let Some((x, y)) = list.pair
                && let Some(touched) = [x, y]
                    .into_iter()
                    .find(|id| traded(*id) || !book.holds(*id))
            {
                partners.push(touched);
            }
            if let Some(working) = list.working
                && !book.holds(working)
            {
                let filled = outcome
                    .orders
                    .get(&(market, working))
                    .is_some_and(|o| o.status == OrderStatus::Filled);
                // When it ended: its last trade, a taker's after any maker's there.
                let last = outcome
                    .trades
                    .iter()
                    .rposition(|t| t.maker.0 == working || t.taker.0 == working);
                let as_taker = last.is_some_and(|at| outcome.trades[at].taker.0 == working);
                ended.push(((last, as_taker), list.id, filled));
            }
        }
        let changed = !partners.is_empty() || !ended.is_empty();
        for id in partners {
            self.expire_partner(market, id, time_ms, outcome);
        }
        ended.sort_by_key(|(when, id, _)| (*when, *id));
        for (_, list_id, filled) in ended {
            let book = &mut self.books[usize::from(market.0)];
            let list = book
                .lists
                .iter_mut()
                .find(|l| l.id == list_id)
                .expect("model: a listed list");
            list.working = None;
            let deferred = std::mem::take(&mut list.deferred);
            let account = list.account;
            if filled {
                self.deploy(market, list_id, account, deferred, time_ms, outcome);
            } else {
                for (id, _) in deferred {
                    self.unplaced(market, id, account, OrderStatus::Expired, time_ms, outcome);
                }
            }
        }
        let book = &mut self.books[usize::from(market.0)];
        let lists = std::mem::take(&mut book.lists);
        book.lists = lists
            .into_iter()
            .filter(|l| !l.deferred.is_empty() || l.orders.iter().any(|id| book.holds(*id)))
            .collect();
        changed
    }

    /// Places a list's pending orders once its working order filled.
    pub(super) fn deploy(
        &mut self,
        market: MarketId,
        list_id: u64,
        account: AccountId,
        deferred: Vec<(u64, NewOrder)>,
        time_ms: u64,
        outcome: &mut Outcome,
    ) {
        let ids: Vec<u64> = deferred.iter().map(|(id, _)| *id).collect();
        let orders: Vec<NewOrder> = deferred.into_iter().map(|(_, o)| o).collect();
        outcome.triggered.extend(ids.iter().map(|id| (market, *id)));
        let placed = if orders.len() == 2 {
            let placed = self.place_pair(account, &orders, &ids, time_ms, outcome);
            if placed.is_ok() {
                let book = &mut self.books[usize::from(market.0)];
                if let Some(list) = book.lists.iter_mut().find(|l| l.id == list_id) {
                    list.pair = Some((ids[0], ids[1]));
                }
            }
            placed
        } else if orders[0].order_type.is_conditional() {
            self.wait(
                account,
                &orders[0],
                time_ms,
                (Some(ids[0]), Amount::ZERO),
                outcome,
            )
        } else {
            self.work(account, &orders[0], time_ms, Some(ids[0]), outcome)
        };
        if placed.is_err() {
            for id in ids {
                self.unplaced(market, id, account, OrderStatus::Expired, time_ms, outcome);
            }
        }
    }

    /// An OCO pair under `ids`, all or nothing: the post-only order locks in
    /// full, the other what that does not cover.
    pub(super) fn place_pair(
        &mut self,
        account: AccountId,
        pair: &[NewOrder],
        ids: &[u64],
        time_ms: u64,
        outcome: &mut Outcome,
    ) -> Step<()> {
        let before = (self.clone(), outcome.clone());
        let mut order = [0, 1];
        order.sort_by_key(|i| pair[*i].order_type != OrderType::LimitMaker);
        let mut covered = Amount::ZERO;
        for i in order {
            let leg = &pair[i];
            let placed = if leg.order_type == OrderType::LimitMaker {
                self.work(account, leg, time_ms, Some(ids[i]), outcome)
            } else {
                self.wait(account, leg, time_ms, (Some(ids[i]), covered), outcome)
            };
            if let Err(reject) = placed {
                (*self, *outcome) = before;
                return Err(reject);
            }
            let book = &self.books[usize::from(leg.market.0)];
            let lock = book
                .all()
                .find(|o| o.id == ids[i])
                .map(Resting::lock)
                .or_else(|| book.waiting.iter().find(|w| w.id == ids[i]).map(|w| w.lock))
                .unwrap_or(Amount::ZERO);
            covered = covered.max(lock);
        }
        Ok(())
    }

    /// A new order list: its orders fit its contingency, an OCO pair rests
    /// or waits, an OTO's working order works at once.
    pub(super) fn place_list(
        &mut self,
        account: AccountId,
        list: &NewOrderList,
        time_ms: u64,
        outcome: &mut Outcome,
    ) -> Step<()> {
        let market = self
            .catalog
            .market(list.market)
            .ok_or(Reject::UnknownSymbol)?
            .clone();
        let pair_ok = |pair: &[NewOrder]| {
            pair.len() == 2
                && pair[0].side == pair[1].side
                && pair
                    .iter()
                    .all(|o| o.order_type == OrderType::LimitMaker || o.order_type.is_conditional())
                && pair
                    .iter()
                    .filter(|o| o.order_type == OrderType::LimitMaker)
                    .count()
                    <= 1
        };
        let working_ok = list
            .working
            .as_ref()
            .is_some_and(|w| matches!(w.order_type, OrderType::Limit | OrderType::LimitMaker));
        let shape = match list.contingency {
            Contingency::Oco => list.working.is_none() && pair_ok(&list.pending),
            Contingency::Oto => working_ok && list.pending.len() == 1,
            Contingency::Otoco => working_ok && pair_ok(&list.pending),
        };
        if !shape || list.orders().any(|o| o.market != list.market) {
            return Err(Reject::BadList);
        }
        let names: Vec<&String> = list
            .orders()
            .filter_map(|o| o.client_order_id.as_ref())
            .collect();
        if (1..names.len()).any(|i| names[..i].contains(&names[i])) {
            return Err(Reject::DuplicateClientOrderId);
        }
        if list.working.is_some() {
            for order in &list.pending {
                let conditional = order.order_type.is_conditional();
                let trigger_ok = match order.trigger {
                    Some(t) => {
                        conditional && (t.stop_price.is_some() || t.trailing_delta.is_some())
                    }
                    None => !conditional,
                };
                if !trigger_ok || (conditional && order.quote_quantity.is_some()) {
                    return Err(Reject::BadTrigger);
                }
                if off_grid(order.price, market.tick_size)
                    || off_grid(order.trigger.and_then(|t| t.stop_price), market.tick_size)
                    || off_grid(order.quantity, market.step_size)
                {
                    return Err(Reject::OffGrid);
                }
                if self.books[usize::from(list.market.0)].names(account, &order.client_order_id) {
                    return Err(Reject::DuplicateClientOrderId);
                }
            }
        }
        let book = &mut self.books[usize::from(list.market.0)];
        let ids: Vec<u64> = list.orders().map(|_| book.take_order_id()).collect();
        let seen = outcome.trades.len();
        match &list.working {
            None => self.place_pair(account, &list.pending, &ids, time_ms, outcome)?,
            Some(working) => self.work(account, working, time_ms, Some(ids[0]), outcome)?,
        }
        let pending_ids = &ids[ids.len() - list.pending.len()..];
        let mut entry = ModelList {
            id: self.next_list,
            account,
            working: list.working.as_ref().map(|_| ids[0]),
            deferred: Vec::new(),
            pair: None,
            orders: ids.clone(),
        };
        self.next_list += 1;
        if list.working.is_some() {
            for (id, order) in pending_ids.iter().zip(&list.pending) {
                self.unplaced(
                    list.market,
                    *id,
                    account,
                    OrderStatus::PendingNew,
                    time_ms,
                    outcome,
                );
                entry.deferred.push((*id, order.clone()));
            }
        } else {
            entry.pair = Some((ids[0], ids[1]));
        }
        self.books[usize::from(list.market.0)].lists.push(entry);
        self.aftermath(list.market, seen, time_ms, outcome);
        Ok(())
    }

    /// Cancels every open order of list `list_id` of `account`.
    pub(super) fn cancel_list(
        &mut self,
        account: AccountId,
        market: MarketId,
        list_id: u64,
        time_ms: u64,
        outcome: &mut Outcome,
    ) -> Step<()> {
        let book = self.book(market)?;
        let at = book
            .lists
            .iter()
            .position(|l| l.id == list_id && l.account == account)
            .ok_or(Reject::UnknownOrder)?;
        let list = book.lists.remove(at);
        for id in list.orders {
            if list.deferred.iter().any(|(d, _)| *d == id) {
                self.unplaced(market, id, account, OrderStatus::Canceled, time_ms, outcome);
            } else if self.open(market, id) {
                self.end_open(market, id, OrderStatus::Canceled, time_ms, outcome);
            }
        }
        Ok(())
    }

    /// The list of `market` that order `id` belongs to, while it is open.
    pub(super) fn list_holding(&self, market: MarketId, id: u64) -> Option<u64> {
        self.books
            .get(usize::from(market.0))?
            .lists
            .iter()
            .find(|l| {
                l.orders.contains(&id)
                    && (l.deferred.iter().any(|(d, _)| *d == id) || self.open(market, id))
            })
            .map(|l| l.id)
    }

    /// An amend: only down; a pair's orders not at all; the name free of
    /// the account's other open orders. Down to what is filled, the order is
    /// complete; otherwise it keeps its place with less, and locks less.
    pub(super) fn amend(
        &mut self,
        account: AccountId,
        market: MarketId,
        (id, name): (u64, &Option<String>),
        quantity: Amount,
        time_ms: u64,
        outcome: &mut Outcome,
    ) -> Step<()> {
        let step = self
            .catalog
            .market(market)
            .ok_or(Reject::UnknownSymbol)?
            .step_size;
        if off_grid(Some(quantity), step) {
            return Err(Reject::OffGrid);
        }
        let (base, quote) = self.catalog.pair(market).expect("a known market");
        let book = self.book(market)?;
        if book
            .lists
            .iter()
            .any(|l| l.account == account && l.pair.is_some_and(|(x, y)| x == id || y == id))
        {
            return Err(Reject::BadList);
        }
        let taken_by_another = name.is_some()
            && (book
                .all()
                .any(|o| o.account == account && o.id != id && o.client_id == *name)
                || book.waiting.iter().any(|w| {
                    w.account == account && w.id != id && w.order.client_order_id == *name
                })
                || book
                    .lists
                    .iter()
                    .filter(|l| l.account == account)
                    .flat_map(|l| &l.deferred)
                    .any(|(d, o)| *d != id && o.client_order_id == *name));
        if taken_by_another {
            return Err(Reject::DuplicateClientOrderId);
        }
        let down = |current: Amount| {
            if quantity > current {
                Err(Reject::AmendIncrease)
            } else if quantity == current {
                Err(Reject::AmendNoChange)
            } else {
                Ok(current.checked_sub(quantity).expect("model: less"))
            }
        };
        let rename = |slot: &mut Option<String>| {
            if name.is_some() {
                slot.clone_from(name);
            }
        };
        if let Some(order) = book
            .bids
            .iter_mut()
            .chain(book.asks.iter_mut())
            .find(|o| o.id == id)
        {
            if order.account != account {
                return Err(Reject::UnknownOrder);
            }
            down(sum(order.executed, order.remaining))?;
            outcome.amended.push((id, quantity.max(order.executed)));
            if quantity <= order.executed {
                let order = book.take(|o| o.id == id).expect("model: just found");
                self.end(market, order, OrderStatus::Filled, time_ms, outcome);
                self.aftermath(market, outcome.trades.len(), time_ms, outcome);
                return Ok(());
            }
            let before = order.lock();
            order.remaining = quantity.checked_sub(order.executed).expect("model: above");
            rename(&mut order.client_id);
            let released = before
                .checked_sub(order.lock())
                .expect("model: less locked");
            let status = if order.executed.is_zero() {
                OrderStatus::New
            } else {
                OrderStatus::PartiallyFilled
            };
            let (side, state) = (order.side, order.state(market, status, time_ms));
            outcome.orders.insert((market, id), state);
            let asset = if side == Side::Buy { quote } else { base };
            self.shift(account, asset, released, false);
            return Ok(());
        }
        if let Some(waiting) = book
            .waiting
            .iter_mut()
            .find(|w| w.id == id && w.account == account)
        {
            let current = waiting.order.quantity.ok_or(Reject::UnknownOrder)?;
            let cut = down(current)?;
            let released = match (waiting.order.side, waiting.order.price) {
                (Side::Buy, Some(price)) => mul(price, cut),
                (Side::Buy, None) => Amount::ZERO,
                (Side::Sell, _) => cut,
            };
            waiting.order.quantity = Some(quantity);
            waiting.lock = waiting.lock.checked_sub(released).expect("model: within");
            rename(&mut waiting.order.client_order_id);
            let side = waiting.order.side;
            outcome.amended.push((id, quantity));
            self.unplaced(market, id, account, OrderStatus::New, time_ms, outcome);
            let asset = if side == Side::Buy { quote } else { base };
            self.shift(account, asset, released, false);
            return Ok(());
        }
        let (_, order) = book
            .lists
            .iter_mut()
            .filter(|l| l.account == account)
            .flat_map(|l| l.deferred.iter_mut())
            .find(|(d, _)| *d == id)
            .ok_or(Reject::UnknownOrder)?;
        down(order.quantity.ok_or(Reject::UnknownOrder)?)?;
        order.quantity = Some(quantity);
        rename(&mut order.client_order_id);
        outcome.amended.push((id, quantity));
        self.unplaced(
            market,
            id,
            account,
            OrderStatus::PendingNew,
            time_ms,
            outcome,
        );
        Ok(())
    }
}
