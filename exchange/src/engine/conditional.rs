//! Conditional orders (STOP_LOSS, STOP_LOSS_LIMIT, TAKE_PROFIT,
//! TAKE_PROFIT_LIMIT): they wait off the book with their funds locked,
//! follow the price of every trade on their market, and once triggered work
//! as market or limit orders under their own id, inside the command whose
//! trade triggered them — so replaying the log triggers them identically.

use super::*;

impl Engine {
    /// Accepts a conditional order: checked like any order, refused if its
    /// stop condition already holds at the last price, then waiting.
    /// In an order list its id is announced already (`start`), and
    /// `covered` of its lock is held by the other order of its pair.
    pub(crate) fn place_conditional(
        &mut self,
        account: AccountId,
        order: NewOrder,
        start: Start,
        covered: Amount,
        events: &mut Vec<Event>,
    ) -> Result<(), Reject> {
        let now_ms = self.now_ms;
        let trigger = order
            .trigger
            .filter(|t| t.stop_price.is_some() || t.trailing_delta.is_some())
            .ok_or(Reject::BadTrigger)?;
        let quantity = order.quantity.ok_or(Reject::BadTrigger)?;
        if order.quote_quantity.is_some() || order.order_type.has_price() != order.price.is_some() {
            return Err(Reject::BadTrigger);
        }
        let book = self
            .books
            .get_mut(usize::from(order.market.0))
            .ok_or(Reject::UnknownSymbol)?;
        if !book
            .market
            .on_grid(&[order.price, trigger.stop_price], Some(quantity))
        {
            return Err(Reject::OffGrid);
        }
        if let Some(id) = &order.client_order_id
            && book.is_client_id_open(account, id)
        {
            return Err(Reject::DuplicateClientOrderId);
        }
        if book.open_orders(account) >= book.market.max_num_orders {
            return Err(Reject::TooManyOrders);
        }
        if book.waiting(account) >= book.market.max_num_algo_orders {
            return Err(Reject::TooManyAlgoOrders);
        }
        if let (Some(stop), Some(last)) = (trigger.stop_price, book.last_price)
            && Trigger::reached(stop, last, order.order_type, order.side)
        {
            return Err(Reject::WouldTrigger);
        }
        // What the working order will lock, locked now; a market buy by
        // quantity locks what the book asks when it triggers.
        let need = match (order.side, order.price) {
            (Side::Sell, price) => {
                if let Some(price) = price {
                    mul(price, quantity).ok_or(Reject::Overflow)?;
                }
                quantity
            }
            (Side::Buy, Some(price)) => mul(price, quantity).ok_or(Reject::Overflow)?,
            (Side::Buy, None) => Amount::ZERO,
        };
        let lock = need.saturating_sub(covered);
        let lock_asset = book.locked_asset(order.side);
        if self.ledger.get(account, lock_asset).free < lock {
            return Err(Reject::InsufficientBalance);
        }
        let slot = self.ledger.slot(account);
        self.ledger.shift(slot, lock_asset, lock, true);
        let book = &mut self.books[usize::from(order.market.0)];
        let order_id = book.order_id_for(start, events);
        events.push(Event::Order(OrderState {
            market: book.id,
            order_id,
            account,
            status: OrderStatus::New,
            executed: Amount::ZERO,
            cumulative_quote: Amount::ZERO,
            time_ms: now_ms,
        }));
        if start.accepts() {
            let waiting = ExecutionKind::New { working: false };
            let id = (book.id, order_id, account);
            events.push(unfilled(id, waiting, OrderStatus::New, now_ms));
        }
        // Without a stop price a trailing order tracks from the last price on.
        let tracking = trigger.stop_price.is_none();
        if tracking {
            events.push(Event::Tracking {
                market: book.id,
                order_id,
            });
        }
        let extremum = if tracking { book.last_price } else { None };
        let pair = (book.base, book.quote);
        book.wait(Pending {
            order_id,
            account,
            order,
            locked: lock,
            tracking,
            extremum,
        });
        self.ledger.emit_pair(slot, pair, events);
        Ok(())
    }

