//! The deploy operation (deploy.md § The deploy operation) as a sans-IO state machine.
//!
//! The machine is fed [`Event`]s — the answer to the previous effect, with a monotonic reading
//! `now` — and returns the next [`Effect`] to perform. A small driver executes effects against the
//! cluster. The machine performs no I/O, reads no clock and uses no randomness: the driver mints
//! the generation, builds the objects and reports back the Secret it created, which the machine
//! then holds in its phase until the pod create is settled. The deadline is anchored at the first
//! step and checked against each `now` (`crate::wait`).
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
//!
//! The phases are split by path: the main loop and disappearance wait here, the create path
//! (Secret, pod, ServiceAccount wait, dropping this attempt's Secret) in `create`, the lost race
//! and the failing reads in `race`.

mod create;
mod error;
mod io;
mod race;

use std::time::Duration;

pub use error::{DeployError, Deployed, ObjectKind, SecretFate};
pub use io::{
    DeleteAnswer, Effect, Event, Listing, NamespaceFailure, OwnSecret, PodCreateOutcome,
    SecretCreateFailure,
};

use crate::action::{Action, classify};
use crate::facts::ObservedPod;
use crate::failure::RequestFailure;
use crate::status::{Progress, ProgressLog};
use crate::verify::{VerifiedPod, verify_pod};
use crate::wait::{Deadline, Disappearance, disappearance};
use create::AfterDrop;
use race::Failing;

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
    /// Whether to run preflight GC (deploy.md § Sequence, step 4). Always on for a deploy; a
    /// test switches it off to reach classification row 4 directly.
    pub preflight_gc: bool,
}

/// The account a pod runs as when it names none, and the one the ServiceAccount controller
/// creates in every new namespace.
pub const DEFAULT_SERVICE_ACCOUNT: &str = "default";

/// What the machine waits for.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Phase {
    Start,
    Namespace,
    Gc,
    Observe,
    SecretCheck(VerifiedPod),
    CreatingSecret,
    CreatingPod { secret: OwnSecret },
    Deleting { uid: String },
    DisappearRead { uid: String },
    DisappearWait { uid: String },
    PollWait,
    RaceVerify { secret: OwnSecret },
    DropList { secret: OwnSecret, then: AfterDrop },
    DropDelete { secret: OwnSecret, then: AfterDrop },
    RaceRead,
    RaceSecretCheck(VerifiedPod),
    RaceWait,
    AccountRead { secret: OwnSecret, after_wait: bool },
    AccountWait { secret: OwnSecret },
    Condition(Failing),
    Done(Result<Deployed, DeployError>),
}

/// The deploy loop of one call. Feed it [`Event::Start`] first, then the answer to each effect.
#[derive(Clone, Debug)]
pub struct DeployMachine {
    spec: DeploySpec,
    phase: Phase,
    deadline: Deadline,
    created_this_call: bool,
    last_resource_version: Option<String>,
    /// The account a refused pod create waits for (deploy.md § Namespace ensure, item 4).
    missing_account: Option<String>,
    /// Whether the one immediate create retry after an account refusal has been spent: every
    /// later retry follows a wait, so a lagging admission cache cannot make the loop hot-spin.
    account_retried_at_once: bool,
    progress: ProgressLog,
}

