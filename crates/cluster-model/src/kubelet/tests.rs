//! Unit tests of the kubelet's pure parts: the image convention, image-reference splitting, the
//! pull-failure messages and back-off, QoS and required Secrets. Pure; no I/O.

use std::time::Duration;

use k8s_openapi::api::core::v1::{
    Container, EnvFromSource, EnvVar, EnvVarSource, PodSpec, ResourceRequirements, SecretEnvSource,
    SecretKeySelector,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::*;

const D: Duration = Duration::from_secs(1);

/// Every keyword of the convention selects its script; other images select none.
#[test]
fn image_convention_selects_scripts() {
    let digest = "@sha256:".to_owned() + &"a".repeat(64);
    let cases = [
        (
            "registry.example.com/t/agent-pullfail-unauthorized",
            Some(PodScript::PullFailure {
                after: D,
                failure: PullFailure::Unauthorized,
            }),
        ),
        (
            "r.io/pullfail-manifest",
            Some(PodScript::PullFailure {
                after: D,
                failure: PullFailure::ManifestUnknown,
            }),
        ),
        (
            "pullfail-platform",
            Some(PodScript::PullFailure {
                after: D,
                failure: PullFailure::PlatformMismatch,
            }),
        ),
        ("r.io/x/unschedulable-agent", Some(PodScript::Unschedulable)),
        ("localhost:5000/never-starts", Some(PodScript::NeverStarts)),
        ("r.io/vanish", Some(PodScript::Vanish { after: D })),
        (
            "r.io/team/agent-crash",
            Some(PodScript::Exit {
                after: D,
                run_for: Duration::ZERO,
                exit_code: 1,
            }),
        ),
        ("registry.example.com/team/agent", None),
    ];
    for (repo, want) in cases {
        assert_eq!(
            PodScript::from_image(&format!("{repo}{digest}"), D),
            want,
            "{repo}"
        );
        assert_eq!(
            PodScript::from_image(&format!("{repo}:v1"), D),
            want,
            "{repo}"
        );
    }
}

/// The convention reads the repository path only: a registry host or tag with a keyword does
/// not select a script.
#[test]
fn image_convention_ignores_host_and_tag() {
    assert_eq!(
        PodScript::from_image("crash.example.com/agent@sha256:00", D),
        None
    );
    assert_eq!(PodScript::from_image("r.io/agent:crash", D), None);
    assert_eq!(repository_path("host:5000/team/x:dev@sha256:ab"), "team/x");
    assert_eq!(repository_path("team/x"), "team/x");
    assert_eq!(registry_host("team/x"), "docker.io");
    assert_eq!(registry_host("localhost/x"), "localhost");
    assert_eq!(registry_host("host:5000/x@sha256:ab"), "host:5000");
}

/// The pull messages keep containerd's real shapes for any image: the platform mismatch ends in
/// `not found` like the real one, and the back-off message embeds the pull error.
#[test]
fn pull_failure_messages() {
    let image = "registry.example.com/team/agent@sha256:aaaa";
    let unauthorized = PullFailure::Unauthorized.message(image);
    assert_eq!(
        unauthorized,
        format!(
            "rpc error: code = Unknown desc = failed to pull and unpack image \"{image}\": \
             failed to resolve reference \"{image}\": pulling from host registry.example.com \
             failed with status code [manifests sha256:aaaa]: 401 Unauthorized"
        )
    );
    let manifest = PullFailure::ManifestUnknown.message(image);
    assert_eq!(
        manifest,
        format!(
            "rpc error: code = NotFound desc = failed to pull and unpack image \"{image}\": \
             failed to resolve reference \"{image}\": {image}: not found"
        )
    );
    let platform = PullFailure::PlatformMismatch.message(image);
    assert_eq!(
        platform,
        format!(
            "rpc error: code = NotFound desc = failed to pull and unpack image \"{image}\": \
             no match for platform in manifest: not found"
        )
    );
    let backoff = PullFailure::ManifestUnknown.backoff_message(image);
    assert!(backoff.starts_with(&format!("Back-off pulling image \"{image}\"")));
    assert!(backoff.ends_with(": not found"));
}

/// The back-off doubles from 10 s and caps at 300 s.
#[test]
fn pull_backoff_doubles_and_caps() {
    assert_eq!(pull_backoff(0), Duration::from_secs(10));
    assert_eq!(pull_backoff(1), Duration::from_secs(10));
    assert_eq!(pull_backoff(2), Duration::from_secs(20));
    assert_eq!(pull_backoff(5), Duration::from_secs(160));
    assert_eq!(pull_backoff(6), Duration::from_secs(300));
    assert_eq!(pull_backoff(60), Duration::from_secs(300));
}

fn container(requests: &[(&str, &str)], limits: &[(&str, &str)]) -> Container {
    let map = |pairs: &[(&str, &str)]| {
        (!pairs.is_empty()).then(|| {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), Quantity((*v).to_owned())))
                .collect()
        })
    };
    Container {
        name: "agent".into(),
        resources: Some(ResourceRequirements {
            requests: map(requests),
            limits: map(limits),
            ..ResourceRequirements::default()
        }),
        ..Container::default()
    }
}

