//! The exchange's history: what each command did to orders, trades,
//! aggregate trades and candles ([`Recorder`], on the engine thread), and
//! the typed reads of those rows from storage ([`History`], for the API).

use std::collections::HashMap;
use std::sync::Arc;

use weiport_storage::{
    AggTradeRow, CandleRow, CandleSpan, ConditionalRow, ListRow, OrderRow, PreventedRow,
    ScanDirection, StorageError, Store, TradeRow,
};

use crate::amount::Amount;
use crate::catalog::{Catalog, MarketId};
use crate::engine::{AccountId, Command, Event, OrderStatus, Prevention, Trade, WithdrawalStage};
use crate::market::StpMode;
use crate::order::{Contingency, NewOrder, OrderType, ResponseType, Side, TimeInForce};

mod recorder;

use recorder::{COARSE, grow};
pub use recorder::{Changes, Recorder, candle_of, merge_earlier, merge_later};

/// An order as the API reports it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
    /// Conditional orders: the stop price.
    pub stop_price: Option<Amount>,
    /// Conditional orders: the trailing delta, basis points.
    pub trailing_delta: Option<u32>,
    /// When it began working: placement, or for a conditional order its
    /// trigger (none while it waits).
    pub working_ms: Option<u64>,
    /// Trailing orders: when tracking the price began.
    pub trailing_ms: Option<u64>,
    /// Orders of an order list: its id.
    pub order_list_id: Option<u64>,
}

/// An order list as the API reports it (its state is its orders').
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListView {
    /// List id.
    pub list_id: u64,
    /// Owner.
    pub account: AccountId,
    /// Market of its orders.
    pub market: MarketId,
    /// How its orders depend on each other.
    pub contingency: Contingency,
    /// The list's client id.
    pub list_client_id: String,
    /// Its orders' ids, working order first.
    pub order_ids: Vec<u64>,
    /// Placement time, ms.
    pub time_ms: u64,
}

impl ListView {
    fn to_row(&self, catalog: &Catalog) -> ListRow {
        ListRow {
            list_id: self.list_id,
            account: self.account,
            symbol: catalog.symbol(self.market).to_owned(),
            contingency: tag(self.contingency, &CONTINGENCIES),
            list_client_id: self.list_client_id.clone(),
            order_ids: self.order_ids.clone(),
            time_ms: self.time_ms,
        }
    }

    fn from_row(catalog: &Catalog, row: ListRow) -> Result<Self, HistoryError> {
        Ok(Self {
            list_id: row.list_id,
            account: row.account,
            market: catalog
                .market_id(&row.symbol)
                .ok_or(HistoryError::UnknownTag)?,
            contingency: untag(row.contingency, &CONTINGENCIES).ok_or(HistoryError::UnknownTag)?,
            list_client_id: row.list_client_id,
            order_ids: row.order_ids,
            time_ms: row.time_ms,
        })
    }
}

impl OrderView {
    /// `order` as placed by `account` under `order_id`, before any fill.
    pub fn placed(
        market: MarketId,
        order_id: u64,
        account: AccountId,
        order: &NewOrder,
        time_ms: u64,
    ) -> Self {
        Self {
            market,
            order_id,
            account,
            client_order_id: order
                .client_order_id
                .clone()
                .unwrap_or_else(|| format!("weiport{order_id}")),
            side: order.side,
            order_type: order.order_type,
            time_in_force: order.time_in_force,
            price: order.price.unwrap_or_default(),
            orig_qty: order.quantity.unwrap_or_default(),
            orig_quote_qty: order.quote_quantity.unwrap_or_default(),
            executed: Amount::ZERO,
            cumulative_quote: Amount::ZERO,
            status: OrderStatus::New,
            stp: order.stp,
            time_ms,
            update_ms: time_ms,
            stop_price: order.trigger.and_then(|t| t.stop_price),
            trailing_delta: order.trigger.and_then(|t| t.trailing_delta),
            working_ms: (!order.order_type.is_conditional()).then_some(time_ms),
            trailing_ms: None,
            order_list_id: None,
        }
    }

