//! What every operation's machine shares about time and waiting (deploy.md § Delete and waiting
//! for disappearance, § Latest condition, deadline, zero mutation): the deadline measured from
//! the first step, the poll wait that never runs past it, and the comparison of a re-read with
//! the uid a delete is waiting for.
//!
//! Pure. Time is an input: `now` is any monotonic reading the shell takes (the same clock for
//! every step of one operation); nothing here reads a clock. Checks are not pre-emptive, so an
//! operation overruns its deadline by at most the one request in flight when it passes.

use std::time::Duration;

use crate::facts::ObservedPod;

/// One operation's deadline and poll interval, anchored at its first step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Deadline {
    limit: Duration,
    poll: Duration,
    origin: Option<Duration>,
}

impl Deadline {
    pub(crate) fn new(limit: Duration, poll: Duration) -> Deadline {
        Deadline {
            limit,
            poll,
            origin: None,
        }
    }

    /// Anchor the deadline at the first reading; later calls keep the first anchor.
    pub(crate) fn anchor(&mut self, now: Duration) {
        self.origin.get_or_insert(now);
    }

    fn elapsed(&self, now: Duration) -> Duration {
        now.saturating_sub(self.origin.unwrap_or(now))
    }

    /// Whether the deadline has passed at `now`.
    pub(crate) fn expired(&self, now: Duration) -> bool {
        self.elapsed(now) >= self.limit
    }

    /// One poll interval, never past the deadline; zero when no time is left (the caller then
    /// continues at once and fails on the deadline).
    pub(crate) fn wait_max(&self, now: Duration) -> Duration {
        self.poll.min(self.limit.saturating_sub(self.elapsed(now)))
    }

    /// The deadline itself (for messages).
    pub(crate) fn limit(&self) -> Duration {
        self.limit
    }
}

/// Where the wait for a deleted pod stands after one re-read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Disappearance {
    /// The name is free.
    Gone,
    /// The awaited uid is still there.
    Present,
    /// A different uid holds the name (a concurrent deploy created a new pod).
    Replaced,
}

/// Compare a re-read of the pod name with the awaited uid.
pub(crate) fn disappearance(awaited_uid: &str, reread: Option<&ObservedPod>) -> Disappearance {
    match reread {
        None => Disappearance::Gone,
        Some(pod) if pod.marks.uid.as_deref() == Some(awaited_uid) => Disappearance::Present,
        Some(_) => Disappearance::Replaced,
    }
}

#[cfg(test)]
mod tests {
    //! The deadline's anchor and bounds, and the disappearance comparison.

    use super::*;
    use crate::testkit::{marks, own_pod, running};

    const S: fn(u64) -> Duration = Duration::from_secs;

    /// The deadline counts from the first reading, not from zero, and expires exactly at it.
    #[test]
    fn deadline_counts_from_its_anchor() {
        let mut d = Deadline::new(S(10), S(2));
        assert!(!d.expired(S(1_000)), "unanchored: nothing elapsed");
        d.anchor(S(100));
        d.anchor(S(105));
        assert!(!d.expired(S(109)));
        assert!(d.expired(S(110)));
        assert_eq!(d.limit(), S(10));
        assert_eq!(d.wait_max(S(100)), S(2));
        assert_eq!(d.wait_max(S(109)), S(1));
        assert_eq!(d.wait_max(S(120)), Duration::ZERO);
        assert_eq!(
            d.wait_max(S(50)),
            S(2),
            "a reading before the anchor is no time elapsed"
        );
    }

    /// Gone, present under the awaited uid, or replaced by another uid.
    #[test]
    fn disappearance_compares_the_uid() {
        let mut pod = own_pod(running());
        pod.marks = marks(&pod.marks.name.clone().unwrap_or_default(), "u1", "5");
        assert_eq!(disappearance("u1", None), Disappearance::Gone);
        assert_eq!(disappearance("u1", Some(&pod)), Disappearance::Present);
        assert_eq!(disappearance("u2", Some(&pod)), Disappearance::Replaced);
    }
}
