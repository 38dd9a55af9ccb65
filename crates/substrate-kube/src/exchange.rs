//! The one HTTP exchange layer of this crate: every request `Cluster` and `PodSeeds` send goes
//! through [`open`] or [`fetch`] (and, for `Cluster`, [`retrying`] around `fetch`), so status,
//! headers and body are read in one place and a refusal is described by one rule.
//!
//! Layer: the imperative shell's I/O. It sends, bounds each attempt by a time limit, reads the
//! body and splits a 2xx from a refusal; what a refusal *means* is decided by the pure
//! `cluster::mapping` and `cluster::retry` modules, and what a 2xx body holds by the caller's
//! decoder. It keeps no state and must never log or return a request or response body.
//!
//! # The quoting rule
//!
//! What a person reads about a refused request is the apiserver's own words:
//!
//! 1. A non-2xx answer whose body is a `Status` is described by its code, its `reason` and its
//!    `message`, verbatim: the apiserver wrote the message for people ("pods is forbidden: User
//!    \"x\" cannot list resource \"pods\" …"), and it names the object, the cause and usually the
//!    fix.
//! 2. A non-2xx answer whose body is not a `Status` (a proxy's HTML page, an empty body, a
//!    gateway's echo) is never quoted: it is described by its code and its size only
//!    (`mapping::decode_refusal`), because a body nobody specified could echo anything, the
//!    request's Secret values included. Its reason is empty, so it matches no reason.
//! 3. A 2xx body that does not decode is described by the position of the problem, never its
//!    content (a Secret's body holds environment values).
//! 4. Nothing is ever shown in its `Debug` form: kube's `Error::Api` prints the whole `Status`
//!    struct after the message, so errors are described by [`describe_kube_error`], which reads
//!    the fields instead.
//!
//! Before this layer, seed discovery quoted a non-`Status` body as the refusal's message while
//! `Cluster` did not; rule 2 is the one kept, because it holds for every request, Secret
//! creates included.

use std::time::Duration;

use apiary_classify::failure::{Operation, TransportCause};
use bytes::Bytes;
use kube::client::Body;
use tokio::time::Instant;

use crate::cluster::mapping::{self, Failure, Refusal, TransportKind};
use crate::cluster::retry::{self, RetryPolicy, Window};

/// A 2xx answer, read whole.
pub(crate) struct Reply {
    /// The answer's headers (the `Date` header is the server's clock).
    pub(crate) headers: http::HeaderMap,
    /// The answer's body.
    pub(crate) body: Bytes,
}

/// Why one attempt got no 2xx answer.
#[derive(Debug)]
pub(crate) enum Miss {
    /// The apiserver answered with a non-2xx status, decoded by the quoting rule.
    Refused {
        /// The decoded answer.
        refusal: Refusal,
        /// The `Retry-After` delay the answer asked for, if any.
        retry_after: Option<Duration>,
    },
    /// The client failed before a whole answer arrived (connection, TLS, credentials, the body
    /// breaking off).
    Client(kube::Error),
    /// No whole answer arrived within the attempt's limit.
    TimedOut(Duration),
}

