//! The results of one deploy (deploy.md § Errors): the success value and one
//! error variant per row E1–E12 that the deploy loop can end in.
//!
//! Pure data with `Display`. None of these carries an env value: the deploy machine never sees
//! one, and the apiserver details it carries come from requests that never echo Secret payloads.

use crate::startup::{Missing, RefKind};
use std::fmt;
use std::time::Duration;

use crate::condition::LatestCondition;
use crate::failure::RequestFailure;
use crate::policy::PolicyFailure;
use crate::pull::{PullFailure, pull_failure_text};
use crate::workspace::{ClaimFailure, ClaimReport};

/// A successful deploy: the started pod's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deployed {
    /// The pod observed with its container `agent` running.
    pub pod: String,
    /// Whether the pod's recorded create intent equals this call's fingerprint. When not, the
    /// running pod keeps its old configuration until it exits or is undeployed.
    pub intent_matches: bool,
    /// What this call did about the workspace claim (`--workspace-size`): `None` when it asked
    /// for none, or kept a started pod without needing one.
    pub workspace: Option<ClaimReport>,
    /// The pod's recorded intent settings (deploy.md § Naming what differs), to name what
    /// differs when the intent does not match; `None` when it records none.
    pub recorded_settings: Option<String>,
}

/// The kind of object a create failed for (E10).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectKind {
    /// A Secret.
    Secret,
    /// A pod.
    Pod,
}

impl fmt::Display for ObjectKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ObjectKind::Secret => "secret",
            ObjectKind::Pod => "pod",
        })
    }
}

/// What happened to this attempt's Secret when its pod create failed (E10).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SecretFate {
    /// The Secret create itself failed; there is nothing to clean up.
    NotCreated,
    /// The Secret was deleted again.
    Removed(String),
    /// The Secret was left in place for the age-gated orphan sweep.
    Left(String),
}

impl fmt::Display for SecretFate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SecretFate::NotCreated => f.write_str("nothing was written"),
            SecretFate::Removed(name) => write!(f, "secret {name} was removed"),
            SecretFate::Left(name) => write!(
                f,
                "secret {name} was left in place for later collection by `apiary gc`"
            ),
        }
    }
}

