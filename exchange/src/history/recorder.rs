//! Turning each applied command and its events into history rows: orders
//! in their latest state, trades, aggregate trades and candles.

use super::*;

/// A candle of one trade, opening at `open_time`.
pub fn candle_of(trade: &Trade, open_time: u64) -> CandleRow {
    let price = trade.price.units();
    let (taker_base, taker_quote) = if trade.taker_side == Side::Buy {
        (trade.quantity.units(), trade.quote_quantity.units())
    } else {
        (0, 0)
    };
    CandleRow {
        open_time,
        open: price,
        high: price,
        low: price,
        close: price,
        volume: trade.quantity.units(),
        quote_volume: trade.quote_quantity.units(),
        taker_buy_volume: taker_base,
        taker_buy_quote_volume: taker_quote,
        first_trade: trade.trade_id,
        last_trade: trade.trade_id,
    }
}

/// Adds `later`, which follows `candle` in time, to it.
pub fn merge_later(candle: &mut CandleRow, later: &CandleRow) {
    candle.close = later.close;
    candle.last_trade = later.last_trade;
    add_volumes(candle, later);
}

/// Adds `earlier`, which precedes `candle` in time, to it.
pub fn merge_earlier(candle: &mut CandleRow, earlier: &CandleRow) {
    candle.open = earlier.open;
    candle.first_trade = earlier.first_trade;
    add_volumes(candle, earlier);
}

fn add_volumes(candle: &mut CandleRow, other: &CandleRow) {
    candle.high = candle.high.max(other.high);
    candle.low = candle.low.min(other.low);
    candle.volume = candle.volume.saturating_add(other.volume);
    candle.quote_volume = candle.quote_volume.saturating_add(other.quote_volume);
    candle.taker_buy_volume = candle
        .taker_buy_volume
        .saturating_add(other.taker_buy_volume);
    candle.taker_buy_quote_volume = candle
        .taker_buy_quote_volume
        .saturating_add(other.taker_buy_quote_volume);
}

/// What one command changed in the history.
#[derive(Debug, Default)]
pub struct Changes {
    /// Orders in their state after the command, with whether it placed them.
    pub orders: Vec<(OrderView, bool)>,
    /// The order list it placed.
    pub list: Option<ListView>,
    /// New trades.
    pub trades: Vec<Trade>,
    /// Aggregate trades, new or grown.
    pub aggs: Vec<(MarketId, AggTradeRow)>,
    /// One-minute candles, new or grown.
    pub candles: Vec<(MarketId, CandleRow)>,
    /// Hour and day candles, new or grown.
    pub coarse: Vec<(MarketId, CandleSpan, CandleRow)>,
    /// Matches self-trade prevention stopped.
    pub prevented: Vec<Prevention>,
    /// The withdrawal this command asked for, with its client's id.
    pub withdrawal_client_id: Option<(u64, Box<str>)>,
    /// A withdrawal's signed transactions, one more recorded by this command.
    pub withdrawal_tx: Option<(u64, weiport_storage::WithdrawalTxRow)>,
    /// The deposit address this command assigned.
    pub deposit_address: Option<(AccountId, [u8; 20])>,
    /// The client id the cancel's client gave it (reports of what it
    /// canceled carry it).
    pub cancel_client_id: Option<String>,
}

impl Changes {
    /// The order this command placed.
    pub fn placed(&self) -> Option<&OrderView> {
        self.orders
            .iter()
            .find(|(_, placed)| *placed)
            .map(|(o, _)| o)
    }

