//! The `status` mapping (deploy.md § status): one observation of the pod name to a state, a
//! condition and the Secret to look up; also the progress every machine reports. Pure.

use crate::action::missing_config;
use crate::binding::Owner;
use crate::condition::condition_text;
use crate::facts::ObservedPod;
use crate::pull::pull_failure_text;
use crate::startup::StartupState;
use crate::verify::{PodView, VerifiedPod, view_pod};

/// The `state` of `apiary status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StatusState {
    /// No pod under the name.
    Absent,
    /// Recoverable, not yet started.
    Starting,
    /// The container `agent` is running.
    Started,
    /// It ran and ended.
    Terminated,
    /// Provably broken.
    Broken,
    /// A pull failure that will not heal.
    PullFailing,
    /// Ours and deletion-marked.
    Deleting,
    /// Present but not apiary's for this agent.
    Foreign,
}

impl StatusState {
    /// Every state.
    pub const ALL: [StatusState; 8] = [
        StatusState::Absent,
        StatusState::Starting,
        StatusState::Started,
        StatusState::Terminated,
        StatusState::Broken,
        StatusState::PullFailing,
        StatusState::Deleting,
        StatusState::Foreign,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            StatusState::Absent => "absent",
            StatusState::Starting => "starting",
            StatusState::Started => "started",
            StatusState::Terminated => "terminated",
            StatusState::Broken => "broken",
            StatusState::PullFailing => "pull-failing",
            StatusState::Deleting => "deleting",
            StatusState::Foreign => "foreign",
        }
    }
}

/// The state name of a settled startup state.
pub fn startup_status(state: StartupState) -> StatusState {
    match state {
        StartupState::Started => StatusState::Started,
        StartupState::Terminated => StatusState::Terminated,
        // The kubelet starts it once the referenced Secret exists again; the condition text
        // names the waiting reason (deploy.md § Credentials from the cluster).
        StartupState::NeverStartedRecoverable | StartupState::NeverStartedMissingSecret => {
            StatusState::Starting
        }
        StartupState::NeverStartedProvablyBroken => StatusState::Broken,
        StartupState::NeverStartedPullFailing(_) => StatusState::PullFailing,
    }
}

/// What `status` reports about the pod (the Secret's existence and the intent are added by the
/// caller from its own reads and configuration).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodStatus {
    /// The state.
    pub state: StatusState,
    /// The deploy.md § Pull-failure report text for `pull-failing`, else the § Redacted condition
    /// text; `None` otherwise.
    pub condition: Option<String>,
    /// The Secret a verified pod references, for a quorum existence check.
    pub secret: Option<String>,
    /// The recorded intent of a verified pod, to compare with a given configuration.
    pub recorded_intent: Option<String>,
}

/// Map a settled view of the pod name to its status; `image` is the image named in pull-failure
/// text. A pending view (Secret check not yet answered) must be settled by the caller first and
/// is reported as `starting` if it was not.
pub fn pod_status(view: &PodView, image: &str) -> PodStatus {
    let (state, pod) = match view {
        PodView::Absent => (StatusState::Absent, None),
        PodView::Foreign => (StatusState::Foreign, None),
        PodView::Pending(pending) => (verified_state(&pending.pod, None), Some(&pending.pod)),
        PodView::Settled(settled) => (
            verified_state(settled.pod(), Some(settled.startup())),
            Some(settled.pod()),
        ),
    };
    let Some(pod) = pod else {
        return PodStatus {
            state,
            condition: None,
            secret: None,
            recorded_intent: None,
        };
    };
    let condition = match view {
        PodView::Settled(settled) if state != StatusState::Deleting => match settled.startup() {
            StartupState::NeverStartedPullFailing(kind) => Some(pull_failure_text(kind, image)),
            // deploy.md § Credentials from the cluster: what is missing, in the kubelet's words
            // re-rendered from the names it gave.
            StartupState::NeverStartedMissingSecret => match missing_config(pod.facts()) {
                Some(missing) => Some(format!(
                    "the container is waiting, reason CreateContainerConfigError: {}",
                    missing.kubelet_words()
                )),
                None => condition_text(pod.facts()),
            },
            _ => condition_text(pod.facts()),
        },
        _ => condition_text(pod.facts()),
    };
    PodStatus {
        state,
        condition,
        secret: pod.facts().env_from_secret.clone(),
        recorded_intent: pod.recorded_intent().map(str::to_owned),
    }
}

fn verified_state(pod: &VerifiedPod, startup: Option<StartupState>) -> StatusState {
    if pod.deletion_marked() {
        return StatusState::Deleting;
    }
    startup.map_or(StatusState::Starting, startup_status)
}

/// One read of the pod name as progress shows it: the state and, for a verified pod, the
/// redacted condition (deploy.md § Redacted condition text). An output of the machines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Progress {
    /// The state, as `status` names it (a pod pending its Secret check is `starting`).
    pub state: StatusState,
    /// The redacted condition of a verified pod; `None` when absent, foreign or none applies.
    pub condition: Option<String>,
}

/// The progress of one read of the pod name (`None` = confirmed absent).
pub fn progress_of(pod: Option<&ObservedPod>, owner: &Owner) -> Progress {
    let view = view_pod(pod, owner);
    let state = pod_status(&view, "").state;
    let condition = match &view {
        PodView::Pending(pending) => condition_text(pending.pod.facts()),
        PodView::Settled(settled) => condition_text(settled.pod().facts()),
        PodView::Absent | PodView::Foreign => None,
    };
    Progress { state, condition }
}

/// The progress a machine has to report: each change of what a read of the pod name shows, once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ProgressLog {
    shown: Option<Progress>,
    pending: Option<Progress>,
}

impl ProgressLog {
    /// Record one read; it is reported only when it differs from the last one reported.
    pub(crate) fn observe(&mut self, pod: Option<&ObservedPod>, owner: &Owner) {
        let progress = progress_of(pod, owner);
        if self.shown.as_ref() != Some(&progress) {
            self.shown = Some(progress.clone());
            self.pending = Some(progress);
        }
    }

    /// The change not yet reported, if any.
    pub(crate) fn poll(&mut self) -> Option<Progress> {
        self.pending.take()
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
