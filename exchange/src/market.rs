//! Markets from configuration and the Binance filters every order must pass.

use serde::Deserialize;

use crate::amount::Amount;

/// Self-trade prevention modes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum StpMode {
    /// Trade with yourself.
    #[default]
    None,
    /// Expire the incoming order.
    ExpireTaker,
    /// Expire the resting order.
    ExpireMaker,
    /// Expire both.
    ExpireBoth,
    /// Both orders lose the quantity they would have traded; the smaller
    /// one (or both, if equal) ends.
    Decrement,
}

impl StpMode {
    /// From its name (`EXPIRE_MAKER`).
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "NONE" => Self::None,
            "EXPIRE_TAKER" => Self::ExpireTaker,
            "EXPIRE_MAKER" => Self::ExpireMaker,
            "EXPIRE_BOTH" => Self::ExpireBoth,
            "DECREMENT" => Self::Decrement,
            _ => return None,
        })
    }
}

/// One market, as configured (`[[exchange.markets]]`).
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Market {
    /// e.g. `ETHUSDT`.
    pub symbol: String,
    /// Base asset, e.g. `ETH`.
    pub base: String,
    /// Quote asset, e.g. `USDT`.
    pub quote: String,
    /// PRICE_FILTER tickSize.
    pub tick_size: Amount,
    /// PRICE_FILTER minPrice.
    pub min_price: Amount,
    /// PRICE_FILTER maxPrice.
    pub max_price: Amount,
    /// LOT_SIZE stepSize.
    pub step_size: Amount,
    /// LOT_SIZE minQty.
    pub min_qty: Amount,
    /// LOT_SIZE maxQty.
    pub max_qty: Amount,
    /// MARKET_LOT_SIZE maxQty (stepSize and minQty as LOT_SIZE).
    pub market_max_qty: Amount,
    /// NOTIONAL minNotional.
    pub min_notional: Amount,
    /// MAX_NUM_ORDERS.
    pub max_num_orders: u32,
    /// MAX_NUM_ALGO_ORDERS: conditional orders waiting for their trigger.
    #[serde(default = "defaults::max_num_algo_orders")]
    pub max_num_algo_orders: u32,
    /// TRAILING_DELTA: the smallest trailing delta, in basis points (above and below).
    #[serde(default = "defaults::min_trailing_delta")]
    pub min_trailing_delta: u32,
    /// TRAILING_DELTA: the largest trailing delta, in basis points.
    #[serde(default = "defaults::max_trailing_delta")]
    pub max_trailing_delta: u32,
    /// PERCENT_PRICE_BY_SIDE: a limit price at most this multiple of the
    /// five-minute average price (bids and asks alike).
    #[serde(default = "defaults::multiplier_up")]
    pub multiplier_up: Amount,
    /// PERCENT_PRICE_BY_SIDE: a limit price at least this multiple of it.
    #[serde(default = "defaults::multiplier_down")]
    pub multiplier_down: Amount,
    /// Maker fee rate, e.g. `0.001`.
    pub maker_fee: Amount,
    /// Taker fee rate.
    pub taker_fee: Amount,
    /// STP mode when the order names none.
    pub default_stp: StpMode,
    /// STP modes orders may name.
    pub allowed_stp: Vec<StpMode>,
}

/// Binance's values for the filters older configurations do not name.
mod defaults {
    use crate::amount::Amount;

    pub(super) fn max_num_algo_orders() -> u32 {
        5
    }
    pub(super) fn min_trailing_delta() -> u32 {
        10
    }
    pub(super) fn max_trailing_delta() -> u32 {
        2000
    }
    pub(super) fn multiplier_up() -> Amount {
        Amount::from_units(5 * 100_000_000)
    }
    pub(super) fn multiplier_down() -> Amount {
        Amount::from_units(20_000_000)
    }
}

