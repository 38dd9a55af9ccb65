//! A failed request, as the decisions and the CLI see it (deploy.md § Errors, E9–E12): which
//! request kind ([`Operation`]) on which object, and why — the apiserver's status code,
//! `Status.reason` and message, or no answer at all with its cause in plain words
//! ([`TransportCause`]).
//!
//! Pure data with `Display`. The shell maps its own error type onto this one; the machines branch
//! on the typed fields (a transport failure is never a confirmed answer) and the CLI builds its
//! message from the parts (docs/errors.md): what failed once, why, and what to do. It never
//! carries an env value: every field is the shell's own wording or the apiserver's `Status`
//! message, and no request kind echoes a Secret payload into either.

use std::fmt;
use std::time::Duration;

/// The one enumeration of the request kinds apiary sends (deploy.md § Cluster interface and
/// requests): what a failure names, what the fake substrate scripts and logs, and what the kube
/// shell retries. `ensure_namespace` is [`Operation::EnsureNamespace`] when it is taken as one
/// call (the fake's scripting and log); the kube shell sends it as two requests and names the one
/// that failed ([`Operation::GetNamespace`] or [`Operation::CreateNamespace`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operation {
    /// `ensure_namespace` as one call: read the namespace, create it when absent.
    EnsureNamespace,
    /// Reading a namespace (the first request of `ensure_namespace`).
    GetNamespace,
    /// Creating a namespace (the second request of `ensure_namespace`, when absent).
    CreateNamespace,
    /// Listing pods by label selector.
    ListPods,
    /// Listing Secrets by label selector.
    ListSecrets,
    /// Reading one pod.
    GetPod,
    /// Reading one Secret (`secret_exists`).
    GetSecret,
    /// Reading one ServiceAccount (`service_account_exists`).
    GetServiceAccount,
    /// Creating a Secret.
    CreateSecret,
    /// Creating a pod.
    CreatePod,
    /// Deleting a pod.
    DeletePod,
    /// Deleting a Secret.
    DeleteSecret,
    /// Watching a pod.
    WatchPod,
    /// Updating a pod: `renew`'s merge patch of its expiry annotation (deploy.md § Expiry).
    UpdatePod,
    /// Reading a pod's container log (`apiary logs`: the `pods/log` subresource).
    ReadPodLog,
    /// Reading the node a pod that will not go away is bound to (deploy.md § When a pod will not go
    /// away): cluster-scoped and optional, so a refusal is never a failure of the operation that
    /// asked.
    GetNode,
    /// Reading the agent's NetworkPolicy (`--isolate`, deploy.md § Egress control).
    GetNetworkPolicy,
    /// Creating it.
    CreateNetworkPolicy,
    /// Replacing its spec (a PUT carrying the observed resourceVersion).
    UpdateNetworkPolicy,
    /// Deleting it (fenced).
    DeleteNetworkPolicy,
    /// Reading the agent's workspace claim (`--workspace-size`, deploy.md § Persistent
    /// workspace).
    GetWorkspaceClaim,
    /// Creating it.
    CreateWorkspaceClaim,
    /// Deleting it (fenced; `undeploy --delete-workspace` only).
    DeleteWorkspaceClaim,
}

impl Operation {
    /// Every request kind, in declaration order (for tests that loop over "every").
    pub const ALL: [Operation; 23] = [
        Operation::EnsureNamespace,
        Operation::GetNamespace,
        Operation::CreateNamespace,
        Operation::ListPods,
        Operation::ListSecrets,
        Operation::GetPod,
        Operation::GetSecret,
        Operation::GetServiceAccount,
        Operation::CreateSecret,
        Operation::CreatePod,
        Operation::DeletePod,
        Operation::DeleteSecret,
        Operation::WatchPod,
        Operation::UpdatePod,
        Operation::ReadPodLog,
        Operation::GetNode,
        Operation::GetNetworkPolicy,
        Operation::CreateNetworkPolicy,
        Operation::UpdateNetworkPolicy,
        Operation::DeleteNetworkPolicy,
        Operation::GetWorkspaceClaim,
        Operation::CreateWorkspaceClaim,
        Operation::DeleteWorkspaceClaim,
    ];

