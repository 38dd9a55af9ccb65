//! The deploy machine's vocabulary with its driver: the [`Event`]s it is fed (the answer to the
//! previous effect) and the [`Effect`]s it returns, with the answer types they carry.
//!
//! Pure data. Failures are typed ([`RequestFailure`]: status code, reason, or no answer), never
//! strings, so the machine branches on what the apiserver said and the CLI can add hints.

use std::time::Duration;

use super::error::{DeployError, Deployed};
use crate::answer::{CreateAnswer, DeleteAnswer};
use crate::facts::{ObservedPod, ObservedSecret};
use crate::failure::RequestFailure;
use crate::policy::PolicyFailure;
use crate::verify::{PodDeletion, SecretDeletion};
use crate::workspace::{ClaimFailure, ClaimReport};

/// What ensuring the namespace established (deploy.md § Namespace ensure, item 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NamespaceCheck {
    /// The namespace was read, or created (by this call or a racing one).
    Present,
    /// Reading it was forbidden, so the deploy continues without ensuring it: it may be missing,
    /// and a refusal of the first request inside it says so (E12 with the `kubectl create
    /// namespace` hint).
    Unchecked,
}

/// Why ensuring the namespace failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NamespaceFailure {
    /// Creating the namespace was forbidden (E11).
    CreateForbidden,
    /// Any other failure of the namespace read or create (E9).
    Failed(RequestFailure),
}

/// This attempt's own Secret, as the driver created it: the generation it minted (the pod is
/// rebuilt from it) and the Secret's name. Held by the machine's phase from the Secret create
/// until the pod create is settled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnSecret {
    /// The generation minted for this attempt.
    pub generation: String,
    /// The Secret's name, `<pod>-<generation>`.
    pub name: String,
}

/// Why the Secret create failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecretCreateFailure {
    /// The Secret name the driver tried (or `<pod>-<generation>` when none could be minted).
    pub name: String,
    /// The failure; 404 `NotFound` means the namespace is missing (E11), anything else is E10.
    pub failure: RequestFailure,
}

/// What a pod create answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PodCreateOutcome {
    /// Created.
    Created,
    /// 409 `AlreadyExists`: another deploy won the create race.
    AlreadyExists,
    /// The apiserver answered with a refusal (quota, invalid quantity, admission).
    Refused(RequestFailure),
    /// 403 `Forbidden` from ServiceAccount admission: the account the pod runs as does not exist
    /// (`error looking up service account <ns>/<sa>: serviceaccount "<sa>" not found`). In a
    /// just-created namespace `default` appears once the ServiceAccount controller gets to it
    /// (deploy.md § Namespace ensure, item 4).
    ServiceAccountMissing {
        /// The missing account, as the refusal names it.
        account: String,
        /// The refusal.
        failure: RequestFailure,
    },
    /// No answer: the create may have landed.
    TransportFailed(RequestFailure),
}

impl PodCreateOutcome {
    /// The pod create's answer in the machine's terms: ServiceAccount admission's refusal (see
    /// [`RequestFailure::missing_service_account`]) is its own outcome, so the machine can wait
    /// for the account; any other answered refusal is `Refused`, no answer is `TransportFailed`.
    pub fn of(answer: Result<CreateAnswer, RequestFailure>) -> Self {
        match answer {
            Ok(CreateAnswer::Created) => Self::Created,
            Ok(CreateAnswer::AlreadyExists) => Self::AlreadyExists,
            Err(failure) => match failure.missing_service_account() {
                Some(account) => Self::ServiceAccountMissing { account, failure },
                None if failure.code().is_some() => Self::Refused(failure),
                None => Self::TransportFailed(failure),
            },
        }
    }
}

/// The pods and Secrets listed by the agent's selector.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Listing {
    /// The listed pods.
    pub pods: Vec<ObservedPod>,
    /// The listed Secrets.
    pub secrets: Vec<ObservedSecret>,
}

/// The answer to the previous effect.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(
    clippy::large_enum_variant,
    reason = "one event per apiserver request; boxing would only burden every driver"
)]
pub enum Event {
    /// Begin the operation (the first event).
    Start,
    /// Answer to [`Effect::Preflight`]: the namespace ensure and the first quorum GET of the pod
    /// name (the preflight GC's failures are swallowed by the driver, with a warning).
    Preflighted {
        /// What the namespace ensure established.
        namespace: Result<NamespaceCheck, NamespaceFailure>,
        /// The first read of the pod name (`Ok(None)` = confirmed absent).
        pod: Result<Option<ObservedPod>, RequestFailure>,
    },
    /// Answer to [`Effect::GetPod`] and [`Effect::ReadLatestCondition`]: the quorum GET of the
    /// pod name (`Ok(None)` = confirmed absent).
    PodRead(Result<Option<ObservedPod>, RequestFailure>),
    /// Answer to [`Effect::CheckSecret`]: whether the quorum GET found it.
    SecretChecked(Result<bool, RequestFailure>),
    /// Answer to [`Effect::CreateSecret`]: this attempt's Secret.
    SecretCreated(Result<OwnSecret, SecretCreateFailure>),
    /// Answer to [`Effect::CreatePod`].
    PodCreated(PodCreateOutcome),
    /// Answer to [`Effect::DeletePod`].
    PodDeleted(Result<DeleteAnswer, RequestFailure>),
    /// Answer to [`Effect::ListForDrop`] (a failure is only logged by the driver).
    Listed(Result<Listing, RequestFailure>),
    /// Answer to [`Effect::DeleteSecret`] (a failure is only logged by the driver).
    SecretDeleted(Result<DeleteAnswer, RequestFailure>),
    /// Answer to [`Effect::GetServiceAccount`]: whether the quorum GET found it.
    ServiceAccountRead(Result<bool, RequestFailure>),
    /// Answer to [`Effect::CheckReferences`]: for each name, in order, whether the quorum
    /// metadata read found it.
    ReferencesChecked(Result<Vec<bool>, RequestFailure>),
    /// Answer to [`Effect::CompareEnv`]: whether the Secret's environment differs from the
    /// desired one (a missing Secret differs). Never a value: the driver compares.
    EnvCompared(Result<bool, RequestFailure>),
    /// Answer to [`Effect::Prepare`]: each half it asked for (an unasked half answers `Ok`).
    Prepared(Prepared),
    /// Answer to [`Effect::Wait`].
    Waited,
}

