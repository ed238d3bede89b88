//! Orders as the engine takes them: side, type, time in force and the
//! validated new order.

use crate::amount::Amount;
use crate::catalog::MarketId;
use crate::market::StpMode;

/// BUY or SELL.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Side {
    /// Buy base with quote.
    #[default]
    Buy,
    /// Sell base for quote.
    Sell,
}

/// Supported order types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderType {
    /// Limit order.
    Limit,
    /// Market order.
    Market,
    /// Post-only limit order.
    LimitMaker,
}

/// Time in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeInForce {
    /// Good till canceled.
    Gtc,
    /// Immediate or cancel.
    Ioc,
    /// Fill or kill.
    Fok,
}

/// How much of the order result is returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResponseType {
    /// Ids only.
    Ack,
    /// Plus status and amounts.
    Result,
    /// Plus fills.
    Full,
}

/// A validated new order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewOrder {
    /// Market.
    pub market: MarketId,
    /// Side.
    pub side: Side,
    /// Type.
    pub order_type: OrderType,
    /// Time in force (GTC for market orders, as Binance reports).
    pub time_in_force: TimeInForce,
    /// Base quantity, unless a quote quantity was given.
    pub quantity: Option<Amount>,
    /// MARKET only: quote amount to spend or receive.
    pub quote_quantity: Option<Amount>,
    /// Limit price.
    pub price: Option<Amount>,
    /// Client order id, if given.
    pub client_order_id: Option<String>,
    /// Response detail.
    pub response_type: ResponseType,
    /// Self-trade prevention.
    pub stp: StpMode,
}