    /// Whether it waits for its trigger.
    pub fn is_waiting(&self) -> bool {
        self.is_open() && self.working_ms.is_none()
    }

    /// Whether it is open: resting, waiting for a trigger, or (in an
    /// order list) pending its working order.
    pub fn is_open(&self) -> bool {
        !self.status.is_final()
    }

    /// Quantity still resting (zero once closed).
    pub fn resting(&self) -> Amount {
        if self.is_open() {
            self.orig_qty.saturating_sub(self.executed)
        } else {
            Amount::ZERO
        }
    }
}

// The stored tag of every enum value, written out: a byte on disk never
// depends on the order of a list or of an enum's variants. Never renumber
// (`stored_tags_are_pinned` fails if one changes); add new values at new numbers.
pub(crate) const SIDES: [(Side, u8); 2] = [(Side::Buy, 0), (Side::Sell, 1)];
pub(crate) const TYPES: [(OrderType, u8); 7] = [
    (OrderType::Limit, 0),
    (OrderType::Market, 1),
    (OrderType::LimitMaker, 2),
    (OrderType::StopLoss, 3),
    (OrderType::StopLossLimit, 4),
    (OrderType::TakeProfit, 5),
    (OrderType::TakeProfitLimit, 6),
];
pub(crate) const TIFS: [(TimeInForce, u8); 3] = [
    (TimeInForce::Gtc, 0),
    (TimeInForce::Ioc, 1),
    (TimeInForce::Fok, 2),
];
pub(crate) const RESPONSES: [(ResponseType, u8); 3] = [
    (ResponseType::Ack, 0),
    (ResponseType::Result, 1),
    (ResponseType::Full, 2),
];
pub(crate) const STPS: [(StpMode, u8); 5] = [
    (StpMode::None, 0),
    (StpMode::ExpireTaker, 1),
    (StpMode::ExpireMaker, 2),
    (StpMode::ExpireBoth, 3),
    (StpMode::Decrement, 4),
];
pub(crate) const CONTINGENCIES: [(Contingency, u8); 3] = [
    (Contingency::Oco, 0),
    (Contingency::Oto, 1),
    (Contingency::Otoco, 2),
];
const STATUSES: [(OrderStatus, u8); 8] = [
    (OrderStatus::New, 0),
    (OrderStatus::PartiallyFilled, 1),
    (OrderStatus::Filled, 2),
    (OrderStatus::Canceled, 3),
    (OrderStatus::Rejected, 4),
    (OrderStatus::Expired, 5),
    (OrderStatus::ExpiredInMatch, 6),
    (OrderStatus::PendingNew, 7),
];

/// The stored tag of `value`.
pub(crate) fn tag<T: PartialEq + Copy>(value: T, all: &[(T, u8)]) -> u8 {
    all.iter()
        .find(|(v, _)| *v == value)
        .map(|(_, tag)| *tag)
        .expect("every variant is listed")
}

/// The value of a stored tag, if this build knows it.
pub(crate) fn untag<T: Copy>(tag: u8, all: &[(T, u8)]) -> Option<T> {
    all.iter().find(|(_, t)| *t == tag).map(|(v, _)| *v)
}

impl OrderView {
    fn to_row(&self) -> OrderRow {
        OrderRow {
            order_id: self.order_id,
            account: self.account,
            client_order_id: self.client_order_id.clone(),
            side: tag(self.side, &SIDES),
            order_type: tag(self.order_type, &TYPES),
            time_in_force: tag(self.time_in_force, &TIFS),
            stp: tag(self.stp, &STPS),
            status: tag(self.status, &STATUSES),
            price: self.price.units(),
            orig_qty: self.orig_qty.units(),
            orig_quote_qty: self.orig_quote_qty.units(),
            executed: self.executed.units(),
            cumulative_quote: self.cumulative_quote.units(),
            time_ms: self.time_ms,
            update_ms: self.update_ms,
            conditional: self.order_type.is_conditional().then(|| ConditionalRow {
                stop_price: self.stop_price.map(Amount::units),
                trailing_delta: self.trailing_delta.map(u64::from),
                working_ms: self.working_ms,
                trailing_ms: self.trailing_ms,
            }),
            order_list_id: self.order_list_id,
        }
    }

