//! The buzz provider's binding (buzz-provider.md § 4): [`BUZZ`], its label, annotation and
//! environment keys as data of the generic `apiary_classify::binding::Binding`, and [`identity`],
//! the buzz-bound `AgentIdentity` of a pubkey. The names, labels, selector, verification and
//! builders are the generic ones; they read this data.
//!
//! Pure data and one check: no I/O.

use apiary_classify::binding::{Binding, LABEL_MANAGED_BY};
use apiary_substrate::naming::AgentIdentity;

/// The buzz provider's binding (buzz-provider.md § 4.2, § 5.1): byte-compatible with the
/// objects `buzz-backend-kubernetes` creates.
pub const BUZZ: Binding = Binding {
    label_managed_by: LABEL_MANAGED_BY,
    managed_by: "buzz-backend-kubernetes",
    label_binding_version: "buzz.block.xyz/binding-version",
    binding_version: "1",
    label_agent: "buzz.block.xyz/agent-pubkey",
    annotation_agent_id: "buzz.block.xyz/agent-pubkey-full",
    annotation_agent_name: None,
    annotation_create_intent: "buzz.block.xyz/create-intent",
    annotation_image: "buzz.block.xyz/image",
    start_nonce_key: "BUZZ_MANAGED_AGENT_START_NONCE",
    pod_name_prefix: "buzz-agent",
    pod_name_slug: false,
    // buzz-provider.md § 7: the template has no command or args members; § 6.2: no expiry.
    intent_command_args: false,
    expiry_annotation: false,
};

/// A buzz agent pubkey that is not exactly 64 lowercase hex characters. The pubkey is public; the
/// message still names only its length.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the buzz agent pubkey is {length} characters of which some are not lowercase hex: it must be \
     exactly 64 lowercase hex characters (the x-only secp256k1 public key)"
)]
pub struct PubkeyError {
    /// The length of the refused value, in bytes.
    pub length: usize,
}

/// The buzz-bound identity of `pubkey_hex`, the 64-hex x-only public key derived from the
/// agent's nsec (buzz-provider.md § 4.1): pod `buzz-agent-<12 hex>`, Secret
/// `buzz-agent-<12 hex>-<generation>`, label value the first 32 hex.
///
/// # Errors
///
/// [`PubkeyError`] unless `pubkey_hex` is exactly 64 lowercase hex characters.
pub fn identity(pubkey_hex: &str) -> Result<AgentIdentity, PubkeyError> {
    AgentIdentity::bound(BUZZ, pubkey_hex).map_err(|error| PubkeyError {
        length: error.length,
    })
}

#[cfg(test)]
mod tests {
    use apiary_classify::binding::APIARY;

    use super::*;

    /// The wire strings of the buzz binding, pinned as literals (buzz-provider.md § 4.2).
    #[test]
    fn binding_keys_are_the_wire_strings() {
        assert_eq!(BUZZ.label_managed_by, "app.kubernetes.io/managed-by");
        assert_eq!(BUZZ.managed_by, "buzz-backend-kubernetes");
        assert_eq!(BUZZ.label_binding_version, "buzz.block.xyz/binding-version");
        assert_eq!(BUZZ.binding_version, "1");
        assert_eq!(BUZZ.label_agent, "buzz.block.xyz/agent-pubkey");
        assert_eq!(BUZZ.annotation_agent_id, "buzz.block.xyz/agent-pubkey-full");
        assert_eq!(BUZZ.annotation_agent_name, None);
        assert_eq!(
            BUZZ.annotation_create_intent,
            "buzz.block.xyz/create-intent"
        );
        assert_eq!(BUZZ.annotation_image, "buzz.block.xyz/image");
        assert_eq!(BUZZ.start_nonce_key, "BUZZ_MANAGED_AGENT_START_NONCE");
        let template = |b: Binding| (b.intent_command_args, b.expiry_annotation);
        assert_eq!(template(BUZZ), (false, false));
        assert_ne!(APIARY, BUZZ);
    }

    /// deploy.md § Persistent workspace: one claim name per agent, its pod name plus
    /// `-workspace`, under the buzz binding too.
    #[test]
    fn the_workspace_claim_is_named_after_the_pod() {
        let buzz = identity(&"ab".repeat(32)).unwrap();
        assert_eq!(
            buzz.workspace_claim_name(),
            "buzz-agent-abababababab-workspace"
        );
    }
}
