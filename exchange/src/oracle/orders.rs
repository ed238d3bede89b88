//! The model's orders: placing (waiting for a trigger, or working),
//! matching and settling, and showing trades to waiting orders.

use super::*;

impl Model {
    /// Takes a waiting order, already out of its list, out with `status`.
    pub(super) fn end_waiting(
        &mut self,
        market: MarketId,
        waiting: Waiting,
        status: OrderStatus,
        time_ms: u64,
        outcome: &mut Outcome,
    ) {
        let (base, quote) = self.catalog.pair(market).expect("a known market");
        let asset = if waiting.order.side == Side::Buy {
            quote
        } else {
            base
        };
        self.shift(waiting.account, asset, waiting.lock, false);
        outcome.orders.insert(
            (market, waiting.id),
            OrderState {
                market,
                order_id: waiting.id,
                account: waiting.account,
                status,
                executed: Amount::ZERO,
                cumulative_quote: Amount::ZERO,
                time_ms,
            },
        );
    }

    /// A new order: a conditional one waits; any other works, and then
    /// every trade it made is shown to the waiting orders.
    pub(super) fn place(
        &mut self,
        account: AccountId,
        order: &NewOrder,
        time_ms: u64,
        outcome: &mut Outcome,
    ) -> Step<()> {
        if order.order_type.is_conditional() {
            return self.wait(account, order, time_ms, (None, Amount::ZERO), outcome);
        }
        if order.trigger.is_some() {
            return Err(Reject::BadTrigger);
        }
        let seen = outcome.trades.len();
        self.work(account, order, time_ms, None, outcome)?;
        self.aftermath(order.market, seen, time_ms, outcome);
        Ok(())
    }

    /// A conditional order: refused as any order would be, or because the
    /// last price already meets its stop; otherwise its funds are locked
    /// (a market buy by quantity locks nothing: its cost is unknown) and it
    /// waits.
    pub(super) fn wait(
        &mut self,
        account: AccountId,
        order: &NewOrder,
        time_ms: u64,
        (announced, covered): (Option<u64>, Amount),
        outcome: &mut Outcome,
    ) -> Step<()> {
        let trigger = order.trigger.ok_or(Reject::BadTrigger)?;
        if trigger.stop_price.is_none() && trigger.trailing_delta.is_none() {
            return Err(Reject::BadTrigger);
        }
        let is_limit = matches!(
            order.order_type,
            OrderType::StopLossLimit | OrderType::TakeProfitLimit
        );
        let quantity = match (order.quantity, order.quote_quantity) {
            (Some(quantity), None) if is_limit == order.price.is_some() => quantity,
            _ => return Err(Reject::BadTrigger),
        };
        let market = self
            .catalog
            .market(order.market)
            .ok_or(Reject::UnknownSymbol)?
            .clone();
        let (base, quote) = self.catalog.pair(order.market).expect("a known market");
        if off_grid(order.price, market.tick_size)
            || off_grid(trigger.stop_price, market.tick_size)
            || off_grid(Some(quantity), market.step_size)
        {
            return Err(Reject::OffGrid);
        }
        let book = self.book(order.market)?;
        let resting: Vec<&Resting> = book.all().filter(|o| o.account == account).collect();
        let waiting: Vec<&Waiting> = book
            .waiting
            .iter()
            .filter(|w| w.account == account)
            .collect();
        if book.names(account, &order.client_order_id) {
            return Err(Reject::DuplicateClientOrderId);
        }
        if resting.len() + waiting.len() >= market.max_num_orders as usize {
            return Err(Reject::TooManyOrders);
        }
        if waiting.len() >= market.max_num_algo_orders as usize {
            return Err(Reject::TooManyAlgoOrders);
        }
        if let (Some(stop), Some(last)) = (trigger.stop_price, book.last)
            && Trigger::reached(stop, last, order.order_type, order.side)
        {
            return Err(Reject::WouldTrigger);
        }
        let need = match (order.side, order.price) {
            (Side::Buy, None) => Amount::ZERO,
            (Side::Buy, Some(price)) => price.checked_mul(quantity).ok_or(Reject::Overflow)?,
            (Side::Sell, price) => {
                if let Some(price) = price {
                    price.checked_mul(quantity).ok_or(Reject::Overflow)?;
                }
                quantity
            }
        };
        // In an OCO pair, what the other order locks already counts.
        let lock = need.checked_sub(covered).unwrap_or(Amount::ZERO);
        let asset = if order.side == Side::Buy { quote } else { base };
        if self.balance(account, asset).0 < lock {
            return Err(Reject::InsufficientBalance);
        }
        self.shift(account, asset, lock, true);
        let book = &mut self.books[usize::from(order.market.0)];
        let id = announced.unwrap_or_else(|| book.take_order_id());
        let tracking = trigger.stop_price.is_none();
        if tracking {
            outcome.tracking.insert((order.market, id));
        }
        let at = book.waiting.partition_point(|w| w.id < id);
        let best = if tracking { book.last } else { None };
        book.waiting.insert(
            at,
            Waiting {
                id,
                account,
                order: order.clone(),
                lock,
                tracking,
                best,
            },
        );
        outcome.orders.insert(
            (order.market, id),
            OrderState {
                market: order.market,
                order_id: id,
                account,
                status: OrderStatus::New,
                executed: Amount::ZERO,
                cumulative_quote: Amount::ZERO,
                time_ms,
            },
        );
        Ok(())
    }

