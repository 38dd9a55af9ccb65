//! The deploy operation (deploy.md § The deploy operation) as a sans-IO state machine.
//!
//! The machine is fed [`Event`]s — the answer to the previous effect, with the monotonic elapsed
//! time of the operation — and returns the next [`Effect`] to perform. A small driver executes
//! effects against the cluster. The machine performs no I/O, reads no clock and uses no
//! randomness: the driver mints the generation, builds the objects and reports back the Secret
//! name it used. Every deadline check compares the `elapsed` the driver passes in.
//!
//! Safety properties the structure gives (and the property tests check over arbitrary event
//! sequences): a pod delete carries the fence of the verified observation that authorised it;
//! no pod delete after this call's own create (E2 instead, deploy.md § One create attempt per
//! call); an unverified pod is never mutated (E8 before anything is written); the lost-race path
//! has no pod-delete edge and drops only this attempt's own, unreferenced Secret.
//!
//! A second create in one call: issue 2 asks for "no second create in one call", while deploy.md
//! scenario R35 says that when this call's own pod vanishes after its create, the loop may create
//! again (only the Delete action is bounded, deploy.md § One create attempt per call). The machine
//! follows the spec: a further create happens only after this call's pod was observed absent, never
//! after a lost race and never through a delete of its own pod — which is what the property test
//! asserts instead of a blanket one-create bound.

mod error;

use std::time::Duration;

pub use error::{DeployError, Deployed, ObjectKind, SecretFate};

use crate::classify::{Action, classify};
use crate::condition::LatestCondition;
use crate::facts::{ObservedPod, ObservedSecret};
use crate::reference::own_secret_deletion;
use crate::startup::StartupState;
use crate::verify::{PodDeletion, SecretDeletion, SettledPod, VerifiedPod, verify_pod};

/// The default operation deadline (deploy.md § Timeout).
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(600);
/// The default poll interval.
pub const DEFAULT_POLL: Duration = Duration::from_secs(2);

/// What one deploy works towards: identity, desired intent and timing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeploySpec {
    /// The namespace (for messages).
    pub namespace: String,
    /// The deterministic pod name.
    pub pod_name: String,
    /// The full 64-hex agent id verification compares against.
    pub agent_id: String,
    /// The normalized image (for pull-failure reports).
    pub image: String,
    /// The desired create-intent fingerprint.
    pub desired_intent: String,
    /// The operation deadline (at most 600 s; validated by configuration).
    pub deadline: Duration,
    /// The poll interval.
    pub poll: Duration,
    /// The service account the pod names (`--service-account`); `None` runs it as `default`.
    pub service_account: Option<String>,
}

/// The account a pod runs as when it names none, and the one the ServiceAccount controller
/// creates in every new namespace.
pub const DEFAULT_SERVICE_ACCOUNT: &str = "default";

/// Why ensuring the namespace failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NamespaceFailure {
    /// Creating the namespace was forbidden (E11).
    CreateForbidden,
    /// Any other failure: the operation and the apiserver's error (E9).
    Failed(String),
}

/// Why the Secret create failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecretCreateFailure {
    /// The Secret name the driver tried.
    pub name: String,
    /// The apiserver answered 404 `NotFound`: the namespace is missing (E11).
    pub namespace_missing: bool,
    /// The apiserver's error or the transport failure (E10).
    pub detail: String,
}

/// What a pod create answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PodCreateOutcome {
    /// Created.
    Created,
    /// 409 `AlreadyExists`: another deploy won the create race.
    AlreadyExists,
    /// The apiserver answered with a refusal (quota, invalid quantity, admission).
    Refused(String),
    /// 403 `Forbidden` from ServiceAccount admission: the account the pod runs as does not exist
    /// (`error looking up service account <ns>/<sa>: serviceaccount "<sa>" not found`). In a
    /// just-created namespace `default` appears once the ServiceAccount controller gets to it
    /// (deploy.md § Namespace ensure, item 4).
    ServiceAccountMissing {
        /// The missing account, as the refusal names it.
        account: String,
        /// The apiserver's error (status code, reason, message).
        detail: String,
    },
    /// No answer: the create may have landed.
    TransportFailed(String),
}

