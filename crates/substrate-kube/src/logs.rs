//! `apiary logs` (deploy.md § logs): the agent container's log through the pod log endpoint
//! (kube-rs `Api::<Pod>::log_stream`), after a quorum GET has verified the pod is the agent's
//! own (`apiary_classify::verify`). With `follow`, the stream is read until the container ends;
//! when it ends early or breaks (an apiserver restart, a proxy timeout, a reconnect of the
//! watch-like stream) and the container still runs, it is reopened with `sinceTime` at the last
//! line's timestamp, and lines already shown are skipped by timestamp, so nothing is printed
//! twice and nothing is lost across the reconnect.
//!
//! Layer: the imperative shell. It sends requests and copies lines to a sink; the only
//! decisions it makes are which pod may be read (classify's verification) and when a follow has
//! ended (the container's state from a fresh quorum read). It is kept out of the deploy-side
//! `Substrate` trait: reading a log mutates nothing and needs a stream, not an outcome. The log
//! is the agent's own output; apiary prints it as it is and never logs it.

use std::time::Duration;

use apiary_classify::facts::ContainerState;
use apiary_classify::failure::{Operation, RequestFailure};
use apiary_classify::verify::verify_pod;
use apiary_substrate::build::CONTAINER_NAME;
use apiary_substrate::naming::AgentIdentity;
use apiary_substrate::observe::observe_pod;
use futures::{AsyncBufReadExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::LogParams;

/// How many reconnects in a row a follow tries before it gives up.
const MAX_RECONNECTS: u32 = 5;
/// The pause before the first reconnect; doubled each time, capped at 8 s.
const FIRST_BACKOFF: Duration = Duration::from_millis(250);

/// What to read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogsOptions {
    /// Keep reading until the container ends (across reconnects).
    pub follow: bool,
    /// The previous, terminated instance of the container.
    pub previous: bool,
    /// Only lines written at most this many seconds ago.
    pub since_seconds: Option<u64>,
    /// Only the last this many lines.
    pub tail_lines: Option<u64>,
}

/// How a log read ended when it did not fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogsEnd {
    /// Everything asked for was read (without `follow`), or the container ended.
    Complete,
    /// While following, the pod went away.
    PodGone,
    /// While following, another pod (a new uid) took the name: its log is not this one.
    PodReplaced,
}

/// Why a log read failed. Messages name the pod, the cause and what to do.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LogsError {
    /// No pod under the agent's name.
    #[error(
        "agent {agent} has no pod ({pod} not found in namespace {namespace}): deploy it with \
         `apiary deploy`, or check the namespace with -n"
    )]
    PodMissing {
        /// AGENT.
        agent: String,
        /// The pod name.
        pod: String,
        /// The namespace.
        namespace: String,
    },
    /// A pod holds the name but does not verify as the agent's own (deploy.md § Verification).
    #[error(
        "pod {pod} in namespace {namespace} is not apiary's pod for agent {agent}, so its log \
         is not shown: `kubectl logs -n {namespace} {pod}` reads it if you know it is yours"
    )]
    Foreign {
        /// AGENT.
        agent: String,
        /// The pod name.
        pod: String,
        /// The namespace.
        namespace: String,
    },
    /// The container has not started, by the pod's own status or the apiserver's or kubelet's
    /// 400 (also: no earlier instance for `--previous`), quoted.
    #[error(
        "pod {pod} has no log to show yet: {message}; `apiary status {agent}` says why the \
         container has not started"
    )]
    NotStarted {
        /// AGENT.
        agent: String,
        /// The pod name.
        pod: String,
        /// The server's message.
        message: String,
    },
    /// Any other failed request (the pod read, or the log read; while following, the last of
    /// the reconnects that failed in a row, its hint saying how many), typed so that the one
    /// renderer of failure messages words it (docs/errors.md): a refusal keeps its code,
    /// reason and message apart, and a body that was no `Status` is never quoted.
    #[error("{0}")]
    Failed(RequestFailure),
}

/// Reads agents' logs in one namespace.
#[derive(Clone)]
pub struct PodLogs {
    pods: Api<Pod>,
    namespace: String,
}

impl std::fmt::Debug for PodLogs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PodLogs")
            .field("namespace", &self.namespace)
            .finish_non_exhaustive()
    }
}

/// The timestamp prefix the endpoint writes with `timestamps=true`, and the line after it.
fn split_timestamp(line: &str) -> (Option<Timestamp>, &str) {
    match line.split_once(' ') {
        Some((ts, rest)) => match ts.parse::<Timestamp>() {
            Ok(ts) => (Some(ts), rest),
            Err(_) => (None, line),
        },
        None => match line.parse::<Timestamp>() {
            Ok(ts) => (Some(ts), ""),
            Err(_) => (None, line),
        },
    }
}

/// Where a follow resumes: the last line's timestamp and how many lines at it were shown.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Resume {
    last: Option<Timestamp>,
    at_last: usize,
}

