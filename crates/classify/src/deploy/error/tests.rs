//! deploy.md § What a failure leaves: what each failure leaves, from its last read; and the
//! words of E14 that depend on the missing object's kind.

use super::*;

/// A failure whose last read found the pod leaves it; one that found it gone leaves none; an
/// unreadable one may; a terminating one says so; a failure before any pod leaves none.
#[test]
fn each_failure_says_what_it_leaves() {
    let pod = || "apiary-a-1".to_owned();
    let deadline = Duration::from_secs(600);
    let at = |condition| DeployError::DeadlineExceeded {
        pod: pod(),
        deadline,
        condition,
    };
    assert_eq!(
        at(LatestCondition::Reported("x".into())).left(),
        Some(Left::Pod(pod()))
    );
    assert_eq!(
        at(LatestCondition::NoneReported).left(),
        Some(Left::Pod(pod()))
    );
    assert_eq!(at(LatestCondition::PodGone).left(), None);
    assert_eq!(
        at(LatestCondition::Unreadable("reset".into())).left(),
        Some(Left::MaybePod(pod()))
    );
    assert_eq!(
        DeployError::PullFailing {
            pod: pod(),
            image: "i".into(),
            kind: PullFailure::Unauthorized
        }
        .left(),
        Some(Left::Pod(pod()))
    );
    assert_eq!(
        DeployError::DisappearanceTimeout {
            pod: pod(),
            deadline
        }
        .left(),
        Some(Left::Terminating(pod()))
    );
    assert_eq!(
        DeployError::ReferencedSecretMissing {
            namespace: "agents".into(),
            missing: Box::default(),
            pod: None
        }
        .left(),
        None
    );
}

/// E14's missing-key sentence names the `kubectl edit` of the referenced object's own kind.
#[test]
fn a_missing_key_names_the_edit_of_its_kind() {
    for (kind, word) in [
        (RefKind::Secret, "secret"),
        (RefKind::ConfigMap, "configmap"),
    ] {
        let error = DeployError::ReferencedSecretMissing {
            namespace: "agents".to_owned(),
            missing: Box::new(Missing {
                kind,
                name: "creds".to_owned(),
                key: Some("TOKEN".to_owned()),
                namespace: Some("agents".to_owned()),
            }),
            pod: Some("apiary-a-1".to_owned()),
        };
        let text = error.to_string();
        assert!(
            text.contains(&format!("`kubectl edit {word} creds -n agents`")),
            "{text}"
        );
    }
}
