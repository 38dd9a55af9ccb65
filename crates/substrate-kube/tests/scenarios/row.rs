//! A row of the scenario table and how one runs: the setup, the act and the expectation as data,
//! [`run`] staging the setup on a [`World`], performing the act, and checking what the world shows
//! against the expectation, the same way on every backend.
//!
//! Layer: test harness; decides nothing about deploys.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use apiary_apiserver_sim::{LoggedRequest, Resource, Verb};
use apiary_classify::binding::APIARY;
use apiary_cluster_model::kubelet::PodScript;
use apiary_substrate::config::DeployConfig;
use apiary_substrate::driver::{
    DeployError, Deployed, StatusReport, UndeployError, UndeployReport,
};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::world::{Backend, Contender, Deadline, World};
use crate::real_support::fixtures::{POD, delete_fence, secret_ref};
use crate::real_support::{attempt, fence_of};

/// What is there before the act.
pub enum Setup {
    /// An empty namespace.
    Empty,
    /// No namespace, and its create refused (403).
    NamespaceForbidden,
    /// The agent deployed once with the configuration of this image keyword and edit.
    Deployed(&'static str, fn(&mut DeployConfig)),
    /// An earlier attempt of the agent: its pod (and Secret when `secret`) for the image of
    /// `keyword`, settled by the kubelet or set through the model.
    Attempt {
        /// The image keyword of the attempt's configuration.
        keyword: &'static str,
        /// The attempt's generation.
        generation: u32,
        /// Whether its Secret exists.
        secret: bool,
        /// How the pod reaches its state.
        settle: Settle,
    },
    /// A pod under the agent's name that apiary did not make (no labels, no annotations), and a
    /// Secret of the agent's.
    Foreign,
    /// Nothing, until the act's first pod create: then [`Winner`] is made while that create is
    /// held (deploy.md § Losing the create race).
    Race(Winner),
}

/// The pod that wins the act's pod create: the act read the name as free, and while its create
/// is held the winner's Secret and pod are made and brought to their state, so the create meets
/// `AlreadyExists` (409) and the act takes the lost-race path. On the fake the winner is made by
/// a hook on the model at that create, in virtual time; on the simulator through the model (a
/// storm's faults never reach the staging); on the real apiserver through the admin client.
pub struct Winner {
    /// The image keyword of the winner's configuration.
    pub keyword: &'static str,
    /// An edit of that configuration.
    pub edit: fn(&mut DeployConfig),
    /// Whose pod it claims to be.
    pub marks: Marks,
    /// How the pod reaches its state before the create is let go.
    pub settle: Settle,
    /// Whether it is then deletion-marked (a graceful delete with a grace period it outlives).
    pub deleting: bool,
}

/// The marks a winner carries.
pub enum Marks {
    /// The agent's own, as apiary makes them: a contender of the same agent won.
    Ours,
    /// None at all (no labels, no annotations): a look-alike someone else made.
    None,
    /// The agent's, but the agent-id annotation is another agent's.
    OtherAgent,
}

/// How a staged pod reaches the state the row needs.
#[derive(Clone, Copy)]
pub enum Settle {
    /// The kubelet runs it by its image's script until it satisfies the check.
    Kubelet(&'static str, fn(&Pod) -> bool),
    /// The model sets it waiting with this reason and message (fake and simulator only).
    Waiting(&'static str, &'static str),
    /// The model's kubelet starts it this long (model time) after its create, `ContainerCreating`
    /// until then; not waited for (fake and simulator only: the fake kubelet of the real tier
    /// starts pods by a delay of its own).
    StartsAfter(Duration),
}

/// What the act does.
pub enum Op {
    /// Deploy the configuration.
    Deploy,
    /// Deploy the configuration with `--replace` (deploy.md § Replacing a live agent).
    Replace,
    /// Undeploy the agent, waiting for its pod to go.
    Undeploy,
}

/// The act: one deploy (maybe replacing) or undeploy of the agent.
pub struct Act {
    /// Deploy or undeploy.
    pub op: Op,
    /// The image keyword of the configuration deployed.
    pub keyword: &'static str,
    /// An edit of that configuration.
    pub edit: fn(&mut DeployConfig),
    /// The deadline.
    pub deadline: Deadline,
}

/// The outcome of the act.
pub enum Outcome {
    /// The pod name [`POD`], and whether the intent matches (`None`: not checked).
    Deployed(Option<bool>),
    /// An error of this kind whose text holds each string.
    Failed(fn(&DeployError) -> bool, &'static [&'static str]),
    /// An undeploy report (checked by the row's `also`).
    Undeployed,
    /// An undeploy error of this kind whose text holds each string.
    Refused(fn(&UndeployError) -> bool, &'static [&'static str]),
}

