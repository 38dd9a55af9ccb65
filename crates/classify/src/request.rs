//! The one vocabulary between every operation's machine and the shell that performs it
//! (deploy.md § Cluster interface and requests): each machine — deploy, undeploy, the GC pass,
//! status, the expiry collection and renew — asks for the next [`Request`], is fed its
//! [`Answer`], and ends with [`Step::Done`]. All six implement [`Machine`], so one drive loop
//! runs any of them and one `perform(Request) -> Answer` executes every request.
//!
//! Pure data and one trait. Failures are typed ([`RequestFailure`]: status code, reason, or no
//! answer), never strings, so a machine branches on what the apiserver said.

use std::time::Duration;

use crate::answer::{CreateAnswer, DeleteAnswer};
use crate::facts::{ObservedPod, ObservedSecret};
use crate::failure::RequestFailure;
use crate::policy::PolicyFailure;
use crate::status::Progress;
use crate::verify::{PodDeletion, SecretDeletion};
use crate::workspace::{ClaimFailure, ClaimFate, ClaimReport, ClaimStatus};

/// A sans-IO operation: fed [`Answer::Start`] first and then the answer to each request it
/// asked for, each time with a monotonic reading `now` (a deadline counts from the first step).
/// Once it returns [`Step::Done`], every further step repeats it.
pub trait Machine {
    /// What the operation ends with.
    type Output;

    /// Feed the answer to the previous request; get the next request or the end.
    fn step(&mut self, now: Duration, answer: Answer) -> Step<Self::Output>;

    /// The change of observed state since the last call, if any (deploy.md § Loop: one line per
    /// change). Only the machines that watch a pod (deploy, undeploy) report any.
    fn poll_progress(&mut self) -> Option<Progress> {
        None
    }
}

/// What one step of a [`Machine`] returns.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(
    clippy::large_enum_variant,
    reason = "one value per step; boxing would only burden every driver"
)]
pub enum Step<O> {
    /// Perform this request and feed its answer back.
    Request(Request),
    /// The operation is over.
    Done(O),
}

