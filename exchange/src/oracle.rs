//! An independent, deliberately simple model of the exchange, for testing
//! the engine against: resting orders in one plain list per market, found
//! by scanning it; balances in an ordered map. It predicts every command's
//! outcome (refusal and its reason, each fill, each order's final state)
//! and the balances after it, so the fast engine must agree on what
//! happened, not only keep its invariants.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::amount::Amount;
use crate::catalog::{AssetId, Catalog, MarketId};
use crate::engine::{AccountId, Command, Event, OrderStatus, Reject, Trade};
use crate::market::StpMode;
use crate::order::{NewOrder, OrderType, Side, TimeInForce};

/// What a command did, in a form both the model and the engine's events
/// reduce to.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Outcome {
    /// The refusal, if the command was refused.
    pub(crate) rejected: Option<Reject>,
    /// Every fill, in the order it happened.
    pub(crate) trades: Vec<Trade>,
    /// Each order touched, in its last state: (market, id, owner, status,
    /// executed, cumulative quote), by market and id.
    pub(crate) orders: Vec<(MarketId, u64, AccountId, OrderStatus, Amount, Amount)>,
}

impl Outcome {
    /// The engine's events reduced to an outcome.
    pub(crate) fn of(events: &[Event]) -> Self {
        let mut outcome = Self::default();
        let mut last: BTreeMap<(MarketId, u64), (AccountId, OrderStatus, Amount, Amount)> =
            BTreeMap::new();
        for event in events {
            match event {
                Event::Rejected(reject) => outcome.rejected = Some(*reject),
                Event::Trade(trade) => outcome.trades.push(*trade),
                Event::Order(state) => {
                    last.insert(
                        (state.market, state.order_id),
                        (
                            state.account,
                            state.status,
                            state.executed,
                            state.cumulative_quote,
                        ),
                    );
                }
                Event::Balance { .. } => {}
            }
        }
        outcome.orders = last
            .into_iter()
            .map(|((m, id), (a, s, e, q))| (m, id, a, s, e, q))
            .collect();
        outcome
    }
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
    /// Still reserved for it: quote for a buy, base for a sell.
    locked: Amount,
    client_id: Option<String>,
}

#[derive(Default)]
struct Book {
    orders: Vec<Resting>,
    next_order: u64,
    next_trade: u64,
}

impl Book {
    /// Index of the best order a taker of `side` meets: best price, then oldest.
    fn best_for(&self, side: Side) -> Option<usize> {
        let candidates = self
            .orders
            .iter()
            .enumerate()
            .filter(|(_, o)| o.side != side);
        match side {
            Side::Buy => candidates.min_by_key(|(_, o)| (o.price, o.id)),
            Side::Sell => candidates.min_by_key(|(_, o)| (std::cmp::Reverse(o.price), o.id)),
        }
        .map(|(i, _)| i)
    }

    /// The resting orders a taker of `side` meets, in the order it meets them.
    fn queue_for(&self, side: Side) -> Vec<Resting> {
        let mut queue: Vec<Resting> = self
            .orders
            .iter()
            .filter(|o| o.side != side)
            .cloned()
            .collect();
        match side {
            Side::Buy => queue.sort_by_key(|o| (o.price, o.id)),
            Side::Sell => queue.sort_by_key(|o| (std::cmp::Reverse(o.price), o.id)),
        }
        queue
    }
}

/// Whether `price` is worse for a taker of `side` than its `limit`.
fn beyond(side: Side, price: Amount, limit: Option<Amount>) -> bool {
    match (side, limit) {
        (_, None) => false,
        (Side::Buy, Some(limit)) => price > limit,
        (Side::Sell, Some(limit)) => price < limit,
    }
}

/// The most base, in whole steps, that `budget` of quote pays at `price`.
fn base_for(budget: Amount, price: Amount, step: Amount) -> Amount {
    let units = u128::from(budget.units()) * 100_000_000 / u128::from(price.units().max(1));
    let units = u64::try_from(units).unwrap_or(u64::MAX);
    Amount::from_units(units / step.units() * step.units())
}

/// The model exchange.
pub(crate) struct Model {
    catalog: Arc<Catalog>,
    fee_account: AccountId,
    /// (free, locked) by account and asset.
    balances: BTreeMap<(AccountId, AssetId), (Amount, Amount)>,
    /// Credits minus debits, by asset.
    supply: BTreeMap<AssetId, Amount>,
    books: Vec<Book>,
}