/// What the act answered.
#[derive(Debug)]
pub enum Answer {
    /// A deploy's outcome.
    Deploy(Result<Deployed, DeployError>),
    /// An undeploy's outcome.
    Undeploy(Result<UndeployReport, UndeployError>),
}

/// What the act wrote, read from the request log.
pub enum Writes {
    /// No write sent at all (not even one a fault answered).
    None,
    /// Only writes of the namespace.
    NamespaceOnly,
    /// Answered creates of Secrets and pods, answered deletes of pods and Secrets (`None`: not
    /// checked; `Some(0)`: no delete sent at all).
    Counted(usize, usize, Option<usize>, Option<usize>),
}

/// When the act ended.
pub enum Timing {
    /// Not checked.
    Any,
    /// Before the deadline.
    Early,
    /// Not before the deadline.
    AtDeadline,
}

/// The pod [`POD`] after the act.
pub enum PodAfter {
    /// The staged pod, unchanged uid.
    Kept,
    /// A pod made by the act (another uid than any staged one).
    New,
    /// No pod at all.
    Gone,
}

/// The Secrets after the act.
pub enum SecretsAfter {
    /// Exactly the one the pod references.
    Referenced,
    /// The same as before the act.
    Unchanged,
    /// None left.
    Gone,
    /// Exactly the staged one (the act's own dropped).
    Staged,
    /// Not checked.
    Any,
}

/// The expectation of a row.
pub struct Expect {
    /// The outcome.
    pub outcome: Outcome,
    /// The writes.
    pub writes: Writes,
    /// Requests whose first answered occurrences come in this order.
    pub order: &'static [(Verb, Resource)],
    /// When it ended.
    pub timing: Timing,
    /// The pod left.
    pub pod: PodAfter,
    /// The Secrets left.
    pub secrets: SecretsAfter,
    /// Checks of this row only, over what was seen.
    pub also: fn(&Seen),
}

/// A row of the table.
pub struct Row {
    /// The inventory ids the row shows.
    pub ids: &'static [&'static str],
    /// Before the act.
    pub setup: Setup,
    /// The act.
    pub act: Act,
    /// The expectation.
    pub expect: Expect,
}

/// What a row saw, on one backend.
pub struct Seen {
    /// The backend.
    pub backend: Backend,
    /// The namespace.
    pub namespace: String,
    /// The act's outcome.
    pub outcome: Answer,
    /// How long the act took (virtual time on the fake).
    pub elapsed: Duration,
    /// The act's deadline.
    pub deadline: Duration,
    /// The agent's status before the act.
    pub before: StatusReport,
    /// The agent's status after the act.
    pub after: StatusReport,
    /// The act's requests, in order.
    pub log: Vec<LoggedRequest>,
    /// The pod [`POD`] after the act.
    pub pod: Option<Pod>,
    /// Names of the pods after the act, sorted.
    pub pods: Vec<String>,
    /// Names of the Secrets after the act, sorted.
    pub secrets: Vec<String>,
    /// Names of the Secrets before the act, sorted.
    pub secrets_before: Vec<String>,
    /// The staged pod's `{uid, resourceVersion}` as last observed before the act.
    pub staged: Option<(String, String)>,
    /// The staged Secret's name.
    pub staged_secret: Option<String>,
}

impl Seen {
    /// The targets of the log, in order.
    pub fn targets(&self) -> Vec<Option<(Resource, Verb)>> {
        self.log.iter().map(|r| r.target).collect()
    }

    /// Requests of `verb` on `resource`.
    pub fn of(&self, verb: Verb, resource: Resource) -> Vec<&LoggedRequest> {
        self.log.iter().filter(|r| r.is(verb, resource)).collect()
    }

