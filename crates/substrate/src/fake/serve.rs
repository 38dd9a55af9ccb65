//! The [`Substrate`] impl of [`FakeCluster`]: each call is logged, takes its scripted [`Step`],
//! and is answered from the model as the module docs of `fake` tabulate; polls advance the
//! virtual clock and run their hooks. Test-only; no I/O, no real clock.

use std::collections::{BTreeMap, VecDeque};
use std::num::NonZeroU32;
use std::time::Duration;

use apiary_classify::expiry::ANNOTATION_EXPIRES_AT;
use apiary_classify::failure::{Operation, RequestFailure};
use apiary_classify::fence::Fence;
use apiary_classify::policy::PolicyDeletion;
use apiary_classify::request::{ExpiryWrite, WriteAnswer};
use apiary_classify::verify::{PodDeletion, SecretDeletion};
use apiary_classify::workspace::ClaimDeletion;
use apiary_cluster_model::{ClusterModel, ListOptions, ModelError, Preconditions, add};
use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use k8s_openapi::api::core::v1::{Pod, Secret};
use k8s_openapi::api::networking::v1::NetworkPolicy;

use crate::env::SecretValues;
use crate::fake::call::Call;
use crate::fake::clock::{ServerClock, to_chrono};
use crate::fake::cluster::{FakeCluster, lock};
use crate::fake::errors::model_error;
use crate::fake::step::Step;
use crate::substrate::{
    CreateAnswer, DeleteAnswer, Listed, NamespaceCheck, NamespaceFailure, Substrate,
};

fn list_options(selector: &str) -> ListOptions {
    ListOptions {
        label_selector: Some(selector.to_owned()),
        ..ListOptions::default()
    }
}

/// What a write answers when it does not fail: the one difference between a create and a delete
/// for [`FakeCluster::write`].
trait WriteOutcome: Sized {
    /// The outcome a scripted step answers in place of the model, if the step carries one.
    fn scripted(step: &Step) -> Option<Self>;
    /// The outcome a model result means, or the model error that stays a failure.
    fn of(result: Result<(), ModelError>) -> Result<Self, ModelError>;
}

impl WriteOutcome for CreateAnswer {
    fn scripted(step: &Step) -> Option<Self> {
        match step {
            Step::Create(outcome) => Some(*outcome),
            _ => None,
        }
    }

    fn of(result: Result<(), ModelError>) -> Result<Self, ModelError> {
        match result {
            Ok(()) => Ok(Self::Created),
            Err(ModelError::AlreadyExists { .. }) => Ok(Self::AlreadyExists),
            Err(e) => Err(e),
        }
    }
}

impl WriteOutcome for DeleteAnswer {
    fn scripted(step: &Step) -> Option<Self> {
        match step {
            Step::Delete(outcome) => Some(*outcome),
            _ => None,
        }
    }

    fn of(result: Result<(), ModelError>) -> Result<Self, ModelError> {
        match result {
            Ok(()) => Ok(Self::Accepted),
            Err(ModelError::NotFound { .. }) => Ok(Self::NotFound),
            Err(ModelError::Conflict { .. }) => Ok(Self::PreconditionFailed),
            Err(e) => Err(e),
        }
    }
}

impl FakeCluster {
    /// Log `call`, apply the request latency, and take the next scripted step of its kind.
    pub(super) fn begin(&self, call: Call) -> Step {
        let (latency, step) = {
            let mut state = lock(&self.state);
            let op = call.op();
            state.calls.push(call);
            let step = op
                .and_then(|op| state.steps.get_mut(&op).and_then(VecDeque::pop_front))
                .unwrap_or(Step::Pass);
            (state.latency, step)
        };
        self.model().advance(latency);
        if let Step::Before(hook) = step {
            hook(&mut self.model());
            Step::Pass
        } else {
            step
        }
    }

    /// Count a poll and run its hooks (after the clock advance).
    fn end_poll(&self) {
        let (n, hooks, mut every) = {
            let mut state = lock(&self.state);
            state.polls += 1;
            let n = state.polls;
            let hooks = state.poll_hooks.remove(&n).unwrap_or_default();
            (n, hooks, std::mem::take(&mut state.every_poll))
        };
        {
            let mut model = self.model();
            for hook in hooks {
                hook(&mut model);
            }
            for hook in &mut every {
                hook(n, &mut model);
            }
        }
        let mut state = lock(&self.state);
        every.append(&mut state.every_poll);
        state.every_poll = every;
    }

