//! Proof-carrying deletions for tests that call `delete_pod`/`delete_secret` directly (the
//! fake's own tests, the kube shell's request-shape tests). Test support (feature `fake`).
//!
//! Builds nothing itself: it describes an observation of the given name, uid and resourceVersion
//! as plain facts marked for a test agent and lets `apiary-classify`'s verification turn it into
//! the deletion, exactly as an observed pod would be. Must not be used by the driver.

use apiary_classify::binding::{APIARY, Owner};
use apiary_classify::facts::{ObjectMarks, ObservedPod, ObservedSecret};
use apiary_classify::verify::{PodDeletion, SecretDeletion, verify_pod, verify_secret};

/// The agent id the described observations are marked for.
const TEST_AGENT_ID: &str = "fake-observation";

fn marks(name: &str, uid: &str, resource_version: Option<&str>) -> ObjectMarks {
    ObjectMarks {
        name: Some(name.to_owned()),
        uid: Some(uid.to_owned()),
        resource_version: resource_version.map(str::to_owned),
        managed_by: Some(APIARY.managed_by.to_owned()),
        binding_version: Some(APIARY.binding_version.to_owned()),
        agent_id: Some(TEST_AGENT_ID.to_owned()),
        ..ObjectMarks::default()
    }
}

/// The deletion an observation of pod `name` at `{uid, resource_version}` authorises.
///
/// # Panics
/// When a value is empty (no observation verifies without a name, uid and resourceVersion).
pub fn pod_deletion(name: &str, uid: &str, resource_version: &str) -> PodDeletion {
    let observed = ObservedPod {
        marks: marks(name, uid, Some(resource_version)),
        facts: Default::default(),
    };
    verify_pod(&observed, &Owner::apiary(TEST_AGENT_ID))
        .expect("a marked observation with a name, uid and resourceVersion verifies")
        .deletion()
}

/// The uid-fenced deletion an observation of Secret `name` with `uid` authorises.
///
/// # Panics
/// When a value is empty.
pub fn secret_deletion(name: &str, uid: &str) -> SecretDeletion {
    let observed = ObservedSecret {
        marks: marks(name, uid, None),
    };
    verify_secret(&observed, &Owner::apiary(TEST_AGENT_ID))
        .and_then(|secret| secret.deletion())
        .expect("a marked observation with a name and uid verifies")
}
