//! What each order's owner is told: one execution per thing that happened
//! to the order (accepted, began working, amended, each fill, a prevented
//! match, its end), each with the order's state right after, so that no
//! consumer rebuilds them from the engine's other events.

use super::*;

/// Under which id an order starts, and whether its owner is told here that
/// it was accepted.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Start {
    /// A new order: the next id, announced with [`Event::Placed`].
    New,
    /// An order of a list being placed, under the id the list announced.
    Listed(u64),
    /// An order that began working (triggered, or placed by its list) under
    /// its own id: its owner was told so where it began.
    Triggered(u64),
}

impl Start {
    /// Whether the order is accepted here, rather than beginning to work.
    pub(crate) fn accepts(self) -> bool {
        !matches!(self, Self::Triggered(_))
    }
}

/// How an open order ends.
#[derive(Debug, Clone, Copy)]
pub(crate) enum End {
    /// Nothing left to fill (its owner is told with the fill).
    Filled,
    /// Canceled by its owner.
    Canceled,
    /// Expired: by its time in force, by its list, or unplaceable.
    Expired,
    /// Ended by self-trade prevention in this match.
    Prevented(PreventedMatch),
}

impl End {
    /// The order's status after it.
    pub(crate) fn status(self) -> OrderStatus {
        match self {
            Self::Filled => OrderStatus::Filled,
            Self::Canceled => OrderStatus::Canceled,
            Self::Expired => OrderStatus::Expired,
            Self::Prevented(_) => OrderStatus::ExpiredInMatch,
        }
    }

    /// What the order's owner is told of it.
    pub(crate) fn execution(self) -> Option<ExecutionKind> {
        match self {
            Self::Filled => None,
            Self::Canceled => Some(ExecutionKind::Canceled),
            Self::Expired => Some(ExecutionKind::Expired),
            Self::Prevented(prevented) => Some(ExecutionKind::Prevented(prevented)),
        }
    }
}

/// An execution of an order that has filled nothing (waiting, pending in a
/// list, or just accepted).
pub(crate) fn unfilled(
    (market, order_id, account): (MarketId, u64, AccountId),
    kind: ExecutionKind,
    status: OrderStatus,
    time_ms: u64,
) -> Event {
    Event::Execution(Execution {
        market,
        order_id,
        account,
        kind,
        status,
        executed: Amount::ZERO,
        cumulative_quote: Amount::ZERO,
        time_ms,
    })
}

impl Order {
    /// An execution of this order, with what it has filled so far.
    pub(crate) fn execution(
        &self,
        market: MarketId,
        kind: ExecutionKind,
        status: OrderStatus,
        time_ms: u64,
    ) -> Event {
        Event::Execution(Execution {
            market,
            order_id: self.order_id,
            account: self.account,
            kind,
            status,
            executed: self.executed,
            cumulative_quote: self.cumulative_quote,
            time_ms,
        })
    }
}

/// A taker's executions, held while it matches: its status after its last
/// fill is known only once matching is over. One buffer, reused.
#[derive(Debug, Default)]
pub(crate) struct TakerLog {
    /// Each fill, with the taker's filled base and quote after it.
    pub(crate) fills: Vec<(Fill, Amount, Amount)>,
    /// The last match self-trade prevention stopped for it.
    pub(crate) prevented: Option<PreventedMatch>,
    /// Whether DECREMENT took quantity off it.
    pub(crate) decremented: bool,
}

impl TakerLog {
    /// Empty, for the next taker.
    pub(crate) fn clear(&mut self) {
        self.fills.clear();
        self.prevented = None;
        self.decremented = false;
    }

    /// Tells the taker's owner what matching did, the taker now `status`:
    /// a DECREMENT that reduced a taker that rests (once, before its fills),
    /// each fill (partly filled but for the last, which shows `status` if
    /// the order filled or rests), and how it ended.
    pub(crate) fn tell(
        &mut self,
        market: MarketId,
        taker: &Order,
        status: OrderStatus,
        time_ms: u64,
        events: &mut Vec<Event>,
    ) {
        let rests = matches!(status, OrderStatus::New | OrderStatus::PartiallyFilled);
        if let Some(prevented) = self.prevented
            && self.decremented
            && rests
        {
            let kind = ExecutionKind::Prevented(prevented);
            events.push(taker.execution(market, kind, status, time_ms));
        }
        let last = self.fills.len();
        for (at, (fill, executed, cumulative_quote)) in self.fills.drain(..).enumerate() {
            let after = if at + 1 == last
                && matches!(status, OrderStatus::Filled | OrderStatus::PartiallyFilled)
            {
                status
            } else {
                OrderStatus::PartiallyFilled
            };
            events.push(Event::Execution(Execution {
                market,
                order_id: taker.order_id,
                account: taker.account,
                kind: ExecutionKind::Trade(fill),
                status: after,
                executed,
                cumulative_quote,
                time_ms,
            }));
        }
        let end = match status {
            OrderStatus::Expired => Some(ExecutionKind::Expired),
            OrderStatus::ExpiredInMatch => {
                Some(ExecutionKind::Prevented(self.prevented.expect(BROKEN)))
            }
            _ => None,
        };
        if let Some(kind) = end {
            events.push(taker.execution(market, kind, status, time_ms));
        }
    }
}
