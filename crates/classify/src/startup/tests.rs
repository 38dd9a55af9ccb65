//! Tests of startup decoding and Secret settling (deploy.md § Decoding a pod; scenarios O1–O7).

use super::*;
use crate::facts::PodFacts;
use crate::testkit::{facts, running, terminated, waiting};

fn settled(facts: &PodFacts) -> StartupState {
    match decode(facts) {
        Decoded::Settled(state) => state,
        Decoded::PendingSecretCheck { secret, .. } => panic!("pending check of {secret}"),
    }
}

/// O1: `state.running` is Started.
#[test]
fn o1_running_is_started() {
    assert_eq!(settled(&facts(running())), StartupState::Started);
}

/// O2: phase Running with waiting `ContainerCreating` is Recoverable, not Started.
#[test]
fn o2_phase_running_container_creating_is_recoverable() {
    let f = facts(waiting(Some("ContainerCreating"), None));
    assert_eq!(settled(&f), StartupState::NeverStartedRecoverable);
}

/// O3: terminated with exit 0 is Terminated.
#[test]
fn o3_terminated_exit_zero_is_terminated() {
    assert_eq!(
        settled(&facts(terminated(0, Some("Completed")))),
        StartupState::Terminated
    );
}

/// O4: phase Succeeded or Failed without container statuses is Terminated; other phases are not.
#[test]
fn o4_terminal_phase_without_status_is_terminated() {
    for phase in ["Succeeded", "Failed"] {
        let mut f = facts(None);
        f.phase = Some(phase.to_owned());
        assert_eq!(settled(&f), StartupState::Terminated, "{phase}");
        f.agent = Some(ContainerState::Empty);
        assert_eq!(
            settled(&f),
            StartupState::Terminated,
            "empty state, {phase}"
        );
    }
    for phase in [Some("Pending"), Some("Running"), Some("Unknown"), None] {
        let mut f = facts(None);
        f.phase = phase.map(str::to_owned);
        assert_eq!(
            settled(&f),
            StartupState::NeverStartedRecoverable,
            "{phase:?}"
        );
    }
}

/// O5: `InvalidImageName` is ProvablyBroken.
#[test]
fn o5_invalid_image_name_is_provably_broken() {
    let f = facts(waiting(Some("InvalidImageName"), Some("bad")));
    assert_eq!(settled(&f), StartupState::NeverStartedProvablyBroken);
}

/// O6: both pull reasons classify their message; an unknown message is Recoverable.
#[test]
fn o6_pull_reasons_classify_the_message() {
    for reason in ["ErrImagePull", "ImagePullBackOff"] {
        let f = facts(waiting(Some(reason), Some("401 Unauthorized")));
        assert_eq!(
            settled(&f),
            StartupState::NeverStartedPullFailing(PullFailure::Unauthorized)
        );
        let f = facts(waiting(Some(reason), Some("dial tcp: i/o timeout")));
        assert_eq!(settled(&f), StartupState::NeverStartedRecoverable);
        let f = facts(waiting(Some(reason), None));
        assert_eq!(settled(&f), StartupState::NeverStartedRecoverable);
    }
}

/// A pull message under another reason never classifies (only the two pull reasons do).
#[test]
fn pull_message_under_other_reason_is_recoverable() {
    let f = facts(waiting(Some("ContainerCreating"), Some("401 Unauthorized")));
    assert_eq!(settled(&f), StartupState::NeverStartedRecoverable);
}

/// O7: `CreateContainerConfigError` with an envFrom Secret is pending its check; without, it
/// is Recoverable.
#[test]
fn o7_create_container_config_error_pends_on_the_secret() {
    let f = facts(waiting(Some("CreateContainerConfigError"), None));
    assert_eq!(
        decode(&f),
        Decoded::PendingSecretCheck {
            secret: f.env_from_secret.clone().unwrap(),
            referenced: false,
        }
    );
    let mut f = f;
    f.env_from_secret = None;
    assert_eq!(settled(&f), StartupState::NeverStartedRecoverable);
}

/// Every other waiting reason, or none, is Recoverable.
#[test]
fn other_waiting_reasons_are_recoverable() {
    for reason in [
        Some("ContainerCreating"),
        Some("PodInitializing"),
        Some("CrashLoopBackOff"),
        Some("CreateContainerError"),
        Some("RunContainerError"),
        Some(""),
        None,
    ] {
        let f = facts(waiting(reason, Some("401 denied")));
        assert_eq!(
            settled(&f),
            StartupState::NeverStartedRecoverable,
            "{reason:?}"
        );
    }
}

/// A waiting container in a terminal phase is still decoded by its state, not the phase.
#[test]
fn container_state_beats_phase() {
    let mut f = facts(waiting(Some("ContainerCreating"), None));
    f.phase = Some("Failed".to_owned());
    assert_eq!(settled(&f), StartupState::NeverStartedRecoverable);
    let mut f = facts(running());
    f.phase = Some("Succeeded".to_owned());
    assert_eq!(settled(&f), StartupState::Started);
}

/// Settling: the Secret exists → Recoverable; the pod's own confirmed absent → ProvablyBroken;
/// a referenced one confirmed absent → MissingSecret.
#[test]
fn settling_secret_exists_recoverable_absent_broken() {
    for referenced in [false, true] {
        assert_eq!(
            settle_secret_check(true, referenced),
            StartupState::NeverStartedRecoverable
        );
    }
    assert_eq!(
        settle_secret_check(false, false),
        StartupState::NeverStartedProvablyBroken
    );
    assert_eq!(
        settle_secret_check(false, true),
        StartupState::NeverStartedMissingSecret
    );
}

