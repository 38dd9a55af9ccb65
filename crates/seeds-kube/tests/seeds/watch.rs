//! `PodSeeds` in watch mode through a real `kube::Client` over a scripted service (seeds.md
//! § Watch mode; scenarios K32–K36): one LIST then a WATCH from its resourceVersion, resolves
//! from the view with zero requests while synced, relist on 410, re-watch on a normal end,
//! resume from bookmarks, and a LIST of its own when the watch is broken.
//!
//! I/O mapping tests with real time (short waits only while the background task catches up).

use std::net::SocketAddr;
use std::num::NonZeroU16;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::mock::*;
use apiary_seeds::{Pods, Port, SkipReason};
use apiary_seeds_kube::{PodSeeds, SeedsError, SeedsMode, SeedsOptions};
use serde_json::Value;
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

/// The scripted apiserver: a mutable pod list and the senders of every watch stream opened.
struct Scripted {
    api: MockApi,
    items: Arc<Mutex<(Vec<Value>, String)>>,
    streams: Arc<Mutex<Vec<UnboundedSender<String>>>>,
    watch_status: Arc<Mutex<Option<(u16, String)>>>,
}

impl Scripted {
    fn new(items: Vec<Value>, resource_version: &str) -> Self {
        let items = Arc::new(Mutex::new((items, resource_version.to_owned())));
        let streams: Arc<Mutex<Vec<UnboundedSender<String>>>> = Arc::default();
        let watch_status: Arc<Mutex<Option<(u16, String)>>> = Arc::default();
        let (list_items, list_streams, list_status) = (
            Arc::clone(&items),
            Arc::clone(&streams),
            Arc::clone(&watch_status),
        );
        let api = MockApi::new(move |uri| {
            if uri.contains("watch=true") {
                if let Some((code, body)) = list_status.lock().unwrap().clone() {
                    return Reply::Json(code, body);
                }
                let (sender, receiver) = unbounded_channel();
                list_streams.lock().unwrap().push(sender);
                Reply::Stream(receiver)
            } else {
                let (items, resource_version) = &*list_items.lock().unwrap();
                Reply::Json(200, page(items, None, resource_version))
            }
        });
        Scripted {
            api,
            items,
            streams,
            watch_status,
        }
    }

    fn seeds(&self) -> PodSeeds {
        let pods = Pods {
            namespace: Some("ring".to_owned()),
            label_selector: "app=ring-node".to_owned(),
            port: Port::Number(NonZeroU16::new(7000).unwrap()),
        };
        let options = SeedsOptions {
            mode: SeedsMode::Watch,
            ..SeedsOptions::default()
        };
        PodSeeds::with_client(pods, self.api.client())
            .unwrap()
            .with_options(options)
    }

    /// Sends a line on the newest open stream.
    fn send(&self, line: String) {
        let streams = self.streams.lock().unwrap();
        streams
            .last()
            .expect("a watch stream is open")
            .send(line)
            .expect("the stream is read");
    }

    /// Ends the newest stream normally.
    fn close(&self) {
        self.streams.lock().unwrap().pop();
    }

    fn set_list(&self, items: Vec<Value>, resource_version: &str) {
        *self.items.lock().unwrap() = (items, resource_version.to_owned());
    }
}

pub(crate) fn addrs(texts: &[&str]) -> Vec<SocketAddr> {
    texts.iter().map(|text| text.parse().unwrap()).collect()
}

async fn wait_synced(seeds: &PodSeeds) {
    eventually("the watch synced", || seeds.watch_synced()).await;
}