/// Why a deploy failed. Each variant is one row of deploy.md § Errors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeployError {
    /// E1: the deadline passed in the main loop.
    DeadlineExceeded {
        /// The pod name.
        pod: String,
        /// The deadline.
        deadline: Duration,
        /// The latest condition, read fresh.
        condition: LatestCondition,
    },
    /// E1 for a pod that could not be created before the deadline because the service account it
    /// runs as (`default`) did not appear (deploy.md § Namespace ensure, item 4).
    ServiceAccountMissing {
        /// The namespace.
        namespace: String,
        /// The pod name.
        pod: String,
        /// The account that never appeared.
        account: String,
        /// The deadline.
        deadline: Duration,
        /// This attempt's Secret, left for later collection.
        secret: String,
    },
    /// E2: a replace classification after this call's own create.
    CreatedPodFailed {
        /// The namespace (for the `kubectl logs` hint).
        namespace: String,
        /// The pod name.
        pod: String,
        /// The latest condition, read fresh.
        condition: LatestCondition,
    },
    /// E3: the pod's image pull fails in a way that will not heal.
    PullFailing {
        /// The pod name.
        pod: String,
        /// The configured (normalized) image.
        image: String,
        /// The pull-failure kind.
        kind: PullFailure,
    },
    /// E4: the pod did not disappear before the deadline.
    DisappearanceTimeout {
        /// The pod name.
        pod: String,
        /// The deadline.
        deadline: Duration,
    },
    /// E5: the deadline passed on the lost-race path.
    RaceDeadlineExceeded {
        /// The pod name.
        pod: String,
        /// The deadline.
        deadline: Duration,
        /// The latest condition, read fresh.
        condition: LatestCondition,
    },
    /// E6: the race winner is being deleted.
    WinnerDeleting {
        /// The pod name.
        pod: String,
    },
    /// E7: the race winner terminated or is provably broken.
    WinnerFailed {
        /// The pod name.
        pod: String,
        /// The latest condition, read fresh.
        condition: LatestCondition,
    },
    /// E14: a Secret the deploy references (`--env-from-secret`, `--env-secret`) does not exist:
    /// found by the check before anything is created (`pod` is `None`), or confirmed by a quorum
    /// read after the kubelet named it in a `CreateContainerConfigError` (deleted after the
    /// check; `pod` names the pod left waiting for it).
    ReferencedSecretMissing {
        /// The namespace.
        namespace: String,
        /// What is missing: a Secret, or (from the kubelet) a key of one, a ConfigMap or its key.
        missing: Box<Missing>,
        /// The pod waiting for it, when one was created.
        pod: Option<String>,
    },
    /// E17: `--replace` checked the new pod's create by a dry run before deleting the running
    /// pod, and the API server refused it (a quota, a LimitRange, an admission webhook, a
    /// validation, a missing ServiceAccount) or could not be asked: nothing was deleted or
    /// created, and the running pod keeps its old configuration.
    ReplaceRefused {
        /// The namespace.
        namespace: String,
        /// The running pod, kept.
        pod: String,
        /// The dry run's failure.
        failure: RequestFailure,
    },
    /// E15: the agent's NetworkPolicy (`--isolate`) could not be put in place; nothing else was
    /// created by this call.
    Policy {
        /// The namespace.
        namespace: String,
        /// The policy's name (the agent's pod name).
        name: String,
        /// Why.
        failure: PolicyFailure,
    },
    /// E16: the agent's workspace claim (`--workspace-size`) could not be created or used;
    /// nothing but the NetworkPolicy was created by this call, and no claim was deleted.
    Workspace {
        /// The namespace.
        namespace: String,
        /// The claim's name.
        claim: String,
        /// Why.
        failure: ClaimFailure,
    },
    /// E8: the pod name is held by a pod that is not apiary's for this agent.
    ForeignPod {
        /// The pod name.
        pod: String,
    },
    /// E9: checking or creating the namespace failed.
    Namespace {
        /// The namespace.
        namespace: String,
        /// The failed request (it names the operation).
        failure: RequestFailure,
    },
    /// E10: a Secret or pod create failed.
    CreateFailed {
        /// Which object.
        kind: ObjectKind,
        /// Its name.
        name: String,
        /// The apiserver's refusal or the transport failure.
        failure: RequestFailure,
        /// What happened to this attempt's Secret.
        secret: SecretFate,
    },
    /// E11: the namespace is missing and apiary may not create it.
    NamespaceMissing {
        /// The namespace.
        namespace: String,
    },
    /// E12: any other read or delete failure.
    Failed {
        /// The operation (`read pod`, `delete pod`, ...).
        operation: String,
        /// The object name.
        object: String,
        /// The failed request.
        failure: RequestFailure,
    },
    /// The driver and the machine disagree about where the operation stands (an answer to an
    /// effect the machine did not ask for, an attempt the driver cannot rebuild): a bug in
    /// apiary, never a cluster answer, so no recovery path is taken for it.
    Internal {
        /// What disagreed (names only, never an event's payload).
        detail: String,
    },
}

/// What a failed deploy leaves of the agent in the cluster (deploy.md § What a failure leaves).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Left {
    /// The agent's pod is there, with its own Secret: kept for `logs`, removed by `undeploy`.
    Pod(String),
    /// A pod of the agent was seen, and the last read of it failed: it may still be there.
    MaybePod(String),
    /// The old pod of a replace (or a pod being deleted) is still terminating and no new pod was
    /// created: once it is gone nothing of the agent runs, and the next deploy creates the pod.
    Terminating(String),
}

impl DeployError {
    /// What this failure leaves of the agent, from what the failing call last read; `None` when
    /// it leaves no pod (a Secret left alone is named by the error itself).
    pub fn left(&self) -> Option<Left> {
        let from = |pod: &String, condition: &LatestCondition| match condition {
            LatestCondition::PodGone => None,
            LatestCondition::Unreadable(_) => Some(Left::MaybePod(pod.clone())),
            LatestCondition::Reported(_) | LatestCondition::NoneReported => {
                Some(Left::Pod(pod.clone()))
            }
        };
        match self {
            DeployError::DeadlineExceeded { pod, condition, .. }
            | DeployError::CreatedPodFailed { pod, condition, .. }
            | DeployError::RaceDeadlineExceeded { pod, condition, .. }
            | DeployError::WinnerFailed { pod, condition } => from(pod, condition),
            DeployError::PullFailing { pod, .. }
            | DeployError::ReferencedSecretMissing { pod: Some(pod), .. } => {
                Some(Left::Pod(pod.clone()))
            }
            DeployError::DisappearanceTimeout { pod, .. } | DeployError::WinnerDeleting { pod } => {
                Some(Left::Terminating(pod.clone()))
            }
            _ => None,
        }
    }

