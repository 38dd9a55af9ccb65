//! Unit tests of `env`: V6, V7, V8 and V11 of deploy.md § Templates, fingerprint, names, image,
//! input. Pure; no I/O.

use proptest::prelude::*;

use super::*;

const SECRET: &str = "s3cr3t-VALUE-do-not-print";

fn agent() -> AgentIdentity {
    AgentIdentity::new("Research Bot #1").unwrap()
}

/// V6: non-POSIX keys are refused, naming the key and the rule.
#[test]
fn v6_non_posix_keys_refused() {
    let cases = [
        ("foo.bar", KeyProblem::InvalidCharacter),
        ("foo-bar", KeyProblem::InvalidCharacter),
        ("1LEADING", KeyProblem::LeadingDigit),
        ("", KeyProblem::Empty),
        ("has space", KeyProblem::InvalidCharacter),
        ("ÜBER", KeyProblem::InvalidCharacter),
    ];
    for (key, problem) in cases {
        let err = validate_key(key).unwrap_err();
        assert_eq!(
            err,
            EnvError::InvalidKey {
                key: key.to_owned(),
                problem
            }
        );
        let text = err.to_string();
        assert!(text.contains(&format!("{key:?}")), "{text}");
        assert!(text.contains("POSIX"), "{text}");
        assert!(text.contains(&problem.to_string()), "{text}");
        // Through the builder as well, with a value that must not leak.
        let user: Env = [(key, SECRET)].into_iter().collect();
        let err = AgentEnv::build(&user, &agent()).unwrap_err();
        assert!(!err.to_string().contains(SECRET));
        assert!(!format!("{err:?}").contains(SECRET));
    }
    for key in ["_", "A", "a_1", "_9", "Z9_z", "APIARY_X"] {
        assert_eq!(validate_key(key), Ok(()), "{key}");
    }
}

/// Each key problem has its own wording.
#[test]
fn key_problem_texts() {
    assert_eq!(KeyProblem::Empty.to_string(), "it is empty");
    assert_eq!(
        KeyProblem::LeadingDigit.to_string(),
        "it starts with a digit"
    );
    assert_eq!(
        KeyProblem::InvalidCharacter.to_string(),
        "it contains a character outside [A-Za-z0-9_]"
    );
}

/// V7: user input setting each authoritative key is removed, reported by key, and apiary's
/// value wins.
#[test]
fn v7_authoritative_keys_overridden() {
    let a = agent();
    for key in AUTHORITATIVE_KEYS {
        let user: Env = [(key, SECRET), ("KEEP", "kept")].into_iter().collect();
        let env = AgentEnv::build(&user, &a).unwrap();
        assert_eq!(env.removed_keys(), [key]);
        let attempt = env.for_attempt(Generation::from_u32(0xabc));
        assert_eq!(attempt.get("APIARY_AGENT_NAME"), Some("Research Bot #1"));
        assert_eq!(
            attempt.get("APIARY_AGENT_ID"),
            Some("72bea12366a35432ab394024ae44c214b8cee51a8e1c04be8797a1dc17805c98")
        );
        assert_eq!(attempt.get("APIARY_START_NONCE"), Some("00000abc"));
        assert_eq!(attempt.get("KEEP"), Some("kept"));
        assert_eq!(attempt.len(), 4);
        assert!(!format!("{env:?}").contains(SECRET));
    }
    let all: Env = AUTHORITATIVE_KEYS.iter().map(|k| (*k, "x")).collect();
    let env = AgentEnv::build(&all, &a).unwrap();
    assert_eq!(
        env.removed_keys(),
        ["APIARY_AGENT_NAME", "APIARY_AGENT_ID", "APIARY_START_NONCE"]
    );
    // Exact, case-sensitive match: a lower-case look-alike stays.
    let lower: Env = [("apiary_agent_name", "x")].into_iter().collect();
    let env = AgentEnv::build(&lower, &a).unwrap();
    assert!(env.removed_keys().is_empty());
    assert_eq!(
        env.for_attempt(Generation::from_u32(1))
            .get("apiary_agent_name"),
        Some("x")
    );
}

/// deploy.md § Environment, rule 5: the nonce is restamped per attempt and equals the generation.
#[test]
fn nonce_restamped_per_attempt() {
    let env = AgentEnv::build(&Env::new(), &agent()).unwrap();
    let one = env.for_attempt(Generation::from_u32(1));
    let two = env.for_attempt(Generation::from_u32(0xffff_ffff));
    assert_eq!(one.get(APIARY_START_NONCE), Some("00000001"));
    assert_eq!(two.get(APIARY_START_NONCE), Some("ffffffff"));
    assert_eq!(one.len(), 3);
}

