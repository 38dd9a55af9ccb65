//! The `status` operation (deploy.md § status) as a sans-IO machine: read the pod, settle a
//! pending Secret check, check the referenced Secret, and map — with one rule for intent
//! matching, the verified pod's own (`VerifiedPod::intent_matches`), as deploy uses — then, for
//! a verified pod with an expiry, read the server clock and count the time left
//! (deploy.md § Expiry).
//!
//! Pure and read-only: the only effects are quorum reads. A foreign pod reports nothing of
//! itself, so no Secret of it is read and no expiry of it shown.

use super::mapping::{PodStatus, StatusState, pod_status};
use crate::binding::Owner;
use crate::expiry::{expiry_of, seconds_left};
use crate::failure::RequestFailure;
use crate::request::{Answer, Request, Step};
use crate::settings::{SettingsDiff, differing_settings};
use crate::verify::{PodView, view_pod};
use crate::workspace::{ClaimDifference, ClaimShape, claim_differences};
use std::time::Duration;

/// What one status call reports on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusSpec {
    /// The deterministic pod name.
    pub pod_name: String,
    /// The binding and full agent id verification compares against.
    pub owner: Owner,
    /// The configured (normalized) image, when a configuration was given; otherwise the pod's own.
    pub image: Option<String>,
    /// The configuration's create-intent fingerprint, when one was given.
    pub desired_intent: Option<String>,
    /// Whether a configuration was given, so the environment of the pod's own Secret is
    /// compared with it (deploy.md § status).
    pub compare_env: bool,
    /// The configuration's intent settings (deploy.md § Naming what differs), when one was
    /// given: they name the settings of a differing intent.
    pub desired_settings: Option<String>,
    /// The workspace claim the configuration asks for (`--workspace-size`), compared with the
    /// one found (deploy.md § Persistent workspace); `None` without a configuration or a claim.
    pub desired_claim: Option<ClaimShape>,
}

/// The Secret a verified pod references, and whether a quorum GET found it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecretStatus {
    /// The Secret name.
    pub name: String,
    /// Whether it exists.
    pub exists: bool,
}

/// The expiry of a verified pod that carries one (deploy.md § Expiry): the instant its
/// annotation records and the time left on the apiserver's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatusExpiry {
    /// The recorded instant (apiserver clock, Unix seconds).
    pub expires_at: i64,
    /// Seconds left at the listing's `Date` (zero or negative once expired); `None` when the
    /// listing carried no usable `Date`.
    pub seconds_left: Option<i64>,
}

/// What `status` reports (deploy.md § status).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusReport {
    /// The pod name.
    pub pod: String,
    /// The state.
    pub state: StatusState,
    /// The condition text, when any.
    pub condition: Option<String>,
    /// The referenced Secret of a verified pod, when any.
    pub secret: Option<SecretStatus>,
    /// Whether the recorded intent equals the given configuration's; `None` without a
    /// configuration or a verified pod.
    pub intent_matches: Option<bool>,
    /// With a configuration and the pod's own Secret present: the keys whose values differ
    /// between the Secret and the configuration's environment (empty when none; the shell alone
    /// reads values); `None` when not compared. Keys only, never a value.
    pub env_differs: Option<Vec<String>>,
    /// The claim under the agent's workspace name, when one exists (deploy.md § Persistent
    /// workspace).
    pub workspace: Option<crate::workspace::ClaimStatus>,
    /// When the intent differs: the settings that differ (deploy.md § Naming what differs).
    pub intent_differs: Option<SettingsDiff>,
    /// With a configuration asking for a claim and an own claim found: how the claim differs
    /// from what was asked (reported, never acted on: claims are never resized).
    pub workspace_differs: Option<Vec<ClaimDifference>>,
    /// The expiry of a verified pod whose annotation records one and whose clock read was
    /// answered; `None` otherwise (absent and foreign pods show none).
    pub expiry: Option<StatusExpiry>,
}

/// What one step of the status machine returns.
pub type StatusStep = Step<Result<StatusReport, RequestFailure>>;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum Phase {
    #[default]
    Start,
    Read,
    /// Settling a pending view: the pod and the Secret asked about.
    Settle(PodView, String),
    /// Checking the referenced Secret of a settled view.
    Check(PodView, String),
    /// Comparing the environment of the pod's own Secret with the configuration's.
    ComparingEnv(Box<StatusReport>),
    /// Reading the workspace claim.
    ReadingWorkspace(Box<StatusReport>),
    /// Reading the server clock for the time left until the recorded instant.
    ReadingClock(Box<StatusReport>, i64),
    Done(Result<StatusReport, RequestFailure>),
}

/// One status call. Feed it [`Answer::Start`] first, then the answer to each effect.
#[derive(Clone, Debug)]
pub struct StatusMachine {
    spec: StatusSpec,
    phase: Phase,
    /// The image named in pull-failure text: the configuration's, else the pod's own.
    image: Option<String>,
    /// The expiry instant the read pod records, when it is verified and has a well-formed one.
    expires_at: Option<i64>,
}

impl StatusMachine {
    /// A machine for one status call.
    pub fn new(spec: StatusSpec) -> StatusMachine {
        StatusMachine {
            spec,
            phase: Phase::Start,
            image: None,
            expires_at: None,
        }
    }

