//! The one renderer of failure messages (docs/errors.md): a typed failure in, one line out, in
//! the shape every command shares — **what** failed (the operation and the object, once),
//! **why** (the apiserver's code, reason and message, or the server and context tried and the
//! cause in plain words), and **what to do** where apiary can know it (the verb, resource and
//! `rbac/` manifest of a 403; `kubectl config current-context` and the network for an
//! unreachable server). Beside the text, the machine-readable fields of `-o json`.
//!
//! Shell layer, pure: it formats values it is given and reads nothing but the connection target
//! [`connect`](crate::connect) recorded. Must not: format a library error with `{:?}`, prefix a
//! text that already says what failed, or print an env value (no input here holds one).

use apiary_classify::refusal::{Refusal, refusal_of};
use std::sync::OnceLock;

use apiary_classify::deploy::{DeployError, ObjectKind};
use apiary_classify::failure::{Cause, Operation, RequestFailure, TransportCause};
use apiary_classify::renew::RenewError;
use apiary_substrate::pod_options::flags::flag_for_invalid_field;
use apiary_substrate_kube::LogsError;
use serde_json::{Map, Value, json};

/// About the most a message may hold; a longer server message is cut (with `…`) so the whole
/// line stays readable on a terminal.
pub const MAX_MESSAGE: usize = 600;

/// The longest "why" quoted in full (the server's `Status.message` is most of it).
const MAX_WHY: usize = 300;

/// Where this process sent its requests: what a transport failure names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Target {
    /// The API server's URL.
    pub server: String,
    /// The kubeconfig context (`None` in-cluster).
    pub context: Option<String>,
}

static TARGET: OnceLock<Target> = OnceLock::new();

/// Record the connection's target (called once, by `connect`); later calls keep the first.
pub fn record_target(target: Target) {
    let _first_wins = TARGET.set(target);
}

/// The recorded target, if a connection was made.
pub fn target() -> Option<&'static Target> {
    TARGET.get()
}

/// Which manifest in `rbac/` grants the rights a command needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grant {
    /// deploy, status, undeploy, gc (and every other deploy-side command):
    /// `rbac/apiary-deployer.yaml`.
    Deployer,
    /// seeds: `rbac/apiary-seeds.yaml`.
    Seeds,
}

/// A failure as a person reads it, and its `-o json` fields.
#[derive(Clone, Debug, PartialEq)]
pub struct Explained {
    /// One line: what, why, what to do.
    pub message: String,
    /// `code`, `reason`, `operation`, `object` (those that are known).
    pub fields: Map<String, Value>,
}

/// A failed request in the shared shape. `namespace` is where the command worked (for the RBAC
/// binding command); `target` the server and context tried.
pub fn request(
    failure: &RequestFailure,
    namespace: &str,
    grant: Grant,
    target: Option<&Target>,
) -> Explained {
    let what = failure
        .operation()
        .map(|operation| what(operation, failure.object()));
    explain(what, failure, None, namespace, grant, target)
}

/// A failed deploy: the request failures of E9, E10 and E12 in the shared shape (E10 adds what
/// became of the Secret); every other row's own text, which names the pod, the cause and the fix
/// already (deploy.md § Errors).
pub fn deploy(error: &DeployError, namespace: &str, target: Option<&Target>) -> Explained {
    let (what_text, failure, fate) = match error {
        DeployError::Namespace {
            namespace: ns,
            failure,
        } => (
            failure.operation().map_or_else(
                || format!("could not ensure namespace {ns}"),
                |operation| what(operation, failure.object()),
            ),
            failure,
            None,
        ),
        DeployError::CreateFailed {
            kind,
            name,
            failure,
            secret,
        } => (
            failure.operation().map_or_else(
                || format!("could not create {kind} {namespace}/{name}"),
                |operation| what(operation, failure.object()),
            ),
            failure,
            Some(secret.to_string()),
        ),
        DeployError::Failed {
            operation,
            object,
            failure,
        } => (
            failure.operation().map_or_else(
                || format!("could not {operation} {object}"),
                |operation| what(operation, failure.object()),
            ),
            failure,
            None,
        ),
        other => {
            return Explained {
                message: clip(&other.to_string()),
                fields: Map::new(),
            };
        }
    };
    // A pod refused as invalid in a field a pod option set names that flag (deploy.md § Pod
    // options): the apiserver's message names the field, the user typed the flag.
    let flagged = match error {
        DeployError::CreateFailed { kind, .. }
            if *kind == ObjectKind::Pod && failure.code() == Some(422) =>
        {
            failure
                .server_message()
                .and_then(flag_for_invalid_field)
                .map(|(field, flag)| {
                    failure.clone().with_hint(format!(
                        "{field} was set by {}: correct that flag's value",
                        flag.name()
                    ))
                })
        }
        _ => None,
    };
    explain(
        Some(what_text),
        flagged.as_ref().unwrap_or(failure),
        fate,
        namespace,
        Grant::Deployer,
        target,
    )
}

