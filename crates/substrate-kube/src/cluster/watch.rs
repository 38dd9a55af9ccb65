//! The wait for a pod change (deploy.md § Loop, the waiting decision; § Cluster interface and
//! requests): one pod watch serves every wait of an operation instead of one watch per wake-up, and
//! a wait right after this `Cluster`'s own create starts from the resourceVersion the create
//! answered instead of reading a baseline first (fewer round trips on the critical path).
//!
//! Layer: the imperative shell's waiting. A watch event only wakes the waiter: nothing here reads
//! an event's content beyond its `resourceVersion` (to know whether the caller has already seen
//! it), and every decision still rests on the caller's fresh quorum GET. It must never let a
//! wait end later than its bound, never keep a watch whose stream failed, and never log a body.
//!
//! Why an open watch can serve the next wait: between two waits the machine reads the pod
//! (quorum) and passes the resourceVersion it saw. A watch delivers every change of the pod in
//! order, so the change the caller saw is either one this watch has already delivered (then any
//! later event is news) or one still ahead in its stream (then events up to and including it are
//! old news and skipped). resourceVersions are compared only for equality, never ordered.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use futures::{Stream, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::Resource;
use kube::core::params::WatchParams;
use kube::core::{Request, WatchEvent};
use serde_json::Value;
use tokio::time::Instant;

use super::mapping;

/// How long the server keeps one watch open (`timeoutSeconds`): the longest deploy deadline.
/// A watch that ends normally is reopened from its last position while a wait still runs.
const WATCH_SECONDS: u32 = 600;

/// At most this many idle watches are kept (one per pod name); beyond it the oldest go.
const MAX_OPEN: usize = 16;

/// At most this many positions are remembered per watch (a deploy sees a handful).
const MAX_POSITIONS: usize = 256;

type Events = Pin<Box<dyn Stream<Item = Result<WatchEvent<Value>, kube::Error>> + Send>>;

/// One open pod watch between waits.
struct OpenWatch {
    events: Events,
    /// The resourceVersion it started from and each one it has delivered, oldest first.
    positions: Vec<String>,
    opened: Instant,
}

impl OpenWatch {
    fn remember(&mut self, resource_version: String) {
        if self.positions.len() == MAX_POSITIONS {
            self.positions.remove(0);
        }
        self.positions.push(resource_version);
    }

    fn has_seen(&self, resource_version: &str) -> bool {
        self.positions.iter().any(|p| p == resource_version)
    }
}

/// Where the watched pods are: the client and the namespace of the `Cluster` that waits (passed
/// in, so this module does not depend on its parent).
#[derive(Clone, Copy)]
pub(super) struct PodsAt<'a> {
    /// The client, with kube's own retries off.
    pub(super) client: &'a kube::Client,
    /// The namespace.
    pub(super) namespace: &'a str,
}

/// The watches a `Cluster` keeps between waits, and the resourceVersions its creates answered.
#[derive(Default)]
pub(super) struct Watches {
    /// Idle watches by pod name; a wait takes its pod's watch out while it reads it, so two
    /// concurrent waits on one pod never share a stream (the second opens its own).
    open: Mutex<HashMap<String, OpenWatch>>,
    /// The resourceVersion this `Cluster`'s own create of each pod answered, until a wait uses it.
    created: Mutex<HashMap<String, String>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Plain maps replaced whole per entry: a poisoned lock still holds consistent data.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The `metadata.resourceVersion` of a pod body (a create's answer or a watch event's object).
pub(super) fn resource_version_of(object: &Value) -> Option<String> {
    object
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .filter(|rv| !rv.is_empty())
        .map(str::to_owned)
}

impl Watches {
    /// Remembers the resourceVersion the create of `pod` answered with.
    pub(super) fn created(&self, pod: &str, resource_version: String) {
        let mut created = lock(&self.created);
        if created.len() >= MAX_OPEN {
            created.clear();
        }
        created.insert(pod.to_owned(), resource_version);
    }

    fn take(&self, pod: &str) -> Option<OpenWatch> {
        lock(&self.open).remove(pod)
    }

    fn keep(&self, pod: &str, watch: OpenWatch) {
        let mut open = lock(&self.open);
        while open.len() >= MAX_OPEN {
            let Some(oldest) = open
                .iter()
                .min_by_key(|(_, w)| w.opened)
                .map(|(name, _)| name.clone())
            else {
                break;
            };
            open.remove(&oldest);
        }
        open.insert(pod.to_owned(), watch);
    }