    /// An object as errors name it: `<namespace>/<name>`.
    fn object(&self, name: &str) -> String {
        format!("{}/{name}", self.namespace)
    }

    /// A list as errors name it: `in <namespace> matching <selector>`.
    fn list_object(&self, selector: &str) -> String {
        format!("in {} matching {selector}", self.namespace)
    }

    fn server_now(&self) -> Option<DateTime<Utc>> {
        let clock = lock(&self.state).server_clock;
        let now = self.model().now();
        match clock {
            ServerClock::None => None,
            ServerClock::Model => Some(to_chrono(now)),
            ServerClock::ModelOffset(seconds) => {
                Some(to_chrono(now) + chrono::Duration::seconds(seconds))
            }
            ServerClock::Fixed(at) => Some(at),
        }
    }

    fn pod_version(&self, name: &str) -> Option<String> {
        self.model()
            .get_pod(&self.namespace, name)
            .ok()
            .and_then(|p| p.metadata.resource_version)
    }

    /// Perform a write (create or delete), honouring `Fail`, the step's scripted outcome
    /// (model untouched) and `LandThenFail` (performed, then failed); otherwise the model's
    /// result is the answer.
    fn write<O: WriteOutcome>(
        &self,
        step: Step,
        operation: Operation,
        object: &str,
        perform: impl FnOnce(&mut ClusterModel) -> Result<(), ModelError>,
    ) -> Result<O, RequestFailure> {
        let landed_error = match step {
            Step::Fail(error) => return Err(error),
            Step::LandThenFail(error) => Some(error),
            other => {
                if let Some(outcome) = O::scripted(&other) {
                    return Ok(outcome);
                }
                None
            }
        };
        let result = perform(&mut self.model());
        if let Some(error) = landed_error {
            return Err(error);
        }
        O::of(result).map_err(|e| model_error(operation, object, &e))
    }

    /// Perform a read, honouring `Fail` and `LandThenFail` (which, for a read, is a failure).
    fn read<T>(
        &self,
        step: Step,
        read: impl FnOnce(&ClusterModel) -> Result<T, RequestFailure>,
    ) -> Result<T, RequestFailure> {
        match step {
            Step::Fail(error) | Step::LandThenFail(error) => Err(error),
            _ => read(&self.model()),
        }
    }
}

impl Substrate for FakeCluster {
    fn namespace(&self) -> &str {
        &self.namespace
    }

    async fn ensure_namespace(&self) -> Result<NamespaceCheck, NamespaceFailure> {
        let step = self.begin(Call::EnsureNamespace {
            namespace: self.namespace.clone(),
        });
        match step {
            Step::Namespace(failure) => Err(failure),
            Step::Fail(source) => Err(NamespaceFailure::Failed(source)),
            Step::LandThenFail(source) => {
                self.model().ensure_namespace(&self.namespace);
                Err(NamespaceFailure::Failed(source))
            }
            _ => {
                self.model().ensure_namespace(&self.namespace);
                Ok(NamespaceCheck::Present)
            }
        }
    }

    async fn list_pods(&self, selector: &str) -> Result<Listed<Pod>, RequestFailure> {
        let step = self.begin(Call::ListPods {
            selector: selector.to_owned(),
        });
        let items = self.read(step, |m| {
            m.list_pods(Some(&self.namespace), &list_options(selector))
                .map(|p| p.items)
                .map_err(|e| model_error(Operation::ListPods, &self.list_object(selector), &e))
        })?;
        Ok(Listed {
            items,
            server_now: self.server_now(),
        })
    }

    /// In one request: the fake has no pages.
    async fn list_all_pods(
        &self,
        selector: &str,
        _page: NonZeroU32,
    ) -> Result<Listed<Pod>, RequestFailure> {
        self.list_pods(selector).await
    }

    /// In one request: the fake has no pages.
    async fn list_all_secrets(
        &self,
        selector: &str,
        _page: NonZeroU32,
    ) -> Result<Vec<Secret>, RequestFailure> {
        self.list_secrets(selector).await
    }