    /// The RBAC verb the request needs (`get`, `list`, `create`, `delete`, `watch`, `patch`); namespace
    /// ensure needs `get` first (and `create` when absent).
    pub fn verb(self) -> &'static str {
        match self {
            Self::EnsureNamespace
            | Self::GetNamespace
            | Self::GetPod
            | Self::GetSecret
            | Self::GetServiceAccount
            | Self::ReadPodLog
            | Self::GetNode
            | Self::GetNetworkPolicy
            | Self::GetWorkspaceClaim => "get",
            Self::CreateNamespace
            | Self::CreateSecret
            | Self::CreatePod
            | Self::CreateNetworkPolicy
            | Self::CreateWorkspaceClaim => "create",
            Self::ListPods | Self::ListSecrets => "list",
            Self::DeletePod
            | Self::DeleteSecret
            | Self::DeleteNetworkPolicy
            | Self::DeleteWorkspaceClaim => "delete",
            Self::WatchPod => "watch",
            Self::UpdatePod => "patch",
            Self::UpdateNetworkPolicy => "update",
        }
    }

    /// The RBAC resource the request is on (`namespaces`, `pods`, `pods/log`, `secrets`,
    /// `serviceaccounts`, `nodes`).
    pub fn resource(self) -> &'static str {
        match self {
            Self::EnsureNamespace | Self::GetNamespace | Self::CreateNamespace => "namespaces",
            Self::ListPods
            | Self::GetPod
            | Self::CreatePod
            | Self::DeletePod
            | Self::WatchPod
            | Self::UpdatePod => "pods",
            Self::ListSecrets | Self::GetSecret | Self::CreateSecret | Self::DeleteSecret => {
                "secrets"
            }
            Self::GetServiceAccount => "serviceaccounts",
            Self::ReadPodLog => "pods/log",
            Self::GetNode => "nodes",
            Self::GetNetworkPolicy
            | Self::CreateNetworkPolicy
            | Self::UpdateNetworkPolicy
            | Self::DeleteNetworkPolicy => "networkpolicies",
            Self::GetWorkspaceClaim | Self::CreateWorkspaceClaim | Self::DeleteWorkspaceClaim => {
                "persistentvolumeclaims"
            }
        }
    }

    /// Whether the request writes (namespace ensure, creates, deletes, the expiry update).
    pub fn is_mutation(self) -> bool {
        matches!(
            self,
            Self::EnsureNamespace
                | Self::CreateNamespace
                | Self::CreateSecret
                | Self::CreatePod
                | Self::DeletePod
                | Self::DeleteSecret
                | Self::UpdatePod
                | Self::CreateNetworkPolicy
                | Self::UpdateNetworkPolicy
                | Self::DeleteNetworkPolicy
                | Self::CreateWorkspaceClaim
                | Self::DeleteWorkspaceClaim
        )
    }

    /// The snake-case name of the request (`create_pod`), for JSON fields and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::EnsureNamespace => "ensure_namespace",
            Self::GetNamespace => "get_namespace",
            Self::CreateNamespace => "create_namespace",
            Self::ListPods => "list_pods",
            Self::ListSecrets => "list_secrets",
            Self::GetPod => "get_pod",
            Self::GetSecret => "get_secret",
            Self::GetServiceAccount => "get_service_account",
            Self::CreateSecret => "create_secret",
            Self::CreatePod => "create_pod",
            Self::DeletePod => "delete_pod",
            Self::DeleteSecret => "delete_secret",
            Self::WatchPod => "watch_pod",
            Self::UpdatePod => "update_pod",
            Self::ReadPodLog => "read_pod_log",
            Self::GetNode => "get_node",
            Self::GetNetworkPolicy => "get_network_policy",
            Self::CreateNetworkPolicy => "create_network_policy",
            Self::UpdateNetworkPolicy => "update_network_policy",
            Self::DeleteNetworkPolicy => "delete_network_policy",
            Self::GetWorkspaceClaim => "get_workspace_claim",
            Self::CreateWorkspaceClaim => "create_workspace_claim",
            Self::DeleteWorkspaceClaim => "delete_workspace_claim",
        }
    }
}

