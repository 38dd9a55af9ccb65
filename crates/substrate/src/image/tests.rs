//! Unit tests of `image`: the I* scenarios of deploy.md § Templates, fingerprint, names, image,
//! input. Pure; no I/O.

use proptest::prelude::*;

use super::*;

fn hex64() -> String {
    "0123456789abcdef".repeat(4)
}

fn digest() -> String {
    format!("sha256:{}", hex64())
}

/// I1: `name@sha256:<64>` is unchanged.
#[test]
fn i1_pinned_reference_unchanged() {
    let input = format!("registry.example.com/team/agent@{}", digest());
    let image = ImageRef::parse(&input).unwrap();
    assert_eq!(image.as_str(), input);
    assert_eq!(image.to_string(), input);
    assert_eq!(image.name(), "registry.example.com/team/agent");
    assert_eq!(image.digest(), digest());
}

/// I2: `name:v1.2@d` normalizes to `name@d`.
#[test]
fn i2_tag_dropped() {
    let tagged = ImageRef::parse(&format!("name:v1.2@{}", digest())).unwrap();
    let plain = ImageRef::parse(&format!("name@{}", digest())).unwrap();
    assert_eq!(tagged, plain);
    assert_eq!(tagged.as_str(), format!("name@{}", digest()));
}

/// I3: a registry port survives.
#[test]
fn i3_port_kept() {
    let input = format!("localhost:5000/x@{}", digest());
    assert_eq!(ImageRef::parse(&input).unwrap().as_str(), input);
}

/// I4: tag after a registry port is dropped, the port kept.
#[test]
fn i4_tag_after_port_dropped() {
    let image = ImageRef::parse(&format!("localhost:5000/x:dev@{}", digest())).unwrap();
    assert_eq!(image.as_str(), format!("localhost:5000/x@{}", digest()));
    assert_eq!(image.name(), "localhost:5000/x");
}

/// I5: every tag-only reference is refused with the pinning explanation, quoting it.
#[test]
fn i5_tag_only_refused() {
    for reference in [
        "agent:latest",
        "agent:v1.2.3",
        "agent:sha-abc1234",
        ":latest",
        "agent",
        "localhost:5000/x",
    ] {
        let err = ImageRef::parse(reference).unwrap_err();
        assert_eq!(
            err,
            ImageError::TagOnly {
                reference: reference.to_owned()
            }
        );
        let text = err.to_string();
        assert!(text.contains(&format!("{reference:?}")), "{text}");
        assert!(text.contains("mutable pointer"), "{text}");
        assert!(text.contains("secrets"), "{text}");
        assert!(text.contains("name@sha256:<64 hex>"), "{text}");
        assert!(text.contains("registry reports"), "{text}");
    }
}

/// I6: uppercase hex is refused so a digest has one spelling.
#[test]
fn i6_uppercase_hex_refused() {
    let upper = format!("sha256:{}", hex64().to_uppercase());
    let err = ImageRef::parse(&format!("name@{upper}")).unwrap_err();
    assert_eq!(
        err,
        ImageError::MalformedDigest {
            digest: upper.clone()
        }
    );
    assert!(err.to_string().contains(&upper));
    assert!(err.to_string().contains("lowercase"));
}

/// I7: wrong digest length, algorithm, characters, two `@`, empty name are refused.
#[test]
fn i7_malformed_references_refused() {
    let h = hex64();
    let d63 = format!("sha256:{}", &h[..63]);
    let d65 = format!("sha256:{h}0");
    assert_eq!(
        ImageRef::parse(&format!("n@{d63}")),
        Err(ImageError::MalformedDigest { digest: d63 })
    );
    assert_eq!(
        ImageRef::parse(&format!("n@{d65}")),
        Err(ImageError::MalformedDigest { digest: d65 })
    );
    let g = format!("sha256:{}g", &h[..63]);
    assert_eq!(
        ImageRef::parse(&format!("n@{g}")),
        Err(ImageError::MalformedDigest { digest: g })
    );
    let sha512 = format!("sha512:{h}");
    let err = ImageRef::parse(&format!("n@{sha512}")).unwrap_err();
    assert_eq!(
        err,
        ImageError::UnsupportedAlgorithm {
            digest: sha512.clone()
        }
    );
    assert!(err.to_string().contains(&sha512) && err.to_string().contains("sha256:"));
    assert_eq!(
        ImageRef::parse(&format!("n@{h}")),
        Err(ImageError::UnsupportedAlgorithm { digest: h.clone() })
    );
    let two = format!("n@{}@{}", digest(), digest());
    let err = ImageRef::parse(&two).unwrap_err();
    assert_eq!(
        err,
        ImageError::MultipleAt {
            reference: two.clone()
        }
    );
    assert!(err.to_string().contains("more than one '@'"));
    for empty_name in [format!("@{}", digest()), format!(":tag@{}", digest())] {
        let err = ImageRef::parse(&empty_name).unwrap_err();
        assert_eq!(
            err,
            ImageError::NoRepositoryName {
                reference: empty_name.clone()
            }
        );
        assert!(err.to_string().contains("no repository name"));
    }
}

/// I8: empty and whitespace-only references say an image is required.
#[test]
fn i8_image_required() {
    for input in ["", "   ", "\t\n"] {
        let err = ImageRef::parse(input).unwrap_err();
        assert_eq!(err, ImageError::Required);
        assert!(err.to_string().contains("image is required"));
        assert!(err.to_string().contains("digest-pinned"));
    }
}

/// deploy.md § Image reference, rule 1: surrounding whitespace is trimmed before parsing.
#[test]
fn surrounding_whitespace_trimmed() {
    let image = ImageRef::parse(&format!("  name@{}\n", digest())).unwrap();
    assert_eq!(image.as_str(), format!("name@{}", digest()));
    assert_eq!(
        format!("name@{}", digest()).parse::<ImageRef>().unwrap(),
        image
    );
}

proptest! {
    /// The normalizer is idempotent: normalizing a normalized reference changes nothing.
    #[test]
    fn normalizer_idempotent(
        host in "([a-z0-9]{1,8}\\.[a-z]{2,3}(:[0-9]{2,5})?/)?",
        path in "[a-z0-9]{1,8}(/[a-z0-9._-]{1,8}){0,2}",
        tag in "(:[A-Za-z0-9._-]{1,10})?",
        hex in "[0-9a-f]{64}",
    ) {
        let input = format!("{host}{path}{tag}@sha256:{hex}");
        let once = ImageRef::parse(&input).unwrap();
        let twice = ImageRef::parse(once.as_str()).unwrap();
        prop_assert_eq!(&once, &twice);
        prop_assert_eq!(once.as_str(), format!("{host}{path}@sha256:{hex}"));
    }

    /// Whatever the input, an accepted reference is `name@sha256:<64 lowercase hex>`.
    #[test]
    fn accepted_references_are_pinned(input in ".{0,90}") {
        if let Ok(image) = ImageRef::parse(&input) {
            prop_assert!(!image.name().is_empty());
            let hex = image.digest().strip_prefix("sha256:").unwrap();
            prop_assert_eq!(hex.len(), 64);
            prop_assert!(hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        }
    }
}
