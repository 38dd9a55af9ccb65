//! Test builders shared by this crate's unit tests: plain facts for an own pod of one agent, in
//! every startup state, and the runner of the machines' scripts ([`script`]). Test-only; builds
//! values and drives machines, decides nothing.

use crate::binding::Owner;
use crate::facts::{
    ConditionFacts, ContainerState, ObjectMarks, ObservedPod, ObservedSecret, PodFacts,
};
use crate::verify::{SettledPod, verify_pod};

/// The agent id of the agent under test (`Research Bot #1`).
pub const AGENT_ID: &str = "72bea12366a35432ab394024ae44c214b8cee51a8e1c04be8797a1dc17805c98";
/// Another agent's id.
pub const OTHER_AGENT_ID: &str = "f9b32d5e68dde69e024b9bb5268f0b7a00000000000000000000000000000000";
/// The pod name of the agent under test.
pub const POD: &str = "apiary-research-bot-1-72bea12366a3";
/// The desired create intent.
pub const INTENT: &str = "26b2e7d49baf628b5f55de9996ac144c27fac0e1c85766ed2f3db5e136202c43";
/// A different create intent.
pub const OTHER_INTENT: &str = "0e5e7c53ccd0a7e5b5ecf45d93ab7f7d8465058032e1dfbaeaa900d1a3ccf0d3";
/// The image of the agent under test.
pub const IMAGE: &str = "registry.example.com/team/agent@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

/// Own marks for `name` with `uid`/`rv` and the desired intent.
pub fn marks(name: &str, uid: &str, rv: &str) -> ObjectMarks {
    ObjectMarks {
        name: Some(name.to_owned()),
        uid: Some(uid.to_owned()),
        resource_version: Some(rv.to_owned()),
        managed_by: Some("apiary".to_owned()),
        binding_version: Some("1".to_owned()),
        agent_id: Some(AGENT_ID.to_owned()),
        create_intent: Some(INTENT.to_owned()),
        deletion_marked: false,
        created_at_unix: Some(1_000),
        expires_at: None,
        intent_settings: None,
    }
}

/// `agent` running.
pub fn running() -> Option<ContainerState> {
    Some(ContainerState::Running)
}

/// `agent` terminated.
pub fn terminated(code: i32, reason: Option<&str>) -> Option<ContainerState> {
    Some(ContainerState::Terminated {
        exit_code: code,
        reason: reason.map(str::to_owned),
    })
}

/// `agent` waiting.
pub fn waiting(reason: Option<&str>, message: Option<&str>) -> Option<ContainerState> {
    Some(ContainerState::Waiting {
        reason: reason.map(str::to_owned),
        message: message.map(str::to_owned),
    })
}

/// Pod facts with the given agent state, phase `Running` and this pod's Secret reference.
pub fn facts(agent: Option<ContainerState>) -> PodFacts {
    PodFacts {
        phase: Some("Running".to_owned()),
        agent,
        conditions: Vec::new(),
        env_from_secret: Some(format!("{POD}-0000abcd")),
        image: Some(IMAGE.to_owned()),
        workspace_claim: None,
    }
}

/// An own pod (uid `u1`, rv `100`) in the given agent state.
pub fn own_pod(agent: Option<ContainerState>) -> ObservedPod {
    ObservedPod {
        marks: marks(POD, "u1", "100"),
        facts: facts(agent),
    }
}

/// An own pod settled, a pending Secret check answered: the pod's own Secret exists, a
/// referenced one the kubelet's message names does not (test-only).
pub fn settled(pod: &ObservedPod) -> SettledPod {
    let referenced_missing = crate::action::missing_reference(&pod.facts)
        .is_some_and(|named| pod.facts.env_from_secret.as_deref() != Some(named.as_str()));
    verify_pod(pod, &Owner::apiary(AGENT_ID))
        .expect("test pod verifies")
        .settle(Some(!referenced_missing))
        .expect("settles with an answer")
}

/// An own Secret named `name`, uid `s-<name>`, created at `created`.
pub fn own_secret(name: &str, created: Option<i64>) -> ObservedSecret {
    ObservedSecret {
        marks: ObjectMarks {
            name: Some(name.to_owned()),
            uid: Some(format!("s-{name}")),
            resource_version: Some("1".to_owned()),
            managed_by: Some("apiary".to_owned()),
            binding_version: Some("1".to_owned()),
            agent_id: Some(AGENT_ID.to_owned()),
            create_intent: None,
            deletion_marked: false,
            created_at_unix: created,
            expires_at: None,
            intent_settings: None,
        },
    }
}

