//! Unit tests of the selector grammar and matching rules (the apiserver's semantics for `!=` and
//! `notin` on absent labels, field-selector label support). Pure; no I/O.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, PodStatus, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::*;
use crate::error::{Kind, ModelError};

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn sel(text: &str) -> LabelSelector {
    match LabelSelector::parse(text) {
        Ok(s) => s,
        Err(e) => panic!("{text:?} should parse: {e}"),
    }
}

/// The apiary selector (two equality requirements) parses and needs both labels.
#[test]
fn apiary_selector_requires_both_labels() {
    let s = sel(
        "apiary.dev/agent=72bea12366a35432ab394024ae44c214,app.kubernetes.io/managed-by=apiary",
    );
    assert_eq!(s.requirements().len(), 2);
    let both = labels(&[
        ("apiary.dev/agent", "72bea12366a35432ab394024ae44c214"),
        ("app.kubernetes.io/managed-by", "apiary"),
    ]);
    assert!(s.matches(Some(&both)));
    let one = labels(&[("apiary.dev/agent", "72bea12366a35432ab394024ae44c214")]);
    assert!(!s.matches(Some(&one)));
    assert!(!s.matches(None));
}

/// `=` and `==` are the same requirement; `!=` also matches objects without the key.
#[test]
fn equality_operators() {
    assert_eq!(sel("a=b"), sel("a==b"));
    assert_eq!(
        sel("a = b").requirements(),
        &[Requirement::Equals("a".into(), "b".into())]
    );
    let s = sel("a!=b");
    assert!(s.matches(Some(&labels(&[("a", "c")]))));
    assert!(s.matches(None));
    assert!(!s.matches(Some(&labels(&[("a", "b")]))));
    // An empty value is valid: `a=` selects a present, empty label.
    let empty = sel("a=");
    assert!(empty.matches(Some(&labels(&[("a", "")]))));
    assert!(!empty.matches(None));
}

/// `in` needs the key with a listed value; `notin` also matches objects without the key.
#[test]
fn set_operators() {
    let s = sel("env in (prod, staging)");
    assert!(s.matches(Some(&labels(&[("env", "prod")]))));
    assert!(s.matches(Some(&labels(&[("env", "staging")]))));
    assert!(!s.matches(Some(&labels(&[("env", "dev")]))));
    assert!(!s.matches(None));
    let n = sel("env notin (prod,staging)");
    assert!(!n.matches(Some(&labels(&[("env", "prod")]))));
    assert!(n.matches(Some(&labels(&[("env", "dev")]))));
    assert!(n.matches(None));
}

/// `key` requires presence, `!key` absence.
#[test]
fn existence_operators() {
    let s = sel("a,!b");
    assert!(s.matches(Some(&labels(&[("a", "x")]))));
    assert!(!s.matches(Some(&labels(&[("a", "x"), ("b", "y")]))));
    assert!(!s.matches(Some(&labels(&[("b", "y")]))));
}

/// The empty selector matches everything, including objects without labels.
#[test]
fn empty_selector_matches_everything() {
    assert!(sel("").matches(None));
    assert!(sel("   ").matches(Some(&labels(&[("a", "b")]))));
}

/// Malformed selectors are 400 BadRequest, never silently match-all.
#[test]
fn parse_errors_are_bad_requests() {
    for text in [
        "a=b,",
        ",a=b",
        "a in (b",
        "a in b",
        "a b",
        "!",
        "a=(b)",
        "a=b=c",
        "-bad=x",
        "a=-bad",
        "a==",
        "UPPER.example/x=y",
    ] {
        let err = LabelSelector::parse(text);
        if text == "a==" {
            // `a==` is a present-and-empty requirement, as `a=`.
            assert!(err.is_ok(), "{text:?}");
            continue;
        }
        match err {
            Err(e) => {
                assert_eq!(e.code(), 400, "{text:?}");
                assert_eq!(e.reason(), "BadRequest", "{text:?}");
            }
            Ok(s) => panic!("{text:?} parsed as {s:?}"),
        }
    }
}

