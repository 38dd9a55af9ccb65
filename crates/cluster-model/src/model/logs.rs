//! Container logs of the simulated kubelet: scripted lines per pod name and container, each
//! written at an offset from the container's start on the model clock, read the way the pod
//! log endpoint answers (`GET …/pods/<name>/log`: `container`, `previous`, `sinceSeconds`,
//! `sinceTime`, `tailLines`), with the apiserver's and the kubelet's refusals word for word:
//!
//! | case | answer |
//! |---|---|
//! | no such pod | 404 `pods "<pod>" not found` |
//! | no such container | 400 `container <c> is not valid for pod <pod>` |
//! | several containers, none named | 400 `a container name must be specified for pod <pod>, choose one of: [<a> <b>]` |
//! | no status for the container | 400 `container "<c>" in pod "<pod>" is not available` |
//! | waiting on an image pull | 400 `container "<c>" in pod "<pod>" is waiting to start: image can't be pulled` |
//! | waiting otherwise | 400 `container "<c>" in pod "<pod>" is waiting to start: <reason>` |
//! | `previous` with no earlier instance | 400 `previous terminated container "<c>" in pod "<pod>" not found` |
//!
//! The first three are the apiserver's own (its pod log REST storage answers before any kubelet
//! is asked; the real-server tier compares them); the rest are the kubelet's, which the
//! apiserver relays as 400 `BadRequest`. A pod no node was assigned is no refusal: the
//! apiserver answers `200` with an empty log (there is no kubelet to ask), and so does this. A script belongs to the pod *name*, so a pod recreated
//! under the name writes the same lines again from its own start.
//!
//! Layer: part of the pure model. Reads the pods it is handed and the model clock; no I/O.

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};

use super::ClusterModel;
use super::log_store::{LogLine, LogQuery, LogRead, key};
use super::time::add;
use crate::error::{Kind, ModelError};

fn bad_request(message: String) -> ModelError {
    ModelError::BadRequest { message }
}

impl ClusterModel {
    /// Script the lines the container `container` of pods named `pod` writes: each `(offset,
    /// text)` appears `offset` after the container started (replacing an earlier script).
    pub fn script_pod_log(
        &mut self,
        namespace: &str,
        pod: &str,
        container: &str,
        lines: impl IntoIterator<Item = (Duration, String)>,
    ) {
        let mut lines: Vec<_> = lines.into_iter().collect();
        lines.sort_by_key(|(offset, _)| *offset);
        self.logs
            .current
            .insert(key(namespace, pod, container), lines);
    }

    /// Give the container `container` of pods named `pod` a terminated earlier instance that
    /// wrote `lines` (what `previous=true` reads).
    pub fn set_previous_pod_log(
        &mut self,
        namespace: &str,
        pod: &str,
        container: &str,
        lines: impl IntoIterator<Item = String>,
    ) {
        self.logs
            .previous
            .insert(key(namespace, pod, container), lines.into_iter().collect());
    }

