//! The matching engine and ledger: a deterministic state machine with no I/O.
//! Commands go in, events come out; every money rule lives here.
//!
//! Funds are locked on placement (quote for buys at the limit price, base for
//! sells) and settled at the maker's price; fees are taken from what each
//! side receives and credited to the fee account, so nothing beyond the order
//! itself is ever reserved.
//!
//! Layout, for speed: markets and assets are small integers from the
//! [`Catalog`]; balances are one flat array indexed by account slot and asset;
//! resting orders live in a slab per market, linked into their price level
//! (time order) and into their owner's list, so placing, cancelling and
//! filling touch a handful of cache lines and never scan.

use std::collections::BTreeMap;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::amount::Amount;
use crate::catalog::{AssetId, Catalog, MarketId};
use crate::market::{Market, StpMode};
use crate::order::{NewOrder, OrderType, Side, TimeInForce};

/// An account number.
pub type AccountId = u64;

/// Price levels as (price, resting quantity), best first.
pub type Levels = Vec<(Amount, Amount)>;

/// Order life-cycle states, as Binance names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderStatus {
    /// Resting, nothing filled.
    New,
    /// Resting, partly filled.
    PartiallyFilled,
    /// Completely filled.
    Filled,
    /// Canceled by its owner.
    Canceled,
    /// Refused before touching the book.
    Rejected,
    /// Ended by its time in force (IOC/FOK/MARKET leftovers).
    Expired,
    /// Ended by self-trade prevention.
    ExpiredInMatch,
}

/// Why a command was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reject {
    /// Unknown market.
    UnknownSymbol,
    /// Unknown asset.
    UnknownAsset,
    /// Not enough free balance.
    InsufficientBalance,
    /// A LIMIT_MAKER order would take liquidity.
    WouldTake,
    /// No such open order of this account.
    UnknownOrder,
    /// The client order id is in use by an open order of the account.
    DuplicateClientOrderId,
    /// Too many open orders on the market for this account.
    TooManyOrders,
    /// An amount would overflow.
    Overflow,
    /// A price off the market's tick or a quantity off its step (or zero).
    OffGrid,
}

/// What the engine is asked to do.
#[derive(Debug, Clone)]
pub enum Command {
    /// Add funds (deposit, faucet).
    Credit {
        /// Account.
        account: AccountId,
        /// Asset.
        asset: AssetId,
        /// Amount.
        amount: Amount,
    },
    /// Remove free funds (withdrawal).
    Debit {
        /// Account.
        account: AccountId,
        /// Asset.
        asset: AssetId,
        /// Amount.
        amount: Amount,
    },
    /// Place an order.
    Place {
        /// Account.
        account: AccountId,
        /// The validated order.
        order: NewOrder,
        /// Engine time, ms.
        time_ms: u64,
    },
    /// Cancel one open order by id.
    Cancel {
        /// Account.
        account: AccountId,
        /// Market.
        market: MarketId,
        /// Order id.
        order_id: u64,
        /// Engine time, ms.
        time_ms: u64,
    },
    /// Cancel every open order of the account on one market, oldest first.
    CancelAll {
        /// Account.
        account: AccountId,
        /// Market.
        market: MarketId,
        /// Engine time, ms.
        time_ms: u64,
    },
}

impl Command {
    /// The engine time it carries (credits and debits carry none).
    pub fn time_ms(&self) -> Option<u64> {
        match self {
            Self::Place { time_ms, .. }
            | Self::Cancel { time_ms, .. }
            | Self::CancelAll { time_ms, .. } => Some(*time_ms),
            Self::Credit { .. } | Self::Debit { .. } => None,
        }
    }

    /// Stamps it with the engine time `time_ms` (no-op for credits and debits).
    pub fn set_time(&mut self, now_ms: u64) {
        match self {
            Self::Place { time_ms, .. }
            | Self::Cancel { time_ms, .. }
            | Self::CancelAll { time_ms, .. } => *time_ms = now_ms,
            Self::Credit { .. } | Self::Debit { .. } => {}
        }
    }
}

/// A fill between a resting (maker) and an incoming (taker) order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trade {
    /// Market.
    pub market: MarketId,
    /// Per-market trade id.
    pub trade_id: u64,
    /// Maker's price.
    pub price: Amount,
    /// Base quantity.
    pub quantity: Amount,
    /// Quote quantity (price × quantity).
    pub quote_quantity: Amount,
    /// Maker order and account.
    pub maker: (u64, AccountId),
    /// Taker order and account.
    pub taker: (u64, AccountId),
    /// Taker side.
    pub taker_side: Side,
    /// Fee paid by the maker, in what it received.
    pub maker_fee: Amount,
    /// Fee paid by the taker, in what it received.
    pub taker_fee: Amount,
    /// Engine time of the trade, ms.
    pub time_ms: u64,
}

/// An order's state after a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrderState {
    /// Market.
    pub market: MarketId,
    /// Per-market order id.
    pub order_id: u64,
    /// Owner.
    pub account: AccountId,
    /// Status.
    pub status: OrderStatus,
    /// Filled base quantity.
    pub executed: Amount,
    /// Filled quote quantity.
    pub cumulative_quote: Amount,
    /// Engine time of this change, ms.
    pub time_ms: u64,
}

/// What a command did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The command was refused; nothing changed.
    Rejected(Reject),
    /// An order changed state (placed, filled, canceled, expired).
    Order(OrderState),
    /// A fill.
    Trade(Trade),
    /// A balance changed.
    Balance {
        /// Account.
        account: AccountId,
        /// Asset.
        asset: AssetId,
        /// Free amount after.
        free: Amount,
        /// Locked amount after.
        locked: Amount,
    },
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Balance {
    free: Amount,
    locked: Amount,
}

/// Every account's balances: one row of `assets` entries per account slot.
struct Ledger {
    assets: usize,
    slots: FxHashMap<AccountId, u32>,
    accounts: Vec<AccountId>,
    rows: Vec<Balance>,
    /// Credits minus debits per asset: what the ledger must hold in total.
    supply: Vec<Amount>,
    fee_slot: usize,
}

impl Ledger {
    fn new(assets: usize, fee_account: AccountId) -> Self {
        let mut ledger = Self {
            assets,
            slots: FxHashMap::default(),
            accounts: Vec::new(),
            rows: Vec::new(),
            supply: vec![Amount::ZERO; assets],
            fee_slot: 0,
        };
        ledger.fee_slot = ledger.slot(fee_account);
        ledger
    }

    /// The account's slot, created on first use.
    fn slot(&mut self, account: AccountId) -> usize {
        if let Some(slot) = self.slots.get(&account) {
            return *slot as usize;
        }
        let slot = self.accounts.len();
        self.slots.insert(account, slot as u32);
        self.accounts.push(account);
        self.rows
            .resize(self.rows.len() + self.assets, Balance::default());
        slot
    }

    fn at(&mut self, slot: usize, asset: AssetId) -> &mut Balance {
        &mut self.rows[slot * self.assets + usize::from(asset.0)]
    }