/// Why a market definition is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("market {symbol}: {problem}")]
pub struct MarketError {
    /// The market.
    pub symbol: String,
    /// What is wrong.
    pub problem: &'static str,
}

impl Market {
    /// Checks the definition's own consistency.
    pub fn validate(&self) -> Result<(), MarketError> {
        let fail = |problem| {
            Err(MarketError {
                symbol: self.symbol.clone(),
                problem,
            })
        };
        if self.symbol.is_empty()
            || !self
                .symbol
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
        {
            return fail("symbol must be upper-case letters and digits");
        }
        if self.base == self.quote {
            return fail("base and quote must differ");
        }
        if self.tick_size.is_zero() || self.step_size.is_zero() {
            return fail("tick_size and step_size must be positive");
        }
        // Then every price × quantity is a whole number of 10^-8 units: fills
        // never round, so no side can receive something for nothing.
        if !(u128::from(self.tick_size.units()) * u128::from(self.step_size.units()))
            .is_multiple_of(100_000_000)
        {
            return fail("tick_size × step_size must be a multiple of 0.00000001");
        }
        if self.min_price > self.max_price || self.min_qty > self.max_qty || self.min_qty.is_zero()
        {
            return fail("min must be positive and not above max");
        }
        if self.min_trailing_delta == 0 || self.min_trailing_delta > self.max_trailing_delta {
            return fail("min_trailing_delta must be positive and not above max_trailing_delta");
        }
        if self.multiplier_down > self.multiplier_up {
            return fail("multiplier_down must not be above multiplier_up");
        }
        if !self.allowed_stp.contains(&self.default_stp) {
            return fail("default_stp must be among allowed_stp");
        }
        // A rate of 1 or more would take all a trade gives, or more.
        let one = Amount::from_units(100_000_000);
        if self.maker_fee >= one || self.taker_fee >= one {
            return fail("maker_fee and taker_fee must be below 1");
        }
        Ok(())
    }

    /// PRICE_FILTER.
    pub fn check_price(&self, price: Amount) -> Result<(), FilterFailure> {
        let on_tick = price
            .checked_sub(self.min_price)
            .is_some_and(|d| d.units() % self.tick_size.units() == 0);
        if price < self.min_price || price > self.max_price || !on_tick {
            return Err(FilterFailure::Price);
        }
        Ok(())
    }

    /// LOT_SIZE, or MARKET_LOT_SIZE for market orders.
    pub fn check_quantity(
        &self,
        quantity: Amount,
        market_order: bool,
    ) -> Result<(), FilterFailure> {
        let (max, filter) = if market_order {
            (self.market_max_qty, FilterFailure::MarketLotSize)
        } else {
            (self.max_qty, FilterFailure::LotSize)
        };
        let on_step = quantity
            .checked_sub(self.min_qty)
            .is_some_and(|d| d.units() % self.step_size.units() == 0);
        if quantity < self.min_qty || quantity > max || !on_step {
            return Err(filter);
        }
        Ok(())
    }

    /// NOTIONAL: price × quantity at least the minimum.
    pub fn check_notional(&self, price: Amount, quantity: Amount) -> Result<(), FilterFailure> {
        match price.checked_mul(quantity) {
            Some(notional) if notional >= self.min_notional => Ok(()),
            _ => Err(FilterFailure::Notional),
        }
    }

    /// Whether `prices` lie on the tick and `quantity` on the step, none of
    /// them zero: the engine's own check, whatever checked the order before.
    pub fn on_grid(&self, prices: &[Option<Amount>], quantity: Option<Amount>) -> bool {
        let on = |value: Option<Amount>, grid: Amount| {
            value.is_none_or(|v| !v.is_zero() && v.units().is_multiple_of(grid.units().max(1)))
        };
        prices.iter().all(|price| on(*price, self.tick_size)) && on(quantity, self.step_size)
    }