/// What a fenced delete answered when it did not fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeleteAnswer {
    /// Accepted (the object may still exist, deletion-marked).
    Accepted,
    /// Already gone.
    NotFound,
    /// The precondition did not hold: the object changed since the observation.
    PreconditionFailed,
}

/// The pods and Secrets listed by the agent's selector, for dropping this attempt's Secret.
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
    /// Answer to [`Effect::EnsureNamespace`].
    NamespaceEnsured(Result<(), NamespaceFailure>),
    /// Answer to [`Effect::RunGc`] (its failures are swallowed by the driver, with a warning).
    GcDone,
    /// Answer to [`Effect::GetPod`] and [`Effect::ReadLatestCondition`]: the quorum GET of the
    /// pod name (`Ok(None)` = confirmed absent; `Err` = the read error, in words).
    PodRead(Result<Option<ObservedPod>, String>),
    /// Answer to [`Effect::CheckSecret`]: whether the quorum GET found it.
    SecretChecked(Result<bool, String>),
    /// Answer to [`Effect::CreateSecret`]: the name of the Secret created.
    SecretCreated(Result<String, SecretCreateFailure>),
    /// Answer to [`Effect::CreatePod`].
    PodCreated(PodCreateOutcome),
    /// Answer to [`Effect::DeletePod`].
    PodDeleted(Result<DeleteAnswer, String>),
    /// Answer to [`Effect::ListForDrop`] (a failure is only logged by the driver).
    Listed(Result<Listing, String>),
    /// Answer to [`Effect::DeleteSecret`] (a failure is only logged by the driver).
    SecretDeleted(Result<DeleteAnswer, String>),
    /// Answer to [`Effect::GetServiceAccount`]: whether the quorum GET found it.
    ServiceAccountRead(Result<bool, String>),
    /// Answer to [`Effect::Wait`].
    Waited,
}

/// The next thing the driver must do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Ensure the namespace exists.
    EnsureNamespace,
    /// Run preflight GC; swallow its errors with a warning.
    RunGc,
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
    /// Mint a fresh generation, build and create this attempt's Secret, and answer with its name.
    CreateSecret,
    /// Create the pod referencing `secret`, the Secret of this attempt.
    CreatePod {
        /// The Secret the pod's `envFrom` names.
        secret: String,
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
        /// The longest wait.
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
    /// The operation is over.
    Finish(Result<Deployed, DeployError>),
}

/// Which error a latest-condition read completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Failing {
    Deadline,
    CreatedPodFailed,
    RaceDeadline,
    WinnerFailed,
}

/// Where to go once this attempt's own Secret has been dealt with.
#[derive(Clone, Debug, PartialEq, Eq)]
enum AfterDrop {
    /// The race winner is foreign: E8.
    Foreign,
    /// Observe the race winner.
    Race,
    /// The pod create was refused: E10.
    Refused(String),
}

/// What the machine waits for.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Phase {
    Start,
    Namespace,
    Gc,
    Observe,
    SecretCheck(VerifiedPod),
    CreatingSecret,
    CreatingPod,
    Deleting { uid: String },
    DisappearRead { uid: String },
    DisappearWait { uid: String },
    PollWait,
    RaceVerify,
    DropList(AfterDrop),
    DropDelete(AfterDrop),
    RaceRead,
    RaceSecretCheck(VerifiedPod),
    RaceWait,
    AccountRead { after_wait: bool },
    AccountWait,
    Condition(Failing),
    Done(Result<Deployed, DeployError>),
}

/// The deploy loop of one call. Feed it [`Event::Start`] first, then the answer to each effect.
#[derive(Clone, Debug)]
pub struct DeployMachine {
    spec: DeploySpec,
    phase: Phase,
    created_this_call: bool,
    own_secret: Option<String>,
    own_secret_removed: bool,
    last_resource_version: Option<String>,
    /// The account a refused pod create waits for (deploy.md § Namespace ensure, item 4).
    missing_account: Option<String>,
    /// Whether the one immediate create retry after an account refusal has been spent: every
    /// later retry follows a wait, so a lagging admission cache cannot make the loop hot-spin.
    account_retried_at_once: bool,
}