impl Miss {
    /// The miss in the vocabulary of the pure mapping and retry decisions.
    pub(crate) fn into_failure(self) -> Failure {
        match self {
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

    /// The miss as the `kube::Error` seed discovery reports: a refusal is `Error::Api` with the
    /// decoded `Status` fields, a timeout is `Error::Service`.
    pub(crate) fn into_kube_error(self) -> kube::Error {
        match self {
            Miss::Refused { refusal, .. } => kube::Error::Api(
                kube::core::Status::failure(&refusal.message, &refusal.reason)
                    .with_code(refusal.code)
                    .boxed(),
            ),
            Miss::Client(error) => error,
            Miss::TimedOut(limit) => kube::Error::Service(Box::new(TimedOut(limit))),
        }
    }
}

/// The error inside `kube::Error::Service` for an attempt that ran out of time.
#[derive(Debug, thiserror::Error)]
#[error("no answer within {} ms", .0.as_millis())]
pub(crate) struct TimedOut(Duration);

/// A refused request in words, by the quoting rule: `403 Forbidden: pods is forbidden: …`. An
/// empty reason (the body was no `Status`) reads as the HTTP reason phrase.
pub(crate) fn describe_refusal(code: u16, reason: &str, message: &str) -> String {
    let reason = if reason.is_empty() {
        http::StatusCode::from_u16(code)
            .ok()
            .and_then(|c| c.canonical_reason())
            .unwrap_or("")
    } else {
        reason
    };
    format!("the apiserver answered {code} {reason}: {message}")
}

/// A `kube::Error` in words for a person: an apiserver refusal by [`describe_refusal`] (never
/// kube's own `Display`, which appends the `Debug` form of the `Status`), anything else as its
/// chain of causes.
pub(crate) fn describe_kube_error(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => {
            let (reason, message) = status_words(status);
            describe_refusal(status.code, reason, message)
        }
        other => mapping::describe_chain(other),
    }
}

/// kube's own words for a refusal whose body was no `Status`: it makes one up with the body as
/// its message (requests it sends itself, such as the log stream, do not pass through
/// [`open`]).
const KUBE_UNPARSED_REASON: &str = "Failed to parse error data";

/// A refusal's reason and message by the quoting rule: a `Status` that kube reconstructed from
/// a body that was none keeps neither (its message is that body, which is never quoted).
fn status_words(status: &kube::core::Status) -> (&str, &str) {
    if status.reason == KUBE_UNPARSED_REASON {
        ("", "")
    } else {
        (&status.reason, &status.message)
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
        let (reason, message) = status_words(status);
        return RequestFailure::answered(operation, object, status.code, reason, message);
    }
    let timed_out = match error {
        kube::Error::Service(inner) => inner.downcast_ref::<TimedOut>().map(|t| t.0),
        _ => None,
    };
    let cause = match (timed_out, mapping::classify_kube_error(error)) {
        (Some(limit), _) => TransportCause::TimedOut(limit),
        (None, Failure::Transport { cause, .. }) => cause,
        (None, Failure::Refused { .. }) => TransportCause::Other,
    };
    RequestFailure::lost(operation, object, cause, describe_kube_error(error))
}

/// Sends `request` and returns the streaming answer of a 2xx. A non-2xx answer's body is read
/// (within the same `limit`) and decoded into a refusal.
pub(crate) async fn open(
    client: &kube::Client,
    request: &http::Request<Vec<u8>>,
    limit: Duration,
) -> Result<http::Response<Body>, Miss> {
    let deadline = Instant::now() + limit;
    let response = tokio::time::timeout_at(deadline, client.send(copy_request(request)))
        .await
        .map_err(|_| Miss::TimedOut(limit))?
        .map_err(Miss::Client)?;
    if response.status().is_success() {
        return Ok(response);
    }
    let (parts, body) = response.into_parts();
    let body = tokio::time::timeout_at(deadline, body.collect_bytes())
        .await
        .map_err(|_| Miss::TimedOut(limit))?
        .map_err(Miss::Client)?;
    Err(Miss::Refused {
        refusal: mapping::decode_refusal(parts.status.as_u16(), &body),
        retry_after: parts
            .headers
            .get(http::header::RETRY_AFTER)
            .and_then(|value| value.to_str().ok())
            .and_then(retry::parse_retry_after),
    })
}

/// One attempt: sends `request` and reads the whole answer within `limit`.
pub(crate) async fn fetch(
    client: &kube::Client,
    request: &http::Request<Vec<u8>>,
    limit: Duration,
) -> Result<Reply, Miss> {
    let deadline = Instant::now() + limit;
    let response = open(client, request, limit).await?;
    let (parts, body) = response.into_parts();
    let body = tokio::time::timeout_at(deadline, body.collect_bytes())
        .await
        .map_err(|_| Miss::TimedOut(limit))?
        .map_err(Miss::Client)?;
    Ok(Reply {
        headers: parts.headers,
        body,
    })
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
    window: Window,
    jitter: impl Fn() -> u64,
    request: &http::Request<Vec<u8>>,
    operation: Operation,
    object: &str,
) -> Exchanged {
    let started = Instant::now();
    let mut retry = 0u32;
    let mut last: Option<Failure> = None;
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
                Err(miss) => miss.into_failure(),
            },
        };
        let delay = window.next_delay(policy, retry, &failure, started.elapsed(), jitter());
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

/// The failure reported when the window closed before an attempt could start: the operation's
/// deadline had passed by more than one request, or the budget ran out while waiting.
fn window_closed(policy: &RetryPolicy, window: &Window) -> Failure {
    if window.ends_by < policy.budget {
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

/// A copy of `request` with kube's body type, for one attempt.
fn copy_request(request: &http::Request<Vec<u8>>) -> http::Request<Body> {
    let mut copy = http::Request::new(Body::from(request.body().clone()));
    *copy.method_mut() = request.method().clone();
    *copy.uri_mut() = request.uri().clone();
    *copy.headers_mut() = request.headers().clone();
    copy
}

#[cfg(test)]
mod tests;
