//! The fake kubelet's work, carried out: `POST …/binding`, `PUT …/status` (re-reading and
//! recomputing on a `409`), and the final `DELETE` with `gracePeriodSeconds: 0` and a `uid`
//! precondition, each recorded as an [`Action`](super::Action).
//!
//! Layer: imperative shell over kube-rs. Which status follows which is `sequence::step`'s;
//! when is the tracker's. Never logs a pod spec or a Secret.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use apiary_cluster_model::kubelet::PodScript;
use apiary_cluster_model::kubelet::sequence::{self, Moment, Outcome, Resources};
use apiary_cluster_model::kubelet::{Placement, Stage, apply_terminated, required_secrets};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Binding, ObjectReference, Pod, Secret};
use kube::api::{DeleteParams, PostParams, Preconditions};
use kube::{Api, Client};

use super::feeds::{bound_node, code_of};
use super::options::SIGTERM_EXIT_CODE;
use super::protocol::{Action, FinishOutcome, lock};
use super::tracker::{Key, Scale, Stepped, Tracked, Work, new_placement, next_container_id};

/// How many conflicts one step re-reads and recomputes before it is retried later.
pub(super) const CONFLICT_ATTEMPTS: usize = 5;

/// `Phase/state` of the first container, for the action log.
pub(super) fn summary(pod: &Pod) -> String {
    let status = pod.status.as_ref();
    let phase = status.and_then(|s| s.phase.as_deref()).unwrap_or("-");
    let state = status
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.first())
        .and_then(|c| c.state.as_ref());
    let state = match state {
        Some(s) if s.running.is_some() => "running".to_owned(),
        Some(s) if s.terminated.is_some() => format!(
            "terminated({})",
            s.terminated.as_ref().map_or(0, |t| t.exit_code)
        ),
        Some(s) => s
            .waiting
            .as_ref()
            .and_then(|w| w.reason.clone())
            .unwrap_or_else(|| "waiting".to_owned()),
        None => {
            let unschedulable = status
                .and_then(|s| s.conditions.as_ref())
                .and_then(|c| c.iter().find(|c| c.type_ == "PodScheduled"))
                .and_then(|c| c.reason.clone());
            unschedulable.unwrap_or_else(|| "-".to_owned())
        }
    };
    format!("{phase}/{state}")
}

/// The kubelet's side of a step: its placements and container IDs, and the Secrets it found
/// missing just before the step.
pub(super) struct ShellResources<'a> {
    pub(super) node_name: &'a str,
    pub(super) placement: Option<Placement>,
    pub(super) container_id: Option<String>,
    pub(super) missing: &'a BTreeSet<String>,
}

impl Resources for ShellResources<'_> {
    fn placement(&mut self) -> Placement {
        self.placement
            .get_or_insert_with(|| new_placement(self.node_name))
            .clone()
    }

    fn container_id(&mut self) -> String {
        self.container_id
            .get_or_insert_with(next_container_id)
            .clone()
    }

    fn missing_secret(&mut self, pod: &Pod) -> Option<String> {
        required_secrets(pod)
            .into_iter()
            .find(|s| self.missing.contains(s))
    }
}

/// Why a request did not go through.
pub(super) enum Failed {
    /// The pod is gone, or now belongs to another node or uid: forget it.
    Gone,
    /// Try again later.
    Later,
}

/// What a piece of work came to, for the tracker.
pub(super) enum Report {
    /// A script step was carried out.
    Stepped(Stepped),
    /// The termination write of a marked pod went through.
    Terminated(Pod),
    /// The pod turned out to be deletion-marked meanwhile: observe it as it is now.
    Marked(Pod),
    /// The pod is finished, gone, or not this kubelet's: forget it for good.
    Forget,
    /// Nothing to do (the pod was no longer tracked when the work started).
    Nothing,
}

/// A finished piece of work: what it was, for whom, and what it came to.
pub(super) struct Done {
    pub(super) work: Work,
    pub(super) uid: String,
    pub(super) result: Result<Report, Failed>,
}

/// What every piece of work needs: the client, the node, the time scale and the action log.
#[derive(Clone)]
pub(super) struct Ctx {
    pub(super) client: Client,
    pub(super) node_name: String,
    pub(super) scale: Scale,
    pub(super) actions: Arc<Mutex<Vec<Action>>>,
}

