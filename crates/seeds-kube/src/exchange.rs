//! The one HTTP exchange layer of apiary's kube-rs shells: every request `PodSeeds` sends, and
//! every request `apiary-substrate-kube`'s `Cluster` sends (through its retrying loop around
//! [`fetch`]), goes through [`open`] or [`fetch`], so status, headers and body are read in one
//! place and a refusal is described by one rule.
//!
//! Layer: the imperative shell's I/O. It sends, bounds each attempt by a time limit, reads the
//! body and splits a 2xx from a refusal; how a refusal's body is decoded is the pure
//! [`decode`] module's, what a refusal *means* for a deploy is decided by
//! `apiary-substrate-kube`'s own mapping and retry modules, and what a 2xx body holds by the
//! caller's decoder. It keeps no state and must never log or return a request or response body.
//!
//! It lives in this crate, not in `apiary-substrate-kube`, so that seed discovery builds without
//! any deploy code while both shells keep one quoting rule (ARCHITECTURE.md, `crates/seeds-kube`).
//! It is public for `apiary-substrate-kube` only and hidden from the documentation: it is not
//! part of seed discovery's API.
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
//!    ([`decode::decode_refusal`]), because a body nobody specified could echo anything, the
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

pub mod decode;

use std::time::Duration;

use bytes::Bytes;
use kube::client::Body;
use tokio::time::Instant;

use decode::Refusal;

/// A 2xx answer, read whole. No `Debug`: the body may hold a Secret's values.
pub struct Reply {
    /// The answer's headers (the `Date` header is the server's clock).
    pub headers: http::HeaderMap,
    /// The answer's body.
    pub body: Bytes,
}

/// Why one attempt got no 2xx answer.
#[derive(Debug)]
pub enum Miss {
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
    /// The miss as the `kube::Error` seed discovery reports: a refusal is `Error::Api` with the
    /// decoded `Status` fields, a timeout is `Error::Service`.
    pub fn into_kube_error(self) -> kube::Error {
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
pub struct TimedOut(Duration);

impl TimedOut {
    /// The attempt's limit.
    pub fn limit(&self) -> Duration {
        self.0
    }
}

/// A refused request in words, by the quoting rule: `403 Forbidden: pods is forbidden: …`. An
/// empty reason (the body was no `Status`) reads as the HTTP reason phrase.
pub fn describe_refusal(code: u16, reason: &str, message: &str) -> String {
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
pub fn describe_kube_error(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) => {
            let (reason, message) = status_words(status);
            describe_refusal(status.code, reason, message)
        }
        other => decode::describe_chain(other),
    }
}

/// kube's own words for a refusal whose body was no `Status`: it makes one up with the body as
/// its message (requests it sends itself, such as the log stream, do not pass through
/// [`open`]).
const KUBE_UNPARSED_REASON: &str = "Failed to parse error data";

/// A refusal's reason and message by the quoting rule: a `Status` that kube reconstructed from
/// a body that was none keeps neither (its message is that body, which is never quoted).
pub fn status_words(status: &kube::core::Status) -> (&str, &str) {
    if status.reason == KUBE_UNPARSED_REASON {
        ("", "")
    } else {
        (&status.reason, &status.message)
    }
}

/// Sends `request` and returns the streaming answer of a 2xx. A non-2xx answer's body is read
/// (within the same `limit`) and decoded into a refusal.
///
/// # Errors
/// [`Miss::Refused`] for a non-2xx answer, [`Miss::TimedOut`] when `limit` passed first,
/// [`Miss::Client`] when the client failed before a whole answer arrived.
pub async fn open(
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
        refusal: decode::decode_refusal(parts.status.as_u16(), &body),
        retry_after: parts
            .headers
            .get(http::header::RETRY_AFTER)
            .and_then(|value| value.to_str().ok())
            .and_then(decode::parse_retry_after),
    })
}

/// One attempt: sends `request` and reads the whole answer within `limit`.
///
/// # Errors
/// As [`open`]; a body that breaks off or outlasts `limit` is a miss too.
pub async fn fetch(
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