/// In words, as a message's "what": `read pod`, `create secret`, `ensure namespace`.
impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::EnsureNamespace => "ensure namespace",
            Self::GetNamespace => "read namespace",
            Self::CreateNamespace => "create namespace",
            Self::ListPods => "list pods",
            Self::ListSecrets => "list secrets",
            Self::GetPod => "read pod",
            Self::GetSecret => "read secret",
            Self::GetServiceAccount => "read service account",
            Self::CreateSecret => "create secret",
            Self::CreatePod => "create pod",
            Self::DeletePod => "delete pod",
            Self::DeleteSecret => "delete secret",
            Self::WatchPod => "watch pod",
            Self::UpdatePod => "update pod",
            Self::ReadPodLog => "read the log of pod",
            Self::GetNode => "read node",
            Self::GetNetworkPolicy => "read networkpolicy",
            Self::CreateNetworkPolicy => "create networkpolicy",
            Self::UpdateNetworkPolicy => "update networkpolicy",
            Self::DeleteNetworkPolicy => "delete networkpolicy",
            Self::GetWorkspaceClaim => "read persistentvolumeclaim",
            Self::CreateWorkspaceClaim => "create persistentvolumeclaim",
            Self::DeleteWorkspaceClaim => "delete persistentvolumeclaim",
        })
    }
}

/// Why a request got no usable answer, in the terms a person can act on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransportCause {
    /// Nothing listens at the server's address (TCP connection refused).
    ConnectionRefused,
    /// No whole answer within this limit (one attempt's, or the operation's request budget).
    TimedOut(Duration),
    /// The server's TLS certificate is not trusted by the kubeconfig's certificate authority.
    TlsNotTrusted,
    /// The server's host name could not be resolved.
    Dns,
    /// Anything else (a dropped connection, an undecodable answer, a client-side failure): the
    /// failure's detail says what, in words.
    Other,
}

impl fmt::Display for TransportCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ConnectionRefused => f.write_str("connection refused"),
            Self::TimedOut(limit) if limit.subsec_millis() == 0 || limit.as_secs() >= 10 => {
                write!(f, "timed out after {} s", limit.as_secs())
            }
            Self::TimedOut(limit) => write!(f, "timed out after {} ms", limit.as_millis()),
            Self::TlsNotTrusted => f.write_str("TLS certificate not trusted"),
            Self::Dns => f.write_str("host name not resolved"),
            Self::Other => f.write_str("no usable answer"),
        }
    }
}

/// Why one request failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cause {
    /// The apiserver answered with an error status.
    Answered {
        /// The HTTP status code.
        code: u16,
        /// `Status.reason` verbatim (empty when absent).
        reason: String,
        /// `Status.message` verbatim (the server's words for people).
        message: String,
    },
    /// No usable answer came back; the request may or may not have landed.
    Transport {
        /// The cause in plain words.
        cause: TransportCause,
        /// What the client said, in words (never a body), for `-v` and for [`TransportCause::Other`].
        detail: String,
    },
    /// The request was never sent: what it needed could not be made (no generation could be
    /// minted from the OS random source). Neither an answer nor a lost one.
    Unsent {
        /// What could not be made, in words.
        detail: String,
    },
}

/// One failed request: what (operation and object), why ([`Cause`]), and the fix the decisions
/// know of, if any (a hint a machine adds, e.g. the `kubectl create serviceaccount` command).
///
/// One pointer wide (its parts are boxed), so the errors that carry it stay small.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestFailure(Box<Parts>);