    /// Requests of `verb` on `resource` answered 2xx.
    pub fn answered(&self, verb: Verb, resource: Resource) -> Vec<&LoggedRequest> {
        self.of(verb, resource)
            .into_iter()
            .filter(|r| r.status.is_some_and(|s| (200..300).contains(&s)))
            .collect()
    }

    /// The error of a failed act, as text.
    pub fn error_text(&self) -> String {
        match &self.outcome {
            Answer::Deploy(Err(error)) => error.to_string(),
            Answer::Undeploy(Err(error)) => error.to_string(),
            _ => String::new(),
        }
    }

    /// The report of an undeploy.
    pub fn report(&self) -> &UndeployReport {
        match &self.outcome {
            Answer::Undeploy(Ok(report)) => report,
            outcome => panic!("no undeploy report: {outcome:?}"),
        }
    }
}

/// No edit of a configuration.
pub fn unedited(_: &mut DeployConfig) {}

/// No check beyond the expectation's data.
pub fn nothing_else(_: &Seen) {}

/// Run `row` on `backend`: stage its setup, perform its act (under the storm on a stormy
/// backend), and check what the world shows against its expectation.
pub async fn run(row: Row, backend: Backend) {
    let namespace = !matches!(row.setup, Setup::NamespaceForbidden);
    let Some(world) = World::open(backend, namespace).await else {
        return;
    };
    let (staged, staged_secret, winner) = stage(&world, row.setup).await;
    let raced = winner.is_some();
    let config = world.config(row.act.keyword, row.act.edit);
    let secrets_before = world.secret_names().await;
    let before = world.status(&config).await;
    world.clear_log();
    world.storm();
    let options = world.options(&config, row.act.deadline);
    let won = Arc::new(Mutex::new(None));
    let race = world.race(winner, Arc::clone(&won));
    let act = async {
        match row.act.op {
            Op::Replace => {
                let options = options.replacing(true);
                let (outcome, elapsed) = world.deploy(&config, &options).await;
                (Answer::Deploy(outcome), elapsed)
            }
            Op::Deploy => {
                let (outcome, elapsed) = world.deploy(&config, &options).await;
                (Answer::Deploy(outcome), elapsed)
            }
            Op::Undeploy => {
                let (outcome, elapsed) = world.undeploy(&options).await;
                (Answer::Undeploy(outcome), elapsed)
            }
        }
    };
    let ((outcome, elapsed), ()) = tokio::join!(act, race);
    let injected = world.calm_down();
    if backend == Backend::Stormy {
        assert!(injected > 0, "no fault was injected");
    }
    let won = won.lock().expect("the winner's slot").take();
    if raced {
        assert!(
            won.is_some(),
            "the act sent no pod create for the winner to beat"
        );
    }
    let staged = staged.or_else(|| won.as_ref().map(fence_of));
    let mut log = world.requests();
    if raced {
        world.answer_lost_create(&mut log);
    }
    let seen = Seen {
        backend,
        namespace: world.namespace().to_owned(),
        outcome,
        elapsed,
        deadline: options.deadline,
        before,
        after: world.status(&config).await,
        log,
        pod: world.pod().await,
        pods: world.pod_names().await,
        secrets: world.secret_names().await,
        secrets_before,
        staged,
        staged_secret,
    };
    row.expect.check(&seen);
}

/// The staged pod's fence, the staged Secret's name, and the winner of a race still to come.
type Staged = (Option<(String, String)>, Option<String>, Option<Contender>);

