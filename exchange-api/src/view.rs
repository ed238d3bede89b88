//! The read side of the exchange: orders, trades, depth and balances as the
//! API shows them, built from each applied command and its events. The
//! sequencer updates it after the group commit and before replying, so a
//! client reads its own writes; a restart rebuilds it by replaying the log.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::amount::Amount;
use crate::catalog::{AssetId, Catalog, MarketId};
use crate::engine::{AccountId, Command, Event, OrderStatus, Trade};
use crate::market::StpMode;
use crate::order::{NewOrder, OrderType, Side, TimeInForce};

/// An order as the API reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderView {
    /// Market.
    pub market: MarketId,
    /// Per-market order id.
    pub order_id: u64,
    /// Owner.
    pub account: AccountId,
    /// Client order id.
    pub client_order_id: String,
    /// Side.
    pub side: Side,
    /// Type.
    pub order_type: OrderType,
    /// Time in force.
    pub time_in_force: TimeInForce,
    /// Limit price (zero for market orders).
    pub price: Amount,
    /// Ordered base quantity (zero for market orders by quote amount).
    pub orig_qty: Amount,
    /// Ordered quote amount (market orders by quote amount).
    pub orig_quote_qty: Amount,
    /// Filled base quantity.
    pub executed: Amount,
    /// Filled quote quantity.
    pub cumulative_quote: Amount,
    /// Status.
    pub status: OrderStatus,
    /// Self-trade prevention mode.
    pub stp: StpMode,
    /// Placement time, ms.
    pub time_ms: u64,
    /// Last change, ms.
    pub update_ms: u64,
    /// Ids of this order's trades.
    pub trades: Vec<u64>,
}

impl OrderView {
    /// Whether it rests on the book.
    pub fn is_open(&self) -> bool {
        matches!(self.status, OrderStatus::New | OrderStatus::PartiallyFilled)
    }

    fn remaining(&self) -> Amount {
        self.orig_qty.saturating_sub(self.executed)
    }
}

/// Trades of one taker order at one price, as `aggTrades` reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AggTrade {
    /// Aggregate id.
    pub id: u64,
    /// Price.
    pub price: Amount,
    /// Summed quantity.
    pub quantity: Amount,
    /// First trade id.
    pub first_trade: u64,
    /// Last trade id.
    pub last_trade: u64,
    /// Time, ms.
    pub time_ms: u64,
    /// Whether the buyer was the maker.
    pub buyer_is_maker: bool,
    taker_order: u64,
}

/// One market's read side.
#[derive(Default)]
pub struct MarketView {
    /// Orders by id − 1 (ids are dense per market).
    pub orders: Vec<OrderView>,
    /// Trades by id − 1.
    pub trades: Vec<Trade>,
    /// Aggregate trades by id − 1.
    pub aggs: Vec<AggTrade>,
    /// Price → resting quantity.
    pub bids: BTreeMap<Amount, Amount>,
    /// Price → resting quantity.
    pub asks: BTreeMap<Amount, Amount>,
    /// Changes to this book so far (the depth `lastUpdateId`).
    pub update_id: u64,
}

impl MarketView {
    /// The order numbered `order_id`.
    pub fn order(&self, order_id: u64) -> Option<&OrderView> {
        self.orders
            .get(usize::try_from(order_id.checked_sub(1)?).ok()?)
    }

    fn order_mut(&mut self, order_id: u64) -> Option<&mut OrderView> {
        self.orders
            .get_mut(usize::try_from(order_id.checked_sub(1)?).ok()?)
    }

    /// Trades with ids in `from..`, at most `limit`.
    pub fn trades_from(&self, from: u64, limit: usize) -> &[Trade] {
        let start = (from.max(1) - 1) as usize;
        let start = start.min(self.trades.len());
        let end = (start + limit).min(self.trades.len());
        &self.trades[start..end]
    }

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

    fn add_depth(&mut self, side: Side, price: Amount, add: Amount, remove: Amount) {
        let levels = match side {
            Side::Buy => &mut self.bids,
            Side::Sell => &mut self.asks,
        };
        let level = levels.entry(price).or_default();
        *level = level.saturating_add(add).saturating_sub(remove);
        if level.is_zero() {
            levels.remove(&price);
        }
    }
}