/// A `False` pod condition.
pub fn false_condition(kind: &str, reason: &str, message: &str) -> ConditionFacts {
    ConditionFacts {
        kind: kind.to_owned(),
        status: "False".to_owned(),
        reason: Some(reason.to_owned()),
        message: Some(message.to_owned()),
    }
}

/// Scripts: a machine's step sequence as data, answers in and requests out
/// (`crate::request::Machine`). A [`Beat`] feeds one answer, optionally after moving the fake
/// elapsed clock, and checks the step it returns; [`play`] runs the beats in order and says
/// which beat failed. Test-only; drives a machine, decides nothing.
pub mod script {
    use std::fmt::Debug;
    use std::time::Duration;

    use crate::request::{Answer, Machine, Request, Step};

    /// What the machine returned, for a check.
    type Seen<M> = Step<<M as Machine>::Output>;
    /// A check of one returned step of a machine with output `O`: `Err` says what was wrong.
    pub type Check<O> = Box<dyn FnOnce(&Step<O>) -> Result<(), String>>;
    /// An answer the runner gives itself to a request the script does not mention.
    type Auto = Box<dyn Fn(&Request) -> Option<Answer>>;

    /// How the fake elapsed clock moves before a beat's answer.
    #[derive(Clone, Copy, Debug)]
    pub enum Clock {
        /// It stays.
        Keep,
        /// It moves on by this much.
        By(Duration),
        /// It reads this.
        At(Duration),
        /// It moves on by the previous step's `Wait { max }` or `Sleep`: the wait ran out.
        WaitOut,
    }

    /// Something a line of data cannot say, run on the play in progress.
    type Custom<M> = Box<dyn FnOnce(&mut Play<M>)>;