fn pod_of(containers: Vec<Container>) -> Pod {
    Pod {
        spec: Some(PodSpec {
            containers,
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

/// QoS: no resources BestEffort; apiary's 1/2Gi requests under 2/4Gi limits Burstable; equal
/// limits Guaranteed.
#[test]
fn qos_classes() {
    assert_eq!(qos_class(&pod_of(vec![container(&[], &[])])), "BestEffort");
    let apiary = container(
        &[("cpu", "1"), ("memory", "2Gi")],
        &[("cpu", "2"), ("memory", "4Gi")],
    );
    assert_eq!(qos_class(&pod_of(vec![apiary])), "Burstable");
    let equal = container(&[], &[("cpu", "2"), ("memory", "4Gi")]);
    assert_eq!(qos_class(&pod_of(vec![equal])), "Guaranteed");
}

/// Required Secrets: non-optional envFrom and secretKeyRef; optional ones are skipped.
#[test]
fn required_secrets_skip_optional() {
    let mut c = container(&[], &[]);
    c.env_from = Some(vec![
        EnvFromSource {
            secret_ref: Some(SecretEnvSource {
                name: "a".into(),
                optional: Some(false),
            }),
            ..EnvFromSource::default()
        },
        EnvFromSource {
            secret_ref: Some(SecretEnvSource {
                name: "opt".into(),
                optional: Some(true),
            }),
            ..EnvFromSource::default()
        },
    ]);
    c.env = Some(vec![EnvVar {
        name: "X".into(),
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: "b".into(),
                key: "k".into(),
                optional: None,
            }),
            ..EnvVarSource::default()
        }),
        ..EnvVar::default()
    }]);
    assert_eq!(required_secrets(&pod_of(vec![c])), vec!["a", "b"]);
}

// The real kubelet's words (v1.20.2 + containerd 1.6.20), from shared/node/golden-statuses.json.

const AGENT_REF: &str =
    "127.0.0.1:5000/agent@sha256:a0c21b7206ac87c5720c8013dcfc9b08c5d8abb55bfd97a65b4d119c96cc2394";
const AUTH_REF: &str =
    "127.0.0.1:5001/agent@sha256:a0c21b7206ac87c5720c8013dcfc9b08c5d8abb55bfd97a65b4d119c96cc2394";
const MISSING_REF: &str =
    "127.0.0.1:5000/agent@sha256:0000000000000000000000000000000000000000000000000000000000000000";
const ARM64_REF: &str = "127.0.0.1:5000/agent-arm64@sha256:8c3bb9d60c046e72456b25af3da59a91db878dedec1de57f7e000e6856a40079";

/// Source: golden-statuses.json `pull-401` `err_image_pull.message` (the same text as
/// `pull-401-wrong-password-always`): containerd 1.6 names the host and the manifest it asked for.
#[test]
fn unauthorized_message_is_the_real_kubelets() {
    assert_eq!(
        PullFailure::Unauthorized.message(AUTH_REF),
        "rpc error: code = Unknown desc = failed to pull and unpack image \"127.0.0.1:5001/agent@sha256:a0c21b7206ac87c5720c8013dcfc9b08c5d8abb55bfd97a65b4d119c96cc2394\": failed to resolve reference \"127.0.0.1:5001/agent@sha256:a0c21b7206ac87c5720c8013dcfc9b08c5d8abb55bfd97a65b4d119c96cc2394\": pulling from host 127.0.0.1:5001 failed with status code [manifests sha256:a0c21b7206ac87c5720c8013dcfc9b08c5d8abb55bfd97a65b4d119c96cc2394]: 401 Unauthorized"
    );
}