/// deploy.md § Credentials from the cluster: the kubelet's message naming a Secret other than
/// the pod's own pends on that Secret, marked as a reference; naming the pod's own, or nothing
/// parseable, pends on the pod's own (a missing key settles at once:
/// `missing_keys_and_config_maps_settle_at_once`).
#[test]
fn a_config_error_naming_a_referenced_secret_pends_on_it() {
    let f = facts(waiting(
        Some("CreateContainerConfigError"),
        Some("secret \"team-creds\" not found"),
    ));
    assert_eq!(
        decode(&f),
        Decoded::PendingSecretCheck {
            secret: "team-creds".to_owned(),
            referenced: true,
        }
    );
    let own = f.env_from_secret.clone().unwrap();
    for message in [
        format!("secret \"{own}\" not found"),
        "secret \"\" not found".to_owned(),
    ] {
        let f = facts(waiting(Some("CreateContainerConfigError"), Some(&message)));
        assert_eq!(
            decode(&f),
            Decoded::PendingSecretCheck {
                secret: own.clone(),
                referenced: false,
            },
            "{message}"
        );
    }
}

/// The message parser: exactly `secret "<name>" not found`, surrounding whitespace allowed.
#[test]
fn missing_secret_named_parses_the_kubelet_message() {
    assert_eq!(
        missing_secret_named("secret \"a-b\" not found"),
        Some("a-b")
    );
    assert_eq!(missing_secret_named(" secret \"a\" not found\n"), Some("a"));
    for other in [
        "",
        "secret \"\" not found",
        "secret \"a\" not found!",
        "configmap \"a\" not found",
        "secret \"a\"b\" not found",
        "secret a not found",
    ] {
        assert_eq!(missing_secret_named(other), None, "{other}");
    }
}

/// The four upstream forms of a missing reference, as the real kubelet v1.20 writes them
/// (`../shared/node/README.md`, and the missing-key form of `kubelet_pods.go`), and what is not
/// one of them.
#[test]
fn parse_missing_reads_the_kubelets_four_forms() {
    let key = parse_missing("couldn't find key NO_SUCH_KEY in Secret agents/creds").expect("key");
    assert_eq!(
        key,
        Missing {
            kind: RefKind::Secret,
            name: "creds".into(),
            key: Some("NO_SUCH_KEY".into()),
            namespace: Some("agents".into()),
        }
    );
    assert_eq!(
        key.kubelet_words(),
        "couldn't find key NO_SUCH_KEY in Secret agents/creds"
    );
    assert_eq!(key.object(), "secret creds");
    let cm = parse_missing("couldn't find key mode in ConfigMap agents/settings").expect("cm key");
    assert_eq!(
        (cm.kind, cm.key.as_deref()),
        (RefKind::ConfigMap, Some("mode"))
    );
    assert_eq!(
        cm.kubelet_words(),
        "couldn't find key mode in ConfigMap agents/settings"
    );
    let gone = parse_missing("configmap \"nocm\" not found").expect("cm");
    assert_eq!(
        (gone.kind, gone.name.as_str(), gone.key.as_deref()),
        (RefKind::ConfigMap, "nocm", None)
    );
    assert_eq!(gone.kubelet_words(), "configmap \"nocm\" not found");
    assert_eq!(gone.object(), "configmap nocm");
    let secret = parse_missing(" secret \"nope\" not found\n").expect("secret");
    assert_eq!(secret.kubelet_words(), "secret \"nope\" not found");
    for other in [
        "",
        "couldn't find key  in Secret a/b",
        "couldn't find key K in Secret b",
        "couldn't find key K in Pod a/b",
        "couldn't find key K V in Secret a/b",
        "secret \"a b\" not found",
        "secret \"a\u{1b}b\" not found",
        "failed to sync secret cache: timed out waiting for the condition",
    ] {
        assert_eq!(parse_missing(other), None, "{other:?}");
    }
}

/// deploy.md § Pull-failure classifier and Secret settling: a missing key of a referenced
/// Secret, and a missing ConfigMap or key of one, settle at once as a missing reference (no
/// quorum read: nothing is deleted on it); a missing referenced Secret still asks for its
/// quorum read, and so does the pod's own.
#[test]
fn missing_keys_and_config_maps_settle_at_once() {
    let own = "apiary-a-0000-1111";
    for message in [
        "couldn't find key NO_SUCH_KEY in Secret agents/creds".to_owned(),
        "configmap \"nocm\" not found".to_owned(),
        "couldn't find key k in ConfigMap agents/cm".to_owned(),
    ] {
        let facts = PodFacts {
            agent: Some(ContainerState::Waiting {
                reason: Some("CreateContainerConfigError".into()),
                message: Some(message.clone()),
            }),
            env_from_secret: Some(own.into()),
            ..PodFacts::default()
        };
        assert_eq!(
            decode(&facts),
            Decoded::Settled(StartupState::NeverStartedMissingSecret),
            "{message}"
        );
    }
    let facts = |message: &str| PodFacts {
        agent: Some(ContainerState::Waiting {
            reason: Some("CreateContainerConfigError".into()),
            message: Some(message.into()),
        }),
        env_from_secret: Some(own.into()),
        ..PodFacts::default()
    };
    assert_eq!(
        decode(&facts(&format!(
            "couldn't find key K in Secret agents/{own}"
        ))),
        Decoded::PendingSecretCheck {
            secret: own.into(),
            referenced: false
        },
        "a key missing from the pod's own Secret is settled by its quorum read"
    );
    assert_eq!(
        decode(&facts("secret \"creds\" not found")),
        Decoded::PendingSecretCheck {
            secret: "creds".into(),
            referenced: true
        }
    );
}
