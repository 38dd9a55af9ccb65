//! The deploy machine's main loop (deploy.md § Loop) and the wait for a deleted pod's
//! disappearance (§ Delete and waiting for disappearance): observe, classify, act.
//!
//! Pure. Every pod delete here carries the fence of the verified observation that authorised it;
//! after this call's own create a delete is reported instead (E2).

use std::time::Duration;

use super::error::{DeployError, Deployed};
use super::machine::DeployStep;
use super::machine::{DeployMachine, Failing, Phase, fail, phase_name, read_secret_failed};
use super::replace::Retiring;
use crate::action::{Action, classify};
use crate::answer::DeleteAnswer;
use crate::facts::ObservedPod;
use crate::failure::RequestFailure;
use crate::reference::own_secret_deletion;
use crate::request::{Answer, NamespaceCheck, NamespaceFailure, Request, SecretDrop, Step};
use crate::startup::Missing;
use crate::verify::{PodDeletion, SettledPod, VerifiedPod, verify_pod};
use crate::wait::{Disappearance, disappearance};

impl DeployMachine {
    pub(super) fn transition(&mut self, phase: Phase, now: Duration, event: Answer) -> DeployStep {
        match (phase, event) {
            (Phase::Done(result), _) => Step::Done(result),
            (Phase::Start, Answer::Start) if !self.spec.referenced_secrets.is_empty() => {
                let names = self.spec.referenced_secrets.clone();
                self.go(Phase::References, Request::CheckReferences { names })
            }
            (Phase::Start, Answer::Start) => self.preflight(),
            // deploy.md § Credentials from the cluster: a missing reference is refused before
            // anything is created.
            (Phase::References, Answer::ReferencesChecked(answer)) => match answer {
                Ok(found) => {
                    let missing = self
                        .spec
                        .referenced_secrets
                        .iter()
                        .zip(found.iter().copied().chain(std::iter::repeat(false)))
                        .find(|(_, found)| !found);
                    match missing {
                        Some((secret, _)) => fail(DeployError::ReferencedSecretMissing {
                            namespace: self.spec.namespace.clone(),
                            missing: Box::new(Missing {
                                name: secret.clone(),
                                ..Missing::default()
                            }),
                            pod: None,
                        }),
                        None => self.preflight(),
                    }
                }
                Err(failure) => fail(DeployError::Failed {
                    operation: "read secret".to_owned(),
                    object: self.spec.referenced_secrets.join(", "),
                    failure,
                }),
            },
            (Phase::Preflight, Answer::Preflighted { namespace, pod }) => match namespace {
                Err(NamespaceFailure::CreateForbidden) => self.namespace_missing(),
                Err(NamespaceFailure::Failed(failure)) => fail(DeployError::Namespace {
                    namespace: self.spec.namespace.clone(),
                    failure,
                }),
                // deploy.md § Loop, step 1, before the first observation is used.
                Ok(_) if self.expired(now) => self.latest_condition(Failing::Deadline),
                Ok(check) => {
                    let pod = pod.map_err(|failure| self.unchecked_namespace(check, failure));
                    self.transition(Phase::Observe, now, Answer::PodRead(pod))
                }
            },
            (Phase::PollWait, Answer::Waited) => self.loop_top(now),
            // Every read tells the replace rule what is under the name (its first read names
            // the pod a replace may delete; a later one may show that pod gone).
            (Phase::Observe, Answer::PodRead(read)) => match self.read(read) {
                Err(effect) => effect,
                Ok(None) => {
                    self.replace.observe(None);
                    self.stability.interrupted();
                    self.act(now, Action::Create)
                }
                Ok(Some(pod)) => {
                    self.replace.observe(pod.marks.uid.as_deref());
                    match verify_pod(&pod, &self.spec.owner) {
                        None => self.foreign(),
                        Some(verified) => self.settle_main(now, verified, None),
                    }
                }
            },
            (Phase::SecretCheck(pod), Answer::Exists(answer)) => match answer {
                Ok(exists) => self.settle_main(now, pod, Some(exists)),
                Err(failure) => read_secret_failed(&pod, failure),
            },
            (Phase::EnvCompare(settled), Answer::EnvCompared(answer)) => match answer {
                // A differing environment is a differing configuration: the replace rule then
                // decides as for another intent.
                Ok(keys) if keys.as_ref().is_none_or(|keys| !keys.is_empty()) => {
                    let action = Action::NoOp {
                        name: settled.pod().name().to_owned(),
                        intent_matches: false,
                    };
                    self.decide(now, &settled, action)
                }
                Ok(_) => {
                    let action = classify(Some(&settled), &self.spec.desired_intent);
                    self.decide(now, &settled, action)
                }
                Err(failure) => read_secret_failed(settled.pod(), failure),
            },
            (Phase::Deleting { uid }, Answer::Deleted(answer)) => match answer {
                Ok(DeleteAnswer::Accepted | DeleteAnswer::NotFound) => self.disappear_top(now, uid),
                // The object changed since the observation: discard the action and re-classify
                // what exists now; never retry with a fresher fence. Nothing was deleted, so
                // nothing is retired.
                Ok(DeleteAnswer::PreconditionFailed) => {
                    self.retiring = None;
                    self.wait(now, Phase::PollWait)
                }
                Err(failure) => self.failed("delete pod", failure),
            },
            (Phase::DisappearRead { uid }, Answer::PodRead(read)) => match self.read(read) {
                Err(effect) => effect,
                Ok(pod) => match disappearance(&uid, pod.as_ref()) {
                    Disappearance::Present => self.wait(now, Phase::DisappearWait { uid }),
                    // Gone, or a different object now holds the name: re-classify it.
                    Disappearance::Gone | Disappearance::Replaced => self.disappeared(now, &uid),
                },
            },
            (Phase::DisappearWait { uid }, Answer::Waited) => self.disappear_top(now, uid),
            (Phase::RetireList { secret }, Answer::Listed(listed)) => {
                // A failed listing proves nothing about references: the Secret stays for the
                // age-gated sweep (the driver warns).
                let deletion = listed.ok().and_then(|listing| {
                    own_secret_deletion(&secret, &listing.pods, &listing.secrets, &self.spec.owner)
                });
                match deletion {
                    Some(deletion) => self.go(
                        Phase::RetireDelete,
                        Request::DeleteSecret {
                            deletion,
                            warn_on_failure: true,
                        },
                    ),
                    None => self.loop_top(now),
                }
            }
            // Whatever the delete answered, the deploy goes on: a Secret left behind is litter
            // for GC, never a reason to fail (the driver warns on a failure).
            (Phase::RetireDelete, Answer::Deleted(_)) => self.loop_top(now),
            (phase, event) => self.transition_create(phase, now, event),
        }
    }