    /// Ends the waiting order at `index` of market `book_index`'s list
    /// (`end`), releasing what it locked.
    pub(crate) fn remove_pending(
        &mut self,
        book_index: usize,
        index: usize,
        end: End,
        events: &mut Vec<Event>,
    ) {
        let book = &mut self.books[book_index];
        let pending = book.stop_waiting(index);
        let status = end.status();
        events.push(Event::Order(OrderState {
            market: book.id,
            order_id: pending.order_id,
            account: pending.account,
            status,
            executed: Amount::ZERO,
            cumulative_quote: Amount::ZERO,
            time_ms: self.now_ms,
        }));
        if let Some(kind) = end.execution() {
            let id = (book.id, pending.order_id, pending.account);
            events.push(unfilled(id, kind, status, self.now_ms));
        }
        if !pending.locked.is_zero() {
            let asset = book.locked_asset(pending.order.side);
            let owner = self.ledger.slot(pending.account);
            self.ledger.shift(owner, asset, pending.locked, false);
            self.ledger.emit(owner, asset, events);
        }
    }

    /// What an order working on market `book_index` set off, from
    /// `events[start..]` on, until nothing more follows: the contingencies
    /// of order lists whose orders it touched, and the waiting orders its
    /// trades trigger (whose own trades are followed the same way).
    #[inline]
    pub(crate) fn set_off(&mut self, book_index: usize, start: usize, events: &mut Vec<Event>) {
        let book = &mut self.books[book_index];
        if book.pending.is_empty() && book.lists.is_empty() {
            // Nothing can follow: only the last price moves.
            let market = book.id;
            if let Some(last) = events[start..].iter().rev().find_map(|event| match event {
                Event::Trade(trade) if trade.market == market => Some(trade.price),
                _ => None,
            }) {
                book.last_price = Some(last);
            }
            return;
        }
        self.follow_through(book_index, start, events);
    }

    #[cold]
    fn follow_through(&mut self, book_index: usize, start: usize, events: &mut Vec<Event>) {
        let (mut listed, mut shown) = (start, start);
        loop {
            let end = events.len();
            if listed < end {
                self.follow_lists(book_index, listed, end, events);
                listed = end;
            } else if shown < end {
                self.follow_trades(book_index, shown, end, events);
                shown = end;
            } else {
                return;
            }
        }
    }

    /// The trades among `events[from..to]` set the last price, and every
    /// waiting order follows them in turn; those triggered work in the
    /// order they triggered (oldest first at the same trade).
    fn follow_trades(
        &mut self,
        book_index: usize,
        from: usize,
        to: usize,
        events: &mut Vec<Event>,
    ) {
        let market = self.books[book_index].id;
        let trade_price = |event: &Event| match event {
            Event::Trade(trade) if trade.market == market => Some(trade.price),
            _ => None,
        };
        let book = &mut self.books[book_index];
        let Some(last) = events[from..to].iter().rev().find_map(trade_price) else {
            return;
        };
        book.last_price = Some(last);
        if book.pending.is_empty() {
            return;
        }
        let prices: Vec<Amount> = events[from..to].iter().filter_map(trade_price).collect();
        let mut fired = Vec::new();
        let waiting = std::mem::take(&mut book.pending);
        for mut pending in waiting {
            let was_tracking = pending.tracking;
            let at = prices.iter().position(|price| pending.follow(*price));
            if pending.tracking && !was_tracking {
                events.push(Event::Tracking {
                    market,
                    order_id: pending.order_id,
                });
            }
            match at {
                Some(at) => fired.push((at, pending)),
                None => book.pending.push(pending),
            }
        }
        // Stable: among orders triggered by the same trade, oldest first.
        fired.sort_by_key(|(at, _)| *at);
        for (_, pending) in fired {
            self.books[book_index].unindex_pending(&pending);
            self.activate(book_index, pending, events);
        }
    }

