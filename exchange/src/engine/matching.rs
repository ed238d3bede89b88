//! Placing an order: sizing what it can reach, matching it against the book, and
//! settling each fill.

use super::*;

use super::book::Book;
use crate::amount::SCALE;

impl Engine {
    /// Simulates a taker of `account` against the book: the base it would fill
    /// and the quote it would pay, with self-trade prevention applied the way
    /// matching will (own orders are skipped under EXPIRE_MAKER and end the
    /// taker under EXPIRE_TAKER / EXPIRE_BOTH). Sums are wide: what a book
    /// offers may add up past any amount.
    pub(crate) fn reachable(book: &Book, account: AccountId, order: &NewOrder) -> (u128, u128) {
        let (mut base, mut quote) = (0u128, 0u128);
        let wide = |amount: Amount| u128::from(amount.units());
        for (price, level) in book.opposite(order.side) {
            if beyond(order.side, *price, order.price) {
                break;
            }
            for slot in book.level_slots(level) {
                let resting = &book.slab[slot as usize];
                if resting.account == account {
                    match order.stp {
                        StpMode::None => {}
                        StpMode::ExpireMaker => continue,
                        // Decremented quantity is used up without cost.
                        StpMode::Decrement if order.quote_quantity.is_none() => {
                            let left = order.quantity.map_or(0, wide).saturating_sub(base);
                            base += wide(resting.remaining).min(left);
                            continue;
                        }
                        StpMode::ExpireTaker | StpMode::ExpireBoth | StpMode::Decrement => {
                            return (base, quote);
                        }
                    }
                }
                let mut take = resting.remaining;
                if let Some(want) = order.quantity {
                    // Within the wanted quantity, so `base` fits an amount here.
                    let left = wide(want).saturating_sub(base);
                    take = take.min(Amount::from_units(left as u64));
                }
                if let Some(want) = order.quote_quantity {
                    let left = wide(want).saturating_sub(quote);
                    take = take.min(affordable(
                        Amount::from_units(left as u64),
                        *price,
                        book.market.step_size,
                    ));
                }
                if take.is_zero() {
                    return (base, quote);
                }
                base += wide(take);
                // A price and a quantity of at most u64::MAX units each: their
                // product over 1e8 fits a u128.
                quote += wide(*price) * wide(take) / 10u128.pow(SCALE);
            }
        }
        (base, quote)
    }

    /// Places `order`: a conditional one waits for its trigger; any other
    /// works at once, and the trades it makes may trigger waiting ones.
    pub(crate) fn place(
        &mut self,
        account: AccountId,
        order: NewOrder,
        events: &mut Vec<Event>,
    ) -> Result<(), Reject> {
        if order.order_type.is_conditional() {
            return self.place_conditional(account, order, Start::New, Amount::ZERO, events);
        }
        if order.trigger.is_some() {
            return Err(Reject::BadTrigger);
        }
        let (start, market) = (events.len(), usize::from(order.market.0));
        self.work(account, order, Start::New, events)?;
        self.set_off(market, start, events);
        Ok(())
    }

