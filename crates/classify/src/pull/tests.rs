//! Tests of the pull-failure classifier and report text (deploy.md § Pull-failure classifier and
//! Secret settling, § Pull-failure report text; scenarios O6, O11).

use super::*;
use crate::testkit::IMAGE;

/// The classifier on a message that names no image (nothing to strip but digests).
fn bare(message: &str) -> Option<PullFailure> {
    classify_pull_message(message, "")
}

/// containerd's `ErrImagePull` messages for `image`, as a kubelet on containerd 1.6/1.7 reports
/// them (the `rpc error` prefix is the CRI wrapper).
fn containerd(kind: PullFailure, image: &str) -> String {
    let (host, path) = image.split_once('/').unwrap_or(("docker.io", image));
    let path = path.split('@').next().unwrap_or(path);
    let digest = image.split_once('@').map_or("", |(_, d)| d);
    match kind {
        PullFailure::Unauthorized => format!(
            "rpc error: code = Unknown desc = failed to pull and unpack image \"{image}\": \
             failed to resolve reference \"{image}\": unexpected status from HEAD request to \
             https://{host}/v2/{path}/manifests/{digest}: 401 Unauthorized"
        ),
        PullFailure::ManifestUnknown => format!(
            "rpc error: code = NotFound desc = failed to pull and unpack image \"{image}\": \
             failed to resolve reference \"{image}\": {image}: not found"
        ),
        PullFailure::ArchMismatch => format!(
            "rpc error: code = NotFound desc = failed to pull and unpack image \"{image}\": \
             no match for platform in manifest: not found"
        ),
    }
}

/// O6: a 401 is Unauthorized.
#[test]
fn o6_401_unauthorized_is_unauthorized() {
    assert_eq!(
        bare("failed to pull: 401 Unauthorized"),
        Some(PullFailure::Unauthorized)
    );
}

/// O6: "pull access denied ... repository does not exist" is Unauthorized (rule 2 before 3).
#[test]
fn o6_pull_access_denied_is_unauthorized_even_with_repository_missing() {
    assert_eq!(
        bare("pull access denied for x, repository does not exist or may require 'docker login'"),
        Some(PullFailure::Unauthorized)
    );
}

/// O6: "manifest unknown" is ManifestUnknown.
#[test]
fn o6_manifest_unknown_is_manifest_unknown() {
    assert_eq!(
        bare("rpc error: manifest unknown: manifest unknown"),
        Some(PullFailure::ManifestUnknown)
    );
}

/// Rule 1 comes first: containerd's real platform message ends in `not found`, which rule 3 would
/// otherwise read as a missing image (deploy.md § Pull-failure classifier and Secret settling).
#[test]
fn containerd_platform_message_is_arch_mismatch() {
    assert_eq!(
        bare("no match for platform in manifest: not found"),
        Some(PullFailure::ArchMismatch)
    );
    assert_eq!(
        bare("no match for platform in manifest"),
        Some(PullFailure::ArchMismatch)
    );
    // containerd 1.6 names the index digest in the same message.
    let with_digest = format!(
        "no match for platform in manifest sha256:{}: not found",
        "4".repeat(64)
    );
    assert_eq!(bare(&with_digest), Some(PullFailure::ArchMismatch));
}

/// Rule 1 also beats rule 2: a platform message that mentions a denial is still a mismatch.
#[test]
fn platform_rule_precedes_the_denial_rule() {
    assert_eq!(
        bare("no matching manifest for linux/arm64: access denied"),
        Some(PullFailure::ArchMismatch)
    );
}

/// Every real containerd message shape classifies as its kind, for the configured image.
#[test]
fn every_containerd_message_classifies_as_its_kind() {
    for kind in PullFailure::ALL {
        let message = containerd(kind, IMAGE);
        assert_eq!(
            classify_pull_message(&message, IMAGE),
            Some(kind),
            "{message}"
        );
        // The kubelet's back-off message carries the same error after a prefix.
        let backoff = format!("Back-off pulling image \"{IMAGE}\": ErrImagePull: {message}");
        assert_eq!(
            classify_pull_message(&backoff, IMAGE),
            Some(kind),
            "{backoff}"
        );
    }
}

/// O6: a timeout is not a permanent failure.
#[test]
fn o6_dial_timeout_is_not_a_pull_failure() {
    assert_eq!(bare("dial tcp: i/o timeout"), None);
    assert_eq!(bare(""), None);
    let timeout = format!(
        "failed to pull and unpack image \"{IMAGE}\": failed to do request: Head \
         \"https://registry.example.com/v2/team/agent/manifests/sha256:{}\": dial tcp \
         10.0.0.4:443: i/o timeout",
        "4013".repeat(16)
    );
    assert_eq!(classify_pull_message(&timeout, IMAGE), None, "{timeout}");
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
        assert_eq!(bare(message), Some(kind), "{message}");
    }
}

