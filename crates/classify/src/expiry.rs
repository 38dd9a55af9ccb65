//! Expiry without a controller (deploy.md § Expiry): the `apiary.dev/expires-at` annotation, the
//! `--ttl` duration syntax, the instant's wire form, and whether a pod has expired by the
//! apiserver's clock; the renew write as a machine (`renew`), and the collection of an expired
//! agent as another (`collect`).
//!
//! Pure. Every instant here is Unix seconds **on the apiserver's clock**: the `Date` header of a
//! response, or a server-assigned timestamp. Nothing here reads a clock; the shell passes the
//! server's time in, never the local one (a fast laptop clock must not expire a live agent). An
//! annotation that does not parse is no expiry at all: ambiguity never makes a pod collectable.

mod collect;
mod renew;
mod rules;

pub use collect::{
    ExpireError, ExpireMachine, ExpireReport, ExpireSpec, ExpireStep, ExpiryDecision,
    decide_expiry, secrets_after_collection,
};
pub use renew::{RenewError, RenewMachine, RenewSpec, RenewStep, Renewed};
pub use rules::{
    ANNOTATION_EXPIRES_AT, MAX_TTL_SECS, MIN_TTL_SECS, TtlError, expires_at, expiry_of,
    format_instant, is_expired, parse_instant, parse_ttl, render_time_left, seconds_left,
};

#[cfg(test)]
mod tests;
