//! One market's book: resting orders in a slab, linked into their price level (time
//! order) and their owner's list, with an order-id index.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use super::*;

/// No slot: the end of a linked list.
pub(crate) const NIL: u32 = u32::MAX;

/// A resting order (or, while it matches, the incoming one).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Order {
    pub(crate) order_id: u64,
    pub(crate) account: AccountId,
    pub(crate) side: Side,
    pub(crate) price: Amount,
    pub(crate) remaining: Amount,
    pub(crate) executed: Amount,
    pub(crate) cumulative_quote: Amount,
    /// What is still locked for this order (quote for buys, base for sells).
    pub(crate) locked: Amount,
    pub(crate) stp: StpMode,
    pub(crate) client_order_id: Option<Box<str>>,
    /// Neighbours in the price level, in time order.
    pub(crate) prev: u32,
    pub(crate) next: u32,
    /// Neighbours in the owner's list of open orders on this market.
    pub(crate) own_prev: u32,
    pub(crate) own_next: u32,
}

impl Order {
    /// Its state as an event.
    pub(crate) fn state(&self, market: MarketId, status: OrderStatus, time_ms: u64) -> Event {
        Event::Order(OrderState {
            market,
            order_id: self.order_id,
            account: self.account,
            status,
            executed: self.executed,
            cumulative_quote: self.cumulative_quote,
            time_ms,
        })
    }

    /// Books a fill of `quantity` for `quote` that consumes `spent` of the lock.
    pub(crate) fn fill(&mut self, quantity: Amount, quote: Amount, spent: Amount) {
        self.remaining = self.remaining.checked_sub(quantity).expect(BROKEN);
        self.executed = self.executed.checked_add(quantity).expect(BROKEN);
        self.cumulative_quote = self.cumulative_quote.checked_add(quote).expect(BROKEN);
        self.locked = self.locked.checked_sub(spent).expect(BROKEN);
    }
}

/// A conditional order waiting for its trigger. Its funds are locked as the
/// order it becomes would lock them (nothing for a market buy by quantity,
/// whose cost is known only when it works).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Pending {
    pub(crate) order_id: u64,
    pub(crate) account: AccountId,
    /// As placed: a conditional type with its trigger.
    pub(crate) order: NewOrder,
    pub(crate) locked: Amount,
    /// A trailing order tracks the price once its stop price is reached (at
    /// once without one).
    pub(crate) tracking: bool,
    /// While tracking: the best price since, the highest for a sell and the
    /// lowest for a buy (none before the first trade).
    pub(crate) extremum: Option<Amount>,
}

impl Pending {
    /// Follows one trade at `price`; returns whether the order triggers.
    /// Trailing: a sell triggers once the price has fallen `delta` basis
    /// points from its highest since tracking began, a buy once it has risen
    /// that much from its lowest; the trade that starts tracking only sets
    /// the extreme.
    pub(crate) fn follow(&mut self, price: Amount) -> bool {
        let Some(trigger) = self.order.trigger else {
            return false;
        };
        let (order_type, side) = (self.order.order_type, self.order.side);
        let Some(delta) = trigger.trailing_delta else {
            return trigger
                .stop_price
                .is_some_and(|stop| Trigger::reached(stop, price, order_type, side));
        };
        if !self.tracking {
            if trigger
                .stop_price
                .is_some_and(|stop| Trigger::reached(stop, price, order_type, side))
            {
                self.tracking = true;
                self.extremum = Some(price);
            }
            return false;
        }
        let Some(extremum) = self.extremum else {
            self.extremum = Some(price);
            return false;
        };
        let (now, best, delta) = (
            u128::from(price.units()) * 10_000,
            u128::from(extremum.units()),
            u128::from(delta),
        );
        match side {
            Side::Sell if price > extremum => {
                self.extremum = Some(price);
                false
            }
            Side::Sell => now <= best * 10_000u128.saturating_sub(delta),
            Side::Buy if price < extremum => {
                self.extremum = Some(price);
                false
            }
            Side::Buy => now >= best * (10_000 + delta),
        }
    }
}

