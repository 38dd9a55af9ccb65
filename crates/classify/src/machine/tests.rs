//! Tests of the deploy state machine (deploy.md § The deploy operation).

use super::*;

/// The defaults are 600 s and 2 s.
#[test]
fn defaults_are_600s_and_2s() {
    assert_eq!(DEFAULT_DEADLINE, Duration::from_secs(600));
    assert_eq!(DEFAULT_POLL, Duration::from_secs(2));
}
