//! How every operation's machine progresses, written once for the four of them (deploy, undeploy,
//! the GC pass, status): one step takes the phase out, runs one transition, and keeps a finish so
//! that every later step repeats it; and the machines that watch a pod (deploy, undeploy) turn
//! each read of it into progress (deploy.md § Loop: one line per change of observed state) and
//! remember its resourceVersion for the next wait.
//!
//! Pure: no I/O, no clock. It decides nothing about any operation; each machine's transitions do.

use crate::binding::Owner;
use crate::facts::ObservedPod;
use crate::status::{Progress, ProgressLog};

/// A sans-IO machine as the shared [`step`] drives it.
pub(crate) trait Machine {
    /// What the machine waits for; its default is the phase before the first step (and the
    /// placeholder held while a transition runs).
    type Phase: Default;
    /// What one step is fed: the answer to the previous effect (with `now` where time matters).
    type Input;
    /// What one step returns.
    type Effect;

    /// The phase the machine is in.
    fn phase_mut(&mut self) -> &mut Self::Phase;

    /// The transition from `phase` on `input`; it sets the next phase unless it finishes.
    fn apply(&mut self, phase: Self::Phase, input: Self::Input) -> Self::Effect;

    /// When `effect` ends the operation, the phase that repeats it on every later step.
    fn finished(effect: &Self::Effect) -> Option<Self::Phase>;
}

/// One step of `machine`: take its phase, apply `input`, and keep a finish.
pub(crate) fn step<M: Machine>(machine: &mut M, input: M::Input) -> M::Effect {
    let phase = std::mem::take(machine.phase_mut());
    let effect = machine.apply(phase, input);
    if let Some(done) = M::finished(&effect) {
        *machine.phase_mut() = done;
    }
    effect
}

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

    use super::*;
    use crate::status::StatusState;
    use crate::testkit::{AGENT_ID, own_pod, running};

    /// A machine that counts steps and finishes on input `0`.
    #[derive(Default)]
    struct Counter {
        phase: u32,
        applied: Vec<(u32, u32)>,
    }

    impl Machine for Counter {
        type Phase = u32;
        type Input = u32;
        type Effect = Result<u32, u32>;

        fn phase_mut(&mut self) -> &mut u32 {
            &mut self.phase
        }

        fn apply(&mut self, phase: u32, input: u32) -> Result<u32, u32> {
            self.applied.push((phase, input));
            match (phase, input) {
                (99, _) => Err(99),
                (_, 0) => Err(phase),
                _ => {
                    self.phase = phase + input;
                    Ok(self.phase)
                }
            }
        }

        fn finished(effect: &Result<u32, u32>) -> Option<u32> {
            effect.err().map(|_| 99)
        }
    }

    /// Each step sees the phase the previous one set; a finish is kept and repeated, and the
    /// transition only ever sees the finished phase after it (never the placeholder).
    #[test]
    fn a_step_takes_the_phase_and_keeps_a_finish() {
        let mut m = Counter::default();
        assert_eq!(step(&mut m, 2), Ok(2));
        assert_eq!(step(&mut m, 3), Ok(5));
        assert_eq!(step(&mut m, 0), Err(5));
        assert_eq!(m.phase, 99);
        assert_eq!(step(&mut m, 7), Err(99));
        assert_eq!(m.applied, vec![(0, 2), (2, 3), (5, 0), (99, 7)]);
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
