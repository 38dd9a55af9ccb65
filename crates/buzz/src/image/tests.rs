//! One test per image rule of buzz-provider.md § 3.4, each pinning the exact message.

use super::*;

const HEX: &str = "17facfc7608d8ddb33bc056c9aaba1098f4ef6abe5655702fbfd7584d1f74d76";

fn message(input: &str) -> String {
    parse(input).expect_err("refused").to_string()
}

/// Rule 1: empty or blank is "required", never a default image.
#[test]
fn blank_image_is_required() {
    for input in ["", "   ", "\t\n"] {
        assert_eq!(
            message(input),
            "provider_config.image is required: no image is assumed at parse time, so the \
             digest-pinned image to run must be given explicitly"
        );
    }
}

/// Rule 2 and the golden fixture: a tag is refused with the `deploy-tag-image` text.
#[test]
fn tag_image_is_not_digest_pinned() {
    assert_eq!(
        message("ghcr.io/block/buzz-sprig:latest"),
        "provider_config.image \"ghcr.io/block/buzz-sprig:latest\" is not digest-pinned: a tag \
         is a mutable pointer, and this object runs with the agent's private key. Use \
         name@sha256:<64 hex chars>"
    );
}

/// Rule 2: every tag-only reference is refused, not just `:latest`, and the message shows the
/// trimmed reference.
#[test]
fn every_tag_only_reference_is_refused() {
    for input in ["busybox", "ghcr.io/x/y:v1.2.3", "  localhost:5000/a:dev  "] {
        assert!(matches!(parse(input), Err(ImageError::NotPinned(r)) if r == input.trim()));
    }
}

/// Rule 2: two `@` are refused.
#[test]
fn two_digests_are_refused() {
    let input = format!("a@sha256:{HEX}@sha256:{HEX}");
    assert_eq!(
        message(&input),
        format!("provider_config.image \"{input}\" contains more than one '@'")
    );
}

/// Rule 3: the digest must be sha256.
#[test]
fn digest_must_be_sha256() {
    assert_eq!(
        message(&format!("a@sha512:{HEX}")),
        format!("provider_config.image digest \"sha512:{HEX}\" must start with 'sha256:'")
    );
}

/// Rule 4: exactly 64 lowercase hex; uppercase, short and long are refused.
#[test]
fn digest_hex_is_64_lowercase() {
    let upper = HEX.to_uppercase();
    for hex in [upper.as_str(), &HEX[..63], &format!("{HEX}0"), ""] {
        assert_eq!(
            message(&format!("a@sha256:{hex}")),
            format!(
                "provider_config.image digest \"sha256:{hex}\" must be exactly 64 lowercase hex \
                 characters"
            )
        );
    }
}

/// Rule 5: a tag is dropped, a registry port is kept.
#[test]
fn tag_is_dropped_and_port_kept() {
    assert_eq!(
        parse(&format!("localhost:5000/buzz-sprig:dev@sha256:{HEX}")).unwrap(),
        format!("localhost:5000/buzz-sprig@sha256:{HEX}")
    );
    assert_eq!(
        parse(&format!("host:5000/name@sha256:{HEX}")).unwrap(),
        format!("host:5000/name@sha256:{HEX}")
    );
    assert_eq!(
        parse(&format!(
            " ghcr.io/block/buzz-sprig:sha-6530b58@sha256:{HEX} "
        ))
        .unwrap(),
        format!("ghcr.io/block/buzz-sprig@sha256:{HEX}")
    );
}

/// Rule 6: nothing left of the name.
#[test]
fn empty_name_is_refused() {
    for input in [format!("@sha256:{HEX}"), format!(":tag@sha256:{HEX}")] {
        assert_eq!(
            message(&input),
            format!("provider_config.image \"{input}\" has no repository name")
        );
    }
}

/// Rule 7: `name:tag@digest` and `name@digest` normalize (and so fingerprint) the same.
#[test]
fn tagged_and_untagged_normalize_alike() {
    assert_eq!(
        parse(&format!("r/n:t@sha256:{HEX}")).unwrap(),
        parse(&format!("r/n@sha256:{HEX}")).unwrap()
    );
}
