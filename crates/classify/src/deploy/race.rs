//! The lost-race path of the deploy machine (deploy.md § Losing the create race) and the failing
//! reads that complete an error with the latest condition (§ Latest condition, deadline, zero
//! mutation).
//!
//! Pure. This path has no pod-delete edge: a winner is adopted, observed to the deadline, or
//! reported, never replaced.

use std::time::Duration;

use super::error::{DeployError, Deployed};
use super::machine::DeployStep;
use super::machine::{DeployMachine, Failing, Phase, fail, read_secret_failed};
use crate::action::missing_config;
use crate::condition::LatestCondition;
use crate::request::{Answer, Request, Step};
use crate::startup::StartupState;
use crate::verify::{SettledPod, VerifiedPod, verify_pod};

impl DeployMachine {
    pub(super) fn transition_race(
        &mut self,
        phase: Phase,
        now: Duration,
        event: Answer,
    ) -> DeployStep {
        match (phase, event) {
            (Phase::RaceRead, Answer::PodRead(read)) => match self.read(read) {
                Err(effect) => effect,
                Ok(None) => {
                    self.stability.interrupted();
                    self.wait(now, Phase::RaceWait)
                }
                Ok(Some(pod)) => match verify_pod(&pod, &self.spec.owner) {
                    None => self.foreign(),
                    Some(verified) => self.settle_race(now, verified, None),
                },
            },
            (Phase::RaceSecretCheck(pod), Answer::Exists(answer)) => match answer {
                Ok(exists) => self.settle_race(now, pod, Some(exists)),
                Err(failure) => read_secret_failed(&pod, failure),
            },
            (Phase::RaceWait, Answer::Waited) => self.race_top(now),
            (Phase::Condition(failing), Answer::PodRead(read)) => {
                let condition = match read {
                    Ok(pod) => {
                        self.watch.observe(pod.as_ref(), &self.spec.owner);
                        LatestCondition::from_read(pod.as_ref().map(|p| &p.facts))
                    }
                    Err(failure) => LatestCondition::Unreadable(failure.to_string()),
                };
                fail(self.failing_error(failing, condition))
            }
            (phase, event) => self.out_of_step(&phase, &event),
        }
    }

    /// deploy.md § Losing the create race, step 3: deadline check, then observe the winner.
    pub(super) fn race_top(&mut self, now: Duration) -> DeployStep {
        if self.expired(now) {
            return self.latest_condition(Failing::RaceDeadline);
        }
        self.get_pod(Phase::RaceRead)
    }

    fn settle_race(&mut self, now: Duration, pod: VerifiedPod, exists: Option<bool>) -> DeployStep {
        match pod.settle(exists) {
            Ok(settled) => self.race_decide(now, &settled),
            Err(pending) => self.go(
                Phase::RaceSecretCheck(pending.pod),
                Request::SecretExists {
                    name: pending.secret,
                },
            ),
        }
    }

    /// deploy.md § Losing the create race, step 3, in this order: started (even deletion-marked) is
    /// adopted; deletion-marked fails E6; terminated or broken fails E7; anything else — pull
    /// failures included — is observed to the deadline. There is no delete edge here.
    fn race_decide(&mut self, now: Duration, settled: &SettledPod) -> DeployStep {
        let pod = settled.pod();
        match settled.startup() {
            // deploy.md § Staying up: a winner, too, counts once started for the window.
            StartupState::Started => match self.hold_started(now, pod.fence().uid()) {
                Some(left) => self.wait_up_to(now, left, Phase::RaceWait),
                None => Step::Done(Ok(Deployed {
                    pod: pod.name().to_owned(),
                    intent_matches: pod.intent_matches(&self.spec.desired_intent),
                    workspace: self.workspace.clone(),
                    recorded_settings: pod.recorded_settings().map(str::to_owned),
                })),
            },
            _ if pod.deletion_marked() => fail(DeployError::WinnerDeleting {
                pod: pod.name().to_owned(),
            }),
            StartupState::Terminated | StartupState::NeverStartedProvablyBroken => {
                self.latest_condition(Failing::WinnerFailed)
            }
            StartupState::NeverStartedMissingSecret => fail(DeployError::ReferencedSecretMissing {
                namespace: self.spec.namespace.clone(),
                missing: Box::new(missing_config(pod.facts()).unwrap_or_default()),
                pod: Some(pod.name().to_owned()),
            }),
            StartupState::NeverStartedRecoverable | StartupState::NeverStartedPullFailing(_) => {
                self.stability.interrupted();
                self.wait(now, Phase::RaceWait)
            }
        }
    }

    fn failing_error(&self, failing: Failing, condition: LatestCondition) -> DeployError {
        let pod = self.spec.pod_name.clone();
        let deadline = self.deadline.limit();
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
