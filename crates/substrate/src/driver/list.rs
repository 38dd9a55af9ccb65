//! Executes `list` (deploy.md § list): one paginated quorum LIST of pods and one of Secrets by
//! apiary's marker label (and the caller's selector), mapped onto `apiary-classify`'s inventory,
//! which decides what each row shows and what is skipped.
//!
//! Imperative shell, and read-only: it lists, copies what the objects say into the inventory's
//! input (the agent-name claim, restarts, the image annotation; the expiry annotation is among
//! the marks observation reads) and derives each
//! claimed agent's id and pod name with the naming rules. It decides nothing and never reads a
//! Secret's payload (the listed Secrets' data is dropped unread).

use std::num::NonZeroU32;

use apiary_classify::failure::RequestFailure;
use apiary_classify::inventory::{
    AgentNames, Inventory, InventoryOptions, ListedPod, ListedSecret, inventory,
};
use k8s_openapi::api::core::v1::{Pod, Secret};

use crate::build::CONTAINER_NAME;
use apiary_classify::binding::APIARY;

use crate::naming::AgentIdentity;
use crate::observe::{observe_pod, observe_secret};
use crate::substrate::Substrate;

/// Objects per page of `list`'s LISTs: the page size `kube::runtime::watcher` uses too.
pub const LIST_PAGE_SIZE: NonZeroU32 = NonZeroU32::new(500).expect("500 is not zero");

/// What `list` lists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListOptions {
    /// A label selector narrowing the listing (ANDed with apiary's marker label).
    pub selector: Option<String>,
    /// `--all`: also agents with Secrets and no pod, as `absent`.
    pub include_absent: bool,
    /// Objects per LIST request.
    pub page_size: NonZeroU32,
}

impl Default for ListOptions {
    fn default() -> Self {
        Self {
            selector: None,
            include_absent: false,
            page_size: LIST_PAGE_SIZE,
        }
    }
}

/// The selector of both listings: apiary's marker label, and `extra` when given. `list` is
/// apiary's binding only: agents are named by its agent-name annotation.
#[must_use]
pub fn list_selector(extra: Option<&str>) -> String {
    let marker = format!("{}={}", APIARY.label_managed_by, APIARY.managed_by);
    match extra.map(str::trim).filter(|s| !s.is_empty()) {
        Some(extra) => format!("{marker},{extra}"),
        None => marker,
    }
}

/// The inventory of the namespace: exactly one paginated pod LIST, then one paginated Secret
/// LIST (pods first, so the server clock is no later than the Secrets it ages against).
///
/// # Errors
/// A failed listing (nothing is reported from half an inventory).
pub async fn list<S: Substrate>(
    substrate: &S,
    options: &ListOptions,
) -> Result<Inventory, RequestFailure> {
    let selector = list_selector(options.selector.as_deref());
    let pods = substrate
        .list_all_pods(&selector, options.page_size)
        .await?;
    let secrets = substrate
        .list_all_secrets(&selector, options.page_size)
        .await?;
    let listed_pods: Vec<ListedPod> = pods.items.iter().map(listed_pod).collect();
    let listed_secrets: Vec<ListedSecret> = secrets.iter().map(listed_secret).collect();
    let inventory = inventory(
        &listed_pods,
        &listed_secrets,
        pods.server_now.map(|now| now.timestamp()),
        InventoryOptions {
            include_absent: options.include_absent,
        },
        agent_names,
    );
    tracing::debug!(
        rows = inventory.rows.len(),
        skipped_pods = inventory.skipped_pods,
        skipped_secrets = inventory.skipped_secrets,
        "inventory listed"
    );
    Ok(inventory)
}

/// The id and pod name of a claimed AGENT; `None` when the claim is no valid AGENT.
fn agent_names(agent: &str) -> Option<AgentNames> {
    let identity = AgentIdentity::new(agent).ok()?;
    Some(AgentNames {
        owner: identity.owner(),
        pod_name: identity.pod_name(),
    })
}

fn annotation(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    key: &str,
) -> Option<String> {
    meta.annotations.as_ref().and_then(|a| a.get(key)).cloned()
}

/// The inventory's input for one listed pod.
#[must_use]
pub fn listed_pod(pod: &Pod) -> ListedPod {
    let restarts = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|all| all.iter().find(|c| c.name == CONTAINER_NAME))
        .and_then(|c| u32::try_from(c.restart_count).ok());
    ListedPod {
        observed: observe_pod(pod, APIARY),
        agent_name: APIARY
            .annotation_agent_name
            .and_then(|key| annotation(&pod.metadata, key)),
        restarts,
        image: annotation(&pod.metadata, APIARY.annotation_image),
    }
}

/// The inventory's input for one listed Secret: marks and the agent-name claim, never data.
#[must_use]
pub fn listed_secret(secret: &Secret) -> ListedSecret {
    ListedSecret {
        observed: observe_secret(secret, APIARY),
        agent_name: APIARY
            .annotation_agent_name
            .and_then(|key| annotation(&secret.metadata, key)),
    }
}

#[cfg(all(test, feature = "fake"))]
mod tests;
