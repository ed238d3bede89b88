//! Fixed-point amounts: prices and quantities as integers of 10^-8 units, as
//! Binance writes them on the wire (`"0.00100000"`). Never floats.

use std::fmt;
use std::str::FromStr;

/// Decimal places of every exchange amount.
pub const SCALE: u32 = 8;
const ONE: u64 = 10u64.pow(SCALE);

/// A non-negative amount in units of 10^-8.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Amount(u64);

/// Why a decimal string is not an amount.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AmountError {
    /// Not a plain non-negative decimal number.
    #[error("not a decimal number")]
    Syntax,
    /// More than 8 decimal places that are not zeros.
    #[error("more than {SCALE} decimal places")]
    TooPrecise,
    /// Larger than the amount type holds.
    #[error("too large")]
    Overflow,
}

impl Amount {
    /// Zero.
    pub const ZERO: Self = Self(0);

    /// From a count of 10^-8 units.
    pub const fn from_units(units: u64) -> Self {
        Self(units)
    }

    /// The count of 10^-8 units.
    pub const fn units(self) -> u64 {
        self.0
    }

    /// Whether this is zero.
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }

    /// Sum, or `None` on overflow.
    pub fn checked_add(self, other: Self) -> Option<Self> {
        self.0.checked_add(other.0).map(Self)
    }

    /// Difference, or `None` if it would be negative.
    pub fn checked_sub(self, other: Self) -> Option<Self> {
        self.0.checked_sub(other.0).map(Self)
    }

    /// `self × other` (both scaled), rounded down to 10^-8, or `None` on overflow.
    pub fn checked_mul(self, other: Self) -> Option<Self> {
        let product = u128::from(self.0) * u128::from(other.0);
        // Most products fit 64 bits, where dividing by the constant compiles
        // to a multiply; a 128-bit division is a slow library call.
        if let Ok(small) = u64::try_from(product) {
            return Some(Self(small / ONE));
        }
        u64::try_from(product / u128::from(ONE)).ok().map(Self)
    }

    /// Sum, capped at the largest amount.
    pub fn saturating_add(self, other: Self) -> Self {
        Self(self.0.saturating_add(other.0))
    }

    /// Difference, floored at zero.
    pub fn saturating_sub(self, other: Self) -> Self {
        Self(self.0.saturating_sub(other.0))
    }
}

impl FromStr for Amount {
    type Err = AmountError;

    /// Accepts `"1"`, `"0.1"`, `".5"`, `"1."`, `"0.00100000"`; trailing zeros
    /// beyond 8 places are allowed, other digits there are not.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
        if (whole.is_empty() && fraction.is_empty())
            || !whole.bytes().all(|b| b.is_ascii_digit())
            || !fraction.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(AmountError::Syntax);
        }
        let (kept, dropped) = fraction.split_at(fraction.len().min(SCALE as usize));
        if dropped.bytes().any(|b| b != b'0') {
            return Err(AmountError::TooPrecise);
        }
        let whole = whole.trim_start_matches('0');
        let whole: u64 = if whole.is_empty() {
            0
        } else {
            whole.parse().map_err(|_| AmountError::Overflow)?
        };
        let mut units = 0u64;
        for (i, digit) in kept.bytes().enumerate() {
            units += u64::from(digit - b'0') * 10u64.pow(SCALE - 1 - i as u32);
        }
        whole
            .checked_mul(ONE)
            .and_then(|w| w.checked_add(units))
            .map(Self)
            .ok_or(AmountError::Overflow)
    }
}

/// Decimal text where people read it (configuration, JSON); its units in
/// binary forms (a snapshot), which a string would make four times longer.
impl<'de> serde::Deserialize<'de> for Amount {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if !deserializer.is_human_readable() {
            return u64::deserialize(deserializer).map(Self);
        }
        let text = String::deserialize(deserializer)?;
        text.parse()
            .map_err(|e| serde::de::Error::custom(format!("{text:?}: {e}")))
    }
}

impl serde::Serialize for Amount {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if !serializer.is_human_readable() {
            return serializer.serialize_u64(self.0);
        }
        serializer.collect_str(self)
    }
}

