//! Kline periods, time zones and the stored candles a period is summed from.

use weiport_storage::CandleSpan;

use crate::error::{BinanceError, Refusal};
use crate::params::Params;

/// Interval length in ms (months as 30 days is wrong, so `1M` is by calendar).
pub(crate) fn interval_ms(interval: &str) -> Option<u64> {
    const MIN: u64 = 60_000;
    Some(match interval {
        "1s" => 1_000,
        "1m" => MIN,
        "3m" => 3 * MIN,
        "5m" => 5 * MIN,
        "15m" => 15 * MIN,
        "30m" => 30 * MIN,
        "1h" => 60 * MIN,
        "2h" => 120 * MIN,
        "4h" => 240 * MIN,
        "6h" => 360 * MIN,
        "8h" => 480 * MIN,
        "12h" => 720 * MIN,
        "1d" => 1_440 * MIN,
        "3d" => 3 * 1_440 * MIN,
        "1w" => 7 * 1_440 * MIN,
        "1M" => 0,
        _ => return None,
    })
}

/// Start of the period holding `time_ms`: weeks start on Monday, months on the 1st (UTC).
pub(crate) fn period_start(time_ms: u64, length: u64) -> (u64, u64) {
    const DAY: u64 = 86_400_000;
    if length == 0 {
        let (y, m, _) = civil_from_days((time_ms / DAY) as i64);
        let start = days_from_civil(y, m, 1) as u64 * DAY;
        let (ny, nm) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
        let next = days_from_civil(ny, nm, 1) as u64 * DAY;
        return (start, next);
    }
    if length == 7 * DAY {
        // 1970-01-01 was a Thursday; Mondays are 4 days later.
        let offset = 4 * DAY;
        let start = (time_ms + 7 * DAY - offset) / length * length + offset - 7 * DAY;
        let start = if start + length <= time_ms {
            start + length
        } else {
            start
        };
        return (start, start + length);
    }
    let start = time_ms - time_ms % length;
    (start, start + length)
}

