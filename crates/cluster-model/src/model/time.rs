//! Time arithmetic on the model clock: the epoch a default model starts at and saturating
//! addition of a std duration to a timestamp.
//!
//! Layer: part of the pure model. It never reads a clock (the model's clock is a value the
//! caller moves) and knows nothing about objects.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

/// The clock reading a default model starts at: 2026-08-02T04:00:00Z.
pub const DEFAULT_EPOCH_SECONDS: i64 = 1_785_643_200;

/// Add a std duration to a timestamp, saturating at the end of time.
pub fn add(at: Timestamp, by: Duration) -> Timestamp {
    SignedDuration::try_from(by)
        .ok()
        .and_then(|d| at.checked_add(d).ok())
        .unwrap_or(Timestamp::MAX)
}