    /// Writes the rows into `batch`.
    pub fn write(&self, catalog: &Catalog, batch: &mut weiport_storage::ExchangeBatch) {
        if let Some(list) = &self.list {
            batch.put_order_list(&list.to_row(catalog));
        }
        for prevention in &self.prevented {
            batch.put_prevented(
                catalog.symbol(prevention.market),
                &prevented_row(prevention),
            );
        }
        for (order, placed) in &self.orders {
            batch.put_order(catalog.symbol(order.market), &order.to_row(), *placed);
        }
        for trade in &self.trades {
            batch.put_trade(catalog.symbol(trade.market), &trade_row(trade));
        }
        for (market, agg) in &self.aggs {
            batch.put_agg_trade(catalog.symbol(*market), agg);
        }
        for (market, candle) in &self.candles {
            batch.put_candle(catalog.symbol(*market), CandleSpan::Minute, candle);
        }
        for (market, span, candle) in &self.coarse {
            batch.put_candle(catalog.symbol(*market), *span, candle);
        }
        if let Some((id, row)) = &self.withdrawal_tx {
            batch.put_withdrawal_tx(*id, row);
        }
        if let Some((account, address)) = &self.deposit_address {
            batch.put_deposit_address(*account, address);
        }
    }
}

#[derive(Default, Clone, serde::Serialize, serde::Deserialize)]
struct Tape {
    last_agg: Option<AggTradeRow>,
    candle: Option<CandleRow>,
    /// The current hour and day candles.
    coarse: [Option<CandleRow>; 2],
}

/// The spans summed from minutes, in the order of [`Tape::coarse`].
pub(super) const COARSE: [CandleSpan; 2] = [CandleSpan::Hour, CandleSpan::Day];

/// Adds `later` to the candle of its period in `current`, or starts it.
pub(super) fn grow(
    current: &mut Option<CandleRow>,
    open_time: u64,
    later: &CandleRow,
) -> CandleRow {
    match current {
        Some(candle) if candle.open_time == open_time => {
            merge_later(candle, later);
            *candle
        }
        current => {
            let mut candle = *later;
            candle.open_time = open_time;
            *current.insert(candle)
        }
    }
}

/// Turns each applied command and its events into history rows. Owned by
/// the engine thread; keeps the details of resting orders, which fills and
/// cancels update, and each market's open aggregate trade and candle.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub struct Recorder {
    /// Shared, not owned: a snapshot copies the map and not the orders,
    /// and an order a snapshot still holds is copied only when it changes.
    #[serde(with = "shared_orders")]
    open: HashMap<(MarketId, u64), Arc<OrderView>>,
    tapes: Vec<Tape>,
    /// The signed transactions of each pending withdrawal, as recorded.
    #[serde(serialize_with = "crate::engine::sorted_map")]
    signed: HashMap<u64, weiport_storage::WithdrawalTxRow>,
}

impl Recorder {
    /// A copy, in `spare`'s memory when given (an earlier copy).
    pub(crate) fn copy(&mut self, spare: Option<Self>) -> Self {
        crate::engine::copy_reusing(self, spare, |recorder| &mut recorder.open)
    }

    /// The orders it holds open, in no order.
    pub(crate) fn open_orders(&self) -> impl Iterator<Item = &OrderView> {
        self.open.values().map(|order| &**order)
    }

    /// How many markets it records.
    pub(crate) fn markets(&self) -> usize {
        self.tapes.len()
    }

    /// A recorder for the catalog's markets, with nothing recorded.
    pub fn new(catalog: &Catalog) -> Self {
        Self {
            open: HashMap::new(),
            tapes: vec![Tape::default(); catalog.markets().count()],
            signed: HashMap::new(),
        }
    }