impl DeployMachine {
    /// A machine for one deploy call.
    pub fn new(spec: DeploySpec) -> DeployMachine {
        DeployMachine {
            spec,
            phase: Phase::Start,
            created_this_call: false,
            own_secret: None,
            own_secret_removed: false,
            last_resource_version: None,
            missing_account: None,
            account_retried_at_once: false,
        }
    }

    /// The spec this machine works towards.
    pub fn spec(&self) -> &DeploySpec {
        &self.spec
    }

    /// Whether this call's own pod create was accepted.
    pub fn created_this_call(&self) -> bool {
        self.created_this_call
    }

    /// Feed the answer to the previous effect, with the operation's elapsed time, and get the
    /// next effect. Once finished, every further step repeats the `Finish`.
    pub fn step(&mut self, elapsed: Duration, event: Event) -> Effect {
        let phase = std::mem::replace(&mut self.phase, Phase::Start);
        let effect = self.transition(phase, elapsed, event);
        if let Effect::Finish(result) = &effect {
            self.phase = Phase::Done(result.clone());
        }
        effect
    }

    fn transition(&mut self, phase: Phase, elapsed: Duration, event: Event) -> Effect {
        match (phase, event) {
            (Phase::Done(result), _) => Effect::Finish(result),
            (Phase::Start, Event::Start) => self.go(Phase::Namespace, Effect::EnsureNamespace),
            (Phase::Namespace, Event::NamespaceEnsured(result)) => match result {
                Ok(()) => self.go(Phase::Gc, Effect::RunGc),
                Err(NamespaceFailure::CreateForbidden) => self.namespace_missing(),
                Err(NamespaceFailure::Failed(detail)) => fail(DeployError::Namespace {
                    namespace: self.spec.namespace.clone(),
                    detail,
                }),
            },
            (Phase::Gc, Event::GcDone) => self.loop_top(elapsed),
            (Phase::PollWait, Event::Waited) => self.loop_top(elapsed),
            (Phase::Observe, Event::PodRead(read)) => match self.read(read) {
                Err(effect) => effect,
                Ok(None) => self.act(elapsed, Action::Create),
                Ok(Some(pod)) => match verify_pod(&pod, &self.spec.agent_id) {
                    None => self.foreign(),
                    Some(verified) => self.settle_main(elapsed, verified, None),
                },
            },
            (Phase::SecretCheck(pod), Event::SecretChecked(answer)) => match answer {
                Ok(exists) => self.settle_main(elapsed, pod, Some(exists)),
                Err(detail) => self.read_secret_failed(&pod, detail),
            },
            (Phase::CreatingSecret, Event::SecretCreated(created)) => match created {
                Ok(secret) => {
                    self.own_secret = Some(secret.clone());
                    self.own_secret_removed = false;
                    self.go(Phase::CreatingPod, Effect::CreatePod { secret })
                }
                Err(failure) if failure.namespace_missing => self.namespace_missing(),
                Err(failure) => fail(DeployError::CreateFailed {
                    kind: ObjectKind::Secret,
                    name: failure.name,
                    detail: failure.detail,
                    secret: SecretFate::NotCreated,
                }),
            },
            (Phase::CreatingPod, Event::PodCreated(outcome)) => match outcome {
                PodCreateOutcome::Created => {
                    self.created_this_call = true;
                    self.last_resource_version = None;
                    // A just-created pod cannot have started; re-observing at once would
                    // hot-spin (deploy.md § Create).
                    self.wait(elapsed, Phase::PollWait)
                }
                PodCreateOutcome::AlreadyExists => self.get_pod(Phase::RaceVerify),
                PodCreateOutcome::Refused(detail) => self.drop_own(AfterDrop::Refused(detail)),
                PodCreateOutcome::ServiceAccountMissing { account, detail } => {
                    self.account_refused(account, detail)
                }
                PodCreateOutcome::TransportFailed(detail) => {
                    // The create may have landed: deleting the Secret could strand that pod.
                    let secret = SecretFate::Left(self.own_secret.clone().unwrap_or_default());
                    fail(DeployError::CreateFailed {
                        kind: ObjectKind::Pod,
                        name: self.spec.pod_name.clone(),
                        detail,
                        secret,
                    })
                }
            },
            (Phase::Deleting { uid }, Event::PodDeleted(answer)) => match answer {
                Ok(DeleteAnswer::Accepted | DeleteAnswer::NotFound) => {
                    self.disappear_top(elapsed, uid)
                }
                // The object changed since the observation: discard the action and re-classify
                // what exists now; never retry with a fresher fence.
                Ok(DeleteAnswer::PreconditionFailed) => self.wait(elapsed, Phase::PollWait),
                Err(detail) => self.failed("delete pod", detail),
            },
            (Phase::DisappearRead { uid }, Event::PodRead(read)) => match self.read(read) {
                Err(effect) => effect,
                Ok(Some(pod)) if pod.marks.uid.as_deref() == Some(uid.as_str()) => {
                    self.wait(elapsed, Phase::DisappearWait { uid })
                }
                // Gone, or a different object now holds the name: re-classify it.
                Ok(_) => self.loop_top(elapsed),
            },
            (Phase::DisappearWait { uid }, Event::Waited) => self.disappear_top(elapsed, uid),
            (Phase::RaceVerify, Event::PodRead(read)) => match self.read(read) {
                Err(effect) => effect,
                Ok(Some(pod)) if verify_pod(&pod, &self.spec.agent_id).is_none() => {
                    self.drop_own(AfterDrop::Foreign)
                }
                Ok(_) => self.drop_own(AfterDrop::Race),
            },
            (Phase::DropList(then), Event::Listed(listed)) => {
                let own = self.own_secret.clone().unwrap_or_default();
                let deletion = listed.ok().and_then(|listing| {
                    own_secret_deletion(&own, &listing.pods, &listing.secrets, &self.spec.agent_id)
                });
                match deletion {
                    Some(deletion) => {
                        self.go(Phase::DropDelete(then), Effect::DeleteSecret(deletion))
                    }
                    None => self.after_drop(elapsed, then),
                }
            }
            (Phase::DropDelete(then), Event::SecretDeleted(answer)) => {
                self.own_secret_removed =
                    matches!(answer, Ok(DeleteAnswer::Accepted | DeleteAnswer::NotFound));
                self.after_drop(elapsed, then)
            }
            (Phase::RaceRead, Event::PodRead(read)) => match self.read(read) {
                Err(effect) => effect,
                Ok(None) => self.wait(elapsed, Phase::RaceWait),
                Ok(Some(pod)) => match verify_pod(&pod, &self.spec.agent_id) {
                    None => self.foreign(),
                    Some(verified) => self.settle_race(elapsed, verified, None),
                },
            },
            (Phase::RaceSecretCheck(pod), Event::SecretChecked(answer)) => match answer {
                Ok(exists) => self.settle_race(elapsed, pod, Some(exists)),
                Err(detail) => self.read_secret_failed(&pod, detail),
            },
            (Phase::RaceWait, Event::Waited) => self.race_top(elapsed),
            (Phase::AccountRead { after_wait }, Event::ServiceAccountRead(answer)) => {
                match answer {
                    _ if self.expired(elapsed) => self.account_deadline(),
                    // Retry with the same Secret: no pod references it yet, and a fresh one
                    // would only add litter (deploy.md § Namespace ensure, item 4).
                    Ok(true) if after_wait || !self.account_retried_at_once => {
                        self.account_retried_at_once = true;
                        let secret = self.own_secret.clone().unwrap_or_default();
                        self.go(Phase::CreatingPod, Effect::CreatePod { secret })
                    }
                    Ok(_) => self.wait(elapsed, Phase::AccountWait),
                    Err(detail) => fail(DeployError::Failed {
                        operation: "read service account".to_owned(),
                        object: self.missing_account_name(),
                        detail,
                    }),
                }
            }
            (Phase::AccountWait, Event::Waited) => self.account_top(elapsed),
            (Phase::Condition(failing), Event::PodRead(read)) => {
                let condition = match read {
                    Ok(pod) => LatestCondition::from_read(pod.as_ref().map(|p| &p.facts)),
                    Err(detail) => LatestCondition::Unreadable(detail),
                };
                fail(self.failing_error(failing, condition))
            }
            (phase, event) => fail(DeployError::Failed {
                operation: "drive the deploy of".to_owned(),
                object: format!("pod {}", self.spec.pod_name),
                // Names only: an event can hold a kubelet message, which can echo credentials.
                detail: format!(
                    "the driver answered {} while the machine waited for {}",
                    event_name(&event),
                    phase_name(&phase)
                ),
            }),
        }
    }

