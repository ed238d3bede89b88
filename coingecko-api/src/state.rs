//! What every route shares: the exchange's market data, the coin table and
//! the `simple/price` answers kept for reuse.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLockReadGuard};

use axum::body::Bytes;
use axum::extract::State;
use weiport_exchange::Catalog;
use weiport_exchange::history::History;
use weiport_exchange::view::View;

use crate::coins::CoinTable;

/// What the price face reads of the exchange.
pub trait Markets: Send + Sync + 'static {
    /// Markets and assets.
    fn catalog(&self) -> &Catalog;
    /// The current market data.
    fn view(&self) -> RwLockReadGuard<'_, View>;
    /// Stored candles.
    fn history(&self) -> &History;
}

/// The state behind every route.
pub(crate) struct PriceFace<M> {
    pub(crate) markets: Arc<M>,
    pub(crate) coins: CoinTable,
    /// Recent `simple/price` answers by query string.
    pub(crate) answers: Mutex<HashMap<String, Answer>>,
}

/// A `simple/price` answer and the market data it was made from: it stays
/// right until a command changes the view or a minute passes (the 24 h
/// window moves by one-minute candles).
pub(crate) struct Answer {
    pub(crate) sequence: u64,
    pub(crate) minute: u64,
    pub(crate) body: Bytes,
}

/// Distinct queries kept; beyond, the cache starts over.
pub(crate) const MAX_ANSWERS: usize = 1024;

/// The extractor of the shared state.
pub(crate) type Shared<M> = State<Arc<PriceFace<M>>>;
