//! A live differential test of the cluster model's kubelet against the real one: for each kind
//! of image and pod the model scripts (starts and keeps running, exits 1 at once, missing
//! digest, registry 401, no linux/amd64 variant, a missing Secret), it creates the pod on the
//! real node (crates/envtest/README.md § The real node), records every status the real kubelet
//! v1.20.2 writes through a watch, drives the same pod through `apiary-cluster-model` on its
//! virtual clock, reduces both to the same steps (phase, container state and reason, exit code,
//! message with references as placeholders, restart count) and asserts the two sequences agree.
//!
//! The only differences allowed are the deliberate simplifications of
//! crates/cluster-model/README.md § The model against the real kubelet, each one a named
//! [`Simplification`] below: a difference none of them explains fails the test with both
//! sequences printed. Without a node (`APIARY_NODE` unset) the test returns at once.
//!
//! Layer: an integration test against a real apiserver and kubelet, and the pure model. It
//! decides nothing for apiary, creates pods only in a namespace of its own (deleted when the
//! test ends) and never changes the node, its images or its registries.

use std::fmt;
use std::time::{Duration, Instant};

use apiary_cluster_model::kubelet::registry_host;
use apiary_cluster_model::{ClusterModel, Object};
use apiary_envtest::node::Images;
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::{
    Container, EnvFromSource, Pod, PodSpec, ResourceRequirements, SecretEnvSource,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};

/// How long each real pod is watched at least, from its creation: long enough for a failed pull
/// to reach `ImagePullBackOff` (12–16 s on the node, shared/node README § Measured).
const WINDOW: Duration = Duration::from_secs(25);

/// How long a real pod is watched at most while it has not yet shown the last step the model
/// reaches: a bound for a loaded machine (CI shares its two cores), not a figure.
const HANG: Duration = Duration::from_secs(60);

/// The Secret the missing-Secret case refers to, the one of the golden case (shared/node
/// README § What the real kubelet writes).
const MISSING_SECRET: &str = "nope";

/// Each kind of pod the model's kubelet scripts, as the test creates it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Case {
    /// Starts and keeps running (traps TERM so the namespace's deletion ends it at once).
    Runs,
    /// Exits 1 at once, restartPolicy Never.
    ExitsOne,
    /// A digest the registry does not have.
    MissingDigest,
    /// The registry behind htpasswd, no credentials: 401.
    Unauthorized,
    /// An index with only a linux/arm64 image.
    Arm64Only,
    /// `envFrom.secretRef` to a Secret that does not exist.
    MissingSecret,
}

const CASES: [Case; 6] = [
    Case::Runs,
    Case::ExitsOne,
    Case::MissingDigest,
    Case::Unauthorized,
    Case::Arm64Only,
    Case::MissingSecret,
];

impl Case {
    /// The pod's name (the same on the node and in the model).
    fn pod_name(self) -> &'static str {
        match self {
            Self::Runs => "runs",
            Self::ExitsOne => "exits-one",
            Self::MissingDigest => "missing-digest",
            Self::Unauthorized => "unauthorized",
            Self::Arm64Only => "arm64-only",
            Self::MissingSecret => "missing-secret",
        }
    }

    /// The image on the real node.
    fn real_image(self, images: &Images) -> String {
        match self {
            Self::Runs | Self::ExitsOne | Self::MissingSecret => images.agent.clone(),
            Self::MissingDigest => images.missing.clone(),
            Self::Unauthorized => images.auth.clone(),
            Self::Arm64Only => images.arm64.clone(),
        }
    }

    /// The image in the model: the real one, its repository renamed by the image convention of
    /// the model's kubelet (the module docs of `apiary_cluster_model::kubelet`) so that the
    /// model's kubelet picks the script that stands for this case. Host and digest stay, so the
    /// messages differ only in the repository, which the reduction replaces by a placeholder.
    fn model_image(self, images: &Images) -> String {
        let keyword = match self {
            Self::Runs | Self::MissingSecret => return self.real_image(images),
            Self::ExitsOne => "crash",
            Self::MissingDigest => "pullfail-manifest",
            Self::Unauthorized => "pullfail-unauthorized",
            Self::Arm64Only => "pullfail-platform",
        };
        let real = self.real_image(images);
        let (name, digest) = real.split_once('@').expect("the node's images are pinned");
        format!("{name}-{keyword}@{digest}")
    }

    /// The pod, with `image`: one container `main`, restartPolicy Never, small requests.
    fn pod(self, image: &str) -> Pod {
        let script = match self {
            Self::ExitsOne => "exit 1",
            _ => "trap 'exit 0' TERM; sleep 3600 & wait",
        };
        let env_from = (self == Self::MissingSecret).then(|| {
            vec![EnvFromSource {
                secret_ref: Some(SecretEnvSource {
                    name: MISSING_SECRET.to_owned(),
                    optional: None,
                }),
                ..EnvFromSource::default()
            }]
        });
        // Images are node-wide (shared/node README § Gotchas): a copy of the digest pulled from
        // the open registry must not let the 401 case start, so it always pulls.
        let pull_policy = (self == Self::Unauthorized).then(|| "Always".to_owned());
        let requests = [("cpu", "10m"), ("memory", "16Mi")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), Quantity(v.to_owned())))
            .collect();
        Pod {
            metadata: ObjectMeta {
                name: Some(self.pod_name().to_owned()),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec {
                restart_policy: Some("Never".to_owned()),
                termination_grace_period_seconds: Some(5),
                containers: vec![Container {
                    name: "main".to_owned(),
                    image: Some(image.to_owned()),
                    image_pull_policy: pull_policy,
                    command: Some(vec!["sh".into(), "-c".into(), script.into()]),
                    env_from,
                    resources: Some(ResourceRequirements {
                        requests: Some(requests),
                        ..ResourceRequirements::default()
                    }),
                    ..Container::default()
                }],
                ..PodSpec::default()
            }),
            ..Pod::default()
        }
    }
}

