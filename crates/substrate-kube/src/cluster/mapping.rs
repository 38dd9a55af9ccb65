//! Response mapping: how an apiserver answer becomes an outcome or an error
//! (deploy.md § Cluster interface and requests, § Semantics relied on).
//!
//! Layer: pure functions over plain values (status codes, header strings, body bytes). Performs
//! no I/O, reads no clock and holds no client; `cluster` calls these after each exchange, and the
//! mutation run covers this module completely. It must never match a reason by HTTP code: a 409
//! is split on `Status.reason` only, and an empty reason matches nothing.

use std::time::Duration;

use apiary_classify::failure::{Operation, RequestFailure, TransportCause};
use apiary_classify::stuck::NodeFacts;
pub use apiary_seeds_kube::exchange::decode::{Refusal, describe_chain};
use apiary_substrate::{CreateAnswer, DeleteAnswer};
use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, NaiveTime, Utc, Weekday};
use k8s_openapi::api::core::v1::Node;

/// `Status.reason` of a create that lost to an existing object of the same name.
pub const REASON_ALREADY_EXISTS: &str = "AlreadyExists";
/// `Status.reason` of a failed delete precondition (uid or resourceVersion).
pub const REASON_CONFLICT: &str = "Conflict";
/// `Status.reason` of a confirmed absence.
pub const REASON_NOT_FOUND: &str = "NotFound";
/// `Status.reason` of a request the caller may not make.
pub const REASON_FORBIDDEN: &str = "Forbidden";

/// What went wrong with no usable answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransportKind {
    /// The connection failed or dropped before a whole answer arrived.
    Connection,
    /// No answer arrived within the attempt's time limit.
    Timeout,
    /// A whole answer arrived but its body could not be decoded.
    Undecodable,
    /// Anything else (building the request, authentication, a client-side refusal).
    Other,
}

/// Why one attempt of an exchange failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The apiserver answered with an error status.
    Refused {
        /// The decoded answer.
        refusal: Refusal,
        /// The `Retry-After` delay the answer asked for, if any.
        retry_after: Option<Duration>,
    },
    /// No usable answer.
    Transport {
        /// What kind of failure (what the retry decision reads).
        kind: TransportKind,
        /// The cause in the words a person acts on (what the message says).
        cause: TransportCause,
        /// What went wrong, in the client's words (never a request or response body).
        message: String,
    },
}

impl Failure {
    /// The refusal, when the apiserver answered.
    pub fn refusal(&self) -> Option<&Refusal> {
        match self {
            Self::Refused { refusal, .. } => Some(refusal),
            Self::Transport { .. } => None,
        }
    }

    /// Whether the apiserver answered with exactly this `Status.reason`. A transport failure has
    /// no reason and an empty reason matches nothing, so a reset connection can never read as a
    /// confirmed absence (deploy.md § Semantics relied on, item 1).
    pub fn has_reason(&self, reason: &str) -> bool {
        self.refusal()
            .is_some_and(|refusal| !refusal.reason.is_empty() && refusal.reason == reason)
    }

    /// The failure a caller sees: it names the operation and the object.
    pub fn into_failure(self, operation: Operation, object: impl Into<String>) -> RequestFailure {
        match self {
            Self::Refused { refusal, .. } => RequestFailure::answered(
                operation,
                object,
                refusal.code,
                refusal.reason,
                refusal.message,
            ),
            Self::Transport { cause, message, .. } => {
                RequestFailure::lost(operation, object, cause, message)
            }
        }
    }
}

/// A create's refusal that is an outcome: only reason `AlreadyExists` (the name is taken).
pub fn create_answer(failure: &Failure) -> Option<CreateAnswer> {
    failure
        .has_reason(REASON_ALREADY_EXISTS)
        .then_some(CreateAnswer::AlreadyExists)
}

/// A Secret create that answered `AlreadyExists` after an earlier attempt of the same exchange
/// got no usable answer created the Secret itself: the name is this attempt's alone, so the
/// earlier attempt landed. Any other combination is reported as answered.
pub fn secret_create_answer(outcome: CreateAnswer, retried: bool) -> CreateAnswer {
    match outcome {
        CreateAnswer::AlreadyExists if retried => CreateAnswer::Created,
        other => other,
    }
}

