//! Seeds' bytes on the wire (seeds.md § The request): `PodSeeds` in list mode asks the real
//! `kube-apiserver` for compressed pages (kube's `gzip` feature sends `Accept-Encoding: gzip` and
//! decodes the stream as it arrives) and so receives at most 0.15 of the bytes of the same listing
//! with compression turned off (`Config::disable_compression`), with the same addresses and the
//! same pages. Bytes are counted by the envtest fault proxy as they arrive from the upstream,
//! compressed when the server compressed.
//!
//! Layer: integration test; loopback only; skips without `KUBEBUILDER_ASSETS`. No timed
//! assertions.

use std::num::NonZeroU32;

use apiary_envtest::Identity;
use apiary_envtest::proxy::FaultProxy;
use apiary_seeds::{Pods, Port};
use apiary_seeds_kube::{PodSeeds, SeedsMode, SeedsOptions};
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

const PODS: usize = 600;
const PAGE: u32 = 200;

fn seed_pod(i: usize) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": format!("seed-{i:04}"), "labels": {"app": "ring-node", "tier": "gossip"},
                     "annotations": {"example.dev/owner": "the seeds compression test"}},
        "spec": {
            "nodeName": "seeds-node",
            "containers": [{"name": "main", "image": "registry.example/ring:1",
                            "env": [{"name": "RING_ROLE", "value": "seed"}],
                            "ports": [{"name": "gossip", "containerPort": 7000}]}],
        },
    }))
    .expect("a pod")
}

fn seeds(client: kube::Client) -> PodSeeds {
    let pods = Pods {
        namespace: None,
        label_selector: "app=ring-node".to_owned(),
        port: Port::Name("gossip".to_owned()),
    };
    PodSeeds::with_client(pods, client)
        .expect("valid")
        .with_options(SeedsOptions {
            page_size: NonZeroU32::new(PAGE).expect("non-zero"),
            mode: SeedsMode::List,
        })
}

/// The seeds listing asks for gzip: through the proxy it receives at most 0.15 of the bytes
/// the same listing receives with compression off, in the same number of pages, and resolves
/// the same addresses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seeds_pages_arrive_gzipped_at_most_a_seventh_of_the_plain_bytes() {
    let Some(plane) = apiary_envtest::shared() else {
        return;
    };
    let ns = plane.namespace("seeds-gzip");
    let admin: Api<Pod> = Api::namespaced(plane.client(Identity::Admin), &ns);
    futures::stream::iter(0..PODS)
        .map(|i| {
            let admin = admin.clone();
            async move {
                let pod = admin.create(&PostParams::default(), &seed_pod(i)).await?;
                let name = pod.metadata.name.unwrap_or_default();
                let ip = format!("10.2.{}.{}", i / 250, i % 250 + 1);
                let status =
                    json!({"status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}]}});
                admin
                    .patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
                    .await
                    .map(drop)
            }
        })
        .buffer_unordered(16)
        .try_collect::<Vec<()>>()
        .await
        .expect("the admin creates the pods and writes their status");

    let proxy = FaultProxy::start(
        &plane.server_url(),
        plane.ca_pem(),
        plane.token(Identity::Admin),
    )
    .await
    .expect("the proxy starts");
    let _already = rustls::crypto::ring::default_provider().install_default();

    let zipped = seeds(proxy.client(&ns).expect("client"))
        .resolve()
        .await
        .expect("resolved with gzip");
    let gzip = proxy.counts();
    proxy.clear();

    let mut config = proxy.config(&ns);
    config.disable_compression = true;
    let plain = seeds(kube::Client::try_from(config).expect("client"))
        .resolve()
        .await
        .expect("resolved without compression");
    let uncompressed = proxy.counts();

    assert_eq!(zipped.len(), PODS);
    assert_eq!(zipped, plain);
    // Three pages of 200 and the empty last page the real server pages into, both ways.
    assert_eq!(gzip.requests, uncompressed.requests);
    assert!(gzip.requests >= 3, "{gzip:?}");
    println!(
        "{PODS} pods in pages of {PAGE}: {} bytes gzipped, {} plain",
        gzip.bytes_from_upstream, uncompressed.bytes_from_upstream
    );
    assert!(
        gzip.bytes_from_upstream * 100 <= uncompressed.bytes_from_upstream * 15,
        "gzip {} vs plain {}",
        gzip.bytes_from_upstream,
        uncompressed.bytes_from_upstream
    );
}