/// A failed `apiary logs`: a failed request in the shared shape; a missing or foreign pod, or a
/// container that never started, in its own words (they name the pod, the cause and the fix).
pub fn logs(error: &LogsError, namespace: &str, target: Option<&Target>) -> Explained {
    match error {
        LogsError::Failed(failure) => request(failure, namespace, Grant::Deployer, target),
        other => Explained {
            message: clip(&other.to_string()),
            fields: Map::new(),
        },
    }
}

/// A failed `apiary renew` of `agent` (its name) in `namespace`: a request failure in the shared
/// shape; every other case says what was found, that nothing was written, and what to do.
pub fn renew(
    error: &RenewError,
    agent: &str,
    namespace: &str,
    target: Option<&Target>,
) -> Explained {
    let what = format!("could not renew the expiry of agent {agent:?}");
    let object = |pod: &str| format!("{namespace}/{pod}");
    let why_and_fix = match error {
        RenewError::Request(failure) => {
            return request(failure, namespace, Grant::Deployer, target);
        }
        RenewError::Absent { pod } => format!(
            "it has no pod ({} does not exist); deploy it with `apiary deploy --ttl`",
            object(pod)
        ),
        RenewError::Foreign { pod } => format!(
            "pod {} is not apiary's pod for this agent, so it was not changed; `apiary status` \
             says what holds the name",
            object(pod)
        ),
        RenewError::Deleting { pod } => format!(
            "pod {} is being deleted; deploy the agent again with `apiary deploy --ttl`",
            object(pod)
        ),
        RenewError::Terminated { pod } => format!(
            "the agent container of pod {} has terminated, so an expiry no longer matters; \
             `apiary gc` collects it and `apiary deploy` starts the agent again",
            object(pod)
        ),
        RenewError::NoServerClock => "the apiserver's answer carried no usable Date header, so \
             there is no server clock to count from (the local clock is never used) and nothing \
             was written; retry, and if it persists ask whoever runs the API server (or a proxy \
             in front of it) why the Date header is missing"
            .to_owned(),
        RenewError::Deadline {
            pod,
            deadline,
            conflicts,
        } => format!(
            "pod {} kept changing while renew wrote its expiry ({conflicts} conflict(s) in {} s) \
             and nothing was overwritten; run `apiary renew` again",
            object(pod),
            deadline.as_secs()
        ),
    };
    Explained {
        message: clip(&format!("{what}: {why_and_fix}")),
        fields: Map::new(),
    }
}

/// `could not <operation> <object>`.
fn what(operation: Operation, object: &str) -> String {
    if object.is_empty() {
        format!("could not {operation}")
    } else {
        format!("could not {operation} {object}")
    }
}

fn explain(
    what: Option<String>,
    failure: &RequestFailure,
    fate: Option<String>,
    namespace: &str,
    grant: Grant,
    target: Option<&Target>,
) -> Explained {
    let mut parts: Vec<String> = Vec::new();
    let why = why(failure, target);
    parts.push(match what {
        Some(what) => format!("{what}: {why}"),
        None => why,
    });
    if let Some(fate) = fate {
        parts.push(fate);
    }
    if let Some(hint) = failure.hint() {
        parts.push(hint.to_owned());
    }
    if let Some(fix) = fix(failure, namespace, grant) {
        parts.push(fix);
    }
    Explained {
        message: clip(&parts.join("; ")),
        fields: fields(failure),
    }
}

/// Why, in words: the apiserver's answer, or the server and context tried and the cause.
fn why(failure: &RequestFailure, target: Option<&Target>) -> String {
    match failure.cause() {
        Cause::Transport { cause, detail } => {
            let words = match cause {
                TransportCause::Other => detail.clone(),
                other => other.to_string(),
            };
            match target {
                Some(Target {
                    server,
                    context: Some(context),
                }) => format!("no answer from {server} (kubeconfig context {context}): {words}"),
                Some(Target {
                    server,
                    context: None,
                }) => format!("no answer from {server} (in-cluster configuration): {words}"),
                None => words,
            }
            .chars()
            .take(MAX_WHY)
            .collect()
        }
        // An answer with no message (an empty body, or a `Status` without one) says so instead
        // of ending in a dangling colon ("answered 500 :").
        Cause::Answered { message, .. }
            if message.trim().is_empty() && failure.operation().is_some() =>
        {
            let why = failure.why();
            format!(
                "{}, with no message",
                why.trim_end().trim_end_matches(':').trim_end()
            )
        }
        Cause::Answered { .. } | Cause::Unsent { .. } => cut(&failure.why(), MAX_WHY),
    }
}

