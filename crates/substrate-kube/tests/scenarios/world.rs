//! The backends a row of the scenario table runs on, behind one [`World`]: the in-memory
//! `FakeCluster` (virtual time), the loopback simulator on a calm or a stormy day, and the real
//! kube-apiserver with the fake kubelet (the `real_support` [`Stage`]). A world stages a row's
//! objects, performs its act, and shows what happened in one record shape for every backend:
//! the apiserver request log ([`LoggedRequest`]), onto which the fake's call log is mapped.
//!
//! Layer: test-only harness. It decides nothing about deploys and talks to 127.0.0.1 only.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use apiary_apiserver_sim::{FaultAction, FaultRule, LoggedRequest, Matcher, Resource, Verb};
use apiary_classify::failure::Operation;
use apiary_cluster_model::{ClusterModel, Preconditions};
use apiary_substrate::NamespaceFailure;
use apiary_substrate::config::{DeployConfig, ValidConfig};
use apiary_substrate::driver::{
    self, DeployError, DeployOptions, Deployed, StatusReport, UndeployError, UndeployOptions,
    UndeployReport,
};
use apiary_substrate::fake::{Call, FakeCluster};
use k8s_openapi::api::core::v1::{Pod, Secret};

use super::row::Settle;
use crate::real_support::fixtures::{POD, agent, image, transient_weather};
use crate::real_support::{Backend as Tier, HANG, Stage};

/// The namespace of a fake or simulator world (a real one gets a unique namespace).
const NS: &str = "agents";

/// Where a row runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// `FakeCluster`: the driver over the model in virtual time, its call log mapped onto
    /// requests.
    Fake,
    /// The loopback simulator, every request answered.
    Calm,
    /// The simulator failing a fraction of requests transiently (500, 503, 429 with
    /// `Retry-After`, dropped connections); the row must reach the same outcome.
    Stormy,
    /// An upstream kube-apiserver with etcd and the fake kubelet (`apiary-envtest`); skipped
    /// without `KUBEBUILDER_ASSETS`.
    Real,
}

impl Backend {
    /// The backend a generated test is named after (`fake`, `calm`, `stormy`, `real`).
    pub fn named(name: &str) -> Backend {
        match name {
            "fake" => Backend::Fake,
            "calm" => Backend::Calm,
            "stormy" => Backend::Stormy,
            "real" => Backend::Real,
            _ => panic!("no backend {name}"),
        }
    }
}

/// How long the act may take: ample, or short enough that a row reaching it stays quick.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deadline {
    /// Well beyond the row's end.
    Long,
    /// Reached by the row.
    Short,
}

/// The winner of a race, as a world makes it while the act's pod create is held: its Secret and
/// pod, how the pod settles, and whether it is then deletion-marked.
pub struct Contender {
    /// The winner's pod (named [`POD`]).
    pub pod: Pod,
    /// The winner's Secret, which its pod references.
    pub secret: Secret,
    /// How the pod reaches its state.
    pub settle: Settle,
    /// Whether it is deletion-marked once settled (a graceful delete with the pod's own grace).
    pub deleting: bool,
}

/// Where a race's winner goes once made: the pod as it was when the create was let go.
pub type Won = Arc<Mutex<Option<Pod>>>;

/// A backend made ready for one row.
pub enum World {
    /// The in-memory fake.
    Fake(Box<FakeCluster>),
    /// The simulator or the real apiserver, behind a [`Stage`].
    Http(Box<Stage>, Backend),
}

impl World {
    /// A world on `backend`, with its namespace present when `namespace`; `None` when the real
    /// tier is skipped.
    pub async fn open(backend: Backend, namespace: bool) -> Option<World> {
        Some(match (backend, namespace) {
            (Backend::Fake, true) => World::Fake(Box::new(FakeCluster::new(NS))),
            (Backend::Fake, false) => World::Fake(Box::new(FakeCluster::without_namespace(NS))),
            (Backend::Calm | Backend::Stormy, _) => {
                World::Http(Box::new(Stage::start_sim(NS, namespace).await), backend)
            }
            (Backend::Real, _) => World::Http(Box::new(Stage::start(Tier::Real).await?), backend),
        })
    }

