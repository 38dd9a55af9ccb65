//! The one drive loop and the one `perform(Request) -> Answer` of every operation (deploy.md
//! § Cluster interface and requests): [`drive`] feeds a machine of `apiary-classify` the answer
//! to each [`Request`] it asks for until it is done, and [`Performer::perform`] executes a
//! request against any [`Substrate`] and answers in classify's vocabulary.
//!
//! Imperative shell; it decides nothing. Which pod to delete, with which fence, which Secret may
//! go and how long to wait all arrive in the request, and so does what differs per operation:
//! whether a read goes through the stuck-pod watch (deploy.md § When a pod will not go away),
//! what a failed listing or Secret delete leaves to warn about, the line a pod delete logs and
//! whether differing environment keys are logged. The performer never asks which operation it
//! performs for.

use std::future::Future;
use std::pin::Pin;

use apiary_classify::facts::ObservedPod;
use apiary_classify::failure::RequestFailure;
use apiary_classify::request::{
    Answer, Listing, Machine, OwnSecret, PodCreateOutcome, Request, SecretCreateFailure,
    SecretDrop, Step,
};
use apiary_classify::stuck::{NodeFacts, TerminatingPod, TerminationWatch, diagnose};
use apiary_classify::verify::{PodDeletion, SecretDeletion};
use k8s_openapi::api::core::v1::Pod;

use super::objects;
use super::shared::{ignore, report_progress};
use crate::build::{build_pod, build_secret};
use crate::config::ValidConfig;
use crate::naming::{AgentIdentity, Generation};
use crate::observe::{observe_pod, observe_secret};
use crate::substrate::{CreateAnswer, Substrate};
use apiary_classify::gc::{GcMachine, GcReport, GcSpec};
use apiary_classify::status::Progress;

/// Run `machine` to its end: feed it [`Answer::Start`], then the answer `performer` gives to each
/// request it asks for, handing every change of observed state to `on_progress` between
/// requests.
pub(super) async fn drive<S: Substrate, M: Machine>(
    mut machine: M,
    performer: &mut Performer<'_, S>,
    on_progress: &mut (dyn FnMut(&Progress) + Send),
) -> M::Output {
    let mut answer = Answer::Start;
    loop {
        let step = machine.step(performer.substrate.now(), answer);
        while let Some(progress) = machine.poll_progress() {
            report_progress(progress, on_progress);
        }
        match step {
            Step::Done(output) => return output,
            Step::Request(request) => answer = performer.perform(request).await,
        }
    }
}

/// Executes the requests of one operation for one agent.
pub(super) struct Performer<'a, S: Substrate> {
    substrate: &'a S,
    agent: &'a AgentIdentity,
    /// The configuration a deploy builds its objects from.
    config: Option<&'a ValidConfig>,
    /// The stuck-pod watch, fed the reads whose request asks for it.
    stuck: TerminationWatch,
}