/// A delete's refusal that is an outcome: `NotFound` (already gone) or `Conflict` (a
/// precondition failed: re-classify, never retry with a fresher fence).
pub fn delete_answer(failure: &Failure) -> Option<DeleteAnswer> {
    if failure.has_reason(REASON_NOT_FOUND) {
        Some(DeleteAnswer::NotFound)
    } else if failure.has_reason(REASON_CONFLICT) {
        Some(DeleteAnswer::PreconditionFailed)
    } else {
        None
    }
}

/// Whether a read's refusal is a confirmed absence (reason `NotFound`).
pub fn is_absent(failure: &Failure) -> bool {
    failure.has_reason(REASON_NOT_FOUND)
}

/// What a read of a stuck pod's node shows (deploy.md § When a pod will not go away): the node's
/// `Ready` condition when it was read; otherwise the refusal split on its literal `Status.reason`
/// (`NotFound` is a node that is gone, `Forbidden` a user who may not read nodes, skipped silently;
/// any other reason is nothing to say), and nothing to say for a read with no usable answer.
pub fn node_facts(answer: Result<&Node, &Failure>) -> NodeFacts {
    match answer {
        Ok(node) => apiary_substrate::observe::node_facts(node),
        Err(failure) => failure.refusal().map_or(NodeFacts::Unknown, |refusal| {
            NodeFacts::refused(&refusal.reason)
        }),
    }
}

/// The next step of namespace ensure after the GET (deploy.md § Namespace ensure).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AfterNamespaceGet {
    /// The namespace exists: done.
    Exists,
    /// The namespace is absent: create it.
    Create,
    /// Reading namespaces is forbidden: continue without ensuring; a missing namespace surfaces
    /// at the Secret create.
    Continue,
    /// Any other failure: E9.
    Fail(Failure),
}

/// Map the namespace GET's answer (`Ok` = 2xx).
pub fn after_namespace_get(answer: Result<(), Failure>) -> AfterNamespaceGet {
    match answer {
        Ok(()) => AfterNamespaceGet::Exists,
        Err(failure) if failure.has_reason(REASON_NOT_FOUND) => AfterNamespaceGet::Create,
        Err(failure) if failure.has_reason(REASON_FORBIDDEN) => AfterNamespaceGet::Continue,
        Err(failure) => AfterNamespaceGet::Fail(failure),
    }
}

/// The result of the namespace create.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AfterNamespaceCreate {
    /// Created, or created concurrently by someone else (`AlreadyExists`).
    Done,
    /// Creating is forbidden: E11, naming `kubectl create namespace <ns>`.
    Forbidden,
    /// Any other failure: E9.
    Fail(Failure),
}

/// Map the namespace create's answer (`Ok` = 2xx).
pub fn after_namespace_create(answer: Result<(), Failure>) -> AfterNamespaceCreate {
    match answer {
        Ok(()) => AfterNamespaceCreate::Done,
        Err(failure) if failure.has_reason(REASON_ALREADY_EXISTS) => AfterNamespaceCreate::Done,
        Err(failure) if failure.has_reason(REASON_FORBIDDEN) => AfterNamespaceCreate::Forbidden,
        Err(failure) => AfterNamespaceCreate::Fail(failure),
    }
}

