//! Amending an order in place: its quantity reduced, its id and its place
//! in the queue kept, what it no longer needs unlocked. An order of an OCO
//! pair is not amended (the pair shares one lock and one quantity).

use super::*;

impl Engine {
    /// Reduces order `order_id` of `account` to `quantity` in all (filled
    /// part included): resting, waiting for its trigger, or pending in a
    /// list; renamed `new_name` if given. Down to what is filled already,
    /// the order is complete.
    pub(crate) fn amend(
        &mut self,
        account: AccountId,
        market: MarketId,
        (order_id, new_name): (u64, Option<String>),
        quantity: Amount,
        events: &mut Vec<Event>,
    ) -> Result<(), Reject> {
        let index = usize::from(market.0);
        let book = self.books.get_mut(index).ok_or(Reject::UnknownSymbol)?;
        if !book.market.on_grid(&[], Some(quantity)) {
            return Err(Reject::OffGrid);
        }
        if let Some(list) = book
            .list_of
            .get(&order_id)
            .and_then(|id| book.lists.get(id))
            && list.account == account
            && list.pair.len() == 2
            && list.pair.contains(&order_id)
        {
            return Err(Reject::BadList);
        }
        if let Some(name) = &new_name
            && book
                .client_ids
                .get(&account)
                .and_then(|ids| ids.get(name))
                .is_some_and(|id| *id != order_id)
        {
            return Err(Reject::DuplicateClientOrderId);
        }
        let now_ms = self.now_ms;
        if let Some(slot) = book.slots.get(order_id) {
            let order = &book.slab[slot as usize];
            if order.account != account {
                return Err(Reject::UnknownOrder);
            }
            let current = sure(order.executed.checked_add(order.remaining));
            let cut = shrink(current, quantity)?;
            if quantity <= order.executed {
                // Nothing left to fill: the order is complete at what it filled.
                events.push(Event::Amended {
                    market,
                    order_id,
                    quantity: order.executed,
                });
                let replaced = ExecutionKind::Replaced;
                events.push(order.execution(market, replaced, OrderStatus::Filled, now_ms));
                let start = events.len();
                self.remove_resting(index, slot, End::Filled, events);
                // A list's working order complete: its pending orders follow.
                self.set_off(index, start, events);
                return Ok(());
            }
            let (side, price) = (order.side, order.price);
            let old_name = order.client_order_id.clone();
            let release = match side {
                Side::Buy => sure(mul(price, cut)),
                Side::Sell => cut,
            };
            let order = &mut book.slab[slot as usize];
            if let Some(name) = &new_name {
                order.client_order_id = Some(name.as_str().into());
            }
            order.remaining = sure(order.remaining.checked_sub(cut));
            order.locked = sure(order.locked.checked_sub(release));
            let status = if order.executed.is_zero() {
                OrderStatus::New
            } else {
                OrderStatus::PartiallyFilled
            };
            let state = order.state(book.id, status, now_ms);
            let replaced = order.execution(book.id, ExecutionKind::Replaced, status, now_ms);
            let levels = match side {
                Side::Buy => &mut book.bids,
                Side::Sell => &mut book.asks,
            };
            let level = levels.get_mut(&price).expect(BROKEN);
            level.quantity = sure(level.quantity.checked_sub(cut));
            let level_quantity = level.quantity;
            let asset = book.locked_asset(side);
            book.rename(account, order_id, old_name.as_deref(), new_name.as_deref());
            events.push(Event::Amended {
                market,
                order_id,
                quantity,
            });
            events.push(Event::Level {
                market,
                side,
                price,
                quantity: level_quantity,
            });
            events.push(state);
            events.push(replaced);
            let owner = self.ledger.slot(account);
            self.ledger.shift(owner, asset, release, false);
            self.ledger.emit(owner, asset, events);
            return Ok(());
        }
        if let Some(at) = book
            .pending
            .iter()
            .position(|p| p.order_id == order_id && p.account == account)
        {
            let asset = book.locked_asset(book.pending[at].order.side);
            let pending = &mut book.pending[at];
            let current = pending.order.quantity.ok_or(Reject::UnknownOrder)?;
            let cut = shrink(current, quantity)?;
            let release = match (pending.order.side, pending.order.price) {
                (Side::Buy, Some(price)) => sure(mul(price, cut)),
                (Side::Buy, None) => Amount::ZERO,
                (Side::Sell, _) => cut,
            };
            pending.order.quantity = Some(quantity);
            pending.locked = sure(pending.locked.checked_sub(release));
            let old_name = match &new_name {
                Some(name) => pending.order.client_order_id.replace(name.clone()),
                None => pending.order.client_order_id.clone(),
            };
            book.rename(account, order_id, old_name.as_deref(), new_name.as_deref());
            events.push(Event::Amended {
                market,
                order_id,
                quantity,
            });
            events.push(Event::Order(OrderState {
                market,
                order_id,
                account,
                status: OrderStatus::New,
                executed: Amount::ZERO,
                cumulative_quote: Amount::ZERO,
                time_ms: now_ms,
            }));
            let id = (market, order_id, account);
            let replaced = ExecutionKind::Replaced;
            events.push(unfilled(id, replaced, OrderStatus::New, now_ms));
            let owner = self.ledger.slot(account);
            self.ledger.shift(owner, asset, release, false);
            self.ledger.emit(owner, asset, events);
            return Ok(());
        }
        // An order of a list waiting for its working order: nothing locked.
        let deferred = book
            .list_of
            .get(&order_id)
            .and_then(|id| book.lists.get_mut(id))
            .filter(|list| list.account == account)
            .and_then(|list| list.deferred.iter_mut().find(|(id, _)| *id == order_id))
            .ok_or(Reject::UnknownOrder)?;
        let current = deferred.1.quantity.ok_or(Reject::UnknownOrder)?;
        shrink(current, quantity)?;
        deferred.1.quantity = Some(quantity);
        let old_name = match &new_name {
            Some(name) => deferred.1.client_order_id.replace(name.clone()),
            None => deferred.1.client_order_id.clone(),
        };
        book.rename(account, order_id, old_name.as_deref(), new_name.as_deref());
        events.push(Event::Amended {
            market,
            order_id,
            quantity,
        });
        events.push(Event::Order(OrderState {
            market,
            order_id,
            account,
            status: OrderStatus::PendingNew,
            executed: Amount::ZERO,
            cumulative_quote: Amount::ZERO,
            time_ms: now_ms,
        }));
        let id = (market, order_id, account);
        let replaced = ExecutionKind::Replaced;
        events.push(unfilled(id, replaced, OrderStatus::PendingNew, now_ms));
        Ok(())
    }
}

/// How much an amend from `current` to `quantity` takes off: only less.
fn shrink(current: Amount, quantity: Amount) -> Result<Amount, Reject> {
    match quantity.cmp(&current) {
        std::cmp::Ordering::Greater => Err(Reject::AmendIncrease),
        std::cmp::Ordering::Equal => Err(Reject::AmendNoChange),
        std::cmp::Ordering::Less => Ok(sure(current.checked_sub(quantity))),
    }
}