impl Ctx {
    fn record(&self, action: Action) {
        tracing::debug!(?action, "fake kubelet");
        lock(&self.actions).push(action);
    }

    fn pods(&self, namespace: &str) -> Api<Pod> {
        Api::namespaced(self.client.clone(), namespace)
    }

    /// Carries out `work` on the snapshot `tracked` of its pod.
    pub(super) async fn perform(self, work: Work, tracked: Option<Tracked>) -> Done {
        let (uid, result) = match (&work, tracked) {
            (Work::Finish { key, uid }, _) => (uid.clone(), self.finish(key, uid).await),
            (Work::Step(key), Some(t)) => (t.uid.clone(), self.step(key, &t).await),
            (Work::Terminate(key), Some(t)) => (t.uid.clone(), self.terminate(key, &t).await),
            (_, None) => (String::new(), Ok(Report::Nothing)),
        };
        Done { work, uid, result }
    }

    /// Binds the pod to the node; answers the pod as it is afterwards.
    async fn bind(&self, key: &Key, tracked: &Tracked) -> Result<Pod, Failed> {
        let api = self.pods(&key.0);
        let binding = Binding {
            metadata: kube::api::ObjectMeta {
                name: Some(key.1.clone()),
                namespace: Some(key.0.clone()),
                uid: Some(tracked.uid.clone()),
                ..kube::api::ObjectMeta::default()
            },
            target: ObjectReference {
                api_version: Some("v1".to_owned()),
                kind: Some("Node".to_owned()),
                name: Some(self.node_name.clone()),
                ..ObjectReference::default()
            },
        };
        let answer: Result<serde_json::Value, _> = api
            .create_subresource("binding", &key.1, &PostParams::default(), &binding)
            .await;
        match answer {
            Ok(_) => self.record(Action::Bound {
                namespace: key.0.clone(),
                name: key.1.clone(),
            }),
            // Already bound (by another kubelet, or by us before a lost answer): read on.
            Err(error) if code_of(&error) == Some(409) => {}
            Err(error) if code_of(&error) == Some(404) => return Err(Failed::Gone),
            Err(_) => return Err(Failed::Later),
        }
        let pod = self.reread(key, &tracked.uid).await?;
        if bound_node(&pod) == Some(self.node_name.as_str()) {
            Ok(pod)
        } else {
            Err(Failed::Gone)
        }
    }

    /// A quorum read of the pod; `Gone` if it no longer exists under this uid.
    async fn reread(&self, key: &Key, uid: &str) -> Result<Pod, Failed> {
        match self.pods(&key.0).get(&key.1).await {
            Ok(pod) if pod.metadata.uid.as_deref() == Some(uid) => Ok(pod),
            Ok(_) => Err(Failed::Gone),
            Err(error) if code_of(&error) == Some(404) => Err(Failed::Gone),
            Err(_) => Err(Failed::Later),
        }
    }

