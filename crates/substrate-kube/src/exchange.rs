//! The deploy shell's side of the one HTTP exchange layer: every request `Cluster` sends goes
//! through `apiary-seeds-kube`'s `exchange` ([`open`] or [`fetch`], re-exported here) and, for a
//! request that may be retried, through [`retrying`] around `fetch`, so status, headers and body
//! are read in one place and a refusal is described by one rule, the quoting rule, which that
//! module states and seed discovery follows too.
//!
//! Layer: the imperative shell's I/O. It sends, bounds each attempt by a time limit and waits
//! between attempts; what a refusal *means* is decided by the pure `cluster::mapping` and
//! `cluster::retry` modules, and what a 2xx body holds by the caller's decoder. It keeps no state
//! and must never log or return a request or response body.

use apiary_classify::failure::{Operation, TransportCause};
use tokio::time::Instant;

pub(crate) use apiary_seeds_kube::exchange::{
    Miss, Reply, TimedOut, describe_kube_error, describe_refusal, fetch,
};

use crate::cluster::mapping::{self, Failure, TransportKind};
use crate::cluster::retry::{
    AFTER_OUTAGE, Readiness, RetryPolicy, Window, needs_ready_server, rbac_refusal_is_transient,
    shows_an_outage,
};

/// A miss in the vocabulary of the pure mapping and retry decisions.
pub(crate) fn failure_of(miss: Miss) -> Failure {
    match miss {
        Miss::Refused {
            refusal,
            retry_after,
        } => Failure::Refused {
            refusal,
            retry_after,
        },
        Miss::Client(error) => mapping::classify_kube_error(&error),
        Miss::TimedOut(limit) => Failure::Transport {
            kind: TransportKind::Timeout,
            cause: TransportCause::TimedOut(limit),
            message: format!("no answer within {} ms", limit.as_millis()),
        },
    }
}

/// A `kube::Error` of `operation` on `object` as the typed failure a person's message is built
/// from (docs/errors.md): an apiserver refusal keeps its code, reason and message apart (never
/// kube's `Display`, which appends the `Status`'s `Debug` form); anything else is a transport
/// failure with its cause in plain words (an attempt that ran out of time says its limit) and
/// its chain of causes as the detail.
pub fn request_failure(
    operation: Operation,
    object: &str,
    error: &kube::Error,
) -> apiary_classify::failure::RequestFailure {
    use apiary_classify::failure::RequestFailure;
    if let kube::Error::Api(status) = error {
        let (reason, message) = apiary_seeds_kube::exchange::status_words(status);
        return RequestFailure::answered(operation, object, status.code, reason, message);
    }
    let timed_out = match error {
        kube::Error::Service(inner) => inner.downcast_ref::<TimedOut>().map(TimedOut::limit),
        _ => None,
    };
    let cause = match (timed_out, mapping::classify_kube_error(error)) {
        (Some(limit), _) => TransportCause::TimedOut(limit),
        (None, Failure::Transport { cause, .. }) => cause,
        (None, Failure::Refused { .. }) => TransportCause::Other,
    };
    RequestFailure::lost(operation, object, cause, describe_kube_error(error))
}

/// The end of a retried exchange: the last attempt's result, and whether any attempt was
/// retried (a Secret create's `AlreadyExists` after a retry is its own earlier attempt).
pub(crate) struct Exchanged {
    /// The 2xx answer, or the failure that ended the exchange.
    pub(crate) result: Result<Reply, Failure>,
    /// Whether more than one attempt was sent.
    pub(crate) retried: bool,
}

