//! Tests of the pull-failure classifier and report text (deploy.md § Pull-failure classifier,
//! § Pull-failure report text; scenarios O6, O11).

use super::*;
use crate::testkit::IMAGE;

/// O6: a 401 is Unauthorized.
#[test]
fn o6_401_unauthorized_is_unauthorized() {
    assert_eq!(
        classify_pull_message("failed to pull: 401 Unauthorized"),
        Some(PullFailure::Unauthorized)
    );
}

/// O6: "pull access denied ... repository does not exist" is Unauthorized (rule 1 before 2).
#[test]
fn o6_pull_access_denied_is_unauthorized_even_with_repository_missing() {
    assert_eq!(
        classify_pull_message(
            "pull access denied for x, repository does not exist or may require 'docker login'"
        ),
        Some(PullFailure::Unauthorized)
    );
}

/// O6: "manifest unknown" is ManifestUnknown.
#[test]
fn o6_manifest_unknown_is_manifest_unknown() {
    assert_eq!(
        classify_pull_message("rpc error: manifest unknown: manifest unknown"),
        Some(PullFailure::ManifestUnknown)
    );
}

/// O6: "no match for platform in manifest" is ArchMismatch.
#[test]
fn o6_no_match_for_platform_is_arch_mismatch() {
    assert_eq!(
        classify_pull_message("no match for platform in manifest: not found"),
        // "not found" appears too, but rule 2 precedes rule 3 only when it matches first:
        // the spec's first-matching-rule order makes this ManifestUnknown.
        Some(PullFailure::ManifestUnknown)
    );
    assert_eq!(
        classify_pull_message("no match for platform in manifest"),
        Some(PullFailure::ArchMismatch)
    );
}

/// O6: a timeout is not a permanent failure.
#[test]
fn o6_dial_timeout_is_not_a_pull_failure() {
    assert_eq!(classify_pull_message("dial tcp: i/o timeout"), None);
    assert_eq!(classify_pull_message(""), None);
}

/// Every needle of every rule matches, case-insensitively (kills a dropped needle).
#[test]
fn every_rule_substring_matches_in_any_case() {
    let cases = [
        ("401", PullFailure::Unauthorized),
        ("UNAUTHORIZED", PullFailure::Unauthorized),
        ("403", PullFailure::Unauthorized),
        ("Denied", PullFailure::Unauthorized),
        ("Authentication Required", PullFailure::Unauthorized),
        ("Manifest Unknown", PullFailure::ManifestUnknown),
        ("MANIFEST_UNKNOWN", PullFailure::ManifestUnknown),
        ("Not Found", PullFailure::ManifestUnknown),
        ("Repository Does Not Exist", PullFailure::ManifestUnknown),
        ("No Match For Platform", PullFailure::ArchMismatch),
        ("No Matching Manifest", PullFailure::ArchMismatch),
    ];
    for (message, kind) in cases {
        assert_eq!(classify_pull_message(message), Some(kind), "{message}");
    }
}

/// The registry is the first path component when it looks like a host.
#[test]
fn registry_is_first_component_with_dot_colon_or_localhost() {
    assert_eq!(registry_of(IMAGE), Some("registry.example.com"));
    assert_eq!(
        registry_of("localhost:5000/x@sha256:ab"),
        Some("localhost:5000")
    );
    assert_eq!(registry_of("localhost/x@sha256:ab"), Some("localhost"));
    assert_eq!(registry_of("team/agent@sha256:ab"), None);
    assert_eq!(registry_of("agent@sha256:ab"), None);
}

/// O11: each report names the registry and the full image, never the kubelet's words.
#[test]
fn o11_each_report_names_registry_and_image_and_no_credentials() {
    for kind in PullFailure::ALL {
        let text = pull_failure_text(kind, IMAGE);
        assert!(text.contains(IMAGE), "{text}");
        if kind != PullFailure::ArchMismatch {
            assert!(text.contains("registry.example.com"), "{text}");
        }
        for word in ["Bearer", "password", "token"] {
            assert!(!text.contains(word), "{text}");
        }
    }
}

/// The texts say what the spec requires per kind.
#[test]
fn report_texts_match_the_table() {
    assert_eq!(
        pull_failure_text(PullFailure::ManifestUnknown, IMAGE),
        format!("registry.example.com has no image at {IMAGE}; check the digest and repository")
    );
    assert!(
        pull_failure_text(PullFailure::Unauthorized, "a/b@sha256:1")
            .starts_with("the cluster is not authorized to pull a/b@sha256:1 from the default registry; this retries indefinitely")
    );
    assert_eq!(
        pull_failure_text(PullFailure::ArchMismatch, "x@sha256:1"),
        "x@sha256:1 has no variant for the architecture of the nodes it was scheduled on"
    );
}