    /// One line of a script.
    #[allow(
        clippy::large_enum_variant,
        reason = "a script is a short list; boxing answers would only burden every line"
    )]
    pub enum Beat<M: Machine> {
        /// Move the clock, feed the answer, check the step.
        Feed(Clock, Answer, Check<M::Output>),
        /// Anything a line of data cannot say (a loop, a look at the machine).
        Run(Custom<M>),
    }

    impl<M: Machine> Beat<M> {
        /// The same beat with the clock moved on by `by` first.
        pub fn after(self, by: Duration) -> Beat<M> {
            self.clock(Clock::By(by))
        }

        /// The same beat with the clock reading `at` first.
        pub fn at(self, at: Duration) -> Beat<M> {
            self.clock(Clock::At(at))
        }

        fn clock(self, clock: Clock) -> Beat<M> {
            match self {
                Beat::Feed(_, answer, check) => Beat::Feed(clock, answer, check),
                Beat::Run(_) => panic!("only a fed beat moves the clock"),
            }
        }
    }

    /// Feed `answer` and check the step with `check`.
    pub fn feed<M: Machine>(answer: Answer, check: Check<M::Output>) -> Beat<M> {
        Beat::Feed(Clock::Keep, answer, check)
    }

    /// Answer the previous `Wait`/`Sleep` by letting it run out, and check the step.
    pub fn wait_out<M: Machine>(check: Check<M::Output>) -> Beat<M> {
        Beat::Feed(Clock::WaitOut, Answer::Waited, check)
    }

    /// Run `f` on the play in progress.
    pub fn run<M: Machine>(f: impl FnOnce(&mut Play<M>) + 'static) -> Beat<M> {
        Beat::Run(Box::new(f))
    }

    /// Check the last step again, feeding nothing (after a [`run`]).
    pub fn last_is<M: Machine + 'static>(check: Check<M::Output>) -> Beat<M>
    where
        M::Output: Debug,
    {
        run(move |play: &mut Play<M>| {
            if let Err(why) = check(play.last()) {
                panic!("at {:?}: {why}", play.now);
            }
        })
    }

    /// Exactly this step.
    pub fn is<O: PartialEq + Debug + 'static>(expected: Step<O>) -> Check<O> {
        Box::new(move |seen| {
            if *seen == expected {
                Ok(())
            } else {
                Err(format!("expected {expected:?}\n     got {seen:?}"))
            }
        })
    }

    /// Exactly this request.
    pub fn ask<O: PartialEq + Debug + 'static>(request: Request) -> Check<O> {
        is(Step::Request(request))
    }

    /// A request `test` accepts (`what` names it in the failure).
    pub fn asks<O: Debug>(
        what: &'static str,
        test: impl FnOnce(&Request) -> bool + 'static,
    ) -> Check<O> {
        that(
            what,
            move |seen| matches!(seen, Step::Request(r) if test(r)),
        )
    }

    /// Exactly this end.
    pub fn done<O: PartialEq + Debug + 'static>(output: O) -> Check<O> {
        is(Step::Done(output))
    }

    /// An end `test` accepts (`what` names it in the failure).
    pub fn ends<O: Debug>(what: &'static str, test: impl FnOnce(&O) -> bool + 'static) -> Check<O> {
        that(what, move |seen| matches!(seen, Step::Done(o) if test(o)))
    }

    /// A step `test` accepts (`what` names it in the failure).
    pub fn that<O: Debug>(
        what: &'static str,
        test: impl FnOnce(&Step<O>) -> bool + 'static,
    ) -> Check<O> {
        Box::new(move |seen| {
            if test(seen) {
                Ok(())
            } else {
                Err(format!("expected {what}\n     got {seen:?}"))
            }
        })
    }

    /// Every one of `checks`.
    pub fn all<O: 'static>(checks: Vec<Check<O>>) -> Check<O> {
        Box::new(move |seen| checks.into_iter().try_for_each(|check| check(seen)))
    }

    /// Any step (its value is looked at later, or not at all).
    pub fn any<O>() -> Check<O> {
        Box::new(|_| Ok(()))
    }

    /// A machine being driven: its fake clock and the last step it returned.
    pub struct Play<M: Machine> {
        /// The machine.
        pub machine: M,
        /// The fake elapsed clock.
        pub now: Duration,
        last: Option<Seen<M>>,
        auto: Option<Auto>,
    }

    /// Run `beats` on `machine` from a clock at zero.
    #[track_caller]
    pub fn play<M: Machine>(machine: M, beats: impl IntoIterator<Item = Beat<M>>) -> Play<M>
    where
        M::Output: Debug,
    {
        Play::new(machine).then(beats)
    }

    impl<M: Machine> Play<M>
    where
        M::Output: Debug,
    {
        /// `machine` at zero, nothing fed yet.
        pub fn new(machine: M) -> Play<M> {
            Play {
                machine,
                now: Duration::ZERO,
                last: None,
                auto: None,
            }
        }

        /// The same play with the clock reading `now` (the deadline counts from the first
        /// step, not from zero).
        pub fn at(mut self, now: Duration) -> Self {
            self.now = now;
            self
        }

        /// Let the runner answer the requests `auto` answers itself, unseen by the script.
        pub fn answering(mut self, auto: impl Fn(&Request) -> Option<Answer> + 'static) -> Self {
            self.auto = Some(Box::new(auto));
            self
        }

        /// Run `beats` in order; a failed check panics naming the beat (counted from 1).
        #[track_caller]
        pub fn then(mut self, beats: impl IntoIterator<Item = Beat<M>>) -> Self {
            for (n, beat) in beats.into_iter().enumerate() {
                match beat {
                    Beat::Feed(clock, answer, check) => {
                        self.tick(clock);
                        let seen = self.feed(answer);
                        if let Err(why) = check(seen) {
                            panic!("beat {} at {:?}: {why}", n + 1, self.now);
                        }
                    }
                    Beat::Run(f) => f(&mut self),
                }
            }
            self
        }

        /// Move the clock.
        pub fn tick(&mut self, clock: Clock) {
            match clock {
                Clock::Keep => {}
                Clock::By(by) => self.now += by,
                Clock::At(at) => self.now = at,
                Clock::WaitOut => match self.last() {
                    Step::Request(Request::Wait { max, .. } | Request::Sleep(max)) => {
                        self.now += *max;
                    }
                    other => panic!("expected a wait to run out, got {other:?}"),
                },
            }
        }

        /// Feed one answer at the current clock (answering what the runner answers itself).
        pub fn feed(&mut self, answer: Answer) -> &Seen<M> {
            let mut step = self.machine.step(self.now, answer);
            while let Some(answer) = match (&step, &self.auto) {
                (Step::Request(request), Some(auto)) => auto(request),
                _ => None,
            } {
                step = self.machine.step(self.now, answer);
            }
            self.last.insert(step)
        }

        /// Keep answering: each `Wait` runs out, each request `reply` answers (given the clock)
        /// is answered; stop at the first other step. Returns the `max` of each wait run out.
        pub fn keep_answering(
            &mut self,
            reply: impl Fn(Duration, &Request) -> Option<Answer>,
        ) -> Vec<Duration> {
            let mut waits = Vec::new();
            for _ in 0..10_000 {
                let answer = match self.last() {
                    Step::Request(Request::Wait { max, .. }) => {
                        waits.push(*max);
                        self.now += *max;
                        Answer::Waited
                    }
                    Step::Request(request) => match reply(self.now, request) {
                        Some(answer) => answer,
                        None => return waits,
                    },
                    Step::Done(_) => return waits,
                };
                self.feed(answer);
            }
            panic!("the machine kept asking without end");
        }

        /// The last step returned.
        pub fn last(&self) -> &Seen<M> {
            self.last.as_ref().expect("a step was fed")
        }
    }
}