impl<'a, S: Substrate> Performer<'a, S> {
    /// The performer of one operation for `agent` (deploy builds from a configuration: see
    /// [`Performer::deploying`]).
    pub(super) fn new(substrate: &'a S, agent: &'a AgentIdentity) -> Performer<'a, S> {
        Performer {
            substrate,
            agent,
            config: None,
            stuck: TerminationWatch::default(),
        }
    }

    /// This performer with the configuration `config` (status compares the environment with it).
    pub(super) fn configured(self, config: Option<&'a ValidConfig>) -> Performer<'a, S> {
        Performer { config, ..self }
    }

    /// The performer of a deploy of `config`.
    pub(super) fn deploying(substrate: &'a S, config: &'a ValidConfig) -> Performer<'a, S> {
        Performer {
            config: Some(config),
            ..Performer::new(substrate, config.agent())
        }
    }

    /// Execute `request` and answer it. Boxed: a deploy's preflight runs a GC pass, itself
    /// driven by this loop, so the future would otherwise contain itself.
    pub(super) fn perform(
        &mut self,
        request: Request,
    ) -> Pin<Box<dyn Future<Output = Answer> + Send + '_>> {
        Box::pin(self.answer(request))
    }

    async fn answer(&mut self, request: Request) -> Answer {
        let substrate = self.substrate;
        match request {
            Request::Preflight { pod, gc } => self.preflight(&pod, gc).await,
            Request::Prepare { policy, workspace } => match self.config {
                Some(config) => {
                    Answer::Prepared(objects::prepare(substrate, config, policy, workspace).await)
                }
                None => Answer::Prepared(apiary_classify::request::Prepared {
                    policy: Err(apiary_classify::policy::PolicyFailure::Failed(
                        unconfigured(),
                    )),
                    workspace: Ok(None),
                }),
            },
            Request::CheckReferences { names } => {
                let checks = names.iter().map(|name| substrate.secret_exists(name));
                let answers = futures::future::join_all(checks).await;
                Answer::ReferencesChecked(answers.into_iter().collect::<Result<Vec<bool>, _>>())
            }
            Request::CompareEnv { secret, log_keys } => {
                Answer::EnvCompared(self.compare_env(&secret, log_keys).await)
            }
            Request::CreateSecret => Answer::SecretCreated(self.create_secret().await),
            Request::CreatePod { secret } => Answer::PodCreated(self.create_pod(&secret).await),
            Request::CheckPodCreate => Answer::PodCreateChecked(self.check_pod_create().await),
            Request::GetPod { name, watch_stuck } => {
                Answer::PodRead(self.read_pod(&name, watch_stuck).await)
            }
            Request::SecretExists { name } => Answer::Exists(substrate.secret_exists(&name).await),
            Request::ServiceAccountExists { name } => {
                Answer::Exists(substrate.service_account_exists(&name).await)
            }
            Request::List { secrets, dropping } => {
                let listed = self.list(secrets).await;
                // The deploy goes on without the listing: the Secret it lists to drop stays for
                // a later GC pass, and only this line says so.
                match (&listed, dropping) {
                    (Err(error), Some(SecretDrop::Own(secret))) => {
                        tracing::warn!("secret {secret} left for later collection: {error}");
                    }
                    (Err(error), Some(SecretDrop::Replaced)) => {
                        tracing::warn!(
                            "the replaced pod's secret is left for later collection: {error}"
                        );
                    }
                    _ => {}
                }
                Answer::Listed(listed)
            }
            Request::DeletePod { deletion, note } => {
                Answer::Deleted(self.delete_pod(&deletion, note).await)
            }
            Request::DeleteSecret {
                deletion,
                warn_on_failure,
            } => Answer::Deleted(self.delete_secret(&deletion, warn_on_failure).await),
            Request::ReadWorkspace => {
                Answer::WorkspaceRead(objects::read_workspace(substrate, self.agent).await)
            }
            Request::RemovePolicy => {
                Answer::PolicyRemoved(objects::remove_policy(substrate, self.agent).await)
            }
            Request::SettleWorkspace { delete } => Answer::WorkspaceSettled(
                objects::settle_workspace(substrate, self.agent, delete).await,
            ),
            Request::WriteExpiry(write) => {
                tracing::info!(
                    resource_version = write.resource_version(),
                    expires_at = %write.annotation_value(),
                    "writing the expiry"
                );
                let answer = substrate.write_pod_expiry(&write).await;
                // The machine decides what an answer means (a conflict re-reads the pod).
                tracing::info!(answer = ?answer, "the expiry write answered");
                Answer::Written(answer)
            }
            Request::Wait {
                max,
                pod,
                resource_version,
            } => {
                substrate
                    .wait_for_pod_change(&pod, resource_version.as_deref(), max)
                    .await;
                Answer::Waited
            }
            Request::Sleep(max) => {
                substrate.sleep(max).await;
                Answer::Waited
            }
        }
    }

    /// deploy.md § Sequence: three independent requests, concurrently (the machine sends no
    /// create before all three have answered, so nothing the GC decides races it).
    async fn preflight(&mut self, pod: &str, gc: bool) -> Answer {
        let substrate = self.substrate;
        let agent = self.agent;
        let gc = preflight_gc(substrate, agent, gc);
        let (namespace, gc_warnings, pod) =
            futures::future::join3(substrate.ensure_namespace(), gc, self.read_pod(pod, true))
                .await;
        // A failed ensure ends the deploy with its own error; a sequential preflight would not
        // have run GC at all, so its failures (usually the same cause) would only repeat that
        // error: they stay at debug level then.
        for warning in gc_warnings {
            if namespace.is_ok() {
                tracing::warn!("{warning}");
            } else {
                tracing::debug!("{warning}");
            }
        }
        Answer::Preflighted { namespace, pod }
    }

    /// One read of the pod `name`, observed under the agent's binding. When `watch_stuck` (the
    /// request's: the operations that may wait for the pod to disappear), the read also goes to
    /// the stuck-pod watch: when the pod has been terminating for longer than its grace period a
    /// warning says why as far as the API shows (classify's `stuck::diagnose`) and which
    /// `kubectl` commands would show more. Only then, once per pod and only when the pod names a
    /// node, is that node read: its `Ready` condition joins the explanation, and a user who may
    /// not read nodes gets no node sentence and no error. Never a forced delete.
    async fn read_pod(
        &mut self,
        name: &str,
        watch_stuck: bool,
    ) -> Result<Option<ObservedPod>, RequestFailure> {
        let substrate = self.substrate;
        let binding = self.agent.binding();
        let pod = substrate.get_pod(name).await?;
        if watch_stuck {
            let terminating = pod
                .as_ref()
                .and_then(|p| terminating(p, substrate.namespace()));
            if let Some(overdue) = self.stuck.observe(substrate.now(), terminating.as_ref())
                && let Some(pod) = &terminating
            {
                let node = match &pod.node {
                    Some(node) => substrate.read_node(node).await,
                    None => NodeFacts::Unknown,
                };
                tracing::warn!("{}", diagnose(pod, &node, overdue));
            }
        }
        Ok(pod.as_ref().map(|p| observe_pod(p, binding)))
    }

    /// Pods by the agent's selector with the list's server clock, then, when `secrets`, its
    /// Secrets.
    async fn list(&self, secrets: bool) -> Result<Listing, RequestFailure> {
        let selector = self.agent.selector();
        let binding = self.agent.binding();
        let pods = self.substrate.list_pods(&selector).await?;
        let secrets = if secrets {
            self.substrate.list_secrets(&selector).await?
        } else {
            Vec::new()
        };
        Ok(Listing {
            pods: pods.items.iter().map(|p| observe_pod(p, binding)).collect(),
            secrets: secrets.iter().map(|s| observe_secret(s, binding)).collect(),
            server_now: pods.server_now.map(|now| now.timestamp()),
        })
    }

    /// A fenced pod delete, logged with the request's `note` when it has one.
    async fn delete_pod(
        &self,
        deletion: &PodDeletion,
        note: Option<&str>,
    ) -> Result<apiary_classify::answer::DeleteAnswer, RequestFailure> {
        if let Some(note) = note {
            tracing::info!(
                uid = deletion.fence().uid(),
                resource_version = deletion.fence().resource_version(),
                "{note}"
            );
        }
        self.substrate.delete_pod(deletion).await
    }

    /// A Secret delete. When `warn_on_failure` (the request's: the operations whose reports do
    /// not list failed Secret deletes), a failure is also a warning (the Secret stays for a
    /// later GC pass).
    async fn delete_secret(
        &self,
        deletion: &SecretDeletion,
        warn_on_failure: bool,
    ) -> Result<apiary_classify::answer::DeleteAnswer, RequestFailure> {
        let answer = self.substrate.delete_secret(deletion).await;
        if let Err(failure) = &answer
            && warn_on_failure
        {
            tracing::warn!(
                "secret {} left for later collection: {failure}",
                deletion.name()
            );
        }
        answer
    }

    /// deploy.md § Replacing a live agent and § status: the keys whose values differ between the
    /// environment in the pod's own Secret and the desired one, `None` when the Secret is gone.
    /// Only keys are ever logged (when the request's `log_keys` asks), never a value.
    async fn compare_env(
        &self,
        secret: &str,
        log_keys: bool,
    ) -> Result<Option<Vec<String>>, RequestFailure> {
        let config = self.config.ok_or_else(unconfigured)?;
        let live = self.substrate.read_secret_values(secret).await?;
        let Some(live) = live else {
            if log_keys {
                tracing::info!(%secret, "the pod's own Secret is gone: its environment differs");
            }
            return Ok(None);
        };
        let keys = config.env().differing_keys(&live);
        if log_keys && !keys.is_empty() {
            tracing::info!(?keys, "the environment differs from the live pod's");
        }
        Ok(Some(keys))
    }

    /// Mint a generation, build this attempt's Secret from it and create it.
    async fn create_secret(&self) -> Result<OwnSecret, SecretCreateFailure> {
        let pod = self.agent.pod_name();
        let config = self.config.ok_or_else(|| SecretCreateFailure {
            name: format!("{pod}-<generation>"),
            failure: unconfigured(),
        })?;
        let generation = Generation::mint().map_err(|error| SecretCreateFailure {
            name: format!("{pod}-<generation>"),
            failure: RequestFailure::unsent(error.to_string()),
        })?;
        let name = self.agent.secret_name(generation);
        let failed = |failure| SecretCreateFailure {
            name: name.clone(),
            failure,
        };
        match self
            .substrate
            .create_secret(&build_secret(config, generation))
            .await
        {
            Ok(CreateAnswer::Created) => Ok(OwnSecret {
                generation: generation.to_string(),
                name,
            }),
            Ok(CreateAnswer::AlreadyExists) => Err(failed(RequestFailure::api(
                409,
                "AlreadyExists",
                "a secret with this freshly minted name already exists",
            ))),
            Err(error) => Err(failed(error)),
        }
    }

    /// Rebuild this attempt's pod from the generation of `secret` and create it. The machine
    /// decides whether to wait for a missing account (deploy.md § Namespace ensure, item 4); this
    /// only passes the answer on. A generation this shell did not mint cannot be built: the
    /// create is then refused unsent, and the machine drops the Secret and reports it (E10).
    /// The dry run of the pod this call would create (deploy.md § Replacing a live agent): the
    /// pod of a placeholder generation (no Secret is created for it; a dry run does not read
    /// one), under a `generateName` of its name, so the running pod's name is no conflict.
    async fn check_pod_create(&self) -> Result<(), RequestFailure> {
        let Some(config) = self.config else {
            return Err(unconfigured());
        };
        let mut pod = build_pod(config, Generation::from_u32(0));
        pod.metadata.generate_name = pod.metadata.name.take().map(|name| format!("{name}-"));
        let checked = self.substrate.check_pod_create(&pod).await;
        if let Err(failure) = &checked {
            tracing::info!("the new pod's dry-run create was refused: {failure}");
        }
        checked
    }

    async fn create_pod(&self, secret: &OwnSecret) -> PodCreateOutcome {
        let Some(config) = self.config else {
            return PodCreateOutcome::Refused(unconfigured());
        };
        let Ok(generation) = secret.generation.parse::<Generation>() else {
            return PodCreateOutcome::Refused(RequestFailure::unsent(format!(
                "internal error in apiary (please report it): the machine asked for the pod of \
                 secret {}, whose generation this driver did not mint",
                secret.name
            )));
        };
        let outcome = PodCreateOutcome::of(
            self.substrate
                .create_pod(&build_pod(config, generation))
                .await,
        );
        if outcome == PodCreateOutcome::Created {
            tracing::info!(secret = %secret.name, "created the pod");
        }
        outcome
    }
}