/// Sends `request` until it succeeds, fails finally, or `window` closes (`policy`'s budget, or
/// the operation's deadline: `retry::Window`); `jitter` draws the random word of each backoff.
/// `operation` and `object` only name the retries in the debug log.
pub(crate) async fn retrying(
    client: &kube::Client,
    policy: &RetryPolicy,
    mut window: Window,
    jitter: impl Fn() -> u64,
    request: &http::Request<Vec<u8>>,
    operation: Operation,
    object: &str,
) -> Exchanged {
    let started = Instant::now();
    let mut retry = 0u32;
    let mut last: Option<Failure> = None;
    // deploy.md § Who refused it: whether `/readyz` has shown the server ready in this exchange
    // (then an RBAC 403 is final), and whether the wait for it was said.
    let mut seen_ready = false;
    let mut said_starting = false;
    loop {
        let failure = match window.attempt_limit(policy, started.elapsed()) {
            // The budget ran out while waiting: the last real failure says more.
            None => last
                .take()
                .unwrap_or_else(|| window_closed(policy, &window)),
            Some(limit) => match fetch(client, request, limit).await {
                Ok(reply) => {
                    return Exchanged {
                        result: Ok(reply),
                        retried: retry > 0,
                    };
                }
                Err(miss) => failure_of(miss),
            },
        };
        if shows_an_outage(&failure) {
            saw_an_outage();
        }
        let not_ready = needs_ready_server(&failure)
            && if recent_outage() {
                rbac_refusal_is_transient(true, Readiness::Unknown)
            } else if seen_ready {
                false
            } else {
                let now = readiness(client, policy, &window, started).await;
                seen_ready = now != Readiness::NotReady;
                if now == Readiness::NotReady {
                    saw_an_outage();
                }
                rbac_refusal_is_transient(false, now)
            };
        if not_ready {
            window = window.while_starting(policy);
        }
        if not_ready && !std::mem::replace(&mut said_starting, true) {
            tracing::warn!(
                "the API server refused {operation} {object} with RBAC's words while it is \
                 starting (it was down or not ready moments ago, and may not have loaded its \
                 authorization yet): retrying"
            );
        }
        let delay = if not_ready {
            window.not_ready_delay(policy, retry, started.elapsed(), jitter())
        } else {
            window.next_delay(policy, retry, &failure, started.elapsed(), jitter())
        };
        let Some(delay) = delay else {
            return Exchanged {
                result: Err(failure),
                retried: retry > 0,
            };
        };
        tracing::debug!(
            %operation,
            object,
            retry,
            delay_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            failure = %describe_failure(&failure),
            "transient failure, retrying"
        );
        tokio::time::sleep(delay).await;
        last = Some(failure);
        retry += 1;
    }
}

/// When this process last saw the API server down or not ready (deploy.md § Who refused it).
/// Process-wide, as the server is: every exchange of the operation learns from every other.
static LAST_OUTAGE: std::sync::Mutex<Option<Instant>> = std::sync::Mutex::new(None);

fn saw_an_outage() {
    if let Ok(mut last) = LAST_OUTAGE.lock() {
        *last = Some(Instant::now());
    }
}

fn recent_outage() -> bool {
    LAST_OUTAGE
        .lock()
        .ok()
        .and_then(|last| *last)
        .is_some_and(|at| at.elapsed() < AFTER_OUTAGE)
}

/// One `GET /readyz` (every user may read it, through `system:public-info-viewer`), bounded like
/// an attempt: whether the server that answered a 403 was ready.
async fn readiness(
    client: &kube::Client,
    policy: &RetryPolicy,
    window: &Window,
    started: Instant,
) -> Readiness {
    let Some(limit) = window.attempt_limit(policy, started.elapsed()) else {
        return Readiness::Unknown;
    };
    let Ok(request) = http::Request::get("/readyz").body(Vec::new()) else {
        return Readiness::Unknown;
    };
    match fetch(client, &request, limit).await {
        Ok(_) => Readiness::Ready,
        Err(Miss::Refused { refusal, .. }) => Readiness::of(Some(refusal.code)),
        Err(_) => Readiness::of(None),
    }
}

/// The failure reported when the window closed before an attempt could start: the operation's
/// deadline had passed by more than one request, or the budget ran out while waiting.
fn window_closed(policy: &RetryPolicy, window: &Window) -> Failure {
    if window.ends_by != policy.budget {
        return Failure::Transport {
            kind: TransportKind::Timeout,
            cause: TransportCause::Other,
            message: "not sent: the operation's deadline had passed".to_owned(),
        };
    }
    Failure::Transport {
        kind: TransportKind::Timeout,
        cause: TransportCause::TimedOut(policy.budget),
        message: format!(
            "no answer within the {} ms request budget",
            policy.budget.as_millis()
        ),
    }
}

/// A failure in words for logs, by the quoting rule.
fn describe_failure(failure: &Failure) -> String {
    match failure {
        Failure::Refused { refusal, .. } => {
            describe_refusal(refusal.code, &refusal.reason, &refusal.message)
        }
        Failure::Transport { message, .. } => message.clone(),
    }
}

#[cfg(test)]
mod tests;
