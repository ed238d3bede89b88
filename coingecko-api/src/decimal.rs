//! Exact decimals for CoinGecko's JSON numbers: prices stay fixed-point
//! until they are written, digit by digit, never through a float.

use serde_json::value::RawValue;

/// `units / 10^scale`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Decimal {
    units: u128,
    scale: u32,
}

/// Decimals of an inverse price: CoinGecko's `precision` goes up to 18.
const INVERSE_SCALE: u32 = 18;

impl Decimal {
    /// An exchange amount (eight decimals).
    pub(crate) fn amount(units: u64) -> Self {
        Self {
            units: u128::from(units),
            scale: 8,
        }
    }

    /// One.
    pub(crate) fn one() -> Self {
        Self { units: 1, scale: 0 }
    }

    /// Units of an inverse price (18 decimals), as `inverse_of_amount` makes them.
    pub(crate) fn inverse_units(units: u128) -> Self {
        Self {
            units,
            scale: INVERSE_SCALE,
        }
    }

    /// `1 / amount`, rounded down at 18 decimals; none for zero.
    pub(crate) fn inverse_of_amount(units: u64) -> Option<Self> {
        let numerator = 10u128.pow(8 + INVERSE_SCALE);
        Some(Self {
            units: numerator.checked_div(u128::from(units))?,
            scale: INVERSE_SCALE,
        })
    }

    /// `self × amount` (eight decimals), exact; none on overflow.
    pub(crate) fn times_amount(self, units: u64) -> Option<Self> {
        Some(Self {
            units: self.units.checked_mul(u128::from(units))?,
            scale: self.scale + 8,
        })
    }

    /// Rounded half up to `decimals` places when it has more.
    pub(crate) fn rounded(self, decimals: u32) -> Self {
        if decimals >= self.scale {
            return self;
        }
        let divisor = 10u128.pow(self.scale - decimals);
        Self {
            units: (self.units + divisor / 2) / divisor,
            scale: decimals,
        }
    }

    /// As a JSON number, trailing zeros dropped (`3000.5`, `0.000333`, `12`).
    pub(crate) fn to_json(self) -> Box<RawValue> {
        RawValue::from_string(self.to_string()).expect("decimal digits are a JSON number")
    }
}

impl std::fmt::Display for Decimal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let divisor = 10u128.pow(self.scale);
        let (whole, fraction) = (self.units / divisor, self.units % divisor);
        write!(f, "{whole}")?;
        if fraction != 0 {
            let digits = format!("{fraction:0width$}", width = self.scale as usize);
            write!(f, ".{}", digits.trim_end_matches('0'))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_exactly_and_rounded_half_up() {
        assert_eq!(Decimal::amount(300_050_000_000).to_string(), "3000.5");
        assert_eq!(Decimal::amount(12 * 100_000_000).to_string(), "12");
        assert_eq!(Decimal::amount(1).to_string(), "0.00000001");
        assert_eq!(
            Decimal::amount(300_055_000_000).rounded(2).to_string(),
            "3000.55"
        );
        assert_eq!(
            Decimal::amount(300_055_000_000).rounded(1).to_string(),
            "3000.6"
        );
        assert_eq!(
            Decimal::amount(300_044_999_999).rounded(0).to_string(),
            "3000"
        );
        let third = Decimal::inverse_of_amount(300_000_000_000).unwrap();
        assert_eq!(third.to_string(), "0.000333333333333333");
        assert_eq!(third.rounded(6).to_string(), "0.000333");
        assert_eq!(Decimal::inverse_of_amount(0), None);
        let cap = Decimal::amount(300_000_000_000)
            .times_amount(2 * 100_000_000)
            .unwrap();
        assert_eq!(cap.to_string(), "6000");
        assert_eq!(Decimal::one().to_json().get(), "1");
    }
}