/// One account's balances and order index.
#[derive(Default)]
pub struct AccountView {
    /// Free and locked per asset.
    pub balances: BTreeMap<AssetId, (Amount, Amount)>,
    /// Open orders (market, id).
    pub open: BTreeSet<(MarketId, u64)>,
    /// All orders per market, ascending ids.
    pub orders: HashMap<MarketId, Vec<u64>>,
    /// Own trades per market, ascending ids.
    pub trades: HashMap<MarketId, Vec<u64>>,
    /// Latest order per (market, client order id).
    pub client_ids: HashMap<(MarketId, String), u64>,
    /// Last balance change by a trading command, ms.
    pub update_ms: u64,
}

/// Everything the API reads.
pub struct View {
    /// Per market, by [`MarketId`].
    pub markets: Vec<MarketView>,
    /// Per account.
    pub accounts: HashMap<AccountId, AccountView>,
    /// Commands applied (the log's last sequence number).
    pub sequence: u64,
}

impl View {
    /// An empty view over the catalog's markets.
    pub fn new(catalog: &Catalog) -> Self {
        Self {
            markets: catalog.markets().map(|_| MarketView::default()).collect(),
            accounts: HashMap::new(),
            sequence: 0,
        }
    }

    /// The market view of `id`.
    pub fn market(&self, id: MarketId) -> Option<&MarketView> {
        self.markets.get(usize::from(id.0))
    }

    /// The order of `account` by id or client order id.
    pub fn find_order(
        &self,
        account: AccountId,
        market: MarketId,
        order_id: Option<u64>,
        client_order_id: Option<&str>,
    ) -> Option<&OrderView> {
        let market_view = self.market(market)?;
        let order = match (order_id, client_order_id) {
            (Some(id), _) => market_view.order(id)?,
            (None, Some(client)) => {
                let id = self
                    .accounts
                    .get(&account)?
                    .client_ids
                    .get(&(market, client.to_owned()))?;
                market_view.order(*id)?
            }
            (None, None) => return None,
        };
        let matches_client = client_order_id.is_none_or(|c| c == order.client_order_id);
        (order.account == account && matches_client).then_some(order)
    }

    /// Applies one command and the events the engine produced for it.
    pub fn apply(&mut self, command: &Command, events: &[Event]) {
        self.sequence += 1;
        if matches!(events.first(), Some(Event::Rejected(_))) {
            return;
        }
        if let Command::Place {
            account,
            order,
            time_ms,
        } = command
        {
            self.open_order(*account, order, *time_ms);
        }
        let mut touched: Vec<MarketId> = Vec::new();
        for event in events {
            match event {
                Event::Rejected(_) => {}
                Event::Balance {
                    account,
                    asset,
                    free,
                    locked,
                } => {
                    let view = self.accounts.entry(*account).or_default();
                    view.balances.insert(*asset, (*free, *locked));
                    // Credits and debits carry no engine time; they keep the last one.
                    if let Some(time_ms) = command.time_ms() {
                        view.update_ms = time_ms;
                    }
                }
                Event::Trade(trade) => self.record_trade(trade),
                Event::Order(state) => {
                    let Some(market) = self.markets.get_mut(usize::from(state.market.0)) else {
                        continue;
                    };
                    let Some(order) = market.order_mut(state.order_id) else {
                        continue;
                    };
                    let was_open = order.is_open().then(|| order.remaining());
                    order.status = state.status;
                    order.executed = state.executed;
                    order.cumulative_quote = state.cumulative_quote;
                    order.update_ms = state.time_ms;
                    let now_open = order.is_open().then(|| order.remaining());
                    let (side, price, account, id) =
                        (order.side, order.price, order.account, order.order_id);
                    if was_open != now_open {
                        market.add_depth(
                            side,
                            price,
                            now_open.unwrap_or_default(),
                            was_open.unwrap_or_default(),
                        );
                        if !touched.contains(&state.market) {
                            touched.push(state.market);
                        }
                    }
                    let view = self.accounts.entry(account).or_default();
                    if now_open.is_some() {
                        view.open.insert((state.market, id));
                    } else {
                        view.open.remove(&(state.market, id));
                    }
                }
            }
        }
        for market in touched {
            self.markets[usize::from(market.0)].update_id = self.sequence;
        }
    }

