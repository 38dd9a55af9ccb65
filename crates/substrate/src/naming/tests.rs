//! Unit tests of `naming`: the N* scenarios of deploy.md § Templates, fingerprint, names, image,
//! input, plus the AGENT rules. Pure; no I/O.

use apiary_classify::binding::APIARY;
use proptest::prelude::*;

use super::*;

fn identity(name: &str) -> AgentIdentity {
    AgentIdentity::new(name).expect("valid test agent name")
}

/// N2: the vectors of deploy.md § Names are reproduced exactly (agent_id prefix and pod name).
#[test]
fn n2_name_vectors() {
    let vectors = [
        (
            "Research Bot #1",
            "72bea12366a35432ab394024ae44c214",
            "apiary-research-bot-1-72bea12366a3",
        ),
        (
            "Release Notes Drafting Helper - EU",
            "f9b32d5e68dde69e024b9bb5268f0b7a",
            "apiary-release-notes-drafting-helper-f9b32d5e68dd",
        ),
        (
            "A very long agent name that keeps going and going",
            "b9dc301acbf77299dfdfc93011416522",
            "apiary-a-very-long-agent-name-that-ke-b9dc301acbf7",
        ),
        (
            "Ünïcode Agent",
            "52d73e5f3a4d63270f9b89bcd546c4eb",
            "apiary-n-code-agent-52d73e5f3a4d",
        ),
        (
            "日本語",
            "77710aedc74ecfa33685e33a6c7df5cc",
            "apiary-77710aedc74e",
        ),
    ];
    for (agent, label, pod) in vectors {
        let id = identity(agent);
        assert_eq!(id.label_value(), label, "label of {agent}");
        assert!(id.id().starts_with(label));
        assert_eq!(id.pod_name(), pod, "pod name of {agent}");
        assert_eq!(pod_name(agent), pod, "free pod_name of {agent}");
    }
}

/// N2: the full agent_id of the first vector.
#[test]
fn n2_full_agent_id_vector() {
    assert_eq!(
        agent_id("Research Bot #1"),
        "72bea12366a35432ab394024ae44c214b8cee51a8e1c04be8797a1dc17805c98"
    );
    assert_eq!(
        identity("Research Bot #1").id(),
        "72bea12366a35432ab394024ae44c214b8cee51a8e1c04be8797a1dc17805c98"
    );
}

/// Slug steps: lowercase ASCII, collapse runs, trim, cut at 30, trim again.
#[test]
fn slug_steps() {
    assert_eq!(slug("ABC"), "abc");
    assert_eq!(slug("a  b"), "a-b");
    assert_eq!(slug("--a--"), "a");
    assert_eq!(slug("日本語"), "");
    assert_eq!(slug(&"x".repeat(31)), "x".repeat(30));
    assert_eq!(slug(&"y".repeat(30)), "y".repeat(30));
    // The 30th character is a `-` before the cut: it is trimmed again afterwards.
    assert_eq!(slug(&format!("{} b", "a".repeat(29))), "a".repeat(29));
    assert_eq!(slug("a9Z"), "a9z");
}

/// N1: empty AGENT is refused and names the rule.
#[test]
fn n1_empty_refused() {
    let err = AgentIdentity::new("").unwrap_err();
    assert_eq!(err, AgentNameError::Empty);
    assert!(err.to_string().contains("empty"));
}

/// N1: 254 bytes refused, 253 accepted (boundary).
#[test]
fn n1_length_boundary() {
    assert_eq!(
        AgentIdentity::new(&"a".repeat(254)).unwrap_err(),
        AgentNameError::TooLong { bytes: 254 }
    );
    assert!(AgentIdentity::new(&"a".repeat(253)).is_ok());
    assert!(AgentIdentity::new("a").is_ok());
    // Bytes, not characters: 127 two-byte characters are 254 bytes.
    assert!(matches!(
        AgentIdentity::new(&"é".repeat(127)),
        Err(AgentNameError::TooLong { bytes: 254 })
    ));
    assert!(
        AgentIdentity::new(&"a".repeat(254))
            .unwrap_err()
            .to_string()
            .contains("253")
    );
}

