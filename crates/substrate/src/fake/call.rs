//! The fake substrate's call log vocabulary: [`Call`], one entry per `Substrate` call with its
//! arguments, in order. Each maps to the one request-kind enumeration,
//! [`apiary_classify::failure::Operation`], which is also what a scripted answer targets
//! (`ensure_namespace` is one call here, [`Operation::EnsureNamespace`]). Plain data; the `Debug`
//! of a created Secret shows its name and keys, never its values.

use std::time::Duration;

use apiary_classify::failure::Operation;
use apiary_classify::fence::Fence;
use k8s_openapi::api::core::v1::{Pod, Secret};

/// One call made on the fake, with its arguments, in the order made.
#[allow(clippy::large_enum_variant)] // reason: a test log matched by value; boxing only adds noise.
#[derive(Clone, PartialEq)]
pub enum Call {
    /// `ensure_namespace()` of the fake's namespace.
    EnsureNamespace {
        /// The namespace.
        namespace: String,
    },
    /// `list_pods(selector)`.
    ListPods {
        /// The label selector.
        selector: String,
    },
    /// `list_secrets(selector)`.
    ListSecrets {
        /// The label selector.
        selector: String,
    },
    /// `get_pod(name)`.
    GetPod {
        /// The pod name.
        name: String,
    },
    /// `secret_exists(name)`.
    SecretExists {
        /// The Secret name.
        name: String,
    },
    /// `read_secret_values(name)`.
    ReadSecretValues {
        /// The Secret name.
        name: String,
    },
    /// `service_account_exists(name)`.
    ServiceAccountExists {
        /// The account name.
        name: String,
    },
    /// `create_secret(secret)`: the Secret exactly as passed.
    CreateSecret {
        /// The Secret.
        secret: Secret,
    },
    /// `create_pod(pod)`: the pod exactly as passed.
    CreatePod {
        /// The pod.
        pod: Pod,
    },
    /// `check_pod_create(pod)`: a dry-run create (deploy.md § Replacing a live agent).
    CheckPodCreate {
        /// The pod, under its generated name.
        pod: Pod,
    },
    /// `delete_pod(name, fence)`.
    DeletePod {
        /// The pod name.
        name: String,
        /// The fence the delete carried.
        fence: Fence,
    },
    /// `delete_secret(name, uid)`.
    DeleteSecret {
        /// The Secret name.
        name: String,
        /// The uid precondition.
        uid: String,
    },
    /// `get_network_policy(name)`.
    GetNetworkPolicy {
        /// The policy name.
        name: String,
    },
    /// `create_network_policy(policy)`.
    CreateNetworkPolicy {
        /// The policy name.
        name: String,
    },
    /// `update_network_policy(policy, fence)`.
    UpdateNetworkPolicy {
        /// The policy name.
        name: String,
        /// The fence the update carried.
        fence: Fence,
    },
    /// `delete_network_policy(deletion)`.
    DeleteNetworkPolicy {
        /// The policy name.
        name: String,
        /// The fence the delete carried.
        fence: Fence,
    },
    /// `get_workspace_claim(name)`.
    GetWorkspaceClaim {
        /// The claim name.
        name: String,
    },
    /// `create_workspace_claim(claim)`.
    CreateWorkspaceClaim {
        /// The claim name.
        name: String,
    },
    /// `delete_workspace_claim(deletion)`.
    DeleteWorkspaceClaim {
        /// The claim name.
        name: String,
        /// The fence the delete carried.
        fence: Fence,
    },
    /// `read_node(name)`.
    GetNode {
        /// The node name.
        name: String,
    },
    /// `sleep(duration)`.
    Sleep {
        /// The requested duration.
        duration: Duration,
    },
    /// `wait_for_pod_change(name, resource_version, max)`.
    WaitForPodChange {
        /// The pod name.
        name: String,
        /// The resourceVersion waited past.
        resource_version: Option<String>,
        /// The longest wait.
        max: Duration,
    },
}

impl Call {
    /// The request kind; `None` for `sleep` and `wait_for_pod_change`.
    pub fn op(&self) -> Option<Operation> {
        Some(match self {
            Self::EnsureNamespace { .. } => Operation::EnsureNamespace,
            Self::ListPods { .. } => Operation::ListPods,
            Self::ListSecrets { .. } => Operation::ListSecrets,
            Self::GetPod { .. } => Operation::GetPod,
            Self::SecretExists { .. } | Self::ReadSecretValues { .. } => Operation::GetSecret,
            Self::ServiceAccountExists { .. } => Operation::GetServiceAccount,
            Self::CreateSecret { .. } => Operation::CreateSecret,
            Self::CreatePod { .. } | Self::CheckPodCreate { .. } => Operation::CreatePod,
            Self::DeletePod { .. } => Operation::DeletePod,
            Self::DeleteSecret { .. } => Operation::DeleteSecret,
            Self::GetNode { .. } => Operation::GetNode,
            Self::GetNetworkPolicy { .. } => Operation::GetNetworkPolicy,
            Self::CreateNetworkPolicy { .. } => Operation::CreateNetworkPolicy,
            Self::UpdateNetworkPolicy { .. } => Operation::UpdateNetworkPolicy,
            Self::DeleteNetworkPolicy { .. } => Operation::DeleteNetworkPolicy,
            Self::GetWorkspaceClaim { .. } => Operation::GetWorkspaceClaim,
            Self::CreateWorkspaceClaim { .. } => Operation::CreateWorkspaceClaim,
            Self::DeleteWorkspaceClaim { .. } => Operation::DeleteWorkspaceClaim,
            Self::Sleep { .. } | Self::WaitForPodChange { .. } => return None,
        })
    }

