//! The operation timeout (deploy.md § Timeout): parsing `--timeout` and bounding any timeout to
//! whole seconds from 1 to 600. Reached through `config`, which re-exports every item.
//!
//! Pure: no I/O and no clock; a timeout is a value here, never a wait.

use std::time::Duration;

/// The longest timeout, and the default: the orphan-Secret age gate (2 × this) relies on it.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(600);

/// Why a `--timeout` was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TimeoutError {
    /// The text is not `N`, `Ns`, `Nm` or `NmMs` in whole numbers.
    #[error(
        "timeout {text:?} (--timeout) is not a duration in whole seconds: write it as 90, 90s, \
         5m or 2m30s, from 1 to 600 seconds"
    )]
    Malformed {
        /// The refused text.
        text: String,
    },
    /// The duration has a fractional second.
    #[error(
        "timeout (--timeout) must be whole seconds from 1 to 600; a fraction of a second is \
         refused"
    )]
    Fractional,
    /// Outside 1..=600 seconds.
    #[error(
        "timeout (--timeout) of {seconds}s is out of range: it must be from 1 to 600 seconds; it \
         may be lowered but never raised above 600 s, because the orphan-Secret age gate relies \
         on that bound"
    )]
    OutOfRange {
        /// The refused number of seconds.
        seconds: u64,
    },
}

/// Parses a `--timeout` value: `90`, `90s`, `5m`, `2m30s` (whole numbers only), 1 to 600 s.
///
/// # Errors
///
/// [`TimeoutError::Malformed`] for any other spelling (`1.5s`, `soon`, `-5`, empty);
/// [`TimeoutError::OutOfRange`] outside 1..=600 seconds.
pub fn parse_timeout(text: &str) -> Result<Duration, TimeoutError> {
    let malformed = || TimeoutError::Malformed {
        text: text.to_owned(),
    };
    let seconds = if text.bytes().all(|b| b.is_ascii_digit()) {
        parse_digits(text).ok_or_else(malformed)?
    } else {
        let (minutes, rest) = match text.split_once('m') {
            Some((minutes, rest)) => (parse_digits(minutes).ok_or_else(malformed)?, rest),
            None => (0, text),
        };
        let seconds = match rest {
            "" => 0,
            _ => rest
                .strip_suffix('s')
                .and_then(parse_digits)
                .ok_or_else(malformed)?,
        };
        minutes.saturating_mul(60).saturating_add(seconds)
    };
    validate_timeout(Duration::from_secs(seconds))
}

/// Non-empty ASCII digits as a number (saturating, so huge numbers are out of range later).
fn parse_digits(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(text.bytes().fold(0_u64, |acc, b| {
        acc.saturating_mul(10).saturating_add(u64::from(b - b'0'))
    }))
}

/// Checks a timeout: whole seconds from 1 to 600.
///
/// # Errors
///
/// [`TimeoutError::Fractional`] or [`TimeoutError::OutOfRange`].
pub fn validate_timeout(timeout: Duration) -> Result<Duration, TimeoutError> {
    if timeout.subsec_nanos() != 0 {
        return Err(TimeoutError::Fractional);
    }
    let seconds = timeout.as_secs();
    if seconds == 0 || timeout > MAX_TIMEOUT {
        return Err(TimeoutError::OutOfRange { seconds });
    }
    Ok(timeout)
}
