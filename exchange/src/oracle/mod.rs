//! An independent, deliberately simple model of the exchange, for testing
//! the engine against. It is written from the rules and Binance's
//! documented behaviour, not from the engine's code: each market's resting
//! orders are two plain lists kept in priority order, balances an ordered
//! map, and what an order could fill is found by matching it against a copy
//! of the book. It predicts every command's outcome (refusal and its reason,
//! each fill, each order's last state) and the balances after it, so the
//! fast engine must agree on what happened, not only keep its invariants.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::amount::Amount;
use crate::catalog::{AssetId, Catalog, MarketId};
use crate::engine::{
    AccountId, Command, Event, Levels, OrderState, OrderStatus, Prevention, Reject, Trade,
};
use crate::market::{Market, StpMode};
use crate::order::{Contingency, NewOrder, NewOrderList, OrderType, Side, TimeInForce, Trigger};

/// What a command did, in a form both the model and the engine's events
/// reduce to: the order of events within a command is the engine's
/// business, their content is not.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Outcome {
    /// The refusal, if the command was refused.
    pub(crate) rejected: Option<Reject>,
    /// Every fill, in the order it happened.
    pub(crate) trades: Vec<Trade>,
    /// The last state of each order the command touched.
    pub(crate) orders: BTreeMap<(MarketId, u64), OrderState>,
    /// Conditional orders triggered, in the order they began working.
    pub(crate) triggered: Vec<(MarketId, u64)>,
    /// Trailing orders that began tracking the price.
    pub(crate) tracking: BTreeSet<(MarketId, u64)>,
    /// The part of a cancel-replace that failed while the other stands.
    pub(crate) part_refused: Option<Reject>,
    /// Orders amended, with their new quantity.
    pub(crate) amended: Vec<(u64, Amount)>,
    /// Matches self-trade prevention stopped, in order.
    pub(crate) prevented: Vec<Prevention>,
}

impl Outcome {
    /// The engine's events reduced to an outcome.
    pub(crate) fn of(events: &[Event]) -> Self {
        let mut outcome = Self::default();
        for event in events {
            match event {
                Event::Rejected(reject) => outcome.rejected = Some(*reject),
                Event::Trade(trade) => outcome.trades.push(*trade),
                Event::Order(state) => {
                    outcome
                        .orders
                        .insert((state.market, state.order_id), *state);
                }
                Event::Triggered { market, order_id } => {
                    outcome.triggered.push((*market, *order_id));
                }
                Event::Tracking { market, order_id } => {
                    outcome.tracking.insert((*market, *order_id));
                }
                Event::PartRefused(reject) => outcome.part_refused = Some(*reject),
                Event::Amended {
                    order_id, quantity, ..
                } => outcome.amended.push((*order_id, *quantity)),
                Event::Prevented(prevention) => outcome.prevented.push(*prevention),
                Event::Balance { .. }
                | Event::Deposited { .. }
                | Event::Withdrawal { .. }
                | Event::WithdrawalSigned { .. }
                | Event::DepositAddress { .. }
                | Event::Placed { .. }
                | Event::Level { .. }
                | Event::ListPlaced { .. }
                | Event::Execution(_) => {}
            }
        }
        outcome
    }
}

/// The last (free, locked) the events report for each account and asset.
pub(crate) fn reported_balances(
    events: &[Event],
) -> BTreeMap<(AccountId, AssetId), (Amount, Amount)> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::Balance {
                account,
                asset,
                free,
                locked,
            } => Some(((*account, *asset), (*free, *locked))),
            _ => None,
        })
        .collect()
}

/// `price × quantity`, for amounts the model has already checked fit.
fn mul(price: Amount, quantity: Amount) -> Amount {
    price
        .checked_mul(quantity)
        .expect("model: a checked amount fits")
}

/// The most base, in whole steps, whose exact cost at `price` is within
/// `budget` (rounding never lets a fill cost more than the budget).
fn whole_steps(budget: Amount, price: Amount, step: Amount) -> Amount {
    let cost_of_a_step = u128::from(price.units()) * u128::from(step.units());
    let steps = u128::from(budget.units()) * 100_000_000 / cost_of_a_step;
    let units = steps * u128::from(step.units());
    Amount::from_units(u64::try_from(units).unwrap_or(u64::MAX))
}