/// Rule 2 counts `401`/`403` only as whole HTTP status numbers: touching a letter or a digit on
/// either side, they are part of something else (a hash, a port, a longer number).
#[test]
fn status_codes_count_only_as_whole_numbers() {
    for whole in [
        "unexpected status: 401",
        "401 unauthorized",
        "status 403",
        "403 forbidden",
        "http status (403)",
        "code=401,",
    ] {
        assert_eq!(bare(whole), Some(PullFailure::Unauthorized), "{whole}");
    }
    for part in [
        "blob 4010 failed",
        "blob 1401 failed",
        "layer a401 failed",
        "layer 401b failed",
        "port :14031 refused",
        "id x403",
        "id 403x",
    ] {
        assert_eq!(bare(part), None, "{part}");
    }
}

/// Stripping happens before matching: a digest that happens to contain `401` or `403` never
/// makes a timeout Unauthorized, quoted or bare or behind a name.
#[test]
fn digests_are_removed_before_matching() {
    let hex = format!("{}401{}", "a".repeat(30), "b".repeat(31));
    let image = format!("registry.example.com/team/agent@sha256:{hex}");
    for message in [
        format!("pulling sha256:{hex}: i/o timeout"),
        format!("pulling \"{image}\": i/o timeout"),
        format!("pulling {image}: i/o timeout"),
        format!("pulling other.example/x@sha256:{hex}: i/o timeout"),
    ] {
        assert_eq!(classify_pull_message(&message, &image), None, "{message}");
        assert_eq!(bare(&message), None, "{message}");
    }
}

/// Only the digest is removed: hex beyond its 64 digits is ordinary text again, so a word glued
/// to the digest survives (kills an unbounded hex strip).
#[test]
fn a_digest_ends_after_64_hex_digits() {
    let message = format!("sha256:{}denied", "0".repeat(64));
    assert_eq!(bare(&message), Some(PullFailure::Unauthorized));
    assert_eq!(bare("sha256:401"), None);
}

/// An image name may contain any rule's word; the repeated reference is removed, so the name
/// never decides (`team/denied-agent`, `x/401`).
#[test]
fn image_names_never_match_a_rule() {
    let digest = format!("sha256:{}", "c".repeat(64));
    for name in [
        "registry.example.com/denied-agent",
        "registry.example.com/x/401",
        "unauthorized",
    ] {
        let image = format!("{name}@{digest}");
        let message = format!(
            "failed to pull and unpack image \"{image}\": failed to copy: httpReadSeeker: \
             failed open: {image}: i/o timeout"
        );
        assert_eq!(classify_pull_message(&message, &image), None, "{message}");
    }
}

/// The configured image is removed exactly, before the generic rules: the generic removal of a
/// `name@sha256:…` takes every name character before the `@`, which would also eat a rule word
/// glued to the reference (kills a skipped configured-image removal).
#[test]
fn the_configured_image_is_removed_exactly_first() {
    let message = format!("manifest unknown:{IMAGE}");
    assert_eq!(
        classify_pull_message(&message, IMAGE),
        Some(PullFailure::ManifestUnknown)
    );
    assert_eq!(bare(&message), None);
}

/// No configured image (an empty string) removes nothing: an empty pattern would otherwise
/// split every character apart.
#[test]
fn an_empty_image_removes_nothing() {
    assert_eq!(
        classify_pull_message("not found", ""),
        Some(PullFailure::ManifestUnknown)
    );
}

/// Only a quoted run without whitespace is a repeated reference; quoted prose stays and is
/// matched, and an unclosed quote removes nothing.
#[test]
fn quoted_prose_and_unclosed_quotes_stay() {
    assert_eq!(
        bare("server message: \"access denied by policy\""),
        Some(PullFailure::Unauthorized)
    );
    assert_eq!(bare("\"x/y\": denied"), Some(PullFailure::Unauthorized));
    assert_eq!(bare("\"x/401\": i/o timeout"), None);
    assert_eq!(bare("error \"denied"), Some(PullFailure::Unauthorized));
    assert_eq!(bare("a \"b\" \"c 403"), Some(PullFailure::Unauthorized));
}