    /// The failed request behind this error, when one is (E9, E10, E12): its status code lets the
    /// shell add a hint (a 403 names the RBAC role to apply).
    pub fn request_failure(&self) -> Option<&RequestFailure> {
        match self {
            DeployError::Namespace { failure, .. }
            | DeployError::CreateFailed { failure, .. }
            | DeployError::Policy {
                failure: PolicyFailure::Failed(failure),
                ..
            }
            | DeployError::Workspace {
                failure: ClaimFailure::Failed(failure),
                ..
            }
            | DeployError::Failed { failure, .. }
            | DeployError::ReplaceRefused { failure, .. } => Some(failure),
            _ => None,
        }
    }
}

impl fmt::Display for DeployError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeployError::DeadlineExceeded {
                pod,
                deadline,
                condition,
            } => write!(
                f,
                "startup of pod {pod} not confirmed within {}s; latest condition: {condition}",
                deadline.as_secs()
            ),
            DeployError::ServiceAccountMissing {
                namespace,
                pod,
                account,
                deadline,
                secret,
            } => write!(
                f,
                "startup of pod {pod} not confirmed within {}s; latest condition: the pod could \
                 not be created because service account {account} does not exist in namespace \
                 {namespace} (the ServiceAccount controller creates `default` in every new \
                 namespace: check that the controller manager runs, or create it with \
                 `kubectl create serviceaccount {account} -n {namespace}`); {}",
                deadline.as_secs(),
                SecretFate::Left(secret.clone())
            ),
            DeployError::CreatedPodFailed {
                namespace,
                pod,
                condition,
            } => write!(
                f,
                "pod {pod} was created by this deploy and did not stay running; latest \
                 condition: {condition}; it is not retried in this call because an immediate \
                 exit recurs until its cause is fixed; look with `kubectl logs -n {namespace} \
                 {pod} -c agent`, then deploy again after fixing the cause"
            ),
            DeployError::PullFailing { pod, image, kind } => {
                write!(
                    f,
                    "{pod} did not start: {}",
                    pull_failure_text(*kind, image)
                )
            }
            DeployError::DisappearanceTimeout { pod, deadline } => write!(
                f,
                "timed out after {}s waiting for pod {pod} to finish terminating",
                deadline.as_secs()
            ),
            DeployError::RaceDeadlineExceeded {
                pod,
                deadline,
                condition,
            } => write!(
                f,
                "startup of pod {pod} not confirmed within {}s; another deploy of this agent \
                 created the pod; latest condition: {condition}",
                deadline.as_secs()
            ),
            DeployError::WinnerDeleting { pod } => write!(
                f,
                "pod {pod} was created by another deploy of this agent and is already being \
                 deleted; try again"
            ),
            DeployError::WinnerFailed { pod, condition } => write!(
                f,
                "pod {pod} was created by another deploy of this agent and did not start; \
                 latest condition: {condition}"
            ),
            DeployError::ReferencedSecretMissing {
                namespace,
                missing,
                pod,
            } => write_missing(f, namespace, missing, pod.as_deref()),
            DeployError::Policy {
                namespace,
                name,
                failure: PolicyFailure::Problem(problem),
            } => write!(
                f,
                "networkpolicy {namespace}/{name} (--isolate) {problem}; no pod was created"
            ),
            DeployError::Policy {
                failure: PolicyFailure::Failed(failure),
                ..
            } if failure.operation().is_some() => {
                write!(f, "{failure}; no pod was created")
            }
            DeployError::Policy {
                namespace,
                name,
                failure: PolicyFailure::Failed(failure),
            } => write!(
                f,
                "could not put networkpolicy {namespace}/{name} (--isolate) in place: \
                 {failure}; no pod was created"
            ),
            DeployError::ReplaceRefused { pod, failure, .. } => write!(
                f,
                "the new pod of --replace would not be created: {failure}; nothing was deleted \
                 or created, and the running pod {pod} keeps its old configuration"
            ),
            DeployError::Workspace {
                namespace,
                claim,
                failure: ClaimFailure::Problem(problem),
            } => write!(
                f,
                "persistentvolumeclaim {namespace}/{claim} (--workspace-size) {problem}; no pod \
                 was created"
            ),
            DeployError::Workspace {
                failure: ClaimFailure::Failed(failure),
                ..
            } if failure.operation().is_some() => {
                write!(f, "{failure}; no pod was created")
            }
            DeployError::Workspace {
                namespace,
                claim,
                failure: ClaimFailure::Failed(failure),
            } => write!(
                f,
                "could not put persistentvolumeclaim {namespace}/{claim} (--workspace-size) in \
                 place: {failure}; no pod was created"
            ),
            DeployError::ForeignPod { pod } => write!(
                f,
                "pod {pod} exists but is not managed by apiary for this agent (missing marker, \
                 different agent identity, or different binding version); remove it or use \
                 another namespace"
            ),
            // A failure that names its request already says what failed: never a second prefix.
            DeployError::Namespace { failure, .. } if failure.operation().is_some() => {
                write!(f, "{failure}")
            }
            DeployError::Namespace { namespace, failure } => {
                write!(f, "namespace {namespace}: {failure}")
            }
            DeployError::CreateFailed {
                failure, secret, ..
            } if failure.operation().is_some() => write!(f, "{failure}; {secret}"),
            DeployError::CreateFailed {
                kind,
                name,
                failure,
                secret,
            } => write!(f, "could not create {kind} {name}: {failure}; {secret}"),
            DeployError::NamespaceMissing { namespace } => write!(
                f,
                "namespace {namespace} does not exist and apiary may not create it: ask a \
                 cluster administrator to run `kubectl create namespace {namespace}`"
            ),
            DeployError::Failed { failure, .. } if failure.operation().is_some() => {
                write!(f, "{failure}")
            }
            DeployError::Failed {
                operation,
                object,
                failure,
            } => write!(f, "could not {operation} {object}: {failure}"),
            DeployError::Internal { detail } => write!(
                f,
                "internal error in apiary (please report it): {detail}; nothing further was \
                 attempted"
            ),
        }
    }
}