/// N1: a control character anywhere is refused, with its position.
#[test]
fn n1_control_character_refused() {
    assert_eq!(
        AgentIdentity::new("ab\u{7}c").unwrap_err(),
        AgentNameError::ControlCharacter { position: 2 }
    );
    assert!(matches!(
        AgentIdentity::new("a\nb"),
        Err(AgentNameError::ControlCharacter { position: 1 })
    ));
    assert!(matches!(
        AgentIdentity::new("a\u{9f}"),
        Err(AgentNameError::ControlCharacter { .. })
    ));
    assert!(
        AgentIdentity::new("a\u{0}b")
            .unwrap_err()
            .to_string()
            .contains("control character")
    );
}

/// N1: leading or trailing whitespace is refused, never trimmed.
#[test]
fn n1_surrounding_whitespace_refused_never_trimmed() {
    assert_eq!(
        AgentIdentity::new(" bot").unwrap_err(),
        AgentNameError::LeadingWhitespace
    );
    assert_eq!(
        AgentIdentity::new("bot ").unwrap_err(),
        AgentNameError::TrailingWhitespace
    );
    // U+3000 IDEOGRAPHIC SPACE is White_Space but not ASCII.
    assert_eq!(
        AgentIdentity::new("\u{3000}bot").unwrap_err(),
        AgentNameError::LeadingWhitespace
    );
    assert_eq!(
        AgentIdentity::new("bot\u{3000}").unwrap_err(),
        AgentNameError::TrailingWhitespace
    );
    assert!(
        AgentIdentity::new(" bot")
            .unwrap_err()
            .to_string()
            .contains("begins")
    );
    assert!(
        AgentIdentity::new("bot ")
            .unwrap_err()
            .to_string()
            .contains("ends")
    );
    // Inner whitespace is fine and kept byte-exact.
    assert_eq!(identity("a b").name(), "a b");
    assert_eq!("a b".parse::<AgentIdentity>().unwrap().name(), "a b");
}

/// N1: identity is byte-exact: no case folding.
#[test]
fn identity_is_byte_exact() {
    assert_ne!(identity("Bot").id(), identity("bot").id());
}

/// N3: the label value is the first 32 hex of the agent_id (≤ 63).
#[test]
fn n3_label_value_is_32_hex() {
    let id = identity("Research Bot #1");
    assert_eq!(id.label_value().len(), 32);
    assert_eq!(
        id.labels()[APIARY.label_agent],
        "72bea12366a35432ab394024ae44c214"
    );
}

/// N7 / deploy.md § Labels, annotations, selector: labels and annotations have the literal keys and
/// values.
#[test]
fn labels_and_annotations_literals() {
    let id = identity("Research Bot #1");
    let labels = id.labels();
    assert_eq!(labels.len(), 3);
    assert_eq!(labels["app.kubernetes.io/managed-by"], "apiary");
    assert_eq!(labels["apiary.dev/binding-version"], "1");
    assert_eq!(
        labels["apiary.dev/agent"],
        "72bea12366a35432ab394024ae44c214"
    );
    let annotations = id.annotations();
    assert_eq!(annotations.len(), 2);
    assert_eq!(
        annotations["apiary.dev/agent-id"],
        "72bea12366a35432ab394024ae44c214b8cee51a8e1c04be8797a1dc17805c98"
    );
    assert_eq!(annotations["apiary.dev/agent-name"], "Research Bot #1");
    assert_eq!(APIARY.annotation_create_intent, "apiary.dev/create-intent");
    assert_eq!(APIARY.annotation_image, "apiary.dev/image");
}

