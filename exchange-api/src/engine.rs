//! The matching engine and ledger: a deterministic state machine with no I/O.
//! Commands go in, events come out; every money rule lives here.
//!
//! Funds are locked on placement (quote for buys at the limit price, base for
//! sells) and settled at the maker's price; fees are taken from what each
//! side receives and credited to the fee account, so nothing beyond the order
//! itself is ever reserved.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use crate::amount::Amount;
use crate::market::{Market, StpMode};
use crate::order::{NewOrder, OrderType, Side, TimeInForce};

/// An account number.
pub type AccountId = u64;

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
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reject {
    /// Unknown market.
    UnknownSymbol,
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
        asset: String,
        /// Amount.
        amount: Amount,
    },
    /// Remove free funds (withdrawal).
    Debit {
        /// Account.
        account: AccountId,
        /// Asset.
        asset: String,
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
        symbol: String,
        /// Order id.
        order_id: u64,
    },
}

/// A fill between a resting (maker) and an incoming (taker) order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trade {
    /// Market.
    pub symbol: Arc<str>,
    /// Per-market trade id.
    pub trade_id: u64,
    /// Maker's price.
    pub price: Amount,
    /// Base quantity.
    pub quantity: Amount,
    /// Quote quantity (price × quantity, rounded down).
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
}

/// An order's state after a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderState {
    /// Market.
    pub symbol: Arc<str>,
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
}

/// What a command did.
#[derive(Debug, Clone, PartialEq, Eq)]
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
        asset: Arc<str>,
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

#[derive(Debug, Clone)]
struct Resting {
    account: AccountId,
    side: Side,
    price: Amount,
    remaining: Amount,
    executed: Amount,
    cumulative_quote: Amount,
    /// What is still locked for this order (quote for buys, base for sells).
    locked: Amount,
    stp: StpMode,
    client_order_id: Option<String>,
}

impl Resting {
    /// Books a fill of `quantity` for `quote` that consumes `spent` of the lock.
    fn fill(&mut self, quantity: Amount, quote: Amount, spent: Amount) -> Result<(), Reject> {
        self.remaining = self
            .remaining
            .checked_sub(quantity)
            .ok_or(Reject::Overflow)?;
        self.executed = self
            .executed
            .checked_add(quantity)
            .ok_or(Reject::Overflow)?;
        self.cumulative_quote = self
            .cumulative_quote
            .checked_add(quote)
            .ok_or(Reject::Overflow)?;
        self.locked = self.locked.checked_sub(spent).ok_or(Reject::Overflow)?;
        Ok(())
    }
}

/// One price level: order ids in time order. Removed orders stay in the
/// queue as stale ids until they reach the front (lazy deletion keeps a
/// cancel O(1)); `live` counts the ones still resting.
#[derive(Default)]
struct Level {
    queue: VecDeque<u64>,
    live: usize,
}

impl Level {
    /// The oldest order still resting, dropping stale ids on the way.
    fn front(&mut self, orders: &HashMap<u64, Resting>) -> Option<u64> {
        while let Some(id) = self.queue.front() {
            if orders.contains_key(id) {
                return Some(*id);
            }
            self.queue.pop_front();
        }
        None
    }

    /// Resting order ids in time order.
    fn ids<'a>(&'a self, orders: &'a HashMap<u64, Resting>) -> impl Iterator<Item = &'a u64> + 'a {
        self.queue.iter().filter(|id| orders.contains_key(id))
    }
}

struct Book {
    market: Market,
    /// Shared names, so events carry them without allocating.
    symbol: Arc<str>,
    base: Arc<str>,
    quote: Arc<str>,
    /// Price → level. Bids are read from the back.
    bids: BTreeMap<Amount, Level>,
    asks: BTreeMap<Amount, Level>,
    orders: HashMap<u64, Resting>,
    /// Open orders per account (MAX_NUM_ORDERS).
    open_by_account: HashMap<AccountId, usize>,
    /// Client order ids of open orders.
    client_ids: HashMap<(AccountId, String), u64>,
    next_order_id: u64,
    next_trade_id: u64,
}