    /// Waits until pod `name` changes after `resource_version` (see the module docs), or until
    /// `max` has passed. A watch that cannot start, fails or ends with an error event turns the
    /// rest of the bound into a sleep.
    pub(super) async fn wait(
        &self,
        pods: PodsAt<'_>,
        baseline: impl Future<Output = Option<String>>,
        name: &str,
        resource_version: Option<&str>,
        max: Duration,
    ) {
        let deadline = Instant::now() + max;
        let created = lock(&self.created).remove(name);
        let from = match resource_version.map(str::to_owned).or(created) {
            Some(rv) => Some(rv),
            // Without an observed resourceVersion (a create whose answer carried none, or a
            // retried create), a watch from "now" would replay the pod's current state as an
            // ADDED event and wake at once, skipping the pause deploy.md § Create asks for. So
            // the baseline is read first and the watch starts after it.
            None => tokio::time::timeout_at(deadline, baseline)
                .await
                .ok()
                .flatten(),
        };
        let reused = self.take(name);
        let mut watch = match (reused, from.as_deref()) {
            // Without a position an open watch's buffered events cannot be told old from new.
            (Some(w), Some(_)) => w,
            _ => match tokio::time::timeout_at(deadline, open(pods, name, from.as_deref())).await {
                Ok(Some(w)) => w,
                Ok(None) => {
                    tokio::time::sleep_until(deadline).await;
                    return;
                }
                Err(_elapsed) => return,
            },
        };
        let mut caught_up = from.as_deref().is_none_or(|rv| watch.has_seen(rv));
        let mut reopened = false;
        loop {
            let next = match tokio::time::timeout_at(deadline, watch.events.try_next()).await {
                Err(_elapsed) => {
                    self.keep(name, watch);
                    return;
                }
                Ok(next) => next,
            };
            match next {
                Ok(Some(
                    WatchEvent::Added(object)
                    | WatchEvent::Modified(object)
                    | WatchEvent::Deleted(object),
                )) => {
                    let rv = resource_version_of(&object);
                    if caught_up {
                        if let Some(rv) = rv {
                            watch.remember(rv);
                        }
                        self.keep(name, watch);
                        return;
                    }
                    // Old news: a change the caller's read already reflects.
                    caught_up = rv.as_deref() == from.as_deref();
                    if let Some(rv) = rv {
                        watch.remember(rv);
                    }
                }
                Ok(Some(WatchEvent::Bookmark(_))) => {}
                Ok(Some(WatchEvent::Error(status))) => {
                    tracing::debug!(pod = name, code = status.code, reason = %status.reason, "watch ended with an error event; polling");
                    tokio::time::sleep_until(deadline).await;
                    return;
                }
                Ok(None) => {
                    // The server closed the watch at its timeout: reopen from the last position,
                    // once per wait (a server closing at once must not make this spin).
                    let last = watch.positions.last().cloned();
                    let again = if reopened {
                        Ok(None)
                    } else {
                        tokio::time::timeout_at(deadline, open(pods, name, last.as_deref())).await
                    };
                    reopened = true;
                    match again {
                        Ok(Some(fresh)) => watch.events = fresh.events,
                        Ok(None) => {
                            tokio::time::sleep_until(deadline).await;
                            return;
                        }
                        Err(_elapsed) => return,
                    }
                }
                Err(error) => {
                    tracing::debug!(
                        pod = name,
                        error = %mapping::describe_chain(&error),
                        "watch stream failed; polling"
                    );
                    tokio::time::sleep_until(deadline).await;
                    return;
                }
            }
        }
    }
}

/// Opens a watch of pod `name` from `resource_version` (from "now" without one); `None` when it
/// cannot start (refused, no `watch` permission, transport failure).
async fn open(pods: PodsAt<'_>, name: &str, resource_version: Option<&str>) -> Option<OpenWatch> {
    let params = WatchParams::default()
        .fields(&format!("metadata.name={name}"))
        .timeout(WATCH_SECONDS)
        .disable_bookmarks();
    let path = Pod::url_path(&(), Some(pods.namespace));
    let request = match Request::new(path).watch(&params, resource_version.unwrap_or("")) {
        Ok(request) => without_empty_resource_version(request),
        Err(error) => {
            tracing::debug!(pod = name, error = %error, "watch request not built; polling");
            return None;
        }
    };
    match pods.client.request_events::<Value>(request).await {
        Ok(events) => Some(OpenWatch {
            events: Box::pin(events),
            positions: resource_version.map(str::to_owned).into_iter().collect(),
            opened: Instant::now(),
        }),
        Err(error) => {
            tracing::debug!(
                pod = name,
                error = %mapping::describe_chain(&error),
                "watch refused or failed; polling"
            );
            None
        }
    }
}

/// kube's watch builder always appends `resourceVersion`; with none observed, drop the empty
/// parameter instead of sending `resourceVersion=`.
fn without_empty_resource_version(mut request: http::Request<Vec<u8>>) -> http::Request<Vec<u8>> {
    let uri = request.uri().to_string();
    if let Some(stripped) = uri.strip_suffix("&resourceVersion=")
        && let Ok(parsed) = stripped.parse()
    {
        *request.uri_mut() = parsed;
    }
    request
}
