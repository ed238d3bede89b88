//! The history's rows and their byte layout: a version byte, then
//! big-endian fields; optional parts appended as (tag, fields), so rows
//! written before a part existed still read.

use crate::StorageError;
use crate::record::{Reader, Writer};

/// An order as the history keeps it; enums are small integers the exchange defines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderRow {
    /// Per-market order id.
    pub order_id: u64,
    /// Owner.
    pub account: u64,
    /// Client order id.
    pub client_order_id: String,
    /// Side tag.
    pub side: u8,
    /// Order type tag.
    pub order_type: u8,
    /// Time-in-force tag.
    pub time_in_force: u8,
    /// Self-trade prevention tag.
    pub stp: u8,
    /// Status tag.
    pub status: u8,
    /// Limit price in 10^-8 units (zero for market orders).
    pub price: u64,
    /// Ordered base quantity.
    pub orig_qty: u64,
    /// Ordered quote quantity.
    pub orig_quote_qty: u64,
    /// Filled base quantity.
    pub executed: u64,
    /// Filled quote quantity.
    pub cumulative_quote: u64,
    /// Placement time, ms.
    pub time_ms: u64,
    /// Last change, ms.
    pub update_ms: u64,
    /// Conditional orders only: their trigger and when it worked.
    pub conditional: Option<ConditionalRow>,
    /// Orders of an order list: its id.
    pub order_list_id: Option<u64>,
}

/// An order list as the history keeps it; its state is its orders'.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListRow {
    /// List id (one sequence over every market).
    pub list_id: u64,
    /// Owner.
    pub account: u64,
    /// Market of its orders.
    pub symbol: String,
    /// Contingency tag.
    pub contingency: u8,
    /// The list's client id.
    pub list_client_id: String,
    /// Its orders' ids, working order first.
    pub order_ids: Vec<u64>,
    /// Placement time, ms.
    pub time_ms: u64,
}

impl ListRow {
    /// Version byte, then the fields.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        put_u64s(&mut w, &[self.list_id, self.account, self.time_ms]);
        w.u8(self.contingency);
        w.bytes(self.symbol.as_bytes());
        w.bytes(self.list_client_id.as_bytes());
        w.u8(self.order_ids.len() as u8);
        put_u64s(&mut w, &self.order_ids);
        w.0
    }

    /// Inverse of [`ListRow::encode`].
    pub fn decode(bytes: &[u8]) -> Result<Self, StorageError> {
        let mut r = Reader::new(bytes, "order list row")?;
        let [list_id, account, time_ms] = take_u64s(&mut r)?;
        let contingency = r.u8()?;
        let symbol = r.string()?;
        let list_client_id = r.string()?;
        let order_ids = (0..r.u8()?).map(|_| r.u64()).collect::<Result<_, _>>()?;
        r.finish()?;
        Ok(Self {
            list_id,
            account,
            symbol,
            contingency,
            list_client_id,
            order_ids,
            time_ms,
        })
    }
}

/// What a conditional order adds to its row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ConditionalRow {
    /// Stop price in 10^-8 units.
    pub stop_price: Option<u64>,
    /// Trailing delta in basis points.
    pub trailing_delta: Option<u64>,
    /// When it was triggered and began working, ms.
    pub working_ms: Option<u64>,
    /// When a trailing order began tracking the price, ms.
    pub trailing_ms: Option<u64>,
}

/// Tag of the conditional part appended to an order row.
const CONDITIONAL_PART: u8 = 1;
/// Tag of the order-list part appended to an order row.
const LIST_PART: u8 = 2;

/// One trade between a maker and a taker order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TradeRow {
    /// Per-market trade id.
    pub trade_id: u64,
    /// Price in 10^-8 units.
    pub price: u64,
    /// Base quantity.
    pub quantity: u64,
    /// Quote quantity.
    pub quote_quantity: u64,
    /// Maker order id and account.
    pub maker: (u64, u64),
    /// Taker order id and account.
    pub taker: (u64, u64),
    /// Whether the taker bought.
    pub taker_buys: bool,
    /// Maker's fee, in what it received.
    pub maker_fee: u64,
    /// Taker's fee, in what it received.
    pub taker_fee: u64,
    /// Time, ms.
    pub time_ms: u64,
}

