//! Ending orders on their owner's request: one order (its whole list if it
//! belongs to one), every order of an account on a market, and cancel-replace.

use super::*;

impl Engine {
    /// Cancels open order `order_id` of `account`, resting or waiting; an
    /// order of a list takes its whole list with it.
    pub(crate) fn cancel(
        &mut self,
        account: AccountId,
        market: MarketId,
        order_id: u64,
        events: &mut Vec<Event>,
    ) -> Result<(), Reject> {
        let index = usize::from(market.0);
        let book = self.books.get(index).ok_or(Reject::UnknownSymbol)?;
        if let Some(&list_id) = book.list_of.get(&order_id) {
            // An order of a list goes with the whole list.
            return self.cancel_list(account, market, list_id, events);
        }
        if let Some(slot) = book.slots.get(order_id) {
            if book.slab[slot as usize].account != account {
                return Err(Reject::UnknownOrder);
            }
            self.remove_resting(index, slot, End::Canceled, events);
            return Ok(());
        }
        let at = book
            .pending
            .iter()
            .position(|p| p.order_id == order_id && p.account == account)
            .ok_or(Reject::UnknownOrder)?;
        self.remove_pending(index, at, End::Canceled, events);
        Ok(())
    }

    /// Cancel, then place; refused whole if the cancel fails (unless
    /// `allow_failure`) or if both fail.
    pub(crate) fn replace(
        &mut self,
        account: AccountId,
        market: MarketId,
        order_id: u64,
        order: NewOrder,
        allow_failure: bool,
        events: &mut Vec<Event>,
    ) -> Result<(), Reject> {
        let canceled = self.cancel(account, market, order_id, events);
        if let Err(reject) = canceled
            && !allow_failure
        {
            return Err(reject);
        }
        if let Err(reject) = canceled {
            events.push(Event::PartRefused(reject));
        }
        match (canceled, self.place(account, order, events)) {
            (Err(_), Err(reject)) => Err(reject),
            (Ok(()), Err(reject)) => {
                events.push(Event::PartRefused(reject));
                Ok(())
            }
            (_, Ok(())) => Ok(()),
        }
    }

    /// Cancels every open order of `account` on `market`, oldest first.
    pub(crate) fn cancel_all(
        &mut self,
        account: AccountId,
        market: MarketId,
        events: &mut Vec<Event>,
    ) -> Result<(), Reject> {
        let index = usize::from(market.0);
        let book = self.books.get(index).ok_or(Reject::UnknownSymbol)?;
        // Resting and waiting orders together, oldest first.
        let mut mine: Vec<(u64, Option<u32>)> = book
            .own_slots(account)
            .map(|slot| (book.slab[slot as usize].order_id, Some(slot)))
            .collect();
        // Lists whose working order already ended hold only pending orders.
        mine.extend(
            book.lists
                .values()
                .filter(|l| l.account == account)
                .flat_map(|l| l.deferred.iter().map(|(id, _)| (*id, None))),
        );
        mine.extend(
            book.pending
                .iter()
                .filter(|p| p.account == account)
                .map(|p| (p.order_id, None)),
        );
        if mine.is_empty() {
            return Err(Reject::UnknownOrder);
        }
        mine.sort_unstable();
        for (order_id, _) in mine {
            let book = &self.books[index];
            if let Some(&list_id) = book.list_of.get(&order_id) {
                self.cancel_list(account, market, list_id, events)?;
            } else {
                // Still open unless its list went before it.
                self.end_order(index, order_id, End::Canceled, events);
            }
        }
        Ok(())
    }
}