/// The whole exchange state.
pub struct Engine {
    books: HashMap<String, Book>,
    balances: HashMap<AccountId, HashMap<Arc<str>, Balance>>,
    /// Credits minus debits per asset: what the ledger must hold in total.
    supply: HashMap<Arc<str>, Amount>,
    fee_account: AccountId,
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

impl Engine {
    /// An engine over `markets`, fees going to `fee_account`.
    pub fn new(markets: Vec<Market>, fee_account: AccountId) -> Self {
        let books = markets
            .into_iter()
            .map(|market| {
                let symbol = market.symbol.clone();
                let book = Book {
                    symbol: Arc::from(market.symbol.as_str()),
                    base: Arc::from(market.base.as_str()),
                    quote: Arc::from(market.quote.as_str()),
                    market,
                    bids: BTreeMap::new(),
                    asks: BTreeMap::new(),
                    orders: HashMap::new(),
                    open_by_account: HashMap::new(),
                    client_ids: HashMap::new(),
                    next_order_id: 1,
                    next_trade_id: 1,
                };
                (symbol, book)
            })
            .collect();
        Self {
            books,
            balances: HashMap::new(),
            supply: HashMap::new(),
            fee_account,
        }
    }

    /// Free and locked amounts of `asset` held by `account`.
    pub fn balance(&self, account: AccountId, asset: &str) -> (Amount, Amount) {
        let b = self
            .balances
            .get(&account)
            .and_then(|assets| assets.get(asset))
            .copied()
            .unwrap_or_default();
        (b.free, b.locked)
    }

    /// Applies one command and returns what happened. A refused command
    /// changes nothing.
    pub fn apply(&mut self, command: Command) -> Vec<Event> {
        let mut events = Vec::new();
        let result = match command {
            Command::Credit {
                account,
                asset,
                amount,
            } => self.adjust(account, &asset, amount, true, &mut events),
            Command::Debit {
                account,
                asset,
                amount,
            } => self.adjust(account, &asset, amount, false, &mut events),
            Command::Place {
                account,
                order,
                time_ms: _,
            } => self.place(account, order, &mut events),
            Command::Cancel {
                account,
                symbol,
                order_id,
            } => self.cancel(account, &symbol, order_id, &mut events),
        };
        if let Err(reject) = result {
            return vec![Event::Rejected(reject)];
        }
        debug_assert_eq!(self.check_invariants(), Ok(()));
        events
    }

    fn entry(&mut self, account: AccountId, asset: &Arc<str>) -> &mut Balance {
        self.balances
            .entry(account)
            .or_default()
            .entry(asset.clone())
            .or_default()
    }

    fn emit_balance(&self, account: AccountId, asset: &Arc<str>, events: &mut Vec<Event>) {
        let (free, locked) = self.balance(account, asset);
        events.push(Event::Balance {
            account,
            asset: asset.clone(),
            free,
            locked,
        });
    }

    /// The shared name of `asset`, allocated once per asset.
    fn asset_name(&self, asset: &str) -> Arc<str> {
        match self.supply.get_key_value(asset) {
            Some((name, _)) => name.clone(),
            None => Arc::from(asset),
        }
    }

    /// Adds (`credit`) or removes free funds, keeping the supply in step.
    fn adjust(
        &mut self,
        account: AccountId,
        asset: &str,
        amount: Amount,
        credit: bool,
        events: &mut Vec<Event>,
    ) -> Result<(), Reject> {
        let (free, _) = self.balance(account, asset);
        let supply = self.supply.get(asset).copied().unwrap_or_default();
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
        let asset = self.asset_name(asset);
        self.supply.insert(asset.clone(), supply);
        self.entry(account, &asset).free = free;
        self.emit_balance(account, &asset, events);
        Ok(())
    }

    /// Takes `released` out of `account`'s locked `asset` and adds `credited` to its free.
    fn settle_leg(
        &mut self,
        account: AccountId,
        asset: &Arc<str>,
        released: Amount,
        credited: Amount,
    ) -> Result<(), Reject> {
        let b = self.entry(account, asset);
        b.locked = b.locked.checked_sub(released).ok_or(Reject::Overflow)?;
        b.free = b.free.checked_add(credited).ok_or(Reject::Overflow)?;
        Ok(())
    }