    /// Puts a market, limit or post-only order to work: matches it and rests
    /// what is left. A new order takes the next id; a listed or triggered one
    /// has its own (`start`). Refuses before changing anything, or not at all.
    #[inline]
    pub(crate) fn work(
        &mut self,
        account: AccountId,
        order: NewOrder,
        start: Start,
        events: &mut Vec<Event>,
    ) -> Result<(), Reject> {
        let now_ms = self.now_ms;
        let book = self
            .books
            .get_mut(usize::from(order.market.0))
            .ok_or(Reject::UnknownSymbol)?;
        if !book.market.on_grid(&[order.price], order.quantity) {
            return Err(Reject::OffGrid);
        }
        if let Some(id) = &order.client_order_id
            && book.is_client_id_open(account, id)
        {
            return Err(Reject::DuplicateClientOrderId);
        }
        if order.order_type != OrderType::Market
            && book.open_orders(account) >= book.market.max_num_orders
        {
            return Err(Reject::TooManyOrders);
        }
        let limit = order.price;
        if order.order_type == OrderType::LimitMaker
            && book
                .best_opposite(order.side)
                .is_some_and(|(best, _)| !beyond(order.side, best, limit))
        {
            return Err(Reject::WouldTake);
        }
        // Only fill-or-kill and market buys by quantity need to know the
        // reachable liquidity in advance.
        let fok = order.time_in_force == TimeInForce::Fok;
        let market_buy = order.side == Side::Buy && order.order_type == OrderType::Market;
        // A market sell for a quote amount sells what the book needs to pay it.
        let sell_for_quote = order.side == Side::Sell
            && order.order_type == OrderType::Market
            && order.quote_quantity.is_some();
        let (reach_base, reach_quote) =
            if fok || (market_buy && order.quote_quantity.is_none()) || sell_for_quote {
                Self::reachable(book, account, &order)
            } else {
                (0, 0)
            };
        if fok && Some(reach_base) != order.quantity.map(|q| u128::from(q.units())) {
            // Fill-or-kill that cannot fill completely: expires untouched.
            let order_id = book.order_id_for(start, events);
            let id = (book.id, order_id, account);
            if start.accepts() {
                let accepted = ExecutionKind::New { working: true };
                events.push(unfilled(id, accepted, OrderStatus::New, now_ms));
            }
            events.push(Event::Order(OrderState {
                market: book.id,
                order_id,
                account,
                status: OrderStatus::Expired,
                executed: Amount::ZERO,
                cumulative_quote: Amount::ZERO,
                time_ms: now_ms,
            }));
            let expired = ExecutionKind::Expired;
            events.push(unfilled(id, expired, OrderStatus::Expired, now_ms));
            return Ok(());
        }
        // What to lock: sells lock base; limit buys lock price × quantity;
        // market buys lock what the book can fill (or the quote amount given).
        // What the book offers may add up past any amount: such an order is
        // refused whole, never cut short.
        let fits = |units: u128| {
            u64::try_from(units)
                .map(Amount::from_units)
                .map_err(|_| Reject::Overflow)
        };
        let lock = match (order.side, order.order_type) {
            (Side::Sell, _) if sell_for_quote => fits(reach_base)?,
            (Side::Sell, _) => order.quantity.ok_or(Reject::Overflow)?,
            (Side::Buy, OrderType::Market) => match order.quote_quantity {
                Some(amount) => amount,
                None => fits(reach_quote)?,
            },
            (Side::Buy, _) => mul(
                limit.ok_or(Reject::Overflow)?,
                order.quantity.ok_or(Reject::Overflow)?,
            )
            .ok_or(Reject::Overflow)?,
        };
        let lock_asset = book.locked_asset(order.side);
        if let (Side::Sell, Some(price), Some(quantity)) = (order.side, limit, order.quantity) {
            // What a sell can receive must fit, so settlement cannot overflow later.
            mul(price, quantity).ok_or(Reject::Overflow)?;
        }
        if self.ledger.get(account, lock_asset).free < lock {
            return Err(Reject::InsufficientBalance);
        }
        let slot = self.ledger.slot(account);
        self.ledger.shift(slot, lock_asset, lock, true);
        let order_id = book.order_id_for(start, events);
        if start.accepts() {
            let accepted = ExecutionKind::New { working: true };
            let id = (book.id, order_id, account);
            events.push(unfilled(id, accepted, OrderStatus::New, now_ms));
        }
        let mut taker = Order {
            order_id,
            account,
            side: order.side,
            price: limit.unwrap_or_default(),
            remaining: match order.quantity {
                Some(quantity) => quantity,
                None if sell_for_quote => lock,
                None => Amount::from_units(u64::MAX),
            },
            locked: lock,
            stp: order.stp,
            ..Order::default()
        };
        // Market buys spend at most what they locked, whatever self-trade
        // prevention skips on the way; a sell for a quote amount receives at
        // most that amount.
        let mut quote_budget = if market_buy {
            Some(lock)
        } else {
            order.quote_quantity.filter(|_| sell_for_quote)
        };
        self.taker_log.clear();
        let expired_in_match = self.match_taker(
            usize::from(order.market.0),
            &order,
            slot,
            &mut taker,
            &mut quote_budget,
            events,
        );

        let status = if expired_in_match {
            OrderStatus::ExpiredInMatch
        } else if match order.quote_quantity {
            // An order for a quote amount is filled when that amount is met,
            // not when the base the book offered runs out.
            Some(_) => quote_budget.is_some_and(|q| q.is_zero()),
            None => taker.remaining.is_zero(),
        } {
            OrderStatus::Filled
        } else if order.order_type == OrderType::Market || order.time_in_force != TimeInForce::Gtc {
            OrderStatus::Expired
        } else if taker.executed.is_zero() {
            OrderStatus::New
        } else {
            OrderStatus::PartiallyFilled
        };
        let book = &mut self.books[usize::from(order.market.0)];
        events.push(taker.state(book.id, status, now_ms));
        self.taker_log.tell(book.id, &taker, status, now_ms, events);
        let (base, quote) = (book.base, book.quote);
        if matches!(status, OrderStatus::New | OrderStatus::PartiallyFilled) {
            taker.client_order_id = order.client_order_id.map(String::into_boxed_str);
            let (side, price) = (taker.side, taker.price);
            let quantity = book.rest(taker);
            events.push(Event::Level {
                market: book.id,
                side,
                price,
                quantity,
            });
        } else if !taker.locked.is_zero() {
            self.ledger.shift(slot, lock_asset, taker.locked, false);
        }
        self.ledger.emit_pair(slot, (base, quote), events);
        Ok(())
    }