    fn get(&self, account: AccountId, asset: AssetId) -> Balance {
        match self.slots.get(&account) {
            Some(slot) if usize::from(asset.0) < self.assets => {
                self.rows[*slot as usize * self.assets + usize::from(asset.0)]
            }
            _ => Balance::default(),
        }
    }

    /// Takes `released` out of the slot's locked `asset` and adds `credited` to its free.
    fn settle_leg(&mut self, slot: usize, asset: AssetId, released: Amount, credited: Amount) {
        let b = self.at(slot, asset);
        b.locked = sure(b.locked.checked_sub(released));
        b.free = sure(b.free.checked_add(credited));
    }

    /// Moves `amount` from free to locked (or back with `lock = false`).
    fn shift(&mut self, slot: usize, asset: AssetId, amount: Amount, lock: bool) {
        let b = self.at(slot, asset);
        let (from, to) = if lock {
            (b.free, b.locked)
        } else {
            (b.locked, b.free)
        };
        // Callers check the free balance first: a shift cannot fail.
        let (from, to) = (sure(from.checked_sub(amount)), sure(to.checked_add(amount)));
        if lock {
            (b.free, b.locked) = (from, to);
        } else {
            (b.locked, b.free) = (from, to);
        }
    }

    /// Both assets of a market, base first.
    fn emit_pair(
        &mut self,
        slot: usize,
        (base, quote): (AssetId, AssetId),
        events: &mut Vec<Event>,
    ) {
        self.emit(slot, base, events);
        self.emit(slot, quote, events);
    }

    fn emit(&mut self, slot: usize, asset: AssetId, events: &mut Vec<Event>) {
        let account = self.accounts[slot];
        let b = *self.at(slot, asset);
        events.push(Event::Balance {
            account,
            asset,
            free: b.free,
            locked: b.locked,
        });
    }
}

/// No slot: the end of a linked list.
const NIL: u32 = u32::MAX;

/// A resting order (or, while it matches, the incoming one).
#[derive(Debug, Clone, Default)]
struct Order {
    order_id: u64,
    account: AccountId,
    side: Side,
    price: Amount,
    remaining: Amount,
    executed: Amount,
    cumulative_quote: Amount,
    /// What is still locked for this order (quote for buys, base for sells).
    locked: Amount,
    stp: StpMode,
    client_order_id: Option<Box<str>>,
    /// Neighbours in the price level, in time order.
    prev: u32,
    next: u32,
    /// Neighbours in the owner's list of open orders on this market.
    own_prev: u32,
    own_next: u32,
}

impl Order {
    /// Its state as an event.
    fn state(&self, market: MarketId, status: OrderStatus, time_ms: u64) -> Event {
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
    fn fill(&mut self, quantity: Amount, quote: Amount, spent: Amount) {
        self.remaining = self.remaining.checked_sub(quantity).expect(BROKEN);
        self.executed = self.executed.checked_add(quantity).expect(BROKEN);
        self.cumulative_quote = self.cumulative_quote.checked_add(quote).expect(BROKEN);
        self.locked = self.locked.checked_sub(spent).expect(BROKEN);
    }
}

/// One price level: a list of order slots in time order.
#[derive(Debug, Clone, Copy)]
struct Level {
    head: u32,
    tail: u32,
    orders: u32,
    /// Sum of the orders' remaining quantities (the depth at this price).
    quantity: Amount,
}

/// One account's open orders on a market, oldest first.
#[derive(Debug, Clone, Copy)]
struct Own {
    count: u32,
    head: u32,
    tail: u32,
}

/// Order id → slab slot for open orders. Ids are handed out in sequence, so
/// this is an array from an early open id on: one memory access per
/// lookup, and the front is trimmed as the oldest orders close. An order
/// that stays open long while thousands after it close would pin the front
/// and let the array grow with every id ever issued: once the array is
/// mostly holes, its oldest open orders move to a small map of stragglers.
#[derive(Default)]
struct OrderIndex {
    first_id: u64,
    slots: std::collections::VecDeque<u32>,
    stragglers: FxHashMap<u64, u32>,
    open: usize,
}

/// Holes the array may hold beyond twice its open orders before its front
/// is moved to the stragglers.
const INDEX_SLACK: usize = 1024;

impl OrderIndex {
    fn get(&self, order_id: u64) -> Option<u32> {
        let Some(offset) = order_id.checked_sub(self.first_id) else {
            return self.stragglers.get(&order_id).copied();
        };
        let offset = usize::try_from(offset).ok()?;
        self.slots.get(offset).copied().filter(|slot| *slot != NIL)
    }

    fn insert(&mut self, order_id: u64, slot: u32) {
        if self.slots.is_empty() {
            self.first_id = order_id;
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

    fn trim_front(&mut self) {
        while self.slots.front() == Some(&NIL) {
            self.slots.pop_front();
            self.first_id += 1;
        }
    }

    fn remove(&mut self, order_id: u64) {
        if order_id < self.first_id {
            if self.stragglers.remove(&order_id).is_some() {
                self.open -= 1;
            }
            return;
        }
        let Some(offset) = order_id
            .checked_sub(self.first_id)
            .and_then(|o| usize::try_from(o).ok())
            .filter(|o| *o < self.slots.len())
        else {
            return;
        };
        if self.slots[offset] != NIL {
            self.slots[offset] = NIL;
            self.open -= 1;
        }
        self.trim_front();
    }

    fn len(&self) -> usize {
        self.open
    }

    /// Slots of open orders (stragglers first, in no particular order).
    fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        let array = self.slots.iter().copied().filter(|slot| *slot != NIL);
        self.stragglers.values().copied().chain(array)
    }

    /// Entries the index holds, open or hole: bounded by its open orders.
    #[cfg(test)]
    fn footprint(&self) -> usize {
        self.slots.len() + self.stragglers.len()
    }

    fn reserve(&mut self, additional: usize) {
        self.slots.reserve(additional);
    }
}

struct Book {
    market: Market,
    id: MarketId,
    base: AssetId,
    quote: AssetId,
    /// Price → level. Bids are read from the back.
    bids: BTreeMap<Amount, Level>,
    asks: BTreeMap<Amount, Level>,
    /// Order storage; vacant slots are reused.
    slab: Vec<Order>,
    vacant: Vec<u32>,
    /// Order id → slab slot, for open orders.
    slots: OrderIndex,
    own: FxHashMap<AccountId, Own>,
    /// Client order ids of open orders, per account.
    client_ids: FxHashMap<AccountId, FxHashMap<String, u64>>,
    next_order_id: u64,
    next_trade_id: u64,
}

impl Book {
    fn new(id: MarketId, market: Market, (base, quote): (AssetId, AssetId)) -> Self {
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
        }
    }

    /// Allocates room for `orders` resting orders up front, touching the
    /// memory now so that placing them later never waits on the allocator
    /// or on first-touch page faults.
    fn preallocate(&mut self, orders: usize) {
        let start = self.slab.len();
        self.slab.resize(start + orders, Order::default());
        self.vacant
            .extend((start as u32..(start + orders) as u32).rev());
        self.slots.reserve(orders * 2);
    }