    /// Shows the trades from `outcome.trades[seen..]`, one price at a time,
    /// to every waiting order of `market`; those they trigger work in
    /// the order they triggered, and their trades are shown in turn.
    pub(super) fn show_trades(
        &mut self,
        market: MarketId,
        seen: usize,
        time_ms: u64,
        outcome: &mut Outcome,
    ) {
        {
            let prices: Vec<Amount> = outcome.trades[seen..].iter().map(|t| t.price).collect();
            let book = &mut self.books[usize::from(market.0)];
            let mut fired = Vec::new();
            for price in prices {
                book.last = Some(price);
                let mut index = 0;
                while index < book.waiting.len() {
                    let waiting = &mut book.waiting[index];
                    let was_tracking = waiting.tracking;
                    let fires = waiting.sees(price);
                    if waiting.tracking && !was_tracking {
                        outcome.tracking.insert((market, waiting.id));
                    }
                    if fires {
                        fired.push(book.waiting.remove(index));
                    } else {
                        index += 1;
                    }
                }
            }
            if fired.is_empty() {
                return;
            }
            for waiting in fired {
                outcome.triggered.push((market, waiting.id));
                // Its OCO partner goes first.
                self.expire_partner(market, waiting.id, time_ms, outcome);
                let (base, quote) = self.catalog.pair(market).expect("a known market");
                let asset = if waiting.order.side == Side::Buy {
                    quote
                } else {
                    base
                };
                self.shift(waiting.account, asset, waiting.lock, false);
                let working = NewOrder {
                    order_type: if waiting.order.price.is_some() {
                        OrderType::Limit
                    } else {
                        OrderType::Market
                    },
                    trigger: None,
                    ..waiting.order.clone()
                };
                if self
                    .work(
                        waiting.account,
                        &working,
                        time_ms,
                        Some(waiting.id),
                        outcome,
                    )
                    .is_err()
                {
                    let expired = Waiting {
                        lock: Amount::ZERO,
                        ..waiting
                    };
                    self.end_waiting(market, expired, OrderStatus::Expired, time_ms, outcome);
                }
            }
        }
    }

