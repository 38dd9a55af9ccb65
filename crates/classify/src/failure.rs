//! A failed request, as the decisions see it (deploy.md § Errors, E9–E12): the status code and
//! `Status.reason` when the apiserver answered, or no answer at all.
//!
//! Pure data with `Display`. The shell maps its own error type onto this one; the machines branch
//! on the typed fields (a transport failure is never a confirmed answer) and the CLI adds hints
//! from them (a 403 from RBAC names the role to apply). It never carries an env value: the
//! message is the shell's own wording of a request that never echoes a Secret payload.

use std::fmt;

/// One failed request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestFailure {
    code: Option<u16>,
    reason: Option<String>,
    message: String,
    transport: bool,
}

impl RequestFailure {
    /// The apiserver answered `code` with `Status.reason` `reason` (empty when absent);
    /// `message` is the whole failure in words (it names the operation and the object).
    pub fn api(code: u16, reason: impl Into<String>, message: impl Into<String>) -> Self {
        RequestFailure {
            code: Some(code),
            reason: Some(reason.into()),
            message: message.into(),
            transport: false,
        }
    }

    /// No usable answer (connection refused or reset, timeout, an undecodable body).
    pub fn transport(message: impl Into<String>) -> Self {
        RequestFailure {
            code: None,
            reason: None,
            message: message.into(),
            transport: true,
        }
    }

    /// The request was never sent: what it needed could not be made (no generation could be
    /// minted from the OS random source). Neither an answer nor a lost one.
    pub fn unsent(message: impl Into<String>) -> Self {
        RequestFailure {
            code: None,
            reason: None,
            message: message.into(),
            transport: false,
        }
    }

    /// The same failure with `hint` (the fix a person can apply) appended to its message.
    #[must_use]
    pub fn with_hint(mut self, hint: impl fmt::Display) -> Self {
        self.message = format!("{}; {hint}", self.message);
        self
    }

    /// The HTTP status code, when the apiserver answered.
    pub fn code(&self) -> Option<u16> {
        self.code
    }

    /// `Status.reason` verbatim, when the apiserver answered (empty when it gave none).
    pub fn reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }

    /// Whether no answer came back (the request may or may not have landed).
    pub fn is_transport(&self) -> bool {
        self.transport
    }

    /// Whether the apiserver refused the request as `403 Forbidden` (RBAC or admission).
    pub fn is_forbidden(&self) -> bool {
        self.code == Some(403)
    }

    /// The failure in words.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for RequestFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RequestFailure {}

#[cfg(test)]
mod tests {
    //! The two shapes of a failure and what they answer.

    use super::*;

    /// An answered refusal keeps its code and reason; a transport failure has neither.
    #[test]
    fn answered_and_unanswered_failures_differ() {
        let refused = RequestFailure::api(403, "Forbidden", "could not read pod pod/p: no");
        assert_eq!(refused.code(), Some(403));
        assert_eq!(refused.reason(), Some("Forbidden"));
        assert!(refused.is_forbidden());
        assert!(!refused.is_transport());
        assert_eq!(refused.to_string(), "could not read pod pod/p: no");

        let lost = RequestFailure::transport("connection reset");
        assert_eq!(lost.code(), None);
        assert_eq!(lost.reason(), None);
        assert!(lost.is_transport());
        assert!(!lost.is_forbidden());
        assert_eq!(lost.message(), "connection reset");
        assert!(!RequestFailure::api(500, "", "x").is_forbidden());

        let unsent = RequestFailure::unsent("no randomness");
        assert!(!unsent.is_transport());
        assert_eq!(unsent.code(), None);
        let hinted = RequestFailure::api(403, "Forbidden", "denied").with_hint("ask");
        assert_eq!(hinted.to_string(), "denied; ask");
        assert_eq!(hinted.code(), Some(403));
    }
}