    fn go(&mut self, phase: Phase, effect: Effect) -> Effect {
        self.phase = phase;
        effect
    }

    fn expired(&self, elapsed: Duration) -> bool {
        elapsed >= self.spec.deadline
    }

    fn get_pod(&mut self, phase: Phase) -> Effect {
        let name = self.spec.pod_name.clone();
        self.go(phase, Effect::GetPod { name })
    }

    /// deploy.md § Loop, steps 1 and 2: deadline check, then observe.
    fn loop_top(&mut self, elapsed: Duration) -> Effect {
        if self.expired(elapsed) {
            return self.latest_condition(Failing::Deadline);
        }
        self.get_pod(Phase::Observe)
    }

    /// deploy.md § Losing the create race, step 3: deadline check, then observe the winner.
    fn race_top(&mut self, elapsed: Duration) -> Effect {
        if self.expired(elapsed) {
            return self.latest_condition(Failing::RaceDeadline);
        }
        self.get_pod(Phase::RaceRead)
    }

    /// deploy.md § Delete and waiting for disappearance: poll until the observed uid is gone.
    fn disappear_top(&mut self, elapsed: Duration, uid: String) -> Effect {
        if self.expired(elapsed) {
            return fail(DeployError::DisappearanceTimeout {
                pod: self.spec.pod_name.clone(),
                deadline: self.spec.deadline,
            });
        }
        self.get_pod(Phase::DisappearRead { uid })
    }

