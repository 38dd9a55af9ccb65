//! The simulator's scaled real clock: model time = origin + real elapsed time × scale, and the
//! HTTP `Date` header spelling of it.
//!
//! Layer: the one place the simulator reads the real clock (`Instant::now`). The model itself never
//! reads a clock; the simulator reads this one and passes the result in. With a scale of 1000 a
//! 60 s grace period passes in 60 ms of real time.

use std::time::{Duration, Instant};

use jiff::{SignedDuration, Timestamp};

/// A real clock sped up by a constant factor, starting at a chosen model instant.
#[derive(Debug, Clone, Copy)]
pub struct ScaledClock {
    origin_real: Instant,
    origin_model: Timestamp,
    scale: f64,
}

impl ScaledClock {
    /// A clock that reads `origin_model` now and advances `scale` model seconds per real second.
    ///
    /// A scale that is not finite and positive is treated as 1.
    pub fn new(origin_model: Timestamp, scale: f64) -> ScaledClock {
        let scale = if scale.is_finite() && scale > 0.0 {
            scale
        } else {
            1.0
        };
        ScaledClock {
            origin_real: Instant::now(),
            origin_model,
            scale,
        }
    }

    /// The scale factor (model seconds per real second).
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// The model time now.
    pub fn now(&self) -> Timestamp {
        self.model_at(self.origin_real.elapsed())
    }

    /// The model time after `real_elapsed` of real time since the origin.
    pub fn model_at(&self, real_elapsed: Duration) -> Timestamp {
        let model = SignedDuration::try_from_secs_f64(real_elapsed.as_secs_f64() * self.scale)
            .unwrap_or(SignedDuration::MAX);
        self.origin_model
            .checked_add(model)
            .unwrap_or(Timestamp::MAX)
    }

    /// How long, in real time, `model` of model time takes.
    pub fn real_duration(&self, model: Duration) -> Duration {
        Duration::try_from_secs_f64(model.as_secs_f64() / self.scale).unwrap_or(Duration::MAX)
    }
}

/// Formats an instant as an HTTP-date (IMF-fixdate), e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
pub fn http_date(ts: Timestamp) -> String {
    let ts = Timestamp::from_second(ts.as_second()).unwrap_or(ts);
    ts.strftime("%a, %d %b %Y %H:%M:%S GMT").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Date header is IMF-fixdate: what deploy.md § Cluster interface and requests parses as
    /// the server clock.
    #[test]
    fn http_date_is_imf_fixdate() {
        let ts: Timestamp = "1994-11-06T08:49:37.9Z".parse().expect("timestamp");
        assert_eq!(http_date(ts), "Sun, 06 Nov 1994 08:49:37 GMT");
        let ts: Timestamp = "2026-01-05T00:00:00Z".parse().expect("timestamp");
        assert_eq!(http_date(ts), "Mon, 05 Jan 2026 00:00:00 GMT");
    }

    /// A scale of 1000 turns 60 ms of real time into 60 s of model time, and back.
    #[test]
    fn scaling_maps_real_to_model_time() {
        let origin: Timestamp = "2026-01-01T00:00:00Z".parse().expect("timestamp");
        let c = ScaledClock::new(origin, 1000.0);
        assert_eq!(
            c.model_at(Duration::from_millis(60)),
            origin + SignedDuration::from_secs(60)
        );
        assert_eq!(
            c.real_duration(Duration::from_secs(60)),
            Duration::from_millis(60)
        );
        assert!(c.now() >= origin);
    }

    /// Nonsense scales fall back to real time instead of freezing or reversing the clock.
    #[test]
    fn invalid_scale_means_real_time() {
        let origin = Timestamp::UNIX_EPOCH;
        for bad in [0.0, -3.0, f64::NAN, f64::INFINITY] {
            let c = ScaledClock::new(origin, bad);
            assert_eq!(c.scale(), 1.0);
            assert_eq!(
                c.model_at(Duration::from_secs(2)),
                origin + SignedDuration::from_secs(2)
            );
        }
    }
}
