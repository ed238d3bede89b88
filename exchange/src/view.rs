//! The read side of the exchange in memory: depth, balances, open orders,
//! the last trade and recent one-minute candles. The sequencer updates it
//! after the group commit and before replying, so a client reads its own
//! writes; history lives in storage ([`crate::history`]).

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use weiport_storage::CandleRow;

use crate::amount::Amount;
use crate::catalog::{AssetId, Catalog, MarketId};
use crate::engine::{AccountId, Event, Trade, WithdrawalStage};
use crate::history::{CANDLE_MS, Changes, OrderView};
use crate::order::Side;

mod image;

pub use image::ViewImage;

/// Candles kept in memory: the longest rolling window (7 days) and one more.
const RECENT_CANDLES: u64 = 7 * 1_440 + 1;

/// One market's read side.
#[derive(Default, serde::Serialize, serde::Deserialize)]
pub struct MarketView {
    /// Resting orders by id.
    pub open: HashMap<u64, OrderView>,
    /// Price → resting quantity.
    pub bids: BTreeMap<Amount, Amount>,
    /// Price → resting quantity.
    pub asks: BTreeMap<Amount, Amount>,
    /// Changes to this book so far (the depth `lastUpdateId`).
    pub update_id: u64,
    /// The latest trade.
    pub last_trade: Option<Trade>,
    /// The latest aggregate trade id (0 before any).
    pub last_agg: u64,
    /// One-minute candles of the last week, oldest first.
    pub candles: VecDeque<CandleRow>,
    /// The book as last copied for readers (see [`MarketView::book`]).
    #[serde(skip)]
    book: Mutex<Option<Arc<BookSnapshot>>>,
}

/// A market's book at one update, immutable: readers render it with no lock
/// held, so a slow reader never delays the engine thread.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct BookSnapshot {
    /// The update it shows (the depth `lastUpdateId`).
    pub update_id: u64,
    /// (price, quantity), best first.
    pub bids: Vec<(Amount, Amount)>,
    /// (price, quantity), best first.
    pub asks: Vec<(Amount, Amount)>,
}

impl MarketView {
    /// Best bid with its quantity (zeros when there is none).
    pub fn best_bid(&self) -> (Amount, Amount) {
        self.bids
            .last_key_value()
            .map_or_else(Default::default, |(p, q)| (*p, *q))
    }

    /// Best ask with its quantity (zeros when there is none).
    pub fn best_ask(&self) -> (Amount, Amount) {
        self.asks
            .first_key_value()
            .map_or_else(Default::default, |(p, q)| (*p, *q))
    }

    /// The book at its current update. The first read after a change copies
    /// the levels (a short copy under the caller's read lock, instead of a
    /// whole rendering); later reads share that copy until the next change.
    pub fn book(&self) -> Arc<BookSnapshot> {
        let mut copy = self.book.lock().unwrap_or_else(PoisonError::into_inner);
        match &*copy {
            Some(book) if book.update_id == self.update_id => book.clone(),
            _ => {
                let book = Arc::new(BookSnapshot {
                    update_id: self.update_id,
                    bids: self.bids.iter().rev().map(|(p, q)| (*p, *q)).collect(),
                    asks: self.asks.iter().map(|(p, q)| (*p, *q)).collect(),
                });
                *copy = Some(book.clone());
                book
            }
        }
    }

    /// The latest trade id (0 before any).
    pub fn last_trade_id(&self) -> u64 {
        self.last_trade.map_or(0, |t| t.trade_id)
    }

    /// The one-minute candles overlapping the `window_ms` before `now`,
    /// merged into one: the window's rolling statistics.
    pub fn window(&self, now: u64, window_ms: u64) -> Option<CandleRow> {
        self.recent_candles(now, window_ms)
            .copied()
            .reduce(|mut total, later| {
                crate::history::merge_later(&mut total, &later);
                total
            })
    }