    fn take_order_id(&mut self) -> u64 {
        self.next_order_id += 1;
        self.next_order_id - 1
    }

    /// The asset an order of `side` locks.
    fn locked_asset(&self, side: Side) -> AssetId {
        match side {
            Side::Buy => self.quote,
            Side::Sell => self.base,
        }
    }

    fn levels(&self, side: Side) -> &BTreeMap<Amount, Level> {
        match side {
            Side::Buy => &self.bids,
            Side::Sell => &self.asks,
        }
    }

    /// The levels a taker of `side` meets, best first.
    fn opposite(&self, side: Side) -> Box<dyn Iterator<Item = (&Amount, &Level)> + '_> {
        match side {
            Side::Buy => Box::new(self.asks.iter()),
            Side::Sell => Box::new(self.bids.iter().rev()),
        }
    }

    /// Best price a taker of `side` meets, with the oldest order there.
    fn best_opposite(&self, side: Side) -> Option<(Amount, u32)> {
        let level = match side {
            Side::Buy => self.asks.first_key_value(),
            Side::Sell => self.bids.last_key_value(),
        };
        level.map(|(price, level)| (*price, level.head))
    }

    /// Slots of a level's orders in time order.
    fn level_slots(&self, level: &Level) -> impl Iterator<Item = u32> + '_ {
        std::iter::successors((level.head != NIL).then_some(level.head), |slot| {
            let next = self.slab[*slot as usize].next;
            (next != NIL).then_some(next)
        })
    }

    /// Slots of an account's open orders, oldest first.
    fn own_slots(&self, account: AccountId) -> impl Iterator<Item = u32> + '_ {
        let head = self.own.get(&account).map_or(NIL, |own| own.head);
        std::iter::successors((head != NIL).then_some(head), |slot| {
            let next = self.slab[*slot as usize].own_next;
            (next != NIL).then_some(next)
        })
    }

    /// Puts `order` at the back of its price level and its owner's list.
    fn rest(&mut self, mut order: Order) {
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
    }

    /// Takes the order in `slot` off the book and out of every index.
    fn unlink(&mut self, slot: u32) -> Order {
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
        if level.orders == 0 {
            levels.remove(&order.price);
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
        }

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

        if let Some(id) = &order.client_order_id
            && let Some(ids) = self.client_ids.get_mut(&order.account)
        {
            ids.remove(&**id);
            if ids.is_empty() {
                self.client_ids.remove(&order.account);
            }
        }
        order
    }

    fn is_client_id_open(&self, account: AccountId, id: &str) -> bool {
        self.client_ids
            .get(&account)
            .is_some_and(|ids| ids.contains_key(id))
    }

    fn open_orders(&self, account: AccountId) -> u32 {
        self.own.get(&account).map_or(0, |own| own.count)
    }
}

/// The whole exchange state.
pub struct Engine {
    catalog: Arc<Catalog>,
    books: Vec<Book>,
    ledger: Ledger,
    /// Time of the command being applied, for its events.
    now_ms: u64,
}

/// What a failed step after validation means: the engine's own bug, not a
/// refusal. A command is checked whole before it changes anything, and every
/// later step is arithmetic the checks made safe; if one fails anyway, the
/// state can no longer be trusted, and stopping is the only correct answer.
const BROKEN: &str = "exchange invariant broken: a validated command failed part-way";

/// An amount the validation made safe (see [`BROKEN`]).
#[track_caller]
fn sure(value: Option<Amount>) -> Amount {
    value.expect(BROKEN)
}

fn mul(price: Amount, quantity: Amount) -> Option<Amount> {
    price.checked_mul(quantity)
}

/// The most base a quote `budget` buys at `price`, in whole steps.
fn affordable(budget: Amount, price: Amount, step: Amount) -> Amount {
    let units = u128::from(budget.units()) * 100_000_000 / u128::from(price.units().max(1));
    let units = u64::try_from(units).unwrap_or(u64::MAX);
    Amount::from_units(units - units % step.units().max(1))
}

/// Whether a price on `side` is worse than (beyond) the limit `limit`.
fn beyond(side: Side, price: Amount, limit: Option<Amount>) -> bool {
    limit.is_some_and(|limit| match side {
        Side::Buy => price > limit,
        Side::Sell => price < limit,
    })
}

impl Engine {
    /// An engine over the catalog's markets, fees going to `fee_account`.
    pub fn new(catalog: Arc<Catalog>, fee_account: AccountId) -> Self {
        Self::with_capacity(catalog, fee_account, 0)
    }

    /// Like [`Engine::new`], with memory for `orders_per_market` resting
    /// orders per market allocated and touched up front.
    pub fn with_capacity(
        catalog: Arc<Catalog>,
        fee_account: AccountId,
        orders_per_market: usize,
    ) -> Self {
        let books = catalog
            .markets()
            .map(|(id, market)| {
                let mut book = Book::new(
                    id,
                    market.clone(),
                    catalog.pair(id).expect("every market has a pair"),
                );
                book.preallocate(orders_per_market);
                book
            })
            .collect();
        let ledger = Ledger::new(catalog.asset_count(), fee_account);
        Self {
            catalog,
            books,
            ledger,
            now_ms: 0,
        }
    }