/// What to do, where apiary can know it.
fn fix(failure: &RequestFailure, namespace: &str, grant: Grant) -> Option<String> {
    if let Some(cause) = failure.transport_cause() {
        return Some(match cause {
            TransportCause::TlsNotTrusted => "check that the kubeconfig context is the cluster \
                 you mean (`kubectl config current-context`) and that its certificate-authority \
                 data is that cluster's"
                .to_owned(),
            _ => "check that the kubeconfig context is the cluster you mean (`kubectl config \
                  current-context`) and that its server is reachable from this machine (network, \
                  VPN, proxy)"
                .to_owned(),
        });
    }
    // A 403 the machine already explained (a missing named service account) keeps its own fix;
    // RBAC is not the cause there. Otherwise the server's words say who refused (deploy.md §
    // Who refused it): only RBAC's refusal is a missing role.
    if let Some(refusal) = refusal_of(failure) {
        let operation = failure.operation()?;
        return Some(match refusal {
            Refusal::Rbac { .. } => rbac_fix(operation, namespace, grant),
            other => admission_fix(&other, namespace),
        });
    }
    match failure.code() {
        Some(401) => Some(
            "the credentials of the kubeconfig context were not accepted: log in again or \
             refresh them, then retry"
                .to_owned(),
        ),
        // A 5xx is the server's own failure (or a proxy's in front of it), not the request's.
        Some(500..=599) => Some(
            "the API server (or a proxy in front of it) failed, not the request: retry, and if \
             it keeps failing, the API server's own log says why"
                .to_owned(),
        ),
        _ => None,
    }
}

/// What to do about a refusal that is not RBAC's: name the authority and its figures, and the
/// deploy flag that sets what it limits; never the grant hint.
fn admission_fix(refusal: &Refusal, namespace: &str) -> String {
    match refusal {
        Refusal::Quota {
            name, requested, ..
        } => {
            let flags: Vec<String> = requested
                .iter()
                .filter_map(|f| quota_flag(&f.resource))
                .map(str::to_owned)
                .collect();
            // The figures are in the server's words above; the fix says what they mean.
            let why = if refusal.exceeds_quota() {
                "the pod asks more than it allows at all"
            } else {
                "the pod does not fit beside the namespace's other pods (it fits once they use \
                 less)"
            };
            let lower = if flags.is_empty() {
                String::new()
            } else {
                format!("lower {}, or ", flags.join(", "))
            };
            format!(
                "refused by ResourceQuota {name}, not a missing role: {why}; {lower}ask an \
                 administrator of namespace {namespace} to raise the quota"
            )
        }
        Refusal::LimitRange { bounds } => {
            let flags: Vec<&str> = bounds.iter().filter_map(|b| limit_flag(b)).collect();
            let set = if flags.is_empty() {
                String::new()
            } else {
                format!(": set {} within it", flags.join(", "))
            };
            format!(
                "refused by a LimitRange of namespace {namespace}, not by a missing role: {}{set}",
                bounds.join("; ")
            )
        }
        Refusal::Webhook { name, message } => format!(
            "refused by the admission webhook {name}, not by a missing role: it said \
             \"{message}\"; change what it asks for (a --label, --annotation or pod option), or \
             ask whoever runs that policy"
        ),
        Refusal::PodSecurity {
            level,
            version,
            detail,
        } => format!(
            "refused by the namespace's PodSecurity level {level} ({version}), not by a missing \
             role: {detail}; use a namespace whose level allows the pod, or change what it \
             names"
        ),
        Refusal::Transient => "an admission check of the API server could not complete (its own \
             lookup failed, for example while the API server restarts): retry"
            .to_owned(),
        Refusal::Rbac { .. } | Refusal::Other => "the API server refused it for the reason it \
             gives; no missing role of apiary's explains it"
            .to_owned(),
    }
}

/// The deploy flag that sets a quota resource (`limits.memory` → `--memory-limit`).
fn quota_flag(resource: &str) -> Option<&'static str> {
    Some(match resource {
        "limits.memory" => "--memory-limit",
        "limits.cpu" => "--cpu-limit",
        "requests.memory" | "memory" => "--memory-request",
        "requests.cpu" | "cpu" => "--cpu-request",
        "requests.ephemeral-storage" | "ephemeral-storage" => "--ephemeral-storage-request",
        "limits.ephemeral-storage" => "--ephemeral-storage-limit",
        "requests.storage" | "persistentvolumeclaims" => "--workspace-size",
        _ if resource.starts_with("requests.") || resource.contains('/') => "--resource",
        _ => return None,
    })
}