    /// Puts a market, limit or post-only order to work under the next id,
    /// or under `triggered`, its own.
    pub(super) fn work(
        &mut self,
        account: AccountId,
        order: &NewOrder,
        time_ms: u64,
        triggered: Option<u64>,
        outcome: &mut Outcome,
    ) -> Step<()> {
        let market = self
            .catalog
            .market(order.market)
            .ok_or(Reject::UnknownSymbol)?
            .clone();
        let (base, quote) = self.catalog.pair(order.market).expect("a known market");
        if off_grid(order.price, market.tick_size) || off_grid(order.quantity, market.step_size) {
            return Err(Reject::OffGrid);
        }
        let book = self.book(order.market)?;
        let open: Vec<&Resting> = book.all().filter(|o| o.account == account).collect();
        let waiting: Vec<&Waiting> = book
            .waiting
            .iter()
            .filter(|w| w.account == account)
            .collect();
        if book.names(account, &order.client_order_id) {
            return Err(Reject::DuplicateClientOrderId);
        }
        if order.order_type != OrderType::Market
            && open.len() + waiting.len() >= market.max_num_orders as usize
        {
            return Err(Reject::TooManyOrders);
        }
        // Whatever self-trade prevention would do: crossing is taking.
        if order.order_type == OrderType::LimitMaker
            && let Some(best) = book.opposite(order.side).first()
            && !beyond(order.side, best.price, order.price)
        {
            return Err(Reject::WouldTake);
        }
        let mut taker = Taker {
            id: 0,
            account,
            side: order.side,
            limit: order.price,
            stp: order.stp,
            base_left: order.quantity,
            quote_left: order.quote_quantity,
            executed: Amount::ZERO,
            quote: Amount::ZERO,
        };
        // What matching would fill now, tried on a copy of the book.
        let (trial, _) = sweep(&mut book.clone(), &mut taker.clone(), market.step_size);
        let fills = trial.iter().filter_map(|m| match m {
            Meeting::Fill {
                quantity, quote, ..
            } => Some((u128::from(quantity.units()), u128::from(quote.units()))),
            // DECREMENT uses quantity up without cost.
            Meeting::Decremented { quantity, .. } => Some((u128::from(quantity.units()), 0)),
            Meeting::Expired(_) | Meeting::Prevented(_) => None,
        });
        let (could_base, could_quote) = fills.fold((0, 0), |(b, q), (fb, fq)| (b + fb, q + fq));
        if order.time_in_force == TimeInForce::Fok
            && Some(could_base) != order.quantity.map(|q| u128::from(q.units()))
        {
            // It still takes an id, as Binance reports the order it expired.
            let id = triggered.unwrap_or_else(|| book.take_order_id());
            let state = OrderState {
                market: order.market,
                order_id: id,
                account,
                status: OrderStatus::Expired,
                executed: Amount::ZERO,
                cumulative_quote: Amount::ZERO,
                time_ms,
            };
            outcome.orders.insert((order.market, id), state);
            return Ok(());
        }
        let fits = |units: u128| u64::try_from(units).map(Amount::from_units);
        let by_quote = order.quote_quantity.is_some();
        let is_market = order.order_type == OrderType::Market;
        let lock = match (order.side, is_market) {
            (Side::Buy, true) => match order.quote_quantity {
                Some(amount) => amount,
                None => fits(could_quote).map_err(|_| Reject::Overflow)?,
            },
            (Side::Buy, false) => order
                .price
                .zip(order.quantity)
                .and_then(|(p, q)| p.checked_mul(q))
                .ok_or(Reject::Overflow)?,
            (Side::Sell, true) if by_quote => fits(could_base).map_err(|_| Reject::Overflow)?,
            (Side::Sell, _) => {
                // What a limit sell could receive must be an amount too.
                if let (Some(p), Some(q)) = (order.price, order.quantity) {
                    p.checked_mul(q).ok_or(Reject::Overflow)?;
                }
                order.quantity.ok_or(Reject::Overflow)?
            }
        };
        let lock_asset = if order.side == Side::Buy { quote } else { base };
        if self.balance(account, lock_asset).0 < lock {
            return Err(Reject::InsufficientBalance);
        }
        self.shift(account, lock_asset, lock, true);
        let book = &mut self.books[usize::from(order.market.0)];
        taker.id = triggered.unwrap_or_else(|| book.take_order_id());
        let (met, expired_in_match) = sweep(book, &mut taker, market.step_size);
        let mut reserved = lock;
        for meeting in met {
            match meeting {
                Meeting::Prevented(mut prevention) => {
                    let book = &mut self.books[usize::from(order.market.0)];
                    prevention.market = order.market;
                    prevention.id = book.next_prevented;
                    prevention.time_ms = time_ms;
                    book.next_prevented += 1;
                    outcome.prevented.push(prevention);
                }
                Meeting::Decremented { maker, quantity } => {
                    // The maker keeps the lock of what is left of it; the
                    // taker gives back what it reserved for the quantity
                    // (at its limit for a buy; a market buy reserved nothing).
                    let maker_asset = if maker.side == Side::Buy { quote } else { base };
                    let released = match maker.side {
                        Side::Buy => mul(maker.price, quantity),
                        Side::Sell => quantity,
                    };
                    self.shift(maker.account, maker_asset, released, false);
                    let status = if maker.remaining.is_zero() {
                        OrderStatus::ExpiredInMatch
                    } else if maker.executed.is_zero() {
                        OrderStatus::New
                    } else {
                        OrderStatus::PartiallyFilled
                    };
                    outcome.orders.insert(
                        (order.market, maker.id),
                        maker.state(order.market, status, time_ms),
                    );
                    let taker_released = match (order.side, order.price) {
                        (Side::Buy, Some(limit)) => mul(limit, quantity),
                        (Side::Buy, None) => Amount::ZERO,
                        (Side::Sell, _) => quantity,
                    };
                    reserved = reserved
                        .checked_sub(taker_released)
                        .expect("model: within the lock");
                    self.shift(account, lock_asset, taker_released, false);
                }
                Meeting::Expired(maker) => {
                    self.end(
                        order.market,
                        maker,
                        OrderStatus::ExpiredInMatch,
                        time_ms,
                        outcome,
                    );
                }
                Meeting::Fill {
                    maker,
                    quantity,
                    quote: paid,
                } => {
                    let fill = (quantity, paid, time_ms);
                    let (trade, used) = self.settle(order.market, &taker, &maker, fill);
                    reserved = reserved.checked_sub(used).expect("model: within the lock");
                    outcome.trades.push(trade);
                    let status = if maker.remaining.is_zero() {
                        OrderStatus::Filled
                    } else {
                        OrderStatus::PartiallyFilled
                    };
                    outcome.orders.insert(
                        (order.market, maker.id),
                        maker.state(order.market, status, time_ms),
                    );
                }
            }
        }
        let done = if by_quote {
            taker.quote_left == Some(Amount::ZERO)
        } else {
            taker.base_left == Some(Amount::ZERO)
        };
        let status = if expired_in_match {
            OrderStatus::ExpiredInMatch
        } else if done {
            OrderStatus::Filled
        } else if is_market || order.time_in_force != TimeInForce::Gtc {
            OrderStatus::Expired
        } else if taker.executed.is_zero() {
            OrderStatus::New
        } else {
            OrderStatus::PartiallyFilled
        };
        let resting = Resting {
            id: taker.id,
            account,
            side: order.side,
            price: order.price.unwrap_or_default(),
            remaining: taker.base_left.unwrap_or_default(),
            executed: taker.executed,
            quote: taker.quote,
            client_id: order.client_order_id.clone(),
        };
        outcome.orders.insert(
            (order.market, taker.id),
            resting.state(order.market, status, time_ms),
        );
        if matches!(status, OrderStatus::New | OrderStatus::PartiallyFilled) {
            assert_eq!(
                reserved,
                resting.lock(),
                "model: a resting order keeps its remainder"
            );
            self.books[usize::from(order.market.0)].rest(resting);
        } else {
            self.shift(account, lock_asset, reserved, false);
        }
        Ok(())
    }

