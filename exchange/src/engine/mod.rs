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
mod chain;
mod conditional;
mod invariants;
mod ledger;
mod lists;
mod matching;
mod messages;

use book::{Book, Level, List, Order, Pending};
pub use chain::WithdrawalStage;
use chain::Withdrawals;
use ledger::Ledger;
pub use messages::*;

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
            } => self.deposit(account, asset, amount, deposit_id, events),
            Command::Withdraw {
                account,
                asset,
                amount,
                fee,
                client_id,
                destination,
                requested_ms,
            } => self.withdraw(
                account,
                asset,
                (amount, fee),
                client_id,
                (destination, requested_ms),
                events,
            ),
            Command::SettleWithdrawal {
                withdrawal_id,
                completed,
            } => self.settle_withdrawal(withdrawal_id, completed, events),
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

    fn cancel(
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
            self.remove_resting(index, slot, OrderStatus::Canceled, events);
            return Ok(());
        }
        let at = book
            .pending
            .iter()
            .position(|p| p.order_id == order_id && p.account == account)
            .ok_or(Reject::UnknownOrder)?;
        self.remove_pending(index, at, OrderStatus::Canceled, events);
        Ok(())
    }

    /// Cancel, then place; refused whole if the cancel fails (unless
    /// `allow_failure`) or if both fail.
    fn replace(
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

    fn cancel_all(
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
                self.end_order(index, order_id, OrderStatus::Canceled, events);
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

    pub(crate) const FEES: AccountId = 999;
    pub(crate) const ETHUSDT: MarketId = MarketId(0);
    pub(crate) const ETHBTC: MarketId = MarketId(1);
    pub(crate) const ETH: AssetId = AssetId(0);
    pub(crate) const USDT: AssetId = AssetId(1);
    pub(crate) const BTC: AssetId = AssetId(2);

    /// ETHUSDT and ETHBTC: assets ETH, USDT, BTC.
    pub(crate) fn two_markets() -> Arc<Catalog> {
        Arc::new(Catalog::new(vec![eth_usdt(), eth_btc()]))
    }

    pub(crate) fn a(text: &str) -> Amount {
        text.parse().unwrap()
    }

    pub(crate) fn engine() -> Engine {
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

    pub(crate) fn order(
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
            trigger: None,
        }
    }

    pub(crate) fn place(engine: &mut Engine, account: AccountId, order: NewOrder) -> Vec<Event> {
        engine.apply(Command::Place {
            account,
            order,
            time_ms: 0,
        })
    }

    pub(crate) fn limit(side: Side, quantity: &str, price: &str) -> NewOrder {
        order(
            side,
            OrderType::Limit,
            TimeInForce::Gtc,
            quantity,
            Some(price),
        )
    }

    /// Accounts 5 and 6 trade 0.01 ETH at `price` with each other.
    pub(crate) fn trade_at(engine: &mut Engine, price: &str) -> Vec<Event> {
        for (account, asset, amount) in [(5, USDT, "100000"), (6, ETH, "100")] {
            engine.apply(Command::Credit {
                account,
                asset,
                amount: a(amount),
            });
        }
        place(engine, 5, limit(Side::Buy, "0.01", price));
        place(engine, 6, limit(Side::Sell, "0.01", price))
    }

    pub(crate) fn status(events: &[Event], order_id: u64) -> OrderStatus {
        events
            .iter()
            .rev()
            .find_map(|e| match e {
                Event::Order(o) if o.order_id == order_id => Some(o.status),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no state for order {order_id} in {events:?}"))
    }

    pub(crate) fn trades(events: &[Event]) -> Vec<&Trade> {
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
    fn decrement_takes_the_prevented_quantity_off_both_and_ends_the_smaller() {
        let mut engine = engine();
        place(&mut engine, 1, limit(Side::Buy, "6", "3000"));
        let mut sell = limit(Side::Sell, "2", "3000");
        sell.stp = StpMode::Decrement;
        let events = place(&mut engine, 1, sell);
        assert_eq!(status(&events, 2), OrderStatus::ExpiredInMatch);
        assert_eq!(status(&events, 1), OrderStatus::New);
        assert!(trades(&events).is_empty(), "nothing trades");
        let prevented: Vec<Prevention> = events
            .iter()
            .filter_map(|e| match e {
                Event::Prevented(p) => Some(*p),
                _ => None,
            })
            .collect();
        assert_eq!(prevented.len(), 1);
        assert_eq!(
            (
                prevented[0].id,
                prevented[0].taker.0,
                prevented[0].maker.0,
                prevented[0].taker_quantity,
                prevented[0].maker_quantity
            ),
            (1, 2, 1, a("2"), a("2"))
        );
        // The bid is 4 now, its lock with it; the sell locks nothing.
        assert_eq!(engine.depth(ETHUSDT).0, vec![(a("3000"), a("4"))]);
        assert_eq!(engine.balance(1, USDT), (a("88000"), a("12000")));
        assert_eq!(engine.balance(1, ETH), (a("100"), Amount::ZERO));
        // A larger taker: the maker ends, the taker goes on to trade with others.
        place(&mut engine, 2, limit(Side::Buy, "1", "2990"));
        let mut big = limit(Side::Sell, "5", "2990");
        big.stp = StpMode::Decrement;
        let events = place(&mut engine, 1, big);
        assert_eq!(status(&events, 1), OrderStatus::ExpiredInMatch);
        assert_eq!(trades(&events)[0].quantity, a("1"), "4 prevented, 1 traded");
        assert_eq!(engine.check_invariants(), Ok(()));
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
            0u8..9,
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
                        8 => {
                            // Conditional: the four types, stop prices on
                            // either side of the traded range, and trailing.
                            new.order_type = [
                                OrderType::StopLoss,
                                OrderType::StopLossLimit,
                                OrderType::TakeProfit,
                                OrderType::TakeProfitLimit,
                            ][extra as usize];
                            if !new.order_type.has_price() {
                                new.price = None;
                            }
                            let stop = Amount::from_units(
                                price.units() - price.units() / 400 * u64::from(buy)
                                    + price.units() / 400 * u64::from(!buy),
                            );
                            let tick = if second_market { 1_000 } else { 1_000_000 };
                            let stop = Amount::from_units(stop.units() - stop.units() % tick);
                            new.trigger = Some(Trigger {
                                stop_price: (tick % 3 != 1).then_some(stop),
                                trailing_delta: (tick % 3 != 0).then_some(10 + tick as u32 * 20),
                            });
                            Command::Place {
                                account,
                                order: new,
                                time_ms: 0,
                            }
                        }
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
