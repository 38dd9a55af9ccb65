//! `--overrides` (deploy.md § Pod options): an RFC 7386 JSON merge patch, as for `kubectl run
//! --overrides`, applied to the pod apiary built, for the fields no flag covers (affinity,
//! topology spread, `dnsConfig`, extra volumes). The patched pod is re-verified against apiary's
//! invariants before any request is sent; a patch that changes one is refused, naming the JSON
//! path, the problem and the fix.
//!
//! The invariants (the built pod is the reference), and apiary's **decisions** among them:
//!
//! 1. **Identity.** `metadata.name` and `metadata.namespace` are unchanged; every label and
//!    annotation whose key apiary owns (`apiary.dev/*`, `buzz.block.xyz/*`,
//!    `app.kubernetes.io/managed-by`, as for `--label`) keeps its value, none is removed and
//!    none is added. The user's own keys may be added, changed or removed.
//! 2. **The agent container** (named `agent`) exists exactly once; its `image`,
//!    `envFrom` and `securityContext` are unchanged, and its `env` keeps every variable apiary
//!    set and adds none named like apiary's own ([`AUTHORITATIVE_KEYS`],
//!    `BUZZ_PILOT_POD_UID`): an explicit `env` beats `envFrom`, so it could spoof them.
//!    `envFrom` must be exactly the built list, since a later source beats an earlier one.
//! 3. **The pod's lifecycle and hardening**: `spec.restartPolicy` and `spec.securityContext` are
//!    unchanged, `spec.automountServiceAccountToken` stays `false`.
//! 4. **Nothing weakens the hardening around the agent** (decision): every other container and
//!    every init container sets `allowPrivilegeEscalation: false`, drops `ALL` capabilities,
//!    adds none, is not `privileged`, and does not undo the pod's non-root user or seccomp
//!    profile (`runAsNonRoot: false`, `runAsUser: 0`, seccomp `Unconfined`). `hostNetwork`, `hostPID`
//!    and `hostIPC` stay unset or false, no volume is a `hostPath`, and there are no ephemeral
//!    containers (the apiserver adds those to a running pod only).
//! 5. **No `status`**: a pod is created without one.
//!
//! A field the pod type does not know (a misspelling such as `spec.afinity`) is refused rather
//! than silently dropped (decision: decoding would otherwise ignore it); "the pod type" is the
//! one of the Kubernetes version apiary was built for. A merge patch replaces an array whole, so a patch that touches
//! `spec.containers` must restate the agent container.
//!
//! Pure: no I/O. Messages name paths, never values, except a decoding error's own wording.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, SecurityContext};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Map, Value};

use crate::env::AUTHORITATIVE_KEYS;

// Copies of `build::CONTAINER_NAME`, `build::PILOT_POD_UID_ENV`, `build::DROPPED_CAPABILITIES`
// and `flags::OWNED_KEYS`, pinned equal by tests: `build` and `flags` read the pod options, so
// importing them here would close a module cycle once the options hold an `Overrides`.
/// The agent container's name.
const CONTAINER_NAME: &str = "agent";
/// The pod-uid variable a buzz pod may get, apiary's own even when not set.
const PILOT_POD_UID_ENV: &str = "BUZZ_PILOT_POD_UID";
/// The capability every container drops.
const DROPPED_CAPABILITIES: &str = "ALL";
/// Label and annotation keys apiary owns: a prefix ending in `/`, or a whole key.
const OWNED_KEYS: [&str; 3] = [
    "apiary.dev/",
    "buzz.block.xyz/",
    "app.kubernetes.io/managed-by",
];

