//! Watch mode's background task and view (seeds.md § Watch mode): lean pod records keyed by uid,
//! kept current by a WATCH from the last `resourceVersion`; relist on 410; re-watch on a normal
//! end; unsynced plus backoff (1 s doubling to 30 s, ±20 % jitter) on any other failure.
//!
//! I/O shell: it applies decoded events to the view and never decides which pods count. The view
//! is marked synced only while a watch stream is open with no error since, so a resolve never
//! answers from a stale view. The task stops when its owner drops the handle.

use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use apiary_seeds::{LeanPod, LeanPodList, LeanWatchEvent};
use http_body_util::BodyExt;
use kube::Client;
use kube::api::WatchParams;
use kube::core::Status;

use super::list::{self, Lister, REQUEST_TIMEOUT};
use crate::exchange::{self, Miss};

/// The server-side bound of one watch request (at most 300 s by seeds.md).
pub(crate) const WATCH_TIMEOUT_SECONDS: u32 = 290;

/// The pods of one listing, keyed by uid (else name).
#[derive(Debug, Default)]
pub(crate) struct Records(pub(crate) HashMap<String, LeanPod>);

impl Records {
    /// Adds every pod of a page.
    pub(crate) fn add_page(&mut self, page: LeanPodList) {
        for pod in page.items {
            self.0.insert(record_key(&pod), pod);
        }
    }
}

fn record_key(pod: &LeanPod) -> String {
    match pod.uid.as_deref().filter(|uid| !uid.is_empty()) {
        Some(uid) => format!("uid:{uid}"),
        None => format!("name:{}", pod.name.as_deref().unwrap_or_default()),
    }
}

/// The watch-mode view shared by `PodSeeds` and its task.
#[derive(Debug)]
pub(crate) struct View {
    /// The current pods.
    pub(crate) pods: HashMap<String, LeanPod>,
    /// The resume point of the next watch.
    pub(crate) resource_version: String,
    /// A watch stream is open and nothing failed since: resolves may answer from `pods`.
    pub(crate) synced: bool,
}

impl View {
    /// A view seeded by a listing, not yet synced (no stream open).
    pub(crate) fn seeded(records: Records, resource_version: String) -> Self {
        View {
            pods: records.0,
            resource_version,
            synced: false,
        }
    }

    /// Replaces the whole view with a newer listing (so no deleted pod survives).
    pub(crate) fn reseed(&mut self, records: Records, resource_version: String) {
        self.pods = records.0;
        self.resource_version = resource_version;
    }

    fn advance(&mut self, resource_version: Option<String>) {
        if let Some(resource_version) = resource_version.filter(|rv| !rv.is_empty()) {
            self.resource_version = resource_version;
        }
    }
}

/// Locks the view; a poisoned lock still holds a consistent map (every update is one insert,
/// remove or replace), so it is used as is.
pub(crate) fn lock(view: &Mutex<View>) -> MutexGuard<'_, View> {
    view.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What the task needs to list and watch.
pub(crate) struct Watcher {
    pub(crate) client: Client,
    pub(crate) namespace: String,
    pub(crate) selector: String,
    pub(crate) page_size: NonZeroU32,
}

/// The running task; dropping it stops the task.
pub(crate) struct WatchTask(tokio::task::AbortHandle);

impl WatchTask {
    /// Starts keeping `view` current.
    pub(crate) fn spawn(watcher: Watcher, view: Arc<Mutex<View>>) -> Self {
        WatchTask(tokio::spawn(watcher.run(view)).abort_handle())
    }
}

impl Drop for WatchTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// How one watch request ended.
enum WatchEnd {
    /// The server ended the stream normally, after this many events.
    Closed { events: usize },
    /// 410: the resume point is gone; relist.
    Gone,
    /// Anything else.
    Failed(kube::Error),
}

impl Watcher {
    async fn run(self, view: Arc<Mutex<View>>) {
        let mut backoff = Backoff::default();
        let mut gone_in_a_row = 0;
        loop {
            let resource_version = lock(&view).resource_version.clone();
            let end = self.watch_once(&view, &resource_version).await;
            lock(&view).synced = false;
            if !matches!(end, WatchEnd::Gone) {
                gone_in_a_row = 0;
            }
            match end {
                WatchEnd::Closed { events } if events > 0 => backoff.reset(),
                WatchEnd::Closed { .. } => {
                    // An empty stream: resume from the same point, but never in a hot loop.
                    tokio::time::sleep(backoff.next_delay()).await;
                }
                WatchEnd::Gone => {
                    gone_in_a_row += 1;
                    if gone_in_a_row > 1 {
                        // A fresh list's resourceVersion was refused again: do not spin.
                        tokio::time::sleep(backoff.next_delay()).await;
                    }
                    tracing::debug!("watch resourceVersion expired; listing again");
                    self.relist(&view, &mut backoff).await;
                }
                WatchEnd::Failed(error) => {
                    tracing::debug!(%error, "pod watch failed; reconnecting with backoff");
                    tokio::time::sleep(backoff.next_delay()).await;
                }
            }
        }
    }