    fn from_row(market: MarketId, row: OrderRow) -> Result<Self, HistoryError> {
        let corrupt = || HistoryError::UnknownTag;
        let conditional = row.conditional.unwrap_or_default();
        Ok(Self {
            market,
            order_id: row.order_id,
            account: row.account,
            client_order_id: row.client_order_id,
            side: untag(row.side, &SIDES).ok_or_else(corrupt)?,
            order_type: untag(row.order_type, &TYPES).ok_or_else(corrupt)?,
            time_in_force: untag(row.time_in_force, &TIFS).ok_or_else(corrupt)?,
            price: Amount::from_units(row.price),
            orig_qty: Amount::from_units(row.orig_qty),
            orig_quote_qty: Amount::from_units(row.orig_quote_qty),
            executed: Amount::from_units(row.executed),
            cumulative_quote: Amount::from_units(row.cumulative_quote),
            status: untag(row.status, &STATUSES).ok_or_else(corrupt)?,
            stp: untag(row.stp, &STPS).ok_or_else(corrupt)?,
            time_ms: row.time_ms,
            update_ms: row.update_ms,
            stop_price: conditional.stop_price.map(Amount::from_units),
            trailing_delta: match conditional.trailing_delta {
                Some(delta) => Some(u32::try_from(delta).map_err(|_| corrupt())?),
                None => None,
            },
            working_ms: match row.conditional {
                Some(c) => c.working_ms,
                None => Some(row.time_ms),
            },
            trailing_ms: conditional.trailing_ms,
            order_list_id: row.order_list_id,
        })
    }
}

fn prevented_row(p: &Prevention) -> PreventedRow {
    PreventedRow {
        id: p.id,
        taker: p.taker,
        maker: p.maker,
        price: p.price.units(),
        mode: tag(p.mode, &STPS),
        taker_quantity: p.taker_quantity.units(),
        maker_quantity: p.maker_quantity.units(),
        time_ms: p.time_ms,
    }
}

fn prevented_from_row(market: MarketId, row: &PreventedRow) -> Result<Prevention, HistoryError> {
    Ok(Prevention {
        market,
        id: row.id,
        taker: row.taker,
        maker: row.maker,
        price: Amount::from_units(row.price),
        mode: untag(row.mode, &STPS).ok_or(HistoryError::UnknownTag)?,
        taker_quantity: Amount::from_units(row.taker_quantity),
        maker_quantity: Amount::from_units(row.maker_quantity),
        time_ms: row.time_ms,
    })
}

fn trade_row(trade: &Trade) -> TradeRow {
    TradeRow {
        trade_id: trade.trade_id,
        price: trade.price.units(),
        quantity: trade.quantity.units(),
        quote_quantity: trade.quote_quantity.units(),
        maker: trade.maker,
        taker: trade.taker,
        taker_buys: trade.taker_side == Side::Buy,
        maker_fee: trade.maker_fee.units(),
        taker_fee: trade.taker_fee.units(),
        time_ms: trade.time_ms,
    }
}

fn trade_from_row(market: MarketId, row: &TradeRow) -> Trade {
    Trade {
        market,
        trade_id: row.trade_id,
        price: Amount::from_units(row.price),
        quantity: Amount::from_units(row.quantity),
        quote_quantity: Amount::from_units(row.quote_quantity),
        maker: row.maker,
        taker: row.taker,
        taker_side: if row.taker_buys {
            Side::Buy
        } else {
            Side::Sell
        },
        maker_fee: Amount::from_units(row.maker_fee),
        taker_fee: Amount::from_units(row.taker_fee),
        time_ms: row.time_ms,
    }
}