    /// The backend.
    pub fn backend(&self) -> Backend {
        match self {
            World::Fake(_) => Backend::Fake,
            World::Http(_, backend) => *backend,
        }
    }

    /// The namespace of the world.
    pub fn namespace(&self) -> &str {
        match self {
            World::Fake(_) => NS,
            World::Http(stage, _) => stage.namespace(),
        }
    }

    /// The configuration of the agent under test for the image of `keyword`, edited by `edit`.
    pub fn config(&self, keyword: &str, edit: fn(&mut DeployConfig)) -> ValidConfig {
        let mut config = DeployConfig::new(self.namespace(), image(keyword));
        edit(&mut config);
        config.validate(&agent()).expect("valid configuration")
    }

    /// The deploy options of `deadline` on this backend: the configuration's own on the fake
    /// (virtual time), short real durations with a 200 ms poll elsewhere.
    pub fn options(&self, config: &ValidConfig, deadline: Deadline) -> DeployOptions {
        let deadline = match (self.backend(), deadline) {
            (Backend::Fake, _) => return DeployOptions::for_config(config),
            (Backend::Calm | Backend::Stormy, Deadline::Long) => Duration::from_secs(15),
            (Backend::Real, Deadline::Long) => Duration::from_secs(30),
            (Backend::Calm, Deadline::Short) => Duration::from_millis(1500),
            // Leaves a stormy run (with its `Retry-After` waits) time to create the pod.
            (Backend::Stormy, Deadline::Short) => Duration::from_secs(4),
            (Backend::Real, Deadline::Short) => Duration::from_secs(2),
        };
        DeployOptions {
            deadline,
            poll: Duration::from_millis(200),
            replace: false,
            min_running: Duration::ZERO,
        }
    }

    /// Deploy `config`; returns the outcome and how long it took (virtual time on the fake).
    pub async fn deploy(
        &self,
        config: &ValidConfig,
        options: &DeployOptions,
    ) -> (Result<Deployed, DeployError>, Duration) {
        match self {
            World::Fake(fake) => {
                fake.reset_elapsed();
                let outcome = driver::deploy(&**fake, config, options).await;
                (outcome, fake.elapsed())
            }
            World::Http(stage, _) => {
                let started = Instant::now();
                let outcome = driver::deploy(&stage.cluster(), config, options).await;
                (outcome, started.elapsed())
            }
        }
    }

    /// Undeploy the agent, waiting for its pod to go within `options`' deadline; returns the
    /// outcome and how long it took (virtual time on the fake).
    pub async fn undeploy(
        &self,
        options: &DeployOptions,
    ) -> (Result<UndeployReport, UndeployError>, Duration) {
        let options = UndeployOptions {
            wait: true,
            deadline: options.deadline,
            poll: options.poll,
            ..UndeployOptions::default()
        };
        match self {
            World::Fake(fake) => {
                fake.reset_elapsed();
                let outcome = driver::undeploy(&**fake, &agent(), &options).await;
                (outcome, fake.elapsed())
            }
            World::Http(stage, _) => {
                let started = Instant::now();
                let outcome = driver::undeploy(&stage.cluster(), &agent(), &options).await;
                (outcome, started.elapsed())
            }
        }
    }

    /// The agent's status, its intent compared with `config`.
    pub async fn status(&self, config: &ValidConfig) -> StatusReport {
        let report = match self {
            World::Fake(fake) => driver::status(&**fake, &agent(), Some(config)).await,
            World::Http(stage, _) => driver::status(&stage.cluster(), &agent(), Some(config)).await,
        };
        report.expect("status")
    }

    /// Create `secret` as an administrator would.
    pub async fn create_secret(&self, secret: Secret) {
        match self {
            World::Fake(fake) => {
                fake.insert_secret(secret).expect("secret inserted");
            }
            World::Http(stage, _) => {
                stage.create_secret(&secret).await;
            }
        }
    }