/// An order on the book.
#[derive(Debug, Clone)]
struct Resting {
    id: u64,
    account: AccountId,
    side: Side,
    price: Amount,
    remaining: Amount,
    executed: Amount,
    quote: Amount,
    client_id: Option<String>,
}

impl Resting {
    /// What it keeps reserved: its remainder at its price for a buy, its
    /// remainder for a sell.
    fn lock(&self) -> Amount {
        match self.side {
            Side::Buy => mul(self.price, self.remaining),
            Side::Sell => self.remaining,
        }
    }

    fn state(&self, market: MarketId, status: OrderStatus, time_ms: u64) -> OrderState {
        OrderState {
            market,
            order_id: self.id,
            account: self.account,
            status,
            executed: self.executed,
            cumulative_quote: self.quote,
            time_ms,
        }
    }
}

/// A conditional order before its trigger.
#[derive(Debug, Clone)]
struct Waiting {
    id: u64,
    account: AccountId,
    order: NewOrder,
    /// What it locked: the working order's lock where that is known.
    lock: Amount,
    /// Trailing: whether it follows the price yet, and the best price since.
    tracking: bool,
    best: Option<Amount>,
}

impl Waiting {
    /// Binance's trailing-stop table: before tracking, only whether the
    /// trade meets the stop price; a plain stop triggers right there. While
    /// tracking, a sell triggers on a fall of `delta` basis points from the
    /// highest trade since and a buy on a rise from the lowest; a new
    /// extreme only moves the reference.
    fn sees(&mut self, price: Amount) -> bool {
        let trigger = self.order.trigger.expect("model: a conditional order");
        let stop_met = trigger.stop_price.is_some_and(|stop| {
            Trigger::reached(stop, price, self.order.order_type, self.order.side)
        });
        let Some(delta) = trigger.trailing_delta else {
            return stop_met;
        };
        if !self.tracking {
            if stop_met {
                self.tracking = true;
                self.best = Some(price);
            }
            return false;
        }
        let sell = self.order.side == Side::Sell;
        let best = match self.best {
            Some(best) if (sell && price <= best) || (!sell && price >= best) => best,
            _ => {
                self.best = Some(price);
                return false;
            }
        };
        let moved = if sell {
            u128::from(best.units() - price.units())
        } else {
            u128::from(price.units() - best.units())
        };
        moved * 10_000 >= u128::from(best.units()) * u128::from(delta)
    }
}

/// An order list while any of its orders is open.
#[derive(Debug, Clone)]
struct ModelList {
    id: u64,
    account: AccountId,
    /// OTO / OTOCO: the working order, while it is open.
    working: Option<u64>,
    /// Orders to place once the working order fills.
    deferred: Vec<(u64, NewOrder)>,
    /// An OCO pair while both of its orders are open.
    pair: Option<(u64, u64)>,
    /// Every order of the list.
    orders: Vec<u64>,
}

/// One market's book and id counters.
#[derive(Debug, Clone)]
struct Book {
    /// Conditional orders waiting, oldest first.
    waiting: Vec<Waiting>,
    /// The last trade's price.
    last: Option<Amount>,
    /// Order lists with open orders.
    lists: Vec<ModelList>,
    /// Resting buys, best first: highest price, then first to arrive.
    bids: Vec<Resting>,
    /// Resting sells, best first: lowest price, then first to arrive.
    asks: Vec<Resting>,
    next_order: u64,
    next_trade: u64,
    next_prevented: u64,
}

impl Book {
    fn new() -> Self {
        Self {
            waiting: Vec::new(),
            last: None,
            lists: Vec::new(),
            bids: Vec::new(),
            asks: Vec::new(),
            next_order: 1,
            next_trade: 1,
            next_prevented: 1,
        }
    }

    fn take_order_id(&mut self) -> u64 {
        self.next_order += 1;
        self.next_order - 1
    }

    fn rest(&mut self, order: Resting) {
        match order.side {
            Side::Buy => {
                // Stable: an order joins the back of its price, whatever its
                // id (a triggered order arrives with an older one).
                self.bids.push(order);
                self.bids.sort_by_key(|o| Reverse(o.price));
            }
            Side::Sell => {
                self.asks.push(order);
                self.asks.sort_by_key(|o| o.price);
            }
        }
    }