/// An order list while any of its orders is open.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct List {
    pub(crate) account: AccountId,
    pub(crate) contingency: Contingency,
    /// OTO and OTOCO: the working order until it ends.
    pub(crate) working: Option<u64>,
    /// Orders placed only once the working order fills, with their ids.
    pub(crate) deferred: Vec<(u64, NewOrder)>,
    /// The placed orders that cancel each other (while two are open).
    pub(crate) pair: Vec<u64>,
    /// Its orders not yet ended (deferred ones included).
    pub(crate) open: Vec<u64>,
}

/// One price level: a list of order slots in time order.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub(crate) struct Level {
    pub(crate) head: u32,
    pub(crate) tail: u32,
    pub(crate) orders: u32,
    /// Sum of the orders' remaining quantities (the depth at this price).
    pub(crate) quantity: Amount,
}

/// One account's open orders on a market, oldest first.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub(crate) struct Own {
    pub(crate) count: u32,
    pub(crate) head: u32,
    pub(crate) tail: u32,
}

/// Order id → slab slot for open orders. Ids are handed out in sequence, so
/// this is an array from an early open id on: one memory access per
/// lookup, and the front is trimmed as the oldest orders close. An order
/// that stays open long while thousands after it close would pin the front
/// and let the array grow with every id ever issued: once the array is
/// mostly holes, its oldest open orders move to a small map of stragglers.
#[derive(Default, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct OrderIndex {
    pub(crate) first_id: u64,
    pub(crate) slots: std::collections::VecDeque<u32>,
    pub(crate) stragglers: FxHashMap<u64, u32>,
    pub(crate) open: usize,
}

/// Holes the array may hold beyond twice its open orders before its front
/// is moved to the stragglers.
pub(crate) const INDEX_SLACK: usize = 1024;

impl OrderIndex {
    #[inline]
    pub(crate) fn get(&self, order_id: u64) -> Option<u32> {
        if let Some(offset) = order_id.checked_sub(self.first_id)
            && let Some(&slot) = self.slots.get(offset as usize)
            && slot != NIL
        {
            return Some(slot);
        }
        self.straggler(order_id)
    }

    /// Off the array: an old order, or one that rests under an older id (a
    /// triggered one) above the first id of an array that emptied meanwhile.
    #[cold]
    fn straggler(&self, order_id: u64) -> Option<u32> {
        if self.stragglers.is_empty() {
            return None;
        }
        self.stragglers.get(&order_id).copied()
    }

    pub(crate) fn insert(&mut self, order_id: u64, slot: u32) {
        if self.slots.is_empty() {
            self.first_id = order_id;
        } else if order_id < self.first_id {
            // A triggered order rests under its own, older id.
            self.stragglers.insert(order_id, slot);
            self.open += 1;
            return;
        }
        let offset = (order_id - self.first_id) as usize;
        if offset >= self.slots.len() {
            self.slots.resize(offset + 1, NIL);
        }
        self.slots[offset] = slot;
        self.open += 1;
        let in_array = self.open - self.stragglers.len();
        while self.slots.len() > 2 * in_array + INDEX_SLACK {
            if let Some(front) = self.slots.pop_front() {
                if front != NIL {
                    self.stragglers.insert(self.first_id, front);
                }
                self.first_id += 1;
            }
        }
        self.trim_front();
    }

    pub(crate) fn trim_front(&mut self) {
        while self.slots.front() == Some(&NIL) {
            self.slots.pop_front();
            self.first_id += 1;
        }
    }

    pub(crate) fn remove(&mut self, order_id: u64) {
        if order_id < self.first_id {
            if self.stragglers.remove(&order_id).is_some() {
                self.open -= 1;
            }
            return;
        }
        let offset = order_id
            .checked_sub(self.first_id)
            .and_then(|o| usize::try_from(o).ok())
            .filter(|o| *o < self.slots.len() && self.slots[*o] != NIL);
        match offset {
            Some(offset) => {
                self.slots[offset] = NIL;
                self.open -= 1;
            }
            None => {
                if self.stragglers.remove(&order_id).is_some() {
                    self.open -= 1;
                }
            }
        }
        self.trim_front();
    }

    pub(crate) fn len(&self) -> usize {
        self.open
    }