    /// Create `pod` as an administrator would; the kubelet runs it by its image's script.
    pub async fn create_pod(&self, mut pod: Pod) -> Pod {
        match self {
            World::Fake(fake) => {
                pod.metadata.namespace = Some(NS.to_owned());
                fake.with_model(|m| m.create_pod(NS, pod))
                    .expect("pod created")
            }
            World::Http(stage, _) => stage.create_pod(&pod).await,
        }
    }

    /// Wait until [`POD`] satisfies `check` (on the fake: advance the virtual clock a second at
    /// a time, at most ten minutes); returns it.
    pub async fn settle(&self, what: &str, check: fn(&Pod) -> bool) -> Pod {
        match self {
            World::Fake(fake) => {
                for _ in 0..600 {
                    if let Some(pod) = fake.pod(POD).filter(check) {
                        return pod;
                    }
                    fake.advance(Duration::from_secs(1));
                }
                panic!("the fake's pod never reached: {what}")
            }
            World::Http(stage, _) => stage.until_pod(what, POD, check).await,
        }
    }

    /// Act on the model directly (the fake and the simulator only).
    pub fn model<R>(&self, f: impl FnOnce(&mut ClusterModel) -> R) -> R {
        match self {
            World::Fake(fake) => fake.with_model(f),
            World::Http(stage, _) => stage
                .sim()
                .expect("a model-staged row runs on the fake or the simulator")
                .with_model(f),
        }
    }