    /// Matches the taker against the opposite side. Returns whether self-trade
    /// prevention expired the taker.
    pub(crate) fn match_taker(
        &mut self,
        book_index: usize,
        order: &NewOrder,
        taker_slot: usize,
        taker: &mut Order,
        quote_budget: &mut Option<Amount>,
        events: &mut Vec<Event>,
    ) -> bool {
        loop {
            // A spent quote amount ends the order; a market buy by quantity
            // whose budget is empty still meets the book, so that self-trade
            // prevention can end it the way it would with funds.
            // An order by quote amount ends when that amount is spent, not
            // when its base runs out: a sell for quote that can sell nothing
            // still meets its own orders, as self-trade prevention requires.
            let done = match order.quote_quantity {
                Some(_) => quote_budget.is_some_and(|q| q.is_zero()),
                None => taker.remaining.is_zero(),
            };
            if done {
                return false;
            }
            let book = &mut self.books[book_index];
            let Some((price, maker_slot)) = book.best_opposite(order.side) else {
                return false;
            };
            if beyond(order.side, price, order.price) {
                return false;
            }
            let maker = &book.slab[maker_slot as usize];
            if maker.account == taker.account && taker.stp != StpMode::None {
                if self.prevent(book_index, (taker_slot, taker), maker_slot, order, events) {
                    return true;
                }
                continue;
            }
            let mut quantity = taker.remaining.min(maker.remaining);
            if let Some(budget) = quote_budget.as_mut() {
                let steps = affordable(*budget, price, book.market.step_size);
                if steps.is_zero() {
                    // What is left cannot buy one step at the best price:
                    // the amount is used up as far as the book allows, and
                    // Binance reports such an order FILLED, not EXPIRED.
                    *budget = Amount::ZERO;
                    return false;
                }
                quantity = quantity.min(steps);
            }
            let quote_quantity = mul(price, quantity).expect(BROKEN);
            // Nothing trades for nothing: a fill must move both assets.
            if quantity.is_zero() || quote_quantity.is_zero() {
                return false;
            }
            if let Some(budget) = quote_budget.as_mut() {
                *budget = budget.checked_sub(quote_quantity).expect(BROKEN);
            }
            self.settle(
                book_index,
                (taker_slot, taker),
                maker_slot,
                price,
                quantity,
                quote_quantity,
                events,
            );
        }
    }