impl Resume {
    /// Whether a line read after a reconnect was shown before; records it otherwise.
    fn seen(&mut self, at: Option<Timestamp>, skip_at_last: &mut usize) -> bool {
        let Some(at) = at else {
            return false;
        };
        if let Some(last) = self.last {
            if at < last {
                return true;
            }
            if at == last && *skip_at_last > 0 {
                *skip_at_last -= 1;
                return true;
            }
        }
        if self.last == Some(at) {
            self.at_last += 1;
        } else {
            self.last = Some(at);
            self.at_last = 1;
        }
        false
    }
}

impl PodLogs {
    /// A reader for `namespace` through `client`.
    pub fn new(client: kube::Client, namespace: impl Into<String>) -> Self {
        let namespace = namespace.into();
        Self {
            pods: Api::namespaced(client, &namespace),
            namespace,
        }
    }

    /// Verify `agent`'s pod by a quorum GET and hand each line of its `agent` container's log
    /// to `sink` (without its newline), following when asked.
    ///
    /// # Errors
    /// [`LogsError`]: no pod, a foreign pod, a container that never started, or a failed
    /// request (while following: after five failed reconnects in a row).
    pub async fn read(
        &self,
        agent: &AgentIdentity,
        options: &LogsOptions,
        sink: &mut (dyn FnMut(&str) + Send),
    ) -> Result<LogsEnd, LogsError> {
        let pod_name = agent.pod_name();
        let (uid, state) = match self.verified(agent, &pod_name).await? {
            Some(found) => found,
            None => {
                return Err(LogsError::PodMissing {
                    agent: agent.name().to_owned(),
                    pod: pod_name,
                    namespace: self.namespace.clone(),
                });
            }
        };
        // A container that never started has no log. The pod's status says so before any log
        // request: the apiserver answers an empty 200 for a pod no node was assigned, which
        // must not read as "the agent printed nothing".
        if !options.previous
            && let Some(why) = not_started(state.as_ref())
        {
            return Err(LogsError::NotStarted {
                agent: agent.name().to_owned(),
                pod: pod_name,
                message: why,
            });
        }
        let mut resume = Resume::default();
        let mut first = true;
        let mut failures = 0u32;
        loop {
            let params = LogParams {
                container: Some(CONTAINER_NAME.to_owned()),
                follow: options.follow,
                previous: options.previous,
                since_seconds: if first {
                    options.since_seconds.and_then(|s| i64::try_from(s).ok())
                } else {
                    None
                },
                // kube rounds sinceTime to whole seconds: lines from that second on come again
                // and `Resume` skips the ones already shown.
                since_time: if first { None } else { resume.last },
                tail_lines: if first {
                    options.tail_lines.and_then(|n| i64::try_from(n).ok())
                } else {
                    None
                },
                timestamps: true,
                ..LogParams::default()
            };
            let mut skip_at_last = resume.at_last;
            // Whether the stream opened: a refusal to open is an answer, a break after it is a
            // reason to reconnect when following.
            let mut opened = false;
            let read = async {
                let stream = self.pods.log_stream(&pod_name, &params).await?;
                opened = true;
                let mut lines = stream.lines();
                while let Some(line) = lines.try_next().await.map_err(kube::Error::ReadEvents)? {
                    let (at, text) = split_timestamp(&line);
                    if !first_pass_or_new(&mut resume, at, &mut skip_at_last) {
                        continue;
                    }
                    sink(text);
                }
                Ok::<(), kube::Error>(())
            };
            let outcome = read.await;
            match outcome {
                Ok(()) => failures = 0,
                Err(kube::Error::Api(status)) if first && status.code == 400 => {
                    return Err(LogsError::NotStarted {
                        agent: agent.name().to_owned(),
                        pod: pod_name,
                        message: format!("the apiserver answered: {}", status.message),
                    });
                }
                Err(error) if (first && !opened) || !options.follow => {
                    return Err(self.failed(Operation::ReadPodLog, &pod_name, &error));
                }
                Err(error) => {
                    failures += 1;
                    tracing::debug!(error = %crate::exchange::describe_kube_error(&error), failures, "log stream broke");
                    if failures > MAX_RECONNECTS {
                        return Err(self.gave_up(
                            Operation::ReadPodLog,
                            &pod_name,
                            &error,
                            failures,
                        ));
                    }
                }
            }
            first = false;
            if !options.follow || options.previous {
                return Ok(LogsEnd::Complete);
            }
            // The stream ended or broke: a fresh quorum read says whether there is more.
            match self.pods.get_opt(&pod_name).await {
                Ok(None) => return Ok(LogsEnd::PodGone),
                Ok(Some(pod)) if pod.metadata.uid.as_deref() != Some(uid.as_str()) => {
                    return Ok(LogsEnd::PodReplaced);
                }
                Ok(Some(pod)) => {
                    let observed = observe_pod(&pod, agent.binding());
                    if matches!(
                        observed.facts.agent,
                        Some(ContainerState::Terminated { .. })
                    ) && failures == 0
                    {
                        return Ok(LogsEnd::Complete);
                    }
                }
                Err(error) => {
                    failures += 1;
                    tracing::debug!(error = %crate::exchange::describe_kube_error(&error), failures, "pod read failed");
                    if failures > MAX_RECONNECTS {
                        return Err(self.gave_up(Operation::GetPod, &pod_name, &error, failures));
                    }
                }
            }
            tracing::debug!(pod = %pod_name, "log stream ended while the container runs; reconnecting");
            if failures > 0 {
                let backoff = FIRST_BACKOFF
                    .saturating_mul(1 << (failures - 1).min(5))
                    .min(Duration::from_secs(8));
                tokio::time::sleep(backoff).await;
            }
        }
    }