/// Consecutive trades of one taker order at one price.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AggTradeRow {
    /// Per-market aggregate id.
    pub id: u64,
    /// Price.
    pub price: u64,
    /// Summed base quantity.
    pub quantity: u64,
    /// First trade id.
    pub first_trade: u64,
    /// Last trade id.
    pub last_trade: u64,
    /// Time of the first trade, ms.
    pub time_ms: u64,
    /// Whether the buyer was the maker.
    pub buyer_is_maker: bool,
    /// The taker order, which the next trade must share to join.
    pub taker_order: u64,
}

/// Trading in one minute of one market.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct CandleRow {
    /// Start of the minute, ms.
    pub open_time: u64,
    /// First trade's price.
    pub open: u64,
    /// Highest price.
    pub high: u64,
    /// Lowest price.
    pub low: u64,
    /// Last trade's price.
    pub close: u64,
    /// Base volume.
    pub volume: u64,
    /// Quote volume.
    pub quote_volume: u64,
    /// Base volume bought by takers.
    pub taker_buy_volume: u64,
    /// Quote volume paid by buying takers.
    pub taker_buy_quote_volume: u64,
    /// First trade id.
    pub first_trade: u64,
    /// Last trade id.
    pub last_trade: u64,
}

impl CandleRow {
    /// Trades in the candle.
    pub fn trades(&self) -> u64 {
        self.last_trade + 1 - self.first_trade
    }
}

fn put_u64s(w: &mut Writer, values: &[u64]) {
    for v in values {
        w.u64(*v);
    }
}

fn take_u64s<const N: usize>(r: &mut Reader<'_>) -> Result<[u64; N], StorageError> {
    let mut out = [0; N];
    for v in &mut out {
        *v = r.u64()?;
    }
    Ok(out)
}

impl OrderRow {
    /// Version byte, then the fields.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        for tag in [
            self.side,
            self.order_type,
            self.time_in_force,
            self.stp,
            self.status,
        ] {
            w.u8(tag);
        }
        put_u64s(
            &mut w,
            &[
                self.order_id,
                self.account,
                self.price,
                self.orig_qty,
                self.orig_quote_qty,
                self.executed,
                self.cumulative_quote,
                self.time_ms,
                self.update_ms,
            ],
        );
        w.bytes(self.client_order_id.as_bytes());
        // Optional parts follow as (tag, fields); rows written before a part
        // existed simply end earlier.
        if let Some(c) = &self.conditional {
            w.u8(CONDITIONAL_PART);
            for value in [c.stop_price, c.trailing_delta, c.working_ms, c.trailing_ms] {
                w.opt_u64(value);
            }
        }
        if let Some(list_id) = self.order_list_id {
            w.u8(LIST_PART);
            w.u64(list_id);
        }
        w.0
    }

    /// Inverse of [`OrderRow::encode`].
    pub fn decode(bytes: &[u8]) -> Result<Self, StorageError> {
        let mut r = Reader::new(bytes, "order row")?;
        let (side, order_type, time_in_force, stp, status) =
            (r.u8()?, r.u8()?, r.u8()?, r.u8()?, r.u8()?);
        let [
            order_id,
            account,
            price,
            orig_qty,
            orig_quote_qty,
            executed,
            cumulative_quote,
            time_ms,
            update_ms,
        ] = take_u64s(&mut r)?;
        let client_order_id = r.string()?;
        let (mut conditional, mut order_list_id) = (None, None);
        while !r.at_end() {
            match r.u8()? {
                LIST_PART => order_list_id = Some(r.u64()?),
                CONDITIONAL_PART => {
                    conditional = Some(ConditionalRow {
                        stop_price: r.opt_u64()?,
                        trailing_delta: r.opt_u64()?,
                        working_ms: r.opt_u64()?,
                        trailing_ms: r.opt_u64()?,
                    });
                }
                _ => return Err(r.corrupt()),
            }
        }
        r.finish()?;
        Ok(Self {
            order_id,
            account,
            client_order_id,
            side,
            order_type,
            time_in_force,
            stp,
            status,
            price,
            orig_qty,
            orig_quote_qty,
            executed,
            cumulative_quote,
            time_ms,
            update_ms,
            conditional,
            order_list_id,
        })
    }
}