/// Length of a stored candle.
pub const CANDLE_MS: u64 = 60_000;

/// Why a history read failed.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// Storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// A row holds an enum value this build does not know.
    #[error("a stored order holds an unknown tag")]
    UnknownTag,
}

/// Typed reads of the stored history.
#[derive(Clone)]
pub struct History {
    store: Store,
    catalog: Arc<Catalog>,
}

impl History {
    /// Reads over `store`'s history of the catalog's markets.
    pub fn new(store: Store, catalog: Arc<Catalog>) -> Self {
        Self { store, catalog }
    }

    /// Order `order_id` of `market`.
    pub fn order(
        &self,
        market: MarketId,
        order_id: u64,
    ) -> Result<Option<OrderView>, HistoryError> {
        self.store
            .order(self.catalog.symbol(market), order_id)?
            .map(|row| OrderView::from_row(market, row))
            .transpose()
    }

    /// The order of `account` by id, or else by client order id.
    pub fn find_order(
        &self,
        account: AccountId,
        market: MarketId,
        order_id: Option<u64>,
        client_order_id: Option<&str>,
    ) -> Result<Option<OrderView>, HistoryError> {
        let order_id = match (order_id, client_order_id) {
            (Some(id), _) => id,
            (None, Some(client)) => {
                let symbol = self.catalog.symbol(market);
                match self.store.order_by_client_id(account, symbol, client)? {
                    Some(id) => id,
                    None => return Ok(None),
                }
            }
            (None, None) => return Ok(None),
        };
        Ok(self.order(market, order_id)?.filter(|o| {
            o.account == account && client_order_id.is_none_or(|c| c == o.client_order_id)
        }))
    }

    /// Prevented match `id` of `market` where `account` was taker or maker.
    pub fn prevented(
        &self,
        account: AccountId,
        market: MarketId,
        id: u64,
    ) -> Result<Option<Prevention>, HistoryError> {
        self.store
            .prevented(self.catalog.symbol(market), id)?
            .filter(|row| row.taker.1 == account || row.maker.1 == account)
            .map(|row| prevented_from_row(market, &row))
            .transpose()
    }

