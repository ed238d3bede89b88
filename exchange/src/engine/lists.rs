//! Order lists: OCO (one-cancels-the-other), OTO (one-triggers-the-other)
//! and OTOCO. Every order of a list gets its id when the list is placed,
//! working order first. An OCO pair locks once: the order that rests on the
//! book locks in full (settlement draws on it), the other only what that
//! does not already cover; once either order fills, triggers or ends, the
//! other expires. An OTO's pending orders (PENDING_NEW, nothing locked) are
//! placed when its working order fills, and expire if it ends otherwise.
//! Canceling any order of a list cancels the whole list.

use super::*;

/// Whether `order` may be one of an OCO pair: post-only, or conditional.
fn pairable(order: &NewOrder) -> bool {
    order.order_type == OrderType::LimitMaker || order.order_type.is_conditional()
}

/// Refuses a list whose orders do not fit its contingency.
fn check_shape(list: &NewOrderList) -> Result<(), Reject> {
    let working_fits = |working: &Option<NewOrder>| {
        working
            .as_ref()
            .is_some_and(|w| matches!(w.order_type, OrderType::Limit | OrderType::LimitMaker))
    };
    // At most one of a pair rests on the book.
    let pair_fits = |pair: &[NewOrder]| {
        pair.len() == 2
            && pair.iter().all(pairable)
            && pair[0].side == pair[1].side
            && pair
                .iter()
                .filter(|o| o.order_type == OrderType::LimitMaker)
                .count()
                <= 1
    };
    let fits = match list.contingency {
        Contingency::Oco => list.working.is_none() && pair_fits(&list.pending),
        Contingency::Oto => working_fits(&list.working) && list.pending.len() == 1,
        Contingency::Otoco => working_fits(&list.working) && pair_fits(&list.pending),
    };
    if !fits || list.orders().any(|o| o.market != list.market) {
        return Err(Reject::BadList);
    }
    let mut named: Vec<&str> = list
        .orders()
        .filter_map(|o| o.client_order_id.as_deref())
        .collect();
    let count = named.len();
    named.sort_unstable();
    named.dedup();
    if named.len() != count {
        return Err(Reject::DuplicateClientOrderId);
    }
    Ok(())
}

impl Engine {
    /// Places an order list, all of it or nothing: a pair rests or waits;
    /// an OTO's working order works at once (and may fill, placing the rest
    /// within this command).
    pub(crate) fn place_list(
        &mut self,
        account: AccountId,
        list: NewOrderList,
        events: &mut Vec<Event>,
    ) -> Result<(), Reject> {
        let index = usize::from(list.market.0);
        if index >= self.books.len() {
            return Err(Reject::UnknownSymbol);
        }
        check_shape(&list)?;
        let deferred = if list.contingency == Contingency::Oco {
            &[][..]
        } else {
            &list.pending[..]
        };
        for order in deferred {
            self.check_deferred(account, order)?;
        }
        let start = events.len();
        let list_id = self.next_list_id;
        let book = &mut self.books[index];
        let saved = book.next_order_id;
        events.push(Event::ListPlaced {
            market: book.id,
            list_id,
        });
        let ids: Vec<u64> = list
            .orders()
            .map(|_| book.order_id_for(Start::New, events))
            .collect();
        let placed = match &list.working {
            None => self.place_pair(account, &list.pending, &ids, Start::Listed, events),
            Some(working) => self.work(account, working.clone(), Start::Listed(ids[0]), events),
        };
        if let Err(reject) = placed {
            self.books[index].next_order_id = saved;
            return Err(reject);
        }
        self.next_list_id += 1;
        let book = &mut self.books[index];
        let pending_ids = &ids[ids.len() - list.pending.len()..];
        let mut entry = List {
            account,
            contingency: list.contingency,
            working: list.working.as_ref().map(|_| ids[0]),
            deferred: Vec::new(),
            pair: Vec::new(),
            open: ids.clone(),
        };
        if list.working.is_some() {
            for (id, order) in pending_ids.iter().zip(list.pending) {
                if let Some(name) = &order.client_order_id {
                    book.client_ids
                        .entry(account)
                        .or_default()
                        .insert(name.clone(), *id);
                }
                events.push(Event::Order(OrderState {
                    market: book.id,
                    order_id: *id,
                    account,
                    status: OrderStatus::PendingNew,
                    executed: Amount::ZERO,
                    cumulative_quote: Amount::ZERO,
                    time_ms: self.now_ms,
                }));
                let accepted = ExecutionKind::New { working: false };
                let order_id = (book.id, *id, account);
                events.push(unfilled(
                    order_id,
                    accepted,
                    OrderStatus::PendingNew,
                    self.now_ms,
                ));
                entry.deferred.push((*id, order));
            }
        } else {
            entry.pair = ids.clone();
        }
        for id in &ids {
            book.list_of.insert(*id, list_id);
        }
        book.lists.insert(list_id, entry);
        self.set_off(index, start, events);
        Ok(())
    }

