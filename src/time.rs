//! Wall-clock times as RFC 3339 UTC strings, and human durations (`90s`,
//! `30m`, `2h`, `7d`).
//!
//! Owns: the formats of times and durations in state files, JSON and config,
//! and the range of times they can hold (up to 9999-12-31T23:59:59Z: a
//! duration that would end later is refused, never wrapped or clamped).
//! Never: reads anything but the system clock.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch, now.
pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Days since 1970-01-01 to a civil (year, month, day), proleptic Gregorian.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = m as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `2026-11-30T07:00:00Z`
pub fn rfc3339(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Parse what [`rfc3339`] writes (UTC, `Z`, no fraction).
pub fn parse_rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() != 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[19] != b'Z' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, se) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    Some(days_from_civil(y, mo as u32, d as u32) * 86_400 + h * 3600 + mi * 60 + se)
}

/// The last second an RFC 3339 time of [`rfc3339`] can hold: 9999-12-31T23:59:59Z.
pub const MAX_SECS: i64 = 253_402_300_799;

/// Why a duration was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DurationError {
    /// Not a number and a unit, or not positive.
    Malformed,
    /// Counted from now, it ends after [`MAX_SECS`] (or overflows).
    TooLong,
}

impl DurationError {
    /// A sentence for an error message about `text`.
    pub fn describe(self, text: &str) -> String {
        match self {
            DurationError::Malformed => format!("{text:?} is not a duration"),
            DurationError::TooLong => format!(
                "{text:?} is too long: counted from now it would end after 9999-12-31T23:59:59Z, the last time the calendar can hold"
            ),
        }
    }
}

/// Parse a duration such as `90s`, `30m`, `2h`, `7d` or `1w` into seconds,
/// saying why one is refused. A duration is
/// refused when now plus it cannot be written as an RFC 3339 time (after
/// [`MAX_SECS`]), or when the arithmetic overflows.
pub fn duration(s: &str) -> Result<i64, DurationError> {
    let t = s.trim();
    let split = t
        .find(|c: char| !c.is_ascii_digit())
        .ok_or(DurationError::Malformed)?;
    let (n, unit) = t.split_at(split);
    if n.is_empty() {
        return Err(DurationError::Malformed);
    }
    let mult = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 604_800,
        _ => return Err(DurationError::Malformed),
    };
    // All digits: a parse failure is a number too large for i64.
    let n: i64 = n.parse().map_err(|_| DurationError::TooLong)?;
    let secs = n.checked_mul(mult).ok_or(DurationError::TooLong)?;
    if secs <= 0 {
        return Err(DurationError::Malformed);
    }
    match deadline(now(), secs) {
        Some(_) => Ok(secs),
        None => Err(DurationError::TooLong),
    }
}

/// `from + secs`, if the calendar can hold it (no overflow, not after [`MAX_SECS`]).
pub fn deadline(from: i64, secs: i64) -> Option<i64> {
    from.checked_add(secs)
        .filter(|t| (0..=MAX_SECS).contains(t))
}

/// A short human age or remaining time: `42s`, `5m`, `3h`, `2d`.
pub fn human(secs: i64) -> String {
    let s = secs.abs();
    if s < 120 {
        format!("{s}s")
    } else if s < 2 * 3600 {
        format!("{}m", s / 60)
    } else if s < 2 * 86_400 {
        format!("{}h", s / 3600)
    } else {
        format!("{}d", s / 86_400)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        for t in [0, 1_796_000_000, 951_782_400, 4_102_444_799] {
            assert_eq!(parse_rfc3339(&rfc3339(t)), Some(t));
        }
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    }

    fn parse_duration(s: &str) -> Option<i64> {
        duration(s).ok()
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90s"), Some(90));
        assert_eq!(parse_duration("30m"), Some(1800));
        assert_eq!(parse_duration("2h"), Some(7200));
        assert_eq!(parse_duration("7d"), Some(604_800));
        assert_eq!(parse_duration("0s"), None);
        assert_eq!(parse_duration("5"), None);
        assert_eq!(parse_duration("x5m"), None);
        assert_eq!(parse_duration("5y"), None);
        assert_eq!(parse_duration("s"), None);
        assert_eq!(duration("9999999d"), Err(DurationError::TooLong));
        assert_eq!(
            duration("9223372036854775807s"),
            Err(DurationError::TooLong)
        );
        assert_eq!(
            duration("99999999999999999999w"),
            Err(DurationError::TooLong)
        );
        assert_eq!(duration("153722867280912930m"), Err(DurationError::TooLong));
        assert_eq!(duration("0d"), Err(DurationError::Malformed));
        assert_eq!(duration("100000d"), Ok(100_000 * 86_400));
    }

    #[test]
    fn the_last_second_round_trips() {
        assert_eq!(rfc3339(MAX_SECS), "9999-12-31T23:59:59Z");
        assert_eq!(parse_rfc3339(&rfc3339(MAX_SECS)), Some(MAX_SECS));
        assert_eq!(deadline(MAX_SECS, 1), None);
        assert_eq!(deadline(i64::MAX, 1), None);
        assert_eq!(deadline(0, MAX_SECS), Some(MAX_SECS));
    }
}