#[derive(Clone, Debug, PartialEq, Eq)]
struct Parts {
    operation: Option<Operation>,
    object: String,
    cause: Cause,
    hint: Option<String>,
}

impl RequestFailure {
    /// The apiserver answered `operation` on `object` (`agents/apiary-m2-…`, or the namespace's
    /// name for a namespace request) with `code`, `reason` (empty when absent) and `message`.
    pub fn answered(
        operation: Operation,
        object: impl Into<String>,
        code: u16,
        reason: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        RequestFailure(Box::new(Parts {
            operation: Some(operation),
            object: object.into(),
            cause: Cause::Answered {
                code,
                reason: reason.into(),
                message: message.into(),
            },
            hint: None,
        }))
    }

    /// No usable answer to `operation` on `object`: `cause` in plain words, `detail` the client's.
    pub fn lost(
        operation: Operation,
        object: impl Into<String>,
        cause: TransportCause,
        detail: impl Into<String>,
    ) -> Self {
        RequestFailure(Box::new(Parts {
            operation: Some(operation),
            object: object.into(),
            cause: Cause::Transport {
                cause,
                detail: detail.into(),
            },
            hint: None,
        }))
    }

    /// An answer to a request whose kind and object the caller names itself: `message` is the
    /// whole failure in words (used by decisions and tests that have no request at hand).
    pub fn api(code: u16, reason: impl Into<String>, message: impl Into<String>) -> Self {
        RequestFailure(Box::new(Parts {
            operation: None,
            object: String::new(),
            cause: Cause::Answered {
                code,
                reason: reason.into(),
                message: message.into(),
            },
            hint: None,
        }))
    }

    /// No usable answer, of a request the caller names itself; `message` in words.
    pub fn transport(message: impl Into<String>) -> Self {
        RequestFailure(Box::new(Parts {
            operation: None,
            object: String::new(),
            cause: Cause::Transport {
                cause: TransportCause::Other,
                detail: message.into(),
            },
            hint: None,
        }))
    }

    /// The request was never sent: what it needed could not be made (no generation could be
    /// minted from the OS random source). Neither an answer nor a lost one.
    pub fn unsent(message: impl Into<String>) -> Self {
        RequestFailure(Box::new(Parts {
            operation: None,
            object: String::new(),
            cause: Cause::Unsent {
                detail: message.into(),
            },
            hint: None,
        }))
    }

    /// The same failure with `hint` (the fix a person can apply) attached; a second hint is
    /// appended to the first.
    #[must_use]
    pub fn with_hint(mut self, hint: impl fmt::Display) -> Self {
        self.0.hint = Some(match self.0.hint.take() {
            Some(first) => format!("{first}; {hint}"),
            None => hint.to_string(),
        });
        self
    }

    /// The request kind, when the failure names one.
    pub fn operation(&self) -> Option<Operation> {
        self.0.operation
    }

    /// The object (`agents/apiary-m2-…`), empty when the failure names none.
    pub fn object(&self) -> &str {
        &self.0.object
    }

    /// Why the request failed.
    pub fn cause(&self) -> &Cause {
        &self.0.cause
    }

    /// The fix a decision attached, if any.
    pub fn hint(&self) -> Option<&str> {
        self.0.hint.as_deref()
    }