    /// Candles that overlap the `window_ms` before `now`, oldest first.
    pub fn recent_candles(&self, now: u64, window_ms: u64) -> impl Iterator<Item = &CandleRow> {
        let start = now.saturating_sub(window_ms);
        let first = self
            .candles
            .partition_point(|c| c.open_time + CANDLE_MS <= start);
        self.candles.range(first..)
    }

    fn set_level(&mut self, side: Side, price: Amount, quantity: Amount) {
        let levels = match side {
            Side::Buy => &mut self.bids,
            Side::Sell => &mut self.asks,
        };
        if quantity.is_zero() {
            levels.remove(&price);
        } else {
            levels.insert(price, quantity);
        }
    }
}

/// One account's balances and open orders.
#[derive(Default, serde::Serialize, serde::Deserialize)]
pub struct AccountView {
    /// Free and locked per asset.
    pub balances: BTreeMap<AssetId, (Amount, Amount)>,
    /// Open orders (market, id).
    pub open: BTreeSet<(MarketId, u64)>,
    /// Last balance change by a trading command, ms.
    pub update_ms: u64,
}

/// Everything the API reads from memory.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct View {
    /// Per market, by [`MarketId`].
    pub markets: Vec<MarketView>,
    /// Per account.
    pub accounts: HashMap<AccountId, AccountView>,
    /// Commands applied (the log's last sequence number).
    pub sequence: u64,
    /// Deposits credited and withdrawals, as the engine ended them.
    pub chain: ChainView,
}

/// What each account is owed per asset ([`View::claims`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Claims {
    /// The accounts owed something.
    pub accounts: Vec<AccountId>,
    /// `assets` amounts per account, in the order of `accounts`.
    pub amounts: Vec<u128>,
    /// How many assets each account has amounts of.
    pub assets: usize,
}

impl Claims {
    /// Each account with its amounts.
    pub fn iter(&self) -> impl Iterator<Item = (AccountId, &[u128])> {
        self.accounts
            .iter()
            .copied()
            .zip(self.amounts.chunks_exact(self.assets.max(1)))
    }
}

/// Funds that crossed the chain, as the engine has them.
#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
pub struct ChainView {
    /// Per network (0: the first chain): the last deposit id credited.
    pub last_deposit_ids: BTreeMap<u64, u64>,
    /// Every withdrawal by id.
    pub withdrawals: BTreeMap<u64, WithdrawalView>,
    /// Per asset: every deposit credited, summed.
    pub deposited: BTreeMap<AssetId, Amount>,
}

impl ChainView {
    /// The withdrawals the engine still holds (requested, not yet ended), by id.
    pub fn pending(&self) -> impl Iterator<Item = (u64, &WithdrawalView)> {
        self.withdrawals
            .iter()
            .filter(|(_, w)| w.stage == WithdrawalStage::Requested)
            .map(|(id, w)| (*id, w))
    }
}

/// One withdrawal as the engine has it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct WithdrawalView {
    /// Account.
    pub account: AccountId,
    /// Asset.
    pub asset: AssetId,
    /// What leaves on chain.
    pub amount: Amount,
    /// What the exchange keeps.
    pub fee: Amount,
    /// Requested (pending), Completed or Failed.
    pub stage: WithdrawalStage,
    /// Where it goes (20 bytes).
    pub destination: [u8; 20],
    /// When it was asked for, ms.
    pub requested_ms: u64,
    /// The client's id for it.
    pub client_id: Option<Box<str>>,
    /// The network it leaves on (0: the first chain, else its chain id).
    pub network: u64,
}

impl View {
    /// An empty view over the catalog's markets.
    pub fn new(catalog: &Catalog) -> Self {
        Self {
            markets: catalog.markets().map(|_| MarketView::default()).collect(),
            accounts: HashMap::new(),
            sequence: 0,
            chain: ChainView::default(),
        }
    }

    /// The market view of `id`.
    pub fn market(&self, id: MarketId) -> Option<&MarketView> {
        self.markets.get(usize::from(id.0))
    }

    /// An open order of `account`.
    pub fn open_order(
        &self,
        account: AccountId,
        market: MarketId,
        order_id: u64,
    ) -> Option<&OrderView> {
        self.market(market)?
            .open
            .get(&order_id)
            .filter(|o| o.account == account)
    }

