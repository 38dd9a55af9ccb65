//! The call log queries of [`FakeCluster`]: every call in order, the writes, summaries, and the
//! creates, deletes and sleeps by kind. Read-only over the log (only `clear_calls` empties it);
//! never touches the model.

use std::time::Duration;

use apiary_classify::fence::Fence;
use k8s_openapi::api::core::v1::{Pod, Secret};

use crate::fake::call::Call;
use crate::fake::cluster::{FakeCluster, lock};

impl FakeCluster {
    /// Every call so far, in order.
    pub fn calls(&self) -> Vec<Call> {
        lock(&self.state).calls.clone()
    }

    /// The writes so far (namespace ensure, creates, deletes), in order.
    pub fn mutations(&self) -> Vec<Call> {
        self.calls().into_iter().filter(Call::is_mutation).collect()
    }

    /// [`Call::summary`] of every write, in order.
    pub fn mutation_summaries(&self) -> Vec<String> {
        self.mutations().iter().map(Call::summary).collect()
    }

    /// [`Call::summary`] of every call, in order.
    pub fn call_summaries(&self) -> Vec<String> {
        self.calls().iter().map(Call::summary).collect()
    }

    /// The Secrets passed to `create_secret`, in order.
    pub fn creates_of_secrets(&self) -> Vec<Secret> {
        self.calls()
            .into_iter()
            .filter_map(|c| match c {
                Call::CreateSecret { secret } => Some(secret),
                _ => None,
            })
            .collect()
    }

    /// The pods passed to `create_pod`, in order.
    pub fn creates_of_pods(&self) -> Vec<Pod> {
        self.calls()
            .into_iter()
            .filter_map(|c| match c {
                Call::CreatePod { pod } => Some(pod),
                _ => None,
            })
            .collect()
    }

    /// Every `delete_pod` as (name, fence), in order.
    pub fn pod_deletes(&self) -> Vec<(String, Fence)> {
        self.calls()
            .into_iter()
            .filter_map(|c| match c {
                Call::DeletePod { name, fence } => Some((name, fence)),
                _ => None,
            })
            .collect()
    }

    /// Every `delete_secret` as (name, uid), in order.
    pub fn secret_deletes(&self) -> Vec<(String, String)> {
        self.calls()
            .into_iter()
            .filter_map(|c| match c {
                Call::DeleteSecret { name, uid } => Some((name, uid)),
                _ => None,
            })
            .collect()
    }

    /// The durations passed to `sleep`, in order.
    pub fn sleeps(&self) -> Vec<Duration> {
        self.calls()
            .into_iter()
            .filter_map(|c| match c {
                Call::Sleep { duration } => Some(duration),
                _ => None,
            })
            .collect()
    }

    /// How many polls (`sleep` + `wait_for_pod_change`) have happened.
    pub fn polls(&self) -> u32 {
        lock(&self.state).polls
    }

    /// Forget the call log (scripts, hooks and the clock are kept).
    pub fn clear_calls(&self) {
        lock(&self.state).calls.clear();
    }
}
