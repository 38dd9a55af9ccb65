//! What the benchmark runs against: the pinned image, the synthetic pods' selector, port name and
//! page size, building the synthetic pod fixture on the control plane, and the `--full-list`
//! child (a full `k8s_openapi` decode of that list, the baseline apiary's lean decode is compared
//! with). Talks to the apiserver; measures nothing.

use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::json;

use crate::synthetic;

/// The image both deploy paths run (pinned by digest, as `apiary deploy` requires).
pub const IMAGE: &str = "registry.example/agent@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// The synthetic pods' selector and named port.
pub const SELECTOR: &str = "app=ring-node";
pub const PORT_NAME: &str = "gossip";

/// The page size of apiary's list mode (`SeedsOptions::default`) and of the full-decode baseline.
const PAGE_SIZE: u32 = 500;

/// How many pod creates (and status writes) are in flight while the fixture is built.
const CREATE_CONCURRENCY: usize = 32;

/// `--full-list KUBECONFIG NAMESPACE`: the baseline child. Lists the synthetic pods page by page
/// with kube-rs into full `k8s_openapi` `Pod`s (every field decoded) and counts the addressed ones.
pub fn full_list(kubeconfig: &str, namespace: &str) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let kubeconfig = Kubeconfig::read_from(kubeconfig).map_err(|e| e.to_string())?;
        let config =
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .map_err(|e| e.to_string())?;
        let client = kube::Client::try_from(config).map_err(|e| e.to_string())?;
        let pods: Api<Pod> = Api::namespaced(client, namespace);
        let mut params = ListParams::default().labels(SELECTOR).limit(PAGE_SIZE);
        let mut addressed = 0usize;
        loop {
            let page = pods.list(&params).await.map_err(|e| e.to_string())?;
            addressed += page
                .items
                .iter()
                .filter(|p| p.status.as_ref().and_then(|s| s.pod_ip.as_ref()).is_some())
                .count();
            match page.metadata.continue_ {
                Some(token) if !token.is_empty() => params = params.continue_token(&token),
                _ => break,
            }
        }
        println!("{addressed}");
        Ok(())
    })
}

/// Creates `count` synthetic pods in `namespace` as the admin and writes each one's status.
pub async fn create_pods(
    client: &kube::Client,
    namespace: &str,
    count: usize,
) -> Result<(), String> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    futures::stream::iter(0..count)
        .map(|index| {
            let pods = pods.clone();
            async move {
                let mut body = synthetic::pod(index);
                let status = body["status"].take();
                let meta = body["metadata"].as_object_mut().ok_or("metadata")?;
                for server_owned in [
                    "uid",
                    "resourceVersion",
                    "creationTimestamp",
                    "managedFields",
                    "deletionTimestamp",
                    "deletionGracePeriodSeconds",
                    "generateName",
                    "ownerReferences",
                ] {
                    meta.remove(server_owned);
                }
                meta.insert("namespace".to_owned(), json!(namespace));
                let name = meta["name"].as_str().ok_or("name")?.to_owned();
                let pod: Pod = serde_json::from_value(body).map_err(|e| e.to_string())?;
                pods.create(&PostParams::default(), &pod)
                    .await
                    .map_err(|e| format!("create {name}: {e}"))?;
                let patch = Patch::Merge(json!({"status": status}));
                pods.patch_status(&name, &PatchParams::default(), &patch)
                    .await
                    .map_err(|e| format!("status of {name}: {e}"))?;
                Ok::<(), String>(())
            }
        })
        .buffer_unordered(CREATE_CONCURRENCY)
        .try_collect::<()>()
        .await
}
