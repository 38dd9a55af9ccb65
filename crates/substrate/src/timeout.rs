//! The operation timeout (deploy.md § Timeout): parsing `--timeout` and bounding any timeout to
//! whole seconds from 1 to 600. Reached through `config`, which re-exports every item.
//!
//! Pure: no I/O and no clock; a timeout is a value here, never a wait.

use std::time::Duration;

use apiary_classify::duration::{DurationError, DurationSyntax, parse_duration};

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

/// The `--timeout` syntax: a bare number of seconds, or minutes then seconds, 1 to 600 s.
const TIMEOUT_SYNTAX: DurationSyntax =
    DurationSyntax::minutes_and_seconds(1, MAX_TIMEOUT.as_secs());

/// Parses a `--timeout` value: `90`, `90s`, `5m`, `2m30s` (whole numbers only), 1 to 600 s.
///
/// # Errors
///
/// [`TimeoutError::Malformed`] for any other spelling (`1.5s`, `soon`, `-5`, empty);
/// [`TimeoutError::OutOfRange`] outside 1..=600 seconds.
pub fn parse_timeout(text: &str) -> Result<Duration, TimeoutError> {
    parse_duration(text, &TIMEOUT_SYNTAX)
        .map(Duration::from_secs)
        .map_err(|error| refusal(error, text))
}

/// The refusal of a duration error: the text when malformed, the seconds when out of range.
fn refusal(error: DurationError, text: &str) -> TimeoutError {
    match error {
        DurationError::Malformed => TimeoutError::Malformed {
            text: text.to_owned(),
        },
        DurationError::TooShort { seconds } | DurationError::TooLong { seconds } => {
            TimeoutError::OutOfRange { seconds }
        }
    }
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
    if !(TIMEOUT_SYNTAX.min()..=TIMEOUT_SYNTAX.max()).contains(&seconds) {
        return Err(TimeoutError::OutOfRange { seconds });
    }
    Ok(timeout)
}
