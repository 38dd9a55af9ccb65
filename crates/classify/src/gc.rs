//! The garbage-collection plan (deploy.md § Plan, § Age gate, § Execution): which
//! terminated pods and which Secrets one GC pass may delete, and the decision on re-reading a
//! planned pod just before deleting it; and one pass as a machine (`pass`).
//!
//! Pure. The only clock is the apiserver's own (`Date` of the pod list, as Unix seconds) against
//! the server-assigned `creationTimestamp`; without it the orphan sweep is skipped. Unverified
//! pods protect nothing and are never doomed; unverified Secrets are never planned.

mod machine;
mod plan;

pub use machine::{GcMachine, GcReport, GcSpec, GcStep};
pub use plan::{
    GcPlan, GcPodDecision, ORPHAN_AGE_GATE_SECS, OrphanSweep, decide_gc_reread, orphan_old_enough,
    plan_gc,
};