    /// The HTTP status code, when the apiserver answered.
    pub fn code(&self) -> Option<u16> {
        match &self.0.cause {
            Cause::Answered { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// `Status.reason` verbatim, when the apiserver answered (empty when it gave none).
    pub fn reason(&self) -> Option<&str> {
        match &self.0.cause {
            Cause::Answered { reason, .. } => Some(reason),
            _ => None,
        }
    }

    /// The server's `Status.message`, when the apiserver answered.
    pub fn server_message(&self) -> Option<&str> {
        match &self.0.cause {
            Cause::Answered { message, .. } => Some(message),
            _ => None,
        }
    }

    /// The transport cause, when no usable answer came back.
    pub fn transport_cause(&self) -> Option<TransportCause> {
        match &self.0.cause {
            Cause::Transport { cause, .. } => Some(*cause),
            _ => None,
        }
    }

    /// Whether no answer came back (the request may or may not have landed).
    pub fn is_transport(&self) -> bool {
        matches!(self.0.cause, Cause::Transport { .. })
    }

    /// The account a pod create's refusal says is missing, when the refusal is ServiceAccount
    /// admission's: reason exactly `Forbidden` and a message naming `<ns>/<sa>` and then
    /// `serviceaccount "<sa>" not found` for the same account. Any other refusal (RBAC, quota,
    /// another admission plugin) and every transport failure is `None` (deploy.md § Namespace
    /// ensure, item 4).
    pub fn missing_service_account(&self) -> Option<String> {
        if self.reason() != Some("Forbidden") {
            return None;
        }
        let message = self.server_message()?;
        let (_, after) = message.split_once(ACCOUNT_LOOKUP)?;
        let (qualified, rest) = after.split_once(ACCOUNT_NOT_FOUND_PREFIX)?;
        let (_namespace, account) = qualified.split_once('/')?;
        let named = rest.strip_prefix(account)?;
        (!account.is_empty() && named.starts_with(ACCOUNT_NOT_FOUND_SUFFIX))
            .then(|| account.to_owned())
    }

    /// Whether the apiserver refused the request as `403 Forbidden` (RBAC or admission).
    pub fn is_forbidden(&self) -> bool {
        self.code() == Some(403)
    }

    /// The whole failure in words (its `Display`: what, why and the hint).
    pub fn message(&self) -> String {
        self.to_string()
    }

    /// Why, in words, without the "what": `the apiserver answered 403 Forbidden: pods is
    /// forbidden: …`, `connection refused`, or the detail of an unsent request. An empty reason
    /// reads as the HTTP reason phrase of the common codes.
    pub fn why(&self) -> String {
        match &self.0.cause {
            Cause::Answered {
                code,
                reason,
                message,
            } if self.0.operation.is_some() => {
                let reason = if reason.is_empty() {
                    reason_phrase(*code)
                } else {
                    reason
                };
                let reason = if reason.is_empty() {
                    String::new()
                } else {
                    format!(" {reason}")
                };
                format!("the apiserver answered {code}{reason}: {message}")
            }
            Cause::Answered { message, .. } => message.clone(),
            Cause::Transport {
                cause: TransportCause::Other,
                detail,
            } => detail.clone(),
            Cause::Transport { cause, .. } => cause.to_string(),
            Cause::Unsent { detail } => detail.clone(),
        }
    }
}

/// The message shape of ServiceAccount admission's refusal, around the account name:
/// `pods "<pod>" is forbidden: error looking up service account <ns>/<sa>: serviceaccount
/// "<sa>" not found`.
const ACCOUNT_LOOKUP: &str = "error looking up service account ";
const ACCOUNT_NOT_FOUND_PREFIX: &str = ": serviceaccount \"";
const ACCOUNT_NOT_FOUND_SUFFIX: &str = "\" not found";

/// The reason phrase of the status codes an apiserver or a proxy in front of it answers.
fn reason_phrase(code: u16) -> &'static str {
    match code {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        409 => "Conflict",
        410 => "Gone",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "",
    }
}

/// `could not <operation> <object>: <why>[; <hint>]`, or `<why>[; <hint>]` when the failure
/// names no request. One sentence, each part once.
impl fmt::Display for RequestFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(operation) = self.0.operation {
            if self.0.object.is_empty() {
                write!(f, "could not {operation}: ")?;
            } else {
                write!(f, "could not {operation} {}: ", self.0.object)?;
            }
        }
        f.write_str(&self.why())?;
        if let Some(hint) = &self.0.hint {
            write!(f, "; {hint}")?;
        }
        Ok(())
    }
}

impl std::error::Error for RequestFailure {}

#[cfg(test)]
mod tests;
