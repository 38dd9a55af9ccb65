//! The deploy machine's state: [`DeployMachine`], the [`Phase`] it waits in, and the entry points
//! (`new`, `step`, `poll_progress`). The transitions live beside it, by path: the main loop and the
//! disappearance wait in `observe`, the create path in `create`, the lost race and failing reads
//! in `race`; each imports from here, never the other way.
//!
//! Pure: no I/O, no clock, no randomness.

use std::time::Duration;

use super::error::{DeployError, Deployed};
use super::replace::{Replace, Retiring};
use super::spec::DeploySpec;
use super::stability::Stability;
use crate::failure::RequestFailure;
use crate::progress::PodWatch;
use crate::request::{Answer, OwnSecret, Step};
use crate::verify::{PodDeletion, SettledPod, VerifiedPod};
use crate::wait::Deadline;
use crate::workspace::ClaimReport;

/// Where to go once this attempt's own Secret has been dealt with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum AfterDrop {
    /// The race winner is foreign: E8.
    Foreign,
    /// Observe the race winner.
    Race,
    /// The pod create was refused: E10.
    Refused(RequestFailure),
}

/// Which error a latest-condition read completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Failing {
    Deadline,
    CreatedPodFailed,
    RaceDeadline,
    WinnerFailed,
}

/// What the machine waits for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum Phase {
    #[default]
    Start,
    References,
    Preflight,
    Observe,
    SecretCheck(VerifiedPod),
    EnvCompare(SettledPod),
    Preparing,
    /// A replacing call puts the agent's other objects in place before it deletes the running
    /// pod, so a problem with them fails the deploy with that pod kept.
    ReplacePreparing {
        deletion: PodDeletion,
    },
    /// A replacing call's dry-run create of the new pod, before the delete.
    ReplaceChecking {
        deletion: PodDeletion,
    },
    CreatingSecret,
    CreatingPod {
        secret: OwnSecret,
    },
    Deleting {
        uid: String,
    },
    DisappearRead {
        uid: String,
    },
    DisappearWait {
        uid: String,
    },
    /// The pod a replacing call deleted is gone: its Secret's references and uid are listed.
    RetireList {
        secret: String,
    },
    /// That Secret's uid-fenced delete.
    RetireDelete,
    PollWait,
    RaceVerify {
        secret: OwnSecret,
    },
    DropList {
        secret: OwnSecret,
        then: AfterDrop,
    },
    DropDelete {
        secret: OwnSecret,
        then: AfterDrop,
    },
    RaceRead,
    RaceSecretCheck(VerifiedPod),
    RaceWait,
    AccountRead {
        secret: OwnSecret,
        after_wait: bool,
    },
    AccountWait {
        secret: OwnSecret,
    },
    Condition(Failing),
    Done(Result<Deployed, DeployError>),
}

/// The deploy loop of one call. Feed it [`Answer::Start`] first, then the answer to each request
/// ([`crate::request::Machine`]).
#[derive(Clone, Debug)]
pub struct DeployMachine {
    pub(super) spec: DeploySpec,
    pub(super) phase: Phase,
    pub(super) deadline: Deadline,
    pub(super) created_this_call: bool,
    /// The account a refused pod create waits for (deploy.md § Namespace ensure, item 4).
    pub(super) missing_account: Option<String>,
    /// Whether the one immediate create retry after an account refusal has been spent: every
    /// later retry follows a wait, so a lagging admission cache cannot make the loop hot-spin.
    pub(super) account_retried_at_once: bool,
    /// The reads of the pod name: progress and the resourceVersion the next wait watches from.
    pub(super) watch: PodWatch,
    /// What `--replace` may still delete (deploy.md § Replacing a live agent).
    pub(super) replace: Replace,
    /// The Secret of the pod the replace delete removed, dropped once that pod is gone
    /// (deploy.md § Replacing a live agent).
    pub(super) retiring: Option<Retiring>,
    /// Since when the pod has been read as started (`--min-running`).
    pub(super) stability: Stability,
    /// Whether a replacing call has compared the environment of the pod it first observed with
    /// the desired one (once per call; deploy.md § Replacing a live agent).
    pub(super) env_compared: bool,
    /// Whether this call has put the agent's NetworkPolicy and claim in place (`--isolate`,
    /// `--workspace-size`).
    pub(super) prepared: bool,
    /// What this call did about the workspace claim, for the success report.
    pub(super) workspace: Option<ClaimReport>,
    /// The recorded intent settings of the started pod about to be returned (deploy.md § Naming
    /// what differs).
    pub(super) kept_settings: Option<String>,
}

impl DeployMachine {
    /// A machine for one deploy call.
    pub fn new(spec: DeploySpec) -> DeployMachine {
        DeployMachine {
            deadline: Deadline::new(spec.deadline, spec.poll),
            spec,
            phase: Phase::Start,
            created_this_call: false,
            missing_account: None,
            account_retried_at_once: false,
            watch: PodWatch::default(),
            replace: Replace::default(),
            retiring: None,
            stability: Stability::default(),
            env_compared: false,
            prepared: false,
            workspace: None,
            kept_settings: None,
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
}

/// What one step of the deploy machine returns.
pub(super) type DeployStep = Step<Result<Deployed, DeployError>>;

crate::progress::machine!(DeployMachine => Result<Deployed, DeployError>, deadline: deadline, progress: watch);

pub(super) fn read_secret_failed(pod: &VerifiedPod, failure: RequestFailure) -> DeployStep {
    fail(DeployError::Failed {
        operation: "read secret".to_owned(),
        object: pod.facts().env_from_secret.clone().unwrap_or_default(),
        failure,
    })
}

pub(super) fn phase_name(phase: &Phase) -> &'static str {
    match phase {
        Phase::Start => "Start",
        Phase::References => "ReferencesChecked",
        Phase::EnvCompare(_) => "EnvCompared",
        Phase::Preparing | Phase::ReplacePreparing { .. } => "Prepared",
        Phase::ReplaceChecking { .. } => "PodCreateChecked",
        Phase::Preflight => "Preflighted",
        Phase::Observe
        | Phase::DisappearRead { .. }
        | Phase::RaceVerify { .. }
        | Phase::RaceRead
        | Phase::Condition(_) => "PodRead",
        Phase::SecretCheck(_) | Phase::RaceSecretCheck(_) => "Exists",
        Phase::CreatingSecret => "SecretCreated",
        Phase::CreatingPod { .. } => "PodCreated",
        Phase::Deleting { .. } => "Deleted",
        Phase::DisappearWait { .. }
        | Phase::PollWait
        | Phase::RaceWait
        | Phase::AccountWait { .. } => "Waited",
        Phase::AccountRead { .. } => "Exists",
        Phase::DropList { .. } | Phase::RetireList { .. } => "Listed",
        Phase::DropDelete { .. } | Phase::RetireDelete => "Deleted",
        Phase::Done(_) => "nothing",
    }
}

pub(super) fn fail(error: DeployError) -> DeployStep {
    Step::Done(Err(error))
}

#[cfg(test)]
mod tests;