/// Why `--overrides` was refused. Every message starts with `--overrides`, names the JSON path
/// when there is one, and says how to fix the patch.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OverridesError {
    /// The text is not JSON; `reason` is the parser's, with line and column.
    #[error(
        "--overrides is not valid JSON ({reason}); give a JSON object such as '{{\"spec\":{{\"dnsPolicy\":\"Default\"}}}}', or @FILE naming a file that holds one"
    )]
    NotJson {
        /// The parser's message.
        reason: String,
    },
    /// The JSON is not an object (a merge patch of a pod is one).
    #[error(
        "--overrides must be a JSON object, not {kind}; a merge patch of the pod looks like '{{\"spec\":{{\"affinity\":{{...}}}}}}'"
    )]
    NotObject {
        /// What it is instead: `an array`, `a string`, `a number`, `a boolean` or `null`.
        kind: &'static str,
    },
    /// The patched JSON does not decode as a pod (a field of the wrong type, or `kind` or
    /// `apiVersion` changed).
    #[error(
        "--overrides does not leave a valid pod: {reason}; give each field the type the Pod API documents"
    )]
    NotAPod {
        /// The decoder's message.
        reason: String,
    },
    /// The patch sets a field the pod type does not have.
    #[error(
        "--overrides: {path} is not a field of a pod; check its spelling (JSON names are camelCase, e.g. spec.topologySpreadConstraints)"
    )]
    UnknownField {
        /// The JSON path of the field, e.g. `spec.afinity`.
        path: String,
    },
    /// The patch breaks one of apiary's invariants (the module docs).
    #[error("--overrides: {path} {problem}; {fix}")]
    Refused {
        /// The JSON path, e.g. `spec.containers[agent].image`.
        path: String,
        /// What the patch did to it.
        problem: &'static str,
        /// How to fix the patch.
        fix: &'static str,
    },
}

/// A parsed `--overrides` patch: always a JSON object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Overrides {
    patch: Value,
}

impl Overrides {
    /// Parses the text of `--overrides` (or of its `@FILE`).
    ///
    /// # Errors
    ///
    /// [`OverridesError::NotJson`] or [`OverridesError::NotObject`].
    pub fn parse(text: &str) -> Result<Overrides, OverridesError> {
        let patch: Value = serde_json::from_str(text).map_err(|e| OverridesError::NotJson {
            reason: e.to_string(),
        })?;
        let kind = match patch {
            Value::Object(_) => return Ok(Overrides { patch }),
            Value::Array(_) => "an array",
            Value::String(_) => "a string",
            Value::Number(_) => "a number",
            Value::Bool(_) => "a boolean",
            Value::Null => "null",
        };
        Err(OverridesError::NotObject { kind })
    }

    /// The patch as compact JSON with object keys sorted at every depth: the same for every
    /// spelling of the same object (key order, whitespace), so it can enter the create-intent
    /// fingerprint. Sorted here, whatever order serde_json's map keeps.
    #[must_use]
    pub fn canonical(&self) -> String {
        sorted(&self.patch).to_string()
    }

    /// Applies the patch to the pod apiary built and verifies the result.
    ///
    /// # Errors
    ///
    /// [`OverridesError::NotAPod`] or [`OverridesError::UnknownField`] when the result is not a
    /// pod, [`OverridesError::Refused`] when it breaks an invariant ([`verify_invariants`]).
    pub fn apply(&self, built: &Pod) -> Result<Pod, OverridesError> {
        let not_a_pod = |e: serde_json::Error| OverridesError::NotAPod {
            reason: e.to_string(),
        };
        let mut merged = serde_json::to_value(built).map_err(not_a_pod)?;
        merge_patch(&mut merged, &self.patch);
        let patched: Pod = serde_json::from_value(merged.clone()).map_err(not_a_pod)?;
        let decoded = serde_json::to_value(&patched).map_err(not_a_pod)?;
        if let Some(path) = dropped_field(&merged, &decoded, "") {
            return Err(OverridesError::UnknownField { path });
        }
        verify_invariants(built, &patched)?;
        Ok(patched)
    }
}

