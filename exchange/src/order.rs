//! Orders as the engine takes them: side, type, time in force and the
//! validated new order.

use crate::amount::Amount;
use crate::catalog::MarketId;
use crate::market::StpMode;

/// BUY or SELL.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Side {
    /// Buy base with quote.
    #[default]
    Buy,
    /// Sell base for quote.
    Sell,
}

/// Supported order types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum OrderType {
    /// Limit order.
    Limit,
    /// Market order.
    Market,
    /// Post-only limit order.
    LimitMaker,
    /// A market order once the stop condition is met.
    StopLoss,
    /// A limit order once the stop condition is met.
    StopLossLimit,
    /// A market order once the take-profit condition is met.
    TakeProfit,
    /// A limit order once the take-profit condition is met.
    TakeProfitLimit,
}

impl OrderType {
    /// Whether it waits for a trigger before it works.
    pub fn is_conditional(self) -> bool {
        matches!(
            self,
            Self::StopLoss | Self::StopLossLimit | Self::TakeProfit | Self::TakeProfitLimit
        )
    }

    /// What it works as once triggered (itself if not conditional).
    pub fn working(self) -> Self {
        match self {
            Self::StopLoss | Self::TakeProfit => Self::Market,
            Self::StopLossLimit | Self::TakeProfitLimit => Self::Limit,
            other => other,
        }
    }

    /// Whether it carries a limit price (limit orders, post-only, *_LIMIT).
    pub fn has_price(self) -> bool {
        self.working() != Self::Market
    }
}

/// Time in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum TimeInForce {
    /// Good till canceled.
    Gtc,
    /// Immediate or cancel.
    Ioc,
    /// Fill or kill.
    Fok,
}

/// How much of the order result is returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ResponseType {
    /// Ids only.
    Ack,
    /// Plus status and amounts.
    Result,
    /// Plus fills.
    Full,
}

/// When a conditional order starts working: a fixed stop price, a trailing
/// delta, or both (the delta then tracks from the stop price on).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Trigger {
    /// Last-trade price that triggers (or, with a delta, starts tracking).
    pub stop_price: Option<Amount>,
    /// Trailing delta in basis points (1 = 0.01 %).
    pub trailing_delta: Option<u32>,
}

impl Trigger {
    /// Whether the stop condition is met at `price` for an order of
    /// `order_type` and `side`: STOP_LOSS BUY and TAKE_PROFIT SELL wait for
    /// the price to rise to the stop, the other two for it to fall to it.
    pub fn reached(stop: Amount, price: Amount, order_type: OrderType, side: Side) -> bool {
        if Self::above(order_type, side) {
            price >= stop
        } else {
            price <= stop
        }
    }

    /// Whether the stop price lies above the market (STOP_LOSS BUY,
    /// TAKE_PROFIT SELL and their limit forms).
    pub fn above(order_type: OrderType, side: Side) -> bool {
        let stop_loss = matches!(order_type, OrderType::StopLoss | OrderType::StopLossLimit);
        stop_loss == (side == Side::Buy)
    }
}

/// A validated new order.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
    /// Conditional orders only: what triggers them.
    pub trigger: Option<Trigger>,
}

/// How the orders of a list depend on each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Contingency {
    /// One-cancels-the-other: two orders; once either fills or triggers,
    /// the other expires.
    Oco,
    /// One-triggers-the-other: a working order, and one placed once it fills.
    Oto,
    /// A working order, and an OCO pair placed once it fills.
    Otoco,
}

/// A validated new order list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewOrderList {
    /// Market of every order in it.
    pub market: MarketId,
    /// How its orders depend on each other.
    pub contingency: Contingency,
    /// OTO and OTOCO: the order that works first (LIMIT or LIMIT_MAKER).
    pub working: Option<NewOrder>,
    /// OCO: its two orders, the one above the market first; OTO: the order
    /// placed once the working one fills; OTOCO: the OCO pair placed then.
    pub pending: Vec<NewOrder>,
    /// The list's client id, if given.
    pub list_client_id: Option<String>,
}

impl NewOrderList {
    /// Its orders in id order: the working one, then the pending ones.
    pub fn orders(&self) -> impl Iterator<Item = &NewOrder> {
        self.working.iter().chain(&self.pending)
    }
}
