//! The fake kubelet's I/O: registers the Node, watches pods and Secrets, and carries out the
//! [`Work`] the tracker hands out — `POST …/binding`, `PUT …/status`, `GET` on a `409`, and the
//! final `DELETE` with `gracePeriodSeconds: 0` and a `uid` precondition.
//!
//! Layer: imperative shell over kube-rs, on the kubelet's own thread and runtime. It decides
//! nothing: which status follows which is `sequence::step`'s, when is the tracker's. It never
//! logs a pod spec or a Secret.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, mpsc as std_mpsc};
use std::time::{Duration, Instant};

use apiary_cluster_model::kubelet::PodScript;
use apiary_cluster_model::kubelet::sequence::{self, Moment, Outcome, Resources};
use apiary_cluster_model::kubelet::{Placement, Stage, apply_terminated, required_secrets};
use futures::future::LocalBoxFuture;
use futures::stream::{BoxStream, FuturesUnordered, SelectAll};
use futures::{FutureExt, StreamExt, stream};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Binding, Node, ObjectReference, Pod, Secret};
use kube::api::{DeleteParams, PartialObjectMeta, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::WatchStreamExt;
use kube::runtime::utils::Backoff;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client};
use tokio::sync::mpsc;

use super::node::{node_object, node_status_patch};
use super::tracker::{
    Key, Scale, Stepped, Tracked, Tracker, Work, new_placement, next_container_id,
};
use super::{
    Action, Command, FinishOutcome, KubeletError, Options, SIGTERM_EXIT_CODE, Scope, lock,
};

/// How long to wait before retrying work that failed for a reason other than a conflict.
const RETRY_AFTER: Duration = Duration::from_millis(200);

/// How many pods may have work in flight at once (each pod at most one piece).
const MAX_IN_FLIGHT: usize = 16;

/// How many conflicts one step re-reads and recomputes before it is retried later.
const CONFLICT_ATTEMPTS: usize = 5;

/// How soon a failed watch tries again. On loopback nothing is gained by backing off further,
/// and a restarted apiserver is watched again within this time of answering.
const WATCH_RETRY: Duration = Duration::from_millis(250);