/// RFC 7386 § 2: an object patch merges member by member (recursively), a `null` member deletes,
/// and any other patch (arrays included) replaces the target whole.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(members) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(map) = target {
        for (name, value) in members {
            if value.is_null() {
                map.remove(name);
            } else {
                merge_patch(map.entry(name.clone()).or_insert(Value::Null), value);
            }
        }
    }
}

/// Checks that `patched` keeps apiary's invariants of `built` (the module docs).
///
/// # Errors
///
/// [`OverridesError::Refused`] for the first invariant broken.
pub fn verify_invariants(built: &Pod, patched: &Pod) -> Result<(), OverridesError> {
    verify_identity(&built.metadata, &patched.metadata)?;
    let default = PodSpec::default();
    let built_spec = built.spec.as_ref().unwrap_or(&default);
    let spec = patched.spec.as_ref().unwrap_or(&default);
    verify_agent(built_spec, spec)?;
    keep(
        "spec.restartPolicy",
        &built_spec.restart_policy,
        &spec.restart_policy,
        FIX_POD,
    )?;
    if spec.automount_service_account_token != Some(false) {
        return Err(refuse(
            "spec.automountServiceAccountToken",
            "must stay false",
            "remove it from the patch; apiary never mounts a service-account token",
        ));
    }
    keep(
        "spec.securityContext",
        &built_spec.security_context,
        &spec.security_context,
        FIX_POD,
    )?;
    verify_hardening(spec)?;
    if patched.status.is_some() {
        return Err(refuse(
            "status",
            "is set",
            "remove it from the patch; a pod is created without a status",
        ));
    }
    Ok(())
}

const FIX_POD: &str = "remove it from the patch; apiary sets this field itself";
const FIX_AGENT: &str = "keep it as apiary builds it: a patch that lists spec.containers replaces the list whole and must restate the agent container exactly, including its envFrom, which names this attempt's Secret; in practice leave spec.containers out of the patch";
const FIX_OWNED: &str = "remove it from the patch; keys under apiary.dev/, buzz.block.xyz/ and app.kubernetes.io/managed-by are apiary's own (use --label or --annotation for yours)";

fn refuse(path: impl Into<String>, problem: &'static str, fix: &'static str) -> OverridesError {
    OverridesError::Refused {
        path: path.into(),
        problem,
        fix,
    }
}

/// Refuses `patched` unless it equals `built`.
fn keep<T: PartialEq>(
    path: &str,
    built: &T,
    patched: &T,
    fix: &'static str,
) -> Result<(), OverridesError> {
    if built == patched {
        Ok(())
    } else {
        Err(refuse(path, "is changed by the patch", fix))
    }
}

fn is_owned_key(key: &str) -> bool {
    OWNED_KEYS.iter().any(|owned| {
        if owned.ends_with('/') {
            key.starts_with(owned)
        } else {
            key == *owned
        }
    })
}

fn verify_identity(built: &ObjectMeta, patched: &ObjectMeta) -> Result<(), OverridesError> {
    keep("metadata.name", &built.name, &patched.name, FIX_POD)?;
    keep(
        "metadata.namespace",
        &built.namespace,
        &patched.namespace,
        "remove it from the patch; choose the namespace with --namespace",
    )?;
    verify_owned_keys("metadata.labels", &built.labels, &patched.labels)?;
    verify_owned_keys(
        "metadata.annotations",
        &built.annotations,
        &patched.annotations,
    )
}

fn verify_owned_keys(
    field: &str,
    built: &Option<BTreeMap<String, String>>,
    patched: &Option<BTreeMap<String, String>>,
) -> Result<(), OverridesError> {
    let empty = BTreeMap::new();
    let built = built.as_ref().unwrap_or(&empty);
    let patched = patched.as_ref().unwrap_or(&empty);
    let path = |key: &str| format!("{field}[{key:?}]");
    for (key, value) in built.iter().filter(|(key, _)| is_owned_key(key)) {
        match patched.get(key) {
            None => return Err(refuse(path(key), "is removed by the patch", FIX_OWNED)),
            Some(v) if v != value => {
                return Err(refuse(path(key), "is changed by the patch", FIX_OWNED));
            }
            Some(_) => {}
        }
    }
    match patched
        .keys()
        .find(|key| is_owned_key(key) && !built.contains_key(*key))
    {
        Some(key) => Err(refuse(path(key), "is added by the patch", FIX_OWNED)),
        None => Ok(()),
    }
}

