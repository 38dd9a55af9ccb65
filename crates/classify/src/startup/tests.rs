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
/// parseable, pends on the pod's own.
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
        "couldn't find key TOKEN in Secret agents/team-creds".to_owned(),
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