    /// What the exchange owes each account at this view's sequence, per
    /// asset (indexed by [`AssetId`], `assets` of them) in units of 10^-8:
    /// free, locked, and withdrawals asked for and not yet ended with their
    /// fee. `fee_account`'s income is the exchange's own; accounts owed
    /// nothing are left out. Two flat vectors and no map of every account:
    /// it runs under the view's lock, which holds the engine's commits.
    pub fn claims(&self, fee_account: AccountId, assets: usize) -> Claims {
        let mut pending: HashMap<AccountId, Vec<(AssetId, u128)>> = HashMap::new();
        for (_, withdrawal) in self.chain.pending() {
            let held = u128::from(withdrawal.amount.units()) + u128::from(withdrawal.fee.units());
            pending
                .entry(withdrawal.account)
                .or_default()
                .push((withdrawal.asset, held));
        }
        let mut claims = Claims {
            accounts: Vec::with_capacity(self.accounts.len()),
            amounts: Vec::with_capacity(self.accounts.len() * assets),
            assets,
        };
        let empty = AccountView::default();
        let with_pending_only = pending
            .keys()
            .filter(|account| !self.accounts.contains_key(account))
            .map(|account| (account, &empty));
        for (account, held) in self.accounts.iter().chain(with_pending_only) {
            if *account == fee_account {
                continue;
            }
            let start = claims.amounts.len();
            claims.amounts.resize(start + assets, 0);
            let row = &mut claims.amounts[start..];
            for (asset, (free, locked)) in &held.balances {
                if let Some(slot) = row.get_mut(usize::from(asset.0)) {
                    *slot += u128::from(free.units()) + u128::from(locked.units());
                }
            }
            for (asset, amount) in pending.get(account).into_iter().flatten() {
                if let Some(slot) = row.get_mut(usize::from(asset.0)) {
                    *slot += amount;
                }
            }
            if row.iter().all(|a| *a == 0) {
                claims.amounts.truncate(start);
            } else {
                claims.accounts.push(*account);
            }
        }
        claims
    }
    /// Applies one accepted command's events and history changes; `time_ms`
    /// is its engine time (none for credits and debits).
    pub fn apply(&mut self, time_ms: Option<u64>, events: &[Event], changes: &Changes) {
        self.sequence += 1;
        for event in events {
            match event {
                Event::Balance {
                    account,
                    asset,
                    free,
                    locked,
                } => {
                    let view = self.accounts.entry(*account).or_default();
                    view.balances.insert(*asset, (*free, *locked));
                    // Credits and debits carry no engine time; they keep the last one.
                    if let Some(time_ms) = time_ms {
                        view.update_ms = time_ms;
                    }
                }
                Event::Level {
                    market,
                    side,
                    price,
                    quantity,
                } => {
                    if let Some(market) = self.markets.get_mut(usize::from(market.0)) {
                        market.set_level(*side, *price, *quantity);
                        market.update_id = self.sequence;
                    }
                }
                Event::Deposited {
                    deposit_id,
                    asset,
                    amount,
                    network,
                    ..
                } => {
                    self.chain.last_deposit_ids.insert(*network, *deposit_id);
                    let sum = self.chain.deposited.entry(*asset).or_default();
                    *sum = sum.saturating_add(*amount);
                }
                Event::Withdrawal {
                    withdrawal_id,
                    account,
                    asset,
                    amount,
                    fee,
                    stage,
                    destination,
                    requested_ms,
                    network,
                } if *stage != WithdrawalStage::Repeated => {
                    let client_id = match &changes.withdrawal_client_id {
                        Some((id, name)) if id == withdrawal_id => Some(name.clone()),
                        _ => self
                            .chain
                            .withdrawals
                            .get(withdrawal_id)
                            .and_then(|w| w.client_id.clone()),
                    };
                    self.chain.withdrawals.insert(
                        *withdrawal_id,
                        WithdrawalView {
                            account: *account,
                            asset: *asset,
                            amount: *amount,
                            fee: *fee,
                            stage: *stage,
                            destination: *destination,
                            requested_ms: *requested_ms,
                            client_id,
                            network: *network,
                        },
                    );
                }
                _ => {}
            }
        }
        for (order, _) in &changes.orders {
            let Some(market) = self.markets.get_mut(usize::from(order.market.0)) else {
                continue;
            };
            let key = (order.market, order.order_id);
            let account = self.accounts.entry(order.account).or_default();
            if order.is_open() {
                account.open.insert(key);
                market.open.insert(order.order_id, order.clone());
            } else {
                account.open.remove(&key);
                market.open.remove(&order.order_id);
            }
        }
        for trade in &changes.trades {
            if let Some(market) = self.markets.get_mut(usize::from(trade.market.0)) {
                market.last_trade = Some(*trade);
            }
        }
        for (id, agg) in &changes.aggs {
            if let Some(market) = self.markets.get_mut(usize::from(id.0)) {
                market.last_agg = market.last_agg.max(agg.id);
            }
        }
        for (id, candle) in &changes.candles {
            let Some(market) = self.markets.get_mut(usize::from(id.0)) else {
                continue;
            };
            match market.candles.back_mut() {
                Some(last) if last.open_time == candle.open_time => *last = *candle,
                _ => market.candles.push_back(*candle),
            }
            while market
                .candles
                .front()
                .is_some_and(|c| c.open_time + RECENT_CANDLES * CANDLE_MS <= candle.open_time)
            {
                market.candles.pop_front();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Engine;
    use crate::engine::tests::{command_strategy, two_markets};
    use crate::history::Recorder;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]
        /// The read side agrees with the engine after any command sequence:
        /// depth level by level, balances, open orders and every order's fills.
        #[test]
        fn the_read_side_agrees_with_the_engine(
            commands in proptest::collection::vec(command_strategy(), 1..120)
        ) {
            let catalog = two_markets();
            let mut engine = Engine::new(catalog.clone(), 99);
            let mut view = View::new(&catalog);
            let mut recorder = Recorder::new(&catalog);
            let mut executed: HashMap<(MarketId, u64), (Amount, Amount)> = HashMap::new();
            for command in commands {
                let events = engine.apply(command.clone());
                if matches!(events.first(), Some(Event::Rejected(_))) {
                    continue;
                }
                let changes = recorder.record(&command, &events);
                for trade in &changes.trades {
                    for order in [trade.maker.0, trade.taker.0] {
                        let filled = executed.entry((trade.market, order)).or_default();
                        filled.0 = filled.0.saturating_add(trade.quantity);
                        filled.1 = filled.1.saturating_add(trade.quote_quantity);
                    }
                }
                for (order, _) in &changes.orders {
                    let filled = executed.get(&(order.market, order.order_id)).copied().unwrap_or_default();
                    // Each order's fills add up to what it reports executed.
                    proptest::prop_assert_eq!(filled, (order.executed, order.cumulative_quote), "order {}", order.order_id);
                }
                view.apply(command.time_ms(), &events, &changes);
            }
            for (id, _) in catalog.markets() {
                let market = view.market(id).unwrap();
                let bids: Vec<_> = market.bids.iter().rev().map(|(p, q)| (*p, *q)).collect();
                let asks: Vec<_> = market.asks.iter().map(|(p, q)| (*p, *q)).collect();
                proptest::prop_assert_eq!((bids, asks), engine.depth(id));
                proptest::prop_assert_eq!(
                    market.open.len(),
                    engine.resting_orders(id) + engine.waiting_orders(id)
                );
            }
            for (account, held) in &view.accounts {
                for (asset, _) in catalog.assets() {
                    let shown = held.balances.get(&asset).copied().unwrap_or_default();
                    proptest::prop_assert_eq!(shown, engine.balance(*account, asset));
                }
                for (market, id) in &held.open {
                    let order = view.open_order(*account, *market, *id).unwrap();
                    proptest::prop_assert!(order.is_open());
                }
            }
        }
    }
}