    /// The order `key` as this command has changed it so far: from the
    /// changes, or taken from the open orders into them.
    fn touched<'a>(
        &mut self,
        changes: &'a mut Changes,
        key: (MarketId, u64),
    ) -> Option<&'a mut OrderView> {
        let at = match changes
            .orders
            .iter()
            .position(|(o, _)| (o.market, o.order_id) == key)
        {
            Some(at) => at,
            None => {
                let order = Arc::unwrap_or_clone(self.open.remove(&key)?);
                changes.orders.push((order, false));
                changes.orders.len() - 1
            }
        };
        Some(&mut changes.orders[at].0)
    }

    /// The history changes of `command`, which produced `events`.
    pub fn record(&mut self, command: &Command, events: &[Event]) -> Changes {
        let mut changes = Changes::default();
        if matches!(events.first(), Some(Event::Rejected(_))) {
            return changes;
        }
        changes.cancel_client_id = command.cancel_client_id().map(str::to_owned);
        for event in events {
            match event {
                Event::Order(state) => {
                    let Some(order) = self.touched(&mut changes, (state.market, state.order_id))
                    else {
                        continue;
                    };
                    order.status = state.status;
                    order.executed = state.executed;
                    order.cumulative_quote = state.cumulative_quote;
                    order.update_ms = state.time_ms;
                }
                Event::Placed { market, order_id } => {
                    let placed = match command {
                        Command::Place {
                            account,
                            order,
                            time_ms,
                        } => OrderView::placed(*market, *order_id, *account, order, *time_ms),
                        Command::Replace {
                            account,
                            order,
                            time_ms,
                            ..
                        } => OrderView::placed(*market, *order_id, *account, order, *time_ms),
                        // A list's orders are announced in its order.
                        Command::PlaceList {
                            account,
                            list,
                            time_ms,
                        } => {
                            let at = changes.orders.iter().filter(|(_, placed)| *placed).count();
                            let Some(order) = list.orders().nth(at) else {
                                continue;
                            };
                            let mut placed =
                                OrderView::placed(*market, *order_id, *account, order, *time_ms);
                            placed.order_list_id = changes.list.as_ref().map(|l| l.list_id);
                            if list.working.is_some() && at > 0 {
                                // Pending until the working order fills.
                                placed.working_ms = None;
                            }
                            if let Some(list) = &mut changes.list {
                                list.order_ids.push(*order_id);
                            }
                            placed
                        }
                        _ => continue,
                    };
                    changes.orders.push((placed, true));
                }
                Event::ListPlaced { market, list_id } => {
                    if let Command::PlaceList {
                        account,
                        list,
                        time_ms,
                    } = command
                    {
                        changes.list = Some(ListView {
                            list_id: *list_id,
                            account: *account,
                            market: *market,
                            contingency: list.contingency,
                            list_client_id: list
                                .list_client_id
                                .clone()
                                .unwrap_or_else(|| format!("weiportlist{list_id}")),
                            order_ids: Vec::new(),
                            time_ms: *time_ms,
                        });
                    }
                }
                Event::Triggered { market, order_id } | Event::Tracking { market, order_id } => {
                    let Some(order) = self.touched(&mut changes, (*market, *order_id)) else {
                        continue;
                    };
                    let now = command.time_ms().unwrap_or(order.update_ms);
                    if matches!(event, Event::Triggered { .. }) {
                        order.working_ms = Some(now);
                    } else {
                        order.trailing_ms = Some(now);
                    }
                    order.update_ms = now;
                }
                Event::Trade(trade) => self.record_trade(trade, &mut changes),
                Event::Amended {
                    market,
                    order_id,
                    quantity,
                } => {
                    let Some(order) = self.touched(&mut changes, (*market, *order_id)) else {
                        continue;
                    };
                    order.orig_qty = *quantity;
                    if let Command::Amend {
                        client_order_id: Some(name),
                        time_ms,
                        ..
                    } = command
                    {
                        order.client_order_id = name.clone();
                        order.update_ms = *time_ms;
                    }
                }
                Event::Prevented(prevention) => changes.prevented.push(*prevention),
                // An order's state after each execution is also in its
                // `Order` events, which the history follows.
                Event::Rejected(_)
                | Event::PartRefused(_)
                | Event::Balance { .. }
                | Event::Deposited { .. }
                | Event::Level { .. }
                | Event::Execution(_) => {}
                Event::Withdrawal {
                    withdrawal_id,
                    stage: WithdrawalStage::Requested,
                    ..
                } => {
                    if let Command::Withdraw {
                        client_id: Some(name),
                        ..
                    } = command
                    {
                        changes.withdrawal_client_id = Some((*withdrawal_id, name.clone()));
                    }
                }
                Event::Withdrawal {
                    withdrawal_id,
                    stage: WithdrawalStage::Completed | WithdrawalStage::Failed,
                    ..
                } => {
                    // Ended: its transactions are stored, none is added.
                    self.signed.remove(withdrawal_id);
                }
                Event::Withdrawal { .. } => {}
                Event::WithdrawalSigned {
                    withdrawal_id,
                    nonce,
                } => {
                    if let Command::WithdrawalSigned { tx, .. } = command {
                        let row = self.signed.entry(*withdrawal_id).or_default();
                        row.nonce = *nonce;
                        row.sent.push(weiport_storage::SentTx {
                            hash: tx.hash.into(),
                            max_fee: tx.max_fee,
                            tip: tx.tip,
                            raw: tx.raw.to_vec(),
                        });
                        changes.withdrawal_tx = Some((*withdrawal_id, row.clone()));
                    }
                }
                Event::DepositAddress { account, address } => {
                    changes.deposit_address = Some((*account, *address));
                }
            }
        }
        for (order, _) in &changes.orders {
            if order.is_open() {
                self.open
                    .insert((order.market, order.order_id), Arc::new(order.clone()));
            }
        }
        changes
    }

    fn record_trade(&mut self, trade: &Trade, changes: &mut Changes) {
        changes.trades.push(*trade);
        let Some(tape) = self.tapes.get_mut(usize::from(trade.market.0)) else {
            return;
        };
        let agg = match &mut tape.last_agg {
            Some(agg)
                if agg.taker_order == trade.taker.0
                    && agg.price == trade.price.units()
                    && agg.last_trade + 1 == trade.trade_id =>
            {
                agg.quantity = agg.quantity.saturating_add(trade.quantity.units());
                agg.last_trade = trade.trade_id;
                *agg
            }
            last => {
                let agg = AggTradeRow {
                    id: last.map_or(1, |a| a.id + 1),
                    price: trade.price.units(),
                    quantity: trade.quantity.units(),
                    first_trade: trade.trade_id,
                    last_trade: trade.trade_id,
                    time_ms: trade.time_ms,
                    buyer_is_maker: trade.taker_side == Side::Sell,
                    taker_order: trade.taker.0,
                };
                *last = Some(agg);
                agg
            }
        };
        upsert(&mut changes.aggs, trade.market, agg, |a| a.id);
        let open_time = trade.time_ms - trade.time_ms % CANDLE_MS;
        let single = candle_of(trade, open_time);
        let candle = grow(&mut tape.candle, open_time, &single);
        upsert(&mut changes.candles, trade.market, candle, |c| c.open_time);
        for (current, span) in tape.coarse.iter_mut().zip(COARSE) {
            let open_time = trade.time_ms - trade.time_ms % span.millis();
            let candle = grow(current, open_time, &single);
            match changes
                .coarse
                .iter_mut()
                .find(|(m, s, c)| *m == trade.market && *s == span && c.open_time == open_time)
            {
                Some(entry) => entry.2 = candle,
                None => changes.coarse.push((trade.market, span, candle)),
            }
        }
    }
}

