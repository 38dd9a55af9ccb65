//! deploy.md § When a pod will not go away: deciding when a wait for a pod's disappearance has
//! outlasted the pod's grace period, and what the API shows about why — finalizers on the pod, the
//! node's `Ready` condition, how long it has been terminating — together with the `kubectl`
//! commands a cluster administrator would use to look.
//!
//! Pure: the shell feeds each read of the pod to a [`TerminationWatch`] with its monotonic
//! reading; when the watch says so it reads the node (if it may) and hands both to
//! [`diagnose`]. Nothing here performs I/O or reads a clock, and nothing here ever proposes a
//! forced delete: apiary waits, and says why it is waiting.

use std::fmt;
use std::time::Duration;

use crate::facts::{ConditionFacts, ContainerState};

/// What a read of a deletion-marked pod shows about its deletion.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct TerminatingPod {
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.uid` (a new uid under the name is a new pod).
    pub uid: Option<String>,
    /// `metadata.finalizers`, in order.
    pub finalizers: Vec<String>,
    /// `spec.nodeName`, when bound.
    pub node: Option<String>,
    /// `metadata.deletionGracePeriodSeconds`.
    pub grace_seconds: Option<i64>,
    /// The state of the container `agent` in that read, when it reports one.
    pub agent: Option<ContainerState>,
}

impl TerminatingPod {
    /// The grace period the deletion was given (0 when absent or negative).
    pub fn grace(&self) -> Duration {
        Duration::from_secs(self.grace_seconds.unwrap_or(0).max(0).unsigned_abs())
    }
}

/// What reading the pod's node showed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeFacts {
    /// The node was read; its `Ready` condition, when it reports one.
    Read {
        /// `status.conditions[type=Ready]`.
        ready: Option<ConditionFacts>,
    },
    /// The node does not exist (404).
    Missing,
    /// The user may not read nodes (403): skipped silently.
    NotPermitted,
    /// The read failed otherwise, or the pod names no node: nothing is said about the node.
    Unknown,
}

impl NodeFacts {
    /// What a node read the apiserver refused shows, split on the literal `Status.reason`, never
    /// the code: `NotFound` is [`NodeFacts::Missing`], `Forbidden` (the user may not read nodes,
    /// which is optional) [`NodeFacts::NotPermitted`], anything else — another reason, or none —
    /// [`NodeFacts::Unknown`]. A read with no answer at all is `Unknown` without asking this.
    pub fn refused(reason: &str) -> NodeFacts {
        match reason {
            "NotFound" => NodeFacts::Missing,
            "Forbidden" => NodeFacts::NotPermitted,
            _ => NodeFacts::Unknown,
        }
    }
}

/// One reason the API shows for a pod still being there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cause {
    /// The pod has finalizers: the apiserver keeps it until whatever owns them removes them.
    Finalizers(Vec<String>),
    /// The pod's node is not `Ready`: its kubelet cannot confirm the containers stopped.
    NodeNotReady {
        /// The node.
        node: String,
        /// The `Ready` condition's status (`False`, `Unknown`), `None` when it reports none.
        status: Option<String>,
        /// The condition's reason, when given.
        reason: Option<String>,
    },
    /// The pod's node no longer exists.
    NodeGone {
        /// The node.
        node: String,
    },
}

/// What a pod that outlived its grace period with nothing in the API holding it is most likely
/// waiting for, from its container's state (deploy.md § When a pod will not go away).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Likely {
    /// Its container was running at the end of the grace, or was just killed (exit code 137):
    /// it did not exit on SIGTERM, and the kubelet kills it.
    IgnoredSigterm,
    /// Its container never started (waiting, an image pull backing off): the kubelet v1.20
    /// removes such a pod only after its periodic (once a minute) sandbox cleanup, whatever the
    /// grace period.
    NeverStarted,
    /// Nothing more can be said.
    Unknown,
}

/// Why a pod outlived its grace period, as far as the API shows, and how to look further.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnosis {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod.
    pub pod: String,
    /// How long it has been seen terminating (at least; it may have been marked earlier).
    pub terminating_for: Duration,
    /// Its grace period.
    pub grace: Duration,
    /// What the API shows, finalizers first; empty when it shows nothing.
    pub causes: Vec<Cause>,
    /// With no cause, what the pod is most likely waiting for.
    pub likely: Likely,
    /// The `kubectl` commands an administrator would use to look (read-only, never a force).
    pub commands: Vec<String>,
}

/// What the [`TerminationWatch`] reports about a pod that outlived its grace period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Overdue {
    /// How long the pod has been seen terminating.
    pub terminating_for: Duration,
    /// The grace period it had when first seen marked (the kubelet's final zero-grace write does
    /// not shorten it).
    pub grace: Duration,
}

/// Decide, from the pod as last read and what its node showed, why the pod is still there and
/// which commands would show more. `overdue` is what the [`TerminationWatch`] reported.
pub fn diagnose(pod: &TerminatingPod, node: &NodeFacts, overdue: Overdue) -> Diagnosis {
    let mut causes = Vec::new();
    if !pod.finalizers.is_empty() {
        causes.push(Cause::Finalizers(pod.finalizers.clone()));
    }
    if let Some(name) = &pod.node {
        match node {
            NodeFacts::Read { ready } => {
                let status = ready.as_ref().map(|c| c.status.clone());
                if status.as_deref() != Some("True") {
                    causes.push(Cause::NodeNotReady {
                        node: name.clone(),
                        status,
                        reason: ready.as_ref().and_then(|c| c.reason.clone()),
                    });
                }
            }
            NodeFacts::Missing => causes.push(Cause::NodeGone { node: name.clone() }),
            NodeFacts::NotPermitted | NodeFacts::Unknown => {}
        }
    }
    let mut commands = vec![format!(
        "kubectl describe pod -n {} {}",
        pod.namespace, pod.name
    )];
    if let Some(name) = &pod.node {
        commands.push(format!("kubectl get node {name} -o yaml"));
    }
    let likely = match &pod.agent {
        // Still running at the end of the grace, or already killed by the kubelet (137: SIGKILL)
        // when this read came a moment after the kill.
        Some(ContainerState::Running | ContainerState::Terminated { exit_code: 137, .. }) => {
            Likely::IgnoredSigterm
        }
        Some(ContainerState::Waiting { .. }) => Likely::NeverStarted,
        Some(ContainerState::Terminated { .. } | ContainerState::Empty) | None => Likely::Unknown,
    };
    Diagnosis {
        namespace: pod.namespace.clone(),
        pod: pod.name.clone(),
        terminating_for: overdue.terminating_for,
        grace: overdue.grace,
        causes,
        likely,
        commands,
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cause::Finalizers(names) => write!(
                f,
                "it has finalizers ({}), and the API server keeps it until whatever owns them \
                 removes them",
                names.join(", ")
            ),
            Cause::NodeNotReady {
                node,
                status,
                reason,
            } => {
                match (status, reason) {
                    (Some(status), Some(reason)) => {
                        write!(f, "its node {node} is not Ready (Ready={status}, {reason})")?;
                    }
                    (Some(status), None) => {
                        write!(f, "its node {node} is not Ready (Ready={status})")?;
                    }
                    (None, _) => write!(f, "its node {node} reports no Ready condition")?,
                }
                f.write_str(", so its kubelet cannot confirm the containers have stopped")
            }
            Cause::NodeGone { node } => write!(
                f,
                "its node {node} no longer exists, so no kubelet will confirm the containers \
                 have stopped"
            ),
        }
    }
}

impl fmt::Display for Diagnosis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "pod {}/{} is still terminating after {} (grace period {})",
            self.namespace,
            self.pod,
            Seconds(self.terminating_for),
            Seconds(self.grace)
        )?;
        if self.causes.is_empty() {
            match self.likely {
                Likely::IgnoredSigterm => f.write_str(
                    ": its container did not exit on SIGTERM within the grace period, so the \
                     kubelet kills it now and the pod goes once the kill is confirmed; an agent \
                     that exits on SIGTERM stops in seconds (README.md § Writing an agent image), \
                     and --grace-period shortens the wait",
                )?,
                Likely::NeverStarted => f.write_str(
                    ": its container never started, and the kubelet removes such a pod only \
                     after its once-a-minute cleanup of the pod's sandbox, up to about 70 s after \
                     the delete whatever the grace period (measured on kubelet v1.20)",
                )?,
                Likely::Unknown => f.write_str("; the API shows no reason")?,
            }
        }
        for cause in &self.causes {
            write!(f, "; {cause}")?;
        }
        let lead = if self.causes.is_empty() && self.likely != Likely::Unknown {
            "; if it stays, a cluster administrator can look with"
        } else {
            "; a cluster administrator can look with"
        };
        write!(
            f,
            ". apiary does not force the delete{lead}: {}",
            self.commands.join(" and ")
        )
    }
}

/// A duration in seconds as a person reads it: whole seconds from 10 s, tenths below.
struct Seconds(Duration);

impl fmt::Display for Seconds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 >= Duration::from_secs(10) || self.0.subsec_millis() == 0 {
            write!(f, "{} s", self.0.as_secs())
        } else {
            write!(f, "{:.1} s", self.0.as_secs_f64())
        }
    }
}

/// Watches the reads of one pod name during a wait for its disappearance and says, once per
/// pod, when it has been terminating for longer than its grace period.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TerminationWatch {
    sighting: Option<Sighting>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Sighting {
    uid: Option<String>,
    since: Duration,
    grace: Duration,
    reported: bool,
}

impl TerminationWatch {
    /// Feed one read of the pod name at the monotonic reading `now`: `Some(pod)` when the read
    /// found it deletion-marked, `None` when it was absent or not marked. Returns [`Overdue`]
    /// the first time the pod has been seen terminating for longer than the grace period it had
    /// when first seen marked; `None` otherwise (and after that, for the same pod).
    pub fn observe(&mut self, now: Duration, pod: Option<&TerminatingPod>) -> Option<Overdue> {
        let Some(pod) = pod else {
            self.sighting = None;
            return None;
        };
        let sighting = match &mut self.sighting {
            Some(s) if s.uid == pod.uid => s,
            _ => self.sighting.insert(Sighting {
                uid: pod.uid.clone(),
                since: now,
                grace: pod.grace(),
                reported: false,
            }),
        };
        let terminating_for = now.saturating_sub(sighting.since);
        if sighting.reported || terminating_for <= sighting.grace {
            return None;
        }
        sighting.reported = true;
        Some(Overdue {
            terminating_for,
            grace: sighting.grace,
        })
    }
}

#[cfg(test)]
mod tests;