/// N6: the selector carries both requirements.
#[test]
fn n6_selector_has_both_requirements() {
    assert_eq!(
        identity("Research Bot #1").selector(),
        "apiary.dev/agent=72bea12366a35432ab394024ae44c214,app.kubernetes.io/managed-by=apiary"
    );
}

/// N5: two generations give two Secret names, both prefixed by the pod name, ≤ 59.
#[test]
fn n5_secret_names_per_generation() {
    let id = identity(&"z".repeat(200));
    let a = id.secret_name(Generation::from_u32(1));
    let b = id.secret_name(Generation::from_u32(0xdead_beef));
    assert_ne!(a, b);
    assert_eq!(a, format!("{}-00000001", id.pod_name()));
    assert_eq!(b, format!("{}-deadbeef", id.pod_name()));
    assert_eq!(id.pod_name().len(), 50);
    assert_eq!(b.len(), 59);
    assert_eq!(secret_name("p", Generation::from_u32(255)), "p-000000ff");
}

/// Generation: 8 lowercase hex, parse is the inverse of Display, anything else refused.
#[test]
fn generation_format_and_parse() {
    assert_eq!(Generation::from_u32(0).to_string(), "00000000");
    assert_eq!(Generation::from_u32(u32::MAX).to_string(), "ffffffff");
    assert_eq!(Generation::parse("0000abcd").unwrap().value(), 0xabcd);
    assert_eq!("ffffffff".parse::<Generation>().unwrap().value(), u32::MAX);
    for bad in [
        "",
        "abc",
        "0000ABCD",
        "0000abcg",
        "000000000",
        "+0000abc",
        "-0000abc",
        "0000abc ",
    ] {
        let err = Generation::parse(bad).unwrap_err();
        assert!(err.to_string().contains("8 lowercase hex"), "{bad}");
    }
}

/// Generation::mint returns fresh values from the OS RNG (two 32-bit draws colliding three
/// times in a row is practically impossible).
#[test]
fn generation_mint_is_random() {
    let draws: std::collections::BTreeSet<u32> = (0..3)
        .map(|_| Generation::mint().expect("os rng").value())
        .collect();
    assert!(draws.len() >= 2, "three mints gave {draws:?}");
}

proptest! {
    /// N4: every pod name is a DNS-1123 label of at most 50 characters; Secret names ≤ 59.
    #[test]
    fn n4_pod_name_always_valid(name in "\\PC{1,80}", generation in any::<u32>()) {
        let pod = pod_name(&name);
        prop_assert!(pod.len() <= 50);
        prop_assert!(pod.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'));
        prop_assert!(pod.starts_with("apiary-"));
        prop_assert!(!pod.ends_with('-'));
        prop_assert!(!pod.contains("--"));
        let secret = secret_name(&pod, Generation::from_u32(generation));
        prop_assert!(secret.len() <= 59);
        prop_assert!(secret.starts_with(&pod));
    }

    /// The slug never starts or ends with `-`, is at most 30 characters and only `[a-z0-9-]`.
    #[test]
    fn slug_always_well_formed(name in ".{0,100}") {
        let s = slug(&name);
        prop_assert!(s.len() <= 30);
        prop_assert!(!s.starts_with('-') && !s.ends_with('-'));
        prop_assert!(s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'));
    }

    /// Generation display and parse round-trip.
    #[test]
    fn generation_round_trip(value in any::<u32>()) {
        let g = Generation::from_u32(value);
        prop_assert_eq!(Generation::parse(&g.to_string()), Ok(g));
    }
}

/// deploy.md § Persistent workspace: one claim name per agent, its pod name plus `-workspace`
/// (under the buzz binding: `apiary-buzz`'s `binding` tests).
#[test]
fn the_workspace_claim_is_named_after_the_pod() {
    assert_eq!(
        identity("Research Bot #1").workspace_claim_name(),
        "apiary-research-bot-1-72bea12366a3-workspace"
    );
}
