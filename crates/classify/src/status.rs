//! The `status` mapping (deploy.md § status): one read of the pod name to
//! a state name, a condition and the Secret to look up.
//!
//! Pure and read-only. A foreign pod reports nothing of itself: no condition, no Secret. The
//! same mapping is the progress every operation's machine reports (deploy.md § Loop: one line per
//! change of observed state), so the shell renders it and never re-derives it.

mod machine;
mod mapping;

pub use machine::{
    SecretStatus, StatusExpiry, StatusMachine, StatusReport, StatusSpec, StatusStep,
};
pub(crate) use mapping::ProgressLog;
pub use mapping::{PodStatus, Progress, StatusState, pod_status, progress_of, startup_status};