    /// What can be checked of an order placed only later: its shape, its
    /// grid, and that its client id is free.
    fn check_deferred(&self, account: AccountId, order: &NewOrder) -> Result<(), Reject> {
        let book = &self.books[usize::from(order.market.0)];
        let conditional = order.order_type.is_conditional();
        let trigger_fits = match order.trigger {
            Some(t) => conditional && (t.stop_price.is_some() || t.trailing_delta.is_some()),
            None => !conditional,
        };
        if !trigger_fits || (conditional && order.quote_quantity.is_some()) {
            return Err(Reject::BadTrigger);
        }
        let stop = order.trigger.and_then(|t| t.stop_price);
        if !book.market.on_grid(&[order.price, stop], order.quantity) {
            return Err(Reject::OffGrid);
        }
        if let Some(id) = &order.client_order_id
            && book.is_client_id_open(account, id)
        {
            return Err(Reject::DuplicateClientOrderId);
        }
        Ok(())
    }

    /// Places an OCO pair under `ids` (announced), post-only orders first so
    /// that they lock in full; all or nothing. `starting` says how each starts:
    /// placed with its list, or by it once its working order filled.
    fn place_pair(
        &mut self,
        account: AccountId,
        pair: &[NewOrder],
        ids: &[u64],
        starting: fn(u64) -> Start,
        events: &mut Vec<Event>,
    ) -> Result<(), Reject> {
        let ids = &ids[ids.len() - 2..];
        let mut order: Vec<usize> = vec![0, 1];
        order.sort_by_key(|i| pair[*i].order_type != OrderType::LimitMaker);
        let mut covered = Amount::ZERO;
        let mut placed: Vec<u64> = Vec::new();
        let start = events.len();
        for i in order {
            let leg = pair[i].clone();
            let market = usize::from(leg.market.0);
            let result = if leg.order_type == OrderType::LimitMaker {
                self.work(account, leg, starting(ids[i]), events)
            } else {
                self.place_conditional(account, leg, starting(ids[i]), covered, events)
            };
            if let Err(reject) = result {
                for id in placed {
                    self.undo(market, id);
                }
                // As if never placed: not even its events remain.
                events.truncate(start);
                return Err(reject);
            }
            covered = covered.max(self.locked_by(market, ids[i]));
            placed.push(ids[i]);
        }
        Ok(())
    }

    /// What the open order `order_id` locks.
    fn locked_by(&self, book_index: usize, order_id: u64) -> Amount {
        let book = &self.books[book_index];
        match book.slots.get(order_id) {
            Some(slot) => book.slab[slot as usize].locked,
            None => book
                .pending
                .iter()
                .find(|p| p.order_id == order_id)
                .map_or(Amount::ZERO, |p| p.locked),
        }
    }

    /// Takes back an order just placed in a refused list: off the book or
    /// the waiting list, its funds unlocked (its events are dropped with
    /// the refusal).
    fn undo(&mut self, book_index: usize, order_id: u64) {
        let book = &mut self.books[book_index];
        let (account, side, locked) = match book.slots.get(order_id) {
            Some(slot) => {
                let (order, _) = book.unlink(slot);
                (order.account, order.side, order.locked)
            }
            None => {
                let at = book
                    .pending
                    .iter()
                    .position(|p| p.order_id == order_id)
                    .expect(BROKEN);
                let pending = book.stop_waiting(at);
                (pending.account, pending.order.side, pending.locked)
            }
        };
        let asset = book.locked_asset(side);
        let slot = self.ledger.slot(account);
        self.ledger.shift(slot, asset, locked, false);
    }