/// Every request any operation makes. Each is answered by the [`Answer`] its documentation
/// names; reads are quorum reads, deletes carry the fence of the observation that authorised
/// them, and the one update ([`Request::WriteExpiry`]) carries the `resourceVersion` of its.
/// What differs from one operation to another is a field the asking machine sets (whether a
/// read goes to the stuck-pod watch, what a log line says), so the shell never asks which
/// operation it performs for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// deploy.md § Sequence, steps 3 and 4, and the loop's first observation, run concurrently:
    /// ensure the namespace, run the preflight GC when `gc` (its failures are warnings), and
    /// read the pod `pod`, through the stuck-pod watch as every read of the deploy loop (see
    /// [`Request::GetPod`]). Answered by [`Answer::Preflighted`].
    Preflight {
        /// The pod name.
        pod: String,
        /// Whether to run the preflight GC.
        gc: bool,
    },
    /// The agent's objects its pod depends on, concurrently, once per deploy before its first
    /// Secret create: the NetworkPolicy (`policy`, deploy.md § Egress control) and the workspace
    /// claim (`workspace`, deploy.md § Persistent workspace), each half as `crate::object::Place`
    /// over its kind decides. Answered by [`Answer::Prepared`].
    Prepare {
        /// Put the NetworkPolicy in place.
        policy: bool,
        /// Create or find the workspace claim.
        workspace: bool,
    },
    /// Metadata reads of the Secrets the pod references besides its own (deploy.md
    /// § Credentials from the cluster); never their values. Answered by
    /// [`Answer::ReferencesChecked`].
    CheckReferences {
        /// The Secret names.
        names: Vec<String>,
    },
    /// Read the pod's own Secret `secret` and compare its environment with the desired one,
    /// apiary's per-attempt keys excepted (deploy.md § Replacing a live agent, § status). The
    /// shell compares; the machine learns only which keys differ, never a value. Answered by
    /// [`Answer::EnvCompared`].
    CompareEnv {
        /// The pod's own Secret.
        secret: String,
        /// Whether the shell also logs which keys differ, or that the Secret is gone (keys only):
        /// a deploy says so as the reason it replaces; `status` reports the keys itself.
        log_keys: bool,
    },
    /// Mint a fresh generation, build this attempt's Secret and create it. Answered by
    /// [`Answer::SecretCreated`].
    CreateSecret,
    /// Build the pod of `secret`'s generation (it references that Secret) and create it.
    /// Answered by [`Answer::PodCreated`].
    CreatePod {
        /// This attempt's Secret, created before the pod.
        secret: OwnSecret,
    },
    /// Build the pod this call would create and send its create as a server-side dry run
    /// (`dryRun=All`, under a generated name so the running pod's name is no conflict): the API
    /// server validates and admits it (quotas, LimitRanges, webhooks, the ServiceAccount) and
    /// writes nothing. Sent by a replacing deploy before it deletes the running pod (deploy.md
    /// § Replacing a live agent). Answered by [`Answer::PodCreateChecked`].
    CheckPodCreate,
    /// Read the pod `name`. Answered by [`Answer::PodRead`].
    GetPod {
        /// The pod name.
        name: String,
        /// Whether the read also goes to the stuck-pod watch (deploy.md § When a pod will not go
        /// away): set by the operations that wait for their pod to go (deploy, undeploy), on
        /// every read, so the watch warns once a deletion-marked pod outlives its grace period.
        watch_stuck: bool,
    },
    /// Whether the Secret `name` exists. Answered by [`Answer::Exists`].
    SecretExists {
        /// The Secret name.
        name: String,
    },
    /// Whether the ServiceAccount `name` exists (a pod create waits for it). Answered by
    /// [`Answer::Exists`].
    ServiceAccountExists {
        /// The account name.
        name: String,
    },
    /// List pods by the agent's selector, keeping the list's `Date` as the server clock, and
    /// then, when `secrets`, its Secrets. Answered by [`Answer::Listed`].
    List {
        /// Whether to list Secrets after the pods.
        secrets: bool,
        /// The Secret a deploy lists to drop, when it does: a failed listing leaves it for a
        /// later GC pass and the deploy goes on, so the shell warns, naming it. `None` when the
        /// machine reports a failed listing itself.
        dropping: Option<SecretDrop>,
    },
    /// Fenced pod delete. Answered by [`Answer::Deleted`].
    DeletePod {
        /// The delete, with the fence of the observation that authorised it.
        deletion: PodDeletion,
        /// The line the shell logs before sending it, naming the pod and its fence; `None` when
        /// the operation's report names the delete.
        note: Option<&'static str>,
    },
    /// Read the claim under the agent's workspace name, for `status` (deploy.md § Persistent
    /// workspace); a failed read only loses the line. Answered by [`Answer::WorkspaceRead`].
    ReadWorkspace,
    /// Delete the agent's NetworkPolicy when a read proves it ours, fenced by that read; a
    /// foreign one is never touched (deploy.md § Egress control), as `crate::object::Settle`
    /// over the policy decides. Answered by [`Answer::PolicyRemoved`].
    RemovePolicy,
    /// Read the agent's workspace claim and report it kept, or, when `delete`, delete it fenced
    /// by the read that proved it ours, as `crate::object::Settle` over the claim decides
    /// (deploy.md § Persistent workspace). Answered by
    /// [`Answer::WorkspaceSettled`].
    SettleWorkspace {
        /// Whether to delete it (`--delete-workspace`, once no pod of the agent runs).
        delete: bool,
    },
    /// uid-fenced Secret delete. Answered by [`Answer::Deleted`].
    DeleteSecret {
        /// The delete, with the uid fence of the listing that authorised it.
        deletion: SecretDeletion,
        /// Whether a failure is also a warning of the shell's (the Secret stays for a later GC
        /// pass): set by the operations whose reports do not list failed Secret deletes
        /// (deploy, undeploy); the GC pass and the expiry collection report them.
        warn_on_failure: bool,
    },
    /// The guarded expiry write of `renew` (deploy.md § Expiry). Answered by [`Answer::Written`].
    WriteExpiry(ExpiryWrite),
    /// Wait up to `max` for the pod `pod` to change (watching from `resource_version`), or just
    /// sleep. Answered by [`Answer::Waited`].
    Wait {
        /// The longest wait (never past the deadline).
        max: Duration,
        /// The pod to watch.
        pod: String,
        /// The last observed resourceVersion, when any.
        resource_version: Option<String>,
    },
    /// Sleep this long. Answered by [`Answer::Waited`].
    Sleep(Duration),
}

/// The answer to the previous [`Request`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(
    clippy::large_enum_variant,
    reason = "one answer per request; boxing would only burden every driver"
)]
pub enum Answer {
    /// Begin the operation (the first answer, to no request).
    Start,
    /// To [`Request::Preflight`].
    Preflighted {
        /// What the namespace ensure established.
        namespace: Result<NamespaceCheck, NamespaceFailure>,
        /// The first read of the pod name (`Ok(None)` = confirmed absent).
        pod: Result<Option<ObservedPod>, RequestFailure>,
    },
    /// To [`Request::Prepare`].
    Prepared(Prepared),
    /// To [`Request::CheckReferences`]: for each name, in order, whether it exists.
    ReferencesChecked(Result<Vec<bool>, RequestFailure>),
    /// To [`Request::CompareEnv`]: the keys whose values differ (empty when none), or `None`
    /// when the Secret is gone (which differs).
    EnvCompared(Result<Option<Vec<String>>, RequestFailure>),
    /// To [`Request::CreateSecret`]: this attempt's Secret.
    SecretCreated(Result<OwnSecret, SecretCreateFailure>),
    /// To [`Request::CreatePod`].
    PodCreated(PodCreateOutcome),
    /// To [`Request::CheckPodCreate`]: admitted, or the refusal the create would get.
    PodCreateChecked(Result<(), RequestFailure>),
    /// To [`Request::GetPod`] (`Ok(None)` = confirmed absent).
    PodRead(Result<Option<ObservedPod>, RequestFailure>),
    /// To [`Request::SecretExists`] and [`Request::ServiceAccountExists`].
    Exists(Result<bool, RequestFailure>),
    /// To [`Request::List`].
    Listed(Result<Listing, RequestFailure>),
    /// To [`Request::DeletePod`] and [`Request::DeleteSecret`].
    Deleted(Result<DeleteAnswer, RequestFailure>),
    /// To [`Request::WriteExpiry`].
    Written(Result<WriteAnswer, RequestFailure>),
    /// To [`Request::ReadWorkspace`]: the claim, when one holds the name and could be read.
    WorkspaceRead(Option<ClaimStatus>),
    /// To [`Request::RemovePolicy`]: the deleted policy's name, `None` when none was ours to
    /// delete.
    PolicyRemoved(Result<Option<String>, RequestFailure>),
    /// To [`Request::SettleWorkspace`]: the claim's fate, `None` when the agent has no claim of
    /// apiary's.
    WorkspaceSettled(Result<Option<ClaimFate>, RequestFailure>),
    /// To [`Request::Wait`] and [`Request::Sleep`].
    Waited,
}