    /// Wait one poll interval, never past the deadline; with no time left, continue at once
    /// (the next step then fails on the deadline).
    fn wait(&mut self, elapsed: Duration, then: Phase) -> Effect {
        let max = self
            .spec
            .poll
            .min(self.spec.deadline.saturating_sub(elapsed));
        if max.is_zero() {
            return self.transition(then, elapsed, Event::Waited);
        }
        self.phase = then;
        Effect::Wait {
            max,
            pod: self.spec.pod_name.clone(),
            resource_version: self.last_resource_version.clone(),
        }
    }

    fn latest_condition(&mut self, failing: Failing) -> Effect {
        let name = self.spec.pod_name.clone();
        self.go(
            Phase::Condition(failing),
            Effect::ReadLatestCondition { name },
        )
    }

    /// Unwrap a pod read, remembering its resourceVersion for the next watch.
    fn read(
        &mut self,
        read: Result<Option<ObservedPod>, String>,
    ) -> Result<Option<ObservedPod>, Effect> {
        match read {
            Ok(pod) => {
                self.last_resource_version =
                    pod.as_ref().and_then(|p| p.marks.resource_version.clone());
                Ok(pod)
            }
            Err(detail) => Err(self.failed("read pod", detail)),
        }
    }

    fn failed(&self, operation: &str, detail: String) -> Effect {
        fail(DeployError::Failed {
            operation: operation.to_owned(),
            object: format!("pod {}", self.spec.pod_name),
            detail,
        })
    }

    fn read_secret_failed(&self, pod: &VerifiedPod, detail: String) -> Effect {
        fail(DeployError::Failed {
            operation: "read secret".to_owned(),
            object: pod.facts().env_from_secret.clone().unwrap_or_default(),
            detail,
        })
    }

    fn foreign(&self) -> Effect {
        fail(DeployError::ForeignPod {
            pod: self.spec.pod_name.clone(),
        })
    }

    fn namespace_missing(&self) -> Effect {
        fail(DeployError::NamespaceMissing {
            namespace: self.spec.namespace.clone(),
        })
    }

