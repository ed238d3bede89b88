//! What the exchange's benches share: a market deep enough for them and a
//! resting limit order.

use std::sync::Arc;

use weiport_exchange::market::{Market, StpMode};
use weiport_exchange::order::{NewOrder, OrderType, ResponseType, Side, TimeInForce};
use weiport_exchange::{Amount, Catalog, MarketId};

/// The one market every bench trades.
pub const MARKET: MarketId = MarketId(0);

/// ETHUSDT, with room for a million orders and no self-trade prevention.
pub fn catalog() -> Arc<Catalog> {
    Arc::new(Catalog::new(vec![Market {
        max_num_orders: 1_000_000,
        default_stp: StpMode::None,
        allowed_stp: vec![StpMode::None],
        ..weiport_exchange::market::tests_support::eth_usdt()
    }]))
}

/// A good-till-cancelled limit order of 0.01 on [`MARKET`].
pub fn limit(side: Side, price: Amount) -> NewOrder {
    NewOrder {
        market: MARKET,
        side,
        order_type: OrderType::Limit,
        time_in_force: TimeInForce::Gtc,
        quantity: Some("0.01".parse().unwrap()),
        quote_quantity: None,
        price: Some(price),
        client_order_id: None,
        response_type: ResponseType::Ack,
        stp: StpMode::None,
        trigger: None,
    }
}