impl Answer {
    /// The answer's name, for internal-error messages (names only: an answer can hold a kubelet
    /// message, which can echo credentials).
    pub fn name(&self) -> &'static str {
        match self {
            Answer::Start => "Start",
            Answer::Preflighted { .. } => "Preflighted",
            Answer::Prepared(_) => "Prepared",
            Answer::ReferencesChecked(_) => "ReferencesChecked",
            Answer::EnvCompared(_) => "EnvCompared",
            Answer::SecretCreated(_) => "SecretCreated",
            Answer::PodCreated(_) => "PodCreated",
            Answer::PodCreateChecked(_) => "PodCreateChecked",
            Answer::PodRead(_) => "PodRead",
            Answer::Exists(_) => "Exists",
            Answer::Listed(_) => "Listed",
            Answer::Deleted(_) => "Deleted",
            Answer::Written(_) => "Written",
            Answer::WorkspaceRead(_) => "WorkspaceRead",
            Answer::PolicyRemoved(_) => "PolicyRemoved",
            Answer::WorkspaceSettled(_) => "WorkspaceSettled",
            Answer::Waited => "Waited",
        }
    }
}

/// The pods (and, when asked, Secrets) listed by the agent's selector, with the pod list's
/// server clock.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Listing {
    /// The listed pods.
    pub pods: Vec<ObservedPod>,
    /// The listed Secrets (empty when the request did not ask for them).
    pub secrets: Vec<ObservedSecret>,
    /// The pod list's `Date` in Unix seconds; `None` when absent or malformed.
    pub server_now: Option<i64>,
}

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

/// This attempt's own Secret, as the shell created it: the generation it minted (the pod is
/// rebuilt from it) and the Secret's name. Held by the deploy machine from the Secret create
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
    /// The Secret name the shell tried (or `<pod>-<generation>` when none could be minted).
    pub name: String,
    /// The failure; 404 `NotFound` means the namespace is missing (E11), anything else is E10.
    pub failure: RequestFailure,
}

/// What a pod create answered, in the deploy machine's terms.
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

/// What [`Request::Prepare`] did: each half's answer; a half not asked for answers `Ok`.
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

/// The guarded annotation write of `renew`: the pod, the `resourceVersion` of the observation
/// that authorised it, and the new instant. Only the renew machine builds one, from a verified
/// observation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpiryWrite {
    name: String,
    resource_version: String,
    expires_at: i64,
}

impl ExpiryWrite {
    /// The write of `expires_at` to the pod `name`, guarded by `resource_version`.
    pub(crate) fn new(name: String, resource_version: String, expires_at: i64) -> ExpiryWrite {
        ExpiryWrite {
            name,
            resource_version,
            expires_at,
        }
    }

    /// The pod to write.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The `resourceVersion` the write must carry (`metadata.resourceVersion` of the update):
    /// the apiserver refuses it with 409 `Conflict` if the pod changed since.
    pub fn resource_version(&self) -> &str {
        &self.resource_version
    }

    /// The new expiry instant (apiserver clock, Unix seconds).
    pub fn expires_at(&self) -> i64 {
        self.expires_at
    }

    /// The annotation value to write ([`crate::expiry::ANNOTATION_EXPIRES_AT`]).
    pub fn annotation_value(&self) -> String {
        crate::expiry::format_instant(self.expires_at)
    }
}

/// The Secret a deploy lists to drop ([`Request::List`]), as a failed listing's warning names
/// it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SecretDrop {
    /// This attempt's own Secret, by name.
    Own(String),
    /// The own Secret of the pod this call's replace deleted (deploy.md § Replacing a live
    /// agent).
    Replaced,
}

/// What a guarded write answered when it did not fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteAnswer {
    /// The apiserver applied it.
    Written,
    /// 409 `Conflict`: the pod changed since the observation.
    Conflict,
    /// 404: the pod is gone.
    NotFound,
}