    /// Moves `amount` from free to locked (or back with `lock = false`).
    fn shift(
        &mut self,
        account: AccountId,
        asset: &Arc<str>,
        amount: Amount,
        lock: bool,
    ) -> Result<(), Reject> {
        let b = self.entry(account, asset);
        let (from, to) = if lock {
            (b.free, b.locked)
        } else {
            (b.locked, b.free)
        };
        let from = from
            .checked_sub(amount)
            .ok_or(Reject::InsufficientBalance)?;
        let to = to.checked_add(amount).ok_or(Reject::Overflow)?;
        if lock {
            (b.free, b.locked) = (from, to);
        } else {
            (b.locked, b.free) = (from, to);
        }
        Ok(())
    }

    /// Simulates a taker of `account` against the book: the base it would fill
    /// and the quote it would pay, with self-trade prevention applied the way
    /// matching will (own orders are skipped under EXPIRE_MAKER and end the
    /// taker under EXPIRE_TAKER / EXPIRE_BOTH).
    fn reachable(book: &Book, account: AccountId, order: &NewOrder) -> (Amount, Amount) {
        let (side, limit, want_base, want_quote) = (
            order.side,
            order.price,
            order.quantity,
            order.quote_quantity,
        );
        let (mut base, mut quote) = (Amount::ZERO, Amount::ZERO);
        let levels: Box<dyn Iterator<Item = (&Amount, &Level)>> = match side {
            Side::Buy => Box::new(book.asks.iter()),
            Side::Sell => Box::new(book.bids.iter().rev()),
        };
        for (price, ids) in levels {
            if limit.is_some_and(|l| {
                if side == Side::Buy {
                    *price > l
                } else {
                    *price < l
                }
            }) {
                break;
            }
            for id in ids.ids(&book.orders) {
                let resting = &book.orders[id];
                if resting.account == account {
                    match order.stp {
                        StpMode::None => {}
                        StpMode::ExpireMaker => continue,
                        StpMode::ExpireTaker | StpMode::ExpireBoth => return (base, quote),
                    }
                }
                let available = resting.remaining;
                let mut take = available;
                if let Some(want) = want_base {
                    take = take.min(want.checked_sub(base).unwrap_or_default());
                }
                if let Some(want) = want_quote {
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
        let book = self.books.get(&order.symbol).ok_or(Reject::UnknownSymbol)?;
        let (base, quote) = (book.base.clone(), book.quote.clone());
        let off_grid = |value: Option<Amount>, grid: Amount| {
            value.is_some_and(|v| v.is_zero() || v.units() % grid.units().max(1) != 0)
        };
        if off_grid(order.price, book.market.tick_size)
            || off_grid(order.quantity, book.market.step_size)
        {
            return Err(Reject::OffGrid);
        }
        if let Some(id) = &order.client_order_id
            && book.client_ids.contains_key(&(account, id.clone()))
        {
            return Err(Reject::DuplicateClientOrderId);
        }
        let open = book.open_by_account.get(&account).copied().unwrap_or(0);
        if order.order_type != OrderType::Market && open >= book.market.max_num_orders as usize {
            return Err(Reject::TooManyOrders);
        }
        let limit = order.price;
        if order.order_type == OrderType::LimitMaker {
            let crosses = match order.side {
                Side::Buy => book
                    .asks
                    .keys()
                    .next()
                    .is_some_and(|ask| Some(*ask) <= limit),
                Side::Sell => book
                    .bids
                    .keys()
                    .next_back()
                    .is_some_and(|bid| Some(*bid) >= limit),
            };
            if crosses {
                return Err(Reject::WouldTake);
            }
        }
        let (reach_base, reach_quote) = Self::reachable(book, account, &order);
        if order.time_in_force == TimeInForce::Fok && Some(reach_base) != order.quantity {
            // Fill-or-kill that cannot fill completely: expires untouched.
            let order_id = self.next_order_id(&order.symbol);
            events.push(Event::Order(OrderState {
                symbol: self.books[&order.symbol].symbol.clone(),
                order_id,
                account,
                status: OrderStatus::Expired,
                executed: Amount::ZERO,
                cumulative_quote: Amount::ZERO,
            }));
            return Ok(());
        }
        // What to lock: sells lock base; limit buys lock price × quantity;
        // market buys lock what the book can fill (or the quote amount given).
        let (lock_asset, lock) = match (order.side, order.order_type) {
            (Side::Sell, _) => (&base, order.quantity.ok_or(Reject::Overflow)?),
            (Side::Buy, OrderType::Market) => (&quote, order.quote_quantity.unwrap_or(reach_quote)),
            (Side::Buy, _) => (
                &quote,
                mul(
                    limit.ok_or(Reject::Overflow)?,
                    order.quantity.ok_or(Reject::Overflow)?,
                )
                .ok_or(Reject::Overflow)?,
            ),
        };
        let lock_asset = lock_asset.clone();
        if let (Side::Sell, Some(price), Some(quantity)) = (order.side, limit, order.quantity) {
            // What a sell can receive must fit, so settlement cannot overflow later.
            mul(price, quantity).ok_or(Reject::Overflow)?;
        }
        if self.balance(account, &lock_asset).0 < lock {
            return Err(Reject::InsufficientBalance);
        }
        self.shift(account, &lock_asset, lock, true)?;
        let order_id = self.next_order_id(&order.symbol);
        let mut taker = Resting {
            account,
            side: order.side,
            price: limit.unwrap_or_default(),
            remaining: order.quantity.unwrap_or(Amount::from_units(u64::MAX)),
            executed: Amount::ZERO,
            cumulative_quote: Amount::ZERO,
            locked: lock,
            stp: order.stp,
            client_order_id: order.client_order_id.clone(),
        };
        // Market buys spend at most what they locked, whatever self-trade
        // prevention skips on the way.
        let mut quote_budget = match (order.side, order.order_type) {
            (Side::Buy, OrderType::Market) => Some(lock),
            _ => None,
        };
        let expired_in_match =
            self.match_taker(&order, order_id, &mut taker, &mut quote_budget, events)?;

        let status = if expired_in_match {
            OrderStatus::ExpiredInMatch
        } else if taker.remaining.is_zero()
            || (order.quote_quantity.is_some() && quote_budget.is_some_and(|q| q.is_zero()))
        {
            OrderStatus::Filled
        } else if order.order_type == OrderType::Market || order.time_in_force != TimeInForce::Gtc {
            OrderStatus::Expired
        } else if taker.executed.is_zero() {
            OrderStatus::New
        } else {
            OrderStatus::PartiallyFilled
        };
        let rests = matches!(status, OrderStatus::New | OrderStatus::PartiallyFilled);
        if rests {
            let book = self.books.get_mut(&order.symbol).expect("checked above");
            let levels = if order.side == Side::Buy {
                &mut book.bids
            } else {
                &mut book.asks
            };
            let level = levels.entry(taker.price).or_default();
            level.queue.push_back(order_id);
            level.live += 1;
            *book.open_by_account.entry(account).or_default() += 1;
            if let Some(id) = &taker.client_order_id {
                book.client_ids.insert((account, id.clone()), order_id);
            }
            book.orders.insert(order_id, taker.clone());
        } else if !taker.locked.is_zero() {
            self.shift(account, &lock_asset, taker.locked, false)?;
        }
        events.push(Event::Order(OrderState {
            symbol: self.books[&order.symbol].symbol.clone(),
            order_id,
            account,
            status,
            executed: taker.executed,
            cumulative_quote: taker.cumulative_quote,
        }));
        self.emit_balance(account, &base, events);
        self.emit_balance(account, &quote, events);
        Ok(())
    }

    fn next_order_id(&mut self, symbol: &str) -> u64 {
        let book = self.books.get_mut(symbol).expect("known symbol");
        book.next_order_id += 1;
        book.next_order_id - 1
    }

    /// Matches the taker against the opposite side. Returns whether self-trade
    /// prevention expired the taker.
    fn match_taker(
        &mut self,
        order: &NewOrder,
        taker_id: u64,
        taker: &mut Resting,
        quote_budget: &mut Option<Amount>,
        events: &mut Vec<Event>,
    ) -> Result<bool, Reject> {
        let symbol = order.symbol.as_str();
        loop {
            if taker.remaining.is_zero() || quote_budget.is_some_and(|q| q.is_zero()) {
                return Ok(false);
            }
            let book = self.books.get_mut(symbol).expect("known symbol");
            let orders = &book.orders;
            let best = match order.side {
                Side::Buy => book.asks.iter_mut().next(),
                Side::Sell => book.bids.iter_mut().next_back(),
            }
            .and_then(|(price, level)| Some((*price, level.front(orders)?)));
            let Some((price, maker_id)) = best else {
                return Ok(false);
            };
            if order.price.is_some_and(|limit| {
                if order.side == Side::Buy {
                    price > limit
                } else {
                    price < limit
                }
            }) {
                return Ok(false);
            }
            let maker = &book.orders[&maker_id];
            let (maker_account, maker_price, maker_remaining) =
                (maker.account, maker.price, maker.remaining);
            if maker_account == taker.account && taker.stp != StpMode::None {
                let (expire_maker, expire_taker) = match taker.stp {
                    StpMode::ExpireTaker => (false, true),
                    StpMode::ExpireMaker => (true, false),
                    _ => (true, true),
                };
                if expire_maker {
                    self.remove_resting(symbol, maker_id, OrderStatus::ExpiredInMatch, events)?;
                }
                if expire_taker {
                    return Ok(true);
                }
                continue;
            }
            let mut quantity = taker.remaining.min(maker_remaining);
            if let Some(budget) = *quote_budget {
                quantity = quantity.min(affordable(budget, price, book.market.step_size));
            }
            let quote_quantity = mul(price, quantity).ok_or(Reject::Overflow)?;
            // Nothing trades for nothing: a fill must move both assets.
            if quantity.is_zero() || quote_quantity.is_zero() {
                return Ok(false);
            }
            if let Some(budget) = quote_budget.as_mut() {
                *budget = budget.checked_sub(quote_quantity).ok_or(Reject::Overflow)?;
            }
            self.settle(
                symbol,
                order.side,
                (taker_id, taker),
                (maker_id, maker_account, maker_price),
                price,
                quantity,
                quote_quantity,
                events,
            )?;
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn settle(
        &mut self,
        symbol: &str,
        taker_side: Side,
        (taker_id, taker): (u64, &mut Resting),
        (maker_id, maker_account, maker_price): (u64, AccountId, Amount),
        price: Amount,
        quantity: Amount,
        quote_quantity: Amount,
        events: &mut Vec<Event>,
    ) -> Result<(), Reject> {
        let book = self.books.get_mut(symbol).expect("known symbol");
        let (base, quote) = (book.base.clone(), book.quote.clone());
        let (maker_rate, taker_rate) = (book.market.maker_fee, book.market.taker_fee);
        let trade_id = book.next_trade_id;
        book.next_trade_id += 1;
        // The buyer's lock shrinks by what this fill may cost at its own limit
        // (maker buys: their price; taker buys: their limit, or the quote paid
        // for market orders); the seller's by the base sold.
        let taker_spent = match taker_side {
            Side::Buy if taker.price.is_zero() => quote_quantity,
            Side::Buy => mul(taker.price, quantity).ok_or(Reject::Overflow)?,
            Side::Sell => quantity,
        };
        let maker_spent = match taker_side {
            Side::Buy => quantity,
            Side::Sell => mul(maker_price, quantity).ok_or(Reject::Overflow)?,
        };
        let (buyer, seller) = match taker_side {
            Side::Buy => (taker.account, maker_account),
            Side::Sell => (maker_account, taker.account),
        };
        let (buyer_rate, seller_rate) = match taker_side {
            Side::Buy => (taker_rate, maker_rate),
            Side::Sell => (maker_rate, taker_rate),
        };
        let buyer_fee = quantity.checked_mul(buyer_rate).ok_or(Reject::Overflow)?;
        let seller_fee = quote_quantity
            .checked_mul(seller_rate)
            .ok_or(Reject::Overflow)?;
        let buyer_spent = if taker_side == Side::Buy {
            taker_spent
        } else {
            maker_spent
        };

        // Buyer: its quote reservation for this fill is released, the part
        // not paid (price improvement) back to free; it receives base net of fee.
        let improvement = buyer_spent
            .checked_sub(quote_quantity)
            .ok_or(Reject::Overflow)?;
        let buyer_gets = quantity.checked_sub(buyer_fee).ok_or(Reject::Overflow)?;
        let seller_gets = quote_quantity
            .checked_sub(seller_fee)
            .ok_or(Reject::Overflow)?;
        let fee_account = self.fee_account;
        self.settle_leg(buyer, &quote, buyer_spent, improvement)?;
        self.settle_leg(buyer, &base, Amount::ZERO, buyer_gets)?;
        // Seller: its base reservation goes; it receives quote net of fee.
        self.settle_leg(seller, &base, quantity, Amount::ZERO)?;
        self.settle_leg(seller, &quote, Amount::ZERO, seller_gets)?;
        self.settle_leg(fee_account, &base, Amount::ZERO, buyer_fee)?;
        self.settle_leg(fee_account, &quote, Amount::ZERO, seller_fee)?;
        taker.fill(quantity, quote_quantity, taker_spent)?;

        let (maker_fee, taker_fee) = match taker_side {
            Side::Buy => (seller_fee, buyer_fee),
            Side::Sell => (buyer_fee, seller_fee),
        };
        events.push(Event::Trade(Trade {
            symbol: self.books[symbol].symbol.clone(),
            trade_id,
            price,
            quantity,
            quote_quantity,
            maker: (maker_id, maker_account),
            taker: (taker_id, taker.account),
            taker_side,
            maker_fee,
            taker_fee,
        }));

        let book = self.books.get_mut(symbol).expect("known symbol");
        let resting = book.orders.get_mut(&maker_id).expect("maker rests");
        resting.fill(quantity, quote_quantity, maker_spent)?;
        if resting.remaining.is_zero() {
            self.remove_resting(symbol, maker_id, OrderStatus::Filled, events)?;
        } else {
            let resting = &self.books[symbol].orders[&maker_id];
            events.push(Event::Order(OrderState {
                symbol: self.books[symbol].symbol.clone(),
                order_id: maker_id,
                account: resting.account,
                status: OrderStatus::PartiallyFilled,
                executed: resting.executed,
                cumulative_quote: resting.cumulative_quote,
            }));
        }
        for account in [buyer, seller] {
            self.emit_balance(account, &base, events);
            self.emit_balance(account, &quote, events);
        }
        Ok(())
    }

    /// Takes a resting order off the book, releasing what it still locks.
    fn remove_resting(
        &mut self,
        symbol: &str,
        order_id: u64,
        status: OrderStatus,
        events: &mut Vec<Event>,
    ) -> Result<(), Reject> {
        let book = self.books.get_mut(symbol).expect("known symbol");
        let order = book.orders.remove(&order_id).ok_or(Reject::UnknownOrder)?;
        let levels = if order.side == Side::Buy {
            &mut book.bids
        } else {
            &mut book.asks
        };
        if let Some(level) = levels.get_mut(&order.price) {
            level.live -= 1;
            if level.live == 0 {
                levels.remove(&order.price);
            }
        }
        if let Some(open) = book.open_by_account.get_mut(&order.account) {
            *open -= 1;
            if *open == 0 {
                book.open_by_account.remove(&order.account);
            }
        }
        if let Some(id) = &order.client_order_id {
            book.client_ids.remove(&(order.account, id.clone()));
        }
        let asset = if order.side == Side::Buy {
            book.quote.clone()
        } else {
            book.base.clone()
        };
        if !order.locked.is_zero() {
            self.shift(order.account, &asset, order.locked, false)?;
        }
        events.push(Event::Order(OrderState {
            symbol: self.books[symbol].symbol.clone(),
            order_id,
            account: order.account,
            status,
            executed: order.executed,
            cumulative_quote: order.cumulative_quote,
        }));
        self.emit_balance(order.account, &asset, events);
        Ok(())
    }

    fn cancel(
        &mut self,
        account: AccountId,
        symbol: &str,
        order_id: u64,
        events: &mut Vec<Event>,
    ) -> Result<(), Reject> {
        let book = self.books.get(symbol).ok_or(Reject::UnknownSymbol)?;
        if book
            .orders
            .get(&order_id)
            .is_none_or(|o| o.account != account)
        {
            return Err(Reject::UnknownOrder);
        }
        self.remove_resting(symbol, order_id, OrderStatus::Canceled, events)
    }

    /// A canonical description of the whole state (balances, resting orders
    /// in book order, id counters), for comparing two engines.
    pub fn snapshot(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .balances
            .iter()
            .flat_map(|(account, assets)| assets.iter().map(move |(asset, b)| (account, asset, b)))
            .filter(|(_, _, b)| !b.free.is_zero() || !b.locked.is_zero())
            .map(|(account, asset, b)| format!("balance {account} {asset} {} {}", b.free, b.locked))
            .collect();
        lines.sort();
        let mut symbols: Vec<&String> = self.books.keys().collect();
        symbols.sort();
        for symbol in symbols {
            let book = &self.books[symbol];
            lines.push(format!(
                "book {symbol} next order {} next trade {}",
                book.next_order_id, book.next_trade_id
            ));
            for (side, levels) in [("bid", &book.bids), ("ask", &book.asks)] {
                for (price, level) in levels {
                    for id in level.ids(&book.orders) {
                        let o = &book.orders[id];
                        lines.push(format!(
                            "{side} {price} #{id} account {} remaining {} executed {} quote {} locked {} {:?} {:?}",
                            o.account, o.remaining, o.executed, o.cumulative_quote, o.locked, o.stp, o.client_order_id
                        ));
                    }
                }
            }
        }
        let mut supply: Vec<String> = self
            .supply
            .iter()
            .map(|(asset, amount)| format!("supply {asset} {amount}"))
            .collect();
        supply.sort();
        lines.extend(supply);
        lines
    }

    /// Checks the ledger and books: no crossed book, locked funds equal open
    /// orders' reservations, and per asset the holdings equal credits minus debits.
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut reserved: HashMap<(AccountId, Arc<str>), Amount> = HashMap::new();
        for (symbol, book) in &self.books {
            if let (Some(bid), Some(ask)) = (book.bids.keys().next_back(), book.asks.keys().next())
                && bid >= ask
            {
                return Err(format!("{symbol}: book crossed, bid {bid} ≥ ask {ask}"));
            }
            let mut open: HashMap<AccountId, usize> = HashMap::new();
            for order in book.orders.values() {
                *open.entry(order.account).or_default() += 1;
            }
            if open != book.open_by_account {
                return Err(format!(
                    "{symbol}: open-order counts disagree with the book"
                ));
            }
            for (price, level) in book.bids.iter().chain(&book.asks) {
                if level.live == 0 || level.ids(&book.orders).count() != level.live {
                    return Err(format!(
                        "{symbol}: level {price} counts {} live orders wrongly",
                        level.live
                    ));
                }
            }
            for order in book.orders.values() {
                let asset = if order.side == Side::Buy {
                    &book.quote
                } else {
                    &book.base
                };
                let entry = reserved.entry((order.account, asset.clone())).or_default();
                *entry = entry
                    .checked_add(order.locked)
                    .ok_or("reservation overflow")?;
            }
        }
        let mut held: HashMap<&str, u128> = HashMap::new();
        let balances = self.balances.iter().flat_map(|(account, assets)| {
            assets
                .iter()
                .map(move |(asset, balance)| (account, asset, balance))
        });
        for (account, asset, balance) in balances {
            let expected = reserved
                .get(&(*account, asset.clone()))
                .copied()
                .unwrap_or_default();
            if balance.locked != expected {
                return Err(format!(
                    "account {account} {asset}: locked {} but orders reserve {expected}",
                    balance.locked
                ));
            }
            *held.entry(asset.as_ref()).or_default() +=
                u128::from(balance.free.units()) + u128::from(balance.locked.units());
        }
        for (asset, supply) in &self.supply {
            let total = held.get(asset.as_ref()).copied().unwrap_or_default();
            if total != u128::from(supply.units()) {
                return Err(format!(
                    "{asset}: ledger holds {total} units, credits − debits = {}",
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
    use crate::market::tests_support::eth_usdt;
    use crate::order::ResponseType;

    const FEES: AccountId = 999;

    fn a(text: &str) -> Amount {
        text.parse().unwrap()
    }

    fn engine() -> Engine {
        let mut engine = Engine::new(vec![eth_usdt()], FEES);
        for account in [1, 2] {
            engine.apply(Command::Credit {
                account,
                asset: "USDT".into(),
                amount: a("100000"),
            });
            engine.apply(Command::Credit {
                account,
                asset: "ETH".into(),
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
            symbol: "ETHUSDT".into(),
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
        assert_eq!(engine.balance(1, "USDT"), (a("100000"), Amount::ZERO));
        engine.apply(Command::Debit {
            account: 1,
            asset: "USDT".into(),
            amount: a("1"),
        });
        let refused = engine.apply(Command::Debit {
            account: 1,
            asset: "USDT".into(),
            amount: a("100000"),
        });
        assert_eq!(refused, vec![Event::Rejected(Reject::InsufficientBalance)]);
        assert_eq!(engine.balance(1, "USDT"), (a("99999"), Amount::ZERO));
    }

    #[test]
    fn a_resting_buy_locks_quote_and_cancel_releases_it() {
        let mut engine = engine();
        let events = place(&mut engine, 1, limit(Side::Buy, "2", "3000"));
        assert_eq!(status(&events, 1), OrderStatus::New);
        assert_eq!(engine.balance(1, "USDT"), (a("94000"), a("6000")));
        let events = engine.apply(Command::Cancel {
            account: 1,
            symbol: "ETHUSDT".into(),
            order_id: 1,
        });
        assert_eq!(status(&events, 1), OrderStatus::Canceled);
        assert_eq!(engine.balance(1, "USDT"), (a("100000"), Amount::ZERO));
        let again = engine.apply(Command::Cancel {
            account: 1,
            symbol: "ETHUSDT".into(),
            order_id: 1,
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
        assert_eq!(engine.balance(2, "USDT"), (a("97010"), Amount::ZERO));
        assert_eq!(engine.balance(2, "ETH"), (a("100.999"), Amount::ZERO));
        // Seller (maker) gets 2990 USDT minus 0.1 %.
        assert_eq!(engine.balance(1, "USDT"), (a("102987.01"), Amount::ZERO));
        assert_eq!(engine.balance(1, "ETH"), (a("99"), Amount::ZERO));
        assert_eq!(engine.balance(FEES, "ETH").0, a("0.001"));
        assert_eq!(engine.balance(FEES, "USDT").0, a("2.99"));
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
            engine.balance(2, "USDT"),
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
            symbol: "ETHUSDT".into(),
            order_id: 4,
        });
        assert_eq!(status(&events, 4), OrderStatus::Canceled);
        assert_eq!(engine.balance(2, "USDT"), (a("93999"), Amount::ZERO));
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
            engine.balance(2, "USDT").1,
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
        assert_eq!(engine.balance(2, "USDT"), (a("100000"), Amount::ZERO));
        place(&mut engine, 1, limit(Side::Sell, "1", "3000"));
        place(&mut engine, 1, limit(Side::Sell, "1", "3100"));
        let by_quantity = place(
            &mut engine,
            2,
            order(Side::Buy, OrderType::Market, TimeInForce::Gtc, "1.5", None),
        );
        assert_eq!(status(&by_quantity, 4), OrderStatus::Filled);
        assert_eq!(engine.balance(2, "USDT"), (a("95450"), Amount::ZERO));
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
        let mut engine = Engine::new(
            vec![eth_usdt(), crate::market::tests_support::eth_btc()],
            FEES,
        );
        for (account, asset) in [(1, "ETH"), (2, "BTC")] {
            engine.apply(Command::Credit {
                account,
                asset: asset.into(),
                amount: a("100"),
            });
        }
        let mut sell = limit(Side::Sell, "10", "0.05001");
        sell.symbol = "ETHBTC".into();
        place(&mut engine, 1, sell);
        let mut buy = order(Side::Buy, OrderType::Market, TimeInForce::Gtc, "1", None);
        buy.symbol = "ETHBTC".into();
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
            engine.balance(2, "BTC"),
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
        assert_eq!(engine.balance(1, "USDT"), (a("97000"), a("3000")));
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
                    let (symbol, price, quote) = if second_market {
                        (
                            "ETHBTC",
                            Amount::from_units(5_000_000 + tick * 1_000),
                            "BTC",
                        )
                    } else {
                        (
                            "ETHUSDT",
                            Amount::from_units((2990 + tick) * 100_000_000),
                            "USDT",
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
                    new.symbol = symbol.into();
                    new.quantity = Some(quantity);
                    new.price = Some(price);
                    new.stp = stp;
                    let asset = [quote, "ETH"][extra as usize % 2].to_owned();
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
                        6 => Command::Cancel {
                            account,
                            symbol: symbol.into(),
                            order_id: quantity.units() / 1_000_000,
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
            let mut engine = Engine::new(vec![eth_usdt(), crate::market::tests_support::eth_btc()], FEES);
            for command in commands {
                engine.apply(command);
                proptest::prop_assert_eq!(engine.check_invariants(), Ok(()));
            }
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
        let mut engine = Engine::new(
            vec![eth_usdt(), crate::market::tests_support::eth_btc()],
            FEES,
        );
        let mut trades = 0;
        for _ in 0..3000 {
            let command = command_strategy().new_tree(&mut runner).unwrap().current();
            trades += trades_in(&engine.apply(command));
        }
        assert!(trades > 50, "only {trades} trades in 3000 random commands");
    }
}