    fn open_order(&mut self, account: AccountId, order: &NewOrder, time_ms: u64) {
        let Some(market) = self.markets.get_mut(usize::from(order.market.0)) else {
            return;
        };
        let order_id = market.orders.len() as u64 + 1;
        let client_order_id = order
            .client_order_id
            .clone()
            .unwrap_or_else(|| format!("weiport{order_id}"));
        market.orders.push(OrderView {
            market: order.market,
            order_id,
            account,
            client_order_id: client_order_id.clone(),
            side: order.side,
            order_type: order.order_type,
            time_in_force: order.time_in_force,
            price: order.price.unwrap_or_default(),
            orig_qty: order.quantity.unwrap_or_default(),
            orig_quote_qty: order.quote_quantity.unwrap_or_default(),
            executed: Amount::ZERO,
            cumulative_quote: Amount::ZERO,
            // Not on the book until the order's own event says so (every
            // accepted placement ends with one).
            status: OrderStatus::Rejected,
            stp: order.stp,
            time_ms,
            update_ms: time_ms,
            trades: Vec::new(),
        });
        let view = self.accounts.entry(account).or_default();
        view.orders.entry(order.market).or_default().push(order_id);
        view.client_ids
            .insert((order.market, client_order_id), order_id);
    }

    fn record_trade(&mut self, trade: &Trade) {
        let Some(market) = self.markets.get_mut(usize::from(trade.market.0)) else {
            return;
        };
        market.trades.push(*trade);
        for order_id in [trade.maker.0, trade.taker.0] {
            if let Some(order) = market.order_mut(order_id) {
                order.trades.push(trade.trade_id);
            }
        }
        let buyer_is_maker = trade.taker_side == Side::Sell;
        match market.aggs.last_mut() {
            Some(agg)
                if agg.taker_order == trade.taker.0
                    && agg.price == trade.price
                    && agg.last_trade + 1 == trade.trade_id =>
            {
                agg.quantity = agg.quantity.saturating_add(trade.quantity);
                agg.last_trade = trade.trade_id;
            }
            _ => {
                let id = market.aggs.len() as u64 + 1;
                market.aggs.push(AggTrade {
                    id,
                    price: trade.price,
                    quantity: trade.quantity,
                    first_trade: trade.trade_id,
                    last_trade: trade.trade_id,
                    time_ms: trade.time_ms,
                    buyer_is_maker,
                    taker_order: trade.taker.0,
                });
            }
        }
        for account in [trade.maker.1, trade.taker.1] {
            let trades = self
                .accounts
                .entry(account)
                .or_default()
                .trades
                .entry(trade.market)
                .or_default();
            // A self-trade lists once.
            if trades.last() != Some(&trade.trade_id) {
                trades.push(trade.trade_id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Engine;
    use crate::engine::tests::{command_strategy, two_markets};

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
            for command in commands {
                let events = engine.apply(command.clone());
                view.apply(&command, &events);
            }
            for (id, _) in catalog.markets() {
                let market = view.market(id).unwrap();
                let bids: Vec<_> = market.bids.iter().rev().map(|(p, q)| (*p, *q)).collect();
                let asks: Vec<_> = market.asks.iter().map(|(p, q)| (*p, *q)).collect();
                proptest::prop_assert_eq!((bids, asks), engine.depth(id));
                proptest::prop_assert_eq!(
                    market.orders.iter().filter(|o| o.is_open()).count(),
                    engine.resting_orders(id)
                );
                for order in &market.orders {
                    let traded: Amount = order
                        .trades
                        .iter()
                        .map(|t| market.trades[(*t - 1) as usize].quantity)
                        .fold(Amount::ZERO, Amount::saturating_add);
                    // A self-trade lists the trade on both of its orders once each.
                    proptest::prop_assert_eq!(traded, order.executed, "order {}", order.order_id);
                }
            }
            for (account, held) in &view.accounts {
                for (asset, _) in catalog.assets() {
                    let shown = held.balances.get(&asset).copied().unwrap_or_default();
                    proptest::prop_assert_eq!(shown, engine.balance(*account, asset));
                }
                for (market, id) in &held.open {
                    let order = view.market(*market).unwrap().order(*id).unwrap();
                    proptest::prop_assert!(order.is_open() && order.account == *account);
                }
            }
        }
    }
}