/// A 401 on a tagged reference names the tag the manifests endpoint was asked for, and an
/// untagged one `latest` (kills a manifest reference that always answers the digest).
#[test]
fn unauthorized_message_names_the_tag_of_an_unpinned_reference() {
    let tagged = PullFailure::Unauthorized.message("127.0.0.1:5001/agent:v1");
    assert!(
        tagged.ends_with(
            "pulling from host 127.0.0.1:5001 failed with status code [manifests v1]: 401 Unauthorized"
        ),
        "{tagged}"
    );
    let untagged = PullFailure::Unauthorized.message("127.0.0.1:5001/agent");
    assert!(
        untagged.ends_with("[manifests latest]: 401 Unauthorized"),
        "{untagged}"
    );
}

/// Source: golden-statuses.json `pull-missing-digest` `err_image_pull.message`.
#[test]
fn manifest_unknown_message_for_a_missing_digest_is_the_real_kubelets() {
    assert_eq!(
        PullFailure::ManifestUnknown.message(MISSING_REF),
        "rpc error: code = NotFound desc = failed to pull and unpack image \"127.0.0.1:5000/agent@sha256:0000000000000000000000000000000000000000000000000000000000000000\": failed to resolve reference \"127.0.0.1:5000/agent@sha256:0000000000000000000000000000000000000000000000000000000000000000\": 127.0.0.1:5000/agent@sha256:0000000000000000000000000000000000000000000000000000000000000000: not found"
    );
}

/// Source: golden-statuses.json `pull-missing-tag` and `pull-missing-repo`
/// `err_image_pull.message`: a missing tag and a missing repository read alike.
#[test]
fn manifest_unknown_message_for_a_missing_tag_or_repository_is_the_real_kubelets() {
    assert_eq!(
        PullFailure::ManifestUnknown.message("127.0.0.1:5000/agent:nope"),
        "rpc error: code = NotFound desc = failed to pull and unpack image \"127.0.0.1:5000/agent:nope\": failed to resolve reference \"127.0.0.1:5000/agent:nope\": 127.0.0.1:5000/agent:nope: not found"
    );
    assert_eq!(
        PullFailure::ManifestUnknown.message("127.0.0.1:5000/nothere:v1"),
        "rpc error: code = NotFound desc = failed to pull and unpack image \"127.0.0.1:5000/nothere:v1\": failed to resolve reference \"127.0.0.1:5000/nothere:v1\": 127.0.0.1:5000/nothere:v1: not found"
    );
}

/// Source: golden-statuses.json `pull-arm64-only` `err_image_pull.message`.
#[test]
fn platform_mismatch_message_is_the_real_kubelets() {
    assert_eq!(
        PullFailure::PlatformMismatch.message(ARM64_REF),
        "rpc error: code = NotFound desc = failed to pull and unpack image \"127.0.0.1:5000/agent-arm64@sha256:8c3bb9d60c046e72456b25af3da59a91db878dedec1de57f7e000e6856a40079\": no match for platform in manifest: not found"
    );
}

/// Source: golden-statuses.json `pull-missing-digest` `state.waiting.message`: the model's
/// back-off message starts with the real one verbatim; the real one ends there, the model's goes
/// on with the pull error (README § The model against the real kubelet).
#[test]
fn backoff_message_starts_with_the_real_kubelets() {
    let real = "Back-off pulling image \"127.0.0.1:5000/agent@sha256:0000000000000000000000000000000000000000000000000000000000000000\"";
    let model = PullFailure::ManifestUnknown.backoff_message(MISSING_REF);
    assert_eq!(
        model,
        format!(
            "{real}: ErrImagePull: {}",
            PullFailure::ManifestUnknown.message(MISSING_REF)
        )
    );
}

/// Source: golden-statuses.json, every case's `lastState` is `{}`: the model writes an empty
/// last state for every container status it sets, not an absent one.
#[test]
fn every_container_status_has_an_empty_last_state() {
    let mut pod = pod_of(vec![Container {
        name: "main".into(),
        image: Some(AGENT_REF.into()),
        ..Container::default()
    }]);
    let now = jiff::Timestamp::UNIX_EPOCH;
    apply_waiting(&mut pod, "ContainerCreating", None, None, now);
    let last = |pod: &Pod| {
        pod.status
            .as_ref()
            .unwrap()
            .container_statuses
            .as_ref()
            .unwrap()[0]
            .last_state
            .clone()
    };
    assert_eq!(last(&pod), Some(ContainerState::default()));
    apply_running(&mut pod, "10.88.0.2", "containerd://c", now);
    assert_eq!(last(&pod), Some(ContainerState::default()));
    apply_terminated(&mut pod, 1, "containerd://c", now, now);
    assert_eq!(last(&pod), Some(ContainerState::default()));
    assert_eq!(
        serde_json::to_value(&pod).unwrap()["status"]["containerStatuses"][0]["lastState"],
        serde_json::json!({})
    );
}