    /// TRAILING_DELTA: `delta` basis points within the market's range.
    pub fn check_trailing_delta(&self, delta: u32) -> Result<(), FilterFailure> {
        if (self.min_trailing_delta..=self.max_trailing_delta).contains(&delta) {
            Ok(())
        } else {
            Err(FilterFailure::TrailingDelta)
        }
    }

    /// PERCENT_PRICE_BY_SIDE: `price` within the multipliers of the average
    /// price `average` (no average yet: nothing to compare with).
    pub fn check_percent_price(
        &self,
        price: Amount,
        average: Option<Amount>,
    ) -> Result<(), FilterFailure> {
        let Some(average) = average else {
            return Ok(());
        };
        let scaled = |multiplier: Amount| {
            u128::from(average.units()) * u128::from(multiplier.units()) / 100_000_000
        };
        let price = u128::from(price.units());
        if price > scaled(self.multiplier_up) || price < scaled(self.multiplier_down) {
            return Err(FilterFailure::PercentPriceBySide);
        }
        Ok(())
    }
}

/// Which of a market's filters an order fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FilterFailure {
    /// Price outside its range or off the tick grid (PRICE_FILTER).
    #[error("PRICE_FILTER")]
    Price,
    /// Quantity outside its range or off the step grid (LOT_SIZE).
    #[error("LOT_SIZE")]
    LotSize,
    /// A market order's quantity outside its range (MARKET_LOT_SIZE).
    #[error("MARKET_LOT_SIZE")]
    MarketLotSize,
    /// Price × quantity below the minimum (NOTIONAL).
    #[error("NOTIONAL")]
    Notional,
    /// PERCENT_PRICE_BY_SIDE.
    #[error("PERCENT_PRICE_BY_SIDE")]
    PercentPriceBySide,
    /// TRAILING_DELTA.
    #[error("TRAILING_DELTA")]
    TrailingDelta,
}

/// `[exchange]` configuration.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ExchangeConfig {
    /// Whether this process serves the exchange at all.
    #[serde(default = "serves_exchange")]
    pub enabled: bool,
    /// When a command counts as durable.
    #[serde(default)]
    pub durability: Durability,
    /// Account that receives trading fees.
    pub fee_account: u64,
    /// Commands waiting for the engine before submitters have to wait.
    pub queue_capacity: usize,
    /// Commands between snapshots of the engine's state (0: none).
    #[serde(default)]
    pub snapshot_every: u64,
    /// The markets.
    pub markets: Vec<Market>,
    /// Blocks an on-chain deposit or withdrawal must be under (its own
    /// included) before it is credited or completed.
    #[serde(default = "default_confirmations")]
    pub deposit_confirmations: u64,
}

/// When a command is durable enough to acknowledge.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Durability {
    /// Synced to this machine's disk.
    #[default]
    Local,
    /// Acknowledged by the replicated journal, then synced here.
    Replicated,
}

fn serves_exchange() -> bool {
    true
}

fn default_confirmations() -> u64 {
    12
}

impl ExchangeConfig {
    /// Checks every market and that symbols are unique.
    pub fn validate(&self) -> Result<(), MarketError> {
        for (i, market) in self.markets.iter().enumerate() {
            market.validate()?;
            if self.markets[..i].iter().any(|m| m.symbol == market.symbol) {
                return Err(MarketError {
                    symbol: market.symbol.clone(),
                    problem: "defined twice",
                });
            }
        }
        Ok(())
    }

    /// The market named `symbol`.
    pub fn market(&self, symbol: &str) -> Option<&Market> {
        self.markets.iter().find(|m| m.symbol == symbol)
    }
}

/// Realistic markets the tests of this and other crates share.
#[doc(hidden)]
pub mod tests_support {
    use super::*;

