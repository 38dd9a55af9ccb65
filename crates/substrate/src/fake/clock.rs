//! The fake substrate's clocks as the `Substrate` trait sees them: [`ServerClock`] (what
//! `list_pods` reports as the apiserver's `Date`) and [`to_chrono`]. Pure conversions, test-only;
//! never reads a real clock.

use chrono::{DateTime, Utc};
use k8s_openapi::jiff::Timestamp;

/// What `list_pods` reports as the apiserver's clock (`server_now`, the `Date` header).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ServerClock {
    /// No `Date` header: `server_now` is `None` (the default; GC skips the orphan sweep).
    #[default]
    None,
    /// The model clock — the clock `creationTimestamp`s come from.
    Model,
    /// The model clock shifted by this many seconds (a skewed server clock).
    ModelOffset(i64),
    /// A fixed instant.
    Fixed(DateTime<Utc>),
}

/// Convert a model timestamp to the `chrono` type the `Substrate` trait uses.
pub fn to_chrono(at: Timestamp) -> DateTime<Utc> {
    let nanos = u32::try_from(at.subsec_nanosecond()).unwrap_or(0);
    DateTime::from_timestamp(at.as_second(), nanos).unwrap_or_default()
}
