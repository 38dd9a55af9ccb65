//! `apiary renew` (deploy.md § Expiry): the guarded write of a new expiry as a machine.

mod machine;

pub use machine::{RenewError, RenewMachine, RenewSpec, RenewStep, Renewed};
