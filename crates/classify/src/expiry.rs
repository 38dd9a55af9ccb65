//! Expiry without a controller (deploy.md § Expiry): the `apiary.dev/expires-at` annotation, the
//! `--ttl` duration syntax, the instant's wire form, and whether a pod has expired by the
//! apiserver's clock. The two operations built on them have their own modules: the collection of
//! an expired agent (`crate::expire`) and the renew write (`crate::renew`).
//!
//! Pure. Every instant here is Unix seconds **on the apiserver's clock**: the `Date` header of a
//! response, or a server-assigned timestamp. Nothing here reads a clock; the shell passes the
//! server's time in, never the local one (a fast laptop clock must not expire a live agent). An
//! annotation that does not parse is no expiry at all: ambiguity never makes a pod collectable.

mod rules;

pub use rules::{
    ANNOTATION_EXPIRES_AT, MAX_TTL_SECS, MIN_TTL_SECS, TtlError, expires_at, expiry_of,
    format_instant, is_expired, parse_instant, parse_ttl, render_time_left, seconds_left,
};

#[cfg(test)]
mod tests;
