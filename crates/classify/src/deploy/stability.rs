//! `deploy --min-running` (deploy.md § Staying up): a started pod counts as deployed only once its
//! container `agent` has been running continuously for the window.
//!
//! Pure; time is the machine's `now`. Continuity is the same pod (uid) read as started at every
//! observation since the window began: apiary's pods run with `restartPolicy: Never`, so the
//! container cannot restart in place (its ID and restart count cannot change while the pod stays
//! started), and a crash ends the start for good: the read then shows `Terminated` and the machine
//! reports it as every crash is reported (E2 with the exit code for this call's own pod, E7 for a
//! race winner). The watch wakes the machine at every change of the pod, so no crash between two
//! reads goes unseen.

use std::time::Duration;

/// Where the current run of started reads began.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Stability {
    since: Option<(String, Duration)>,
}

impl Stability {
    /// A read at `now` showed pod `uid` started: `None` when it has been started for `window`,
    /// else how much of the window is left (the run restarts when the uid differs).
    pub(crate) fn started(
        &mut self,
        uid: &str,
        now: Duration,
        window: Duration,
    ) -> Option<Duration> {
        let since = match &self.since {
            Some((seen, since)) if seen == uid => *since,
            _ => {
                self.since = Some((uid.to_owned(), now));
                now
            }
        };
        let held = now.saturating_sub(since);
        (held < window).then(|| window - held)
    }

    /// A read showed no started pod: the next start begins a new window.
    pub(crate) fn interrupted(&mut self) {
        self.since = None;
    }
}

#[cfg(test)]
mod tests {
    //! The window's start, its end and its restart.

    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    /// A zero window is met at once (today's behaviour).
    #[test]
    fn a_zero_window_is_met_at_once() {
        assert_eq!(
            Stability::default().started("u1", S(5), Duration::ZERO),
            None
        );
    }

    /// The window counts from the first started read of the uid and ends exactly at its length.
    #[test]
    fn the_window_counts_from_the_first_started_read() {
        let mut s = Stability::default();
        assert_eq!(s.started("u1", S(10), S(3)), Some(S(3)));
        assert_eq!(s.started("u1", S(12), S(3)), Some(S(1)));
        assert_eq!(s.started("u1", S(13), S(3)), None);
        assert_eq!(s.started("u1", S(20), S(3)), None);
    }

    /// Another uid or an interruption starts the window again.
    #[test]
    fn another_pod_or_an_interruption_restarts_the_window() {
        let mut s = Stability::default();
        assert_eq!(s.started("u1", S(10), S(3)), Some(S(3)));
        assert_eq!(s.started("u2", S(12), S(3)), Some(S(3)));
        assert_eq!(s.started("u2", S(14), S(3)), Some(S(1)));
        s.interrupted();
        assert_eq!(s.started("u2", S(15), S(3)), Some(S(3)));
    }
}
