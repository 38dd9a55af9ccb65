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

/// The pull messages are containerd's real shapes (issue 8 § 4): the platform mismatch ends in
/// `not found` like the real one, and the back-off message embeds the pull error.
#[test]
fn pull_failure_messages() {
    let image = "registry.example.com/team/agent@sha256:aaaa";
    let unauthorized = PullFailure::Unauthorized.message(image);
    assert!(
        unauthorized.contains(": 401 Unauthorized"),
        "{unauthorized}"
    );
    assert!(
        unauthorized.contains("https://registry.example.com/v2/team/agent/manifests/sha256:aaaa")
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