    /// Lists until it succeeds, then replaces the view entirely.
    async fn relist(&self, view: &Mutex<View>, backoff: &mut Backoff) {
        loop {
            let lister = Lister {
                client: &self.client,
                namespace: &self.namespace,
                selector: &self.selector,
                page_size: self.page_size,
            };
            match lister.snapshot(Records::default, Records::add_page).await {
                Ok(snapshot) => {
                    let resource_version = snapshot.resource_version.unwrap_or_default();
                    lock(view).reseed(snapshot.collected, resource_version);
                    return;
                }
                Err(error) => {
                    tracing::debug!(%error, "relisting pods failed; retrying with backoff");
                    tokio::time::sleep(backoff.next_delay()).await;
                }
            }
        }
    }

    /// Opens one watch from `resource_version` and applies its events until it ends.
    async fn watch_once(&self, view: &Mutex<View>, resource_version: &str) -> WatchEnd {
        let params = WatchParams {
            label_selector: Some(self.selector.clone()),
            timeout: Some(WATCH_TIMEOUT_SECONDS),
            bookmarks: true,
            ..WatchParams::default()
        };
        let request = match list::pods_request(&self.namespace).watch(&params, resource_version) {
            Ok(request) => request,
            Err(error) => return WatchEnd::Failed(kube::Error::BuildRequest(error)),
        };
        let response = match exchange::open(&self.client, &request, REQUEST_TIMEOUT).await {
            Ok(response) => response,
            Err(Miss::Refused { refusal, .. }) if refusal.code == 410 => return WatchEnd::Gone,
            Err(miss) => return WatchEnd::Failed(miss.into_kube_error()),
        };
        lock(view).synced = true;
        let mut body = response.into_body();
        let mut buffer: Vec<u8> = Vec::new();
        let mut events = 0;
        loop {
            let frame = match body.frame().await {
                None => return WatchEnd::Closed { events },
                Some(Err(error)) => return WatchEnd::Failed(error),
                Some(Ok(frame)) => frame,
            };
            let Ok(data) = frame.into_data() else {
                continue;
            };
            buffer.extend_from_slice(&data);
            while let Some(newline) = buffer.iter().position(|&byte| byte == b'\n') {
                let line: Vec<u8> = buffer.drain(..=newline).collect();
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let event = match apiary_seeds::decode_watch_event(&line) {
                    Ok(event) => event,
                    Err(error) => return WatchEnd::Failed(kube::Error::SerdeError(error.0)),
                };
                events += 1;
                if let Some(end) = apply(&mut lock(view), event) {
                    return end;
                }
            }
        }
    }
}

/// Applies one event to the view; `Some` when the event ends the stream.
fn apply(view: &mut View, event: LeanWatchEvent) -> Option<WatchEnd> {
    match event {
        LeanWatchEvent::Added(pod) | LeanWatchEvent::Modified(pod) => {
            view.advance(pod.resource_version.clone());
            view.pods.insert(record_key(&pod), pod);
        }
        LeanWatchEvent::Deleted(pod) => {
            view.advance(pod.resource_version.clone());
            view.pods.remove(&record_key(&pod));
        }
        LeanWatchEvent::Bookmark { resource_version } => view.advance(resource_version),
        LeanWatchEvent::Error(status) if status.code == 410 => return Some(WatchEnd::Gone),
        LeanWatchEvent::Error(status) => {
            let code = u16::try_from(status.code).unwrap_or_default();
            let status = Status::failure(&status.message, &status.reason).with_code(code);
            return Some(WatchEnd::Failed(kube::Error::Api(status.boxed())));
        }
    }
    None
}

/// Reconnect delays: 1 s doubling to 30 s, each with ±20 % jitter.
#[derive(Debug, Default)]
struct Backoff {
    failures: u32,
}

impl Backoff {
    const BASE: Duration = Duration::from_secs(1);
    const MAX: Duration = Duration::from_secs(30);

    fn next_delay(&mut self) -> Duration {
        let nominal = Self::BASE
            .saturating_mul(1 << self.failures.min(5))
            .min(Self::MAX);
        self.failures = self.failures.saturating_add(1);
        // A fresh randomly keyed hash is the jitter source: no extra dependency, no clock.
        let random = RandomState::new().hash_one(self.failures);
        let permille = 800 + random % 401;
        nominal.mul_f64(permille as f64 / 1000.0)
    }

    fn reset(&mut self) {
        self.failures = 0;
    }
}