fn verify_agent(built: &PodSpec, patched: &PodSpec) -> Result<(), OverridesError> {
    let path = format!("spec.containers[{CONTAINER_NAME}]");
    let mut agents = patched
        .containers
        .iter()
        .filter(|c| c.name == CONTAINER_NAME);
    let Some(agent) = agents.next() else {
        return Err(refuse(
            path,
            "is missing",
            "a merge patch replaces spec.containers whole: restate the agent container in the list, unchanged, or leave spec.containers out of the patch",
        ));
    };
    if agents.next().is_some() {
        return Err(refuse(
            path,
            "appears twice",
            "give every other container a name of its own",
        ));
    }
    let default = Container::default();
    let reference = built
        .containers
        .iter()
        .find(|c| c.name == CONTAINER_NAME)
        .unwrap_or(&default);
    keep(
        &format!("{path}.image"),
        &reference.image,
        &agent.image,
        FIX_AGENT,
    )?;
    keep(
        &format!("{path}.envFrom"),
        &reference.env_from,
        &agent.env_from,
        FIX_AGENT,
    )?;
    keep(
        &format!("{path}.securityContext"),
        &reference.security_context,
        &agent.security_context,
        FIX_AGENT,
    )?;
    verify_agent_env(&path, reference, agent)
}

/// The agent's `env`: the built variables unchanged, and no other named like apiary's own.
fn verify_agent_env(
    path: &str,
    built: &Container,
    patched: &Container,
) -> Result<(), OverridesError> {
    let built_env = built.env.as_deref().unwrap_or_default();
    let patched_env = patched.env.as_deref().unwrap_or_default();
    for var in patched_env {
        let reserved =
            AUTHORITATIVE_KEYS.contains(&var.name.as_str()) || var.name == PILOT_POD_UID_ENV;
        match built_env.iter().find(|b| b.name == var.name) {
            Some(built_var) if built_var != var => {
                return Err(refuse(
                    format!("{path}.env[{}]", var.name),
                    "is changed by the patch",
                    FIX_AGENT,
                ));
            }
            None if reserved => {
                return Err(refuse(
                    format!("{path}.env[{}]", var.name),
                    "is one of apiary's own variables",
                    "remove it from the patch; apiary sets it through the pod's Secret",
                ));
            }
            _ => {}
        }
    }
    match built_env
        .iter()
        .find(|b| !patched_env.iter().any(|var| var.name == b.name))
    {
        Some(missing) => Err(refuse(
            format!("{path}.env[{}]", missing.name),
            "is removed by the patch",
            FIX_AGENT,
        )),
        None => Ok(()),
    }
}

fn verify_hardening(spec: &PodSpec) -> Result<(), OverridesError> {
    for (path, value) in [
        ("spec.hostNetwork", spec.host_network),
        ("spec.hostPID", spec.host_pid),
        ("spec.hostIPC", spec.host_ipc),
    ] {
        if value == Some(true) {
            return Err(refuse(
                path,
                "is true",
                "remove it from the patch; apiary's pod never shares the node's namespaces",
            ));
        }
    }
    for volume in spec.volumes.iter().flatten() {
        if volume.host_path.is_some() {
            return Err(refuse(
                format!("spec.volumes[{}].hostPath", volume.name),
                "is set",
                "use an emptyDir, configMap, secret or persistentVolumeClaim volume; apiary's pod never mounts the node's filesystem",
            ));
        }
    }
    if spec
        .ephemeral_containers
        .as_ref()
        .is_some_and(|c| !c.is_empty())
    {
        return Err(refuse(
            "spec.ephemeralContainers",
            "is set",
            "remove it from the patch; ephemeral containers are added to a running pod, never created with it",
        ));
    }
    let others = spec
        .containers
        .iter()
        .filter(|c| c.name != CONTAINER_NAME)
        .map(|c| ("spec.containers", c));
    let inits = spec
        .init_containers
        .iter()
        .flatten()
        .map(|c| ("spec.initContainers", c));
    for (list, container) in others.chain(inits) {
        verify_hardened(
            &format!("{list}[{}].securityContext", container.name),
            container.security_context.as_ref(),
        )?;
    }
    Ok(())
}

