//! How the model matches: an incoming order against the resting ones in
//! price-time priority, self-trade prevention by the taker's mode.

use super::*;

/// An incoming order while it matches.
#[derive(Debug, Clone)]
pub(super) struct Taker {
    pub(super) id: u64,
    pub(super) account: AccountId,
    pub(super) side: Side,
    /// None for MARKET.
    pub(super) limit: Option<Amount>,
    pub(super) stp: StpMode,
    /// Base still wanted; None for an order by quote amount.
    pub(super) base_left: Option<Amount>,
    /// Quote still to spend or receive; orders by quote amount only.
    pub(super) quote_left: Option<Amount>,
    pub(super) executed: Amount,
    pub(super) quote: Amount,
}

/// What an incoming order did to one resting order.
pub(super) enum Meeting {
    /// A fill at the resting order's price; `maker` as it is after it.
    Fill {
        maker: Resting,
        quantity: Amount,
        quote: Amount,
    },
    /// Self-trade prevention took `maker` off the book.
    Expired(Resting),
    /// Self-trade prevention stopped a match (recorded before its effect).
    Prevented(Prevention),
    /// DECREMENT took `quantity` off both: `maker` as it is after (off the
    /// book if nothing is left of it).
    Decremented { maker: Resting, quantity: Amount },
}

/// Matches `taker` against `book` by price-time priority at the resting
/// orders' prices, taking filled and expired resting orders off. Returns
/// what it met and whether self-trade prevention ended the taker.
pub(super) fn sweep(book: &mut Book, taker: &mut Taker, step: Amount) -> (Vec<Meeting>, bool) {
    let mut met = Vec::new();
    let makers = book.opposite(taker.side);
    loop {
        if taker.base_left == Some(Amount::ZERO) || taker.quote_left == Some(Amount::ZERO) {
            return (met, false);
        }
        let Some(maker) = makers.first_mut() else {
            return (met, false);
        };
        if beyond(taker.side, maker.price, taker.limit) {
            return (met, false);
        }
        // The taker's mode decides; a resting order's own mode no longer counts.
        if maker.account == taker.account && taker.stp != StpMode::None {
            // What the match would trade; a taker for a quote amount has no
            // base to compare, and under DECREMENT simply ends.
            let matched = taker
                .base_left
                .map_or(maker.remaining, |left| left.min(maker.remaining));
            let decrement = taker.stp == StpMode::Decrement && taker.base_left.is_some();
            let (expire_maker, expire_taker) = match taker.stp {
                StpMode::ExpireMaker => (true, false),
                StpMode::ExpireTaker => (false, true),
                StpMode::ExpireBoth => (true, true),
                _ if decrement => (matched == maker.remaining, Some(matched) == taker.base_left),
                _ => (false, true),
            };
            met.push(Meeting::Prevented(Prevention {
                // Market, id and time are the placing order's to give.
                market: MarketId(0),
                id: 0,
                taker: (taker.id, taker.account),
                maker: (maker.id, maker.account),
                price: maker.price,
                mode: taker.stp,
                taker_quantity: if expire_taker || decrement {
                    matched
                } else {
                    Amount::ZERO
                },
                maker_quantity: if decrement {
                    matched
                } else if expire_maker {
                    maker.remaining
                } else {
                    Amount::ZERO
                },
                time_ms: 0,
            }));
            if decrement {
                maker.remaining = maker.remaining.checked_sub(matched).expect("model: within");
                taker.base_left = taker
                    .base_left
                    .map(|l| l.checked_sub(matched).expect("model: within"));
                let maker = if maker.remaining.is_zero() {
                    makers.remove(0)
                } else {
                    maker.clone()
                };
                met.push(Meeting::Decremented {
                    maker,
                    quantity: matched,
                });
            } else if expire_maker {
                met.push(Meeting::Expired(makers.remove(0)));
            }
            if expire_taker {
                return (met, true);
            }
            continue;
        }
        let mut quantity = maker.remaining;
        if let Some(left) = taker.base_left {
            quantity = quantity.min(left);
        }
        if let Some(left) = taker.quote_left {
            let steps = whole_steps(left, maker.price, step);
            if steps.is_zero() {
                // A leftover too small for one step at the best price: the
                // quote amount counts as used (FILLED, as Binance).
                taker.quote_left = Some(Amount::ZERO);
                return (met, false);
            }
            quantity = quantity.min(steps);
        }
        let quote = mul(maker.price, quantity);
        // Priority forbids skipping to a worse price, so what the best one
        // cannot take ends the order; and a fill must move both assets.
        if quantity.is_zero() || quote.is_zero() {
            return (met, false);
        }
        let less = |left: Option<Amount>, used: Amount| {
            left.map(|l| {
                l.checked_sub(used)
                    .expect("model: never beyond what is left")
            })
        };
        taker.base_left = less(taker.base_left, quantity);
        taker.quote_left = less(taker.quote_left, quote);
        // A trial may add up past any amount; a placed order's totals stay
        // within its lock.
        taker.executed = taker.executed.saturating_add(quantity);
        taker.quote = taker.quote.saturating_add(quote);
        maker.remaining = maker
            .remaining
            .checked_sub(quantity)
            .expect("model: within it");
        maker.executed = sum(maker.executed, quantity);
        maker.quote = sum(maker.quote, quote);
        let maker = maker.clone();
        if maker.remaining.is_zero() {
            makers.remove(0);
        }
        met.push(Meeting::Fill {
            maker,
            quantity,
            quote,
        });
    }
}

/// Whether `price` is worse for an incoming order of `side` than its `limit`.
pub(super) fn beyond(side: Side, price: Amount, limit: Option<Amount>) -> bool {
    match (side, limit) {
        (Side::Buy, Some(limit)) => price > limit,
        (Side::Sell, Some(limit)) => price < limit,
        (_, None) => false,
    }
}