/// Stage `setup` on `world`; answers what was staged, and a race's winner (made during the act).
async fn stage(world: &World, setup: Setup) -> Staged {
    match setup {
        Setup::Empty => (None, None, None),
        Setup::NamespaceForbidden => {
            world.forbid_namespace_create();
            (None, None, None)
        }
        Setup::Deployed(keyword, edit) => {
            let config = world.config(keyword, edit);
            let (first, _) = world
                .deploy(&config, &world.options(&config, Deadline::Long))
                .await;
            assert_eq!(first.expect("first deploy").pod, POD);
            let pod = world.pod().await.expect("the deployed pod");
            (Some(fence_of(&pod)), secret_ref(&pod), None)
        }
        Setup::Attempt {
            keyword,
            generation,
            secret,
            settle,
        } => {
            let (pod, with) = attempt(&world.config(keyword, unedited), generation);
            let name = with.metadata.name.clone().filter(|_| secret);
            if secret {
                world.create_secret(with).await;
            }
            let namespace = world.namespace().to_owned();
            if let Some(script) = settle.script() {
                world.model(|m| m.script_pods_named(&namespace, POD, script));
            }
            let created = world.create_pod(pod).await;
            let pod = match settle {
                Settle::Kubelet(what, check) => world.settle(what, check).await,
                Settle::Waiting(reason, message) => world.model(|m| {
                    m.set_pod_waiting(&namespace, POD, reason, Some(message))
                        .expect("pod waiting")
                }),
                Settle::StartsAfter(_) => created,
            };
            (Some(fence_of(&pod)), name, None)
        }
        Setup::Foreign => {
            let (mut pod, secret) = attempt(&world.config("", unedited), 3);
            let name = secret.metadata.name.clone();
            world.create_secret(secret).await;
            pod.metadata = ObjectMeta {
                name: Some(POD.to_owned()),
                ..ObjectMeta::default()
            };
            (Some(fence_of(&world.create_pod(pod).await)), name, None)
        }
        Setup::Race(winner) => {
            let config = world.config(winner.keyword, winner.edit);
            let (mut pod, secret) = attempt(&config, 7);
            match winner.marks {
                Marks::Ours => {}
                Marks::None => {
                    pod.metadata = ObjectMeta {
                        name: Some(POD.to_owned()),
                        ..ObjectMeta::default()
                    };
                }
                Marks::OtherAgent => {
                    let annotations = pod
                        .metadata
                        .annotations
                        .get_or_insert_with(Default::default);
                    annotations.insert(APIARY.annotation_agent_id.to_owned(), "f".repeat(64));
                }
            }
            if winner.deleting {
                // Outlived by every row: the mark stays until the world is dropped.
                let spec = pod.spec.as_mut().expect("a pod spec");
                spec.termination_grace_period_seconds = Some(1_000_000);
            }
            let name = secret.metadata.name.clone();
            let contender = Contender {
                pod,
                secret,
                settle: winner.settle,
                deleting: winner.deleting,
            };
            (None, name, Some(contender))
        }
    }
}

impl Settle {
    /// The model's script for a pod that settles this way, when the model sets one.
    pub fn script(self) -> Option<PodScript> {
        match self {
            Settle::Kubelet(..) => None,
            Settle::Waiting(..) => Some(PodScript::Inert),
            Settle::StartsAfter(after) => Some(PodScript::Start { after }),
        }
    }
}

impl Expect {
    /// Check `seen` against the expectation, then the row's own checks.
    fn check(&self, seen: &Seen) {
        let text = seen.error_text();
        let says = |needles: &[&str]| {
            for needle in needles {
                assert!(text.contains(needle), "{text} lacks {needle}");
            }
        };
        match (&self.outcome, &seen.outcome) {
            (Outcome::Deployed(matches), Answer::Deploy(Ok(deployed))) => {
                assert_eq!(deployed.pod, POD);
                if let Some(matches) = matches {
                    assert_eq!(deployed.intent_matches, *matches, "{deployed:?}");
                }
            }
            (Outcome::Failed(kind, needles), Answer::Deploy(Err(error))) => {
                assert!(kind(error), "{error:?}");
                says(needles);
            }
            (Outcome::Undeployed, Answer::Undeploy(Ok(_))) => {}
            (Outcome::Refused(kind, needles), Answer::Undeploy(Err(error))) => {
                assert!(kind(error), "{error:?}");
                says(needles);
            }
            (_, outcome) => panic!("unexpected outcome {outcome:?}"),
        }
        self.check_writes(seen);
        match self.timing {
            Timing::Any => {}
            Timing::Early => assert!(seen.elapsed < seen.deadline, "{:?}", seen.elapsed),
            Timing::AtDeadline => assert!(seen.elapsed >= seen.deadline, "{:?}", seen.elapsed),
        }
        let uid = seen.pod.as_ref().and_then(|p| p.metadata.uid.clone());
        let staged_uid = seen.staged.as_ref().map(|(uid, _)| uid.clone());
        match self.pod {
            PodAfter::Kept => assert_eq!(uid, staged_uid),
            PodAfter::New => assert!(uid.is_some() && uid != staged_uid, "{uid:?}"),
            PodAfter::Gone => assert_eq!(seen.pods, Vec::<String>::new()),
        }
        if !matches!(self.pod, PodAfter::Gone) {
            assert_eq!(seen.pods, [POD]);
        }
        let secrets = &seen.secrets;
        match self.secrets {
            SecretsAfter::Referenced => {
                let pod = seen.pod.as_ref().expect("the pod");
                assert_eq!(*secrets, [secret_ref(pod).expect("envFrom")]);
            }
            SecretsAfter::Unchanged => assert_eq!(*secrets, seen.secrets_before),
            SecretsAfter::Gone => assert_eq!(*secrets, Vec::<String>::new()),
            SecretsAfter::Staged => {
                let staged = seen.staged_secret.clone().expect("a staged Secret");
                assert_eq!(*secrets, [staged]);
            }
            SecretsAfter::Any => {}
        }
        (self.also)(seen);
    }