/// The watches' retry policy: every [`WATCH_RETRY`], forever.
struct QuickRetry;

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
enum Feed {
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

fn code_of(error: &kube::Error) -> Option<u16> {
    match error {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

/// Runs the kubelet until the future is dropped: registers the node (reporting on `ready`),
/// then serves watch events, due work (up to [`MAX_IN_FLIGHT`] pods at a time, one piece of work
/// per pod) and commands.
pub(super) async fn run(
    config: kube::Config,
    options: Options,
    actions: Arc<Mutex<Vec<Action>>>,
    mut commands: mpsc::UnboundedReceiver<Command>,
    ready: std_mpsc::Sender<Result<(), KubeletError>>,
) {
    // The one crypto provider in the tree; installing it again is a no-op.
    let _already_installed = rustls::crypto::ring::default_provider().install_default();
    let client = match Client::try_from(config) {
        Ok(client) => client,
        Err(error) => {
            let _gone = ready.send(Err(KubeletError::Client(error)));
            return;
        }
    };
    if let Err(source) = register_node(&client, &options.node_name).await {
        let _gone = ready.send(Err(KubeletError::Node {
            node: options.node_name.clone(),
            source,
        }));
        return;
    }
    let mut feed = watches(&client, &options.scope);
    let _gone = ready.send(Ok(()));
    let ctx = Ctx {
        client,
        node_name: options.node_name.clone(),
        scale: Scale::new(options.time_scale),
        actions,
    };
    let mut state = State {
        tracker: Tracker::new(
            options.node_name.clone(),
            options.start_delay,
            options.default_script.clone(),
            Scale::new(options.time_scale),
        ),
        listing: BTreeMap::new(),
        busy: BTreeSet::new(),
    };
    let mut in_flight: FuturesUnordered<LocalBoxFuture<'static, Done>> = FuturesUnordered::new();
    let mut paused = false;
    loop {
        if !paused {
            while in_flight.len() < MAX_IN_FLIGHT {
                let Some(work) = state.tracker.take_due(Instant::now(), &state.busy) else {
                    break;
                };
                let tracked = state.tracker.get(work.key()).cloned();
                state.busy.insert(work.key().clone());
                in_flight.push(ctx.clone().perform(work, tracked).boxed_local());
            }
        }
        let next = if paused || in_flight.len() >= MAX_IN_FLIGHT {
            None
        } else {
            state.tracker.next_due(&state.busy)
        };
        let due = async move {
            match next {
                Some(at) => tokio::time::sleep_until(at.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            // Commands first, then finished and due work, then events: a resumed kubelet
            // starts the work that fell due on its stale view before it learns what changed.
            biased;
            command = commands.recv() => match command {
                Some(Command::Pause(ack)) => {
                    // Nothing more is sent once the pause is acknowledged.
                    while let Some(done) = in_flight.next().await {
                        state.report(done);
                    }
                    paused = true;
                    let _gone = ack.send(());
                }
                Some(Command::Resume) => paused = false,
                None => return,
            },
            Some(done) = in_flight.next(), if !in_flight.is_empty() => state.report(done),
            () = due => {}
            item = feed.next(), if !paused => match item {
                Some(item) => state.apply(item),
                None => return,
            },
        }
    }
}

/// Creates the Node (an existing one is reused) and writes its Ready status.
async fn register_node(client: &Client, name: &str) -> Result<(), kube::Error> {
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
fn watches(client: &Client, scope: &Scope) -> SelectAll<BoxStream<'static, Feed>> {
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

fn key_of(pod: &Pod) -> Option<Key> {
    Some((pod.metadata.namespace.clone()?, pod.metadata.name.clone()?))
}

fn bound_node(pod: &Pod) -> Option<&str> {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .filter(|n| !n.is_empty())
}

/// `Phase/state` of the first container, for the action log.
fn summary(pod: &Pod) -> String {
    let status = pod.status.as_ref();
    let phase = status.and_then(|s| s.phase.as_deref()).unwrap_or("-");
    let state = status
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.first())
        .and_then(|c| c.state.as_ref());
    let state = match state {
        Some(s) if s.running.is_some() => "running".to_owned(),
        Some(s) if s.terminated.is_some() => format!(
            "terminated({})",
            s.terminated.as_ref().map_or(0, |t| t.exit_code)
        ),
        Some(s) => s
            .waiting
            .as_ref()
            .and_then(|w| w.reason.clone())
            .unwrap_or_else(|| "waiting".to_owned()),
        None => {
            let unschedulable = status
                .and_then(|s| s.conditions.as_ref())
                .and_then(|c| c.iter().find(|c| c.type_ == "PodScheduled"))
                .and_then(|c| c.reason.clone());
            unschedulable.unwrap_or_else(|| "-".to_owned())
        }
    };
    format!("{phase}/{state}")
}

/// The kubelet's side of a step: its placements and container IDs, and the Secrets it found
/// missing just before the step.
struct ShellResources<'a> {
    node_name: &'a str,
    placement: Option<Placement>,
    container_id: Option<String>,
    missing: &'a BTreeSet<String>,
}

impl Resources for ShellResources<'_> {
    fn placement(&mut self) -> Placement {
        self.placement
            .get_or_insert_with(|| new_placement(self.node_name))
            .clone()
    }

    fn container_id(&mut self) -> String {
        self.container_id
            .get_or_insert_with(next_container_id)
            .clone()
    }

    fn missing_secret(&mut self, pod: &Pod) -> Option<String> {
        required_secrets(pod)
            .into_iter()
            .find(|s| self.missing.contains(s))
    }
}

/// Why a request did not go through.
enum Failed {
    /// The pod is gone, or now belongs to another node or uid: forget it.
    Gone,
    /// Try again later.
    Later,
}

/// What a piece of work came to, for the tracker.
enum Report {
    /// A script step was carried out.
    Stepped(Stepped),
    /// The termination write of a marked pod went through.
    Terminated(Pod),
    /// The pod turned out to be deletion-marked meanwhile: observe it as it is now.
    Marked(Pod),
    /// The pod is finished, gone, or not this kubelet's: forget it for good.
    Forget,
    /// Nothing to do (the pod was no longer tracked when the work started).
    Nothing,
}

/// A finished piece of work: what it was, for whom, and what it came to.
struct Done {
    work: Work,
    uid: String,
    result: Result<Report, Failed>,
}

/// The loop's state: the tracker, the relists in progress, and the pods with work in flight.
struct State {
    tracker: Tracker,
    /// Pods listed so far by each watch's current relist.
    listing: BTreeMap<Option<String>, BTreeSet<Key>>,
    busy: BTreeSet<Key>,
}

impl State {
    fn apply(&mut self, item: Feed) {
        let now = Instant::now();
        let (scope, event) = match item {
            Feed::Pod(scope, event) => (scope, *event),
            Feed::SecretAppeared(Some(namespace)) => {
                self.tracker.secret_appeared(&namespace, now);
                return;
            }
            Feed::SecretAppeared(None) | Feed::WatchFailed | Feed::Nothing => return,
        };
        match event {
            Event::Init => {
                self.listing.insert(scope, BTreeSet::new());
            }
            Event::InitApply(pod) => {
                if let Some(key) = key_of(&pod) {
                    self.listing.entry(scope).or_default().insert(key);
                }
                self.tracker.observe(pod, now);
            }
            Event::InitDone => {
                let seen = self.listing.remove(&scope).unwrap_or_default();
                self.tracker.relisted(scope.as_deref(), &seen);
            }
            Event::Apply(pod) => self.tracker.observe(pod, now),
            Event::Delete(pod) => self.tracker.forget(&pod),
        }
    }

    fn report(&mut self, done: Done) {
        let key = done.work.key().clone();
        self.busy.remove(&key);
        let now = Instant::now();
        match done.result {
            Ok(Report::Stepped(stepped)) => self.tracker.stepped(&key, &done.uid, stepped, now),
            Ok(Report::Terminated(pod)) => self.tracker.terminated(&key, &done.uid, pod),
            Ok(Report::Marked(pod)) => self.tracker.observe(pod, now),
            Ok(Report::Forget) | Err(Failed::Gone) => self.tracker.drop_key(&key, &done.uid),
            Ok(Report::Nothing) => {}
            Err(Failed::Later) => self.tracker.retry(&done.work, now + RETRY_AFTER),
        }
    }
}

/// What every piece of work needs: the client, the node, the time scale and the action log.
#[derive(Clone)]
struct Ctx {
    client: Client,
    node_name: String,
    scale: Scale,
    actions: Arc<Mutex<Vec<Action>>>,
}

impl Ctx {
    fn record(&self, action: Action) {
        tracing::debug!(?action, "fake kubelet");
        lock(&self.actions).push(action);
    }

    fn pods(&self, namespace: &str) -> Api<Pod> {
        Api::namespaced(self.client.clone(), namespace)
    }

    /// Carries out `work` on the snapshot `tracked` of its pod.
    async fn perform(self, work: Work, tracked: Option<Tracked>) -> Done {
        let (uid, result) = match (&work, tracked) {
            (Work::Finish { key, uid }, _) => (uid.clone(), self.finish(key, uid).await),
            (Work::Step(key), Some(t)) => (t.uid.clone(), self.step(key, &t).await),
            (Work::Terminate(key), Some(t)) => (t.uid.clone(), self.terminate(key, &t).await),
            (_, None) => (String::new(), Ok(Report::Nothing)),
        };
        Done { work, uid, result }
    }

    /// Binds the pod to the node; answers the pod as it is afterwards.
    async fn bind(&self, key: &Key, tracked: &Tracked) -> Result<Pod, Failed> {
        let api = self.pods(&key.0);
        let binding = Binding {
            metadata: kube::api::ObjectMeta {
                name: Some(key.1.clone()),
                namespace: Some(key.0.clone()),
                uid: Some(tracked.uid.clone()),
                ..kube::api::ObjectMeta::default()
            },
            target: ObjectReference {
                api_version: Some("v1".to_owned()),
                kind: Some("Node".to_owned()),
                name: Some(self.node_name.clone()),
                ..ObjectReference::default()
            },
        };
        let answer: Result<serde_json::Value, _> = api
            .create_subresource("binding", &key.1, &PostParams::default(), &binding)
            .await;
        match answer {
            Ok(_) => self.record(Action::Bound {
                namespace: key.0.clone(),
                name: key.1.clone(),
            }),
            // Already bound (by another kubelet, or by us before a lost answer): read on.
            Err(error) if code_of(&error) == Some(409) => {}
            Err(error) if code_of(&error) == Some(404) => return Err(Failed::Gone),
            Err(_) => return Err(Failed::Later),
        }
        let pod = self.reread(key, &tracked.uid).await?;
        if bound_node(&pod) == Some(self.node_name.as_str()) {
            Ok(pod)
        } else {
            Err(Failed::Gone)
        }
    }

    /// A quorum read of the pod; `Gone` if it no longer exists under this uid.
    async fn reread(&self, key: &Key, uid: &str) -> Result<Pod, Failed> {
        match self.pods(&key.0).get(&key.1).await {
            Ok(pod) if pod.metadata.uid.as_deref() == Some(uid) => Ok(pod),
            Ok(_) => Err(Failed::Gone),
            Err(error) if code_of(&error) == Some(404) => Err(Failed::Gone),
            Err(_) => Err(Failed::Later),
        }
    }

    /// The Secrets among those the pod requires that do not exist (quorum reads).
    async fn missing_secrets(&self, key: &Key, pod: &Pod) -> Result<BTreeSet<String>, Failed> {
        // Only existence matters: the metadata read never transfers the payload.
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), &key.0);
        let mut missing = BTreeSet::new();
        for name in required_secrets(pod) {
            match secrets.get_metadata_opt(&name).await {
                Ok(Some(_)) => {}
                Ok(None) => {
                    missing.insert(name);
                }
                Err(_) => return Err(Failed::Later),
            }
        }
        Ok(missing)
    }

    async fn step(&self, key: &Key, tracked: &Tracked) -> Result<Report, Failed> {
        let mut latest = tracked.latest.clone();
        let schedules = tracked.progress.stage == Stage::Created
            && !matches!(tracked.script, PodScript::Unschedulable | PodScript::Inert);
        if schedules && bound_node(&latest).is_none() {
            latest = self.bind(key, tracked).await?;
        }
        let starts = matches!(
            tracked.script,
            PodScript::Start { .. } | PodScript::Exit { .. }
        ) && !matches!(
            tracked.progress.stage,
            Stage::Created | Stage::Running | Stage::Finished
        );
        let missing = if starts {
            self.missing_secrets(key, &latest).await?
        } else {
            BTreeSet::new()
        };
        for _ in 0..CONFLICT_ATTEMPTS {
            let mut pod = latest.clone();
            let mut progress = tracked.progress.clone();
            let mut resources = ShellResources {
                node_name: &self.node_name,
                placement: tracked.placement.clone(),
                container_id: tracked.container_id.clone(),
                missing: &missing,
            };
            let moment = Moment {
                now: Timestamp::now(),
                since_anchor: self.scale.to_model(tracked.anchor.elapsed()),
            };
            let outcome = sequence::step(
                &tracked.script,
                &mut progress,
                &mut pod,
                moment,
                &mut resources,
            );
            let next = match outcome {
                Outcome::Remove => return self.finish(key, &tracked.uid).await,
                Outcome::Reshaped { next } => next,
            };
            let mut stepped = Stepped {
                progress,
                placement: resources.placement,
                container_id: resources.container_id,
                written: Some(latest.clone()),
                next,
            };
            if pod.status == latest.status {
                return Ok(Report::Stepped(stepped));
            }
            match self
                .pods(&key.0)
                .replace_status(&key.1, &PostParams::default(), &pod)
                .await
            {
                Ok(written) => {
                    self.record(Action::StatusWritten {
                        namespace: key.0.clone(),
                        name: key.1.clone(),
                        summary: summary(&written),
                    });
                    stepped.written = Some(written);
                    return Ok(Report::Stepped(stepped));
                }
                Err(error) if code_of(&error) == Some(409) => {
                    self.record(Action::Conflict {
                        namespace: key.0.clone(),
                        name: key.1.clone(),
                    });
                    latest = self.reread(key, &tracked.uid).await?;
                    if latest.metadata.deletion_timestamp.is_some() {
                        // Marked meanwhile: the script is frozen, the deletion takes over.
                        return Ok(Report::Marked(latest));
                    }
                }
                Err(error) if code_of(&error) == Some(404) => return Err(Failed::Gone),
                Err(_) => return Err(Failed::Later),
            }
        }
        Err(Failed::Later)
    }

    /// Writes the running containers of a deletion-marked pod as killed by SIGTERM.
    async fn terminate(&self, key: &Key, tracked: &Tracked) -> Result<Report, Failed> {
        let mut latest = tracked.latest.clone();
        let container_id = tracked
            .container_id
            .clone()
            .unwrap_or_else(next_container_id);
        for _ in 0..CONFLICT_ATTEMPTS {
            let mut pod = latest.clone();
            let now = Timestamp::now();
            let started = tracked.progress.started_at.unwrap_or(now);
            apply_terminated(&mut pod, SIGTERM_EXIT_CODE, &container_id, started, now);
            match self
                .pods(&key.0)
                .replace_status(&key.1, &PostParams::default(), &pod)
                .await
            {
                Ok(written) => {
                    self.record(Action::StatusWritten {
                        namespace: key.0.clone(),
                        name: key.1.clone(),
                        summary: summary(&written),
                    });
                    return Ok(Report::Terminated(written));
                }
                Err(error) if code_of(&error) == Some(409) => {
                    self.record(Action::Conflict {
                        namespace: key.0.clone(),
                        name: key.1.clone(),
                    });
                    latest = self.reread(key, &tracked.uid).await?;
                }
                Err(error) if code_of(&error) == Some(404) => return Err(Failed::Gone),
                Err(_) => return Err(Failed::Later),
            }
        }
        Err(Failed::Later)
    }

    /// The kubelet's final delete: grace 0, only the pod with this uid.
    async fn finish(&self, key: &Key, uid: &str) -> Result<Report, Failed> {
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions {
                uid: Some(uid.to_owned()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        let outcome = match self.pods(&key.0).delete(&key.1, &params).await {
            Ok(_) => FinishOutcome::Deleted,
            Err(error) if code_of(&error) == Some(404) => FinishOutcome::AlreadyGone,
            Err(error) if code_of(&error) == Some(409) => FinishOutcome::PreconditionFailed,
            Err(_) => return Err(Failed::Later),
        };
        self.record(Action::Finished {
            namespace: key.0.clone(),
            name: key.1.clone(),
            uid: uid.to_owned(),
            grace_period_seconds: 0,
            outcome,
        });
        Ok(Report::Forget)
    }
}