type Step<T> = Result<T, Reject>;

impl Model {
    /// An empty exchange over `catalog`, fees to `fee_account`.
    pub(crate) fn new(catalog: Arc<Catalog>, fee_account: AccountId) -> Self {
        let books = catalog
            .markets()
            .map(|_| Book {
                next_order: 1,
                next_trade: 1,
                ..Book::default()
            })
            .collect();
        Self {
            catalog,
            fee_account,
            balances: BTreeMap::new(),
            supply: BTreeMap::new(),
            books,
        }
    }

    /// Free and locked `asset` of `account`.
    pub(crate) fn balance(&self, account: AccountId, asset: AssetId) -> (Amount, Amount) {
        self.balances
            .get(&(account, asset))
            .copied()
            .unwrap_or_default()
    }

    /// Applies `command`; a refused command leaves the model as it was.
    pub(crate) fn apply(&mut self, command: &Command) -> Outcome {
        let balances = self.balances.clone();
        let supply = self.supply.clone();
        let orders: Vec<(Vec<Resting>, u64, u64)> = self
            .books
            .iter()
            .map(|b| (b.orders.clone(), b.next_order, b.next_trade))
            .collect();
        let mut outcome = Outcome::default();
        if let Err(reject) = self.run(command, &mut outcome) {
            self.balances = balances;
            self.supply = supply;
            for (book, (orders, next_order, next_trade)) in self.books.iter_mut().zip(orders) {
                (book.orders, book.next_order, book.next_trade) = (orders, next_order, next_trade);
            }
            return Outcome {
                rejected: Some(reject),
                ..Outcome::default()
            };
        }
        outcome.orders.sort_by_key(|o| (o.0, o.1));
        outcome
    }

