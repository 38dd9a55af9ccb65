//! How every operation's machine progresses, written once for the six of them (deploy, undeploy,
//! the GC pass, status, the expiry collection, renew): one step takes the phase out, runs one transition, and keeps a finish so
//! that every later step repeats it; and the machines that watch a pod (deploy, undeploy) turn
//! each read of it into progress (deploy.md § Loop: one line per change of observed state) and
//! remember its resourceVersion for the next wait.
//!
//! Pure: no I/O, no clock. It decides nothing about any operation; each machine's transitions do.

use crate::binding::Owner;
use crate::facts::ObservedPod;
use crate::status::{Progress, ProgressLog};

/// Implements [`crate::request::Machine`] for one of the crate's machines, written once for all
/// six: a step anchors the deadline at the first `now` (`deadline: field`), takes the phase out,
/// runs the machine's `transition(phase, now, answer)`, and keeps a finish in `Phase::Done`, so
/// that every later step repeats it; `progress: field` names the [`PodWatch`] whose changes the
/// machine reports. The machine's module must have `Phase` (with `Default` and `Done(output)`),
/// `Answer`, `Step` and `Duration` in scope.
macro_rules! machine {
    ($machine:ty => $output:ty $(, deadline: $deadline:ident)? $(, progress: $watch:ident)?) => {
        impl crate::request::Machine for $machine {
            type Output = $output;

            fn step(&mut self, now: Duration, answer: Answer) -> Step<$output> {
                $(self.$deadline.anchor(now);)?
                let phase = std::mem::take(&mut self.phase);
                let step = self.transition(phase, now, answer);
                if let Step::Done(output) = &step {
                    self.phase = Phase::Done(output.clone());
                }
                step
            }

            $(
                fn poll_progress(&mut self) -> Option<crate::status::Progress> {
                    self.$watch.poll()
                }
            )?
        }
    };
}
pub(crate) use machine;

/// The reads of the watched pod name in one operation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct PodWatch {
    progress: ProgressLog,
    resource_version: Option<String>,
}

impl PodWatch {
    /// Record one read (`None` = confirmed absent): progress when it changed, and its
    /// resourceVersion for the next watch.
    pub(crate) fn observe(&mut self, pod: Option<&ObservedPod>, owner: &Owner) {
        self.progress.observe(pod, owner);
        self.resource_version = pod.and_then(|p| p.marks.resource_version.clone());
    }

    /// Forget the resourceVersion: the watched name now holds an object not yet read.
    pub(crate) fn forget_version(&mut self) {
        self.resource_version = None;
    }

    /// The resourceVersion the next wait watches from, when the last read saw one.
    pub(crate) fn resource_version(&self) -> Option<String> {
        self.resource_version.clone()
    }

    /// The change of observed state not yet reported, if any.
    pub(crate) fn poll(&mut self) -> Option<Progress> {
        self.progress.poll()
    }
}

#[cfg(test)]
mod tests {
    //! The shared step discipline and the watch of the pod name.

    use std::time::Duration;

    use super::*;
    use crate::request::{Answer, Machine as _, Request, Step};
    use crate::status::StatusState;
    use crate::testkit::{AGENT_ID, own_pod, running};

    /// A machine that counts waits and finishes on any other answer.
    #[derive(Default)]
    struct Counter {
        phase: Phase,
        applied: Vec<(Phase, &'static str)>,
    }

    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    enum Phase {
        #[default]
        Start,
        Waited(u32),
        Done(u32),
    }

    impl Counter {
        fn transition(&mut self, phase: Phase, _now: Duration, answer: Answer) -> Step<u32> {
            self.applied.push((phase, answer.name()));
            match (phase, answer) {
                (Phase::Done(n), _) => Step::Done(n),
                (Phase::Start, Answer::Waited) => self.wait(1),
                (Phase::Waited(n), Answer::Waited) => self.wait(n + 1),
                (Phase::Waited(n), _) => Step::Done(n),
                (Phase::Start, _) => Step::Done(0),
            }
        }

        fn wait(&mut self, n: u32) -> Step<u32> {
            self.phase = Phase::Waited(n);
            Step::Request(Request::Sleep(Duration::from_secs(1)))
        }
    }

    machine!(Counter => u32);

    /// Each step sees the phase the previous one set; a finish is kept and repeated, and the
    /// transition only ever sees the finished phase after it (never the placeholder).
    #[test]
    fn a_step_takes_the_phase_and_keeps_a_finish() {
        let mut m = Counter::default();
        let now = Duration::ZERO;
        let sleep = Step::Request(Request::Sleep(Duration::from_secs(1)));
        assert_eq!(m.step(now, Answer::Waited), sleep);
        assert_eq!(m.step(now, Answer::Waited), sleep);
        assert_eq!(m.step(now, Answer::Start), Step::Done(2));
        assert_eq!(m.phase, Phase::Done(2));
        assert_eq!(m.step(now, Answer::Waited), Step::Done(2));
        assert_eq!(
            m.applied,
            vec![
                (Phase::Start, "Waited"),
                (Phase::Waited(1), "Waited"),
                (Phase::Waited(2), "Start"),
                (Phase::Done(2), "Waited"),
            ]
        );
    }

    /// A read reports progress once per change and remembers its resourceVersion; forgetting
    /// clears only the version.
    #[test]
    fn the_watch_reports_changes_once_and_keeps_the_version() {
        let mut w = PodWatch::default();
        assert_eq!(w.poll(), None);
        let pod = own_pod(running());
        w.observe(Some(&pod), &crate::binding::Owner::apiary(AGENT_ID));
        assert_eq!(w.resource_version().as_deref(), Some("100"));
        assert_eq!(w.poll().map(|p| p.state), Some(StatusState::Started));
        w.observe(Some(&pod), &crate::binding::Owner::apiary(AGENT_ID));
        assert_eq!(w.poll(), None, "an unchanged read is not reported again");
        w.forget_version();
        assert_eq!(w.resource_version(), None);
        w.observe(None, &crate::binding::Owner::apiary(AGENT_ID));
        assert_eq!(w.resource_version(), None);
        assert_eq!(w.poll().map(|p| p.state), Some(StatusState::Absent));
    }
}
