//! The driver: runs the machines of `apiary-classify` against any [`Substrate`](crate::Substrate) —
//! deploy (deploy.md § The deploy operation), undeploy and status (§ status, undeploy, gc), the GC
//! pass (§ Execution), and the expiry collection and renew (§ Expiry) — with one drive loop and
//! one performer of their requests (`perform`); each operation's file builds its machine and
//! finishes its output.
//!
//! Imperative shell: it performs I/O, answers in the classify vocabulary, mints the generation
//! and rebuilds objects from the pure builders. It takes **no decisions**: which pod
//! to delete, with which fence, which Secret may go, when the deadline is over, what progress to
//! show — all of that is decided by the machines. Each operation runs in a `tracing` span with the
//! agent and pod as fields, so its messages name neither. It never logs, prints or returns an env
//! value (it never reads one back).

mod deploy;
mod expire;
mod gc;
mod list;
mod objects;
mod perform;
mod renew;
mod shared;
mod status;
mod undeploy;

pub use apiary_classify::deploy::{DeployError, Deployed};
pub use apiary_classify::gc::GcReport;
pub use apiary_classify::status::{SecretStatus, StatusExpiry, StatusReport};
pub use apiary_classify::undeploy::{UndeployError, UndeployReport};

pub use deploy::{DeployOptions, deploy, deploy_spec, deploy_watching, spec_for};
pub use expire::{
    AgentGc, EXPIRE_DEADLINE, GC_ALL_GRANTS, GcAll, all_agents_selector, collect_expired, gc_agent,
    gc_all,
};
pub use gc::gc;
pub use list::{LIST_PAGE_SIZE, ListOptions, list, list_selector, listed_pod, listed_secret};
pub use objects::read_workspace;
pub use renew::{
    RENEW_BACKOFF, RenewOptions, StampError, expiry_patch, renew, server_clock, stamp_expiry,
};
pub use shared::{DEFAULT_POLL, OnProgress};
pub use status::status;
pub use undeploy::{UndeployOptions, undeploy, undeploy_watching};