/// One observed status, reduced to what the model claims to reproduce.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Step {
    /// `status.phase` (empty when absent).
    phase: String,
    /// The first container's state: `none` (no status yet), `waiting`, `running`, `terminated`.
    state: &'static str,
    /// The state's reason.
    reason: Option<String>,
    /// `terminated.exitCode`.
    exit_code: Option<i32>,
    /// The state's message, the image reference, its registry host and every digest replaced by
    /// `<image>`, `<host>` and `<digest>`.
    message: Option<String>,
    /// `restartCount`.
    restarts: i32,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.phase, self.state)?;
        if let Some(reason) = &self.reason {
            write!(f, " {reason}")?;
        }
        if let Some(code) = self.exit_code {
            write!(f, " exit {code}")?;
        }
        if let Some(message) = &self.message {
            write!(f, " {message:?}")?;
        }
        write!(f, " restarts {}", self.restarts)
    }
}

/// `sha256:` and 64 hex digits replaced by `<digest>`.
fn without_digests(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("sha256:") {
        let after = &rest[at + "sha256:".len()..];
        let hex = after
            .bytes()
            .take_while(u8::is_ascii_hexdigit)
            .take(64)
            .count();
        out.push_str(&rest[..at]);
        if hex == 64 {
            out.push_str("<digest>");
            rest = &after[64..];
        } else {
            out.push_str("sha256:");
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// A message with the pod's image, then its registry host, then every digest as placeholders.
fn placeholders(message: &str, image: &str) -> String {
    let message = message.replace(image, "<image>");
    let message = message.replace(registry_host(image), "<host>");
    without_digests(&message)
}

/// Reduce one observed pod to a [`Step`].
fn reduce(pod: &Pod) -> Step {
    let image = pod
        .spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .and_then(|c| c.image.clone())
        .unwrap_or_default();
    let status = pod.status.clone().unwrap_or_default();
    let container = status.container_statuses.and_then(|s| s.into_iter().next());
    let state = container.as_ref().and_then(|c| c.state.clone());
    let (kind, reason, exit_code, message) = match state {
        Some(s) if s.terminated.is_some() => {
            let t = s.terminated.unwrap_or_default();
            ("terminated", t.reason, Some(t.exit_code), t.message)
        }
        Some(s) if s.running.is_some() => ("running", None, None, None),
        Some(s) if s.waiting.is_some() => {
            let w = s.waiting.unwrap_or_default();
            ("waiting", w.reason, None, w.message)
        }
        _ => ("none", None, None, None),
    };
    Step {
        phase: status.phase.unwrap_or_default(),
        state: kind,
        reason,
        exit_code,
        message: message.map(|m| placeholders(&m, &image)),
        restarts: container.map_or(0, |c| c.restart_count),
    }
}

/// Append `step` unless it repeats the last one (a status write that changed nothing reduced).
fn push_distinct(steps: &mut Vec<Step>, step: Step) {
    if steps.last() != Some(&step) {
        steps.push(step);
    }
}

/// Which sequence a [`Simplification`] rewrites.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    /// What the real kubelet wrote.
    Real,
    /// What the model's kubelet wrote.
    Model,
}

/// A difference crates/cluster-model/README.md § The model against the real kubelet lists as a
/// deliberate simplification, as a rewrite of the sequences that removes exactly it.
struct Simplification {
    /// The README row it stands for.
    row: &'static str,
    /// The rewrite.
    apply: fn(Side, Vec<Step>) -> Vec<Step>,
}

/// The README's simplifications that show in these steps, applied in this order.
const SIMPLIFICATIONS: [Simplification; 3] = [
    Simplification {
        // A container that exits at once may be published `running` first (the kubelet saw it
        // at its relist), for seconds on a loaded machine, or not at all; the model's `crash`
        // goes straight from `ContainerCreating` to `terminated`. Drop, on the real side only,
        // a running step that the very next step terminates.
        row: "container that exits at once, as observed live (`exits-one`)",
        apply: |side, steps| match side {
            Side::Model => steps,
            Side::Real => {
                let mut kept: Vec<Step> = Vec::with_capacity(steps.len());
                for step in steps {
                    if step.state == "terminated"
                        && kept.last().is_some_and(|last| last.state == "running")
                    {
                        kept.pop();
                    }
                    kept.push(step);
                }
                kept
            }
        },
    },
    Simplification {
        // The model's back-off message carries `: ErrImagePull: <the pull error>` after the
        // real one's text; cut it off the model's side only, so a real message that changes
        // still fails.
        row: "`ImagePullBackOff` message",
        apply: |side, steps| match side {
            Side::Real => steps,
            Side::Model => steps
                .into_iter()
                .map(|mut step| {
                    if step.reason.as_deref() == Some("ImagePullBackOff")
                        && let Some(message) = &mut step.message
                        && let Some(at) = message.find(": ErrImagePull: ")
                    {
                        message.truncate(at);
                    }
                    step
                })
                .collect(),
        },
    },
    Simplification {
        // The pull is retried on either side, at different times (ErrImagePull shown for 1 s
        // in the model, 12–16 s on the node): how often the ErrImagePull / ImagePullBackOff
        // pair repeats inside the window is timing only. Keep each step's first appearance.
        row: "`ErrImagePull` → `ImagePullBackOff`",
        apply: |_, steps| {
            let mut first = Vec::new();
            for step in steps {
                if !first.contains(&step) {
                    first.push(step);
                }
            }
            first
        },
    },
];

/// `steps` with every simplification applied for `side`.
fn simplified(side: Side, steps: &[Step]) -> Vec<Step> {
    SIMPLIFICATIONS
        .iter()
        .fold(steps.to_vec(), |steps, s| (s.apply)(side, steps))
}

/// The steps the model's kubelet writes for `case` over [`WINDOW`] of virtual time.
fn model_steps(case: Case, images: &Images) -> Vec<Step> {
    let mut model = ClusterModel::default();
    model.ensure_namespace("statuses");
    let pod = case.pod(&case.model_image(images));
    model
        .create_pod("statuses", pod)
        .expect("the model creates the pod");
    model.advance(WINDOW);
    let mut steps = Vec::new();
    for event in model.events_since(0).expect("nothing compacted") {
        if let Object::Pod(pod) = event.object {
            push_distinct(&mut steps, reduce(&pod));
        }
    }
    steps
}

/// The steps the real kubelet writes for `case`: watched from before the create for at least
/// [`WINDOW`], and on until `last` (the last step the model reaches, simplified) shows or
/// [`HANG`] has passed.
async fn real_steps(pods: &Api<Pod>, case: Case, images: &Images, last: &Step) -> Vec<Step> {
    let name = case.pod_name();
    let fields = format!("metadata.name={name}");
    let list = pods
        .list(&ListParams::default().fields(&fields))
        .await
        .expect("list the pod's name");
    let version = list.metadata.resource_version.unwrap_or_default();
    let stream = pods
        .watch(
            &WatchParams::default().fields(&fields).timeout(290),
            &version,
        )
        .await
        .expect("watch the pod");
    let mut stream = stream.boxed();
    let created = Instant::now();
    pods.create(&PostParams::default(), &case.pod(&case.real_image(images)))
        .await
        .unwrap_or_else(|e| panic!("create pod {name}: {e}"));
    let mut steps = Vec::new();
    loop {
        let elapsed = created.elapsed();
        let reached = simplified(Side::Real, &steps).contains(last);
        if elapsed >= HANG || (elapsed >= WINDOW && reached) {
            break;
        }
        let wait = if reached { WINDOW } else { HANG }.saturating_sub(elapsed);
        match tokio::time::timeout(wait, stream.try_next()).await {
            Err(_elapsed) => {}
            Ok(Ok(Some(WatchEvent::Added(pod) | WatchEvent::Modified(pod)))) => {
                push_distinct(&mut steps, reduce(&pod));
            }
            Ok(Ok(Some(WatchEvent::Bookmark(_)))) => {}
            Ok(Ok(Some(other))) => panic!("pod {name}: unexpected watch event {other:?}"),
            Ok(Ok(None)) => panic!("pod {name}: the watch ended early"),
            Ok(Err(e)) => panic!("pod {name}: the watch failed: {e}"),
        }
    }
    steps
}

fn lines(steps: &[Step]) -> String {
    steps
        .iter()
        .map(|s| format!("    {s}\n"))
        .collect::<String>()
}

/// Protects the model's kubelet scripts (crates/cluster-model/README.md § The model against the
/// real kubelet): for every kind of pod they stand for, the real kubelet v1.20.2 writes the same
/// sequence of statuses, apart from the simplifications that README lists.
// Multi-threaded: the namespace's drop blocks its thread on the delete, which the client's
// worker task must still be able to serve (on a current-thread runtime both would wait forever).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_node_statuses_match_the_model() {
    let Some(node) = apiary_envtest::node::shared() else {
        return;
    };
    let namespace = node.namespace("statuses").await;
    let pods: Api<Pod> = Api::namespaced(node.client().await, &namespace);
    let images = &node.info().images;
    let started = Instant::now();
    let observed = futures::future::join_all(CASES.map(|case| {
        let pods = &pods;
        async move {
            let model = model_steps(case, images);
            let last = simplified(Side::Model, &model)
                .pop()
                .expect("the model writes a status");
            let real = real_steps(pods, case, images, &last).await;
            (case, real, model)
        }
    }))
    .await;
    eprintln!(
        "watched {} pods on the real node for {:.1} s",
        CASES.len(),
        started.elapsed().as_secs_f64()
    );
    let mut report = String::new();
    for (case, real, model) in &observed {
        let (real_simple, model_simple) =
            (simplified(Side::Real, real), simplified(Side::Model, model));
        let verdict = if real_simple == model_simple {
            "agree"
        } else {
            "DIFFER"
        };
        let text = format!(
            "{case:?}: {verdict}\n  real:\n{}  model:\n{}  real, simplified:\n{}  model, simplified:\n{}",
            lines(real),
            lines(model),
            lines(&real_simple),
            lines(&model_simple)
        );
        eprint!("{text}");
        if real_simple != model_simple {
            report.push_str(&text);
        }
    }
    let rows: Vec<&str> = SIMPLIFICATIONS.iter().map(|s| s.row).collect();
    assert!(
        report.is_empty(),
        "the real kubelet and the model's differ beyond the README's simplifications \
         ({rows:?}); fix the model or list the difference in crates/cluster-model/README.md \
         § The model against the real kubelet:\n{report}"
    );
}

/// Protects the reduction itself: an image reference, its host and any digest in a message
/// become placeholders, so the model's renamed repository and the real one compare equal.
#[test]
fn placeholders_replace_image_host_and_digests() {
    let digest = "a0c21b7206ac87c5720c8013dcfc9b08c5d8abb55bfd97a65b4d119c96cc2394";
    let image = format!("127.0.0.1:5001/agent@sha256:{digest}");
    let message = format!(
        "failed to resolve reference \"{image}\": pulling from host 127.0.0.1:5001 failed with \
         status code [manifests sha256:{digest}]: 401 Unauthorized"
    );
    assert_eq!(
        placeholders(&message, &image),
        "failed to resolve reference \"<image>\": pulling from host <host> failed with status \
         code [manifests <digest>]: 401 Unauthorized"
    );
    assert_eq!(without_digests("sha256:abc"), "sha256:abc");
}

/// Protects the link to the README: every simplification this test allows names a row of
/// crates/cluster-model/README.md § The model against the real kubelet that says
/// **simplification**, so an allowed difference cannot outlive its documentation.
#[test]
fn every_simplification_is_a_readme_row() {
    let readme = include_str!("../../cluster-model/README.md");
    for simplification in &SIMPLIFICATIONS {
        let row = format!("| {} |", simplification.row);
        assert!(
            readme
                .lines()
                .any(|line| line.starts_with(&row) && line.contains("**simplification**")),
            "no simplification row {row:?} in crates/cluster-model/README.md"
        );
    }
}
