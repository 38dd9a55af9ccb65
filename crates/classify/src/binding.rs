//! Bindings (deploy.md § Bindings): the label, annotation and environment keys that tie a
//! cluster object to one agent, as values of one type — apiary's own binding here, the buzz
//! provider's (buzz-provider.md § 4) in `apiary-buzz` — and the [`Owner`] that verification
//! compares against.
//!
//! Pure data: `&'static str` facts and no behaviour beyond equality. The deploy machine,
//! classification, GC and status never branch on which binding they run; they only hand the
//! owner to verification. Nothing here derives an agent id (the shell does) or reads an object.

/// Label key naming the manager of an object (the same key under every binding).
pub const LABEL_MANAGED_BY: &str = "app.kubernetes.io/managed-by";

/// One binding: every key and marker value that names, labels and proves ownership of an
/// agent's pod and Secrets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Binding {
    /// Label key naming the manager ([`LABEL_MANAGED_BY`] for every binding).
    pub label_managed_by: &'static str,
    /// The value of [`Binding::label_managed_by`] on this binding's objects.
    pub managed_by: &'static str,
    /// Label key of the binding version.
    pub label_binding_version: &'static str,
    /// The binding version this build writes and accepts.
    pub binding_version: &'static str,
    /// Label key carrying the first 32 hex of the agent id (selector only; never re-checked).
    pub label_agent: &'static str,
    /// Annotation key carrying the full agent id: the proof of ownership.
    pub annotation_agent_id: &'static str,
    /// Annotation key carrying the agent's human name, when the binding has one (for humans;
    /// never used for verification).
    pub annotation_agent_name: Option<&'static str>,
    /// Annotation key carrying the create-intent fingerprint (pods only).
    pub annotation_create_intent: &'static str,
    /// Annotation key carrying the normalized image (pods only).
    pub annotation_image: &'static str,
    /// The environment key the per-attempt start nonce (the generation) is stamped under.
    pub start_nonce_key: &'static str,
    /// The first word of the agent's pod name: `<prefix>-[<slug>-]<12 hex of the agent id>`.
    pub pod_name_prefix: &'static str,
    /// Whether the pod name carries the slug of the agent's name (a binding without agent
    /// names has none).
    pub pod_name_slug: bool,
    /// Whether the create-intent template has the `command` and `args` members (deploy.md
    /// § Create-intent fingerprint); a binding whose pods never set them leaves them out.
    pub intent_command_args: bool,
    /// Whether a pod asked to expire carries the expiry annotation (deploy.md § Expiry); a
    /// binding without expiry never writes it.
    pub expiry_annotation: bool,
}

/// apiary's own binding (deploy.md § Names, § Verification).
pub const APIARY: Binding = Binding {
    label_managed_by: LABEL_MANAGED_BY,
    managed_by: "apiary",
    label_binding_version: "apiary.dev/binding-version",
    binding_version: "1",
    label_agent: "apiary.dev/agent",
    annotation_agent_id: "apiary.dev/agent-id",
    annotation_agent_name: Some("apiary.dev/agent-name"),
    annotation_create_intent: "apiary.dev/create-intent",
    annotation_image: "apiary.dev/image",
    start_nonce_key: "APIARY_START_NONCE",
    pod_name_prefix: "apiary",
    pod_name_slug: true,
    intent_command_args: true,
    expiry_annotation: true,
};

/// Whom an object must belong to: a binding and the full agent id under it. Verification
/// compares an object's marks against exactly this.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Owner {
    /// The binding whose markers the object must carry.
    pub binding: Binding,
    /// The full agent id (64 hex) the binding's agent-id annotation must equal byte for byte.
    pub agent_id: String,
}

impl Owner {
    /// The owner `agent_id` under `binding`.
    pub fn new(binding: Binding, agent_id: impl Into<String>) -> Self {
        Self {
            binding,
            agent_id: agent_id.into(),
        }
    }

    /// `agent_id` under apiary's own binding.
    pub fn apiary(agent_id: impl Into<String>) -> Self {
        Self::new(APIARY, agent_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The wire strings of apiary's binding, pinned as literals (deploy.md § Names; the buzz
    /// binding's are pinned in `apiary-buzz`).
    #[test]
    fn binding_keys_are_the_wire_strings() {
        assert_eq!(APIARY.label_managed_by, "app.kubernetes.io/managed-by");
        assert_eq!(APIARY.managed_by, "apiary");
        assert_eq!(APIARY.label_binding_version, "apiary.dev/binding-version");
        assert_eq!(APIARY.binding_version, "1");
        assert_eq!(APIARY.label_agent, "apiary.dev/agent");
        assert_eq!(APIARY.annotation_agent_id, "apiary.dev/agent-id");
        assert_eq!(APIARY.annotation_agent_name, Some("apiary.dev/agent-name"));
        assert_eq!(APIARY.annotation_create_intent, "apiary.dev/create-intent");
        assert_eq!(APIARY.annotation_image, "apiary.dev/image");
        assert_eq!(APIARY.start_nonce_key, "APIARY_START_NONCE");
        let template = |b: Binding| (b.intent_command_args, b.expiry_annotation);
        assert_eq!(template(APIARY), (true, true));
    }
}