    /// Make `winner` (if any) win the act's first pod create: hold that create until the winner
    /// is made and settled (and marked), then let it go to meet `AlreadyExists`; `won` gets the
    /// winner as it was then. The returned future does the making on the simulator and the real
    /// apiserver and must run alongside the act; on the fake a hook on the model makes the
    /// winner at that create, settling it in virtual time (the act's own stopwatch runs on).
    pub fn race(
        &self,
        winner: Option<Contender>,
        won: Won,
    ) -> Pin<Box<dyn Future<Output = ()> + '_>> {
        let Some(winner) = winner else {
            return Box::pin(async {});
        };
        match self {
            World::Fake(fake) => {
                fake.before_next(Operation::CreatePod, move |m| {
                    let mut pod = make_in_model(m, &winner);
                    if let Settle::Kubelet(what, check) = winner.settle {
                        let mut waited = 0;
                        while !check(&pod) {
                            assert!(waited < 600, "the fake's winner never reached: {what}");
                            m.advance(Duration::from_secs(1));
                            waited += 1;
                            pod = m.get_pod(NS, POD).expect("the winner");
                        }
                    }
                    if winner.deleting {
                        pod = mark_in_model(m);
                    }
                    *won.lock().expect("the winner's slot") = Some(pod);
                });
                Box::pin(async {})
            }
            World::Http(stage, _) => {
                let gate = stage.tap.hold(1, |r| r.is(Verb::Create, Resource::Pods));
                Box::pin(async move {
                    gate.held(1).await;
                    let pod = match stage.sim() {
                        Some(sim) => {
                            let mut pod = sim.with_model(|m| make_in_model(m, &winner));
                            if let Settle::Kubelet(what, check) = winner.settle {
                                let started = Instant::now();
                                while !check(&pod) {
                                    assert!(started.elapsed() < HANG, "the winner never: {what}");
                                    tokio::time::sleep(Duration::from_millis(10)).await;
                                    pod = sim.with_model(|m| m.get_pod(NS, POD)).expect("winner");
                                }
                            }
                            if winner.deleting {
                                pod = sim.with_model(mark_in_model);
                            }
                            pod
                        }
                        None => {
                            stage.create_secret(&winner.secret).await;
                            stage.create_pod(&winner.pod).await;
                            let Settle::Kubelet(what, check) = winner.settle else {
                                panic!("a model-settled winner runs on the fake or the simulator")
                            };
                            let mut pod = stage.until_pod(what, POD, check).await;
                            if winner.deleting {
                                stage.delete_pod(POD).await;
                                pod = stage
                                    .until_pod("the deletion mark", POD, |p| {
                                        p.metadata.deletion_timestamp.is_some()
                                    })
                                    .await;
                            }
                            pod
                        }
                    };
                    *won.lock().expect("the winner's slot") = Some(pod);
                    gate.release();
                })
            }
        }
    }

    /// On the fake, answer the pod create a race's winner beat as the apiserver did (409): the
    /// fake logs calls, not answers ([`as_request`]), and this is the one answer a row stages.
    pub fn answer_lost_create(&self, log: &mut [LoggedRequest]) {
        if let World::Fake(_) = self
            && let Some(create) = log.iter_mut().find(|r| r.is(Verb::Create, Resource::Pods))
        {
            create.status = Some(409);
        }
    }

    /// Refuse the namespace create (403), as an RBAC rule without `create namespaces` does.
    pub fn forbid_namespace_create(&self) {
        match self {
            World::Fake(fake) => fake.fail_next_ensure_namespace(NamespaceFailure::CreateForbidden),
            World::Http(stage, _) => stage
                .sim()
                .expect("the namespace refusal is staged on the simulator")
                .faults()
                .deny(Verb::Create, Some(Resource::Namespaces)),
        }
    }

    /// On a stormy world, start the storm: a fraction of every request fails transiently, and a
    /// few early requests fail for certain (a dropped namespace read, a 429 with `Retry-After`
    /// on the first pod list, a 503 on the first pod read), so every stormy run really retries.
    pub fn storm(&self) {
        let World::Http(stage, Backend::Stormy) = self else {
            return;
        };
        let faults = stage.sim().expect("storms are the simulator's").faults();
        for (verb, resource, action) in [
            (Verb::Get, Resource::Namespaces, FaultAction::DropConnection),
            (
                Verb::List,
                Resource::Pods,
                FaultAction::TooManyRequests {
                    retry_after_seconds: 1,
                },
            ),
            (Verb::Get, Resource::Pods, FaultAction::ServiceUnavailable),
        ] {
            faults.add(FaultRule::times(1, Matcher::verb(verb, resource), action));
        }
        transient_weather(faults, 0.06);
    }

    /// End any storm (so the final state can be read) and answer how many faults it injected.
    pub fn calm_down(&self) -> u64 {
        let World::Http(stage, Backend::Stormy) = self else {
            return 0;
        };
        let faults = stage.sim().expect("storms are the simulator's").faults();
        let injected = faults.injected();
        faults.clear();
        injected
    }

    /// Forget the requests logged so far.
    pub fn clear_log(&self) {
        match self {
            World::Fake(fake) => fake.clear_calls(),
            World::Http(stage, _) => stage.tap.clear(),
        }
    }

    /// Every request apiary sent since the log was last cleared, in order: the tap's log, or the
    /// fake's calls mapped onto requests ([`as_request`]).
    pub fn requests(&self) -> Vec<LoggedRequest> {
        match self {
            World::Fake(fake) => fake
                .calls()
                .iter()
                .filter_map(|call| as_request(call, NS))
                .collect(),
            World::Http(stage, _) => stage.requests(),
        }
    }

    /// The pod [`POD`] now.
    pub async fn pod(&self) -> Option<Pod> {
        match self {
            World::Fake(fake) => fake.pod(POD),
            World::Http(stage, _) => stage.pod().await,
        }
    }

    /// Names of the pods now, sorted.
    pub async fn pod_names(&self) -> Vec<String> {
        match self {
            World::Fake(fake) => sorted(fake.pods().into_iter().map(|p| p.metadata.name)),
            World::Http(stage, _) => stage.pod_names().await,
        }
    }

    /// Names of the Secrets now, sorted.
    pub async fn secret_names(&self) -> Vec<String> {
        match self {
            World::Fake(fake) => sorted(fake.secrets().into_iter().map(|s| s.metadata.name)),
            World::Http(stage, _) => stage.secret_names().await,
        }
    }
}