/// The final key list includes the authoritative keys and is sorted bytewise.
#[test]
fn final_keys_sorted_with_authoritative() {
    let user: Env = [("b", "1"), ("LOG_LEVEL", "debug"), ("Z", "2")]
        .into_iter()
        .collect();
    let env = AgentEnv::build(&user, &agent()).unwrap();
    assert_eq!(
        env.keys(),
        [
            "APIARY_AGENT_ID",
            "APIARY_AGENT_NAME",
            "APIARY_START_NONCE",
            "LOG_LEVEL",
            "Z",
            "b"
        ]
    );
}

/// V8: 1,048,576 summed bytes (authoritative included) are accepted, 1,048,577 refused with
/// the total and the limit.
#[test]
fn v8_size_cap_boundary() {
    let a = agent();
    let own = a.name().len() + 64 + 8;
    let fits: Env = [("BIG", "x".repeat(MAX_ENV_VALUE_BYTES - own))]
        .into_iter()
        .collect();
    let env = AgentEnv::build(&fits, &a).unwrap();
    assert_eq!(env.value_bytes(), 1_048_576);
    assert_eq!(
        env.for_attempt(Generation::from_u32(7)).value_bytes(),
        1_048_576
    );

    let over: Env = [("BIG", "x".repeat(MAX_ENV_VALUE_BYTES - own + 1))]
        .into_iter()
        .collect();
    let err = AgentEnv::build(&over, &a).unwrap_err();
    assert_eq!(
        err,
        EnvError::TooLarge {
            total: 1_048_577,
            limit: 1_048_576
        }
    );
    let text = err.to_string();
    assert!(
        text.contains("1048577") && text.contains("1048576"),
        "{text}"
    );
    assert!(!text.contains("xxxx"));
}

/// V8: the cap counts bytes, not characters, and removed authoritative values do not count.
#[test]
fn v8_counts_utf8_bytes_after_removal() {
    let a = agent();
    let own = a.name().len() + 64 + 8;
    // "é" is two bytes.
    let half = (MAX_ENV_VALUE_BYTES - own) / 2;
    let user: Env = [
        ("WIDE", "é".repeat(half + 1)),
        (APIARY_AGENT_NAME, "y".repeat(10)),
    ]
    .into_iter()
    .collect();
    assert!(matches!(
        AgentEnv::build(&user, &a),
        Err(EnvError::TooLarge { .. })
    ));
    let user: Env = [
        ("WIDE", "é".repeat(half)),
        (APIARY_AGENT_NAME, "y".repeat(MAX_ENV_VALUE_BYTES)),
    ]
    .into_iter()
    .collect();
    assert!(AgentEnv::build(&user, &a).is_ok());
}