/// Resolves until the answer is `expected` (the task applies events asynchronously).
pub(crate) async fn resolves_to(seeds: &mut PodSeeds, expected: &[&str]) {
    let expected = addrs(expected);
    let mut last = None;
    for _ in 0..500 {
        match seeds.resolve().await {
            Ok(found) if found == expected => return,
            other => last = Some(format!("{other:?}")),
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("never resolved to {expected:?}; last {last:?}");
}

/// K32 and the watch request: after the initial list, resolves send nothing; ADDED, DELETED and
/// MODIFIED (terminating) are reflected.
#[tokio::test]
async fn k32_watch_mode_resolves_from_the_view() {
    let script = Scripted::new(vec![running("a", "10.0.0.1")], "100");
    let mut seeds = script.seeds();
    assert!(
        script.api.requests().is_empty(),
        "nothing starts before the first resolve"
    );
    assert_eq!(seeds.resolve().await.unwrap(), addrs(&["10.0.0.1:7000"]));
    assert_eq!(script.api.lists().len(), 1);
    wait_synced(&seeds).await;
    let watch = &script.api.watches()[0];
    assert!(
        watch.starts_with("/api/v1/namespaces/ring/pods?"),
        "{watch}"
    );
    assert!(watch.contains("labelSelector=app%3Dring-node"), "{watch}");
    assert_eq!(
        query_param(watch, "resourceVersion").as_deref(),
        Some("100")
    );
    assert_eq!(
        query_param(watch, "allowWatchBookmarks").as_deref(),
        Some("true")
    );
    let timeout: u32 = query_param(watch, "timeoutSeconds")
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=300).contains(&timeout));

    let before = script.api.requests().len();
    for _ in 0..10 {
        assert_eq!(seeds.resolve().await.unwrap(), addrs(&["10.0.0.1:7000"]));
    }
    assert_eq!(
        script.api.requests().len(),
        before,
        "ten synced resolves sent no request"
    );

    let b = at_version(running("b", "10.0.0.2"), "101");
    script.send(event("ADDED", &b));
    resolves_to(&mut seeds, &["10.0.0.1:7000", "10.0.0.2:7000"]).await;
    script.send(event("DELETED", &at_version(b, "102")));
    resolves_to(&mut seeds, &["10.0.0.1:7000"]).await;
    script.send(event(
        "MODIFIED",
        &terminating(at_version(running("a", "10.0.0.1"), "103")),
    ));
    let mut terminating_seen = false;
    for _ in 0..500 {
        if let Err(SeedsError::NoAddresses(error)) = seeds.resolve().await {
            assert_eq!(error.report.skipped.get(SkipReason::Terminating), 1);
            terminating_seen = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        terminating_seen,
        "the terminating pod left the view's addresses"
    );
    assert_eq!(script.api.lists().len(), 1, "events never cause a list");
}

/// K33: a watch ERROR 410 forces a relist that replaces the view: a pod deleted meanwhile is
/// gone, and the next watch starts from the new list's resourceVersion.
#[tokio::test]
async fn k33_error_410_relists_and_replaces_the_view() {
    let script = Scripted::new(
        vec![running("a", "10.0.0.1"), running("b", "10.0.0.2")],
        "100",
    );
    let mut seeds = script.seeds();
    seeds.resolve().await.unwrap();
    wait_synced(&seeds).await;
    script.set_list(
        vec![running("b", "10.0.0.2"), running("c", "10.0.0.3")],
        "200",
    );
    script.send(event(
        "ERROR",
        &serde_json::from_str(&status(410, "Expired", "too old resource version")).unwrap(),
    ));
    eventually("a relist", || script.api.lists().len() == 2).await;
    let relist = &script.api.lists()[1];
    assert_eq!(query_param(relist, "resourceVersion"), None);
    assert_eq!(query_param(relist, "continue"), None);
    eventually("a new watch", || script.api.watches().len() == 2).await;
    assert_eq!(
        query_param(&script.api.watches()[1], "resourceVersion").as_deref(),
        Some("200")
    );
    wait_synced(&seeds).await;
    assert_eq!(
        seeds.resolve().await.unwrap(),
        addrs(&["10.0.0.2:7000", "10.0.0.3:7000"])
    );
    assert_eq!(script.api.lists().len(), 2);
}

/// K33: an HTTP 410 on the watch request itself also forces a relist.
#[tokio::test]
async fn k33_http_410_on_the_watch_request_relists() {
    let script = Scripted::new(vec![running("a", "10.0.0.1")], "100");
    *script.watch_status.lock().unwrap() = Some((410, status(410, "Gone", "too old")));
    let mut seeds = script.seeds();
    seeds.resolve().await.unwrap();
    eventually("a relist after the 410", || script.api.lists().len() == 2).await;
    assert!(!seeds.watch_synced());
    // A 410 again right after the relist backs off instead of spinning.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(script.api.lists().len() <= 3, "{:?}", script.api.requests());
    *script.watch_status.lock().unwrap() = None;
    wait_synced(&seeds).await;
}

/// K34: a stream the server ends normally is re-opened from the last resourceVersion, with no
/// relist.
#[tokio::test]
async fn k34_closed_watch_resumes_without_relist() {
    let (script, mut seeds) = synced_on_a().await;
    script.send(event("ADDED", &at_version(running("b", "10.0.0.2"), "150")));
    resolves_to(&mut seeds, &["10.0.0.1:7000", "10.0.0.2:7000"]).await;
    rewatch_resumes_from(&script, "150").await;
    wait_synced(&seeds).await;
    assert_eq!(
        seeds.resolve().await.unwrap(),
        addrs(&["10.0.0.1:7000", "10.0.0.2:7000"])
    );
    assert_eq!(script.api.lists().len(), 1, "no relist on a normal end");
}

/// A scripted list of pod `a` at resourceVersion 100, and seeds whose first resolve synced the
/// watch from it.
async fn synced_on_a() -> (Scripted, PodSeeds) {
    let script = Scripted::new(vec![running("a", "10.0.0.1")], "100");
    let mut seeds = script.seeds();
    seeds.resolve().await.unwrap();
    wait_synced(&seeds).await;
    (script, seeds)
}

/// Closes the stream and asserts the re-watch resumes from `resource_version`.
async fn rewatch_resumes_from(script: &Scripted, resource_version: &str) {
    script.close();
    eventually("a re-watch", || script.api.watches().len() == 2).await;
    assert_eq!(
        query_param(&script.api.watches()[1], "resourceVersion").as_deref(),
        Some(resource_version)
    );
}

/// K35: a BOOKMARK advances the resume point of the next watch.
#[tokio::test]
async fn k35_bookmark_advances_the_resume_point() {
    let (script, _seeds) = synced_on_a().await;
    let bookmark: Value = serde_json::json!({"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": "555"}});
    script.send(event("BOOKMARK", &bookmark));
    // The bookmark changes no address; close only after it was read (the stream is in order).
    script.send(event(
        "MODIFIED",
        &at_version(running("a", "10.0.0.1"), "556"),
    ));
    rewatch_resumes_from(&script, "556").await;

    let (script, _seeds) = synced_on_a().await;
    script.send(event("BOOKMARK", &bookmark));
    rewatch_resumes_from(&script, "555").await;
}