    /// The writes, the fences of pod deletes, and the order of the first answers.
    fn check_writes(&self, seen: &Seen) {
        let log = &seen.log;
        match self.writes {
            Writes::None => assert!(log.iter().all(|r| !r.is_mutation()), "{log:?}"),
            Writes::NamespaceOnly => assert!(
                log.iter().all(|r| r.method == "GET"
                    || r.target.is_some_and(|(res, _)| res == Resource::Namespaces)),
                "{log:?}"
            ),
            Writes::Counted(secret_creates, pod_creates, pod_deletes, secret_deletes) => {
                let answered = |verb, resource| seen.answered(verb, resource).len();
                assert_eq!(answered(Verb::Create, Resource::Secrets), secret_creates);
                assert_eq!(answered(Verb::Create, Resource::Pods), pod_creates);
                for (deletes, resource) in [
                    (pod_deletes, Resource::Pods),
                    (secret_deletes, Resource::Secrets),
                ] {
                    match deletes {
                        Some(0) => assert!(seen.of(Verb::Delete, resource).is_empty(), "{log:?}"),
                        Some(n) => assert_eq!(answered(Verb::Delete, resource), n, "{log:?}"),
                        None => {}
                    }
                }
            }
        }
        if let Some(fence) = &seen.staged {
            for delete in seen.of(Verb::Delete, Resource::Pods) {
                assert_eq!(&delete_fence(delete), fence, "only ever the observed fence");
            }
        }
        let first = |&(verb, resource): &(Verb, Resource)| {
            log.iter()
                .position(|r| {
                    r.is(verb, resource) && r.status.is_some_and(|c| (200..300).contains(&c))
                })
                .unwrap_or_else(|| panic!("no answered {verb:?} {resource:?} in {log:?}"))
        };
        let positions: Vec<usize> = self.order.iter().map(first).collect();
        assert!(
            positions.is_sorted(),
            "{:?} out of order in {log:?}",
            self.order
        );
    }
}

impl Default for Row {
    /// A deploy into an empty namespace.
    fn default() -> Self {
        Row {
            ids: &[],
            setup: Setup::Empty,
            act: Act {
                op: Op::Deploy,
                keyword: "",
                edit: unedited,
                deadline: Deadline::Long,
            },
            expect: Expect::default(),
        }
    }
}

impl Default for Expect {
    /// A fresh deploy: the pod's name with a matching intent, before the deadline; one Secret and
    /// one pod created, nothing deleted; the new pod and only its Secret left.
    fn default() -> Self {
        Expect {
            outcome: Outcome::Deployed(Some(true)),
            writes: Writes::Counted(1, 1, Some(0), Some(0)),
            order: &[],
            timing: Timing::Early,
            pod: PodAfter::New,
            secrets: SecretsAfter::Referenced,
            also: nothing_else,
        }
    }
}