impl TradeRow {
    /// Version byte, then the fields.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u8(u8::from(self.taker_buys));
        put_u64s(
            &mut w,
            &[
                self.trade_id,
                self.price,
                self.quantity,
                self.quote_quantity,
                self.maker.0,
                self.maker.1,
                self.taker.0,
                self.taker.1,
                self.maker_fee,
                self.taker_fee,
                self.time_ms,
            ],
        );
        w.0
    }

    /// Inverse of [`TradeRow::encode`].
    pub fn decode(bytes: &[u8]) -> Result<Self, StorageError> {
        let mut r = Reader::new(bytes, "trade row")?;
        let taker_buys = r.u8()? != 0;
        let [
            trade_id,
            price,
            quantity,
            quote_quantity,
            maker_order,
            maker_account,
            taker_order,
            taker_account,
            maker_fee,
            taker_fee,
            time_ms,
        ] = take_u64s(&mut r)?;
        r.finish()?;
        Ok(Self {
            trade_id,
            price,
            quantity,
            quote_quantity,
            maker: (maker_order, maker_account),
            taker: (taker_order, taker_account),
            taker_buys,
            maker_fee,
            taker_fee,
            time_ms,
        })
    }
}

impl AggTradeRow {
    /// Version byte, then the fields.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u8(u8::from(self.buyer_is_maker));
        put_u64s(
            &mut w,
            &[
                self.id,
                self.price,
                self.quantity,
                self.first_trade,
                self.last_trade,
                self.time_ms,
                self.taker_order,
            ],
        );
        w.0
    }

    /// Inverse of [`AggTradeRow::encode`].
    pub fn decode(bytes: &[u8]) -> Result<Self, StorageError> {
        let mut r = Reader::new(bytes, "aggregate trade row")?;
        let buyer_is_maker = r.u8()? != 0;
        let [
            id,
            price,
            quantity,
            first_trade,
            last_trade,
            time_ms,
            taker_order,
        ] = take_u64s(&mut r)?;
        r.finish()?;
        Ok(Self {
            id,
            price,
            quantity,
            first_trade,
            last_trade,
            time_ms,
            buyer_is_maker,
            taker_order,
        })
    }
}

impl CandleRow {
    /// Version byte, then the fields.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        put_u64s(
            &mut w,
            &[
                self.open_time,
                self.open,
                self.high,
                self.low,
                self.close,
                self.volume,
                self.quote_volume,
                self.taker_buy_volume,
                self.taker_buy_quote_volume,
                self.first_trade,
                self.last_trade,
            ],
        );
        w.0
    }

    /// Inverse of [`CandleRow::encode`].
    pub fn decode(bytes: &[u8]) -> Result<Self, StorageError> {
        let mut r = Reader::new(bytes, "candle row")?;
        let [
            open_time,
            open,
            high,
            low,
            close,
            volume,
            quote_volume,
            taker_buy_volume,
            taker_buy_quote_volume,
            first_trade,
            last_trade,
        ] = take_u64s(&mut r)?;
        r.finish()?;
        Ok(Self {
            open_time,
            open,
            high,
            low,
            close,
            volume,
            quote_volume,
            taker_buy_volume,
            taker_buy_quote_volume,
            first_trade,
            last_trade,
        })
    }
}

/// A match self-trade prevention stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreventedRow {
    /// Per-market prevented-match id.
    pub id: u64,
    /// Taker order id and account.
    pub taker: (u64, u64),
    /// Maker order id and account.
    pub maker: (u64, u64),
    /// The maker's price.
    pub price: u64,
    /// The taker's self-trade prevention tag.
    pub mode: u8,
    /// What the taker lost.
    pub taker_quantity: u64,
    /// What the maker lost.
    pub maker_quantity: u64,
    /// Time, ms.
    pub time_ms: u64,
}

impl PreventedRow {
    /// Version byte, then the fields.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u8(self.mode);
        put_u64s(
            &mut w,
            &[
                self.id,
                self.taker.0,
                self.taker.1,
                self.maker.0,
                self.maker.1,
                self.price,
                self.taker_quantity,
                self.maker_quantity,
                self.time_ms,
            ],
        );
        w.0
    }

    /// Inverse of [`PreventedRow::encode`].
    pub fn decode(bytes: &[u8]) -> Result<Self, StorageError> {
        let mut r = Reader::new(bytes, "prevented match row")?;
        let mode = r.u8()?;
        let [
            id,
            taker_order,
            taker_account,
            maker_order,
            maker_account,
            price,
            taker_quantity,
            maker_quantity,
            time_ms,
        ] = take_u64s(&mut r)?;
        r.finish()?;
        Ok(Self {
            id,
            taker: (taker_order, taker_account),
            maker: (maker_order, maker_account),
            price,
            mode,
            taker_quantity,
            maker_quantity,
            time_ms,
        })
    }
}
