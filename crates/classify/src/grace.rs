//! Grace periods (deploy.md § Grace periods): the pod's own `terminationGracePeriodSeconds`
//! (`deploy --grace-period`) and the override one delete may carry (`undeploy`, `deploy
//! --replace`, `gc --grace-period`), parsed from the command line's duration syntax.
//!
//! Pure. A [`GracePeriod`] is at least one second by construction: a zero grace is a forced
//! delete, which apiary never sends, so no value of this type can ask for one.

use crate::duration::{DurationError, DurationSyntax, parse_duration};

/// The pod's grace period when `deploy --grace-period` is not given (deploy.md § Grace periods
/// says why 60 s).
pub const DEFAULT_POD_GRACE: GracePeriod = GracePeriod(60);

/// The `--grace-period` syntax: a bare number of seconds, or minutes then seconds (`5`, `5s`,
/// `2m`, `1m30s`), from 1 s to one hour.
pub const GRACE_SYNTAX: DurationSyntax = DurationSyntax::minutes_and_seconds(1, 3600);

/// A grace period of whole seconds, from 1 to 3600.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GracePeriod(u32);

impl GracePeriod {
    /// `seconds` as a grace period, or `None` outside 1..=3600.
    pub fn from_seconds(seconds: u64) -> Option<GracePeriod> {
        let seconds = GRACE_SYNTAX.check(seconds).ok()?;
        u32::try_from(seconds).ok().map(GracePeriod)
    }

    /// The whole seconds, at least 1.
    pub fn seconds(self) -> u32 {
        self.0
    }
}

/// Parse a `--grace-period` value.
///
/// # Errors
/// The [`DurationError`] of [`GRACE_SYNTAX`]: malformed, under one second (`0` included: never
/// a forced delete) or over an hour.
pub fn parse_grace(text: &str) -> Result<GracePeriod, DurationError> {
    let seconds = parse_duration(text, &GRACE_SYNTAX)?;
    GracePeriod::from_seconds(seconds).ok_or(DurationError::TooLong { seconds })
}

#[cfg(test)]
mod tests {
    //! The syntax and range of `--grace-period`.

    use super::*;

    /// Seconds, bare or with units, and minutes then seconds, are read as whole seconds.
    #[test]
    fn grace_periods_parse_as_whole_seconds() {
        for (text, seconds) in [
            ("5", 5),
            ("5s", 5),
            ("2m", 120),
            ("1m30s", 90),
            ("60m", 3600),
        ] {
            assert_eq!(
                parse_grace(text).map(GracePeriod::seconds),
                Ok(seconds),
                "{text}"
            );
        }
    }

    /// Zero (a forced delete), more than an hour and other spellings are refused.
    #[test]
    fn zero_long_and_malformed_grace_periods_are_refused() {
        assert_eq!(
            parse_grace("0"),
            Err(DurationError::TooShort { seconds: 0 })
        );
        assert_eq!(
            parse_grace("0s"),
            Err(DurationError::TooShort { seconds: 0 })
        );
        assert_eq!(
            parse_grace("3601"),
            Err(DurationError::TooLong { seconds: 3601 })
        );
        for text in ["", "1h", "1.5s", "-5", "5x", "30s2m"] {
            assert_eq!(parse_grace(text), Err(DurationError::Malformed), "{text:?}");
        }
        assert_eq!(GracePeriod::from_seconds(0), None);
        assert_eq!(
            GracePeriod::from_seconds(1).map(GracePeriod::seconds),
            Some(1)
        );
        assert_eq!(
            GracePeriod::from_seconds(3600).map(GracePeriod::seconds),
            Some(3600)
        );
        assert_eq!(GracePeriod::from_seconds(3601), None);
    }

    /// The pod's default grace is the 60 s every fingerprint before the flag was written with.
    #[test]
    fn the_default_pod_grace_is_sixty_seconds() {
        assert_eq!(DEFAULT_POD_GRACE.seconds(), 60);
    }
}