    /// The orders an incoming order of `side` meets, best first.
    fn opposite(&mut self, side: Side) -> &mut Vec<Resting> {
        match side {
            Side::Buy => &mut self.asks,
            Side::Sell => &mut self.bids,
        }
    }

    fn all(&self) -> impl Iterator<Item = &Resting> {
        self.bids.iter().chain(&self.asks)
    }

    /// Whether `account` has an open order named `name`: resting, waiting,
    /// or pending in a list.
    fn names(&self, account: AccountId, name: &Option<String>) -> bool {
        name.is_some()
            && (self
                .all()
                .any(|o| o.account == account && o.client_id == *name)
                || self
                    .waiting
                    .iter()
                    .any(|w| w.account == account && w.order.client_order_id == *name)
                || self
                    .lists
                    .iter()
                    .filter(|l| l.account == account)
                    .flat_map(|l| &l.deferred)
                    .any(|(_, o)| o.client_order_id == *name))
    }

    /// Whether order `id` is open on the book or waiting.
    fn holds(&self, id: u64) -> bool {
        self.all().any(|o| o.id == id) || self.waiting.iter().any(|w| w.id == id)
    }

    /// Takes the first order `pick` chooses off the book.
    fn take(&mut self, pick: impl Fn(&Resting) -> bool) -> Option<Resting> {
        for side in [&mut self.bids, &mut self.asks] {
            if let Some(at) = side.iter().position(&pick) {
                return Some(side.remove(at));
            }
        }
        None
    }
}

/// Whether `value` (if any) is zero or off `grid`.
fn off_grid(value: Option<Amount>, grid: Amount) -> bool {
    value.is_some_and(|v| v.is_zero() || v.units() % grid.units() != 0)
}

fn sum(a: Amount, b: Amount) -> Amount {
    a.checked_add(b).expect("model: totals fit")
}

/// The model exchange.
#[derive(Clone)]
pub(crate) struct Model {
    catalog: Arc<Catalog>,
    fee_account: AccountId,
    /// (free, locked) by account and asset.
    balances: BTreeMap<(AccountId, AssetId), (Amount, Amount)>,
    /// Credits minus debits, by asset: no balance can exceed it, so an
    /// amount type that holds it holds every balance.
    supply: BTreeMap<AssetId, Amount>,
    books: Vec<Book>,
    /// Order list ids run over every market.
    next_list: u64,
}

type Step<T> = Result<T, Reject>;

impl Model {
    /// An empty exchange over `catalog`, fees to `fee_account`.
    pub(crate) fn new(catalog: Arc<Catalog>, fee_account: AccountId) -> Self {
        let books = catalog.markets().map(|_| Book::new()).collect();
        Self {
            catalog,
            fee_account,
            balances: BTreeMap::new(),
            supply: BTreeMap::new(),
            books,
            next_list: 1,
        }
    }

    /// Free and locked `asset` of `account`.
    pub(crate) fn balance(&self, account: AccountId, asset: AssetId) -> (Amount, Amount) {
        self.balances
            .get(&(account, asset))
            .copied()
            .unwrap_or_default()
    }

    /// Every account the model has seen.
    pub(crate) fn accounts(&self) -> Vec<AccountId> {
        let mut accounts: Vec<_> = self.balances.keys().map(|(account, _)| *account).collect();
        accounts.dedup();
        accounts
    }

    /// `market`'s book as (price, quantity) levels, bids best first, then asks best first.
    pub(crate) fn depth(&self, market: MarketId) -> (Levels, Levels) {
        let book = &self.books[usize::from(market.0)];
        let levels = |orders: &[Resting]| {
            let mut levels: Vec<(Amount, Amount)> = Vec::new();
            for order in orders {
                match levels.last_mut() {
                    Some((price, quantity)) if *price == order.price => {
                        *quantity = sum(*quantity, order.remaining);
                    }
                    _ => levels.push((order.price, order.remaining)),
                }
            }
            levels
        };
        (levels(&book.bids), levels(&book.asks))
    }

