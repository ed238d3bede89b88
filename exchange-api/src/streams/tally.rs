//! The exchange's figures for the operator's dashboard and alerts: orders
//! accepted, trades, open stream connections and the ones dropped for not
//! reading, counted where the committed batches and the connections pass.

use weiport_exchange::engine::Event;
use weiport_exchange::sequencer::Outcome;

/// Orders the engine accepted (counter).
pub(super) const ORDERS: &str = "weiport_exchange_orders_total";
/// Trades (counter).
pub(super) const TRADES: &str = "weiport_exchange_trades_total";
/// Open stream and WebSocket API connections (gauge).
pub(super) const CONNECTIONS: &str = "weiport_stream_connections";
/// Stream connections closed because they stopped reading (counter).
pub(super) const SLOW_CLOSED: &str = "weiport_stream_connections_closed_slow_total";

/// Registers every figure at zero, so a dashboard and an alert have a
/// series from the start.
pub(super) fn register() {
    metrics::describe_counter!(ORDERS, "Orders the matching engine accepted");
    metrics::describe_counter!(TRADES, "Trades");
    metrics::describe_gauge!(CONNECTIONS, "Open stream and WebSocket API connections");
    metrics::describe_counter!(
        SLOW_CLOSED,
        "Stream connections closed because their buffer filled (the client stopped reading)"
    );
    metrics::counter!(ORDERS).increment(0);
    metrics::counter!(TRADES).increment(0);
    metrics::counter!(SLOW_CLOSED).increment(0);
    metrics::gauge!(CONNECTIONS).increment(0.0);
}

/// Counts a committed command's accepted orders and trades.
pub(super) fn count(outcome: &Outcome) {
    let (mut orders, mut trades) = (0u64, 0u64);
    for event in &outcome.events {
        match event {
            Event::Placed { .. } => orders += 1,
            Event::Trade(_) => trades += 1,
            _ => {}
        }
    }
    if orders > 0 {
        metrics::counter!(ORDERS).increment(orders);
    }
    if trades > 0 {
        metrics::counter!(TRADES).increment(trades);
    }
}

/// An open connection, counted in [`CONNECTIONS`] while it lives.
#[derive(Debug)]
pub(crate) struct Open(());

impl Open {
    pub(crate) fn new() -> Self {
        metrics::gauge!(CONNECTIONS).increment(1.0);
        Self(())
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        metrics::gauge!(CONNECTIONS).decrement(1.0);
    }
}