impl std::error::Error for DeployError {}

/// The `kubectl` resource word of a missing reference's kind.
fn kind_word(kind: RefKind) -> &'static str {
    match kind {
        RefKind::Secret => "secret",
        RefKind::ConfigMap => "configmap",
    }
}

/// The E14 sentence for `missing`, referenced by `pod` (`None`: found by the check before
/// anything was created).
fn write_missing(
    f: &mut fmt::Formatter<'_>,
    namespace: &str,
    missing: &Missing,
    pod: Option<&str>,
) -> fmt::Result {
    let name = &missing.name;
    let (object, words) = (missing.object(), missing.kubelet_words());
    match (pod, &missing.key, missing.kind) {
        (None, _, _) => write!(
            f,
            "secret {name}, which this deploy references (--env-from-secret or --env-secret), \
             does not exist in namespace {namespace}; nothing was created: create it first, for \
             example `kubectl create secret generic {name} -n {namespace} \
             --from-literal=KEY=VALUE`, then deploy again"
        ),
        (Some(pod), Some(key), kind) => write!(
            f,
            "pod {pod} cannot start: {object} has no key {key}, which the pod references; the \
             kubelet reports: {words}. The pod is kept and starts once the key exists: add it \
             (`kubectl edit {} {name} -n {namespace}`), or deploy again with --replace and a key \
             that exists",
            kind_word(kind),
        ),
        (Some(pod), None, RefKind::ConfigMap) => write!(
            f,
            "pod {pod} cannot start: {object}, which it references (through --overrides), does \
             not exist in namespace {namespace}; the kubelet reports: {words}. The pod is kept \
             and starts once it exists: create it (`kubectl create configmap {name} -n \
             {namespace}`), or deploy again with --replace without the reference"
        ),
        (Some(pod), None, RefKind::Secret) => write!(
            f,
            "pod {pod} cannot start: secret {name}, which it references (--env-from-secret or \
             --env-secret), no longer exists in namespace {namespace}; the pod is kept and starts \
             once the Secret exists again: create it, for example `kubectl create secret generic \
             {name} -n {namespace} --from-literal=KEY=VALUE`"
        ),
    }
}

#[cfg(test)]
mod tests;