    fn settle_main(&mut self, elapsed: Duration, pod: VerifiedPod, exists: Option<bool>) -> Effect {
        match pod.settle(exists) {
            Ok(settled) => {
                let action = classify(Some(&settled), &self.spec.desired_intent);
                self.act(elapsed, action)
            }
            Err(pending) => self.go(
                Phase::SecretCheck(pending.pod),
                Effect::CheckSecret {
                    name: pending.secret,
                },
            ),
        }
    }

    /// deploy.md § Loop, step 3: act on the classification.
    fn act(&mut self, elapsed: Duration, action: Action) -> Effect {
        match action {
            Action::Create => self.go(Phase::CreatingSecret, Effect::CreateSecret),
            Action::NoOp {
                name,
                intent_matches,
            } => Effect::Finish(Ok(Deployed {
                pod: name,
                intent_matches,
            })),
            Action::Observe { .. } => self.wait(elapsed, Phase::PollWait),
            Action::Report { name, kind } => fail(DeployError::PullFailing {
                pod: name,
                image: self.spec.image.clone(),
                kind,
            }),
            Action::AwaitDisappearance { uid, .. } => self.disappear_top(elapsed, uid),
            // deploy.md § One create attempt per call: report instead of replacing this call's own
            // pod.
            Action::Delete(_) if self.created_this_call => {
                self.latest_condition(Failing::CreatedPodFailed)
            }
            Action::Delete(deletion) => {
                let uid = deletion.fence().uid.clone();
                self.go(Phase::Deleting { uid }, Effect::DeletePod(deletion))
            }
        }
    }

    /// The account the pod runs as.
    fn pod_account(&self) -> &str {
        self.spec
            .service_account
            .as_deref()
            .unwrap_or(DEFAULT_SERVICE_ACCOUNT)
    }

    fn missing_account_name(&self) -> String {
        self.missing_account
            .clone()
            .unwrap_or_else(|| self.pod_account().to_owned())
    }

    /// deploy.md § Namespace ensure, item 4: a pod running as `default` waits for the
    /// ServiceAccount controller and retries with the same Secret; a named account is the user's to
    /// create, so its absence is reported at once (E10) and the Secret dropped as for any refusal.
    fn account_refused(&mut self, account: String, detail: String) -> Effect {
        if self.pod_account() != DEFAULT_SERVICE_ACCOUNT {
            let namespace = &self.spec.namespace;
            let detail = format!(
                "{detail}; service account {account} does not exist in namespace {namespace}: \
                 create it with `kubectl create serviceaccount {account} -n {namespace}` or \
                 name another with --service-account"
            );
            return self.drop_own(AfterDrop::Refused(detail));
        }
        self.missing_account = Some(account.clone());
        self.go(
            Phase::AccountRead { after_wait: false },
            Effect::GetServiceAccount { name: account },
        )
    }

    /// Deadline check, then read the awaited account again.
    fn account_top(&mut self, elapsed: Duration) -> Effect {
        if self.expired(elapsed) {
            return self.account_deadline();
        }
        let name = self.missing_account_name();
        self.go(
            Phase::AccountRead { after_wait: true },
            Effect::GetServiceAccount { name },
        )
    }

    /// E1 at the deadline, naming the account that never appeared. Like every deadline it cleans
    /// up nothing: the Secret stays for the age-gated sweep.
    fn account_deadline(&self) -> Effect {
        fail(DeployError::ServiceAccountMissing {
            namespace: self.spec.namespace.clone(),
            pod: self.spec.pod_name.clone(),
            account: self.missing_account_name(),
            deadline: self.spec.deadline,
            secret: self.own_secret.clone().unwrap_or_default(),
        })
    }

    fn drop_own(&mut self, then: AfterDrop) -> Effect {
        let secret = self.own_secret.clone().unwrap_or_default();
        self.go(Phase::DropList(then), Effect::ListForDrop { secret })
    }

    fn after_drop(&mut self, elapsed: Duration, then: AfterDrop) -> Effect {
        match then {
            AfterDrop::Foreign => self.foreign(),
            AfterDrop::Race => self.race_top(elapsed),
            AfterDrop::Refused(detail) => {
                let name = self.own_secret.clone().unwrap_or_default();
                let secret = if self.own_secret_removed {
                    SecretFate::Removed(name)
                } else {
                    SecretFate::Left(name)
                };
                fail(DeployError::CreateFailed {
                    kind: ObjectKind::Pod,
                    name: self.spec.pod_name.clone(),
                    detail,
                    secret,
                })
            }
        }
    }