    /// Ends the open order `order_id` (`end`), on the book or waiting.
    pub(crate) fn end_order(
        &mut self,
        book_index: usize,
        order_id: u64,
        end: End,
        events: &mut Vec<Event>,
    ) {
        let book = &self.books[book_index];
        if let Some(slot) = book.slots.get(order_id) {
            self.remove_resting(book_index, slot, end, events);
        } else if let Some(at) = book.pending.iter().position(|p| p.order_id == order_id) {
            self.remove_pending(book_index, at, end, events);
        }
    }

    /// One cancels the other: if `order_id` is one of an open pair, the
    /// other expires.
    pub(crate) fn end_sibling(
        &mut self,
        book_index: usize,
        order_id: u64,
        events: &mut Vec<Event>,
    ) {
        let book = &mut self.books[book_index];
        let Some(list) = book
            .list_of
            .get(&order_id)
            .and_then(|id| book.lists.get_mut(id))
        else {
            return;
        };
        if list.pair.len() != 2 || !list.pair.contains(&order_id) {
            return;
        }
        let sibling = list.pair.iter().copied().find(|id| *id != order_id);
        list.pair.retain(|id| *id == order_id);
        if let Some(sibling) = sibling {
            self.end_order(book_index, sibling, End::Expired, events);
        }
    }

    /// The contingencies of lists whose orders `events[from..to]` touched:
    /// a fill or an end of one of a pair expires the other (all of these
    /// first); then a working order that filled places its list's pending
    /// orders, one that ended otherwise expires them; a list whose orders
    /// have all ended is done.
    pub(crate) fn follow_lists(
        &mut self,
        book_index: usize,
        from: usize,
        to: usize,
        events: &mut Vec<Event>,
    ) {
        let book = &self.books[book_index];
        if book.lists.is_empty() {
            return;
        }
        let market = book.id;
        let mut touched: Vec<(u64, Option<OrderStatus>)> = Vec::new();
        for event in &events[from..to] {
            match event {
                Event::Trade(trade) if trade.market == market => {
                    for id in [trade.maker.0, trade.taker.0] {
                        if book.list_of.contains_key(&id) {
                            touched.push((id, None));
                        }
                    }
                }
                Event::Order(state)
                    if state.market == market && book.list_of.contains_key(&state.order_id) =>
                {
                    touched.push((state.order_id, Some(state.status)));
                }
                _ => {}
            }
        }
        // One cancels the other first, then what the ends of orders set off,
        // each in the order it happened.
        for (order_id, status) in &touched {
            if status.is_none_or(OrderStatus::is_final) {
                self.end_sibling(book_index, *order_id, events);
            }
        }
        for (order_id, status) in touched {
            let Some(status) = status.filter(|s| s.is_final()) else {
                continue;
            };
            let book = &mut self.books[book_index];
            let Some(list_id) = book.list_of.remove(&order_id) else {
                continue;
            };
            let list = book.lists.get_mut(&list_id).expect(BROKEN);
            list.open.retain(|id| *id != order_id);
            list.pair.retain(|id| *id != order_id);
            if list.working == Some(order_id) {
                list.working = None;
                let deferred = std::mem::take(&mut list.deferred);
                let account = list.account;
                for (_, order) in &deferred {
                    if let Some(name) = &order.client_order_id {
                        book.forget_client_id(account, name);
                    }
                }
                if status == OrderStatus::Filled {
                    self.deploy(book_index, list_id, account, deferred, events);
                } else {
                    for (id, _) in deferred {
                        self.pending_state(book_index, id, account, End::Expired, events);
                    }
                }
            }
            let book = &mut self.books[book_index];
            if book.lists.get(&list_id).is_some_and(|l| l.open.is_empty()) {
                book.lists.remove(&list_id);
            }
        }
    }