/// K36: a broken watch unsyncs the view; the next resolve lists itself and answers from that
/// list, never from the stale view; its errors are surfaced.
#[tokio::test]
async fn k36_broken_watch_falls_back_to_listing() {
    let (script, mut seeds) = synced_on_a().await;
    *script.watch_status.lock().unwrap() = Some((500, status(500, "InternalError", "etcd down")));
    script.send("this is not a watch event\n".to_owned());
    eventually("the view unsynced", || !seeds.watch_synced()).await;
    script.set_list(vec![running("z", "10.0.0.26")], "300");
    assert_eq!(seeds.resolve().await.unwrap(), addrs(&["10.0.0.26:7000"]));
    assert_eq!(script.api.lists().len(), 2, "the resolve listed itself");

    script.set_list(vec![], "301");
    let error = seeds.resolve().await.unwrap_err();
    assert!(matches!(error, SeedsError::NoAddresses(_)), "{error:?}");
    assert_eq!(script.api.lists().len(), 3);
}

/// Dropping `PodSeeds` stops its watch task (the stream is released).
#[tokio::test]
async fn dropping_pod_seeds_stops_the_watch() {
    let (script, seeds) = synced_on_a().await;
    let sender = script.streams.lock().unwrap().last().unwrap().clone();
    assert!(!sender.is_closed());
    drop(seeds);
    eventually("the stream released", || sender.is_closed()).await;
}