    /// Performed on the model, with the model's own precondition check.
    async fn write_pod_expiry(&self, write: &ExpiryWrite) -> Result<WriteAnswer, RequestFailure> {
        let changes = BTreeMap::from([(
            ANNOTATION_EXPIRES_AT.to_owned(),
            Some(write.annotation_value()),
        )]);
        let answer = self.model().annotate_pod(
            &self.namespace,
            write.name(),
            Some(write.resource_version()),
            &changes,
        );
        match answer {
            Ok(_) => Ok(WriteAnswer::Written),
            Err(ModelError::Conflict { .. }) => Ok(WriteAnswer::Conflict),
            Err(ModelError::NotFound { .. }) => Ok(WriteAnswer::NotFound),
            Err(other) => Err(RequestFailure::api(
                other.code(),
                other.reason(),
                format!("could not update pod {}: {other}", write.name()),
            )),
        }
    }

    async fn list_secrets(&self, selector: &str) -> Result<Vec<Secret>, RequestFailure> {
        let step = self.begin(Call::ListSecrets {
            selector: selector.to_owned(),
        });
        self.read(step, |m| {
            m.list_secrets(Some(&self.namespace), &list_options(selector))
                .map(|p| p.items)
                .map_err(|e| model_error(Operation::ListSecrets, &self.list_object(selector), &e))
        })
    }

    async fn get_pod(&self, name: &str) -> Result<Option<Pod>, RequestFailure> {
        let step = self.begin(Call::GetPod {
            name: name.to_owned(),
        });
        self.read(step, |m| match m.get_pod(&self.namespace, name) {
            Ok(pod) => Ok(Some(pod)),
            Err(ModelError::NotFound { .. }) => Ok(None),
            Err(e) => Err(model_error(Operation::GetPod, &self.object(name), &e)),
        })
    }

    async fn secret_exists(&self, name: &str) -> Result<bool, RequestFailure> {
        let step = self.begin(Call::SecretExists {
            name: name.to_owned(),
        });
        self.read(step, |m| match m.get_secret(&self.namespace, name) {
            Ok(_) => Ok(true),
            Err(ModelError::NotFound { .. }) => Ok(false),
            Err(e) => Err(model_error(Operation::GetSecret, &self.object(name), &e)),
        })
    }