/// The next thing the driver must do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// deploy.md § Sequence, steps 3 and 4, and the loop's first observation, run concurrently
    /// (they are independent reads and GC's own fenced deletes, and no create is sent before all
    /// three have answered): ensure the namespace, run the preflight GC when `gc` (swallowing its
    /// errors with a warning), and quorum GET the pod `pod`.
    Preflight {
        /// The pod name.
        pod: String,
        /// Whether to run the preflight GC.
        gc: bool,
    },
    /// Quorum GET of the pod `name`.
    GetPod {
        /// The pod name.
        name: String,
    },
    /// Quorum GET of the Secret `name`, to settle a `CreateContainerConfigError`.
    CheckSecret {
        /// The Secret name.
        name: String,
    },
    /// Mint a fresh generation, build and create this attempt's Secret, and answer with it.
    CreateSecret,
    /// Build the pod of `secret`'s generation (it references that Secret) and create it.
    CreatePod {
        /// This attempt's Secret, created before the pod.
        secret: OwnSecret,
    },
    /// Fenced pod delete, with exactly the fence of the observation that authorised it.
    DeletePod(PodDeletion),
    /// Quorum-list pods and Secrets by the agent's selector, to decide about dropping `secret`.
    ListForDrop {
        /// This attempt's own Secret.
        secret: String,
    },
    /// uid-fenced delete of this attempt's own, unreferenced Secret.
    DeleteSecret(SecretDeletion),
    /// Wait up to `max` for the pod to change (watch from `resource_version`), or just sleep.
    Wait {
        /// The longest wait (never past the deadline).
        max: Duration,
        /// The pod to watch.
        pod: String,
        /// The last observed resourceVersion, when any.
        resource_version: Option<String>,
    },
    /// Quorum GET of the ServiceAccount `name`, while a pod create waits for it to exist.
    GetServiceAccount {
        /// The account name.
        name: String,
    },
    /// Quorum GET of the pod `name` for the latest condition of an error.
    ReadLatestCondition {
        /// The pod name.
        name: String,
    },
    /// Quorum metadata reads of the Secrets the pod references besides its own, before anything
    /// is created (deploy.md § Credentials from the cluster); never their values.
    CheckReferences {
        /// The Secret names.
        names: Vec<String>,
    },
    /// Read the pod's own Secret `secret` and compare its environment with the desired one,
    /// apiary's per-attempt keys excepted (`deploy --replace`, deploy.md § Replacing a live
    /// agent). The driver compares; the machine learns only whether they differ.
    CompareEnv {
        /// The pod's own Secret.
        secret: String,
    },
    /// The agent's objects the pod depends on, concurrently, once per call, before its first
    /// Secret create. `policy` (`--isolate`): create the agent's NetworkPolicy, or, when one
    /// holds its name, keep it, update it (fenced) or refuse it as `policy::policy_step` decides
    /// (deploy.md § Egress control). `workspace` (`--workspace-size`): create the agent's claim,
    /// or use the one that holds its name as `workspace::claim_step` decides (deploy.md
    /// § Persistent workspace).
    Prepare {
        /// Put the NetworkPolicy in place.
        policy: bool,
        /// Create or find the workspace claim.
        workspace: bool,
    },
    /// The operation is over.
    Finish(Result<Deployed, DeployError>),
}

/// The name of an event, for the internal-error message (names only: an event can hold a
/// kubelet message, which can echo credentials).
pub(super) fn event_name(event: &Event) -> &'static str {
    match event {
        Event::Start => "Start",
        Event::Preflighted { .. } => "Preflighted",
        Event::PodRead(_) => "PodRead",
        Event::SecretChecked(_) => "SecretChecked",
        Event::SecretCreated(_) => "SecretCreated",
        Event::PodCreated(_) => "PodCreated",
        Event::PodDeleted(_) => "PodDeleted",
        Event::Listed(_) => "Listed",
        Event::SecretDeleted(_) => "SecretDeleted",
        Event::ServiceAccountRead(_) => "ServiceAccountRead",
        Event::ReferencesChecked(_) => "ReferencesChecked",
        Event::EnvCompared(_) => "EnvCompared",
        Event::Prepared(_) => "Prepared",
        Event::Waited => "Waited",
    }
}

/// What [`Effect::Prepare`] did: each half's answer; a half not asked for answers `Ok`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prepared {
    /// The NetworkPolicy (`--isolate`).
    pub policy: Result<(), PolicyFailure>,
    /// The workspace claim (`--workspace-size`): what was done about it, `None` when not asked.
    pub workspace: Result<Option<ClaimReport>, ClaimFailure>,
}

impl Prepared {
    /// Both halves done (or not asked for), nothing to report.
    pub fn nothing() -> Prepared {
        Prepared {
            policy: Ok(()),
            workspace: Ok(None),
        }
    }
}
