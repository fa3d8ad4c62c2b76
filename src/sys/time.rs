//! Wall-clock times as RFC 3339 UTC strings, and human durations (`90s`,
//! `30m`, `2h`, `7d`).
//!
//! Owns: the formats of times and durations in state files, JSON and config,
//! and the range of times they can hold (up to 9999-12-31T23:59:59Z: a
//! duration that would end later is refused, never wrapped or clamped).
//! Never: reads anything but the system clock; does calendar arithmetic or
//! number-and-unit parsing by hand (jiff, already built for gix, does both).

use jiff::civil::DateTime;
use jiff::{SignedDuration, Span, SpanRelativeTo, Timestamp};

/// 1970-01-01T00:00:00, the origin of the seconds this module counts (UTC).
const EPOCH: DateTime = DateTime::constant(1970, 1, 1, 0, 0, 0, 0);

/// Seconds since the Unix epoch, now.
pub fn now() -> i64 {
    Timestamp::now().as_second()
}

/// UTC wall-clock time of `secs` since the epoch, if the calendar holds it.
/// A civil time, not a [`Timestamp`]: jiff's timestamps stop a day short of
/// 9999-12-31 (to leave room for offsets), while the UTC strings written
/// here go to the last second of year 9999.
fn civil(secs: i64) -> Option<DateTime> {
    EPOCH.checked_add(SignedDuration::from_secs(secs)).ok()
}

/// `2026-11-30T07:00:00Z`. A time the calendar cannot hold (never written:
/// every deadline is checked by [`deadline`]) is written as the nearest end.
pub fn rfc3339(secs: i64) -> String {
    let t = civil(secs).unwrap_or(if secs < 0 {
        DateTime::MIN
    } else {
        DateTime::MAX
    });
    format!("{}Z", t.strftime("%Y-%m-%dT%H:%M:%S"))
}

/// Parse what [`rfc3339`] writes (UTC, `Z`, no fraction).
pub fn parse_rfc3339(s: &str) -> Option<i64> {
    // Exactly the shape written: jiff would also take offsets, fractions,
    // a space or a lower-case `t`, none of which a state file holds.
    let b = s.as_bytes();
    let digits = [0..4, 5..7, 8..10, 11..13, 14..16, 17..19];
    if b.len() != 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
        || b[19] != b'Z'
        || !digits
            .into_iter()
            .all(|r| b[r].iter().all(u8::is_ascii_digit))
    {
        return None;
    }
    let t: DateTime = s[..19].parse().ok()?;
    Some(t.duration_since(EPOCH).as_secs())
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
    // The grammar is ours (one number, one unit, no sign, no spaces, no
    // years or months); jiff reads the number and the unit.
    let t = s.trim();
    let split = t
        .find(|c: char| !c.is_ascii_digit())
        .ok_or(DurationError::Malformed)?;
    let (n, unit) = t.split_at(split);
    if n.is_empty() || !matches!(unit, "s" | "m" | "h" | "d" | "w") {
        return Err(DurationError::Malformed);
    }
    // Well formed: what jiff refuses now is a number too large for it.
    let span: Span = t.parse().map_err(|_| DurationError::TooLong)?;
    let secs = span
        .to_duration(SpanRelativeTo::days_are_24_hours())
        .map_err(|_| DurationError::TooLong)?
        .as_secs();
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
        assert_eq!(
            DateTime::MAX.duration_since(EPOCH).as_secs(),
            MAX_SECS,
            "MAX_SECS is jiff's last civil second"
        );
        assert_eq!(rfc3339(MAX_SECS + 1), "9999-12-31T23:59:59Z");
    }

    #[test]
    fn only_the_written_shape_parses() {
        assert_eq!(parse_rfc3339("2026-11-30T07:00:00Z"), Some(1_796_022_000));
        for s in [
            "2026-11-30T07:00:00",
            "2026-11-30t07:00:00Z",
            "2026-11-30 07:00:00Z",
            "2026-11-30T07:00:00.5Z",
            "2026-11-30T07:00:00+00:00",
            "2026-+1-30T07:00:00Z",
            "2026-13-30T07:00:00Z",
            "2026-11-30T24:00:00Z",
            "",
        ] {
            assert_eq!(parse_rfc3339(s), None, "{s:?}");
        }
    }

    #[test]
    fn refused_durations() {
        for s in [
            "0s", "5", "2 hours", "-1h", "+1h", "1y", "1mo", "", " ", "1h30m", "1.5h",
        ] {
            assert_eq!(duration(s), Err(DurationError::Malformed), "{s:?}");
        }
        assert_eq!(duration(" 1w "), Ok(604_800));
    }
}
