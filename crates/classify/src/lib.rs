//! Pure deploy decisions (deploy.md § Observation to § status, undeploy, gc): startup states, pull
//! failures, condition text, verification, classification, the deploy state machine, GC, undeploy
//! and status planning.
//!
//! This crate has no dependencies and performs no I/O: no Kubernetes types, no clock, no
//! randomness. The shell (`apiary-substrate`) maps apiserver objects onto [`facts`] and executes
//! the effects the decisions return.
//!
#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

pub mod classify;
pub mod condition;
pub mod facts;
pub mod fence;
pub mod gc;
pub mod machine;
pub mod pull;
pub mod reference;
pub mod startup;
pub mod status;
pub mod undeploy;
pub mod verify;

#[cfg(test)]
mod testkit;

pub use classify::{Action, classify};
pub use condition::{LatestCondition, NO_CONDITION, condition_text};
pub use fence::Fence;
pub use gc::{GcPlan, GcPodDecision, OrphanSweep, decide_gc_reread, plan_gc};
pub use machine::{DeployError, DeployMachine, DeploySpec, Deployed, Effect, Event};
pub use pull::{PullFailure, classify_pull_message, pull_failure_text, registry_of};
pub use startup::{Decoded, StartupState, decode, settle_secret_check};
pub use status::{PodStatus, StatusState, pod_status};
pub use verify::{
    NeedsSecretCheck, PodDeletion, PodView, SecretDeletion, SettledPod, VerifiedPod,
    VerifiedSecret, verify_pod, verify_secret, view_pod,
};