    /// The end of an order never placed (an OTO's pending order).
    fn pending_state(
        &mut self,
        book_index: usize,
        order_id: u64,
        account: AccountId,
        end: End,
        events: &mut Vec<Event>,
    ) {
        let (market, status) = (self.books[book_index].id, end.status());
        events.push(Event::Order(OrderState {
            market,
            order_id,
            account,
            status,
            executed: Amount::ZERO,
            cumulative_quote: Amount::ZERO,
            time_ms: self.now_ms,
        }));
        if let Some(kind) = end.execution() {
            let id = (market, order_id, account);
            events.push(unfilled(id, kind, status, self.now_ms));
        }
    }

    /// Places a list's pending orders once its working order filled; what
    /// cannot be placed now (funds, limits) expires.
    fn deploy(
        &mut self,
        book_index: usize,
        list_id: u64,
        account: AccountId,
        deferred: Vec<(u64, NewOrder)>,
        events: &mut Vec<Event>,
    ) {
        let ids: Vec<u64> = deferred.iter().map(|(id, _)| *id).collect();
        let orders: Vec<NewOrder> = deferred.into_iter().map(|(_, order)| order).collect();
        let market = self.books[book_index].id;
        for order_id in &ids {
            events.push(Event::Triggered {
                market,
                order_id: *order_id,
            });
            let id = (market, *order_id, account);
            let placed = ExecutionKind::Triggered;
            events.push(unfilled(id, placed, OrderStatus::New, self.now_ms));
        }
        let placed = if orders.len() == 2 {
            let placed = self.place_pair(account, &orders, &ids, Start::Triggered, events);
            if placed.is_ok()
                && let Some(list) = self.books[book_index].lists.get_mut(&list_id)
            {
                list.pair = ids.clone();
            }
            placed
        } else {
            let order = orders[0].clone();
            let start = Start::Triggered(ids[0]);
            if order.order_type.is_conditional() {
                self.place_conditional(account, order, start, Amount::ZERO, events)
            } else {
                self.work(account, order, start, events)
            }
        };
        if placed.is_err() {
            for id in ids {
                self.pending_state(book_index, id, account, End::Expired, events);
            }
        }
    }

