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

use crate::amount::Amount;
use crate::catalog::{AssetId, Catalog, MarketId};
use crate::market::{Market, StpMode};
use crate::order::{Contingency, NewOrder, NewOrderList, OrderType, Side, TimeInForce, Trigger};

mod amend;
mod book;
mod cancel;
mod chain;
mod conditional;
mod executions;
mod image;
mod invariants;
mod ledger;
mod lists;
mod matching;
mod messages;

use book::{Book, Level, List, Order, Pending};
use chain::Withdrawals;
pub use chain::{SignedTx, WithdrawalStage};
use executions::{End, Start, TakerLog, unfilled};
pub use image::{EngineImage, ImageMismatch};
pub(crate) use image::{copy_reusing, sorted_map};
use ledger::Ledger;
pub use messages::{
    AccountId, Command, Event, Execution, ExecutionKind, Fill, Levels, OrderState, OrderStatus,
    PreventedMatch, Prevention, Reject, Trade,
};

/// The whole exchange state.
pub struct Engine {
    catalog: Arc<Catalog>,
    books: Vec<Book>,
    ledger: Ledger,
    /// Time of the command being applied, for its events.
    now_ms: u64,
    /// Order list ids are one sequence over every market, as Binance's.
    next_list_id: u64,
    /// Deposits credited and withdrawals under way.
    chain: Withdrawals,
    /// The executions of the order matching now.
    taker_log: TakerLog,
    /// Where the events of the command being applied begin.
    command_start: usize,
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
            next_list_id: 1,
            chain: Withdrawals::default(),
            taker_log: TakerLog::default(),
            command_start: 0,
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

    /// How many conditional orders wait for their trigger on market `market`.
    pub fn waiting_orders(&self, market: MarketId) -> usize {
        self.books
            .get(usize::from(market.0))
            .map_or(0, |book| book.pending.len())
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
        self.command_start = start;
        if let Some(time_ms) = command.time_ms() {
            self.now_ms = time_ms;
        }
        let result = match command {
            Command::Credit {
                account,
                asset,
                amount,
            } => self.ledger.adjust(account, asset, amount, true, events),
            Command::Debit {
                account,
                asset,
                amount,
            } => self.ledger.adjust(account, asset, amount, false, events),
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
            Command::PlaceList { account, list, .. } => self.place_list(account, *list, events),
            Command::Replace {
                account,
                market,
                order_id,
                order,
                allow_failure,
                ..
            } => self.replace(account, market, order_id, *order, allow_failure, events),
            Command::Amend {
                account,
                market,
                order_id,
                quantity,
                client_order_id,
                ..
            } => self.amend(
                account,
                market,
                (order_id, client_order_id),
                quantity,
                events,
            ),
            Command::CancelList {
                account,
                market,
                list_id,
                ..
            } => self.cancel_list(account, market, list_id, events),
            Command::Deposit {
                account,
                asset,
                amount,
                deposit_id,
                network,
            } => self.deposit(account, asset, amount, (deposit_id, network), events),
            Command::Withdraw {
                account,
                asset,
                amount,
                fee,
                client_id,
                destination,
                requested_ms,
                network,
            } => self.withdraw(
                account,
                asset,
                (amount, fee),
                client_id,
                (destination, requested_ms, network),
                events,
            ),
            Command::SettleWithdrawal {
                withdrawal_id,
                completed,
            } => self.settle_withdrawal(withdrawal_id, completed, events),
            Command::WithdrawalSigned {
                withdrawal_id,
                nonce,
                tx: _,
            } => self.withdrawal_signed(withdrawal_id, nonce, events),
            Command::AssignDepositAddress { account, address } => {
                self.assign_deposit_address(account, address, events)
            }
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
}

#[cfg(test)]
pub(crate) mod tests;
