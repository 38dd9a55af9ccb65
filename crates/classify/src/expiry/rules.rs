//! The rules of expiry (deploy.md § Expiry): the annotation key, the `--ttl` syntax and bounds,
//! the instant's wire form, whether a pod has expired on the apiserver's clock and the time
//! left. The parent module re-exports them; its machines (`collect`, `renew`) use them.
//!
//! Pure: no clock is read here; every instant is Unix seconds on the apiserver's clock, passed
//! in. An annotation that does not parse is no expiry.

use crate::duration::{DurationError, DurationSyntax, parse_duration};
use crate::facts::ObjectMarks;

/// Annotation key carrying the instant a pod expires, as `YYYY-MM-DDTHH:MM:SSZ` (UTC, whole
/// seconds) on the apiserver's clock. Not part of the create intent: a different `--ttl` is not
/// a different configuration.
pub const ANNOTATION_EXPIRES_AT: &str = "apiary.dev/expires-at";

/// The shortest `--ttl` accepted, in seconds.
pub const MIN_TTL_SECS: u64 = 60;
/// The longest `--ttl` accepted, in seconds (366 days): beyond it an expiry is a typo.
pub const MAX_TTL_SECS: u64 = 366 * 86_400;

/// Why a `--ttl` value was refused (the CLI names the flag around this text).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TtlError {
    /// Empty, or not `<number><unit>` groups with units `d`, `h`, `m`, `s`.
    Malformed,
    /// Shorter than [`MIN_TTL_SECS`].
    TooShort,
    /// Longer than [`MAX_TTL_SECS`].
    TooLong,
}

impl std::fmt::Display for TtlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TtlError::Malformed => {
                "is not a duration: write whole numbers with units d, h, m or s, such as 2h, 90m \
                 or 1h30m"
            }
            TtlError::TooShort => "is shorter than one minute: use at least 1m",
            TtlError::TooLong => "is longer than 366 days: use at most 366d",
        })
    }
}

/// The `--ttl` syntax: `<whole number><unit>` groups, units `d`, `h`, `m`, `s`, from
/// [`MIN_TTL_SECS`] to [`MAX_TTL_SECS`].
const TTL_SYNTAX: DurationSyntax = DurationSyntax::unit_groups(MIN_TTL_SECS, MAX_TTL_SECS);

impl From<DurationError> for TtlError {
    fn from(error: DurationError) -> Self {
        match error {
            DurationError::Malformed => TtlError::Malformed,
            DurationError::TooShort { .. } => TtlError::TooShort,
            DurationError::TooLong { .. } => TtlError::TooLong,
        }
    }
}

/// Parse a `--ttl` duration: one or more `<whole number><unit>` groups, units `d`, `h`, `m`, `s`
/// (`2h`, `90m`, `1h30m`, `3600s`), into seconds.
///
/// # Errors
/// [`TtlError`] when malformed or outside [`MIN_TTL_SECS`]..=[`MAX_TTL_SECS`].
pub fn parse_ttl(text: &str) -> Result<u64, TtlError> {
    Ok(parse_duration(text, &TTL_SYNTAX)?)
}

/// The expiry instant of a TTL that starts at `server_now` (apiserver clock, Unix seconds).
pub fn expires_at(server_now: i64, ttl_secs: u64) -> i64 {
    server_now.saturating_add(i64::try_from(ttl_secs).unwrap_or(i64::MAX))
}

/// The pod's expiry instant from its marks, when it carries a well-formed annotation.
pub fn expiry_of(marks: &ObjectMarks) -> Option<i64> {
    marks.expires_at.as_deref().and_then(parse_instant)
}

/// Whether an agent expiring at `expires_at` has expired at `server_now` (both apiserver clock):
/// the instant itself is already expired.
pub fn is_expired(expires_at: i64, server_now: i64) -> bool {
    server_now >= expires_at
}

/// Seconds left until `expires_at` at `server_now`; zero or negative once expired.
pub fn seconds_left(expires_at: i64, server_now: i64) -> i64 {
    expires_at.saturating_sub(server_now)
}

/// A person's rendering of [`seconds_left`]: `1h59m`, `4m10s`, `2h`, `2d3h` (the one span
/// renderer, [`crate::duration::render_span`]), or `expired`.
pub fn render_time_left(seconds: i64) -> String {
    if seconds <= 0 {
        return "expired".to_owned();
    }
    crate::duration::render_span(seconds)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (civil calendar arithmetic).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date `(year, month, day)` of a day count since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// The annotation's wire form of an instant: `YYYY-MM-DDTHH:MM:SSZ` (years 0000..=9999).
pub fn format_instant(unix: i64) -> String {
    let days = unix.div_euclid(86_400);
    let secs = unix.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3_600,
        secs % 3_600 / 60,
        secs % 60
    )
}

/// Parse the annotation's wire form, exactly `YYYY-MM-DDTHH:MM:SSZ` with a valid date and time;
/// anything else (offsets, fractions, lowercase, whitespace) is `None`.
pub fn parse_instant(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() != 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
        || b[19] != b'Z'
    {
        return None;
    }
    let num = |from: usize, to: usize| -> Option<i64> {
        let part = &b[from..to];
        if !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    let (year, month, day) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (hour, minute, second) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let month_days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    if day < 1 || day > month_days || hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    Some(days_from_civil(year, month, day) * 86_400 + hour * 3_600 + minute * 60 + second)
}