/// Each removal leaves a space, so the text on its two sides never joins into a rule word or a
/// whole number.
#[test]
fn removals_never_join_their_neighbours() {
    assert_eq!(bare("un\"x/y\"authorized"), None);
    assert_eq!(bare(&format!("40sha256:{}1", "a".repeat(64))), None);
    assert_eq!(bare(&format!("40x@sha256:{}1", "a".repeat(64))), None);
    assert_eq!(classify_pull_message(&format!("40{IMAGE}1"), IMAGE), None);
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

/// The message shapes a digest appears in: containerd's three failures, the kubelet's back-off
/// wrapper, a timeout with a quoted URL, and bare and named digests in prose.
fn shapes(image: &str, hex: &str) -> Vec<String> {
    let mut all: Vec<String> = PullFailure::ALL
        .iter()
        .map(|kind| containerd(*kind, image))
        .collect();
    all.extend([
        format!("Back-off pulling image \"{image}\""),
        format!("Back-off pulling image \"{image}\": ErrImagePull: {}", containerd(PullFailure::ManifestUnknown, image)),
        format!(
            "failed to pull and unpack image \"{image}\": failed to do request: Head \
             \"https://registry.example.com/v2/team/agent/manifests/sha256:{hex}\": dial tcp: i/o timeout"
        ),
        format!("no match for platform in manifest sha256:{hex}: not found"),
        format!("failed to copy: httpReadSeeker: failed open: content at sha256:{hex} i/o timeout"),
        format!("{image}: i/o timeout"),
    ]);
    all
}

proptest::proptest! {
    /// A random 64-hex digest, in any message shape, never changes the verdict: it is the same as
    /// with a digest of zeros (deploy.md § Pull-failure classifier and Secret settling: about 3 %
    /// of digests contain `401` or `403`).
    #[test]
    fn a_random_digest_never_changes_the_verdict(hex in "[0-9a-f]{64}") {
        let neutral = "0".repeat(64);
        let image = format!("registry.example.com/team/agent@sha256:{hex}");
        let reference = format!("registry.example.com/team/agent@sha256:{neutral}");
        for (message, expected) in shapes(&image, &hex).iter().zip(shapes(&reference, &neutral)) {
            proptest::prop_assert_eq!(
                classify_pull_message(message, &image),
                classify_pull_message(&expected, &reference),
                "{}", message
            );
            // With no configured image at all, the generic removals alone suffice.
            proptest::prop_assert_eq!(
                classify_pull_message(message, ""),
                classify_pull_message(&expected, ""),
                "{}", message
            );
        }
    }
}

/// A removed quoted run ends after its closing quote: the next run starts fresh, so a rule word
/// between two references stays (kills a removal that resumes at the closing quote).
#[test]
fn text_between_two_quoted_references_stays() {
    assert_eq!(bare("\"a\"denied\"b\""), Some(PullFailure::Unauthorized));
}

/// The generic `name@sha256:` removal takes only the name before the `@`: prose before it
/// stays (kills a name matcher that accepts every character).
#[test]
fn prose_before_a_named_digest_stays() {
    let message = format!("access denied for x@sha256:{}", "0".repeat(64));
    assert_eq!(bare(&message), Some(PullFailure::Unauthorized));
}

// The real kubelet's pull messages (v1.20.2 + containerd 1.6.20), verbatim from the shared node
// reference (shared/node README § What the real kubelet writes, golden-statuses.json), each
// classified with the image as the pod spec writes it and with no image at all.

/// The verdict for a real message, with the spec's image and with none; both must agree.
fn real(message: &str, image: &str) -> Option<PullFailure> {
    let with_image = classify_pull_message(message, image);
    assert_eq!(with_image, bare(message), "{message}");
    with_image
}

/// Source: golden-statuses.json `pull-missing-digest` `err_image_pull.message`.
#[test]
fn real_missing_digest_is_manifest_unknown() {
    let message = "rpc error: code = NotFound desc = failed to pull and unpack image \"127.0.0.1:5000/agent@sha256:0000000000000000000000000000000000000000000000000000000000000000\": failed to resolve reference \"127.0.0.1:5000/agent@sha256:0000000000000000000000000000000000000000000000000000000000000000\": 127.0.0.1:5000/agent@sha256:0000000000000000000000000000000000000000000000000000000000000000: not found";
    let image = "127.0.0.1:5000/agent@sha256:0000000000000000000000000000000000000000000000000000000000000000";
    assert_eq!(real(message, image), Some(PullFailure::ManifestUnknown));
}

/// Source: golden-statuses.json `pull-401` `err_image_pull.message` (the registry answers 401).
#[test]
fn real_401_is_unauthorized() {
    let message = "rpc error: code = Unknown desc = failed to pull and unpack image \"127.0.0.1:5001/agent@sha256:a0c21b7206ac87c5720c8013dcfc9b08c5d8abb55bfd97a65b4d119c96cc2394\": failed to resolve reference \"127.0.0.1:5001/agent@sha256:a0c21b7206ac87c5720c8013dcfc9b08c5d8abb55bfd97a65b4d119c96cc2394\": pulling from host 127.0.0.1:5001 failed with status code [manifests sha256:a0c21b7206ac87c5720c8013dcfc9b08c5d8abb55bfd97a65b4d119c96cc2394]: 401 Unauthorized";
    let image = "127.0.0.1:5001/agent@sha256:a0c21b7206ac87c5720c8013dcfc9b08c5d8abb55bfd97a65b4d119c96cc2394";
    assert_eq!(real(message, image), Some(PullFailure::Unauthorized));
}

/// Source: golden-statuses.json `pull-401-wrong-password-always` `state.waiting.message` (a
/// wrong pull secret, `imagePullPolicy: Always`): the same 401 text.
#[test]
fn real_401_with_a_wrong_pull_secret_is_unauthorized() {
    let message = "rpc error: code = Unknown desc = failed to pull and unpack image \"127.0.0.1:5001/agent@sha256:a0c21b7206ac87c5720c8013dcfc9b08c5d8abb55bfd97a65b4d119c96cc2394\": failed to resolve reference \"127.0.0.1:5001/agent@sha256:a0c21b7206ac87c5720c8013dcfc9b08c5d8abb55bfd97a65b4d119c96cc2394\": pulling from host 127.0.0.1:5001 failed with status code [manifests sha256:a0c21b7206ac87c5720c8013dcfc9b08c5d8abb55bfd97a65b4d119c96cc2394]: 401 Unauthorized";
    let image = "127.0.0.1:5001/agent@sha256:a0c21b7206ac87c5720c8013dcfc9b08c5d8abb55bfd97a65b4d119c96cc2394";
    assert_eq!(real(message, image), Some(PullFailure::Unauthorized));
}

/// Source: golden-statuses.json `pull-arm64-only` `err_image_pull.message` (an index with only
/// linux/arm64).
#[test]
fn real_arm64_only_is_arch_mismatch() {
    let message = "rpc error: code = NotFound desc = failed to pull and unpack image \"127.0.0.1:5000/agent-arm64@sha256:8c3bb9d60c046e72456b25af3da59a91db878dedec1de57f7e000e6856a40079\": no match for platform in manifest: not found";
    let image = "127.0.0.1:5000/agent-arm64@sha256:8c3bb9d60c046e72456b25af3da59a91db878dedec1de57f7e000e6856a40079";
    assert_eq!(real(message, image), Some(PullFailure::ArchMismatch));
}

/// Source: golden-statuses.json `pull-missing-tag` `err_image_pull.message`.
#[test]
fn real_missing_tag_is_manifest_unknown() {
    let message = "rpc error: code = NotFound desc = failed to pull and unpack image \"127.0.0.1:5000/agent:nope\": failed to resolve reference \"127.0.0.1:5000/agent:nope\": 127.0.0.1:5000/agent:nope: not found";
    assert_eq!(
        real(message, "127.0.0.1:5000/agent:nope"),
        Some(PullFailure::ManifestUnknown)
    );
}

/// Source: golden-statuses.json `pull-missing-repo` `err_image_pull.message`.
#[test]
fn real_missing_repository_is_manifest_unknown() {
    let message = "rpc error: code = NotFound desc = failed to pull and unpack image \"127.0.0.1:5000/nothere:v1\": failed to resolve reference \"127.0.0.1:5000/nothere:v1\": 127.0.0.1:5000/nothere:v1: not found";
    assert_eq!(
        real(message, "127.0.0.1:5000/nothere:v1"),
        Some(PullFailure::ManifestUnknown)
    );
}

/// Source: golden-statuses.json `pull-registry-down` `err_image_pull.message`: a refused
/// connection may heal, so it is no kind (the pod stays recoverable).
#[test]
fn real_registry_down_is_no_kind() {
    let message = "rpc error: code = Unknown desc = failed to pull and unpack image \"127.0.0.1:5009/agent:v1\": failed to resolve reference \"127.0.0.1:5009/agent:v1\": failed to do request: Head \"http://127.0.0.1:5009/v2/agent/manifests/v1\": dial tcp 127.0.0.1:5009: connect: connection refused";
    assert_eq!(real(message, "127.0.0.1:5009/agent:v1"), None);
}

/// Source: golden-statuses.json `pull-missing-digest` `state.waiting.message`: the real
/// `ImagePullBackOff` message names only the image, so it is no kind whatever the failure was;
/// the kind is known only while the kubelet shows `ErrImagePull`.
#[test]
fn real_image_pull_backoff_message_is_no_kind() {
    let message = "Back-off pulling image \"127.0.0.1:5000/agent@sha256:0000000000000000000000000000000000000000000000000000000000000000\"";
    let image = "127.0.0.1:5000/agent@sha256:0000000000000000000000000000000000000000000000000000000000000000";
    assert_eq!(real(message, image), None);
    // The same holds for the 401 and the platform cases' back-off messages.
    let auth = "127.0.0.1:5001/agent@sha256:a0c21b7206ac87c5720c8013dcfc9b08c5d8abb55bfd97a65b4d119c96cc2394";
    assert_eq!(
        real(&format!("Back-off pulling image \"{auth}\""), auth),
        None
    );
}