    /// Whether this call writes (namespace ensure, creates, deletes).
    pub fn is_mutation(&self) -> bool {
        // A dry-run create writes nothing (deploy.md § Replacing a live agent).
        !matches!(self, Self::CheckPodCreate { .. })
            && self.op().is_some_and(Operation::is_mutation)
    }

    /// A one-line, value-free summary for assertions: `ensure_namespace agents`,
    /// `create_secret <name>`, `create_pod <name>`, `delete_pod <name> uid=<uid> rv=<rv>`,
    /// `delete_secret <name> uid=<uid>`, `get_pod <name>`, `secret_exists <name>`,
    /// `read_secret_values <name>`, `get_network_policy <name>`, `create_network_policy <name>`,
    /// `update_network_policy <name> uid=<uid> rv=<rv>`,
    /// `delete_network_policy <name> uid=<uid> rv=<rv>`, `get_workspace_claim <name>`,
    /// `create_workspace_claim <name>`, `delete_workspace_claim <name> uid=<uid> rv=<rv>`,
    /// `service_account_exists <name>`, `get_node <name>`,
    /// `list_pods <selector>`, `list_secrets <selector>`, `sleep <secs>s`,
    /// `wait_for_pod_change <name> rv=<rv or -> max=<secs>s` (seconds with fractions when not
    /// whole, e.g. `0.5s`).
    pub fn summary(&self) -> String {
        let secs = |d: &Duration| {
            if d.subsec_nanos() == 0 {
                format!("{}s", d.as_secs())
            } else {
                format!("{}s", d.as_secs_f64())
            }
        };
        match self {
            Self::EnsureNamespace { namespace } => format!("ensure_namespace {namespace}"),
            Self::ListPods { selector } => format!("list_pods {selector}"),
            Self::ListSecrets { selector } => format!("list_secrets {selector}"),
            Self::GetPod { name } => format!("get_pod {name}"),
            Self::SecretExists { name } => format!("secret_exists {name}"),
            Self::ReadSecretValues { name } => format!("read_secret_values {name}"),
            Self::ServiceAccountExists { name } => format!("service_account_exists {name}"),
            Self::CreateSecret { secret } => format!(
                "create_secret {}",
                secret.metadata.name.as_deref().unwrap_or("")
            ),
            Self::CreatePod { pod } => {
                format!("create_pod {}", pod.metadata.name.as_deref().unwrap_or(""))
            }
            Self::CheckPodCreate { pod } => format!(
                "check_pod_create {}",
                pod.metadata.generate_name.as_deref().unwrap_or("")
            ),
            Self::DeletePod { name, fence } => format!(
                "delete_pod {name} uid={} rv={}",
                fence.uid(),
                fence.resource_version()
            ),
            Self::DeleteSecret { name, uid } => format!("delete_secret {name} uid={uid}"),
            Self::GetNode { name } => format!("get_node {name}"),
            Self::GetNetworkPolicy { name } => format!("get_network_policy {name}"),
            Self::CreateNetworkPolicy { name } => format!("create_network_policy {name}"),
            Self::UpdateNetworkPolicy { name, fence } => format!(
                "update_network_policy {name} uid={} rv={}",
                fence.uid(),
                fence.resource_version()
            ),
            Self::DeleteNetworkPolicy { name, fence } => format!(
                "delete_network_policy {name} uid={} rv={}",
                fence.uid(),
                fence.resource_version()
            ),
            Self::GetWorkspaceClaim { name } => format!("get_workspace_claim {name}"),
            Self::CreateWorkspaceClaim { name } => format!("create_workspace_claim {name}"),
            Self::DeleteWorkspaceClaim { name, fence } => format!(
                "delete_workspace_claim {name} uid={} rv={}",
                fence.uid(),
                fence.resource_version()
            ),
            Self::Sleep { duration } => format!("sleep {}", secs(duration)),
            Self::WaitForPodChange {
                name,
                resource_version,
                max,
            } => format!(
                "wait_for_pod_change {name} rv={} max={}",
                resource_version.as_deref().unwrap_or("-"),
                secs(max)
            ),
        }
    }
}

/// Value-free: a created Secret shows its name and its keys, never its values.
impl std::fmt::Debug for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::CreateSecret { secret } => {
                let mut keys: Vec<&String> = secret
                    .string_data
                    .iter()
                    .flat_map(|m| m.keys())
                    .chain(secret.data.iter().flat_map(|m| m.keys()))
                    .collect();
                keys.sort();
                keys.dedup();
                f.debug_struct("CreateSecret")
                    .field("name", &secret.metadata.name)
                    .field("keys", &keys)
                    .finish_non_exhaustive()
            }
            Self::CreatePod { pod } => f
                .debug_struct("CreatePod")
                .field("name", &pod.metadata.name)
                .finish_non_exhaustive(),
            other => f.write_str(&other.summary()),
        }
    }
}