/// The failure of a deploy request sent to a performer without a configuration: a bug in
/// apiary, never sent.
fn unconfigured() -> RequestFailure {
    RequestFailure::unsent(
        "internal error in apiary (please report it): a deploy request reached an operation \
         without a configuration",
    )
}

/// The preflight GC when `run` (deploy.md § Sequence, step 4), answering its failures as
/// warning lines. GC is hygiene: its failures are warnings, and a problem that matters
/// resurfaces at create with a precise message.
async fn preflight_gc<S: Substrate>(
    substrate: &S,
    agent: &AgentIdentity,
    run: bool,
) -> Vec<String> {
    if !run {
        return Vec::new();
    }
    match gc_pass(substrate, agent, false, false).await {
        Ok(report) => report
            .failures
            .iter()
            .map(|error| format!("preflight gc: {error}"))
            .collect(),
        Err(error) => vec![format!("preflight gc skipped: {error}")],
    }
}

/// One GC pass for `agent` (deploy.md § Execution), in the caller's span (`gc` runs it in its
/// own, removing the policy of an agent it empties; the deploy's preflight in the deploy's,
/// never removing it).
pub(super) async fn gc_pass<S: Substrate>(
    substrate: &S,
    agent: &AgentIdentity,
    dry_run: bool,
    remove_policy: bool,
) -> Result<GcReport, RequestFailure> {
    let machine = GcMachine::new(GcSpec {
        owner: agent.owner(),
        dry_run,
        remove_policy,
    });
    let mut performer = Performer::new(substrate, agent);
    drive(machine, &mut performer, &mut ignore).await
}

/// What a deletion-marked pod shows about its deletion; `None` when it is not marked.
fn terminating(pod: &Pod, namespace: &str) -> Option<TerminatingPod> {
    let meta = &pod.metadata;
    meta.deletion_timestamp.as_ref()?;
    Some(TerminatingPod {
        namespace: meta
            .namespace
            .clone()
            .unwrap_or_else(|| namespace.to_owned()),
        name: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone(),
        finalizers: meta.finalizers.clone().unwrap_or_default(),
        node: pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .filter(|n| !n.is_empty()),
        grace_seconds: meta.deletion_grace_period_seconds,
        agent: crate::observe::pod_facts(pod).agent,
    })
}

#[cfg(all(test, feature = "fake"))]
mod tests;