/// V11: Debug of Env, AgentEnv and EnvArg shows keys and `<redacted>`, never a value.
#[test]
fn v11_debug_redacts_values() {
    let user: Env = [("TOKEN", SECRET), ("EMPTY", "")].into_iter().collect();
    let text = format!("{user:?}");
    assert_eq!(text, r#"{"EMPTY": <redacted>, "TOKEN": <redacted>}"#);
    let env = AgentEnv::build(&user, &agent()).unwrap();
    let text = format!("{env:?}");
    assert!(text.contains("TOKEN") && text.contains("<redacted>"));
    assert!(!text.contains(SECRET));
    let attempt = env.for_attempt(Generation::from_u32(3));
    assert!(!format!("{attempt:?}").contains(SECRET));
    assert!(!format!("{attempt:#?}").contains(SECRET));
    let arg = EnvArg::parse(&format!("TOKEN={SECRET}"));
    assert_eq!(
        format!("{arg:?}"),
        r#"Assign { key: "TOKEN", value: <redacted> }"#
    );
    assert_eq!(
        format!("{:?}", EnvArg::parse("HOME")),
        r#"Inherit { key: "HOME" }"#
    );
}

/// deploy.md § Environment, rule 1: `--env KEY=VALUE` splits at the first `=`; empty values and `=`
/// in values kept.
#[test]
fn env_arg_split_at_first_equals() {
    assert_eq!(
        EnvArg::parse("K=a=b="),
        EnvArg::Assign {
            key: "K".into(),
            value: "a=b=".into()
        }
    );
    assert_eq!(
        EnvArg::parse("K="),
        EnvArg::Assign {
            key: "K".into(),
            value: String::new()
        }
    );
    assert_eq!(EnvArg::parse("K"), EnvArg::Inherit { key: "K".into() });
    assert_eq!(EnvArg::parse("K=v").key(), "K");
    assert_eq!(EnvArg::parse("K").key(), "K");
}

/// V9: `--env KEY` takes the value from the caller's lookup; unset is refused naming KEY.
#[test]
fn v9_inherited_key() {
    let found = EnvArg::parse("TOKEN").resolve(|k| (k == "TOKEN").then(|| SECRET.to_owned()));
    assert_eq!(found, Ok(("TOKEN".to_owned(), SECRET.to_owned())));
    let err = EnvArg::parse("MISSING").resolve(|_| None).unwrap_err();
    assert_eq!(
        err,
        EnvError::InheritedUnset {
            key: "MISSING".into()
        }
    );
    let text = err.to_string();
    assert!(
        text.contains("\"MISSING\"") && text.contains("--env MISSING=VALUE"),
        "{text}"
    );
    // An assignment never consults the environment.
    let assigned = EnvArg::parse("K=v").resolve(|_| panic!("lookup must not run"));
    assert_eq!(assigned, Ok(("K".to_owned(), "v".to_owned())));
}

/// Env map behaviour: later set wins, remove, contains, len, iteration order, into_map.
#[test]
fn env_map_behaviour() {
    let mut env = Env::new();
    assert!(env.is_empty());
    env.set("A", "1");
    env.set("A", "2");
    env.set("B", "");
    assert_eq!(env.get("A"), Some("2"));
    assert!(env.contains_key("B"));
    assert!(!env.contains_key("C"));
    assert_eq!(env.len(), 2);
    assert!(!env.is_empty());
    assert_eq!(env.iter().collect::<Vec<_>>(), [("A", "2"), ("B", "")]);
    assert_eq!(env.value_bytes(), 1);
    assert_eq!(env.remove("A"), Some("2".to_owned()));
    assert_eq!(env.remove("A"), None);
    let map = env.into_map();
    assert_eq!(map.len(), 1);
}

proptest! {
    /// V11: whatever the value, no error or Debug output of the builder contains it.
    #[test]
    fn v11_no_value_in_errors_or_debug(
        key in "[A-Za-z_.-][A-Za-z0-9_. -]{0,8}",
        value in "[A-Za-z0-9]{12,24}",
    ) {
        let user: Env = [(key.clone(), value.clone())].into_iter().collect();
        { let shown = format!("{:?}", user); prop_assert!(!shown.contains(&value)); }
        match AgentEnv::build(&user, &agent()) {
            Ok(env) => {
                { let shown = format!("{:?}", env); prop_assert!(!shown.contains(&value)); }
                let attempt = env.for_attempt(Generation::from_u32(1));
                { let shown = format!("{:?}", attempt); prop_assert!(!shown.contains(&value)); }
            }
            Err(err) => {
                { let shown = err.to_string(); prop_assert!(!shown.contains(&value)); }
                { let shown = format!("{:?}", err); prop_assert!(!shown.contains(&value)); }
            }
        }
    }
}

fn live(pairs: &[(&str, &str)]) -> SecretValues {
    SecretValues::new(
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.as_bytes().to_vec()))
            .collect(),
    )
}

/// deploy.md § Replacing a live agent: the keys whose values differ (changed, added, removed),
/// sorted; apiary's stamped keys compared too, the per-attempt nonce never; `Debug` of the live
/// values shows keys only.
#[test]
fn differing_keys_compare_values_except_the_nonce() {
    let mut user = Env::new();
    user.set("API_KEY", "new");
    user.set("MODEL", "m");
    let env = AgentEnv::build(&user, &agent()).unwrap();
    let stamped = [
        (APIARY_AGENT_NAME, agent().name().to_owned()),
        (APIARY_AGENT_ID, agent().id().to_owned()),
    ];
    let with = |extra: &[(&str, &str)]| {
        let mut pairs: Vec<(&str, &str)> = stamped.iter().map(|(k, v)| (*k, v.as_str())).collect();
        pairs.extend_from_slice(extra);
        live(&pairs)
    };
    let same = with(&[
        ("API_KEY", "new"),
        ("MODEL", "m"),
        (APIARY_START_NONCE, "0badc0de"),
    ]);
    assert!(env.differing_keys(&same).is_empty());
    assert!(
        env.differing_keys(&with(&[("API_KEY", "new"), ("MODEL", "m")]))
            .is_empty()
    );
    assert_eq!(
        env.differing_keys(&with(&[("API_KEY", "old"), ("MODEL", "m"), ("EXTRA", "x")])),
        ["API_KEY", "EXTRA"]
    );
    assert_eq!(env.differing_keys(&with(&[("API_KEY", "new")])), ["MODEL"]);
    assert_eq!(
        env.differing_keys(&live(&[("API_KEY", "new"), ("MODEL", "m")])),
        [APIARY_AGENT_ID, APIARY_AGENT_NAME]
    );
    let debug = format!("{same:?}");
    assert!(
        !debug.contains("new") && !debug.contains("0badc0de"),
        "{debug}"
    );
    assert!(debug.starts_with("SecretValues { keys: ["), "{debug}");
    assert!(debug.contains("\"API_KEY\""), "{debug}");
}
