//! Unit tests of `pod`: the checks buzz-provider.md § 16.3 puts on the pod options. The
//! configuration, fingerprint and builder of a buzz pod are tested through the public API in
//! `tests/buzz_pod.rs`.

use super::*;

/// The buzz binding's checks (buzz-provider.md § 16.3) on the shared type: a deadline must be
/// positive (0 and -1 refused, 1 accepted) and storage quantities non-blank.
#[test]
fn buzz_pod_option_checks() {
    let with_deadline = |seconds| PodOptions {
        active_deadline_seconds: Some(seconds),
        ..PodOptions::default()
    };
    assert_eq!(
        validate_pod_options(&with_deadline(0)),
        Err(PodOptionsError::NonPositiveDeadline)
    );
    assert_eq!(
        validate_pod_options(&with_deadline(-1)),
        Err(PodOptionsError::NonPositiveDeadline)
    );
    assert_eq!(validate_pod_options(&with_deadline(1)), Ok(()));
    let blank = PodOptions {
        workspace_size_limit: Some("  ".to_owned()),
        ..PodOptions::default()
    };
    assert_eq!(
        validate_pod_options(&blank),
        Err(PodOptionsError::BlankStorageQuantity)
    );
    assert_eq!(validate_pod_options(&PodOptions::default()), Ok(()));
}