pub(crate) fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (i64::from(m) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// The stored candle spans whose rows a kline of `length` (0: a calendar
/// month) in the time zone `zone_ms` can be summed from: a span fits when
/// the klines' periods start on its boundaries.
pub(crate) fn usable_spans(length: u64, zone_ms: i64) -> Vec<CandleSpan> {
    CandleSpan::ALL
        .into_iter()
        .filter(|span| {
            let span_ms = span.millis();
            let periods_fit = match length {
                0 => true,
                length => length % span_ms == 0,
            };
            // Weeks and months start on local midnights, which are UTC
            // day (or hour) boundaries only for a zone of whole days (hours).
            periods_fit && zone_ms.rem_euclid(span_ms as i64) == 0
        })
        .collect()
}

/// Tiles the minutes `from..to` (both on minute boundaries) with stored
/// candles: `(span, first open time, end)`, in time order, each tile made
/// of whole candles of its span. `spans` is shortest first, minutes first.
pub(crate) fn candle_tiles(
    from: u64,
    to: u64,
    spans: &[CandleSpan],
) -> Vec<(CandleSpan, u64, u64)> {
    let Some((longest, shorter)) = spans.split_last() else {
        return Vec::new();
    };
    if from >= to {
        return Vec::new();
    }
    if shorter.is_empty() {
        return vec![(*longest, from, to)];
    }
    let span = longest.millis();
    let first = from.div_ceil(span).saturating_mul(span);
    let last = to - to % span;
    if first >= last {
        return candle_tiles(from, to, shorter);
    }
    let mut tiles = candle_tiles(from, first, shorter);
    tiles.push((*longest, first, last));
    tiles.extend(candle_tiles(last, to, shorter));
    tiles
}

/// `timeZone`: hours (`8`, `-1`) or hours and minutes (`05:45`, `-1:00`),
/// from -12:00 to +14:00; the offset from UTC in milliseconds (0 when absent).
pub(crate) fn time_zone_ms(params: &Params) -> Result<i64, BinanceError> {
    match params.get("timeZone") {
        None => Ok(0),
        Some(text) => parse_time_zone(text)
            .ok_or_else(|| BinanceError::from(Refusal::InvalidValue("timeZone"))),
    }
}

/// A time zone as `timeZone` and the kline streams' `@+08:00` write it: the
/// offset from UTC in milliseconds.
pub(crate) fn parse_time_zone(text: &str) -> Option<i64> {
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (hours, minutes) = unsigned.split_once(':').unwrap_or((unsigned, "0"));
    let number = |digits: &str| -> Option<i64> {
        if digits.is_empty() || digits.len() > 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        digits.parse().ok()
    };
    let (hours, minutes) = (number(hours)?, number(minutes)?);
    if minutes > 59 {
        return None;
    }
    let offset = if negative { -1 } else { 1 } * (hours * 60 + minutes);
    (-12 * 60..=14 * 60)
        .contains(&offset)
        .then_some(offset * 60_000)
}

/// The period of `length` holding `time_ms`, with periods counted in the
/// local time `zone_ms` ahead of UTC.
pub(crate) fn zoned_period(time_ms: u64, length: u64, zone_ms: i64) -> (u64, u64) {
    let (start, next) = period_start(time_ms.saturating_add_signed(zone_ms), length);
    (
        start.saturating_add_signed(-zone_ms),
        next.saturating_add_signed(-zone_ms),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone(text: &str) -> Result<i64, i32> {
        let params = Params::unchecked(&format!("timeZone={text}")).unwrap();
        time_zone_ms(&params).map_err(|e| e.code)
    }

    #[test]
    fn time_zones_take_hours_or_hours_and_minutes_within_binance_range() {
        const MINUTE: i64 = 60_000;
        assert_eq!(zone("0"), Ok(0));
        assert_eq!(zone("8"), Ok(8 * 60 * MINUTE));
        assert_eq!(zone("-1:00"), Ok(-60 * MINUTE));
        assert_eq!(zone("05:45"), Ok(345 * MINUTE));
        assert_eq!(zone("%2B14:00"), Ok(14 * 60 * MINUTE));
        assert_eq!(zone("-12"), Ok(-12 * 60 * MINUTE));
        for bad in [
            "14:01", "-12:30", "15", "1:60", "x", "1:", ":30", "123", "--1", "1.5",
        ] {
            assert_eq!(zone(bad), Err(-1130), "{bad}");
        }
        let params = Params::unchecked("").unwrap();
        assert_eq!(time_zone_ms(&params).map_err(|e| e.code), Ok(0));
    }

    #[test]
    fn candle_tiles_cover_the_minutes_with_the_longest_whole_candles() {
        const MIN: u64 = 60_000;
        const HOUR: u64 = 60 * MIN;
        const DAY: u64 = 24 * HOUR;
        let all = CandleSpan::ALL;
        use CandleSpan::{Day, Hour, Minute};
        // 23:58 on day 0 to 01:03 on day 2.
        let (from, to) = (DAY - 2 * MIN, 2 * DAY + HOUR + 3 * MIN);
        assert_eq!(
            candle_tiles(from, to, &all),
            vec![
                (Minute, from, DAY),
                (Day, DAY, 2 * DAY),
                (Hour, 2 * DAY, 2 * DAY + HOUR),
                (Minute, 2 * DAY + HOUR, to),
            ]
        );
        // Too short for an hour: minutes only; empty when nothing is covered.
        assert_eq!(
            candle_tiles(HOUR + MIN, 2 * HOUR - MIN, &all),
            vec![(Minute, HOUR + MIN, 2 * HOUR - MIN)]
        );
        assert_eq!(candle_tiles(5 * MIN, 5 * MIN, &all), vec![]);
        // The tiles always cover exactly from..to, in order.
        for (from, to) in [(0, 3 * DAY), (7 * MIN, 5 * DAY + 7 * MIN), (HOUR, DAY)] {
            let tiles = candle_tiles(from, to, &all);
            assert_eq!(tiles.first().unwrap().1, from);
            assert_eq!(tiles.last().unwrap().2, to);
            assert!(tiles.windows(2).all(|t| t[0].2 == t[1].1));
            assert!(
                tiles
                    .iter()
                    .all(|(s, a, b)| a % s.millis() == 0 && b % s.millis() == 0)
            );
        }
        // Spans a kline can be summed from, by interval and time zone.
        assert_eq!(usable_spans(15 * MIN, 0), vec![Minute]);
        assert_eq!(usable_spans(4 * HOUR, 0), vec![Minute, Hour]);
        assert_eq!(usable_spans(0, 0), vec![Minute, Hour, Day]);
        assert_eq!(usable_spans(DAY, 8 * HOUR as i64), vec![Minute, Hour]);
        assert_eq!(usable_spans(DAY, -(345 * MIN as i64)), vec![Minute]);
    }

    #[test]
    fn zoned_periods_start_at_local_midnight_and_month_start() {
        const HOUR: u64 = 3_600_000;
        const DAY: u64 = 24 * HOUR;
        // 2023-09-26T03:00:00Z: in UTC+8 it is 11:00 on the 26th, in UTC-5
        // 22:00 on the 25th.
        let time = 1_695_697_200_000;
        let utc_midnight = 1_695_686_400_000;
        assert_eq!(
            zoned_period(time, DAY, 0),
            (utc_midnight, utc_midnight + DAY)
        );
        assert_eq!(
            zoned_period(time, DAY, 8 * HOUR as i64),
            (utc_midnight - 8 * HOUR, utc_midnight + 16 * HOUR)
        );
        assert_eq!(
            zoned_period(time, DAY, -5 * HOUR as i64),
            (utc_midnight - DAY + 5 * HOUR, utc_midnight + 5 * HOUR)
        );
        // Months too: 2023-10-01T00:00 in UTC+8 is 2023-09-30T16:00Z.
        let october_local = 1_696_118_400_000 - 8 * HOUR;
        assert_eq!(
            zoned_period(october_local + 1, 0, 8 * HOUR as i64).0,
            october_local
        );
    }
}