    /// Read the log of pod `name`'s container as the pod log endpoint answers (see the module
    /// docs for the refusals).
    ///
    /// # Errors
    /// `NotFound` for a missing pod; `BadRequest` with the apiserver's or kubelet's message for
    /// every other refusal.
    pub fn read_pod_log(
        &self,
        namespace: &str,
        name: &str,
        query: &LogQuery,
    ) -> Result<LogRead, ModelError> {
        let pod = self
            .get_pod(namespace, name)
            .map_err(|_| ModelError::NotFound {
                kind: Kind::Pod,
                name: name.to_owned(),
            })?;
        let container = container_of(&pod, name, query.container.as_deref())?;
        let assigned = pod.spec.as_ref().and_then(|s| s.node_name.as_deref());
        if assigned.is_none_or(str::is_empty) {
            return Ok(LogRead {
                lines: Vec::new(),
                ended: true,
                uid: pod.metadata.uid.clone(),
            });
        }
        let status = container_status(&pod, &container).ok_or_else(|| {
            bad_request(format!(
                "container \"{container}\" in pod \"{name}\" is not available"
            ))
        })?;
        let uid = pod.metadata.uid.clone();
        if query.previous {
            let lines = self
                .logs
                .previous
                .get(&key(namespace, name, &container))
                .ok_or_else(|| {
                    bad_request(format!(
                        "previous terminated container \"{container}\" in pod \"{name}\" not \
                         found"
                    ))
                })?;
            let at = status
                .last_state
                .as_ref()
                .and_then(|s| s.terminated.as_ref())
                .and_then(|t| t.finished_at.as_ref())
                .map_or(self.now, |t| t.0);
            let lines = lines
                .iter()
                .map(|text| LogLine {
                    at,
                    text: text.clone(),
                })
                .collect();
            return Ok(LogRead {
                lines: self.filter(lines, query),
                ended: true,
                uid,
            });
        }
        let state = status.state.clone().unwrap_or_default();
        let (started, finished) = if let Some(running) = &state.running {
            (running.started_at.as_ref().map(|t| t.0), None)
        } else if let Some(terminated) = &state.terminated {
            (
                terminated.started_at.as_ref().map(|t| t.0),
                terminated.finished_at.as_ref().map(|t| t.0),
            )
        } else {
            let reason = state
                .waiting
                .as_ref()
                .and_then(|w| w.reason.clone())
                .unwrap_or_default();
            let cause = if reason == "ErrImagePull" || reason == "ImagePullBackOff" {
                "image can't be pulled".to_owned()
            } else {
                reason
            };
            return Err(bad_request(format!(
                "container \"{container}\" in pod \"{name}\" is waiting to start: {cause}"
            )));
        };
        let started = started.unwrap_or(self.now);
        let until = finished.map_or(self.now, |f| f.min(self.now));
        let lines = self
            .logs
            .current
            .get(&key(namespace, name, &container))
            .map(|script| {
                script
                    .iter()
                    .map(|(offset, text)| LogLine {
                        at: add(started, *offset),
                        text: text.clone(),
                    })
                    .filter(|line| line.at <= until)
                    .collect()
            })
            .unwrap_or_default();
        Ok(LogRead {
            lines: self.filter(lines, query),
            ended: finished.is_some(),
            uid,
        })
    }

    /// `sinceSeconds`/`sinceTime`, then `tailLines`.
    fn filter(&self, lines: Vec<LogLine>, query: &LogQuery) -> Vec<LogLine> {
        let since = query
            .since_seconds
            .map(|s| {
                let back = i64::try_from(s).unwrap_or(i64::MAX);
                self.now
                    .checked_sub(jiff::SignedDuration::from_secs(back))
                    .unwrap_or(Timestamp::MIN)
            })
            .or(query.since_time);
        let mut lines: Vec<LogLine> = lines
            .into_iter()
            .filter(|line| since.is_none_or(|since| line.at >= since))
            .collect();
        if let Some(tail) = query.tail_lines {
            let keep = usize::try_from(tail).unwrap_or(usize::MAX);
            let skip = lines.len().saturating_sub(keep);
            lines.drain(..skip);
        }
        lines
    }
}

/// The container a query names, as the apiserver resolves it.
fn container_of(pod: &Pod, name: &str, asked: Option<&str>) -> Result<String, ModelError> {
    let names: Vec<&str> = pod
        .spec
        .iter()
        .flat_map(|s| {
            s.containers
                .iter()
                .chain(s.init_containers.iter().flatten())
        })
        .map(|c| c.name.as_str())
        .collect();
    match asked {
        Some(asked) if names.contains(&asked) => Ok(asked.to_owned()),
        Some(asked) => Err(bad_request(format!(
            "container {asked} is not valid for pod {name}"
        ))),
        None => {
            let main: Vec<&str> = pod
                .spec
                .iter()
                .flat_map(|s| s.containers.iter())
                .map(|c| c.name.as_str())
                .collect();
            match main.as_slice() {
                [only] => Ok((*only).to_owned()),
                several => Err(bad_request(format!(
                    "a container name must be specified for pod {name}, choose one of: [{}]",
                    several.join(" ")
                ))),
            }
        }
    }
}

fn container_status<'a>(pod: &'a Pod, container: &str) -> Option<&'a ContainerStatus> {
    let status = pod.status.as_ref()?;
    status
        .container_statuses
        .iter()
        .flatten()
        .chain(status.init_container_statuses.iter().flatten())
        .find(|c| c.name == container)
}

#[cfg(test)]
mod tests;