/// Make `winner`'s Secret and pod in the model (scripted by its settle when the model sets
/// one); answers the pod as created, or as set waiting.
fn make_in_model(m: &mut ClusterModel, winner: &Contender) -> Pod {
    m.create_secret(NS, winner.secret.clone())
        .expect("the winner's Secret");
    if let Some(script) = winner.settle.script() {
        m.script_pods_named(NS, POD, script);
    }
    let pod = m
        .create_pod(NS, winner.pod.clone())
        .expect("the winner's pod");
    match winner.settle {
        Settle::Waiting(reason, message) => m
            .set_pod_waiting(NS, POD, reason, Some(message))
            .expect("the winner waiting"),
        _ => pod,
    }
}

/// Delete [`POD`] gracefully in the model, unfenced, with its own grace period; answers it
/// deletion-marked.
fn mark_in_model(m: &mut ClusterModel) -> Pod {
    m.delete_pod(NS, POD, &Preconditions::default(), None)
        .expect("the winner deleted");
    let pod = m.get_pod(NS, POD).expect("the winner marked");
    assert!(
        pod.metadata.deletion_timestamp.is_some(),
        "a graceful delete"
    );
    pod
}

fn sorted(names: impl Iterator<Item = Option<String>>) -> Vec<String> {
    let mut names: Vec<String> = names.flatten().collect();
    names.sort();
    names
}

/// One fake call as the request it stands for: the same verb, resource, path and body (a
/// create's object, a delete's preconditions) as the real `Cluster` sends. The fake logs calls,
/// not answers, and has no weather: every call reads as answered 200. `ensure_namespace` reads
/// as the namespace GET (the fake folds the create into it); sleeps, and calls no row makes,
/// are left out.
fn as_request(call: &Call, namespace: &str) -> Option<LoggedRequest> {
    let json = |value: serde_json::Value| value.to_string();
    let (verb, resource, name, body) = match call {
        Call::EnsureNamespace { namespace } => (
            Verb::Get,
            Resource::Namespaces,
            namespace.clone(),
            "".into(),
        ),
        Call::ListPods { .. } => (Verb::List, Resource::Pods, String::new(), "".into()),
        Call::ListSecrets { .. } => (Verb::List, Resource::Secrets, String::new(), "".into()),
        Call::GetPod { name } => (Verb::Get, Resource::Pods, name.clone(), "".into()),
        Call::SecretExists { name } | Call::ReadSecretValues { name } => {
            (Verb::Get, Resource::Secrets, name.clone(), "".into())
        }
        Call::ServiceAccountExists { name } => (
            Verb::Get,
            Resource::ServiceAccounts,
            name.clone(),
            "".into(),
        ),
        Call::GetNode { name } => (Verb::Get, Resource::Nodes, name.clone(), "".into()),
        Call::WaitForPodChange { .. } => (Verb::Watch, Resource::Pods, String::new(), "".into()),
        Call::CreateSecret { secret } => (
            Verb::Create,
            Resource::Secrets,
            String::new(),
            json(serde_json::to_value(secret).ok()?),
        ),
        Call::CreatePod { pod } => (
            Verb::Create,
            Resource::Pods,
            String::new(),
            json(serde_json::to_value(pod).ok()?),
        ),
        Call::DeletePod { name, fence } => (
            Verb::Delete,
            Resource::Pods,
            name.clone(),
            json(serde_json::json!({"preconditions": {
                "uid": fence.uid(),
                "resourceVersion": fence.resource_version(),
            }})),
        ),
        Call::DeleteSecret { name, uid } => (
            Verb::Delete,
            Resource::Secrets,
            name.clone(),
            json(serde_json::json!({"preconditions": {"uid": uid}})),
        ),
        _ => return None,
    };
    let collection = match resource {
        Resource::Namespaces | Resource::Nodes => format!("/api/v1/{}", resource.plural()),
        _ => format!("/api/v1/namespaces/{namespace}/{}", resource.plural()),
    };
    let path = if name.is_empty() {
        collection
    } else {
        format!("{collection}/{name}")
    };
    let method = match verb {
        Verb::Create => "POST",
        Verb::Delete => "DELETE",
        _ => "GET",
    };
    Some(LoggedRequest {
        method: method.into(),
        path,
        query: if verb == Verb::Watch {
            "watch=true".into()
        } else {
            String::new()
        },
        body,
        target: Some((resource, verb)),
        faulted: false,
        status: Some(200),
    })
}