    /// Slots of open orders (stragglers first, in no particular order).
    pub(crate) fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        let array = self.slots.iter().copied().filter(|slot| *slot != NIL);
        self.stragglers.values().copied().chain(array)
    }

    /// Entries the index holds, open or hole: bounded by its open orders.
    #[cfg(test)]
    pub(crate) fn footprint(&self) -> usize {
        self.slots.len() + self.stragglers.len()
    }

    pub(crate) fn reserve(&mut self, additional: usize) {
        self.slots.reserve(additional);
    }
}

#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Book {
    pub(crate) market: Market,
    pub(crate) id: MarketId,
    pub(crate) base: AssetId,
    pub(crate) quote: AssetId,
    /// Price → level. Bids are read from the back.
    pub(crate) bids: BTreeMap<Amount, Level>,
    pub(crate) asks: BTreeMap<Amount, Level>,
    /// Order storage; vacant slots are reused.
    pub(crate) slab: Vec<Order>,
    pub(crate) vacant: Vec<u32>,
    /// Order id → slab slot, for open orders.
    pub(crate) slots: OrderIndex,
    pub(crate) own: FxHashMap<AccountId, Own>,
    /// Client order ids of open orders, per account.
    pub(crate) client_ids: FxHashMap<AccountId, FxHashMap<String, u64>>,
    pub(crate) next_order_id: u64,
    pub(crate) next_trade_id: u64,
    pub(crate) next_prevented_id: u64,
    /// Conditional orders waiting for their trigger, oldest first.
    pub(crate) pending: Vec<Pending>,
    /// Waiting conditional orders per account.
    pub(crate) pending_per_account: FxHashMap<AccountId, u32>,
    /// The last trade's price, what triggers conditional orders.
    pub(crate) last_price: Option<Amount>,
    /// Order lists with open orders, by id.
    pub(crate) lists: FxHashMap<u64, List>,
    /// The list of each open order that belongs to one.
    pub(crate) list_of: FxHashMap<u64, u64>,
}

impl Book {
    pub(crate) fn new(id: MarketId, market: Market, (base, quote): (AssetId, AssetId)) -> Self {
        Self {
            market,
            id,
            base,
            quote,
            bids: BTreeMap::new(),
            asks: BTreeMap::new(),
            slab: Vec::new(),
            vacant: Vec::new(),
            slots: OrderIndex::default(),
            own: FxHashMap::default(),
            client_ids: FxHashMap::default(),
            next_order_id: 1,
            next_trade_id: 1,
            next_prevented_id: 1,
            pending: Vec::new(),
            pending_per_account: FxHashMap::default(),
            last_price: None,
            lists: FxHashMap::default(),
            list_of: FxHashMap::default(),
        }
    }

    /// Allocates room for `orders` resting orders up front, touching the
    /// memory now so that placing them later never waits on the allocator
    /// or on first-touch page faults.
    pub(crate) fn preallocate(&mut self, orders: usize) {
        let start = self.slab.len();
        self.slab.resize(start + orders, Order::default());
        self.vacant
            .extend((start as u32..(start + orders) as u32).rev());
        self.slots.reserve(orders * 2);
    }

    pub(crate) fn take_order_id(&mut self) -> u64 {
        self.next_order_id += 1;
        self.next_order_id - 1
    }

    /// The id of an order starting: the next one for a new order, announced
    /// with [`Event::Placed`], else the one it has.
    pub(crate) fn order_id_for(&mut self, start: Start, events: &mut Vec<Event>) -> u64 {
        match start {
            Start::New => {
                let order_id = self.take_order_id();
                events.push(Event::Placed {
                    market: self.id,
                    order_id,
                });
                order_id
            }
            Start::Listed(order_id) | Start::Triggered(order_id) => order_id,
        }
    }

    /// The asset an order of `side` locks.
    pub(crate) fn locked_asset(&self, side: Side) -> AssetId {
        match side {
            Side::Buy => self.quote,
            Side::Sell => self.base,
        }
    }

    pub(crate) fn levels(&self, side: Side) -> &BTreeMap<Amount, Level> {
        match side {
            Side::Buy => &self.bids,
            Side::Sell => &self.asks,
        }
    }

