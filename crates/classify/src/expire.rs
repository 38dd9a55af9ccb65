//! The collection of an expired agent (deploy.md § Expiry): whether its pod has expired on the
//! apiserver's clock (`decide`), and the collection as a machine (`machine`).

mod decide;
mod machine;

pub use decide::{ExpiryDecision, decide_expiry, secrets_after_collection};
pub use machine::{ExpireError, ExpireMachine, ExpireReport, ExpireSpec, ExpireStep};
