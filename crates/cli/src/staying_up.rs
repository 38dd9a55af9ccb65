//! `deploy --min-running DURATION` (deploy.md § Staying up): the flag's syntax and its bound,
//! checked before any request.
//!
//! Shell layer: parses and refuses (exit 2); the window itself is the deploy machine's rule.
//! Decides nothing about the cluster.

use std::time::Duration;

use apiary_classify::duration::{DurationError, DurationSyntax, parse_duration};

use crate::outcome::Failure;

/// The window `--min-running` asks for (zero when not given): whole seconds written as `0`, `3`,
/// `3s`, `2m` or `1m30s`, shorter than the deploy's `timeout` (a validated one: whole seconds,
/// at least one).
///
/// # Errors
/// A refusal (exit 2) naming the flag, the problem and the fix.
pub fn min_running_flag(text: Option<&str>, timeout: Duration) -> Result<Duration, Failure> {
    let Some(text) = text else {
        return Ok(Duration::ZERO);
    };
    // Shorter than the timeout: at most its whole seconds less one (or its whole seconds, for a
    // fractional timeout).
    let longest = timeout
        .as_secs()
        .saturating_sub(u64::from(timeout.subsec_nanos() == 0));
    let syntax = DurationSyntax::minutes_and_seconds(0, longest);
    match parse_duration(text, &syntax) {
        Ok(seconds) => Ok(Duration::from_secs(seconds)),
        Err(DurationError::TooLong { seconds }) => Err(Failure::refused(format!(
            "--min-running {seconds}s is not shorter than the deploy's timeout of {}s: the deploy \
             would time out before the window ends; lower --min-running or raise --timeout",
            timeout.as_secs()
        ))),
        // A range from zero is never too short: only the spelling can be wrong here.
        Err(DurationError::Malformed | DurationError::TooShort { .. }) => {
            Err(Failure::refused(format!(
                "--min-running {text:?} is not a duration: write whole seconds as 0, 3, 3s, 2m or \
                 1m30s"
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    //! The syntax and the bound, one case per rule.

    use super::*;

    const TIMEOUT: Duration = Duration::from_secs(600);

    fn ok(text: &str) -> u64 {
        min_running_flag(Some(text), TIMEOUT)
            .unwrap_or_else(|e| panic!("{text}: {e:?}"))
            .as_secs()
    }

    /// Every accepted spelling, and the default of zero.
    #[test]
    fn accepted_spellings() {
        assert_eq!(min_running_flag(None, TIMEOUT).ok(), Some(Duration::ZERO));
        assert_eq!(ok("0"), 0);
        assert_eq!(ok("0s"), 0);
        assert_eq!(ok("3"), 3);
        assert_eq!(ok("3s"), 3);
        assert_eq!(ok("2m"), 120);
        assert_eq!(ok("1m30s"), 90);
    }

    /// Anything else is refused with the flag and the accepted forms named.
    #[test]
    fn bad_spellings_are_refused() {
        for text in [
            "", "s", "m", "3x", "-1", "1.5s", "1h", "3s1m", "1m30", " 3s", "1ms",
        ] {
            let failure = min_running_flag(Some(text), TIMEOUT).expect_err(text);
            let message = format!("{failure:?}");
            assert!(message.contains("--min-running"), "{text}: {message}");
            assert!(message.contains("1m30s"), "{text}: {message}");
        }
    }

    /// A window as long as the timeout (or longer) could never end before it: refused.
    #[test]
    fn a_window_not_shorter_than_the_timeout_is_refused() {
        let timeout = Duration::from_secs(60);
        assert!(min_running_flag(Some("59s"), timeout).is_ok());
        for text in ["60", "1m", "61s"] {
            let message = format!(
                "{:?}",
                min_running_flag(Some(text), timeout).expect_err(text)
            );
            assert!(message.contains("--timeout"), "{message}");
        }
    }
}