    /// `operation` on `pod` failed with `error`, in the typed vocabulary of failures.
    fn failed(&self, operation: Operation, pod: &str, error: &kube::Error) -> LogsError {
        LogsError::Failed(self.failure(operation, pod, error))
    }

    fn failure(&self, operation: Operation, pod: &str, error: &kube::Error) -> RequestFailure {
        let object = format!("{}/{pod}", self.namespace);
        crate::exchange::request_failure(operation, &object, error)
    }

    /// A follow gave up: `failures` reconnects in a row failed, the last with `error`.
    fn gave_up(
        &self,
        operation: Operation,
        pod: &str,
        error: &kube::Error,
        failures: u32,
    ) -> LogsError {
        LogsError::Failed(self.failure(operation, pod, error).with_hint(format_args!(
            "the log stream broke {failures} times in a row while following; run `apiary logs \
             -f` again to go on"
        )))
    }

    /// The uid of `agent`'s pod and its container's state when it verifies; `None` when absent.
    async fn verified(
        &self,
        agent: &AgentIdentity,
        pod_name: &str,
    ) -> Result<Option<(String, Option<ContainerState>)>, LogsError> {
        let pod = self
            .pods
            .get_opt(pod_name)
            .await
            .map_err(|error| self.failed(Operation::GetPod, pod_name, &error))?;
        let Some(pod) = pod else {
            return Ok(None);
        };
        match verify_pod(&observe_pod(&pod, agent.binding()), &agent.owner()) {
            Some(verified) => Ok(Some((
                verified.fence().uid().to_owned(),
                verified.facts().agent.clone(),
            ))),
            None => Err(LogsError::Foreign {
                agent: agent.name().to_owned(),
                pod: pod_name.to_owned(),
                namespace: self.namespace.clone(),
            }),
        }
    }
}

/// Why the container has no log yet, from its observed state; `None` once it ran.
fn not_started(state: Option<&ContainerState>) -> Option<String> {
    match state {
        Some(ContainerState::Running | ContainerState::Terminated { .. }) => None,
        Some(ContainerState::Waiting {
            reason: Some(reason),
            ..
        }) => Some(format!(
            "container \"{CONTAINER_NAME}\" has not started: it is waiting ({reason})"
        )),
        Some(ContainerState::Waiting { reason: None, .. } | ContainerState::Empty) | None => {
            Some(format!(
                "container \"{CONTAINER_NAME}\" has not started: the pod reports no running or \
                 finished container yet"
            ))
        }
    }
}

/// Whether a line is to be shown: every line of the first stream, and after a reconnect only
/// those newer than what was shown.
fn first_pass_or_new(resume: &mut Resume, at: Option<Timestamp>, skip_at_last: &mut usize) -> bool {
    !resume.seen(at, skip_at_last)
}

#[cfg(test)]
mod tests {
    //! The timestamp split and the resume rule.

    use super::*;

    /// The endpoint's `timestamps=true` prefix is split off; a line without one is kept whole.
    #[test]
    fn timestamps_are_split_off() {
        let (at, text) = split_timestamp("2026-08-02T10:00:01.5Z hello world");
        assert_eq!(at, Some("2026-08-02T10:00:01.5Z".parse().expect("ts")));
        assert_eq!(text, "hello world");
        assert_eq!(split_timestamp("no stamp here"), (None, "no stamp here"));
        let (at, text) = split_timestamp("2026-08-02T10:00:01Z");
        assert!(at.is_some());
        assert_eq!(text, "");
    }

    /// After a reconnect, lines older than the last shown are skipped, and at the last shown
    /// instant exactly as many as were shown; newer lines pass.
    #[test]
    fn a_reconnect_skips_exactly_what_was_shown() {
        let t = |s: &str| Some(s.parse::<Timestamp>().expect("ts"));
        let mut resume = Resume::default();
        let mut none = 0;
        for at in [
            "2026-01-01T00:00:01Z",
            "2026-01-01T00:00:02Z",
            "2026-01-01T00:00:02Z",
        ] {
            assert!(first_pass_or_new(&mut resume, t(at), &mut none));
        }
        assert_eq!(resume.at_last, 2);
        // The reconnect replays from second 1 (sinceTime is whole seconds).
        let mut skip = resume.at_last;
        let replay = [
            ("2026-01-01T00:00:01Z", false),
            ("2026-01-01T00:00:02Z", false),
            ("2026-01-01T00:00:02Z", false),
            ("2026-01-01T00:00:02Z", true),
            ("2026-01-01T00:00:03Z", true),
        ];
        for (at, shown) in replay {
            assert_eq!(
                first_pass_or_new(&mut resume, t(at), &mut skip),
                shown,
                "{at}"
            );
        }
    }
}