/// A container the patch adds is hardened as the agent's is.
fn verify_hardened(path: &str, context: Option<&SecurityContext>) -> Result<(), OverridesError> {
    const FIX: &str = "harden the container as apiary's own: securityContext {\"allowPrivilegeEscalation\": false, \"capabilities\": {\"drop\": [\"ALL\"]}}, not privileged, not root";
    let default = SecurityContext::default();
    let context = context.unwrap_or(&default);
    let capabilities = context.capabilities.clone().unwrap_or_default();
    let drops_all = capabilities
        .drop
        .iter()
        .flatten()
        .any(|c| c == DROPPED_CAPABILITIES);
    let seccomp = context.seccomp_profile.as_ref().map(|p| p.type_.as_str());
    let problem = if context.allow_privilege_escalation != Some(false) {
        Some(("allowPrivilegeEscalation", "must be false"))
    } else if context.privileged == Some(true) {
        Some(("privileged", "must not be true"))
    } else if !drops_all {
        Some(("capabilities.drop", "must contain ALL"))
    } else if capabilities.add.is_some_and(|add| !add.is_empty()) {
        Some(("capabilities.add", "must be empty"))
    } else if context.run_as_non_root == Some(false) {
        Some(("runAsNonRoot", "must not be false"))
    } else if context.run_as_user == Some(0) {
        Some(("runAsUser", "must not be 0 (root)"))
    } else if seccomp == Some("Unconfined") {
        Some(("seccompProfile.type", "must not be Unconfined"))
    } else {
        None
    };
    match problem {
        Some((field, problem)) => Err(refuse(format!("{path}.{field}"), problem, FIX)),
        None => Ok(()),
    }
}

/// The path of the first member of `merged` (the patched JSON) that decoding dropped from
/// `decoded` (the pod re-encoded): a field the pod type does not have. A `null` member is no
/// field (decoding reads it as unset).
fn dropped_field(merged: &Value, decoded: &Value, path: &str) -> Option<String> {
    match (merged, decoded) {
        (Value::Object(merged), Value::Object(decoded)) => merged
            .iter()
            .filter(|(_, v)| !v.is_null())
            .find_map(|(key, value)| {
                let path = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                match decoded.get(key) {
                    None => Some(path),
                    Some(decoded) => dropped_field(value, decoded, &path),
                }
            }),
        (Value::Array(merged), Value::Array(decoded)) => merged
            .iter()
            .zip(decoded)
            .enumerate()
            .find_map(|(i, (value, decoded))| {
                let index = match value.get("name").and_then(Value::as_str) {
                    Some(name) => name.to_owned(),
                    None => i.to_string(),
                };
                dropped_field(value, decoded, &format!("{path}[{index}]"))
            }),
        _ => None,
    }
}

/// `value` with the members of every object inserted in key order: serialized, keys come out
/// sorted whether serde_json's map sorts them or keeps insertion order (`preserve_order`).
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            members.sort_by_key(|(key, _)| *key);
            Value::Object(
                members
                    .into_iter()
                    .map(|(k, v)| (k.clone(), sorted(v)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        scalar => scalar.clone(),
    }
}

#[cfg(test)]
mod tests;