    async fn read_secret_values(&self, name: &str) -> Result<Option<SecretValues>, RequestFailure> {
        let step = self.begin(Call::ReadSecretValues {
            name: name.to_owned(),
        });
        self.read(step, |m| match m.get_secret(&self.namespace, name) {
            Ok(secret) => Ok(Some(SecretValues::new(
                secret
                    .data
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(key, value)| (key, value.0))
                    .collect(),
            ))),
            Err(ModelError::NotFound { .. }) => Ok(None),
            Err(e) => Err(model_error(Operation::GetSecret, &self.object(name), &e)),
        })
    }

    async fn get_network_policy(
        &self,
        name: &str,
    ) -> Result<Option<NetworkPolicy>, RequestFailure> {
        self.serve_get(name)
    }

    async fn create_network_policy(
        &self,
        policy: &NetworkPolicy,
    ) -> Result<CreateAnswer, RequestFailure> {
        self.serve_create(policy)
    }

    async fn update_network_policy(
        &self,
        policy: &NetworkPolicy,
        fence: &Fence,
    ) -> Result<bool, RequestFailure> {
        self.serve_update_policy(policy, fence)
    }

    async fn delete_network_policy(
        &self,
        deletion: &PolicyDeletion,
    ) -> Result<DeleteAnswer, RequestFailure> {
        self.serve_delete::<NetworkPolicy>(deletion.name(), deletion.fence())
    }

    async fn get_workspace_claim(
        &self,
        name: &str,
    ) -> Result<Option<PersistentVolumeClaim>, RequestFailure> {
        self.serve_get(name)
    }

    async fn create_workspace_claim(
        &self,
        claim: &PersistentVolumeClaim,
    ) -> Result<CreateAnswer, RequestFailure> {
        self.serve_create(claim)
    }

    async fn delete_workspace_claim(
        &self,
        deletion: &ClaimDeletion,
    ) -> Result<DeleteAnswer, RequestFailure> {
        self.serve_delete::<PersistentVolumeClaim>(deletion.name(), deletion.fence())
    }

    async fn service_account_exists(&self, name: &str) -> Result<bool, RequestFailure> {
        let step = self.begin(Call::ServiceAccountExists {
            name: name.to_owned(),
        });
        self.read(step, |m| {
            match m.get_service_account(&self.namespace, name) {
                Ok(_) => Ok(true),
                Err(ModelError::NotFound { .. }) => Ok(false),
                Err(e) => Err(model_error(
                    Operation::GetServiceAccount,
                    &self.object(name),
                    &e,
                )),
            }
        })
    }

    async fn create_secret(&self, secret: &Secret) -> Result<CreateAnswer, RequestFailure> {
        let step = self.begin(Call::CreateSecret {
            secret: secret.clone(),
        });
        let object = self.object(secret.metadata.name.as_deref().unwrap_or(""));
        self.write(step, Operation::CreateSecret, &object, |m| {
            m.create_secret(&self.namespace, secret.clone()).map(|_| ())
        })
    }

    async fn create_pod(&self, pod: &Pod) -> Result<CreateAnswer, RequestFailure> {
        let step = self.begin(Call::CreatePod { pod: pod.clone() });
        let object = self.object(pod.metadata.name.as_deref().unwrap_or(""));
        self.write(step, Operation::CreatePod, &object, |m| {
            m.create_pod(&self.namespace, pod.clone()).map(|_| ())
        })
    }

    async fn check_pod_create(&self, pod: &Pod) -> Result<(), RequestFailure> {
        let step = self.begin(Call::CheckPodCreate { pod: pod.clone() });
        let object = self.object(pod.metadata.generate_name.as_deref().unwrap_or(""));
        let checked: Result<CreateAnswer, RequestFailure> =
            self.write(step, Operation::CreatePod, &object, |m| {
                m.check_pod_create(&self.namespace, pod.clone())
            });
        checked.map(|_| ())
    }

    async fn delete_pod(&self, deletion: &PodDeletion) -> Result<DeleteAnswer, RequestFailure> {
        let (name, fence) = (deletion.name(), deletion.fence());
        let step = self.begin(Call::DeletePod {
            name: name.to_owned(),
            fence: fence.clone(),
        });
        let preconditions = Preconditions {
            uid: Some(fence.uid().to_owned()),
            resource_version: Some(fence.resource_version().to_owned()),
        };
        self.write(step, Operation::DeletePod, &self.object(name), |m| {
            let grace = deletion.grace().map(|g| i64::from(g.seconds()));
            m.delete_pod(&self.namespace, name, &preconditions, grace)
                .map(|_| ())
        })
    }

    async fn delete_secret(
        &self,
        deletion: &SecretDeletion,
    ) -> Result<DeleteAnswer, RequestFailure> {
        let (name, uid) = (deletion.name(), deletion.uid());
        let step = self.begin(Call::DeleteSecret {
            name: name.to_owned(),
            uid: uid.to_owned(),
        });
        let preconditions = Preconditions {
            uid: Some(uid.to_owned()),
            resource_version: None,
        };
        self.write(step, Operation::DeleteSecret, &self.object(name), |m| {
            m.delete_secret(&self.namespace, name, &preconditions)
                .map(|_| ())
        })
    }

    async fn read_node(&self, name: &str) -> apiary_classify::stuck::NodeFacts {
        self.serve_node_read(name)
    }

    async fn sleep(&self, duration: Duration) {
        lock(&self.state).calls.push(Call::Sleep { duration });
        self.model().advance(duration);
        self.end_poll();
    }

    async fn wait_for_pod_change(&self, name: &str, resource_version: Option<&str>, max: Duration) {
        lock(&self.state).calls.push(Call::WaitForPodChange {
            name: name.to_owned(),
            resource_version: resource_version.map(str::to_owned),
            max,
        });
        let baseline = match resource_version {
            Some(rv) => Some(rv.to_owned()),
            None => self.pod_version(name),
        };
        let limit = add(self.model().now(), max);
        loop {
            if self.pod_version(name) != baseline {
                break;
            }
            let mut model = self.model();
            match model.next_due() {
                Some(due) if due <= limit => model.advance_to(due),
                _ => {
                    model.advance_to(limit);
                    break;
                }
            }
        }
        self.end_poll();
    }

    fn now(&self) -> Duration {
        let origin = lock(&self.state).constructed;
        self.since(origin)
    }
}
