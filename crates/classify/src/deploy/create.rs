//! The create path of the deploy machine (deploy.md § Create, § Namespace ensure item 4, § Losing
//! the create race step 2): this attempt's Secret, the pod create and its answers, the wait for a
//! missing `default` ServiceAccount, and dropping this attempt's own Secret again.
//!
//! Pure, like the rest of the machine. This attempt's Secret lives in the phase from its create
//! until the pod create is settled; no phase after that can name it.

use std::time::Duration;

use super::error::{DeployError, ObjectKind, SecretFate};
use super::machine::DeployStep;
use super::machine::{AfterDrop, DeployMachine, Phase, fail};
use super::spec::DEFAULT_SERVICE_ACCOUNT;
use crate::answer::DeleteAnswer;
use crate::failure::RequestFailure;
use crate::policy::PolicyFailure;
use crate::reference::own_secret_deletion;
use crate::request::{Answer, OwnSecret, PodCreateOutcome, Prepared, Request, SecretDrop};
use crate::verify::{PodDeletion, verify_pod};
use crate::workspace::ClaimFailure;

impl DeployMachine {
    /// The answer to [`Request::Prepare`]: the policy's failure first (E15), then the claim's
    /// (E16); a NotFound naming the namespace means it is missing (E11). Any other NotFound (an
    /// apiserver that serves neither API, like the simulator) is E15 or E16.
    fn prepared(&mut self, prepared: Prepared) -> DeployStep {
        match self.prepare_outcome(prepared) {
            Ok(()) => self.create(),
            Err(failed) => failed,
        }
    }

    /// [`Request::Prepare`]'s answer for a replacing call (deploy.md § Replacing a live agent):
    /// in place, the new pod's create is checked next; a failure ends the deploy with the
    /// running pod kept.
    fn replace_prepared(&mut self, deletion: PodDeletion, prepared: Prepared) -> DeployStep {
        match self.prepare_outcome(prepared) {
            Ok(()) => self.go(Phase::ReplaceChecking { deletion }, Request::CheckPodCreate),
            Err(failed) => failed,
        }
    }

    /// The dry run's answer: admitted, the replace delete goes ahead; refused, or not known,
    /// the deploy fails and the running pod is kept (never less than the user had).
    fn replace_checked(
        &mut self,
        deletion: PodDeletion,
        checked: Result<(), RequestFailure>,
    ) -> DeployStep {
        match checked {
            Ok(()) => self.delete(deletion),
            Err(failure) => fail(DeployError::ReplaceRefused {
                namespace: self.spec.namespace.clone(),
                pod: deletion.name().to_owned(),
                failure,
            }),
        }
    }

    /// The outcome of [`Request::Prepare`]: `Ok` once both objects are in place, else the step
    /// that ends the deploy.
    fn prepare_outcome(&mut self, prepared: Prepared) -> Result<(), DeployStep> {
        let namespace_missing = |failure: &RequestFailure| {
            failure.reason() == Some("NotFound")
                && failure
                    .server_message()
                    .is_some_and(|m| m.starts_with("namespaces \""))
        };
        match prepared.policy {
            Err(PolicyFailure::Failed(failure)) if namespace_missing(&failure) => {
                return Err(self.namespace_missing());
            }
            Err(failure) => {
                return Err(fail(DeployError::Policy {
                    namespace: self.spec.namespace.clone(),
                    name: self.spec.pod_name.clone(),
                    failure,
                }));
            }
            Ok(()) => {}
        }
        match prepared.workspace {
            Err(ClaimFailure::Failed(failure)) if namespace_missing(&failure) => {
                Err(self.namespace_missing())
            }
            Err(failure) => Err(fail(DeployError::Workspace {
                namespace: self.spec.namespace.clone(),
                claim: self.spec.workspace_claim.clone().unwrap_or_default(),
                failure,
            })),
            Ok(report) => {
                self.prepared = true;
                self.workspace = report;
                Ok(())
            }
        }
    }