/// Replaces the entry with the same market and key, or appends.
fn upsert<T: Copy>(rows: &mut Vec<(MarketId, T)>, market: MarketId, row: T, key: fn(&T) -> u64) {
    match rows
        .iter_mut()
        .find(|(m, r)| *m == market && key(r) == key(&row))
    {
        Some(entry) => entry.1 = row,
        None => rows.push((market, row)),
    }
}

/// The open orders written as a list of entries, each order once.
mod shared_orders {
    use std::collections::HashMap;
    use std::sync::Arc;

    use serde::{Deserialize, Deserializer, Serializer};

    use crate::catalog::MarketId;
    use crate::history::OrderView;

    type Open = HashMap<(MarketId, u64), Arc<OrderView>>;

    /// In the order of their keys: on the snapshot's own thread, and a
    /// snapshot's bytes then follow from its state.
    pub(super) fn serialize<S: Serializer>(open: &Open, serializer: S) -> Result<S::Ok, S::Error> {
        let mut entries: Vec<_> = open.iter().collect();
        entries.sort_unstable_by_key(|(key, _)| **key);
        serializer.collect_seq(entries.into_iter().map(|(key, order)| (key, &**order)))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Open, D::Error> {
        let entries = Vec::<((MarketId, u64), OrderView)>::deserialize(deserializer)?;
        Ok(entries
            .into_iter()
            .map(|(key, order)| (key, Arc::new(order)))
            .collect())
    }
}