    fn run(&mut self, command: &Command, outcome: &mut Outcome) -> Step<()> {
        match command {
            Command::Credit {
                account,
                asset,
                amount,
            } => {
                self.known_asset(*asset)?;
                let supply = self.supply.entry(*asset).or_default();
                *supply = supply.checked_add(*amount).ok_or(Reject::Overflow)?;
                let free = &mut self.balances.entry((*account, *asset)).or_default().0;
                *free = free.checked_add(*amount).ok_or(Reject::Overflow)?;
                Ok(())
            }
            Command::Debit {
                account,
                asset,
                amount,
            } => {
                self.known_asset(*asset)?;
                let free = &mut self.balances.entry((*account, *asset)).or_default().0;
                *free = free
                    .checked_sub(*amount)
                    .ok_or(Reject::InsufficientBalance)?;
                let supply = self.supply.entry(*asset).or_default();
                *supply = supply.checked_sub(*amount).ok_or(Reject::Overflow)?;
                Ok(())
            }
            Command::Place {
                account,
                order,
                time_ms,
            } => self.place(*account, order, *time_ms, outcome),
            Command::Cancel {
                account,
                market,
                order_id,
                ..
            } => {
                let book = self.book(*market)?;
                let at = book
                    .orders
                    .iter()
                    .position(|o| o.id == *order_id && o.account == *account)
                    .ok_or(Reject::UnknownOrder)?;
                self.take_off(*market, at, OrderStatus::Canceled, outcome)
            }
            Command::CancelAll {
                account, market, ..
            } => {
                let mut ids: Vec<u64> = self
                    .book(*market)?
                    .orders
                    .iter()
                    .filter(|o| o.account == *account)
                    .map(|o| o.id)
                    .collect();
                if ids.is_empty() {
                    return Err(Reject::UnknownOrder);
                }
                ids.sort_unstable();
                for id in ids {
                    let at = self.books[usize::from(market.0)]
                        .orders
                        .iter()
                        .position(|o| o.id == id)
                        .expect("listed above");
                    self.take_off(*market, at, OrderStatus::Canceled, outcome)?;
                }
                Ok(())
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

    fn book(&self, market: MarketId) -> Step<&Book> {
        self.books
            .get(usize::from(market.0))
            .ok_or(Reject::UnknownSymbol)
    }

    /// Moves `amount` of `asset` between free and locked (`lock`: free to locked).
    fn shift(
        &mut self,
        account: AccountId,
        asset: AssetId,
        amount: Amount,
        lock: bool,
    ) -> Step<()> {
        let (free, locked) = self.balances.entry((account, asset)).or_default();
        let (from, to) = if lock { (free, locked) } else { (locked, free) };
        *from = from
            .checked_sub(amount)
            .ok_or(Reject::InsufficientBalance)?;
        *to = to.checked_add(amount).ok_or(Reject::Overflow)?;
        Ok(())
    }

    /// Adds `amount` to free, or (`locked`) takes it from locked.
    fn adjust(
        &mut self,
        account: AccountId,
        asset: AssetId,
        amount: Amount,
        locked: bool,
    ) -> Step<()> {
        let (free, held) = self.balances.entry((account, asset)).or_default();
        if locked {
            *held = held.checked_sub(amount).ok_or(Reject::Overflow)?;
        } else {
            *free = free.checked_add(amount).ok_or(Reject::Overflow)?;
        }
        Ok(())
    }

    /// Takes the order at `at` off `market`'s book with `status`, unlocking what it holds.
    fn take_off(
        &mut self,
        market: MarketId,
        at: usize,
        status: OrderStatus,
        outcome: &mut Outcome,
    ) -> Step<()> {
        let order = self.books[usize::from(market.0)].orders.remove(at);
        let (base, quote) = self.catalog.pair(market).ok_or(Reject::UnknownSymbol)?;
        let asset = if order.side == Side::Buy { quote } else { base };
        self.shift(order.account, asset, order.locked, false)?;
        outcome.orders.push((
            market,
            order.id,
            order.account,
            status,
            order.executed,
            order.quote,
        ));
        Ok(())
    }

    /// What a taker would fill against the book now, with self-trade
    /// prevention as matching applies it: (base, quote).
    fn reachable(&self, account: AccountId, order: &NewOrder) -> (Amount, Amount) {
        let book = &self.books[usize::from(order.market.0)];
        let step = self
            .catalog
            .market(order.market)
            .map_or(Amount::ZERO, |m| m.step_size);
        let (mut base, mut quote) = (Amount::ZERO, Amount::ZERO);
        for resting in book.queue_for(order.side) {
            if beyond(order.side, resting.price, order.price) {
                break;
            }
            if resting.account == account {
                match order.stp {
                    StpMode::None => {}
                    StpMode::ExpireMaker => continue,
                    StpMode::ExpireTaker | StpMode::ExpireBoth => break,
                }
            }
            let mut take = resting.remaining;
            if let Some(want) = order.quantity {
                take = take.min(want.checked_sub(base).unwrap_or_default());
            }
            if let Some(want) = order.quote_quantity {
                let left = want.checked_sub(quote).unwrap_or_default();
                take = take.min(base_for(left, resting.price, step));
            }
            if take.is_zero() {
                break;
            }
            base = base.checked_add(take).unwrap_or(base);
            quote = quote
                .checked_add(resting.price.checked_mul(take).unwrap_or_default())
                .unwrap_or(quote);
        }
        (base, quote)
    }

    fn place(
        &mut self,
        account: AccountId,
        order: &NewOrder,
        time_ms: u64,
        outcome: &mut Outcome,
    ) -> Step<()> {
        let market = self
            .catalog
            .market(order.market)
            .ok_or(Reject::UnknownSymbol)?
            .clone();
        let (base, quote) = self
            .catalog
            .pair(order.market)
            .ok_or(Reject::UnknownSymbol)?;
        let off = |value: Option<Amount>, grid: Amount| {
            value.is_some_and(|v| v.is_zero() || v.units() % grid.units() != 0)
        };
        if off(order.price, market.tick_size) || off(order.quantity, market.step_size) {
            return Err(Reject::OffGrid);
        }
        let book = self.book(order.market)?;
        let mine = book.orders.iter().filter(|o| o.account == account);
        if let Some(id) = &order.client_order_id
            && mine.clone().any(|o| o.client_id.as_ref() == Some(id))
        {
            return Err(Reject::DuplicateClientOrderId);
        }
        if order.order_type != OrderType::Market && mine.count() as u32 >= market.max_num_orders {
            return Err(Reject::TooManyOrders);
        }
        if order.order_type == OrderType::LimitMaker
            && let Some(best) = book.best_for(order.side)
            && !beyond(order.side, book.orders[best].price, order.price)
        {
            return Err(Reject::WouldTake);
        }
        let is_market = order.order_type == OrderType::Market;
        let (reach_base, reach_quote) = self.reachable(account, order);
        if order.time_in_force == TimeInForce::Fok && Some(reach_base) != order.quantity {
            let book = &mut self.books[usize::from(order.market.0)];
            let id = book.next_order;
            book.next_order += 1;
            let zero = Amount::ZERO;
            outcome
                .orders
                .push((order.market, id, account, OrderStatus::Expired, zero, zero));
            return Ok(());
        }
        let sells_for_quote =
            is_market && order.side == Side::Sell && order.quote_quantity.is_some();
        let lock = match order.side {
            Side::Sell if sells_for_quote => reach_base,
            Side::Sell => order.quantity.ok_or(Reject::Overflow)?,
            Side::Buy if is_market => order.quote_quantity.unwrap_or(reach_quote),
            Side::Buy => order
                .price
                .zip(order.quantity)
                .and_then(|(p, q)| p.checked_mul(q))
                .ok_or(Reject::Overflow)?,
        };
        if let (Side::Sell, Some(price), Some(quantity)) = (order.side, order.price, order.quantity)
        {
            price.checked_mul(quantity).ok_or(Reject::Overflow)?;
        }
        let lock_asset = if order.side == Side::Buy { quote } else { base };
        self.shift(account, lock_asset, lock, true)?;
        let book = &mut self.books[usize::from(order.market.0)];
        let id = book.next_order;
        book.next_order += 1;
        let mut taker = Resting {
            id,
            account,
            side: order.side,
            price: order.price.unwrap_or_default(),
            remaining: match order.quantity {
                Some(quantity) => quantity,
                None if sells_for_quote => lock,
                None => Amount::from_units(u64::MAX),
            },
            executed: Amount::ZERO,
            quote: Amount::ZERO,
            locked: lock,
            client_id: order.client_order_id.clone(),
        };
        // A market buy spends at most its lock; a sell for quote receives at most its amount.
        let mut budget = match (order.side, is_market) {
            (Side::Buy, true) => Some(lock),
            (Side::Sell, true) => order.quote_quantity,
            _ => None,
        };
        let mut expired_in_match = false;
        loop {
            let budget_spent =
                order.quote_quantity.is_some() && budget.is_some_and(|b| b.is_zero());
            if taker.remaining.is_zero() || budget_spent {
                break;
            }
            let book = &self.books[usize::from(order.market.0)];
            let Some(at) = book.best_for(order.side) else {
                break;
            };
            let maker = book.orders[at].clone();
            if beyond(order.side, maker.price, order.price) {
                break;
            }
            if maker.account == account && order.stp != StpMode::None {
                if matches!(order.stp, StpMode::ExpireMaker | StpMode::ExpireBoth) {
                    self.take_off(order.market, at, OrderStatus::ExpiredInMatch, outcome)?;
                }
                if matches!(order.stp, StpMode::ExpireTaker | StpMode::ExpireBoth) {
                    expired_in_match = true;
                    break;
                }
                continue;
            }
            let mut quantity = taker.remaining.min(maker.remaining);
            if let Some(left) = budget {
                quantity = quantity.min(base_for(left, maker.price, market.step_size));
            }
            let paid = maker.price.checked_mul(quantity).ok_or(Reject::Overflow)?;
            if quantity.is_zero() || paid.is_zero() {
                break;
            }
            if let Some(left) = budget.as_mut() {
                *left = left.checked_sub(paid).ok_or(Reject::Overflow)?;
            }
            self.fill(order, &mut taker, at, quantity, paid, time_ms, outcome)?;
        }
        let filled = match order.quote_quantity {
            Some(_) => budget.is_some_and(|b| b.is_zero()),
            None => taker.remaining.is_zero(),
        };
        let status = if expired_in_match {
            OrderStatus::ExpiredInMatch
        } else if filled {
            OrderStatus::Filled
        } else if is_market || order.time_in_force != TimeInForce::Gtc {
            OrderStatus::Expired
        } else if taker.executed.is_zero() {
            OrderStatus::New
        } else {
            OrderStatus::PartiallyFilled
        };
        outcome.orders.push((
            order.market,
            id,
            account,
            status,
            taker.executed,
            taker.quote,
        ));
        if matches!(status, OrderStatus::New | OrderStatus::PartiallyFilled) {
            self.books[usize::from(order.market.0)].orders.push(taker);
        } else {
            self.shift(account, lock_asset, taker.locked, false)?;
        }
        Ok(())
    }

    /// One fill of `quantity` for `paid` quote between the taker and the
    /// maker at `at`, at the maker's price; fees from what each receives.
    #[allow(clippy::too_many_arguments)]
    fn fill(
        &mut self,
        order: &NewOrder,
        taker: &mut Resting,
        at: usize,
        quantity: Amount,
        paid: Amount,
        time_ms: u64,
        outcome: &mut Outcome,
    ) -> Step<()> {
        let market = self
            .catalog
            .market(order.market)
            .ok_or(Reject::UnknownSymbol)?
            .clone();
        let (base, quote) = self
            .catalog
            .pair(order.market)
            .ok_or(Reject::UnknownSymbol)?;
        let maker = self.books[usize::from(order.market.0)].orders[at].clone();
        let taker_buys = taker.side == Side::Buy;
        // What each side's reservation gives up for this fill.
        let taker_used = match taker.side {
            Side::Buy if taker.price.is_zero() => paid,
            Side::Buy => taker.price.checked_mul(quantity).ok_or(Reject::Overflow)?,
            Side::Sell => quantity,
        };
        let maker_used = if taker_buys {
            quantity
        } else {
            maker.price.checked_mul(quantity).ok_or(Reject::Overflow)?
        };
        let (buyer, seller) = if taker_buys {
            (taker.account, maker.account)
        } else {
            (maker.account, taker.account)
        };
        let (buyer_rate, seller_rate) = if taker_buys {
            (market.taker_fee, market.maker_fee)
        } else {
            (market.maker_fee, market.taker_fee)
        };
        let buyer_used = if taker_buys { taker_used } else { maker_used };
        let buyer_fee = quantity.checked_mul(buyer_rate).ok_or(Reject::Overflow)?;
        let seller_fee = paid.checked_mul(seller_rate).ok_or(Reject::Overflow)?;
        let back = buyer_used.checked_sub(paid).ok_or(Reject::Overflow)?;
        self.adjust(buyer, quote, buyer_used, true)?;
        self.adjust(buyer, quote, back, false)?;
        self.adjust(
            buyer,
            base,
            quantity.checked_sub(buyer_fee).ok_or(Reject::Overflow)?,
            false,
        )?;
        self.adjust(seller, base, quantity, true)?;
        self.adjust(
            seller,
            quote,
            paid.checked_sub(seller_fee).ok_or(Reject::Overflow)?,
            false,
        )?;
        self.adjust(self.fee_account, base, buyer_fee, false)?;
        self.adjust(self.fee_account, quote, seller_fee, false)?;

        let book = &mut self.books[usize::from(order.market.0)];
        outcome.trades.push(Trade {
            market: order.market,
            trade_id: book.next_trade,
            price: maker.price,
            quantity,
            quote_quantity: paid,
            maker: (maker.id, maker.account),
            taker: (taker.id, taker.account),
            taker_side: taker.side,
            maker_fee: if taker_buys { seller_fee } else { buyer_fee },
            taker_fee: if taker_buys { buyer_fee } else { seller_fee },
            time_ms,
        });
        book.next_trade += 1;
        for (side, used) in [
            (&mut *taker, taker_used),
            (&mut book.orders[at], maker_used),
        ] {
            side.remaining = side
                .remaining
                .checked_sub(quantity)
                .ok_or(Reject::Overflow)?;
            side.executed = side
                .executed
                .checked_add(quantity)
                .ok_or(Reject::Overflow)?;
            side.quote = side.quote.checked_add(paid).ok_or(Reject::Overflow)?;
            side.locked = side.locked.checked_sub(used).ok_or(Reject::Overflow)?;
        }
        let maker = &book.orders[at];
        if maker.remaining.is_zero() {
            self.take_off(order.market, at, OrderStatus::Filled, outcome)?;
        } else {
            outcome
                .orders
                .retain(|o| (o.0, o.1) != (order.market, maker.id));
            outcome.orders.push((
                order.market,
                maker.id,
                maker.account,
                OrderStatus::PartiallyFilled,
                maker.executed,
                maker.quote,
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Engine;
    use crate::engine::tests::{command_strategy, two_markets};
    use crate::order::ResponseType;

    const FEES: AccountId = 999;
    const ETHUSDT: MarketId = MarketId(0);
    const ETH: AssetId = AssetId(0);
    const USDT: AssetId = AssetId(1);

    fn a(text: &str) -> Amount {
        text.parse().unwrap()
    }

    fn funded() -> Model {
        let mut model = Model::new(two_markets(), FEES);
        for account in [1, 2] {
            for (asset, amount) in [(USDT, "100000"), (ETH, "100")] {
                let credit = Command::Credit {
                    account,
                    asset,
                    amount: a(amount),
                };
                assert_eq!(model.apply(&credit), Outcome::default());
            }
        }
        model
    }

    fn limit(side: Side, quantity: &str, price: &str) -> Command {
        Command::Place {
            account: if side == Side::Sell { 1 } else { 2 },
            order: NewOrder {
                market: ETHUSDT,
                side,
                order_type: OrderType::Limit,
                time_in_force: TimeInForce::Gtc,
                quantity: Some(a(quantity)),
                quote_quantity: None,
                price: Some(a(price)),
                client_order_id: None,
                response_type: ResponseType::Ack,
                stp: StpMode::None,
            },
            time_ms: 7,
        }
    }

    #[test]
    fn a_crossing_buy_fills_at_the_makers_price_with_fees_from_what_each_receives() {
        let mut model = funded();
        model.apply(&limit(Side::Sell, "1", "3000"));
        let outcome = model.apply(&limit(Side::Buy, "0.4", "3100"));
        assert_eq!(outcome.trades.len(), 1);
        let trade = outcome.trades[0];
        // ETHUSDT charges 0.1 % both ways.
        assert_eq!(
            (trade.price, trade.quantity, trade.quote_quantity),
            (a("3000"), a("0.4"), a("1200"))
        );
        assert_eq!((trade.taker_fee, trade.maker_fee), (a("0.0004"), a("1.2")));
        assert_eq!(
            outcome.orders.iter().map(|o| o.3).collect::<Vec<_>>(),
            vec![OrderStatus::PartiallyFilled, OrderStatus::Filled]
        );
        // The buyer reserved 1240 at its limit and got the 40 back.
        assert_eq!(model.balance(2, USDT), (a("98800"), Amount::ZERO));
        assert_eq!(model.balance(2, ETH), (a("100.3996"), Amount::ZERO));
        assert_eq!(model.balance(1, USDT), (a("101198.8"), Amount::ZERO));
        assert_eq!(model.balance(1, ETH), (a("99"), a("0.6")));
        assert_eq!(model.balance(FEES, USDT), (a("1.2"), Amount::ZERO));
    }

    #[test]
    fn a_refused_command_changes_nothing() {
        let mut model = funded();
        let before = model.balances.clone();
        let outcome = model.apply(&limit(Side::Buy, "1000", "3000"));
        assert_eq!(outcome.rejected, Some(Reject::InsufficientBalance));
        assert_eq!(model.balances, before);
        let cancel = Command::Cancel {
            account: 2,
            market: ETHUSDT,
            order_id: 1,
            time_ms: 0,
        };
        assert_eq!(model.apply(&cancel).rejected, Some(Reject::UnknownOrder));
    }

    fn with_extras() -> impl proptest::strategy::Strategy<Value = Command> {
        use proptest::prelude::*;
        (command_strategy(), 0u8..4, 0u64..3).prop_map(|(mut command, client, tick)| {
            if let Command::Place { order, time_ms, .. } = &mut command {
                order.client_order_id =
                    [None, None, Some("a"), Some("b")][client as usize].map(String::from);
                *time_ms = tick;
            }
            command
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        #[test]
        fn the_engine_does_what_the_model_predicts(
            commands in proptest::collection::vec(with_extras(), 1..100)
        ) {
            let catalog = two_markets();
            let mut engine = Engine::new(catalog.clone(), FEES);
            let mut model = Model::new(catalog.clone(), FEES);
            for (step, command) in commands.into_iter().enumerate() {
                let predicted = model.apply(&command);
                let before = engine.snapshot();
                let happened = Outcome::of(&engine.apply(command.clone()));
                if happened.rejected.is_some() {
                    proptest::prop_assert_eq!(&engine.snapshot(), &before, "a refusal changed the engine");
                }
                proptest::prop_assert_eq!(&happened, &predicted, "command {}: {:?}", step, command);
                for account in [1, 2, 3, FEES] {
                    for (asset, _) in catalog.assets() {
                        proptest::prop_assert_eq!(
                            engine.balance(account, asset),
                            model.balance(account, asset),
                            "after command {}: account {} asset {:?}", step, account, asset
                        );
                    }
                }
            }
        }
    }
}
