//! A coin's price in a vs-currency and its 24-hour figures, from the
//! exchange's market data: through the market that trades the pair, or the
//! one that trades it the other way round (prices inverted).

use serde_json::value::RawValue;
use weiport_exchange::view::View;
use weiport_exchange::{Catalog, MarketId};

use crate::decimal::Decimal;

/// One day in ms.
pub(crate) const DAY_MS: u64 = 86_400_000;

/// How a coin is priced in a vs-currency's asset.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Pair {
    /// The coin is that asset.
    Same,
    /// A market with the coin as base and the vs asset as quote.
    Direct(MarketId),
    /// Only the other way round: prices are inverted.
    Inverse(MarketId),
}

/// How `asset` is priced in `vs_asset`, if any market trades the two.
pub(crate) fn pair(catalog: &Catalog, asset: &str, vs_asset: &str) -> Option<Pair> {
    if asset == vs_asset {
        return Some(Pair::Same);
    }
    let find = |base: &str, quote: &str| {
        catalog
            .markets()
            .find(|(_, m)| m.base == base && m.quote == quote)
            .map(|(id, _)| id)
    };
    find(asset, vs_asset)
        .map(Pair::Direct)
        .or_else(|| find(vs_asset, asset).map(Pair::Inverse))
}

/// A signed exact figure.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Signed {
    negative: bool,
    magnitude: Decimal,
}

impl Signed {
    fn of(later: u128, earlier: u128, scale: fn(u128) -> Decimal) -> Self {
        Self {
            negative: later < earlier,
            magnitude: scale(later.abs_diff(earlier)),
        }
    }

    /// As a JSON number.
    pub(crate) fn to_json(self) -> Box<RawValue> {
        let sign = if self.negative && self.magnitude != Decimal::amount(0) {
            "-"
        } else {
            ""
        };
        RawValue::from_string(format!("{sign}{}", self.magnitude)).expect("a JSON number")
    }
}

/// A coin's price in a vs-currency, with its 24-hour figures.
pub(crate) struct Quote {
    pub(crate) price: Decimal,
    /// Traded in the last 24 h, in the vs asset.
    pub(crate) volume: Decimal,
    pub(crate) high: Option<Decimal>,
    pub(crate) low: Option<Decimal>,
    pub(crate) change: Option<Signed>,
    pub(crate) change_percent: Option<f64>,
    /// When the price was made (ms): its last trade; none for a coin in itself.
    pub(crate) updated_ms: Option<u64>,
}

/// `1 / amount` of an exchange amount (eight decimals); 0 for a zero amount.
pub(crate) fn inverse(units: u64) -> Decimal {
    Decimal::inverse_of_amount(units).unwrap_or(Decimal::amount(0))
}

/// The quote of `pair` at `now`, if its market has traded.
pub(crate) fn quote(view: &View, pair: Pair, now: u64) -> Option<Quote> {
    let (market, inverted) = match pair {
        Pair::Same => {
            return Some(Quote {
                price: Decimal::one(),
                volume: Decimal::amount(0),
                high: Some(Decimal::one()),
                low: Some(Decimal::one()),
                change: None,
                change_percent: Some(0.0),
                updated_ms: None,
            });
        }
        Pair::Direct(market) => (market, false),
        Pair::Inverse(market) => (market, true),
    };
    let book = view.market(market)?;
    let last = book.last_trade?;
    let day = book.window(now, DAY_MS);
    let percent = |later: u64, earlier: u64| {
        (earlier != 0).then(|| (later as f64 - earlier as f64) * 100.0 / earlier as f64)
    };
    Some(if inverted {
        Quote {
            price: inverse(last.price.units()),
            volume: Decimal::amount(day.map_or(0, |d| d.volume)),
            high: day.map(|d| inverse(d.low)),
            low: day.map(|d| inverse(d.high)),
            change: day.map(|d| {
                let units = |price: u64| 10u128.pow(26) / u128::from(price.max(1));
                Signed::of(units(d.close), units(d.open), Decimal::inverse_units)
            }),
            // 1/close against 1/open.
            change_percent: day.and_then(|d| percent(d.open, d.close)),
            updated_ms: Some(last.time_ms),
        }
    } else {
        Quote {
            price: Decimal::amount(last.price.units()),
            volume: Decimal::amount(day.map_or(0, |d| d.quote_volume)),
            high: day.map(|d| Decimal::amount(d.high)),
            low: day.map(|d| Decimal::amount(d.low)),
            change: day.map(|d| {
                Signed::of(u128::from(d.close), u128::from(d.open), |units| {
                    Decimal::amount(units as u64)
                })
            }),
            change_percent: day.and_then(|d| percent(d.close, d.open)),
            updated_ms: Some(last.time_ms),
        }
    })
}