    /// Books one fill of `quantity` for `paid` quote between `taker` and
    /// `maker` at `time_ms`; fees come out of what each side receives.
    /// Returns the trade and how much of the taker's reservation it used.
    pub(super) fn settle(
        &mut self,
        market_id: MarketId,
        taker: &Taker,
        maker: &Resting,
        (quantity, paid, time_ms): (Amount, Amount, u64),
    ) -> (Trade, Amount) {
        let market = self.catalog.market(market_id).expect("a known market");
        let (base, quote) = self.catalog.pair(market_id).expect("a known market");
        let taker_fee = fee(market, taker, quantity, paid, true);
        let maker_fee = fee(market, taker, quantity, paid, false);
        let taker_buys = taker.side == Side::Buy;
        let (buyer, seller, buyer_fee, seller_fee) = if taker_buys {
            (taker.account, maker.account, taker_fee, maker_fee)
        } else {
            (maker.account, taker.account, maker_fee, taker_fee)
        };
        // A buy reserved this quantity at its own limit (a resting buy's is
        // the trade price); a market buy reserved exactly what it pays.
        let buyer_reserved = match (taker_buys, taker.limit) {
            (true, Some(limit)) => mul(limit, quantity),
            _ => paid,
        };
        self.spend(buyer, quote, buyer_reserved, paid);
        self.add(
            buyer,
            base,
            quantity.checked_sub(buyer_fee).expect("fee below 1"),
        );
        self.spend(seller, base, quantity, quantity);
        self.add(
            seller,
            quote,
            paid.checked_sub(seller_fee).expect("fee below 1"),
        );
        self.add(self.fee_account, base, buyer_fee);
        self.add(self.fee_account, quote, seller_fee);
        let book = &mut self.books[usize::from(market_id.0)];
        let trade = Trade {
            market: market_id,
            trade_id: book.next_trade,
            price: maker.price,
            quantity,
            quote_quantity: paid,
            maker: (maker.id, maker.account),
            taker: (taker.id, taker.account),
            taker_side: taker.side,
            maker_fee,
            taker_fee,
            time_ms,
        };
        book.next_trade += 1;
        (trade, if taker_buys { buyer_reserved } else { quantity })
    }
}

/// The fee the taker (`of_taker`) or the maker pays on a fill: a rate of what
/// it receives, base for the buyer and quote for the seller, rounded down.
pub(super) fn fee(
    market: &Market,
    taker: &Taker,
    quantity: Amount,
    paid: Amount,
    of_taker: bool,
) -> Amount {
    let rate = if of_taker {
        market.taker_fee
    } else {
        market.maker_fee
    };
    let buys = (taker.side == Side::Buy) == of_taker;
    let received = if buys { quantity } else { paid };
    mul(received, rate)
}