    /// Self-trade prevention between the taker and its own maker in
    /// `maker_slot`, by the taker's mode; returns whether the taker ends.
    /// DECREMENT takes the quantity they would trade off both, unlocking it
    /// (the smaller ends); a taker for a quote amount, whose quantity is not
    /// known, ends instead (as EXPIRE_TAKER).
    #[cold]
    fn prevent(
        &mut self,
        book_index: usize,
        (taker_slot, taker): (usize, &mut Order),
        maker_slot: u32,
        order: &NewOrder,
        events: &mut Vec<Event>,
    ) -> bool {
        let book = &mut self.books[book_index];
        let maker = &book.slab[maker_slot as usize];
        let (maker_id, maker_account, price) = (maker.order_id, maker.account, maker.price);
        // A taker for a quote amount has no base quantity to compare: the
        // match would be the maker's remainder.
        let matched = if order.quote_quantity.is_some() {
            maker.remaining
        } else {
            taker.remaining.min(maker.remaining)
        };
        let decrement = taker.stp == StpMode::Decrement && order.quote_quantity.is_none();
        let (expire_maker, expire_taker) = match taker.stp {
            StpMode::ExpireTaker => (false, true),
            StpMode::ExpireMaker => (true, false),
            StpMode::Decrement if decrement => {
                (matched == maker.remaining, matched == taker.remaining)
            }
            StpMode::Decrement => (false, true),
            _ => (true, true),
        };
        let id = book.next_prevented_id;
        book.next_prevented_id += 1;
        let prevention = Prevention {
            market: book.id,
            id,
            taker: (taker.order_id, taker.account),
            maker: (maker_id, maker_account),
            price,
            mode: taker.stp,
            taker_quantity: if expire_taker || decrement {
                matched
            } else {
                Amount::ZERO
            },
            maker_quantity: match (decrement, expire_maker) {
                (true, _) => matched,
                (false, true) => maker.remaining,
                (false, false) => Amount::ZERO,
            },
            time_ms: self.now_ms,
        };
        events.push(Event::Prevented(prevention));
        self.taker_log.prevented = Some(PreventedMatch {
            id,
            quantity: prevention.taker_quantity,
            counter_order_id: maker_id,
        });
        self.taker_log.decremented |= decrement;
        let maker_side = PreventedMatch {
            id,
            quantity: prevention.maker_quantity,
            counter_order_id: taker.order_id,
        };
        if decrement {
            let side = maker.side;
            let maker_release = match side {
                Side::Buy => sure(mul(price, matched)),
                Side::Sell => matched,
            };
            let maker = &mut book.slab[maker_slot as usize];
            maker.remaining = sure(maker.remaining.checked_sub(matched));
            maker.locked = sure(maker.locked.checked_sub(maker_release));
            let levels = match side {
                Side::Buy => &mut book.bids,
                Side::Sell => &mut book.asks,
            };
            let level = levels.get_mut(&price).expect(BROKEN);
            level.quantity = sure(level.quantity.checked_sub(matched));
            events.push(Event::Level {
                market: book.id,
                side,
                price,
                quantity: level.quantity,
            });
            let asset = book.locked_asset(side);
            let owner = self.ledger.slot(maker_account);
            self.ledger.shift(owner, asset, maker_release, false);
            self.ledger.emit(owner, asset, events);
            // The taker's reservation for what it no longer wants: at its
            // limit for a buy (a market buy reserved nothing for it), the
            // base for a sell.
            let taker_release = match taker.side {
                Side::Buy if taker.price.is_zero() => Amount::ZERO,
                Side::Buy => sure(mul(taker.price, matched)),
                Side::Sell => matched,
            };
            taker.remaining = sure(taker.remaining.checked_sub(matched));
            taker.locked = sure(taker.locked.checked_sub(taker_release));
            let book = &self.books[book_index];
            let asset = book.locked_asset(taker.side);
            self.ledger.shift(taker_slot, asset, taker_release, false);
            if !expire_maker {
                let maker = &self.books[book_index].slab[maker_slot as usize];
                let status = if maker.executed.is_zero() {
                    OrderStatus::New
                } else {
                    OrderStatus::PartiallyFilled
                };
                let market = self.books[book_index].id;
                events.push(maker.state(market, status, self.now_ms));
                let reduced = ExecutionKind::Prevented(maker_side);
                events.push(maker.execution(market, reduced, status, self.now_ms));
            }
        }
        if expire_maker {
            let end = End::Prevented(maker_side);
            self.remove_resting(book_index, maker_slot, end, events);
        }
        expire_taker
    }

