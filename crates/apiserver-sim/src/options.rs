//! How a simulator runs: its time scale, start time, clock tick, bookmark interval and fault
//! seed.
//!
//! Layer: plain configuration values. It performs no I/O, starts nothing and holds no state
//! beyond the options themselves.

use std::time::Duration;

use jiff::Timestamp;

/// How the simulator runs.
#[derive(Debug, Clone)]
pub struct SimOptions {
    /// Model seconds per real second: 1000 makes a 60 s grace period pass in 60 ms. Default 1.
    pub time_scale: f64,
    /// The model time when the simulator starts; `None` (the default) means the real time now.
    pub start_time: Option<Timestamp>,
    /// Real interval at which the background task advances the model clock (default 5 ms). The
    /// clock is also advanced before every request.
    pub tick: Duration,
    /// Real interval between BOOKMARK events on watches that allow them (default 1 s).
    pub bookmark_interval: Duration,
    /// Seed of the fault-injection random generator (default 0).
    pub fault_seed: u64,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            time_scale: 1.0,
            start_time: None,
            tick: Duration::from_millis(5),
            bookmark_interval: Duration::from_secs(1),
            fault_seed: 0,
        }
    }
}

impl SimOptions {
    /// Sets [`SimOptions::time_scale`].
    #[must_use]
    pub fn with_time_scale(mut self, scale: f64) -> Self {
        self.time_scale = scale;
        self
    }

    /// Sets [`SimOptions::start_time`].
    #[must_use]
    pub fn with_start_time(mut self, start: Timestamp) -> Self {
        self.start_time = Some(start);
        self
    }

    /// Sets [`SimOptions::fault_seed`].
    #[must_use]
    pub fn with_fault_seed(mut self, seed: u64) -> Self {
        self.fault_seed = seed;
        self
    }

    /// Sets [`SimOptions::tick`].
    #[must_use]
    pub fn with_tick(mut self, tick: Duration) -> Self {
        self.tick = tick;
        self
    }

    /// Sets [`SimOptions::bookmark_interval`].
    #[must_use]
    pub fn with_bookmark_interval(mut self, interval: Duration) -> Self {
        self.bookmark_interval = interval;
        self
    }
}