    /// The Secrets among those the pod requires that do not exist (quorum reads).
    async fn missing_secrets(&self, key: &Key, pod: &Pod) -> Result<BTreeSet<String>, Failed> {
        // Only existence matters: the metadata read never transfers the payload.
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), &key.0);
        let mut missing = BTreeSet::new();
        for name in required_secrets(pod) {
            match secrets.get_metadata_opt(&name).await {
                Ok(Some(_)) => {}
                Ok(None) => {
                    missing.insert(name);
                }
                Err(_) => return Err(Failed::Later),
            }
        }
        Ok(missing)
    }

    async fn step(&self, key: &Key, tracked: &Tracked) -> Result<Report, Failed> {
        let mut latest = tracked.latest.clone();
        let schedules = tracked.progress.stage == Stage::Created
            && !matches!(tracked.script, PodScript::Unschedulable | PodScript::Inert);
        if schedules && bound_node(&latest).is_none() {
            latest = self.bind(key, tracked).await?;
        }
        let starts = matches!(
            tracked.script,
            PodScript::Start { .. } | PodScript::Exit { .. }
        ) && !matches!(
            tracked.progress.stage,
            Stage::Created | Stage::Running | Stage::Finished
        );
        let missing = if starts {
            self.missing_secrets(key, &latest).await?
        } else {
            BTreeSet::new()
        };
        for _ in 0..CONFLICT_ATTEMPTS {
            let mut pod = latest.clone();
            let mut progress = tracked.progress.clone();
            let mut resources = ShellResources {
                node_name: &self.node_name,
                placement: tracked.placement.clone(),
                container_id: tracked.container_id.clone(),
                missing: &missing,
            };
            let moment = Moment {
                now: Timestamp::now(),
                since_anchor: self.scale.to_model(tracked.anchor.elapsed()),
            };
            let outcome = sequence::step(
                &tracked.script,
                &mut progress,
                &mut pod,
                moment,
                &mut resources,
            );
            let next = match outcome {
                Outcome::Remove => return self.finish(key, &tracked.uid).await,
                Outcome::Reshaped { next } => next,
            };
            let mut stepped = Stepped {
                progress,
                placement: resources.placement,
                container_id: resources.container_id,
                written: Some(latest.clone()),
                next,
            };
            if pod.status == latest.status {
                return Ok(Report::Stepped(stepped));
            }
            match self
                .pods(&key.0)
                .replace_status(&key.1, &PostParams::default(), &pod)
                .await
            {
                Ok(written) => {
                    self.record(Action::StatusWritten {
                        namespace: key.0.clone(),
                        name: key.1.clone(),
                        summary: summary(&written),
                    });
                    stepped.written = Some(written);
                    return Ok(Report::Stepped(stepped));
                }
                Err(error) if code_of(&error) == Some(409) => {
                    self.record(Action::Conflict {
                        namespace: key.0.clone(),
                        name: key.1.clone(),
                    });
                    latest = self.reread(key, &tracked.uid).await?;
                    if latest.metadata.deletion_timestamp.is_some() {
                        // Marked meanwhile: the script is frozen, the deletion takes over.
                        return Ok(Report::Marked(latest));
                    }
                }
                Err(error) if code_of(&error) == Some(404) => return Err(Failed::Gone),
                Err(_) => return Err(Failed::Later),
            }
        }
        Err(Failed::Later)
    }

    /// Writes the running containers of a deletion-marked pod as killed by SIGTERM.
    async fn terminate(&self, key: &Key, tracked: &Tracked) -> Result<Report, Failed> {
        let mut latest = tracked.latest.clone();
        let container_id = tracked
            .container_id
            .clone()
            .unwrap_or_else(next_container_id);
        for _ in 0..CONFLICT_ATTEMPTS {
            let mut pod = latest.clone();
            let now = Timestamp::now();
            let started = tracked.progress.started_at.unwrap_or(now);
            apply_terminated(&mut pod, SIGTERM_EXIT_CODE, &container_id, started, now);
            match self
                .pods(&key.0)
                .replace_status(&key.1, &PostParams::default(), &pod)
                .await
            {
                Ok(written) => {
                    self.record(Action::StatusWritten {
                        namespace: key.0.clone(),
                        name: key.1.clone(),
                        summary: summary(&written),
                    });
                    return Ok(Report::Terminated(written));
                }
                Err(error) if code_of(&error) == Some(409) => {
                    self.record(Action::Conflict {
                        namespace: key.0.clone(),
                        name: key.1.clone(),
                    });
                    latest = self.reread(key, &tracked.uid).await?;
                }
                Err(error) if code_of(&error) == Some(404) => return Err(Failed::Gone),
                Err(_) => return Err(Failed::Later),
            }
        }
        Err(Failed::Later)
    }

    /// The kubelet's final delete: grace 0, only the pod with this uid.
    async fn finish(&self, key: &Key, uid: &str) -> Result<Report, Failed> {
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions {
                uid: Some(uid.to_owned()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        let outcome = match self.pods(&key.0).delete(&key.1, &params).await {
            Ok(_) => FinishOutcome::Deleted,
            Err(error) if code_of(&error) == Some(404) => FinishOutcome::AlreadyGone,
            Err(error) if code_of(&error) == Some(409) => FinishOutcome::PreconditionFailed,
            Err(_) => return Err(Failed::Later),
        };
        self.record(Action::Finished {
            namespace: key.0.clone(),
            name: key.1.clone(),
            uid: uid.to_owned(),
            grace_period_seconds: 0,
            outcome,
        });
        Ok(Report::Forget)
    }
}