    /// The levels a taker of `side` meets, best first.
    pub(crate) fn opposite(&self, side: Side) -> Box<dyn Iterator<Item = (&Amount, &Level)> + '_> {
        match side {
            Side::Buy => Box::new(self.asks.iter()),
            Side::Sell => Box::new(self.bids.iter().rev()),
        }
    }

    /// Best price a taker of `side` meets, with the oldest order there.
    pub(crate) fn best_opposite(&self, side: Side) -> Option<(Amount, u32)> {
        let level = match side {
            Side::Buy => self.asks.first_key_value(),
            Side::Sell => self.bids.last_key_value(),
        };
        level.map(|(price, level)| (*price, level.head))
    }

    /// Slots of a level's orders in time order.
    pub(crate) fn level_slots(&self, level: &Level) -> impl Iterator<Item = u32> + '_ {
        std::iter::successors((level.head != NIL).then_some(level.head), |slot| {
            let next = self.slab[*slot as usize].next;
            (next != NIL).then_some(next)
        })
    }

    /// Slots of an account's open orders, oldest first.
    pub(crate) fn own_slots(&self, account: AccountId) -> impl Iterator<Item = u32> + '_ {
        let head = self.own.get(&account).map_or(NIL, |own| own.head);
        std::iter::successors((head != NIL).then_some(head), |slot| {
            let next = self.slab[*slot as usize].own_next;
            (next != NIL).then_some(next)
        })
    }

    /// Puts `order` at the back of its price level and its owner's list;
    /// returns the level's quantity after.
    pub(crate) fn rest(&mut self, mut order: Order) -> Amount {
        let slot = self.vacant.pop().unwrap_or_else(|| {
            self.slab.push(Order::default());
            (self.slab.len() - 1) as u32
        });
        let levels = match order.side {
            Side::Buy => &mut self.bids,
            Side::Sell => &mut self.asks,
        };
        let level = levels.entry(order.price).or_insert(Level {
            head: NIL,
            tail: NIL,
            orders: 0,
            quantity: Amount::ZERO,
        });
        order.prev = level.tail;
        order.next = NIL;
        if level.tail == NIL {
            level.head = slot;
        } else {
            self.slab[level.tail as usize].next = slot;
        }
        level.tail = slot;
        level.orders += 1;
        level.quantity = level.quantity.saturating_add(order.remaining);
        let level_quantity = level.quantity;

        let own = self.own.entry(order.account).or_insert(Own {
            count: 0,
            head: NIL,
            tail: NIL,
        });
        order.own_prev = own.tail;
        order.own_next = NIL;
        if own.tail == NIL {
            own.head = slot;
        } else {
            self.slab[own.tail as usize].own_next = slot;
        }
        own.tail = slot;
        own.count += 1;

        if let Some(id) = &order.client_order_id {
            self.client_ids
                .entry(order.account)
                .or_default()
                .insert(String::from(&**id), order.order_id);
        }
        self.slots.insert(order.order_id, slot);
        self.slab[slot as usize] = order;
        level_quantity
    }

    /// Takes the order in `slot` off the book and out of every index;
    /// returns it with its level's quantity after.
    pub(crate) fn unlink(&mut self, slot: u32) -> (Order, Amount) {
        let order = std::mem::take(&mut self.slab[slot as usize]);
        self.vacant.push(slot);
        self.slots.remove(order.order_id);

        let levels = match order.side {
            Side::Buy => &mut self.bids,
            Side::Sell => &mut self.asks,
        };
        let level = levels
            .get_mut(&order.price)
            .expect("a resting order has a level");
        level.orders -= 1;
        let level_quantity = if level.orders == 0 {
            levels.remove(&order.price);
            Amount::ZERO
        } else {
            level.quantity = level.quantity.saturating_sub(order.remaining);
            if order.prev == NIL {
                level.head = order.next;
            } else {
                self.slab[order.prev as usize].next = order.next;
            }
            if order.next == NIL {
                level.tail = order.prev;
            } else {
                self.slab[order.next as usize].prev = order.prev;
            }
            level.quantity
        };

        let own = self.own.get_mut(&order.account).expect("owner is indexed");
        own.count -= 1;
        if own.count == 0 {
            self.own.remove(&order.account);
        } else {
            if order.own_prev == NIL {
                own.head = order.own_next;
            } else {
                self.slab[order.own_prev as usize].own_next = order.own_next;
            }
            if order.own_next == NIL {
                own.tail = order.own_prev;
            } else {
                self.slab[order.own_next as usize].own_prev = order.own_prev;
            }
        }

        if let Some(id) = &order.client_order_id {
            self.forget_client_id(order.account, id);
        }
        (order, level_quantity)
    }

    /// Moves open order `order_id` of `account` from client id `old` to `new`.
    pub(crate) fn rename(
        &mut self,
        account: AccountId,
        order_id: u64,
        old: Option<&str>,
        new: Option<&str>,
    ) {
        let Some(new) = new else {
            return;
        };
        if let Some(old) = old {
            self.forget_client_id(account, old);
        }
        self.client_ids
            .entry(account)
            .or_default()
            .insert(new.to_owned(), order_id);
    }

    pub(crate) fn forget_client_id(&mut self, account: AccountId, id: &str) {
        if let Some(ids) = self.client_ids.get_mut(&account) {
            ids.remove(id);
            if ids.is_empty() {
                self.client_ids.remove(&account);
            }
        }
    }

    /// Adds a conditional order to the waiting ones, kept in id order.
    pub(crate) fn wait(&mut self, pending: Pending) {
        if let Some(id) = &pending.order.client_order_id {
            self.client_ids
                .entry(pending.account)
                .or_default()
                .insert(id.clone(), pending.order_id);
        }
        *self.pending_per_account.entry(pending.account).or_default() += 1;
        // By id: a list's pending order placed late keeps its older id.
        let at = self
            .pending
            .partition_point(|p| p.order_id < pending.order_id);
        self.pending.insert(at, pending);
    }

    /// Takes the waiting order at `index` out of the list and its indexes.
    pub(crate) fn stop_waiting(&mut self, index: usize) -> Pending {
        let pending = self.pending.remove(index);
        self.unindex_pending(&pending);
        pending
    }

    /// Drops a waiting order, already out of the list, from the indexes.
    pub(crate) fn unindex_pending(&mut self, pending: &Pending) {
        if let Some(id) = &pending.order.client_order_id {
            self.forget_client_id(pending.account, id);
        }
        if let Some(count) = self.pending_per_account.get_mut(&pending.account) {
            *count -= 1;
            if *count == 0 {
                self.pending_per_account.remove(&pending.account);
            }
        }
    }

    /// Conditional orders of `account` waiting on this market.
    pub(crate) fn waiting(&self, account: AccountId) -> u32 {
        self.pending_per_account.get(&account).copied().unwrap_or(0)
    }

    pub(crate) fn is_client_id_open(&self, account: AccountId, id: &str) -> bool {
        self.client_ids
            .get(&account)
            .is_some_and(|ids| ids.contains_key(id))
    }

    /// Open orders of `account`: resting and waiting for a trigger.
    pub(crate) fn open_orders(&self, account: AccountId) -> u32 {
        self.own.get(&account).map_or(0, |own| own.count) + self.waiting(account)
    }
}

#[cfg(test)]
mod order_index_tests {
    use super::*;

    #[test]
    pub(crate) fn one_long_resting_order_does_not_pin_the_index_to_every_id_since() {
        let mut index = OrderIndex::default();
        index.insert(1, 100);
        // A million orders come and go while order 1 rests.
        for id in 2..1_000_000u64 {
            index.insert(id, (id % 7) as u32);
            index.remove(id);
        }
        assert!(index.footprint() < 4 * INDEX_SLACK, "{}", index.footprint());
        assert_eq!(index.get(1), Some(100));
        assert_eq!(index.len(), 1);
        // Newer orders still index densely, and the old one still goes.
        index.insert(1_000_000, 5);
        assert_eq!(index.get(1_000_000), Some(5));
        assert_eq!(index.iter().collect::<Vec<_>>().len(), 2);
        index.remove(1);
        assert_eq!((index.get(1), index.len()), (None, 1));
        index.remove(1_000_000);
        assert_eq!(index.len(), 0);
        assert!(index.footprint() <= 1);
    }
}