impl DeployMachine {
    /// A machine for one deploy call.
    pub fn new(spec: DeploySpec) -> DeployMachine {
        DeployMachine {
            deadline: Deadline::new(spec.deadline, spec.poll),
            spec,
            phase: Phase::Start,
            created_this_call: false,
            last_resource_version: None,
            missing_account: None,
            account_retried_at_once: false,
            progress: ProgressLog::default(),
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

    /// The change of observed state since the last call, if any (deploy.md § Loop: progress is
    /// one line per change). Poll it after each step, as quinn-proto's events are polled.
    pub fn poll_progress(&mut self) -> Option<Progress> {
        self.progress.poll()
    }

    /// Feed the answer to the previous effect, with a monotonic reading `now` (the deadline is
    /// anchored at the first step), and get the next effect. Once finished, every further step
    /// repeats the `Finish`.
    pub fn step(&mut self, now: Duration, event: Event) -> Effect {
        self.deadline.anchor(now);
        let phase = std::mem::replace(&mut self.phase, Phase::Start);
        let effect = self.transition(phase, now, event);
        if let Effect::Finish(result) = &effect {
            self.phase = Phase::Done(result.clone());
        }
        effect
    }

    fn transition(&mut self, phase: Phase, now: Duration, event: Event) -> Effect {
        match (phase, event) {
            (Phase::Done(result), _) => Effect::Finish(result),
            (Phase::Start, Event::Start) => self.go(Phase::Namespace, Effect::EnsureNamespace),
            (Phase::Namespace, Event::NamespaceEnsured(result)) => match result {
                Ok(()) if self.spec.preflight_gc => self.go(Phase::Gc, Effect::RunGc),
                Ok(()) => self.loop_top(now),
                Err(NamespaceFailure::CreateForbidden) => self.namespace_missing(),
                Err(NamespaceFailure::Failed(failure)) => fail(DeployError::Namespace {
                    namespace: self.spec.namespace.clone(),
                    failure,
                }),
            },
            (Phase::Gc, Event::GcDone) | (Phase::PollWait, Event::Waited) => self.loop_top(now),
            (Phase::Observe, Event::PodRead(read)) => match self.read(read) {
                Err(effect) => effect,
                Ok(None) => self.act(now, Action::Create),
                Ok(Some(pod)) => match verify_pod(&pod, &self.spec.agent_id) {
                    None => self.foreign(),
                    Some(verified) => self.settle_main(now, verified, None),
                },
            },
            (Phase::SecretCheck(pod), Event::SecretChecked(answer)) => match answer {
                Ok(exists) => self.settle_main(now, pod, Some(exists)),
                Err(failure) => read_secret_failed(&pod, failure),
            },
            (Phase::Deleting { uid }, Event::PodDeleted(answer)) => match answer {
                Ok(DeleteAnswer::Accepted | DeleteAnswer::NotFound) => self.disappear_top(now, uid),
                // The object changed since the observation: discard the action and re-classify
                // what exists now; never retry with a fresher fence.
                Ok(DeleteAnswer::PreconditionFailed) => self.wait(now, Phase::PollWait),
                Err(failure) => self.failed("delete pod", failure),
            },
            (Phase::DisappearRead { uid }, Event::PodRead(read)) => match self.read(read) {
                Err(effect) => effect,
                Ok(pod) => match disappearance(&uid, pod.as_ref()) {
                    Disappearance::Present => self.wait(now, Phase::DisappearWait { uid }),
                    // Gone, or a different object now holds the name: re-classify it.
                    Disappearance::Gone | Disappearance::Replaced => self.loop_top(now),
                },
            },
            (Phase::DisappearWait { uid }, Event::Waited) => self.disappear_top(now, uid),
            (phase, event) => self.transition_create(phase, now, event),
        }
    }

    fn go(&mut self, phase: Phase, effect: Effect) -> Effect {
        self.phase = phase;
        effect
    }

    fn expired(&self, now: Duration) -> bool {
        self.deadline.expired(now)
    }

    fn get_pod(&mut self, phase: Phase) -> Effect {
        let name = self.spec.pod_name.clone();
        self.go(phase, Effect::GetPod { name })
    }

    /// deploy.md § Loop, steps 1 and 2: deadline check, then observe.
    fn loop_top(&mut self, now: Duration) -> Effect {
        if self.expired(now) {
            return self.latest_condition(Failing::Deadline);
        }
        self.get_pod(Phase::Observe)
    }

    /// deploy.md § Delete and waiting for disappearance: poll until the observed uid is gone.
    fn disappear_top(&mut self, now: Duration, uid: String) -> Effect {
        if self.expired(now) {
            return fail(DeployError::DisappearanceTimeout {
                pod: self.spec.pod_name.clone(),
                deadline: self.deadline.limit(),
            });
        }
        self.get_pod(Phase::DisappearRead { uid })
    }

    /// Wait one poll interval, never past the deadline; with no time left, continue at once
    /// (the next step then fails on the deadline).
    fn wait(&mut self, now: Duration, then: Phase) -> Effect {
        let max = self.deadline.wait_max(now);
        if max.is_zero() {
            return self.transition(then, now, Event::Waited);
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

    /// Unwrap a pod read, remembering its resourceVersion for the next watch and reporting it
    /// as progress.
    fn read(
        &mut self,
        read: Result<Option<ObservedPod>, RequestFailure>,
    ) -> Result<Option<ObservedPod>, Effect> {
        match read {
            Ok(pod) => {
                self.progress.observe(pod.as_ref(), &self.spec.agent_id);
                self.last_resource_version =
                    pod.as_ref().and_then(|p| p.marks.resource_version.clone());
                Ok(pod)
            }
            Err(failure) => Err(self.failed("read pod", failure)),
        }
    }

    fn failed(&self, operation: &str, failure: RequestFailure) -> Effect {
        fail(DeployError::Failed {
            operation: operation.to_owned(),
            object: format!("pod {}", self.spec.pod_name),
            failure,
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

    fn settle_main(&mut self, now: Duration, pod: VerifiedPod, exists: Option<bool>) -> Effect {
        match pod.settle(exists) {
            Ok(settled) => {
                let action = classify(Some(&settled), &self.spec.desired_intent);
                self.act(now, action)
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
    fn act(&mut self, now: Duration, action: Action) -> Effect {
        match action {
            Action::Create => self.go(Phase::CreatingSecret, Effect::CreateSecret),
            Action::NoOp {
                name,
                intent_matches,
            } => Effect::Finish(Ok(Deployed {
                pod: name,
                intent_matches,
            })),
            Action::Observe { .. } => self.wait(now, Phase::PollWait),
            Action::Report { name, kind } => fail(DeployError::PullFailing {
                pod: name,
                image: self.spec.image.clone(),
                kind,
            }),
            Action::AwaitDisappearance { uid, .. } => self.disappear_top(now, uid),
            // deploy.md § One create attempt per call: report instead of replacing this call's own
            // pod.
            Action::Delete(_) if self.created_this_call => {
                self.latest_condition(Failing::CreatedPodFailed)
            }
            Action::Delete(deletion) => {
                let uid = deletion.fence().uid().to_owned();
                self.go(Phase::Deleting { uid }, Effect::DeletePod(deletion))
            }
        }
    }

    /// An event the current phase does not wait for: the driver is out of step with the
    /// machine, an internal inconsistency, never disguised as a cluster answer.
    fn out_of_step(&self, phase: &Phase, event: &Event) -> Effect {
        fail(DeployError::Internal {
            detail: format!(
                "the driver answered {} while the machine waited for {} (deploy of pod {})",
                io::event_name(event),
                phase_name(phase),
                self.spec.pod_name
            ),
        })
    }
}

fn read_secret_failed(pod: &VerifiedPod, failure: RequestFailure) -> Effect {
    fail(DeployError::Failed {
        operation: "read secret".to_owned(),
        object: pod.facts().env_from_secret.clone().unwrap_or_default(),
        failure,
    })
}

fn phase_name(phase: &Phase) -> &'static str {
    match phase {
        Phase::Start => "Start",
        Phase::Namespace => "NamespaceEnsured",
        Phase::Gc => "GcDone",
        Phase::Observe
        | Phase::DisappearRead { .. }
        | Phase::RaceVerify { .. }
        | Phase::RaceRead
        | Phase::Condition(_) => "PodRead",
        Phase::SecretCheck(_) | Phase::RaceSecretCheck(_) => "SecretChecked",
        Phase::CreatingSecret => "SecretCreated",
        Phase::CreatingPod { .. } => "PodCreated",
        Phase::Deleting { .. } => "PodDeleted",
        Phase::DisappearWait { .. }
        | Phase::PollWait
        | Phase::RaceWait
        | Phase::AccountWait { .. } => "Waited",
        Phase::AccountRead { .. } => "ServiceAccountRead",
        Phase::DropList { .. } => "Listed",
        Phase::DropDelete { .. } => "SecretDeleted",
        Phase::Done(_) => "nothing",
    }
}

fn fail(error: DeployError) -> Effect {
    Effect::Finish(Err(error))
}

#[cfg(test)]
mod tests;
