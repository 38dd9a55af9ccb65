//! Pure deploy decisions (deploy.md § Observation to § status, undeploy, gc): startup states, pull
//! failures, condition text, verification, classification, the deploy state machine, GC, undeploy
//! and status planning.
//!
//! This crate has no dependencies and performs no I/O: no Kubernetes types, no clock, no
//! randomness. The shell (`apiary-substrate`) maps apiserver objects onto [`facts`] and executes
//! the effects the decisions return.
//!
//! Every item has one path, through its public module (`apiary_classify::verify::verify_pod`);
//! the crate root re-exports nothing.
//!
#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

pub mod action;
pub mod answer;
pub mod binding;
pub mod condition;
pub mod deploy;
pub mod duration;
pub mod expire;
pub mod expiry;
pub mod facts;
pub mod failure;
pub mod fence;
pub mod gc;
pub mod grace;
pub mod inventory;
pub mod object;
pub mod policy;
mod progress;
pub mod pull;
pub mod reference;
pub mod refusal;
pub mod renew;
pub mod request;
pub mod settings;
pub mod startup;
pub mod status;
pub mod stuck;
pub mod undeploy;
pub mod verify;
mod wait;
pub mod workspace;

#[cfg(test)]
mod testkit;