/// Label values longer than 63 characters are refused; 63 is accepted (boundary).
#[test]
fn label_value_length_boundary() {
    let ok = "a".repeat(63);
    let long = "a".repeat(64);
    assert!(LabelSelector::parse(&format!("k={ok}")).is_ok());
    assert!(LabelSelector::parse(&format!("k={long}")).is_err());
    assert!(LabelSelector::parse(&format!("{ok}=v")).is_ok());
    assert!(LabelSelector::parse(&format!("{long}=v")).is_err());
}

fn pod(name: &str, phase: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            ..ObjectMeta::default()
        },
        status: Some(PodStatus {
            phase: Some(phase.into()),
            ..PodStatus::default()
        }),
        ..Pod::default()
    }
}

/// `metadata.name` and `status.phase` select pods; `!=` negates.
#[test]
fn field_selector_name_and_phase() {
    let by_name = FieldSelector::parse(Kind::Pod, "metadata.name=a").unwrap();
    assert!(by_name.matches(&pod("a", "Running")));
    assert!(!by_name.matches(&pod("b", "Running")));
    let by_phase = FieldSelector::parse(Kind::Pod, "status.phase!=Running").unwrap();
    assert!(by_phase.matches(&pod("a", "Failed")));
    assert!(!by_phase.matches(&pod("a", "Running")));
    let both = FieldSelector::parse(Kind::Pod, "metadata.name==a,status.phase=Failed").unwrap();
    assert!(both.matches(&pod("a", "Failed")));
    assert!(!both.matches(&pod("a", "Running")));
    assert!(
        FieldSelector::parse(Kind::Pod, "")
            .unwrap()
            .matches(&pod("x", "y"))
    );
}

/// Unsupported field labels are refused with the apiserver's message.
#[test]
fn field_selector_unsupported_label() {
    let err = FieldSelector::parse(Kind::Secret, "status.phase=Running").unwrap_err();
    assert_eq!(err.code(), 400);
    assert_eq!(err.to_string(), "field label not supported: status.phase");
    let err = FieldSelector::parse(Kind::Pod, "metadata.name").unwrap_err();
    assert_eq!(err.reason(), "BadRequest");
    let secret = Secret {
        type_: Some("Opaque".into()),
        ..Secret::default()
    };
    assert!(
        FieldSelector::parse(Kind::Secret, "type=Opaque")
            .unwrap()
            .matches(&secret)
    );
}

/// As the apiserver: `in ()` and a trailing comma mean the empty value, `>`/`<` compare
/// integers, and messages name what was found and what was expected.
#[test]
fn apiserver_corner_cases() {
    let e = labels(&[("app", "")]);
    let x = labels(&[("app", "x")]);
    let seven = labels(&[("n", "7")]);
    assert!(sel("app in ()").matches(Some(&e)));
    assert!(!sel("app in ()").matches(Some(&x)));
    assert!(sel("app in (x,)").matches(Some(&e)));
    assert!(sel("app in (x,)").matches(Some(&x)));
    assert!(sel("n>6").matches(Some(&seven)));
    assert!(!sel("n>7").matches(Some(&seven)));
    assert!(sel("n<8").matches(Some(&seven)));
    assert!(!sel("app>1").matches(Some(&x)));
    for (text, message) in [
        (
            "app in (x",
            "unable to parse requirement: found '', expected: ',' or ')'",
        ),
        (
            "a b",
            "unable to parse requirement: found 'b', expected: '=', '!=', '==', 'in', notin'",
        ),
        ("app=x y", "found 'y', expected: ',' or 'end of string'"),
        ("!app=x", "found '=', expected: ',' or 'end of string'"),
        ("a=b,", "found '', expected: identifier after ','"),
        (
            "n>x",
            "unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer",
        ),
        (
            "-bad=1",
            "unable to parse requirement: invalid label key \"-bad\": name part must consist of \
             alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric \
             character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is \
             '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ),
    ] {
        match LabelSelector::parse(text) {
            Err(ModelError::BadRequest { message: got }) => assert_eq!(got, message, "{text:?}"),
            other => panic!("{text:?}: {other:?}"),
        }
    }
}