    /// Prevented matches of order `order_id` of `market` from `from` on.
    pub fn order_prevented(
        &self,
        market: MarketId,
        order_id: u64,
        from: u64,
    ) -> impl Iterator<Item = Result<Prevention, HistoryError>> + '_ {
        self.store
            .order_prevented(self.catalog.symbol(market), order_id, from)
            .map(move |row| prevented_from_row(market, &row?))
    }

    /// Order list `list_id` of `account`, by id or else by client id.
    pub fn find_order_list(
        &self,
        account: AccountId,
        list_id: Option<u64>,
        client_id: Option<&str>,
    ) -> Result<Option<ListView>, HistoryError> {
        let row = match (list_id, client_id) {
            (Some(id), _) => self.store.order_list(id)?,
            (None, Some(client)) => self.store.order_list_by_client_id(account, client)?,
            (None, None) => None,
        };
        Ok(row
            .map(|row| ListView::from_row(&self.catalog, row))
            .transpose()?
            .filter(|l| l.account == account))
    }

    /// Order lists of `account` from `list_id` on, in `direction`.
    pub fn account_order_lists(
        &self,
        account: AccountId,
        list_id: u64,
        direction: ScanDirection,
    ) -> impl Iterator<Item = Result<ListView, HistoryError>> + '_ {
        self.store
            .account_order_lists(account, list_id, direction)
            .map(move |row| ListView::from_row(&self.catalog, row?))
    }

    /// Orders of `account` on `market` from `order_id` on, in `direction`.
    pub fn account_orders(
        &self,
        account: AccountId,
        market: MarketId,
        order_id: u64,
        direction: ScanDirection,
    ) -> impl Iterator<Item = Result<OrderView, HistoryError>> + '_ {
        self.store
            .account_orders(account, self.catalog.symbol(market), order_id, direction)
            .map(move |row| OrderView::from_row(market, row?))
    }

    /// Trades of `account` on `market` from `trade_id` on, in `direction`.
    pub fn account_trades(
        &self,
        account: AccountId,
        market: MarketId,
        trade_id: u64,
        direction: ScanDirection,
    ) -> impl Iterator<Item = Result<Trade, HistoryError>> + '_ {
        self.store
            .account_trades(account, self.catalog.symbol(market), trade_id, direction)
            .map(move |row| Ok(trade_from_row(market, &row?)))
    }

    /// Trades of `market` from `trade_id` on, in `direction`.
    pub fn trades(
        &self,
        market: MarketId,
        trade_id: u64,
        direction: ScanDirection,
    ) -> impl Iterator<Item = Result<Trade, HistoryError>> + '_ {
        self.store
            .trades(self.catalog.symbol(market), trade_id, direction)
            .map(move |row| Ok(trade_from_row(market, &row?)))
    }

    /// Aggregate trades of `market` from `id` on, in `direction`.
    pub fn agg_trades(
        &self,
        market: MarketId,
        id: u64,
        direction: ScanDirection,
    ) -> impl Iterator<Item = Result<AggTradeRow, HistoryError>> + '_ {
        self.store
            .agg_trades(self.catalog.symbol(market), id, direction)
            .map(|row| Ok(row?))
    }

    /// Candles of `span` of `market` from `open_time` on, in `direction`.
    pub fn candles(
        &self,
        market: MarketId,
        span: CandleSpan,
        open_time: u64,
        direction: ScanDirection,
    ) -> impl Iterator<Item = Result<CandleRow, HistoryError>> + '_ {
        self.store
            .candles(self.catalog.symbol(market), span, open_time, direction)
            .map(|row| Ok(row?))
    }

    /// The first id of `rows` of `market` dated at or after `time_ms`
    /// among ids `1..=last` (`last + 1` if none), by binary search: ids are
    /// handed out in time order.
    pub fn first_at(
        &self,
        rows: Dated,
        market: MarketId,
        time_ms: u64,
        last: u64,
    ) -> Result<u64, HistoryError> {
        let symbol = self.catalog.symbol(market);
        let store = &self.store;
        first_id_at(last, time_ms, |id| {
            let time = match rows {
                Dated::Orders => store.order(symbol, id)?.map(|o| o.time_ms),
                Dated::Trades => store.trade(symbol, id)?.map(|t| t.time_ms),
                Dated::AggTrades => store.agg_trade(symbol, id)?.map(|a| a.time_ms),
            };
            Ok(time.unwrap_or(u64::MAX))
        })
    }
}

/// Stored rows with sequential ids and times, searchable by time.
#[derive(Debug, Clone, Copy)]
pub enum Dated {
    /// Orders, by order id.
    Orders,
    /// Trades, by trade id.
    Trades,
    /// Aggregate trades, by aggregate id.
    AggTrades,
}

