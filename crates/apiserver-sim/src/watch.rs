//! Watch streams: `GET …?watch=true` answered with one JSON event per line (`ADDED`, `MODIFIED`,
//! `DELETED`, `BOOKMARK`, `ERROR`), resumed from a `resourceVersion`, filtered by label and field
//! selectors, ended after `timeoutSeconds`, and ended with an ERROR event carrying a 410 `Expired`
//! Status when the requested resourceVersion is older than the model's event history.
//!
//! Layer: imperative shell around the model's event log. It decides only how the log is presented
//! to one watcher (which events pass its filter, and how an object entering or leaving the filter
//! reads as ADDED or DELETED, as the apiserver's watch cache does); the events themselves come from
//! the model. `timeoutSeconds` and the bookmark interval are real time, not model time.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use apiary_cluster_model::selector::{FieldSelector, LabelSelector};
use apiary_cluster_model::{ClusterModel, EventType, Kind, ListOptions, Object, WatchEvent};
use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};
use tokio::time::Instant;

use crate::response::{ChannelBody, SimBody, StreamBroken, error_response};
use crate::route::{Query, ResourceRequest};
use crate::selection::{kind_of, list_options};
use crate::shared::{Shared, WatchEnd};
use crate::status::{ApiError, model_error};

/// How long a watch without `timeoutSeconds` stays open (the apiserver's minimum request
/// timeout).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

/// Where a watch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    /// No `resourceVersion` (or `"0"`): synthetic ADDED events for every matching object, then
    /// changes.
    Snapshot,
    /// Changes after this resourceVersion.
    After(u64),
}

/// What one watcher wants.
struct Filter {
    kind: Kind,
    namespace: Option<String>,
    labels: LabelSelector,
    fields: FieldSelector,
}

impl Filter {
    fn in_scope(&self, object: &Object) -> bool {
        object.kind() == self.kind
            && self
                .namespace
                .as_deref()
                .is_none_or(|ns| object.metadata().namespace.as_deref() == Some(ns))
    }

    fn matches(&self, object: &Object) -> bool {
        object.matches(&self.labels, &self.fields)
    }
}

