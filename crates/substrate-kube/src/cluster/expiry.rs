//! `Cluster`'s one update (deploy.md § Expiry): the JSON merge patch of a pod's
//! `apiary.dev/expires-at` annotation carrying `metadata.resourceVersion`, which the apiserver
//! checks before applying (409 `Conflict` when the pod changed since the observation).
//!
//! Layer: the imperative shell. It sends and maps the answer; whether to retry a conflict is the
//! renew machine's decision. It never sends anything but the guard and the annotation.

use apiary_classify::failure::{Operation, RequestFailure};
use apiary_classify::request::{ExpiryWrite, WriteAnswer};
use apiary_substrate::driver::expiry_patch;
use kube::core::Request;
use kube::core::params::{Patch, PatchParams};

use super::mapping::{REASON_CONFLICT, REASON_NOT_FOUND};
use super::{Call, Cluster};

impl Cluster {
    /// [`Substrate::write_pod_expiry`](apiary_substrate::Substrate::write_pod_expiry).
    pub(super) async fn patch_expiry(
        &self,
        write: &ExpiryWrite,
    ) -> Result<WriteAnswer, RequestFailure> {
        let call = Call::new(Operation::UpdatePod, self.object(write.name()));
        let patch = expiry_patch(write);
        let request = Request::new(self.pods_path()).patch(
            write.name(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        );
        match self.exchange(&call, request).await.result {
            Ok(_) => Ok(WriteAnswer::Written),
            // Split on Status.reason, never the code: a stale resourceVersion is `Conflict`.
            Err(failure) if failure.has_reason(REASON_CONFLICT) => Ok(WriteAnswer::Conflict),
            Err(failure) if failure.has_reason(REASON_NOT_FOUND) => Ok(WriteAnswer::NotFound),
            Err(failure) => Err(call.error(failure)),
        }
    }
}