    fn preflight(&mut self) -> DeployStep {
        let effect = Request::Preflight {
            pod: self.spec.pod_name.clone(),
            gc: self.spec.preflight_gc,
        };
        self.go(Phase::Preflight, effect)
    }

    pub(super) fn go(&mut self, phase: Phase, request: Request) -> DeployStep {
        self.phase = phase;
        Step::Request(request)
    }

    pub(super) fn expired(&self, now: Duration) -> bool {
        self.deadline.expired(now)
    }

    pub(super) fn get_pod(&mut self, phase: Phase) -> DeployStep {
        let name = self.spec.pod_name.clone();
        self.go(
            phase,
            Request::GetPod {
                name,
                watch_stuck: true,
            },
        )
    }

    /// deploy.md § Loop, steps 1 and 2: deadline check, then observe.
    pub(super) fn loop_top(&mut self, now: Duration) -> DeployStep {
        if self.expired(now) {
            return self.latest_condition(Failing::Deadline);
        }
        self.get_pod(Phase::Observe)
    }

    /// deploy.md § Delete and waiting for disappearance: poll until the observed uid is gone.
    pub(super) fn disappear_top(&mut self, now: Duration, uid: String) -> DeployStep {
        if self.expired(now) {
            return fail(DeployError::DisappearanceTimeout {
                pod: self.spec.pod_name.clone(),
                deadline: self.deadline.limit(),
            });
        }
        self.get_pod(Phase::DisappearRead { uid })
    }

    /// The pod `uid` is gone (or another holds the name). When it is the pod this call's replace
    /// delete removed, its Secret goes too, before anything is created (deploy.md § Replacing a
    /// live agent, rule 6): list the agent's pods and Secrets, then delete it fenced by its uid
    /// unless a listed pod references it. At the deadline nothing is cleaned up (§ Latest
    /// condition, deadline, zero mutation). Then loop.
    fn disappeared(&mut self, now: Duration, uid: &str) -> DeployStep {
        let retiring = self.retiring.take_if(|retiring| retiring.uid == uid);
        match retiring {
            Some(Retiring { secret, .. }) if !self.expired(now) => self.go(
                Phase::RetireList { secret },
                Request::List {
                    secrets: true,
                    dropping: Some(SecretDrop::Replaced),
                },
            ),
            _ => self.loop_top(now),
        }
    }

    /// Wait one poll interval, never past the deadline; with no time left, continue at once
    /// (the next step then fails on the deadline).
    pub(super) fn wait(&mut self, now: Duration, then: Phase) -> DeployStep {
        self.wait_up_to(now, self.spec.poll, then)
    }