/// Sums the hour and day candles of a history written before they were
/// stored, from its minute candles; once per store.
pub fn build_coarse_candles(store: &Store, catalog: &Catalog) -> Result<(), HistoryError> {
    if store.coarse_candles_built()? {
        return Ok(());
    }
    let mut written = 0u64;
    let mut batch = store.exchange_batch();
    for (_, market) in catalog.markets() {
        let symbol = market.symbol.as_str();
        let mut current: [Option<CandleRow>; 2] = [None, None];
        for minute in store.candles(symbol, CandleSpan::Minute, 0, ScanDirection::Forward) {
            let minute = minute?;
            for (current, span) in current.iter_mut().zip(COARSE) {
                let open_time = minute.open_time - minute.open_time % span.millis();
                if let Some(done) = current.filter(|c| c.open_time != open_time) {
                    batch.put_candle(symbol, span, &done);
                    written += 1;
                }
                grow(current, open_time, &minute);
            }
            if written >= 10_000 {
                std::mem::replace(&mut batch, store.exchange_batch()).commit()?;
                written = 0;
            }
        }
        for (current, span) in current.iter().zip(COARSE) {
            if let Some(last) = current {
                batch.put_candle(symbol, span, last);
            }
        }
    }
    batch.set_coarse_candles_built();
    batch.commit()?;
    Ok(())
}

/// The smallest id in `1..=last` whose time is at least `time_ms` (`last + 1` if none).
fn first_id_at(
    last: u64,
    time_ms: u64,
    time_of: impl Fn(u64) -> Result<u64, HistoryError>,
) -> Result<u64, HistoryError> {
    let (mut low, mut high) = (1, last + 1);
    while low < high {
        let mid = low + (high - low) / 2;
        if time_of(mid)? < time_ms {
            low = mid + 1;
        } else {
            high = mid;
        }
    }
    Ok(low)
}

#[cfg(test)]
mod stored_tag_tests {
    use super::*;

    /// Each value's number, written independently of the lists above, with
    /// every variant named in an exhaustive match so a new one must be added.
    #[test]
    fn stored_tags_are_pinned() {
        fn check<T: PartialEq + Copy + std::fmt::Debug>(all: &[(T, u8)], pinned: fn(T) -> u8) {
            let mut seen = std::collections::BTreeSet::new();
            for (value, stored) in all {
                assert_eq!(*stored, pinned(*value), "{value:?} was renumbered");
                assert!(seen.insert(*stored), "tag {stored} used twice");
                assert_eq!(untag(*stored, all), Some(*value));
            }
        }
        check(&SIDES, |v| match v {
            Side::Buy => 0,
            Side::Sell => 1,
        });
        check(&TYPES, |v| match v {
            OrderType::Limit => 0,
            OrderType::Market => 1,
            OrderType::LimitMaker => 2,
            OrderType::StopLoss => 3,
            OrderType::StopLossLimit => 4,
            OrderType::TakeProfit => 5,
            OrderType::TakeProfitLimit => 6,
        });
        check(&TIFS, |v| match v {
            TimeInForce::Gtc => 0,
            TimeInForce::Ioc => 1,
            TimeInForce::Fok => 2,
        });
        check(&RESPONSES, |v| match v {
            ResponseType::Ack => 0,
            ResponseType::Result => 1,
            ResponseType::Full => 2,
        });
        check(&STPS, |v| match v {
            StpMode::None => 0,
            StpMode::ExpireTaker => 1,
            StpMode::ExpireMaker => 2,
            StpMode::ExpireBoth => 3,
            StpMode::Decrement => 4,
        });
        check(&STATUSES, |v| match v {
            OrderStatus::New => 0,
            OrderStatus::PartiallyFilled => 1,
            OrderStatus::Filled => 2,
            OrderStatus::Canceled => 3,
            OrderStatus::Rejected => 4,
            OrderStatus::Expired => 5,
            OrderStatus::ExpiredInMatch => 6,
            OrderStatus::PendingNew => 7,
        });
        // Every variant is listed: the matches above are exhaustive, and
        // each list holds as many entries as its enum has variants.
        assert_eq!((SIDES.len(), TYPES.len(), TIFS.len()), (2, 7, 3));
        assert_eq!((RESPONSES.len(), STPS.len(), STATUSES.len()), (3, 5, 8));
        check(&CONTINGENCIES, |v| match v {
            Contingency::Oco => 0,
            Contingency::Oto => 1,
            Contingency::Otoco => 2,
        });
    }
}