    /// A second market sharing the ETH asset with ETHUSDT, with fees of 0.2 %/0.05 %.
    pub fn eth_btc() -> Market {
        let a = |t: &str| t.parse::<Amount>().unwrap();
        Market {
            symbol: "ETHBTC".into(),
            quote: "BTC".into(),
            tick_size: a("0.00001"),
            min_price: a("0.00001"),
            max_price: a("1000"),
            step_size: a("0.001"),
            min_qty: a("0.001"),
            min_notional: a("0.0001"),
            maker_fee: a("0.0005"),
            taker_fee: a("0.002"),
            ..eth_usdt()
        }
    }

    pub fn eth_usdt() -> Market {
        let a = |t: &str| t.parse::<Amount>().unwrap();
        Market {
            symbol: "ETHUSDT".into(),
            base: "ETH".into(),
            quote: "USDT".into(),
            tick_size: a("0.01"),
            min_price: a("0.01"),
            max_price: a("1000000"),
            step_size: a("0.0001"),
            min_qty: a("0.0001"),
            max_qty: a("9000"),
            market_max_qty: a("1000"),
            min_notional: a("5"),
            max_num_orders: 200,
            max_num_algo_orders: 5,
            min_trailing_delta: 10,
            max_trailing_delta: 2000,
            multiplier_up: a("5"),
            multiplier_down: a("0.2"),
            maker_fee: a("0.001"),
            taker_fee: a("0.001"),
            default_stp: StpMode::ExpireMaker,
            allowed_stp: vec![
                StpMode::None,
                StpMode::ExpireTaker,
                StpMode::ExpireMaker,
                StpMode::ExpireBoth,
                StpMode::Decrement,
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::tests_support::{eth_btc, eth_usdt};
    use super::*;

    #[test]
    fn filters_follow_binance_rules() {
        let m = eth_usdt();
        let a = |t: &str| t.parse::<Amount>().unwrap();
        m.check_price(a("3000.01")).unwrap();
        assert_eq!(
            m.check_price(a("3000.015")).unwrap_err().to_string(),
            "PRICE_FILTER"
        );
        assert!(m.check_price(a("0")).is_err());
        assert!(m.check_price(a("1000000.01")).is_err());
        m.check_quantity(a("1.2345"), false).unwrap();
        assert_eq!(
            m.check_quantity(a("1.23455"), false)
                .unwrap_err()
                .to_string(),
            "LOT_SIZE"
        );
        assert_eq!(
            m.check_quantity(a("9000.0001"), false)
                .unwrap_err()
                .to_string(),
            "LOT_SIZE"
        );
        assert_eq!(
            m.check_quantity(a("1000.0001"), true)
                .unwrap_err()
                .to_string(),
            "MARKET_LOT_SIZE"
        );
        m.check_notional(a("2500"), a("0.002")).unwrap();
        assert_eq!(
            m.check_notional(a("2500"), a("0.0019")),
            Err(FilterFailure::Notional)
        );
    }

    #[test]
    fn inconsistent_markets_are_refused() {
        let mut m = eth_usdt();
        m.validate().unwrap();
        m.default_stp = StpMode::None;
        m.allowed_stp = vec![StpMode::ExpireMaker];
        assert!(m.validate().is_err());
        let mut m = eth_usdt();
        m.step_size = Amount::ZERO;
        assert!(m.validate().is_err());
        let mut m = eth_usdt();
        m.step_size = "0.00000001".parse().unwrap();
        assert_eq!(
            m.validate().unwrap_err().problem,
            "tick_size × step_size must be a multiple of 0.00000001"
        );
        eth_btc().validate().unwrap();
        let mut m = eth_usdt();
        m.taker_fee = "1".parse().unwrap();
        assert_eq!(
            m.validate().unwrap_err().problem,
            "maker_fee and taker_fee must be below 1"
        );
        let config = ExchangeConfig {
            enabled: true,
            durability: Durability::Local,
            fee_account: 0,
            queue_capacity: 16,
            snapshot_every: 0,
            markets: vec![eth_usdt(), eth_usdt()],
            deposit_confirmations: 12,
        };
        assert_eq!(config.validate().unwrap_err().problem, "defined twice");
    }
}