/// Starts a watch: validates the query, answers 200 with a streaming body and feeds it from a
/// task until the timeout, the client leaving or an error.
pub(crate) fn start(
    shared: &Arc<Shared>,
    req: &ResourceRequest,
    query: &Query,
) -> Response<SimBody> {
    let prepared = (|| {
        let options = list_options(query)?;
        let kind = kind_of(req.resource);
        let labels = LabelSelector::parse(options.label_selector.as_deref().unwrap_or_default())
            .map_err(|e| model_error(&e))?;
        let fields =
            FieldSelector::parse(kind, options.field_selector.as_deref().unwrap_or_default())
                .map_err(|e| model_error(&e))?;
        let start = match query.non_empty("resourceVersion") {
            None | Some("0") => Start::Snapshot,
            Some(rv) => Start::After(rv.parse().map_err(|_| {
                ApiError::bad_request(format!(
                    "invalid resource version {rv:?}: it must be an integer"
                ))
            })?),
        };
        let timeout = match query.non_empty("timeoutSeconds") {
            None => DEFAULT_TIMEOUT,
            Some(t) => match t.parse::<u64>() {
                Ok(0) => DEFAULT_TIMEOUT,
                Ok(s) => Duration::from_secs(s),
                Err(_) => {
                    return Err(ApiError::bad_request(format!(
                        "invalid timeoutSeconds {t:?}"
                    )));
                }
            },
        };
        let filter = Filter {
            kind,
            namespace: req.namespace.clone(),
            labels,
            fields,
        };
        Ok::<_, ApiError>((filter, options, start, timeout))
    })();
    let (filter, options, start, timeout) = match prepared {
        Ok(p) => p,
        Err(e) => return error_response(&e),
    };
    let session = Session {
        shared: Arc::clone(shared),
        filter,
        bookmarks: query.flag("allowWatchBookmarks"),
        initial_events_end: query.flag("sendInitialEvents"),
        seen: HashMap::new(),
        snapshot: start == Start::Snapshot,
    };
    let (tx, rx) = mpsc::channel(64);
    let ends = shared.watch_ends.subscribe();
    tokio::spawn(session.run(Lines(tx), ends, options, start, Instant::now() + timeout));
    let mut r = Response::new(ChannelBody::new(rx).boxed());
    *r.status_mut() = StatusCode::OK;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

struct Session {
    shared: Arc<Shared>,
    filter: Filter,
    bookmarks: bool,
    initial_events_end: bool,
    /// Whether each object (by uid) matched the filter as of the last event delivered.
    seen: HashMap<String, bool>,
    /// Started from a snapshot: objects absent from `seen` did not match at the start.
    snapshot: bool,
}

/// One serialized event line.
fn line(event_type: &str, object: Value) -> Bytes {
    let mut text = json!({ "type": event_type, "object": object }).to_string();
    text.push('\n');
    Bytes::from(text)
}

/// The sending side of a watch body.
struct Lines(mpsc::Sender<Result<Bytes, StreamBroken>>);

impl Lines {
    /// Sends one line; `Err` when the client has gone.
    async fn send(&self, line: Bytes) -> Result<(), ()> {
        self.0.send(Ok(line)).await.map_err(|_| ())
    }

    /// Makes the body fail, so hyper aborts the connection.
    async fn break_stream(&self) {
        // The client may have gone already; then there is nothing to break.
        let _ = self.0.send(Err(StreamBroken)).await;
    }

    async fn closed(&self) {
        self.0.closed().await;
    }
}

impl Session {
    async fn run(
        mut self,
        tx: Lines,
        mut ends: broadcast::Receiver<WatchEnd>,
        options: ListOptions,
        start: Start,
        deadline: Instant,
    ) {
        let mut changes = self.shared.changes.subscribe();
        let (mut last_rv, initial) = match self.begin(&options, start) {
            Ok(begun) => begun,
            Err(e) => {
                let _ = tx.send(line("ERROR", e.body)).await;
                return;
            }
        };
        for l in initial {
            if tx.send(l).await.is_err() {
                return;
            }
        }
        if self.initial_events_end && self.snapshot {
            let mut b = self.bookmark(last_rv);
            b["metadata"]["annotations"] = json!({ "k8s.io/initial-events-end": "true" });
            if tx.send(line("BOOKMARK", b)).await.is_err() {
                return;
            }
        }
        let interval = self
            .shared
            .options
            .bookmark_interval
            .max(Duration::from_millis(1));
        let mut next_bookmark = Instant::now() + interval;
        loop {
            let (lines, rv) = match self.pending(last_rv) {
                Ok(p) => p,
                Err(e) => {
                    let _ = tx.send(line("ERROR", e.body)).await;
                    return;
                }
            };
            last_rv = rv;
            for l in lines {
                if tx.send(l).await.is_err() {
                    return;
                }
            }
            tokio::select! {
                changed = changes.changed() => {
                    if changed.is_err() {
                        return; // the simulator shut down
                    }
                }
                () = tokio::time::sleep_until(next_bookmark), if self.bookmarks => {
                    next_bookmark = Instant::now() + interval;
                    let rv = self.current_rv().max(last_rv);
                    if tx.send(line("BOOKMARK", self.bookmark(rv))).await.is_err() {
                        return;
                    }
                }
                () = tokio::time::sleep_until(deadline) => {
                    // Deliver what happened up to the end, then a final bookmark to resume from.
                    if let Ok((lines, rv)) = self.pending(last_rv) {
                        for l in lines {
                            if tx.send(l).await.is_err() {
                                return;
                            }
                        }
                        if self.bookmarks {
                            let _ = tx.send(line("BOOKMARK", self.bookmark(rv))).await;
                        }
                    }
                    return;
                }
                () = tx.closed() => return,
                end = ends.recv() => {
                    match end {
                        Ok(WatchEnd::Break) => tx.break_stream().await,
                        // A normal end; a lagging or closed order channel also ends the stream.
                        Ok(WatchEnd::Close) | Err(_) => {}
                    }
                    return;
                }
            }
        }
    }

    fn bookmark(&self, rv: u64) -> Value {
        json!({
            "kind": self.filter.kind.kind_name(),
            "apiVersion": "v1",
            "metadata": { "resourceVersion": rv.to_string() },
        })
    }

    fn current_rv(&self) -> u64 {
        self.shared.model().resource_version()
    }

    /// The starting resourceVersion and the initial events: a snapshot's synthetic ADDED events,
    /// or nothing (changes after `rv` follow as pending events), or the 410 for a compacted rv.
    fn begin(
        &mut self,
        options: &ListOptions,
        start: Start,
    ) -> Result<(u64, Vec<Bytes>), ApiError> {
        let m = self.shared.model();
        match start {
            Start::After(rv) => {
                m.events_since(rv).map_err(|e| model_error(&e))?;
                Ok((rv, Vec::new()))
            }
            Start::Snapshot => {
                let unpaged = ListOptions {
                    limit: None,
                    continue_token: None,
                    ..options.clone()
                };
                let ns = self.filter.namespace.as_deref();
                let objects: Vec<Object> = match self.filter.kind {
                    Kind::Namespace => m
                        .list_namespaces(&unpaged)
                        .map(|p| p.items.into_iter().map(Object::Namespace).collect()),
                    Kind::Pod => m
                        .list_pods(ns, &unpaged)
                        .map(|p| p.items.into_iter().map(Object::Pod).collect()),
                    Kind::Secret => m
                        .list_secrets(ns, &unpaged)
                        .map(|p| p.items.into_iter().map(Object::Secret).collect()),
                    // Never watched: `api::serve` refuses every verb on serviceaccounts but get
                    // and create, and every verb on nodes but get.
                    Kind::ServiceAccount | Kind::Node => Ok(Vec::new()),
                }
                .map_err(|e| model_error(&e))?;
                let rv = m.resource_version();
                let lines = objects
                    .into_iter()
                    .map(|o| {
                        if let Some(uid) = &o.metadata().uid {
                            self.seen.insert(uid.clone(), true);
                        }
                        line("ADDED", o.to_json())
                    })
                    .collect();
                Ok((rv, lines))
            }
        }
    }

    /// The lines for every event after `last_rv`, and the resourceVersion they bring the watch to.
    fn pending(&mut self, last_rv: u64) -> Result<(Vec<Bytes>, u64), ApiError> {
        let shared = Arc::clone(&self.shared);
        let m = shared.model();
        let events = m.events_since(last_rv).map_err(|e| model_error(&e))?;
        let rv = m.resource_version().max(last_rv);
        let mut lines = Vec::new();
        for event in &events {
            if let Some(l) = self.present(&m, event) {
                lines.push(l);
            }
        }
        Ok((lines, rv))
    }

    /// How one log event reads to this watcher: an object entering the filter is ADDED, one
    /// leaving it is DELETED, one outside it is not shown.
    fn present(&mut self, m: &ClusterModel, event: &WatchEvent) -> Option<Bytes> {
        if !self.filter.in_scope(&event.object) {
            return None;
        }
        let uid = event.object.metadata().uid.clone().unwrap_or_default();
        let was = match self.seen.get(&uid) {
            Some(was) => *was,
            None if self.snapshot || event.event_type == EventType::Added => false,
            None => self.matched_before(m, event),
        };
        let now = event.event_type != EventType::Deleted && self.filter.matches(&event.object);
        if event.event_type == EventType::Deleted {
            self.seen.remove(&uid);
        } else {
            self.seen.insert(uid, now);
        }
        let shown = match (was, now, event.event_type) {
            (true, _, EventType::Deleted) | (true, false, _) => "DELETED",
            (false, true, _) => "ADDED",
            (true, true, _) => "MODIFIED",
            (false, false, _) => return None,
        };
        Some(line(shown, event.object.to_json()))
    }

    /// Whether the object matched before `event`, from the latest earlier event about it in the
    /// retained log; without one, as it matches now.
    fn matched_before(&self, m: &ClusterModel, event: &WatchEvent) -> bool {
        let uid = event.object.metadata().uid.as_deref();
        let earlier = m
            .events_since(m.compaction_horizon())
            .unwrap_or_default()
            .into_iter()
            .rev()
            .find(|e| {
                e.resource_version < event.resource_version
                    && e.object.metadata().uid.as_deref() == uid
            });
        match earlier {
            Some(e) => e.event_type != EventType::Deleted && self.filter.matches(&e.object),
            None => self.filter.matches(&event.object),
        }
    }
}