    pub(super) fn transition_create(
        &mut self,
        phase: Phase,
        now: Duration,
        event: Answer,
    ) -> DeployStep {
        match (phase, event) {
            (Phase::Preparing, Answer::Prepared(prepared)) => self.prepared(prepared),
            (Phase::ReplacePreparing { deletion }, Answer::Prepared(prepared)) => {
                self.replace_prepared(deletion, prepared)
            }
            (Phase::ReplaceChecking { deletion }, Answer::PodCreateChecked(checked)) => {
                self.replace_checked(deletion, checked)
            }
            (Phase::CreatingSecret, Answer::SecretCreated(created)) => match created {
                Ok(secret) => self.go(
                    Phase::CreatingPod {
                        secret: secret.clone(),
                    },
                    Request::CreatePod { secret },
                ),
                // A NotFound on the Secret create means the namespace is missing (E11).
                Err(failure) if failure.failure.reason() == Some("NotFound") => {
                    self.namespace_missing()
                }
                Err(failure) => fail(DeployError::CreateFailed {
                    kind: ObjectKind::Secret,
                    name: failure.name,
                    failure: failure.failure,
                    secret: SecretFate::NotCreated,
                }),
            },
            (Phase::CreatingPod { secret }, Answer::PodCreated(outcome)) => match outcome {
                PodCreateOutcome::Created => {
                    self.created_this_call = true;
                    self.watch.forget_version();
                    // A just-created pod cannot have started; re-observing at once would
                    // hot-spin (deploy.md § Create).
                    self.wait(now, Phase::PollWait)
                }
                PodCreateOutcome::AlreadyExists => self.get_pod(Phase::RaceVerify { secret }),
                PodCreateOutcome::Refused(failure) => {
                    self.drop_own(secret, AfterDrop::Refused(failure))
                }
                PodCreateOutcome::ServiceAccountMissing { account, failure } => {
                    self.account_refused(secret, account, failure)
                }
                // The create may have landed: deleting the Secret could strand that pod.
                PodCreateOutcome::TransportFailed(failure) => fail(DeployError::CreateFailed {
                    kind: ObjectKind::Pod,
                    name: self.spec.pod_name.clone(),
                    failure,
                    secret: SecretFate::Left(secret.name),
                }),
            },
            (Phase::RaceVerify { secret }, Answer::PodRead(read)) => match self.read(read) {
                Err(effect) => effect,
                Ok(Some(pod)) if verify_pod(&pod, &self.spec.owner).is_none() => {
                    self.drop_own(secret, AfterDrop::Foreign)
                }
                Ok(_) => self.drop_own(secret, AfterDrop::Race),
            },
            (Phase::DropList { secret, then }, Answer::Listed(listed)) => {
                let deletion = listed.ok().and_then(|listing| {
                    own_secret_deletion(
                        &secret.name,
                        &listing.pods,
                        &listing.secrets,
                        &self.spec.owner,
                    )
                });
                match deletion {
                    Some(deletion) => self.go(
                        Phase::DropDelete { secret, then },
                        Request::DeleteSecret {
                            deletion,
                            warn_on_failure: true,
                        },
                    ),
                    None => self.after_drop(now, secret, false, then),
                }
            }
            (Phase::DropDelete { secret, then }, Answer::Deleted(answer)) => {
                let removed = matches!(answer, Ok(DeleteAnswer::Accepted | DeleteAnswer::NotFound));
                self.after_drop(now, secret, removed, then)
            }
            (Phase::AccountRead { secret, after_wait }, Answer::Exists(answer)) => {
                match answer {
                    _ if self.expired(now) => self.account_deadline(&secret),
                    // Retry with the same Secret: no pod references it yet, and a fresh one
                    // would only add litter (deploy.md § Namespace ensure, item 4).
                    Ok(true) if after_wait || !self.account_retried_at_once => {
                        self.account_retried_at_once = true;
                        self.go(
                            Phase::CreatingPod {
                                secret: secret.clone(),
                            },
                            Request::CreatePod { secret },
                        )
                    }
                    Ok(_) => self.wait(now, Phase::AccountWait { secret }),
                    Err(failure) => fail(DeployError::Failed {
                        operation: "read service account".to_owned(),
                        object: self.missing_account_name(),
                        failure,
                    }),
                }
            }
            (Phase::AccountWait { secret }, Answer::Waited) => self.account_top(now, secret),
            (phase, event) => self.transition_race(phase, now, event),
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
    fn account_refused(
        &mut self,
        secret: OwnSecret,
        account: String,
        failure: RequestFailure,
    ) -> DeployStep {
        if self.pod_account() != DEFAULT_SERVICE_ACCOUNT {
            let namespace = &self.spec.namespace;
            let failure = failure.with_hint(format!(
                "service account {account} does not exist in namespace {namespace}: create it \
                 with `kubectl create serviceaccount {account} -n {namespace}` or name another \
                 with --service-account"
            ));
            return self.drop_own(secret, AfterDrop::Refused(failure));
        }
        self.missing_account = Some(account.clone());
        self.go(
            Phase::AccountRead {
                secret,
                after_wait: false,
            },
            Request::ServiceAccountExists { name: account },
        )
    }

    /// Deadline check, then read the awaited account again.
    fn account_top(&mut self, now: Duration, secret: OwnSecret) -> DeployStep {
        if self.expired(now) {
            return self.account_deadline(&secret);
        }
        let name = self.missing_account_name();
        self.go(
            Phase::AccountRead {
                secret,
                after_wait: true,
            },
            Request::ServiceAccountExists { name },
        )
    }

    /// E1 at the deadline, naming the account that never appeared. Like every deadline it cleans
    /// up nothing: the Secret stays for the age-gated sweep.
    fn account_deadline(&self, secret: &OwnSecret) -> DeployStep {
        fail(DeployError::ServiceAccountMissing {
            namespace: self.spec.namespace.clone(),
            pod: self.spec.pod_name.clone(),
            account: self.missing_account_name(),
            deadline: self.deadline.limit(),
            secret: secret.name.clone(),
        })
    }

    fn drop_own(&mut self, secret: OwnSecret, then: AfterDrop) -> DeployStep {
        let list = Request::List {
            secrets: true,
            dropping: Some(SecretDrop::Own(secret.name.clone())),
        };
        self.go(Phase::DropList { secret, then }, list)
    }

    fn after_drop(
        &mut self,
        now: Duration,
        secret: OwnSecret,
        removed: bool,
        then: AfterDrop,
    ) -> DeployStep {
        match then {
            AfterDrop::Foreign => self.foreign(),
            AfterDrop::Race => self.race_top(now),
            AfterDrop::Refused(failure) => fail(DeployError::CreateFailed {
                kind: ObjectKind::Pod,
                name: self.spec.pod_name.clone(),
                failure,
                secret: if removed {
                    SecretFate::Removed(secret.name)
                } else {
                    SecretFate::Left(secret.name)
                },
            }),
        }
    }
}
