//! The stage of the real seeds tests: a namespace of the process's own real control plane
//! (`apiary_envtest::private`), its admin client for staging pods, and the client-side request
//! tap (`apiary_envtest::tap`) that `PodSeeds`' clients are built with. No kubelet runs: the tests
//! bind pods by `spec.nodeName` and write their status themselves.
//!
//! Layer: test-only harness; it decides nothing. It talks to 127.0.0.1 only, and [`real_stage`]
//! returns `None` (the tier is skipped, one stderr line) without `KUBEBUILDER_ASSETS`.

use std::time::Duration;

use apiary_apiserver_sim::LoggedRequest;
use apiary_envtest::tap::Tap;
use apiary_envtest::{ControlPlane, Identity, TestNamespace};

/// How long any wait may take before a test fails as hung (not a performance bound).
pub const HANG: Duration = Duration::from_secs(60);

/// One test's namespace on the real control plane, and its tap.
pub struct Stage {
    plane: &'static ControlPlane,
    namespace: TestNamespace,
    admin: kube::Client,
    /// The log of every request the stage's tapped clients sent.
    pub tap: Tap,
}

/// A stage on the real server with no kubelet, on a control plane of this process's own (its rows
/// compact etcd, which would turn other processes' watches into `410 Gone`); `None` when the real
/// tier is skipped.
pub async fn real_stage() -> Option<Stage> {
    let plane = apiary_envtest::private()?;
    let namespace = tokio::task::block_in_place(|| plane.namespace("real"));
    Some(Stage {
        plane,
        namespace,
        admin: plane.client(Identity::Admin),
        tap: Tap::new(),
    })
}

impl Stage {
    /// The stage's namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The real control plane.
    pub fn plane(&self) -> Option<&'static ControlPlane> {
        Some(self.plane)
    }

    /// The stage's requests (every client on its tap), in order.
    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.tap.requests()
    }

    /// The admin client (staging and observation; not logged by the tap).
    pub fn admin(&self) -> kube::Client {
        self.admin.clone()
    }
}
