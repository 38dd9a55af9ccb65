//! The pure half of the exchange layer: a non-2xx answer's body decoded by the quoting rule
//! (stated in the `exchange` module's documentation), the `Retry-After` header read, and an
//! error's chain of causes described in one line.
//!
//! Layer: pure functions over plain values (status codes, header strings, body bytes). Performs
//! no I/O, reads no clock and holds no client; the mutation run covers this module completely.
//! It must never quote a body that is not a `Status`.

use std::time::Duration;

/// A non-2xx answer, decoded from its `Status` body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The HTTP status code of the response.
    pub code: u16,
    /// `Status.reason` verbatim; empty when absent or when the body is not a `Status`.
    pub reason: String,
    /// `Status.message` verbatim, or a description of the missing `Status` body.
    pub message: String,
}

/// Decode a non-2xx answer. The body should be a `Status`; when it is not (a proxy's page, an
/// empty body) the reason is empty and the message says so without quoting the body, because a
/// body nobody specified could echo anything.
pub fn decode_refusal(code: u16, body: &[u8]) -> Refusal {
    match serde_json::from_slice::<kube::core::Status>(body) {
        Ok(status) => Refusal {
            code,
            reason: status.reason,
            message: if status.message.is_empty() {
                "no message".to_owned()
            } else {
                status.message
            },
        },
        Err(_) => Refusal {
            code,
            reason: String::new(),
            message: format!("the response carried no Status body ({} bytes)", body.len()),
        },
    }
}

/// Describe an error and its causes in one line, skipping a cause whose text the message
/// already contains (kube's errors repeat their source in their own text).
pub fn describe_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// Parse a `Retry-After` value in its delta-seconds form (the form the apiserver sends).
/// An HTTP-date or anything else is `None`, and the plain backoff applies.
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value.parse().ok().map(Duration::from_secs)
}

#[cfg(test)]
mod tests;