/// The deploy flag that sets the value a LimitRange bound judges.
fn limit_flag(bound: &str) -> Option<&'static str> {
    let cpu = bound.contains(" cpu ") || bound.starts_with("cpu ");
    let memory = bound.contains(" memory ") || bound.starts_with("memory ");
    let storage = bound.contains("ephemeral-storage");
    let limit = bound.contains("but limit is") || bound.contains("ratio");
    Some(match (cpu, memory, storage, limit) {
        (true, _, _, true) => "--cpu-limit",
        (true, _, _, false) => "--cpu-request",
        (_, true, _, true) => "--memory-limit",
        (_, true, _, false) => "--memory-request",
        (_, _, true, true) => "--ephemeral-storage-limit",
        (_, _, true, false) => "--ephemeral-storage-request",
        _ => return None,
    })
}

/// The verb and resource refused, and the manifest and binding that grant them.
fn rbac_fix(operation: Operation, namespace: &str, grant: Grant) -> String {
    let (verb, resource) = (operation.verb(), operation.resource());
    // Nodes are cluster-scoped and their grant is optional, whichever command read them.
    if resource == "nodes" {
        return format!(
            "the caller may not `{verb}` nodes: grant rbac/apiary-node-reader.yaml with \
             `kubectl apply -f rbac/apiary-node-reader.yaml` and `kubectl create \
             clusterrolebinding apiary-node-reader --clusterrole=apiary-node-reader --user=<you>` \
             (optional: apiary reads a node only to say why a pod will not go away)"
        );
    }
    match grant {
        Grant::Seeds => format!(
            "the caller may not `{verb}` {resource} in namespace {namespace} (--watch also needs \
             `watch`): grant rbac/apiary-seeds.yaml with `kubectl apply -n {namespace} -f rbac/apiary-seeds.yaml` \
             and `kubectl create rolebinding apiary-seeds -n {namespace} --role=apiary-seeds \
             --serviceaccount=<sa-namespace>:<sa>` (or --user=<you>)"
        ),
        Grant::Deployer if resource == "namespaces" => format!(
            "the caller may not `{verb}` namespaces: grant the namespace role of \
             rbac/apiary-deployer.yaml with `kubectl create clusterrolebinding \
             apiary-namespace-creator --clusterrole=apiary-namespace-creator --user=<you>`, or \
             ask an administrator to run `kubectl create namespace {namespace}`"
        ),
        Grant::Deployer => format!(
            "the caller may not `{verb}` {resource} in namespace {namespace}: grant \
             rbac/apiary-deployer.yaml with `kubectl apply -f rbac/apiary-deployer.yaml` and \
             `kubectl create rolebinding apiary -n {namespace} --clusterrole=apiary-deployer \
             --user=<you>` (or --serviceaccount=<sa-namespace>:<sa>)"
        ),
    }
}

/// The `-o json` fields of a request failure.
fn fields(failure: &RequestFailure) -> Map<String, Value> {
    let mut fields = Map::new();
    if let Some(operation) = failure.operation() {
        fields.insert("operation".into(), json!(operation.as_str()));
    }
    if !failure.object().is_empty() {
        fields.insert("object".into(), json!(failure.object()));
    }
    if let Some(code) = failure.code() {
        fields.insert("code".into(), json!(code));
    }
    // An empty reason (a body that was no `Status`) is no reason.
    if let Some(reason) = failure.reason().filter(|reason| !reason.is_empty()) {
        fields.insert("reason".into(), json!(reason));
    }
    if let Some(cause) = failure.transport_cause() {
        fields.insert("cause".into(), json!(cause.to_string()));
    }
    // deploy.md § Who refused it: a 403 says who refused, and for admission which plugin.
    if let Some(refusal) = refusal_of(failure) {
        fields.insert("refused_by".into(), json!(refusal.refused_by()));
        if let Some(plugin) = refusal.plugin() {
            fields.insert("plugin".into(), json!(plugin.as_str()));
        }
    }
    fields
}

/// `text` cut to at most `max` characters, ending in `…` when cut.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut kept: String = text.chars().take(max.saturating_sub(1)).collect();
    kept.push('…');
    kept
}

/// One line of at most [`MAX_MESSAGE`] characters: line breaks become spaces.
fn clip(text: &str) -> String {
    let line: String = text
        .chars()
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .collect();
    cut(&line, MAX_MESSAGE)
}

#[cfg(test)]
mod tests;