    /// The markets and assets this engine trades.
    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.catalog
    }

    /// How many orders rest on market `market`'s book.
    pub fn resting_orders(&self, market: MarketId) -> usize {
        self.books
            .get(usize::from(market.0))
            .map_or(0, |book| book.slots.len())
    }

    /// The book of `market` as (price, resting quantity) levels, bids best
    /// first, then asks best first.
    pub fn depth(&self, market: MarketId) -> (Levels, Levels) {
        let Some(book) = self.books.get(usize::from(market.0)) else {
            return Default::default();
        };
        let levels = |side: &BTreeMap<Amount, Level>, reverse: bool| {
            let all = side.iter().map(|(price, level)| (*price, level.quantity));
            if reverse {
                all.rev().collect()
            } else {
                all.collect()
            }
        };
        (levels(&book.bids, true), levels(&book.asks, false))
    }

    /// Free and locked amounts of `asset` held by `account`.
    pub fn balance(&self, account: AccountId, asset: AssetId) -> (Amount, Amount) {
        let b = self.ledger.get(account, asset);
        (b.free, b.locked)
    }

    /// Applies one command and returns what happened. A refused command
    /// changes nothing.
    pub fn apply(&mut self, command: Command) -> Vec<Event> {
        let mut events = Vec::new();
        self.apply_into(command, &mut events);
        events
    }

    /// Applies one command and appends what happened to `events` (a buffer
    /// the caller reuses). A refused command changes nothing and appends
    /// exactly one [`Event::Rejected`].
    pub fn apply_into(&mut self, command: Command, events: &mut Vec<Event>) {
        let start = events.len();
        if let Some(time_ms) = command.time_ms() {
            self.now_ms = time_ms;
        }
        let result = match command {
            Command::Credit {
                account,
                asset,
                amount,
            } => self.adjust(account, asset, amount, true, events),
            Command::Debit {
                account,
                asset,
                amount,
            } => self.adjust(account, asset, amount, false, events),
            Command::Place { account, order, .. } => self.place(account, order, events),
            Command::Cancel {
                account,
                market,
                order_id,
                ..
            } => self.cancel(account, market, order_id, events),
            Command::CancelAll {
                account, market, ..
            } => self.cancel_all(account, market, events),
        };
        if let Err(reject) = result {
            events.truncate(start);
            events.push(Event::Rejected(reject));
        }
        // Checked in every test build, release ones included.
        if cfg!(any(test, debug_assertions)) {
            assert_eq!(self.check_invariants(), Ok(()));
        }
    }

    /// Adds (`credit`) or removes free funds, keeping the supply in step.
    fn adjust(
        &mut self,
        account: AccountId,
        asset: AssetId,
        amount: Amount,
        credit: bool,
        events: &mut Vec<Event>,
    ) -> Result<(), Reject> {
        let index = usize::from(asset.0);
        if index >= self.ledger.assets {
            return Err(Reject::UnknownAsset);
        }
        let free = self.ledger.get(account, asset).free;
        let supply = self.ledger.supply[index];
        let (free, supply) = if credit {
            (
                free.checked_add(amount).ok_or(Reject::Overflow)?,
                supply.checked_add(amount).ok_or(Reject::Overflow)?,
            )
        } else {
            (
                free.checked_sub(amount)
                    .ok_or(Reject::InsufficientBalance)?,
                supply.checked_sub(amount).ok_or(Reject::Overflow)?,
            )
        };
        self.ledger.supply[index] = supply;
        let slot = self.ledger.slot(account);
        self.ledger.at(slot, asset).free = free;
        self.ledger.emit(slot, asset, events);
        Ok(())
    }

    /// Simulates a taker of `account` against the book: the base it would fill
    /// and the quote it would pay, with self-trade prevention applied the way
    /// matching will (own orders are skipped under EXPIRE_MAKER and end the
    /// taker under EXPIRE_TAKER / EXPIRE_BOTH).
    fn reachable(book: &Book, account: AccountId, order: &NewOrder) -> (Amount, Amount) {
        let (mut base, mut quote) = (Amount::ZERO, Amount::ZERO);
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
                        StpMode::ExpireTaker | StpMode::ExpireBoth => return (base, quote),
                    }
                }
                let mut take = resting.remaining;
                if let Some(want) = order.quantity {
                    take = take.min(want.checked_sub(base).unwrap_or_default());
                }
                if let Some(want) = order.quote_quantity {
                    let left = want.checked_sub(quote).unwrap_or_default();
                    take = take.min(affordable(left, *price, book.market.step_size));
                }
                if take.is_zero() {
                    return (base, quote);
                }
                base = base.checked_add(take).unwrap_or(base);
                quote = quote
                    .checked_add(mul(*price, take).unwrap_or_default())
                    .unwrap_or(quote);
            }
        }
        (base, quote)
    }

    fn place(
        &mut self,
        account: AccountId,
        order: NewOrder,
        events: &mut Vec<Event>,
    ) -> Result<(), Reject> {
        let now_ms = self.now_ms;
        let book = self
            .books
            .get_mut(usize::from(order.market.0))
            .ok_or(Reject::UnknownSymbol)?;
        let off_grid = |value: Option<Amount>, grid: Amount| {
            value.is_some_and(|v| v.is_zero() || v.units() % grid.units().max(1) != 0)
        };
        if off_grid(order.price, book.market.tick_size)
            || off_grid(order.quantity, book.market.step_size)
        {
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
                (Amount::ZERO, Amount::ZERO)
            };
        if fok && Some(reach_base) != order.quantity {
            // Fill-or-kill that cannot fill completely: expires untouched.
            let order_id = book.take_order_id();
            events.push(Event::Order(OrderState {
                market: book.id,
                order_id,
                account,
                status: OrderStatus::Expired,
                executed: Amount::ZERO,
                cumulative_quote: Amount::ZERO,
                time_ms: now_ms,
            }));
            return Ok(());
        }
        // What to lock: sells lock base; limit buys lock price × quantity;
        // market buys lock what the book can fill (or the quote amount given).
        let lock = match (order.side, order.order_type) {
            (Side::Sell, _) if sell_for_quote => reach_base,
            (Side::Sell, _) => order.quantity.ok_or(Reject::Overflow)?,
            (Side::Buy, OrderType::Market) => order.quote_quantity.unwrap_or(reach_quote),
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
        let order_id = book.take_order_id();
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
        let (base, quote) = (book.base, book.quote);
        if matches!(status, OrderStatus::New | OrderStatus::PartiallyFilled) {
            taker.client_order_id = order.client_order_id.map(String::into_boxed_str);
            book.rest(taker);
        } else if !taker.locked.is_zero() {
            self.ledger.shift(slot, lock_asset, taker.locked, false);
        }
        self.ledger.emit_pair(slot, (base, quote), events);
        Ok(())
    }

    /// Matches the taker against the opposite side. Returns whether self-trade
    /// prevention expired the taker.
    fn match_taker(
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
            if taker.remaining.is_zero()
                || (order.quote_quantity.is_some() && quote_budget.is_some_and(|q| q.is_zero()))
            {
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
                let (expire_maker, expire_taker) = match taker.stp {
                    StpMode::ExpireTaker => (false, true),
                    StpMode::ExpireMaker => (true, false),
                    _ => (true, true),
                };
                if expire_maker {
                    self.remove_resting(
                        book_index,
                        maker_slot,
                        OrderStatus::ExpiredInMatch,
                        events,
                    );
                }
                if expire_taker {
                    return true;
                }
                continue;
            }
            let mut quantity = taker.remaining.min(maker.remaining);
            if let Some(budget) = *quote_budget {
                quantity = quantity.min(affordable(budget, price, book.market.step_size));
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

    /// Books one fill between the taker and the maker in `maker_slot`.
    #[allow(clippy::too_many_arguments)]
    fn settle(
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

        let maker = &mut book.slab[maker_slot as usize];
        maker.fill(quantity, quote_quantity, maker_spent);
        let levels = match maker.side {
            Side::Buy => &mut book.bids,
            Side::Sell => &mut book.asks,
        };
        if let Some(level) = levels.get_mut(&price) {
            level.quantity = level.quantity.saturating_sub(quantity);
        }
        if maker.remaining.is_zero() {
            self.remove_resting(book_index, maker_slot, OrderStatus::Filled, events);
        } else {
            events.push(maker.state(book.id, OrderStatus::PartiallyFilled, self.now_ms));
        }
        for slot in [buyer, seller] {
            self.ledger.emit_pair(slot, (base, quote), events);
        }
    }

    /// Takes a resting order off the book, releasing what it still locks.
    fn remove_resting(
        &mut self,
        book_index: usize,
        slot: u32,
        status: OrderStatus,
        events: &mut Vec<Event>,
    ) {
        let book = &mut self.books[book_index];
        let order = book.unlink(slot);
        events.push(order.state(book.id, status, self.now_ms));
        if !order.locked.is_zero() {
            let asset = book.locked_asset(order.side);
            let owner = self.ledger.slot(order.account);
            self.ledger.shift(owner, asset, order.locked, false);
            self.ledger.emit(owner, asset, events);
        }
    }

    fn cancel(
        &mut self,
        account: AccountId,
        market: MarketId,
        order_id: u64,
        events: &mut Vec<Event>,
    ) -> Result<(), Reject> {
        let index = usize::from(market.0);
        let book = self.books.get(index).ok_or(Reject::UnknownSymbol)?;
        let slot = book.slots.get(order_id).ok_or(Reject::UnknownOrder)?;
        if book.slab[slot as usize].account != account {
            return Err(Reject::UnknownOrder);
        }
        self.remove_resting(index, slot, OrderStatus::Canceled, events);
        Ok(())
    }

    fn cancel_all(
        &mut self,
        account: AccountId,
        market: MarketId,
        events: &mut Vec<Event>,
    ) -> Result<(), Reject> {
        let index = usize::from(market.0);
        let book = self.books.get(index).ok_or(Reject::UnknownSymbol)?;
        let slots: Vec<u32> = book.own_slots(account).collect();
        if slots.is_empty() {
            return Err(Reject::UnknownOrder);
        }
        for slot in slots {
            self.remove_resting(index, slot, OrderStatus::Canceled, events);
        }
        Ok(())
    }

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
                "book {} next order {} next trade {}",
                book.market.symbol, book.next_order_id, book.next_trade_id
            ));
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
    /// per asset the holdings equal credits minus debits.
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
            let named = book
                .slots
                .iter()
                .filter(|s| book.slab[*s as usize].client_order_id.is_some())
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
        for (asset, name) in self.catalog.assets() {
            let supply = self.ledger.supply[usize::from(asset.0)];
            let total = held[usize::from(asset.0)];
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::market::tests_support::{eth_btc, eth_usdt};
    use crate::order::ResponseType;

    const FEES: AccountId = 999;
    const ETHUSDT: MarketId = MarketId(0);
    const ETHBTC: MarketId = MarketId(1);
    const ETH: AssetId = AssetId(0);
    const USDT: AssetId = AssetId(1);
    const BTC: AssetId = AssetId(2);

    /// ETHUSDT and ETHBTC: assets ETH, USDT, BTC.
    pub(crate) fn two_markets() -> Arc<Catalog> {
        Arc::new(Catalog::new(vec![eth_usdt(), eth_btc()]))
    }

    fn a(text: &str) -> Amount {
        text.parse().unwrap()
    }

    fn engine() -> Engine {
        let mut engine = Engine::new(two_markets(), FEES);
        for account in [1, 2] {
            engine.apply(Command::Credit {
                account,
                asset: USDT,
                amount: a("100000"),
            });
            engine.apply(Command::Credit {
                account,
                asset: ETH,
                amount: a("100"),
            });
        }
        engine
    }

    fn order(
        side: Side,
        order_type: OrderType,
        tif: TimeInForce,
        quantity: &str,
        price: Option<&str>,
    ) -> NewOrder {
        NewOrder {
            market: ETHUSDT,
            side,
            order_type,
            time_in_force: tif,
            quantity: Some(a(quantity)),
            quote_quantity: None,
            price: price.map(a),
            client_order_id: None,
            response_type: ResponseType::Full,
            stp: StpMode::None,
        }
    }

    fn place(engine: &mut Engine, account: AccountId, order: NewOrder) -> Vec<Event> {
        engine.apply(Command::Place {
            account,
            order,
            time_ms: 0,
        })
    }

    fn limit(side: Side, quantity: &str, price: &str) -> NewOrder {
        order(
            side,
            OrderType::Limit,
            TimeInForce::Gtc,
            quantity,
            Some(price),
        )
    }

    fn status(events: &[Event], order_id: u64) -> OrderStatus {
        events
            .iter()
            .rev()
            .find_map(|e| match e {
                Event::Order(o) if o.order_id == order_id => Some(o.status),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no state for order {order_id} in {events:?}"))
    }

    fn trades(events: &[Event]) -> Vec<&Trade> {
        events
            .iter()
            .filter_map(|e| {
                if let Event::Trade(t) = e {
                    Some(t)
                } else {
                    None
                }
            })
            .collect()
    }

    #[test]
    fn credits_debits_and_refused_debits() {
        let mut engine = engine();
        assert_eq!(engine.balance(1, USDT), (a("100000"), Amount::ZERO));
        engine.apply(Command::Debit {
            account: 1,
            asset: USDT,
            amount: a("1"),
        });
        let refused = engine.apply(Command::Debit {
            account: 1,
            asset: USDT,
            amount: a("100000"),
        });
        assert_eq!(refused, vec![Event::Rejected(Reject::InsufficientBalance)]);
        assert_eq!(engine.balance(1, USDT), (a("99999"), Amount::ZERO));
    }

    #[test]
    fn a_resting_buy_locks_quote_and_cancel_releases_it() {
        let mut engine = engine();
        let events = place(&mut engine, 1, limit(Side::Buy, "2", "3000"));
        assert_eq!(status(&events, 1), OrderStatus::New);
        assert_eq!(engine.balance(1, USDT), (a("94000"), a("6000")));
        let events = engine.apply(Command::Cancel {
            account: 1,
            market: ETHUSDT,
            order_id: 1,
            time_ms: 0,
        });
        assert_eq!(status(&events, 1), OrderStatus::Canceled);
        assert_eq!(engine.balance(1, USDT), (a("100000"), Amount::ZERO));
        let again = engine.apply(Command::Cancel {
            account: 1,
            market: ETHUSDT,
            order_id: 1,
            time_ms: 0,
        });
        assert_eq!(again, vec![Event::Rejected(Reject::UnknownOrder)]);
    }

    #[test]
    fn a_crossing_buy_fills_at_the_makers_price_with_fees_in_the_received_asset() {
        let mut engine = engine();
        place(&mut engine, 1, limit(Side::Sell, "1", "2990"));
        let events = place(&mut engine, 2, limit(Side::Buy, "1", "3000"));
        assert_eq!(
            (status(&events, 1), status(&events, 2)),
            (OrderStatus::Filled, OrderStatus::Filled)
        );
        let fills = trades(&events);
        assert_eq!(
            (fills[0].price, fills[0].quantity, fills[0].quote_quantity),
            (a("2990"), a("1"), a("2990"))
        );
        // Buyer (taker) pays 2990, gets 1 ETH minus 0.1 % fee; the price improvement comes back.
        assert_eq!(engine.balance(2, USDT), (a("97010"), Amount::ZERO));
        assert_eq!(engine.balance(2, ETH), (a("100.999"), Amount::ZERO));
        // Seller (maker) gets 2990 USDT minus 0.1 %.
        assert_eq!(engine.balance(1, USDT), (a("102987.01"), Amount::ZERO));
        assert_eq!(engine.balance(1, ETH), (a("99"), Amount::ZERO));
        assert_eq!(engine.balance(FEES, ETH).0, a("0.001"));
        assert_eq!(engine.balance(FEES, USDT).0, a("2.99"));
    }

    #[test]
    fn partial_fills_walk_price_levels_and_the_rest_rests() {
        let mut engine = engine();
        place(&mut engine, 1, limit(Side::Sell, "1", "3000"));
        place(&mut engine, 1, limit(Side::Sell, "1", "3001"));
        place(&mut engine, 1, limit(Side::Sell, "1", "3005"));
        let events = place(&mut engine, 2, limit(Side::Buy, "3", "3001"));
        let fills = trades(&events);
        assert_eq!(
            fills.iter().map(|t| t.price).collect::<Vec<_>>(),
            vec![a("3000"), a("3001")]
        );
        assert_eq!(status(&events, 4), OrderStatus::PartiallyFilled);
        assert_eq!(
            engine.balance(2, USDT),
            (
                a("100000")
                    .checked_sub(a("6001"))
                    .unwrap()
                    .checked_sub(a("3001"))
                    .unwrap(),
                a("3001")
            )
        );
        // Cancel of a partially filled order releases only what is left.
        let events = engine.apply(Command::Cancel {
            account: 2,
            market: ETHUSDT,
            order_id: 4,
            time_ms: 0,
        });
        assert_eq!(status(&events, 4), OrderStatus::Canceled);
        assert_eq!(engine.balance(2, USDT), (a("93999"), Amount::ZERO));
    }

    #[test]
    fn ioc_leftovers_expire_and_fok_that_cannot_fill_expires_untouched() {
        let mut engine = engine();
        place(&mut engine, 1, limit(Side::Sell, "1", "3000"));
        let ioc = place(
            &mut engine,
            2,
            order(
                Side::Buy,
                OrderType::Limit,
                TimeInForce::Ioc,
                "2",
                Some("3000"),
            ),
        );
        assert_eq!(status(&ioc, 2), OrderStatus::Expired);
        assert_eq!(trades(&ioc).len(), 1);
        assert_eq!(
            engine.balance(2, USDT).1,
            Amount::ZERO,
            "nothing stays locked"
        );
        place(&mut engine, 1, limit(Side::Sell, "1", "3000"));
        let fok = place(
            &mut engine,
            2,
            order(
                Side::Buy,
                OrderType::Limit,
                TimeInForce::Fok,
                "2",
                Some("3000"),
            ),
        );
        assert_eq!(status(&fok, 4), OrderStatus::Expired);
        assert!(trades(&fok).is_empty());
        let fok = place(
            &mut engine,
            2,
            order(
                Side::Buy,
                OrderType::Limit,
                TimeInForce::Fok,
                "1",
                Some("3000"),
            ),
        );
        assert_eq!(status(&fok, 5), OrderStatus::Filled);
    }

    #[test]
    fn market_orders_by_quantity_and_by_quote_and_into_an_empty_book() {
        let mut engine = engine();
        let empty = place(
            &mut engine,
            2,
            order(Side::Buy, OrderType::Market, TimeInForce::Gtc, "1", None),
        );
        assert_eq!(status(&empty, 1), OrderStatus::Expired);
        assert_eq!(engine.balance(2, USDT), (a("100000"), Amount::ZERO));
        place(&mut engine, 1, limit(Side::Sell, "1", "3000"));
        place(&mut engine, 1, limit(Side::Sell, "1", "3100"));
        let by_quantity = place(
            &mut engine,
            2,
            order(Side::Buy, OrderType::Market, TimeInForce::Gtc, "1.5", None),
        );
        assert_eq!(status(&by_quantity, 4), OrderStatus::Filled);
        assert_eq!(engine.balance(2, USDT), (a("95450"), Amount::ZERO));
        let mut by_quote = order(Side::Buy, OrderType::Market, TimeInForce::Gtc, "1", None);
        by_quote.quantity = None;
        by_quote.quote_quantity = Some(a("310"));
        let events = place(&mut engine, 2, by_quote);
        assert_eq!(status(&events, 5), OrderStatus::Filled);
        assert_eq!(trades(&events)[0].quantity, a("0.1"));
        let sell = place(
            &mut engine,
            1,
            order(Side::Sell, OrderType::Market, TimeInForce::Gtc, "1", None),
        );
        assert_eq!(status(&sell, 6), OrderStatus::Expired, "no bids");
    }

    #[test]
    fn a_market_sell_for_a_quote_amount_sells_what_the_book_needs() {
        let mut engine = engine();
        place(&mut engine, 2, limit(Side::Buy, "0.1", "3000"));
        place(&mut engine, 2, limit(Side::Buy, "1", "2900"));
        let mut for_quote = order(Side::Sell, OrderType::Market, TimeInForce::Gtc, "1", None);
        for_quote.quantity = None;
        for_quote.quote_quantity = Some(a("590"));
        let events = place(&mut engine, 1, for_quote.clone());
        let fills: Vec<(Amount, Amount)> = trades(&events)
            .iter()
            .map(|t| (t.price, t.quote_quantity))
            .collect();
        // 0.1 at 3000 pays 300; the remaining 290 buys exactly 0.1 at 2900.
        assert_eq!(fills, vec![(a("3000"), a("300")), (a("2900"), a("290"))]);
        assert_eq!(status(&events, 3), OrderStatus::Filled);
        // Nothing stays locked; the seller holds the quote net of the taker fee.
        let (eth, locked) = engine.balance(1, ETH);
        assert_eq!((eth, locked), (a("99.8"), Amount::ZERO));
        // More quote than the book can pay: what it can, then expired.
        for_quote.quote_quantity = Some(a("100000"));
        let events = place(&mut engine, 1, for_quote.clone());
        assert_eq!(status(&events, 4), OrderStatus::Expired);
        assert_eq!(trades(&events).len(), 1);
        assert_eq!(engine.balance(1, ETH).1, Amount::ZERO);
        // An empty book: expired untouched.
        let events = place(&mut engine, 1, for_quote.clone());
        assert_eq!(status(&events, 5), OrderStatus::Expired);
        assert!(trades(&events).is_empty());
    }

    #[test]
    fn limit_maker_that_would_cross_is_rejected() {
        let mut engine = engine();
        place(&mut engine, 1, limit(Side::Sell, "1", "3000"));
        let maker = order(
            Side::Buy,
            OrderType::LimitMaker,
            TimeInForce::Gtc,
            "1",
            Some("3000"),
        );
        assert_eq!(
            place(&mut engine, 2, maker),
            vec![Event::Rejected(Reject::WouldTake)]
        );
        let maker = order(
            Side::Buy,
            OrderType::LimitMaker,
            TimeInForce::Gtc,
            "1",
            Some("2999.99"),
        );
        assert_eq!(status(&place(&mut engine, 2, maker), 2), OrderStatus::New);
    }

    #[test]
    fn self_trade_prevention_modes() {
        for (mode, taker, maker, fills) in [
            (StpMode::None, OrderStatus::Filled, OrderStatus::Filled, 1),
            (
                StpMode::ExpireTaker,
                OrderStatus::ExpiredInMatch,
                OrderStatus::New,
                0,
            ),
            (
                StpMode::ExpireMaker,
                OrderStatus::Expired,
                OrderStatus::ExpiredInMatch,
                0,
            ),
            (
                StpMode::ExpireBoth,
                OrderStatus::ExpiredInMatch,
                OrderStatus::ExpiredInMatch,
                0,
            ),
        ] {
            let mut engine = engine();
            let first = place(&mut engine, 1, limit(Side::Sell, "1", "3000"));
            let mut own = order(
                Side::Buy,
                OrderType::Limit,
                TimeInForce::Ioc,
                "1",
                Some("3000"),
            );
            own.stp = mode;
            let events = place(&mut engine, 1, own);
            assert_eq!(status(&events, 2), taker, "{mode:?} taker");
            let maker_state = if maker == OrderStatus::New {
                status(&first, 1)
            } else {
                status(&events, 1)
            };
            assert_eq!(maker_state, maker, "{mode:?} maker");
            assert_eq!(trades(&events).len(), fills, "{mode:?}");
        }
    }

    #[test]
    fn fill_or_kill_counts_only_liquidity_that_self_trade_prevention_leaves() {
        for (mode, expected) in [
            (StpMode::ExpireMaker, OrderStatus::Expired),
            (StpMode::ExpireTaker, OrderStatus::Expired),
            (StpMode::None, OrderStatus::Filled),
        ] {
            let mut engine = engine();
            place(&mut engine, 2, limit(Side::Sell, "1", "3000"));
            place(&mut engine, 1, limit(Side::Sell, "1", "3000"));
            place(&mut engine, 2, limit(Side::Sell, "1", "3001"));
            let mut fok = order(
                Side::Buy,
                OrderType::Limit,
                TimeInForce::Fok,
                "3",
                Some("3001"),
            );
            fok.stp = mode;
            let events = place(&mut engine, 1, fok);
            assert_eq!(status(&events, 4), expected, "{mode:?}");
            let filled = trades(&events)
                .iter()
                .fold(Amount::ZERO, |sum, t| sum.checked_add(t.quantity).unwrap());
            assert!(
                filled.is_zero() || filled == a("3"),
                "{mode:?}: a fill-or-kill never fills in part ({filled})"
            );
        }
    }

    #[test]
    fn a_quote_budget_never_buys_base_for_nothing() {
        // 0.05001 BTC does not divide 1e-8 BTC evenly: an unrounded budget of
        // one unit would "afford" 19 units of ETH for a quote rounding to 0.
        let mut engine = Engine::new(two_markets(), FEES);
        for (account, asset) in [(1, ETH), (2, BTC)] {
            engine.apply(Command::Credit {
                account,
                asset,
                amount: a("100"),
            });
        }
        let mut sell = limit(Side::Sell, "10", "0.05001");
        sell.market = ETHBTC;
        place(&mut engine, 1, sell);
        let mut buy = order(Side::Buy, OrderType::Market, TimeInForce::Gtc, "1", None);
        buy.market = ETHBTC;
        buy.quantity = None;
        buy.quote_quantity = Some(a("0.005"));
        let events = place(&mut engine, 2, buy);
        let fills = trades(&events);
        assert_eq!(fills.len(), 1);
        assert_eq!(
            (fills[0].quantity, fills[0].quote_quantity),
            (a("0.099"), a("0.00495099"))
        );
        assert_eq!(
            engine.balance(2, BTC),
            (a("99.99504901"), Amount::ZERO),
            "the unspent budget comes back"
        );
        let off_grid = limit(Side::Sell, "0.00001", "3000");
        assert_eq!(
            place(&mut engine, 1, off_grid),
            vec![Event::Rejected(Reject::OffGrid)]
        );
    }

    #[test]
    fn insufficient_funds_and_duplicate_client_ids_change_nothing() {
        let mut engine = engine();
        let too_big = limit(Side::Buy, "100", "3000");
        assert_eq!(
            place(&mut engine, 1, too_big),
            vec![Event::Rejected(Reject::InsufficientBalance)]
        );
        let mut named = limit(Side::Buy, "1", "3000");
        named.client_order_id = Some("mine".into());
        place(&mut engine, 1, named.clone());
        assert_eq!(
            place(&mut engine, 1, named.clone()),
            vec![Event::Rejected(Reject::DuplicateClientOrderId)]
        );
        assert_eq!(
            status(&place(&mut engine, 2, named), 2),
            OrderStatus::New,
            "ids are per account"
        );
        assert_eq!(engine.balance(1, USDT), (a("97000"), a("3000")));
    }

    #[test]
    fn every_order_type_time_in_force_and_self_trade_mode() {
        use OrderStatus::{Expired, ExpiredInMatch, Filled, New, PartiallyFilled};
        use OrderType::{Limit, LimitMaker, Market};
        use StpMode::{ExpireBoth, ExpireMaker, ExpireTaker, None as Off};
        use TimeInForce::{Fok, Gtc, Ioc};
        // Book: account 1 sells 1 @ 3000 (order 1), account 2 sells 1 @ 3001
        // (order 2). Account 1 then buys 2 (up to 3001): its own order is met first.
        // (type, tif, stp, taker status, trades, own maker's status after)
        let cases = [
            (Limit, Gtc, Off, Some(Filled), 2, Filled),
            (Limit, Gtc, ExpireTaker, Some(ExpiredInMatch), 0, New),
            (
                Limit,
                Gtc,
                ExpireMaker,
                Some(PartiallyFilled),
                1,
                ExpiredInMatch,
            ),
            (
                Limit,
                Gtc,
                ExpireBoth,
                Some(ExpiredInMatch),
                0,
                ExpiredInMatch,
            ),
            (Limit, Ioc, Off, Some(Filled), 2, Filled),
            (Limit, Ioc, ExpireTaker, Some(ExpiredInMatch), 0, New),
            (Limit, Ioc, ExpireMaker, Some(Expired), 1, ExpiredInMatch),
            (
                Limit,
                Ioc,
                ExpireBoth,
                Some(ExpiredInMatch),
                0,
                ExpiredInMatch,
            ),
            (Limit, Fok, Off, Some(Filled), 2, Filled),
            (Limit, Fok, ExpireTaker, Some(Expired), 0, New),
            (Limit, Fok, ExpireMaker, Some(Expired), 0, New),
            (Limit, Fok, ExpireBoth, Some(Expired), 0, New),
            (Market, Gtc, Off, Some(Filled), 2, Filled),
            (Market, Gtc, ExpireTaker, Some(ExpiredInMatch), 0, New),
            (Market, Gtc, ExpireMaker, Some(Expired), 1, ExpiredInMatch),
            (
                Market,
                Gtc,
                ExpireBoth,
                Some(ExpiredInMatch),
                0,
                ExpiredInMatch,
            ),
            (LimitMaker, Gtc, Off, None, 0, New),
            (LimitMaker, Gtc, ExpireTaker, None, 0, New),
            (LimitMaker, Gtc, ExpireMaker, None, 0, New),
            (LimitMaker, Gtc, ExpireBoth, None, 0, New),
        ];
        for (order_type, tif, stp, expected, fills, maker_after) in cases {
            let case = format!("{order_type:?} {tif:?} {stp:?}");
            let mut engine = engine();
            let first = place(&mut engine, 1, limit(Side::Sell, "1", "3000"));
            place(&mut engine, 2, limit(Side::Sell, "1", "3001"));
            let price = (order_type != Market).then_some("3001");
            let mut buy = order(Side::Buy, order_type, tif, "2", price);
            buy.stp = stp;
            let events = place(&mut engine, 1, buy);
            match expected {
                Some(expected) => assert_eq!(status(&events, 3), expected, "{case}"),
                None => assert_eq!(events, vec![Event::Rejected(Reject::WouldTake)], "{case}"),
            }
            assert_eq!(trades(&events).len(), fills, "{case}");
            let maker = if maker_after == New {
                status(&first, 1)
            } else {
                status(&events, 1)
            };
            assert_eq!(maker, maker_after, "{case}: own resting order");
            assert_eq!(engine.check_invariants(), Ok(()), "{case}");
            // Own maker if untouched, account 2's order if nothing traded, the taker if it rests.
            let resting = usize::from(maker_after == New)
                + usize::from(fills == 0)
                + usize::from(expected == Some(PartiallyFilled));
            assert_eq!(engine.resting_orders(ETHUSDT), resting, "{case}: resting");
        }
    }

    #[test]
    fn cancel_all_ends_every_open_order_of_the_account_on_that_market_only() {
        let mut engine = engine();
        place(&mut engine, 1, limit(Side::Buy, "1", "2990"));
        place(&mut engine, 2, limit(Side::Buy, "1", "2991"));
        place(&mut engine, 1, limit(Side::Sell, "1", "3010"));
        place(&mut engine, 1, limit(Side::Sell, "2", "3000"));
        place(&mut engine, 2, limit(Side::Buy, "1", "3000")); // fills half of #4
        let events = engine.apply(Command::CancelAll {
            account: 1,
            market: ETHUSDT,
            time_ms: 5,
        });
        let canceled: Vec<u64> = events
            .iter()
            .filter_map(|e| match e {
                Event::Order(o) if o.status == OrderStatus::Canceled => Some(o.order_id),
                _ => None,
            })
            .collect();
        assert_eq!(canceled, vec![1, 3, 4], "oldest first");
        assert_eq!(engine.balance(1, USDT).1, Amount::ZERO);
        assert_eq!(engine.balance(1, ETH).1, Amount::ZERO);
        assert_eq!(engine.resting_orders(ETHUSDT), 1, "account 2's order stays");
        assert_eq!(
            engine.apply(Command::CancelAll {
                account: 1,
                market: ETHUSDT,
                time_ms: 6,
            }),
            vec![Event::Rejected(Reject::UnknownOrder)]
        );
        assert_eq!(
            engine.apply(Command::CancelAll {
                account: 1,
                market: MarketId(7),
                time_ms: 6,
            }),
            vec![Event::Rejected(Reject::UnknownSymbol)]
        );
    }

    /// A random but always well-formed command over two markets and three accounts.
    pub(crate) fn command_strategy() -> impl proptest::strategy::Strategy<Value = Command> {
        use proptest::prelude::*;
        (
            0u8..8,
            1u64..4,
            any::<bool>(),
            1u64..40,
            0u64..20,
            0u8..4,
            any::<bool>(),
        )
            .prop_map(
                |(kind, account, buy, quantity, tick, extra, second_market)| {
                    let (market, price, quote) = if second_market {
                        (ETHBTC, Amount::from_units(5_000_000 + tick * 1_000), BTC)
                    } else {
                        (
                            ETHUSDT,
                            Amount::from_units((2990 + tick) * 100_000_000),
                            USDT,
                        )
                    };
                    let quantity = Amount::from_units(quantity * 1_000_000);
                    let side = if buy { Side::Buy } else { Side::Sell };
                    let stp = [
                        StpMode::None,
                        StpMode::ExpireTaker,
                        StpMode::ExpireMaker,
                        StpMode::ExpireBoth,
                    ][extra as usize];
                    let mut new = order(side, OrderType::Limit, TimeInForce::Gtc, "1", None);
                    new.market = market;
                    new.quantity = Some(quantity);
                    new.price = Some(price);
                    new.stp = stp;
                    let asset = [quote, ETH][extra as usize % 2];
                    match kind {
                        0 => Command::Credit {
                            account,
                            asset,
                            amount: Amount::from_units(quantity.units() * 5_000),
                        },
                        1 => Command::Debit {
                            account,
                            asset,
                            amount: quantity,
                        },
                        2 | 3 => {
                            new.time_in_force =
                                [TimeInForce::Gtc, TimeInForce::Ioc, TimeInForce::Fok]
                                    [extra as usize % 3];
                            Command::Place {
                                account,
                                order: new,
                                time_ms: 0,
                            }
                        }
                        4 => {
                            new.order_type = OrderType::Market;
                            new.price = None;
                            Command::Place {
                                account,
                                order: new,
                                time_ms: 0,
                            }
                        }
                        5 => {
                            new.order_type = OrderType::LimitMaker;
                            Command::Place {
                                account,
                                order: new,
                                time_ms: 0,
                            }
                        }
                        6 if extra == 0 => Command::CancelAll {
                            account,
                            market,
                            time_ms: 0,
                        },
                        6 => Command::Cancel {
                            account,
                            market,
                            order_id: quantity.units() / 1_000_000,
                            time_ms: 0,
                        },
                        _ => {
                            new.order_type = OrderType::Market;
                            new.price = None;
                            new.quantity = None;
                            new.quote_quantity = Some(Amount::from_units(quantity.units() / 2));
                            Command::Place {
                                account,
                                order: new,
                                time_ms: 0,
                            }
                        }
                    }
                },
            )
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
        #[test]
        fn random_commands_keep_every_invariant(commands in proptest::collection::vec(command_strategy(), 1..100)) {
            let mut engine = Engine::new(two_markets(), FEES);
            // Preallocated memory changes where orders live, never what happens.
            let mut preallocated = Engine::with_capacity(two_markets(), FEES, 4);
            for command in commands {
                let events = engine.apply(command.clone());
                proptest::prop_assert_eq!(engine.check_invariants(), Ok(()));
                proptest::prop_assert_eq!(preallocated.apply(command), events);
            }
            proptest::prop_assert_eq!(engine.snapshot(), preallocated.snapshot());
        }
    }

    fn trades_in(events: &[Event]) -> usize {
        events
            .iter()
            .filter(|e| matches!(e, Event::Trade(_)))
            .count()
    }

    #[test]
    fn the_random_command_generator_produces_trades() {
        use proptest::strategy::{Strategy, ValueTree};
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let mut engine = Engine::new(two_markets(), FEES);
        let mut trades = 0;
        for _ in 0..3000 {
            let command = command_strategy().new_tree(&mut runner).unwrap().current();
            trades += trades_in(&engine.apply(command));
        }
        assert!(trades > 50, "only {trades} trades in 3000 random commands");
    }
}

#[cfg(test)]
mod order_index_tests {
    use super::*;

    #[test]
    fn one_long_resting_order_does_not_pin_the_index_to_every_id_since() {
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