    /// Puts a triggered order to work under its own id. Its lock is released
    /// and taken afresh by the working order; if that order cannot be placed
    /// now (a market buy the account can no longer pay for), it expires.
    fn activate(&mut self, book_index: usize, pending: Pending, events: &mut Vec<Event>) {
        let book = &self.books[book_index];
        let (market, asset) = (book.id, book.locked_asset(pending.order.side));
        let began = Event::Triggered {
            market,
            order_id: pending.order_id,
        };
        // A list's order placed by its list in this command was told then
        // that it began working: once is enough.
        let told = book.list_of.contains_key(&pending.order_id)
            && events[self.command_start..].contains(&began);
        events.push(began);
        let id = (market, pending.order_id, pending.account);
        if !told {
            let triggered = ExecutionKind::Triggered;
            events.push(unfilled(id, triggered, OrderStatus::New, self.now_ms));
        }
        // One cancels the other: the pair's other order goes first, so that
        // what it locked is free for this one.
        self.end_sibling(book_index, pending.order_id, events);
        let slot = self.ledger.slot(pending.account);
        self.ledger.shift(slot, asset, pending.locked, false);
        let mut order = pending.order;
        order.order_type = order.order_type.working();
        order.trigger = None;
        if self
            .work(
                pending.account,
                order,
                Start::Triggered(pending.order_id),
                events,
            )
            .is_err()
        {
            events.push(Event::Order(OrderState {
                market,
                order_id: pending.order_id,
                account: pending.account,
                status: OrderStatus::Expired,
                executed: Amount::ZERO,
                cumulative_quote: Amount::ZERO,
                time_ms: self.now_ms,
            }));
            let expired = ExecutionKind::Expired;
            events.push(unfilled(id, expired, OrderStatus::Expired, self.now_ms));
            self.ledger.emit(slot, asset, events);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{
        ETH, ETHUSDT, USDT, a, engine, limit, order, place, status, trade_at, trades,
    };
    use super::*;

    fn conditional(
        side: Side,
        order_type: OrderType,
        quantity: &str,
        price: Option<&str>,
        stop_price: Option<&str>,
        trailing_delta: Option<u32>,
    ) -> NewOrder {
        let mut order = order(side, order_type, TimeInForce::Gtc, quantity, price);
        order.trigger = Some(Trigger {
            stop_price: stop_price.map(a),
            trailing_delta,
        });
        order
    }

    fn triggered(events: &[Event]) -> Vec<u64> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::Triggered { order_id, .. } => Some(*order_id),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_stop_loss_limit_sell_waits_locked_then_works_when_the_price_falls_to_its_stop() {
        let mut engine = engine();
        trade_at(&mut engine, "3000");
        let stop = conditional(
            Side::Sell,
            OrderType::StopLossLimit,
            "1",
            Some("2940"),
            Some("2950"),
            None,
        );
        let events = place(&mut engine, 1, stop);
        let id = 3;
        assert_eq!(status(&events, id), OrderStatus::New);
        assert_eq!(
            engine.balance(1, ETH),
            (a("99"), a("1")),
            "locked while waiting"
        );
        assert_eq!(engine.resting_orders(ETHUSDT), 0, "not on the book");
        // A bid for it to meet once it works.
        place(&mut engine, 2, limit(Side::Buy, "1", "2945"));
        assert!(triggered(&trade_at(&mut engine, "2960")).is_empty());
        let events = trade_at(&mut engine, "2950");
        assert_eq!(triggered(&events), vec![id]);
        assert_eq!(status(&events, id), OrderStatus::Filled);
        let fill = trades(&events)
            .into_iter()
            .find(|t| t.taker.0 == id)
            .unwrap();
        assert_eq!((fill.price, fill.quantity), (a("2945"), a("1")));
        assert_eq!(engine.balance(1, ETH), (a("99"), Amount::ZERO));
        assert_eq!(engine.check_invariants(), Ok(()));
    }

    #[test]
    fn a_stop_the_last_price_already_meets_is_refused() {
        let mut engine = engine();
        // No trade yet: nothing to compare with, so it waits.
        let early = conditional(
            Side::Buy,
            OrderType::StopLoss,
            "1",
            None,
            Some("2000"),
            None,
        );
        assert_eq!(status(&place(&mut engine, 1, early), 1), OrderStatus::New);
        trade_at(&mut engine, "3000");
        for (side, order_type, stop) in [
            (Side::Sell, OrderType::StopLoss, "3000"),
            (Side::Buy, OrderType::StopLoss, "2999.99"),
            (Side::Sell, OrderType::TakeProfit, "2999"),
            (Side::Buy, OrderType::TakeProfit, "3000.01"),
        ] {
            let order = conditional(side, order_type, "1", None, Some(stop), None);
            assert_eq!(
                place(&mut engine, 1, order),
                vec![Event::Rejected(Reject::WouldTrigger)],
                "{side:?} {order_type:?} at {stop}"
            );
        }
    }

    #[test]
    fn a_trailing_sell_triggers_after_falling_its_delta_from_the_highest_price() {
        let mut engine = engine();
        trade_at(&mut engine, "3000");
        // 1 %: from 3000 it would trigger at 2970; the high moves to 3100, so 3069.
        let trailing = conditional(Side::Sell, OrderType::StopLoss, "1", None, None, Some(100));
        let events = place(&mut engine, 1, trailing);
        let id = 3;
        assert!(events.contains(&Event::Tracking {
            market: ETHUSDT,
            order_id: id
        }));
        place(&mut engine, 2, limit(Side::Buy, "2", "2000"));
        assert!(triggered(&trade_at(&mut engine, "3100")).is_empty());
        assert!(triggered(&trade_at(&mut engine, "3069.01")).is_empty());
        let events = trade_at(&mut engine, "3069");
        assert_eq!(triggered(&events), vec![id]);
        // A market sell: it meets the best bid left.
        assert_eq!(status(&events, id), OrderStatus::Filled);
        assert_eq!(engine.balance(1, ETH).1, Amount::ZERO);
    }

    #[test]
    fn a_trailing_buy_with_a_stop_price_tracks_only_once_the_stop_is_reached() {
        let mut engine = engine();
        trade_at(&mut engine, "3000");
        // TAKE_PROFIT BUY: tracking starts at or below 2900, then 5 % up from the low.
        let order = conditional(
            Side::Buy,
            OrderType::TakeProfitLimit,
            "1",
            Some("3100"),
            Some("2900"),
            Some(500),
        );
        place(&mut engine, 1, order);
        let id = 3;
        assert_eq!(engine.balance(1, USDT).1, a("3100"), "locked at its limit");
        // A 5 % rise before tracking starts counts for nothing.
        trade_at(&mut engine, "2950");
        assert!(triggered(&trade_at(&mut engine, "3100")).is_empty());
        let events = trade_at(&mut engine, "2900");
        assert!(events.contains(&Event::Tracking {
            market: ETHUSDT,
            order_id: id
        }));
        trade_at(&mut engine, "2800");
        assert!(triggered(&trade_at(&mut engine, "2939.99")).is_empty());
        let events = trade_at(&mut engine, "2940");
        assert_eq!(triggered(&events), vec![id]);
        // Nothing to buy at or below 3100 once it works: it rests as a limit buy.
        assert_eq!(status(&events, id), OrderStatus::New);
        assert_eq!(engine.resting_orders(ETHUSDT), 1);
        assert_eq!(engine.balance(1, USDT).1, a("3100"));
    }

    #[test]
    fn one_stop_triggering_can_trigger_the_next_within_the_same_command() {
        let mut engine = engine();
        trade_at(&mut engine, "3000");
        place(
            &mut engine,
            1,
            conditional(
                Side::Sell,
                OrderType::StopLoss,
                "1",
                None,
                Some("2990"),
                None,
            ),
        );
        place(
            &mut engine,
            2,
            conditional(
                Side::Sell,
                OrderType::StopLoss,
                "1",
                None,
                Some("2950"),
                None,
            ),
        );
        // Bids for the two market sells: the first one's fill at 2950 triggers the second.
        place(&mut engine, 5, limit(Side::Buy, "1", "2950"));
        place(&mut engine, 5, limit(Side::Buy, "1", "2900"));
        let events = trade_at(&mut engine, "2990");
        assert_eq!(triggered(&events), vec![3, 4]);
        assert_eq!(
            (status(&events, 3), status(&events, 4)),
            (OrderStatus::Filled, OrderStatus::Filled)
        );
        let prices: Vec<Amount> = trades(&events).iter().map(|t| t.price).collect();
        assert_eq!(prices, vec![a("2990"), a("2950"), a("2900")]);
        assert_eq!(engine.check_invariants(), Ok(()));
    }

    #[test]
    fn a_market_stop_buy_the_account_cannot_pay_for_when_triggered_expires() {
        let mut engine = engine();
        trade_at(&mut engine, "3000");
        // Account 1 has 100000 USDT; 40 ETH at 3000 would cost 120000.
        let stop = conditional(
            Side::Buy,
            OrderType::StopLoss,
            "40",
            None,
            Some("3010"),
            None,
        );
        place(&mut engine, 1, stop);
        assert_eq!(
            engine.balance(1, USDT),
            (a("100000"), Amount::ZERO),
            "nothing locked"
        );
        place(&mut engine, 2, limit(Side::Sell, "40", "3020"));
        let events = trade_at(&mut engine, "3010");
        assert_eq!(triggered(&events), vec![3]);
        assert_eq!(status(&events, 3), OrderStatus::Expired);
        assert_eq!(engine.balance(1, USDT), (a("100000"), Amount::ZERO));
    }

    #[test]
    fn waiting_orders_cancel_alone_or_with_the_rest_and_count_against_the_limits() {
        let mut engine = engine();
        let stop = || {
            conditional(
                Side::Sell,
                OrderType::StopLoss,
                "1",
                None,
                Some("2000"),
                None,
            )
        };
        for _ in 0..5 {
            place(&mut engine, 1, stop());
        }
        assert_eq!(
            place(&mut engine, 1, stop()),
            vec![Event::Rejected(Reject::TooManyAlgoOrders)]
        );
        assert_eq!(engine.balance(1, ETH), (a("95"), a("5")));
        let events = engine.apply(Command::Cancel {
            account: 1,
            market: ETHUSDT,
            order_id: 2,
            cancel_client_id: None,
            time_ms: 0,
        });
        assert_eq!(status(&events, 2), OrderStatus::Canceled);
        place(&mut engine, 1, limit(Side::Buy, "1", "1000"));
        let events = engine.apply(Command::CancelAll {
            account: 1,
            market: ETHUSDT,
            time_ms: 0,
        });
        let canceled: Vec<u64> = events
            .iter()
            .filter_map(|e| match e {
                Event::Order(o) => Some(o.order_id),
                _ => None,
            })
            .collect();
        assert_eq!(
            canceled,
            vec![1, 3, 4, 5, 6],
            "oldest first, waiting or resting"
        );
        assert_eq!(engine.balance(1, ETH), (a("100"), Amount::ZERO));
        let missing = Trigger {
            stop_price: None,
            trailing_delta: None,
        };
        let mut bad = stop();
        bad.trigger = Some(missing);
        assert_eq!(
            place(&mut engine, 1, bad),
            vec![Event::Rejected(Reject::BadTrigger)]
        );
        let mut limit_with_trigger = limit(Side::Buy, "1", "1000");
        limit_with_trigger.trigger = stop().trigger;
        assert_eq!(
            place(&mut engine, 1, limit_with_trigger),
            vec![Event::Rejected(Reject::BadTrigger)]
        );
    }
}