/// Parse an HTTP `Date` value in IMF-fixdate form (`Sun, 02 Aug 2026 04:00:00 GMT`, RFC 9110
/// § Date/Time Formats) as UTC. Anything else, including the obsolete forms, a wrong weekday or
/// an impossible date, is `None`: a clock the apiserver did not state unambiguously is no clock,
/// and the orphan sweep then skips (deploy.md § Age gate).
pub fn parse_imf_fixdate(value: &str) -> Option<DateTime<Utc>> {
    let bytes = value.as_bytes();
    // ASCII first, so the fixed byte offsets below are character boundaries.
    if !value.is_ascii()
        || bytes.len() != 29
        || &value[3..5] != ", "
        || bytes[7] != b' '
        || bytes[11] != b' '
        || bytes[16] != b' '
        || bytes[19] != b':'
        || bytes[22] != b':'
        || &value[25..] != " GMT"
    {
        return None;
    }
    let weekday = weekday_of(&value[..3])?;
    let day = digits(&value[5..7])?;
    let month = month_of(&value[8..11])?;
    let year = digits(&value[12..16])?;
    let hour = digits(&value[17..19])?;
    let minute = digits(&value[20..22])?;
    let second = digits(&value[23..25])?;
    let date = NaiveDate::from_ymd_opt(i32::try_from(year).ok()?, month, day)?;
    if date.weekday() != weekday {
        return None;
    }
    let time = NaiveTime::from_hms_opt(hour, minute, second)?;
    Some(NaiveDateTime::new(date, time).and_utc())
}

/// A field of ASCII digits only (no sign, no spaces), as a number.
fn digits(field: &str) -> Option<u32> {
    if field.bytes().all(|b| b.is_ascii_digit()) {
        field.parse().ok()
    } else {
        None
    }
}

/// The IMF-fixdate day name, case-sensitive.
fn weekday_of(name: &str) -> Option<Weekday> {
    Some(match name {
        "Mon" => Weekday::Mon,
        "Tue" => Weekday::Tue,
        "Wed" => Weekday::Wed,
        "Thu" => Weekday::Thu,
        "Fri" => Weekday::Fri,
        "Sat" => Weekday::Sat,
        "Sun" => Weekday::Sun,
        _ => return None,
    })
}

/// The IMF-fixdate month name, case-sensitive, as 1–12.
fn month_of(name: &str) -> Option<u32> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    MONTHS
        .iter()
        .position(|month| *month == name)
        .and_then(|index| u32::try_from(index + 1).ok())
}

/// Classify a `kube::Error` from a request that got no decodable answer.
pub fn classify_kube_error(error: &kube::Error) -> Failure {
    let message = describe_chain(error);
    match error {
        kube::Error::Api(status) => Failure::Refused {
            refusal: Refusal {
                code: status.code,
                reason: status.reason.clone(),
                message: status.message.clone(),
            },
            retry_after: None,
        },
        kube::Error::HyperError(_) | kube::Error::Service(_) | kube::Error::ReadEvents(_) => {
            Failure::Transport {
                kind: TransportKind::Connection,
                cause: transport_cause(error),
                message,
            }
        }
        kube::Error::SerdeError(_) | kube::Error::FromUtf8(_) => Failure::Transport {
            kind: TransportKind::Undecodable,
            cause: TransportCause::Other,
            message,
        },
        _ => Failure::Transport {
            kind: TransportKind::Other,
            cause: transport_cause(error),
            message,
        },
    }
}

/// The cause of a failed exchange in the words a person acts on, read from the error's chain of
/// sources: a refused TCP connection (by its `io::ErrorKind`, whatever the OS's wording), then
/// the chain's words: a certificate the kubeconfig's authority does not vouch for (rustls says
/// `invalid peer certificate` for every rejected certificate), a host name that does not
/// resolve; anything else is `Other` (its chain says what).
pub fn transport_cause(error: &(dyn std::error::Error + 'static)) -> TransportCause {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(error);
    let mut words = String::new();
    while let Some(current) = next {
        if current
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
        {
            return TransportCause::ConnectionRefused;
        }
        words.push_str(&current.to_string().to_ascii_lowercase());
        words.push('\n');
        next = current.source();
    }
    cause_from_words(&words)
}

/// The cause as a chain's words say it, when no typed source did (hyper-util's DNS failures are
/// boxed strings).
fn cause_from_words(words: &str) -> TransportCause {
    if words.contains("connection refused") {
        TransportCause::ConnectionRefused
    } else if words.contains("dns error") || words.contains("failed to lookup address") {
        TransportCause::Dns
    } else if words.contains("invalid peer certificate") || words.contains("unknownissuer") {
        TransportCause::TlsNotTrusted
    } else {
        TransportCause::Other
    }
}

#[cfg(test)]
mod tests;