    fn transition(&mut self, phase: Phase, _now: Duration, event: Answer) -> StatusStep {
        match (phase, event) {
            (Phase::Done(result), _) => Step::Done(result),
            (Phase::Start, Answer::Start) => {
                self.phase = Phase::Read;
                Step::Request(Request::GetPod {
                    name: self.spec.pod_name.clone(),
                    watch_stuck: false,
                })
            }
            (Phase::Read, Answer::PodRead(read)) => match read {
                Ok(pod) => {
                    let image = self
                        .spec
                        .image
                        .clone()
                        .or_else(|| pod.as_ref().and_then(|p| p.facts.image.clone()));
                    let view = view_pod(pod.as_ref(), &self.spec.owner);
                    self.image = image;
                    // Only a verified pod's expiry is shown: nothing of a foreign pod is.
                    self.expires_at = match view {
                        PodView::Pending(_) | PodView::Settled(_) => {
                            pod.as_ref().and_then(|p| expiry_of(&p.marks))
                        }
                        PodView::Absent | PodView::Foreign => None,
                    };
                    match view {
                        PodView::Pending(pending) => {
                            let name = pending.secret.clone();
                            self.phase = Phase::Settle(PodView::Pending(pending), name.clone());
                            Step::Request(Request::SecretExists { name })
                        }
                        view => self.check(view),
                    }
                }
                Err(failure) => Step::Done(Err(failure)),
            },
            (Phase::Settle(PodView::Pending(pending), name), Answer::Exists(answer)) => {
                match answer {
                    Ok(exists) => {
                        // A check of a referenced Secret (the kubelet named it) settles the state;
                        // the `secret` line is still the pod's own, read next.
                        let own = pending.pod.facts().env_from_secret.as_deref() == Some(&name);
                        let view = match pending.pod.settle(Some(exists)) {
                            Ok(settled) => PodView::Settled(settled),
                            Err(pending) => PodView::Pending(pending),
                        };
                        if own {
                            self.finish(&view, Some(SecretStatus { name, exists }))
                        } else {
                            self.check(view)
                        }
                    }
                    Err(failure) => Step::Done(Err(failure)),
                }
            }
            (Phase::Check(view, name), Answer::Exists(answer)) => match answer {
                Ok(exists) => self.finish(&view, Some(SecretStatus { name, exists })),
                Err(failure) => Step::Done(Err(failure)),
            },
            (Phase::ComparingEnv(mut report), Answer::EnvCompared(compared)) => match compared {
                Ok(keys) => {
                    report.env_differs = keys;
                    self.read_workspace(report)
                }
                Err(failure) => Step::Done(Err(failure)),
            },
            (Phase::ReadingWorkspace(mut report), Answer::WorkspaceRead(claim)) => {
                report.workspace_differs = match (&self.spec.desired_claim, &claim) {
                    (Some(wanted), Some(found)) if found.ours => {
                        Some(claim_differences(wanted, &found.shape))
                    }
                    _ => None,
                };
                report.workspace = claim;
                match self.expires_at {
                    // deploy.md § Expiry: the server's clock only; a pod list's `Date` is it.
                    Some(expires_at) => {
                        self.phase = Phase::ReadingClock(report, expires_at);
                        Step::Request(Request::List {
                            secrets: false,
                            dropping: None,
                        })
                    }
                    None => Step::Done(Ok(*report)),
                }
            }
            (Phase::ReadingClock(mut report, expires_at), Answer::Listed(listed)) => {
                // Read-only and already standing: a failed clock read only loses the line.
                if let Ok(listing) = listed {
                    report.expiry = Some(StatusExpiry {
                        expires_at,
                        seconds_left: listing.server_now.map(|now| seconds_left(expires_at, now)),
                    });
                }
                Step::Done(Ok(*report))
            }
            (_, _) => Step::Done(Err(RequestFailure::unsent(
                "internal error in apiary: the driver answered a status effect that was not \
                 asked for",
            ))),
        }
    }

    /// deploy.md § status, step 3: check the Secret a verified pod references.
    fn check(&mut self, view: PodView) -> StatusStep {
        match self.mapped(&view).secret {
            Some(name) => {
                self.phase = Phase::Check(view, name.clone());
                Step::Request(Request::SecretExists { name })
            }
            None => self.finish(&view, None),
        }
    }

    fn mapped(&self, view: &PodView) -> PodStatus {
        let image = self.image.as_deref().unwrap_or("the pod's image");
        pod_status(view, image)
    }

    fn finish(&mut self, view: &PodView, secret: Option<SecretStatus>) -> StatusStep {
        let mapped = self.mapped(view);
        let verified = match view {
            PodView::Settled(settled) => Some(settled.pod()),
            PodView::Pending(pending) => Some(&pending.pod),
            PodView::Absent | PodView::Foreign => None,
        };
        let intent_matches = self
            .spec
            .desired_intent
            .as_deref()
            .zip(verified)
            .map(|(desired, pod)| pod.intent_matches(desired));
        let intent_differs = match (intent_matches, &self.spec.desired_settings, verified) {
            (Some(false), Some(desired), Some(pod)) => {
                Some(differing_settings(pod.recorded_settings(), desired))
            }
            _ => None,
        };
        let compare = secret
            .as_ref()
            .filter(|s| s.exists && self.spec.compare_env)
            .map(|s| s.name.clone());
        let report = Box::new(StatusReport {
            pod: self.spec.pod_name.clone(),
            state: mapped.state,
            condition: mapped.condition,
            secret,
            intent_matches,
            env_differs: None,
            workspace: None,
            intent_differs,
            workspace_differs: None,
            expiry: None,
        });
        match compare {
            Some(secret) => {
                self.phase = Phase::ComparingEnv(report);
                Step::Request(Request::CompareEnv {
                    secret,
                    log_keys: false,
                })
            }
            None => self.read_workspace(report),
        }
    }

    fn read_workspace(&mut self, report: Box<StatusReport>) -> StatusStep {
        self.phase = Phase::ReadingWorkspace(report);
        Step::Request(Request::ReadWorkspace)
    }
}

crate::progress::machine!(StatusMachine => Result<StatusReport, RequestFailure>);

#[cfg(test)]
mod tests;
