//! The request log: every request the simulator received, in arrival order, with its method,
//! path, raw query, body, the verb it was routed to, whether a fault was injected and the status
//! answered.
//!
//! Layer: a shared append-only record for tests to assert on ("no-op means zero mutation" is a
//! statement about this log). It never influences how a request is answered.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::route::{Query, Resource, Verb};

/// One logged request.
///
/// Its `Debug` output leaves out the body of Secret requests, which carries Secret values; the
/// `body` field itself keeps it for tests that assert on it.
#[derive(Clone, PartialEq)]
pub struct LoggedRequest {
    /// The HTTP method (`GET`, `POST`, `DELETE`, …).
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The raw query string, without the `?` (empty when none).
    pub query: String,
    /// The request body as text (lossy UTF-8; empty when none).
    pub body: String,
    /// The resource and Kubernetes verb, when the path is a served resource.
    pub target: Option<(Resource, Verb)>,
    /// Whether a fault rule or denial answered this request.
    pub faulted: bool,
    /// The HTTP status answered; `None` when the connection was dropped.
    pub status: Option<u16>,
}

impl LoggedRequest {
    /// The decoded value of query parameter `key` (first occurrence).
    pub fn query_param(&self, key: &str) -> Option<String> {
        Query::parse(&self.query).get(key).map(str::to_owned)
    }

    /// The body parsed as JSON, if it is JSON.
    pub fn body_json(&self) -> Option<serde_json::Value> {
        serde_json::from_str(&self.body).ok()
    }

    /// Whether this request was `verb` on `resource`. A server-side dry-run create writes nothing
    /// and is no `create` here ([`LoggedRequest::is_dry_run`] tells it).
    pub fn is(&self, verb: Verb, resource: Resource) -> bool {
        self.target == Some((resource, verb)) && !(verb == Verb::Create && self.is_dry_run())
    }

    /// Whether this request could change state (POST, PUT, PATCH or DELETE).
    pub fn is_mutation(&self) -> bool {
        matches!(self.method.as_str(), "POST" | "PUT" | "PATCH" | "DELETE") && !self.is_dry_run()
    }

    /// Whether the request is a server-side dry run (`dryRun=All`), which writes nothing.
    pub fn is_dry_run(&self) -> bool {
        self.query_param("dryRun").as_deref() == Some("All")
    }
}

impl std::fmt::Debug for LoggedRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secret = self.target.is_some_and(|(r, _)| r == Resource::Secrets);
        let body: &dyn std::fmt::Debug = if secret && !self.body.is_empty() {
            &"<Secret body not shown>"
        } else {
            &self.body
        };
        f.debug_struct("LoggedRequest")
            .field("method", &self.method)
            .field("path", &self.path)
            .field("query", &self.query)
            .field("body", body)
            .field("target", &self.target)
            .field("faulted", &self.faulted)
            .field("status", &self.status)
            .finish()
    }
}

/// The shared request log.
#[derive(Debug, Clone, Default)]
pub struct RequestLog {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug, Default)]
struct Inner {
    entries: Vec<LoggedRequest>,
    /// Bumped by every clear, so a late status never lands on a newer entry.
    generation: u64,
}

/// Position of an entry, used to fill in its status once answered.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Slot {
    index: usize,
    generation: u64,
}

impl RequestLog {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Entries are appended whole; a poisoned lock still holds a consistent log.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn push(&self, entry: LoggedRequest) -> Slot {
        let mut inner = self.lock();
        inner.entries.push(entry);
        Slot {
            index: inner.entries.len() - 1,
            generation: inner.generation,
        }
    }

    pub(crate) fn set_status(&self, slot: Slot, status: Option<u16>) {
        let mut inner = self.lock();
        if slot.generation != inner.generation {
            return;
        }
        if let Some(entry) = inner.entries.get_mut(slot.index) {
            entry.status = status;
        }
    }

    /// A snapshot of every logged request.
    pub fn snapshot(&self) -> Vec<LoggedRequest> {
        self.lock().entries.clone()
    }

    pub(crate) fn clear(&self) {
        let mut inner = self.lock();
        inner.entries.clear();
        inner.generation += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn logged(resource: Resource, body: &str) -> LoggedRequest {
        LoggedRequest {
            method: "POST".into(),
            path: format!("/api/v1/namespaces/a/{resource}"),
            query: String::new(),
            body: body.into(),
            target: Some((resource, Verb::Create)),
            faulted: false,
            status: Some(201),
        }
    }

    /// Secret values never reach Debug output (house rule: env values stay out of every log).
    #[test]
    fn debug_hides_secret_bodies() {
        let secret = logged(Resource::Secrets, r#"{"stringData":{"TOKEN":"hunter2"}}"#);
        let shown = format!("{secret:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("<Secret body not shown>"));
        assert_eq!(
            secret.body_json().expect("json")["stringData"]["TOKEN"],
            "hunter2"
        );
        let pod = logged(Resource::Pods, r#"{"metadata":{"name":"p"}}"#);
        assert!(
            format!("{pod:?}").contains("metadata"),
            "other bodies are shown"
        );
    }
}