/// Room for the longest amount: 12 whole digits, a point and 8 decimals.
const TEXT_LEN: usize = 21;

impl Amount {
    /// Appends the amount with 8 decimals (as [`fmt::Display`] writes it) to
    /// `out`. Digits are written by hand: a deep book renders thousands of
    /// amounts per response, and the formatting machinery costs several
    /// times more.
    pub fn push_to(self, out: &mut String) {
        let mut text = [b'0'; TEXT_LEN];
        let mut at = TEXT_LEN;
        let (mut whole, mut fraction) = (self.0 / ONE, self.0 % ONE);
        for _ in 0..SCALE {
            at -= 1;
            text[at] = b'0' + (fraction % 10) as u8;
            fraction /= 10;
        }
        at -= 1;
        text[at] = b'.';
        loop {
            at -= 1;
            text[at] = b'0' + (whole % 10) as u8;
            whole /= 10;
            if whole == 0 {
                break;
            }
        }
        // Only ASCII digits and a point were written.
        out.push_str(std::str::from_utf8(&text[at..]).expect("ASCII"));
    }
}

impl fmt::Display for Amount {
    /// Always 8 decimals, like Binance: `"0.00100000"`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut text = String::with_capacity(TEXT_LEN);
        self.push_to(&mut text);
        f.write_str(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn amount(text: &str) -> Amount {
        text.parse().unwrap()
    }

    #[test]
    fn writes_eight_decimals_for_every_magnitude() {
        for units in [0, 1, 99_999_999, ONE, 12_345_000_000, u64::MAX] {
            let expected = format!("{}.{:08}", units / ONE, units % ONE);
            assert_eq!(Amount(units).to_string(), expected);
            let mut pushed = String::from("x");
            Amount(units).push_to(&mut pushed);
            assert_eq!(pushed, format!("x{expected}"));
        }
    }

    #[test]
    fn parses_what_clients_send() {
        assert_eq!(amount("1").units(), ONE);
        assert_eq!(amount("0.1").units(), ONE / 10);
        assert_eq!(amount(".5").units(), ONE / 2);
        assert_eq!(amount("1.").units(), ONE);
        assert_eq!(amount("0.00000001").units(), 1);
        assert_eq!(amount("0.0010000000000").units(), 100_000);
        assert_eq!(amount("000123.45").units(), 12_345_000_000);
    }

    #[test]
    fn refuses_what_is_not_an_amount() {
        for bad in [
            "", ".", "-1", "+1", "1e5", "1.2.3", " 1", "0x10", "NaN", "١",
        ] {
            assert_eq!(bad.parse::<Amount>(), Err(AmountError::Syntax), "{bad:?}");
        }
        assert_eq!(
            "0.000000001".parse::<Amount>(),
            Err(AmountError::TooPrecise)
        );
        assert_eq!(
            "184467440737.09551616".parse::<Amount>(),
            Err(AmountError::Overflow)
        );
        assert_eq!(
            "99999999999999999999999".parse::<Amount>(),
            Err(AmountError::Overflow)
        );
    }

    #[test]
    fn formats_with_eight_decimals_and_round_trips() {
        assert_eq!(amount("0.001").to_string(), "0.00100000");
        assert_eq!(Amount::ZERO.to_string(), "0.00000000");
        let max = Amount::from_units(u64::MAX);
        assert_eq!(max.to_string().parse::<Amount>().unwrap(), max);
    }

    #[test]
    fn arithmetic_is_checked() {
        assert_eq!(amount("2").checked_mul(amount("0.5")), Some(amount("1")));
        assert_eq!(
            amount("0.00000001").checked_mul(amount("0.5")),
            Some(Amount::ZERO),
            "rounds down"
        );
        assert_eq!(Amount::from_units(u64::MAX).checked_mul(amount("2")), None);
        assert_eq!(amount("1").checked_sub(amount("2")), None);
        assert_eq!(
            Amount::from_units(u64::MAX).checked_add(Amount::from_units(1)),
            None
        );
    }
}