    /// Panics unless each locked balance is exactly what its owner's resting
    /// orders reserve and no book is crossed: the model checking itself.
    pub(crate) fn check(&self) {
        let mut reserved: BTreeMap<(AccountId, AssetId), Amount> = BTreeMap::new();
        for ((market, _), book) in self.catalog.markets().zip(&self.books) {
            let (base, quote) = self.catalog.pair(market).expect("every market has a pair");
            for order in book.all() {
                let asset = if order.side == Side::Buy { quote } else { base };
                let total = reserved.entry((order.account, asset)).or_default();
                *total = sum(*total, order.lock());
            }
            for waiting in &book.waiting {
                let asset = if waiting.order.side == Side::Buy {
                    quote
                } else {
                    base
                };
                let total = reserved.entry((waiting.account, asset)).or_default();
                *total = sum(*total, waiting.lock);
            }
            if let (Some(bid), Some(ask)) = (book.bids.first(), book.asks.first()) {
                assert!(bid.price < ask.price, "model: a crossed book");
            }
        }
        for (&(account, asset), &(_, locked)) in &self.balances {
            let expected = reserved.remove(&(account, asset)).unwrap_or_default();
            assert_eq!(locked, expected, "model: locked {account} {asset:?}");
        }
        assert!(
            reserved.values().all(|r| r.is_zero()),
            "model: unbacked orders"
        );
    }

    /// Applies `command`; a refused command leaves the model as it was.
    pub(crate) fn apply(&mut self, command: &Command) -> Outcome {
        let before = self.clone();
        let mut outcome = Outcome::default();
        if let Err(reject) = self.run(command, &mut outcome) {
            *self = before;
            return Outcome {
                rejected: Some(reject),
                ..Outcome::default()
            };
        }
        outcome
    }

    fn run(&mut self, command: &Command, outcome: &mut Outcome) -> Step<()> {
        match *command {
            Command::Credit {
                account,
                asset,
                amount,
            } => {
                self.known_asset(asset)?;
                let supply = self.supply.entry(asset).or_default();
                *supply = supply.checked_add(amount).ok_or(Reject::Overflow)?;
                self.add(account, asset, amount);
                Ok(())
            }
            Command::Debit {
                account,
                asset,
                amount,
            } => {
                self.known_asset(asset)?;
                let (free, _) = self.entry(account, asset);
                *free = free
                    .checked_sub(amount)
                    .ok_or(Reject::InsufficientBalance)?;
                let supply = self.supply.entry(asset).or_default();
                *supply = supply
                    .checked_sub(amount)
                    .expect("model: supply holds every balance");
                Ok(())
            }
            Command::Place {
                account,
                ref order,
                time_ms,
            } => self.place(account, order, time_ms, outcome),
            Command::Cancel {
                account,
                market,
                order_id,
                time_ms,
                ..
            } => {
                if let Some(list_id) = self.list_holding(market, order_id) {
                    return self.cancel_list(account, market, list_id, time_ms, outcome);
                }
                let book = self.book(market)?;
                if let Some(order) = book.take(|o| o.id == order_id && o.account == account) {
                    self.end(market, order, OrderStatus::Canceled, time_ms, outcome);
                    return Ok(());
                }
                let at = book
                    .waiting
                    .iter()
                    .position(|w| w.id == order_id && w.account == account)
                    .ok_or(Reject::UnknownOrder)?;
                let waiting = book.waiting.remove(at);
                self.end_waiting(market, waiting, OrderStatus::Canceled, time_ms, outcome);
                Ok(())
            }
            Command::CancelAll {
                account,
                market,
                time_ms,
            } => {
                let book = self.book(market)?;
                let mut mine: Vec<u64> = book
                    .all()
                    .filter(|o| o.account == account)
                    .map(|o| o.id)
                    .chain(
                        book.waiting
                            .iter()
                            .filter(|w| w.account == account)
                            .map(|w| w.id),
                    )
                    .chain(
                        book.lists
                            .iter()
                            .filter(|l| l.account == account)
                            .flat_map(|l| l.deferred.iter().map(|(id, _)| *id)),
                    )
                    .collect();
                if mine.is_empty() {
                    return Err(Reject::UnknownOrder);
                }
                mine.sort_unstable();
                for id in mine {
                    if let Some(list_id) = self.list_holding(market, id) {
                        self.cancel_list(account, market, list_id, time_ms, outcome)?;
                    } else if self.open(market, id) {
                        self.end_open(market, id, OrderStatus::Canceled, time_ms, outcome);
                    }
                }
                Ok(())
            }
            Command::PlaceList {
                account,
                ref list,
                time_ms,
            } => self.place_list(account, list, time_ms, outcome),
            Command::CancelList {
                account,
                market,
                list_id,
                time_ms,
                ..
            } => self.cancel_list(account, market, list_id, time_ms, outcome),
            Command::Amend {
                account,
                market,
                order_id,
                quantity,
                ref client_order_id,
                time_ms,
            } => self.amend(
                account,
                market,
                (order_id, client_order_id),
                quantity,
                time_ms,
                outcome,
            ),
            Command::Replace {
                account,
                market,
                order_id,
                ref order,
                allow_failure,
                time_ms,
                ..
            } => {
                // The cancel as a command of its own, then the order.
                let cancel = Command::Cancel {
                    account,
                    market,
                    order_id,
                    cancel_client_id: None,
                    time_ms,
                };
                let canceled = self.run(&cancel, outcome);
                if canceled.is_err() && !allow_failure {
                    return canceled;
                }
                let placed = self.place(account, order, time_ms, outcome);
                match (canceled, placed) {
                    (Err(_), Err(reject)) => Err(reject),
                    (Err(reject), Ok(())) | (Ok(()), Err(reject)) => {
                        outcome.part_refused = Some(reject);
                        Ok(())
                    }
                    (Ok(()), Ok(())) => Ok(()),
                }
            }
            // Funds crossing the chain never meet an order: the engine's own
            // tests cover them (engine/chain.rs), and no sequence here makes them.
            Command::Deposit { .. }
            | Command::Withdraw { .. }
            | Command::SettleWithdrawal { .. }
            | Command::WithdrawalSigned { .. }
            | Command::AssignDepositAddress { .. } => {
                unreachable!("model: chain deposits and withdrawals are not generated")
            }
        }
    }

