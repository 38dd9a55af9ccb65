//! The fake kubelet's view of the cluster: it registers its Node, then merges the pod watches
//! and the metadata-only Secret watches of its scope into one feed that retries on its own.
//!
//! Layer: imperative shell over kube-rs. Reads and registers; decides nothing, and never
//! transfers a Secret's payload.

use std::time::Duration;

use futures::stream::{BoxStream, SelectAll};
use futures::{StreamExt, stream};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, Pod, Secret};
use kube::api::{PartialObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::utils::Backoff;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client};

use super::node::{node_object, node_status_patch};
use super::options::Scope;
use super::tracker::Key;

/// How soon a failed watch tries again. On loopback nothing is gained by backing off further,
/// and a restarted apiserver is watched again within this time of answering.
pub(super) const WATCH_RETRY: Duration = Duration::from_millis(250);

/// The watches' retry policy: every [`WATCH_RETRY`], forever.
pub(super) struct QuickRetry;

impl Iterator for QuickRetry {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        Some(WATCH_RETRY)
    }
}

impl Backoff for QuickRetry {
    fn reset(&mut self) {}
}

/// One item from the merged watches.
pub(super) enum Feed {
    /// A pod event from the watch of this namespace (`None`: all namespaces).
    Pod(Option<String>, Box<Event<Pod>>),
    /// A Secret was added or changed in this namespace (its metadata only: the kubelet never
    /// transfers a Secret's payload).
    SecretAppeared(Option<String>),
    /// A watch failed; it backs off and restarts by itself.
    WatchFailed,
    /// An event that changes nothing (a Secret's removal, list boundaries of the Secret watch).
    Nothing,
}

pub(super) fn code_of(error: &kube::Error) -> Option<u16> {
    match error {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

/// Creates the Node (an existing one is reused) and writes its Ready status.
pub(super) async fn register_node(client: &Client, name: &str) -> Result<(), kube::Error> {
    let nodes: Api<Node> = Api::all(client.clone());
    match nodes
        .create(&PostParams::default(), &node_object(name))
        .await
    {
        Ok(_) => {}
        Err(error) if code_of(&error) == Some(409) => {}
        Err(error) => return Err(error),
    }
    nodes
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(node_status_patch(name, Timestamp::now())),
        )
        .await?;
    Ok(())
}

/// The pod and Secret watches of `scope`, merged.
pub(super) fn watches(client: &Client, scope: &Scope) -> SelectAll<BoxStream<'static, Feed>> {
    let namespaces: Vec<Option<String>> = match scope {
        Scope::AllNamespaces => vec![None],
        Scope::Namespaces(names) => names.iter().cloned().map(Some).collect(),
    };
    let mut all: Vec<BoxStream<'static, Feed>> = Vec::new();
    for namespace in namespaces {
        // Secrets are watched as metadata only: the payload never leaves the apiserver.
        let (pods, secrets): (Api<Pod>, Api<PartialObjectMeta<Secret>>) = match &namespace {
            Some(ns) => (
                Api::namespaced(client.clone(), ns),
                Api::namespaced(client.clone(), ns),
            ),
            None => (Api::all(client.clone()), Api::all(client.clone())),
        };
        let tag = namespace.clone();
        all.push(
            watcher::watcher(pods, watcher::Config::default())
                .backoff(QuickRetry)
                .map(move |event| match event {
                    Ok(event) => Feed::Pod(tag.clone(), Box::new(event)),
                    Err(_) => Feed::WatchFailed,
                })
                .boxed(),
        );
        all.push(
            watcher::watcher(secrets, watcher::Config::default())
                .backoff(QuickRetry)
                .map(|event| match event {
                    Ok(Event::Apply(meta) | Event::InitApply(meta)) => {
                        Feed::SecretAppeared(meta.metadata.namespace)
                    }
                    Ok(_) => Feed::Nothing,
                    Err(_) => Feed::WatchFailed,
                })
                .boxed(),
        );
    }
    stream::select_all(all)
}

pub(super) fn key_of(pod: &Pod) -> Option<Key> {
    Some((pod.metadata.namespace.clone()?, pod.metadata.name.clone()?))
}

pub(super) fn bound_node(pod: &Pod) -> Option<&str> {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .filter(|n| !n.is_empty())
}