    /// Books one fill between the taker and the maker in `maker_slot`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn settle(
        &mut self,
        book_index: usize,
        (taker_slot, taker): (usize, &mut Order),
        maker_slot: u32,
        price: Amount,
        quantity: Amount,
        quote_quantity: Amount,
        events: &mut Vec<Event>,
    ) {
        let book = &mut self.books[book_index];
        let (base, quote) = (book.base, book.quote);
        let (maker_rate, taker_rate) = (book.market.maker_fee, book.market.taker_fee);
        let maker = &book.slab[maker_slot as usize];
        let (maker_id, maker_account, maker_price) = (maker.order_id, maker.account, maker.price);
        let taker_side = taker.side;
        // The buyer's lock shrinks by what this fill may cost at its own limit
        // (maker buys: their price; taker buys: their limit, or the quote paid
        // for market orders); the seller's by the base sold.
        let taker_spent = match taker_side {
            Side::Buy if taker.price.is_zero() => quote_quantity,
            Side::Buy => mul(taker.price, quantity).expect(BROKEN),
            Side::Sell => quantity,
        };
        let maker_spent = match taker_side {
            Side::Buy => quantity,
            Side::Sell => mul(maker_price, quantity).expect(BROKEN),
        };
        let (buyer_rate, seller_rate, buyer_spent) = match taker_side {
            Side::Buy => (taker_rate, maker_rate, taker_spent),
            Side::Sell => (maker_rate, taker_rate, maker_spent),
        };
        let buyer_fee = quantity.checked_mul(buyer_rate).expect(BROKEN);
        let seller_fee = quote_quantity.checked_mul(seller_rate).expect(BROKEN);
        // Buyer: its quote reservation for this fill is released, the part
        // not paid (price improvement) back to free; it receives base net of fee.
        let improvement = buyer_spent.checked_sub(quote_quantity).expect(BROKEN);
        let buyer_gets = quantity.checked_sub(buyer_fee).expect(BROKEN);
        let seller_gets = quote_quantity.checked_sub(seller_fee).expect(BROKEN);

        let maker_slot_in_ledger = self.ledger.slot(maker_account);
        let (buyer, seller) = match taker_side {
            Side::Buy => (taker_slot, maker_slot_in_ledger),
            Side::Sell => (maker_slot_in_ledger, taker_slot),
        };
        let ledger = &mut self.ledger;
        ledger.settle_leg(buyer, quote, buyer_spent, improvement);
        ledger.settle_leg(buyer, base, Amount::ZERO, buyer_gets);
        // Seller: its base reservation goes; it receives quote net of fee.
        ledger.settle_leg(seller, base, quantity, Amount::ZERO);
        ledger.settle_leg(seller, quote, Amount::ZERO, seller_gets);
        let fees = ledger.fee_slot;
        ledger.settle_leg(fees, base, Amount::ZERO, buyer_fee);
        ledger.settle_leg(fees, quote, Amount::ZERO, seller_fee);
        taker.fill(quantity, quote_quantity, taker_spent);

        let trade_id = book.next_trade_id;
        book.next_trade_id += 1;
        let (maker_fee, taker_fee) = match taker_side {
            Side::Buy => (seller_fee, buyer_fee),
            Side::Sell => (buyer_fee, seller_fee),
        };
        events.push(Event::Trade(Trade {
            market: book.id,
            trade_id,
            price,
            quantity,
            quote_quantity,
            maker: (maker_id, maker_account),
            taker: (taker.order_id, taker.account),
            taker_side,
            maker_fee,
            taker_fee,
            time_ms: self.now_ms,
        }));

        // Each side pays its fee in what it receives: the buyer base, the
        // seller quote.
        let (taker_fee_asset, maker_fee_asset) = match taker_side {
            Side::Buy => (base, quote),
            Side::Sell => (quote, base),
        };
        let fill = |fee, fee_asset, maker| Fill {
            trade_id,
            price,
            quantity,
            quote_quantity,
            fee,
            fee_asset,
            maker,
        };
        self.taker_log.fills.push((
            fill(taker_fee, taker_fee_asset, false),
            taker.executed,
            taker.cumulative_quote,
        ));
        let maker = &mut book.slab[maker_slot as usize];
        maker.fill(quantity, quote_quantity, maker_spent);
        let status = if maker.remaining.is_zero() {
            OrderStatus::Filled
        } else {
            OrderStatus::PartiallyFilled
        };
        let filled = ExecutionKind::Trade(fill(maker_fee, maker_fee_asset, true));
        events.push(maker.execution(book.id, filled, status, self.now_ms));
        let levels = match maker.side {
            Side::Buy => &mut book.bids,
            Side::Sell => &mut book.asks,
        };
        let level = levels.get_mut(&price).expect(BROKEN);
        level.quantity = sure(level.quantity.checked_sub(quantity));
        events.push(Event::Level {
            market: book.id,
            side: maker.side,
            price,
            quantity: level.quantity,
        });
        if maker.remaining.is_zero() {
            self.remove_resting(book_index, maker_slot, End::Filled, events);
        } else {
            events.push(maker.state(book.id, OrderStatus::PartiallyFilled, self.now_ms));
        }
        // Each changed account once, the fee account too when it earned.
        let fees_earned = !(buyer_fee.is_zero() && seller_fee.is_zero());
        self.ledger.emit_pair(buyer, (base, quote), events);
        if seller != buyer {
            self.ledger.emit_pair(seller, (base, quote), events);
        }
        if fees_earned && fees != buyer && fees != seller {
            self.ledger.emit_pair(fees, (base, quote), events);
        }
    }

    /// Takes a resting order off the book, releasing what it still locks.
    pub(crate) fn remove_resting(
        &mut self,
        book_index: usize,
        slot: u32,
        end: End,
        events: &mut Vec<Event>,
    ) {
        let book = &mut self.books[book_index];
        let (order, level_quantity) = book.unlink(slot);
        events.push(Event::Level {
            market: book.id,
            side: order.side,
            price: order.price,
            quantity: level_quantity,
        });
        let status = end.status();
        events.push(order.state(book.id, status, self.now_ms));
        if let Some(kind) = end.execution() {
            events.push(order.execution(book.id, kind, status, self.now_ms));
        }
        if !order.locked.is_zero() {
            let asset = book.locked_asset(order.side);
            let owner = self.ledger.slot(order.account);
            self.ledger.shift(owner, asset, order.locked, false);
            self.ledger.emit(owner, asset, events);
        }
    }
}