    fn known_asset(&self, asset: AssetId) -> Step<()> {
        if usize::from(asset.0) < self.catalog.asset_count() {
            Ok(())
        } else {
            Err(Reject::UnknownAsset)
        }
    }

    fn book(&mut self, market: MarketId) -> Step<&mut Book> {
        self.books
            .get_mut(usize::from(market.0))
            .ok_or(Reject::UnknownSymbol)
    }

    fn entry(&mut self, account: AccountId, asset: AssetId) -> &mut (Amount, Amount) {
        self.balances.entry((account, asset)).or_default()
    }

    /// Adds to free.
    fn add(&mut self, account: AccountId, asset: AssetId, amount: Amount) {
        let (free, _) = self.entry(account, asset);
        *free = sum(*free, amount);
    }

    /// Moves `amount` from free to locked (`lock`) or back.
    fn shift(&mut self, account: AccountId, asset: AssetId, amount: Amount, lock: bool) {
        let (free, locked) = self.entry(account, asset);
        let (from, to) = if lock { (free, locked) } else { (locked, free) };
        *from = from.checked_sub(amount).expect("model: enough to move");
        *to = sum(*to, amount);
    }

    /// Releases `reserved` from locked, of which `paid` leaves the account
    /// and the rest goes back to free.
    fn spend(&mut self, account: AccountId, asset: AssetId, reserved: Amount, paid: Amount) {
        self.shift(account, asset, reserved, false);
        let (free, _) = self.entry(account, asset);
        *free = free
            .checked_sub(paid)
            .expect("model: paid from what was reserved");
    }

    /// Takes `order`, already off the book, out with `status`, releasing what it reserved.
    fn end(
        &mut self,
        market: MarketId,
        order: Resting,
        status: OrderStatus,
        time_ms: u64,
        outcome: &mut Outcome,
    ) {
        let (base, quote) = self.catalog.pair(market).expect("a known market");
        let asset = if order.side == Side::Buy { quote } else { base };
        self.shift(order.account, asset, order.lock(), false);
        outcome
            .orders
            .insert((market, order.id), order.state(market, status, time_ms));
    }
}

mod lists;
mod orders;
mod sweep;

use sweep::{Meeting, Taker, beyond, sweep};
#[cfg(test)]
mod tests;