    /// deploy.md § Staying up: how much of the `--min-running` window is left for the started
    /// pod `uid` read at `now`; `None` once it has been started that long.
    pub(super) fn hold_started(&mut self, now: Duration, uid: &str) -> Option<Duration> {
        self.stability.started(uid, now, self.spec.min_running)
    }

    /// [`Self::wait`], at most `cap`.
    pub(super) fn wait_up_to(&mut self, now: Duration, cap: Duration, then: Phase) -> DeployStep {
        let max = self.deadline.wait_max(now).min(cap);
        if max.is_zero() {
            return self.transition(then, now, Answer::Waited);
        }
        self.phase = then;
        Step::Request(Request::Wait {
            max,
            pod: self.spec.pod_name.clone(),
            resource_version: self.watch.resource_version(),
        })
    }

    pub(super) fn latest_condition(&mut self, failing: Failing) -> DeployStep {
        let name = self.spec.pod_name.clone();
        self.go(
            Phase::Condition(failing),
            Request::GetPod {
                name,
                watch_stuck: true,
            },
        )
    }

    /// Unwrap a pod read, remembering its resourceVersion for the next watch and reporting it
    /// as progress.
    #[allow(
        clippy::result_large_err,
        reason = "the error is the next effect itself, returned at once by every caller"
    )]
    pub(super) fn read(
        &mut self,
        read: Result<Option<ObservedPod>, RequestFailure>,
    ) -> Result<Option<ObservedPod>, DeployStep> {
        match read {
            Ok(pod) => {
                self.watch.observe(pod.as_ref(), &self.spec.owner);
                Ok(pod)
            }
            Err(failure) => Err(self.failed("read pod", failure)),
        }
    }

    /// deploy.md § Namespace ensure, item 1: a forbidden namespace GET continues, so when the
    /// first request inside the namespace is refused too, the namespace may be missing (a
    /// RoleBinding grants nothing in a namespace that does not exist, so the Secret create that
    /// would have found the NotFound is never reached). The refusal carries E11's command.
    fn unchecked_namespace(
        &self,
        check: NamespaceCheck,
        failure: RequestFailure,
    ) -> RequestFailure {
        if check != NamespaceCheck::Unchecked || !failure.is_forbidden() {
            return failure;
        }
        let namespace = &self.spec.namespace;
        failure.with_hint(format_args!(
            "apiary may not read namespace {namespace} either, so it may not exist: if it does \
             not, ask a cluster administrator to run `kubectl create namespace {namespace}`; if \
             it does, grant the deployer role of rbac/apiary-deployer.yaml in it"
        ))
    }

    pub(super) fn failed(&self, operation: &str, failure: RequestFailure) -> DeployStep {
        fail(DeployError::Failed {
            operation: operation.to_owned(),
            object: format!("pod {}", self.spec.pod_name),
            failure,
        })
    }

    pub(super) fn foreign(&self) -> DeployStep {
        fail(DeployError::ForeignPod {
            pod: self.spec.pod_name.clone(),
        })
    }

    pub(super) fn namespace_missing(&self) -> DeployStep {
        fail(DeployError::NamespaceMissing {
            namespace: self.spec.namespace.clone(),
        })
    }

    pub(super) fn settle_main(
        &mut self,
        now: Duration,
        pod: VerifiedPod,
        exists: Option<bool>,
    ) -> DeployStep {
        match pod.settle(exists) {
            Ok(settled) => {
                let action = classify(Some(&settled), &self.spec.desired_intent);
                match self.env_to_compare(&action, &settled) {
                    Some(secret) => {
                        self.env_compared = true;
                        let compare = Request::CompareEnv {
                            secret,
                            log_keys: true,
                        };
                        self.go(Phase::EnvCompare(settled), compare)
                    }
                    None => self.decide(now, &settled, action),
                }
            }
            Err(pending) => self.go(
                Phase::SecretCheck(pending.pod),
                Request::SecretExists {
                    name: pending.secret,
                },
            ),
        }
    }

    /// deploy.md § Replacing a live agent: a replacing call compares the environment of the
    /// started pod it first observed, when its intent matches (the fingerprint holds the keys,
    /// not the values), once; the Secret to read then.
    fn env_to_compare(&self, action: &Action, settled: &SettledPod) -> Option<String> {
        let pod = settled.pod();
        let same_intent = matches!(
            action,
            Action::NoOp {
                intent_matches: true,
                ..
            }
        );
        if !self.spec.replace
            || self.env_compared
            || !same_intent
            || !self.replace.allows(pod.fence().uid())
        {
            return None;
        }
        pod.facts().env_from_secret.clone()
    }

    /// Amend the classification for a replacing call, hold a started pod for `--min-running`,
    /// then act.
    fn decide(&mut self, now: Duration, settled: &SettledPod, action: Action) -> DeployStep {
        let action = if self.spec.replace {
            let amended = self.replace.amend(action.clone(), settled);
            if self.retiring.is_none() {
                let replaced = matches!(action, Action::NoOp { .. });
                self.retiring = Retiring::of(&amended, replaced, settled);
            }
            // deploy.md § Replacing a live agent: before the running pod is deleted, the new
            // pod's objects are put in place and its create is checked by a dry run.
            if let (Action::NoOp { .. }, Action::Delete(deletion)) = (&action, &amended) {
                self.stability.interrupted();
                return self.check_replace(deletion.clone());
            }
            amended
        } else {
            action
        };
        // deploy.md § Replacing a live agent, rule 6: the own Secret of a pod this call deletes
        // or waits for goes once that pod is gone.
        if self.retiring.is_none() {
            self.retiring = Retiring::of(&action, false, settled);
        }
        if matches!(action, Action::NoOp { .. }) {
            self.kept_settings = settled.pod().recorded_settings().map(str::to_owned);
            let uid = settled.pod().fence().uid().to_owned();
            if let Some(left) = self.hold_started(now, &uid) {
                return self.wait_up_to(now, left, Phase::PollWait);
            }
        } else {
            self.stability.interrupted();
        }
        self.act(now, action)
    }

    /// deploy.md § Loop, step 3: act on the classification.
    pub(super) fn act(&mut self, now: Duration, action: Action) -> DeployStep {
        match action {
            Action::Create => self.create(),
            Action::NoOp {
                name,
                intent_matches,
            } => Step::Done(Ok(Deployed {
                pod: name,
                intent_matches,
                workspace: self.workspace.clone(),
                recorded_settings: self.kept_settings.take(),
            })),
            Action::Observe { .. } => self.wait(now, Phase::PollWait),
            Action::Report { name, kind } => fail(DeployError::PullFailing {
                pod: name,
                image: self.spec.image.clone(),
                kind,
            }),
            Action::ReportMissingSecret { name, missing } => {
                fail(DeployError::ReferencedSecretMissing {
                    namespace: self.spec.namespace.clone(),
                    missing: Box::new(missing),
                    pod: Some(name),
                })
            }
            Action::AwaitDisappearance { uid, .. } => self.disappear_top(now, uid),
            // deploy.md § One create attempt per call: report instead of replacing this call's own
            // pod.
            Action::Delete(_) if self.created_this_call => {
                self.latest_condition(Failing::CreatedPodFailed)
            }
            Action::Delete(deletion) => self.delete(deletion),
        }
    }

    /// deploy.md § Create, after § Egress control and § Persistent workspace: the agent's
    /// policy and claim first (once per call, when asked for), then this attempt's Secret.
    /// A fenced pod delete, with this call's grace override (deploy.md § Grace periods).
    pub(super) fn delete(&mut self, deletion: PodDeletion) -> DeployStep {
        let uid = deletion.fence().uid().to_owned();
        let deletion = deletion.with_grace(self.spec.delete_grace);
        self.go(
            Phase::Deleting { uid },
            Request::DeletePod {
                deletion,
                note: Some("deleting the pod"),
            },
        )
    }

    /// A replacing call's checks before it deletes the running pod `deletion` names: the
    /// agent's other objects in place (once per call), then a dry-run create of the new pod.
    fn check_replace(&mut self, deletion: PodDeletion) -> DeployStep {
        let workspace = self.spec.workspace_claim.is_some();
        if (self.spec.isolate || workspace) && !self.prepared {
            return self.go(
                Phase::ReplacePreparing { deletion },
                Request::Prepare {
                    policy: self.spec.isolate,
                    workspace,
                },
            );
        }
        self.go(Phase::ReplaceChecking { deletion }, Request::CheckPodCreate)
    }

    pub(super) fn create(&mut self) -> DeployStep {
        let workspace = self.spec.workspace_claim.is_some();
        if (self.spec.isolate || workspace) && !self.prepared {
            return self.go(
                Phase::Preparing,
                Request::Prepare {
                    policy: self.spec.isolate,
                    workspace,
                },
            );
        }
        self.go(Phase::CreatingSecret, Request::CreateSecret)
    }

    /// An event the current phase does not wait for: the driver is out of step with the
    /// machine, an internal inconsistency, never disguised as a cluster answer.
    pub(super) fn out_of_step(&self, phase: &Phase, event: &Answer) -> DeployStep {
        fail(DeployError::Internal {
            detail: format!(
                "the driver answered {} while the machine waited for {} (deploy of pod {})",
                event.name(),
                phase_name(phase),
                self.spec.pod_name
            ),
        })
    }
}