    /// Cancels every open order of list `list_id`.
    pub(crate) fn cancel_list(
        &mut self,
        account: AccountId,
        market: MarketId,
        list_id: u64,
        events: &mut Vec<Event>,
    ) -> Result<(), Reject> {
        let index = usize::from(market.0);
        let book = self.books.get_mut(index).ok_or(Reject::UnknownSymbol)?;
        if book
            .lists
            .get(&list_id)
            .is_none_or(|l| l.account != account)
        {
            return Err(Reject::UnknownOrder);
        }
        let list = book.lists.remove(&list_id).expect("just checked");
        for (_, order) in &list.deferred {
            if let Some(name) = &order.client_order_id {
                book.forget_client_id(account, name);
            }
        }
        for id in &list.open {
            book.list_of.remove(id);
        }
        let deferred: Vec<u64> = list.deferred.iter().map(|(id, _)| *id).collect();
        for id in list.open {
            if deferred.contains(&id) {
                self.pending_state(index, id, account, End::Canceled, events);
            } else {
                self.end_order(index, id, End::Canceled, events);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{
        ETH, ETHUSDT, USDT, a, engine, limit, order, place, status, trade_at, trades,
    };
    use super::*;

    fn maker(side: Side, quantity: &str, price: &str) -> NewOrder {
        order(
            side,
            OrderType::LimitMaker,
            TimeInForce::Gtc,
            quantity,
            Some(price),
        )
    }

    fn stop(
        side: Side,
        order_type: OrderType,
        quantity: &str,
        price: Option<&str>,
        stop: &str,
    ) -> NewOrder {
        let mut order = order(side, order_type, TimeInForce::Gtc, quantity, price);
        order.trigger = Some(Trigger {
            stop_price: Some(a(stop)),
            trailing_delta: None,
        });
        order
    }

    fn list(
        contingency: Contingency,
        working: Option<NewOrder>,
        pending: Vec<NewOrder>,
    ) -> NewOrderList {
        NewOrderList {
            market: ETHUSDT,
            contingency,
            working,
            pending,
            list_client_id: None,
        }
    }

    fn place_list(engine: &mut Engine, account: AccountId, list: NewOrderList) -> Vec<Event> {
        engine.apply(Command::PlaceList {
            account,
            list: Box::new(list),
            time_ms: 0,
        })
    }

    fn sell_oco() -> NewOrderList {
        // Take profit at 3100 (resting), stop loss at 2900 selling down to 2890.
        list(
            Contingency::Oco,
            None,
            vec![
                maker(Side::Sell, "1", "3100"),
                stop(
                    Side::Sell,
                    OrderType::StopLossLimit,
                    "1",
                    Some("2890"),
                    "2900",
                ),
            ],
        )
    }

    #[test]
    fn an_oco_sell_locks_its_quantity_once_and_a_fill_of_one_order_expires_the_other() {
        let mut engine = engine();
        trade_at(&mut engine, "3000");
        let events = place_list(&mut engine, 1, sell_oco());
        assert_eq!(
            events[0],
            Event::ListPlaced {
                market: ETHUSDT,
                list_id: 1
            }
        );
        assert_eq!(
            (status(&events, 3), status(&events, 4)),
            (OrderStatus::New, OrderStatus::New)
        );
        assert_eq!(
            engine.balance(1, ETH),
            (a("99"), a("1")),
            "one lock for both"
        );
        // A buyer lifts part of the take-profit: the stop expires at once.
        let events = place(&mut engine, 2, limit(Side::Buy, "0.4", "3100"));
        assert_eq!(status(&events, 3), OrderStatus::PartiallyFilled);
        assert_eq!(status(&events, 4), OrderStatus::Expired);
        assert_eq!(engine.balance(1, ETH), (a("99"), a("0.6")));
        // The price falling through the stop no longer sells anything.
        let events = trade_at(&mut engine, "2850");
        assert!(
            trades(&events)
                .iter()
                .all(|t| t.maker.1 != 1 && t.taker.1 != 1)
        );
        assert_eq!(engine.check_invariants(), Ok(()));
    }

    #[test]
    fn an_oco_stop_that_triggers_expires_the_resting_order_and_works_with_its_funds() {
        let mut engine = engine();
        trade_at(&mut engine, "3000");
        place_list(&mut engine, 1, sell_oco());
        place(&mut engine, 2, limit(Side::Buy, "1", "2895"));
        let events = trade_at(&mut engine, "2900");
        assert_eq!(
            status(&events, 3),
            OrderStatus::Expired,
            "the take-profit goes"
        );
        assert_eq!(
            status(&events, 4),
            OrderStatus::Filled,
            "the stop sells at 2895"
        );
        assert_eq!(engine.resting_orders(ETHUSDT), 0);
        assert_eq!(engine.balance(1, ETH), (a("99"), Amount::ZERO));
        // A buy OCO: the higher of the two costs is locked.
        let buy = list(
            Contingency::Oco,
            None,
            vec![
                stop(
                    Side::Buy,
                    OrderType::StopLossLimit,
                    "1",
                    Some("3010"),
                    "3000",
                ),
                maker(Side::Buy, "1", "2800"),
            ],
        );
        let events = place_list(&mut engine, 1, buy);
        assert!(!matches!(events[0], Event::Rejected(_)), "{events:?}");
        let (_, locked) = engine.balance(1, USDT);
        assert_eq!(locked, a("3010"));
        assert_eq!(engine.check_invariants(), Ok(()));
    }

    #[test]
    fn canceling_one_order_cancels_the_list_and_a_refused_order_refuses_the_list() {
        let mut engine = engine();
        trade_at(&mut engine, "3000");
        place_list(&mut engine, 1, sell_oco());
        let events = engine.apply(Command::Cancel {
            account: 1,
            market: ETHUSDT,
            order_id: 4,
            cancel_client_id: None,
            time_ms: 0,
        });
        assert_eq!(
            (status(&events, 3), status(&events, 4)),
            (OrderStatus::Canceled, OrderStatus::Canceled)
        );
        assert_eq!(engine.balance(1, ETH), (a("100"), Amount::ZERO));
        // A stop already met: the whole list is refused, nothing of it stays.
        let mut bad = sell_oco();
        bad.pending[1] = stop(Side::Sell, OrderType::StopLoss, "1", None, "3000");
        let before = engine.snapshot();
        assert_eq!(
            place_list(&mut engine, 1, bad),
            vec![Event::Rejected(Reject::WouldTrigger)]
        );
        assert_eq!(engine.snapshot(), before);
        let mut mixed = sell_oco();
        mixed.pending[0].side = Side::Buy;
        assert_eq!(
            place_list(&mut engine, 1, mixed),
            vec![Event::Rejected(Reject::BadList)]
        );
        let events = place_list(&mut engine, 1, sell_oco());
        assert!(
            events.contains(&Event::ListPlaced {
                market: ETHUSDT,
                list_id: 2
            }),
            "{events:?}"
        );
        let events = engine.apply(Command::CancelList {
            account: 2,
            market: ETHUSDT,
            list_id: 2,
            cancel_client_id: None,
            time_ms: 0,
        });
        assert_eq!(
            events,
            vec![Event::Rejected(Reject::UnknownOrder)],
            "not the owner"
        );
        let events = engine.apply(Command::CancelAll {
            account: 1,
            market: ETHUSDT,
            time_ms: 0,
        });
        assert_eq!(
            events
                .iter()
                .filter(|e| matches!(e, Event::Order(o) if o.status == OrderStatus::Canceled))
                .count(),
            2
        );
        assert_eq!(engine.check_invariants(), Ok(()));
    }

    #[test]
    fn an_oto_places_its_pending_order_when_the_working_order_fills() {
        let mut engine = engine();
        // Buy 1 at 3000; once bought, sell it at 3100.
        let oto = list(
            Contingency::Oto,
            Some(limit(Side::Buy, "1", "3000")),
            vec![maker(Side::Sell, "1", "3100")],
        );
        let events = place_list(&mut engine, 1, oto);
        assert_eq!(
            (status(&events, 1), status(&events, 2)),
            (OrderStatus::New, OrderStatus::PendingNew)
        );
        assert_eq!(
            engine.balance(1, ETH),
            (a("100"), Amount::ZERO),
            "the pending sell locks nothing"
        );
        let events = place(&mut engine, 2, limit(Side::Sell, "0.5", "3000"));
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, Event::Order(o) if o.order_id == 2))
        );
        let events = place(&mut engine, 2, limit(Side::Sell, "0.5", "3000"));
        assert_eq!(
            (status(&events, 1), status(&events, 2)),
            (OrderStatus::Filled, OrderStatus::New)
        );
        assert_eq!(engine.balance(1, ETH).1, a("1"), "now it rests and locks");
        // OTOCO whose working order expires: its pair never comes.
        let otoco = list(
            Contingency::Otoco,
            Some(order(
                Side::Buy,
                OrderType::Limit,
                TimeInForce::Ioc,
                "1",
                Some("2000"),
            )),
            vec![
                maker(Side::Sell, "1", "3200"),
                stop(Side::Sell, OrderType::StopLoss, "1", None, "1500"),
            ],
        );
        let events = place_list(&mut engine, 1, otoco);
        let states: Vec<OrderStatus> = (5..=7).map(|id| status(&events, id)).collect();
        assert_eq!(states, vec![OrderStatus::Expired; 3]);
        assert_eq!(engine.check_invariants(), Ok(()));
    }

    #[test]
    fn an_otoco_working_order_that_fills_at_once_places_its_pair_in_the_same_command() {
        let mut engine = engine();
        place(&mut engine, 2, limit(Side::Sell, "1", "3000"));
        let otoco = list(
            Contingency::Otoco,
            Some(limit(Side::Buy, "1", "3000")),
            vec![
                maker(Side::Sell, "0.999", "3300"),
                stop(Side::Sell, OrderType::StopLoss, "0.999", None, "2700"),
            ],
        );
        let events = place_list(&mut engine, 1, otoco);
        assert_eq!(
            (status(&events, 2), status(&events, 3), status(&events, 4)),
            (OrderStatus::Filled, OrderStatus::New, OrderStatus::New)
        );
        // 1 ETH bought less the 0.1 % fee; the pair locks 0.999 once.
        assert_eq!(engine.balance(1, ETH), (a("100"), a("0.999")));
        assert_eq!(engine.check_invariants(), Ok(()));
    }
}