    fn settle_race(&mut self, elapsed: Duration, pod: VerifiedPod, exists: Option<bool>) -> Effect {
        match pod.settle(exists) {
            Ok(settled) => self.race_decide(elapsed, &settled),
            Err(pending) => self.go(
                Phase::RaceSecretCheck(pending.pod),
                Effect::CheckSecret {
                    name: pending.secret,
                },
            ),
        }
    }

    /// deploy.md § Losing the create race, step 3, in this order: started (even deletion-marked) is
    /// adopted; deletion-marked fails E6; terminated or broken fails E7; anything else — pull
    /// failures included — is observed to the deadline. There is no delete edge here.
    fn race_decide(&mut self, elapsed: Duration, settled: &SettledPod) -> Effect {
        let pod = settled.pod();
        match settled.startup() {
            StartupState::Started => Effect::Finish(Ok(Deployed {
                pod: pod.name().to_owned(),
                intent_matches: pod.intent_matches(&self.spec.desired_intent),
            })),
            _ if pod.deletion_marked() => fail(DeployError::WinnerDeleting {
                pod: pod.name().to_owned(),
            }),
            StartupState::Terminated | StartupState::NeverStartedProvablyBroken => {
                self.latest_condition(Failing::WinnerFailed)
            }
            StartupState::NeverStartedRecoverable | StartupState::NeverStartedPullFailing(_) => {
                self.wait(elapsed, Phase::RaceWait)
            }
        }
    }

    fn failing_error(&self, failing: Failing, condition: LatestCondition) -> DeployError {
        let pod = self.spec.pod_name.clone();
        let deadline = self.spec.deadline;
        match failing {
            Failing::Deadline => DeployError::DeadlineExceeded {
                pod,
                deadline,
                condition,
            },
            Failing::CreatedPodFailed => DeployError::CreatedPodFailed {
                namespace: self.spec.namespace.clone(),
                pod,
                condition,
            },
            Failing::RaceDeadline => DeployError::RaceDeadlineExceeded {
                pod,
                deadline,
                condition,
            },
            Failing::WinnerFailed => DeployError::WinnerFailed { pod, condition },
        }
    }
}

fn event_name(event: &Event) -> &'static str {
    match event {
        Event::Start => "Start",
        Event::NamespaceEnsured(_) => "NamespaceEnsured",
        Event::GcDone => "GcDone",
        Event::PodRead(_) => "PodRead",
        Event::SecretChecked(_) => "SecretChecked",
        Event::SecretCreated(_) => "SecretCreated",
        Event::PodCreated(_) => "PodCreated",
        Event::PodDeleted(_) => "PodDeleted",
        Event::Listed(_) => "Listed",
        Event::SecretDeleted(_) => "SecretDeleted",
        Event::ServiceAccountRead(_) => "ServiceAccountRead",
        Event::Waited => "Waited",
    }
}

fn phase_name(phase: &Phase) -> &'static str {
    match phase {
        Phase::Start => "Start",
        Phase::Namespace => "NamespaceEnsured",
        Phase::Gc => "GcDone",
        Phase::Observe
        | Phase::DisappearRead { .. }
        | Phase::RaceVerify
        | Phase::RaceRead
        | Phase::Condition(_) => "PodRead",
        Phase::SecretCheck(_) | Phase::RaceSecretCheck(_) => "SecretChecked",
        Phase::CreatingSecret => "SecretCreated",
        Phase::CreatingPod => "PodCreated",
        Phase::Deleting { .. } => "PodDeleted",
        Phase::DisappearWait { .. } | Phase::PollWait | Phase::RaceWait | Phase::AccountWait => {
            "Waited"
        }
        Phase::AccountRead { .. } => "ServiceAccountRead",
        Phase::DropList(_) => "Listed",
        Phase::DropDelete(_) => "SecretDeleted",
        Phase::Done(_) => "nothing",
    }
}

fn fail(error: DeployError) -> Effect {
    Effect::Finish(Err(error))
}

#[cfg(test)]
mod tests;
