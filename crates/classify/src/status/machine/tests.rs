//! Tests of the status machine (deploy.md § status; S1, S2): the reads it makes and the report.
//! Each test is a script (`crate::testkit::script`): answers in, requests out.

use super::*;
use crate::binding::Owner;
use crate::facts::ObservedPod;
use crate::request::Listing;
use crate::testkit::script::{Beat, Check, Play, ask, done, ends, feed};
use crate::testkit::{
    AGENT_ID, INTENT, OTHER_AGENT_ID, OTHER_INTENT, POD, own_pod, running, waiting,
};
use crate::workspace::{ClaimShape, ClaimStatus};

const SECRET: &str = "apiary-research-bot-1-72bea12366a3-0000abcd";

type StatusOutput = Result<StatusReport, RequestFailure>;

fn spec(desired_intent: Option<&str>) -> StatusSpec {
    StatusSpec {
        pod_name: POD.into(),
        owner: Owner::apiary(AGENT_ID),
        image: None,
        desired_intent: desired_intent.map(str::to_owned),
        compare_env: false,
        desired_settings: None,
        desired_claim: None,
    }
}

/// `beats` on a status of `spec`, the workspace read it asks for last answered with no claim.
#[track_caller]
fn play(spec: StatusSpec, beats: Vec<Beat<StatusMachine>>) {
    Play::new(StatusMachine::new(spec))
        .answering(|r| (*r == Request::ReadWorkspace).then_some(Answer::WorkspaceRead(None)))
        .then(beats);
}

/// `beats` on a status of `spec`, which answer the workspace read themselves.
#[track_caller]
fn play_reading(spec: StatusSpec, beats: Vec<Beat<StatusMachine>>) {
    Play::new(StatusMachine::new(spec)).then(beats);
}

/// Start, and the read of `pod` asking for the check of its own Secret.
fn to_secret_check(pod: ObservedPod) -> Vec<Beat<StatusMachine>> {
    vec![
        feed(Answer::Start, get()),
        feed(Answer::PodRead(Ok(Some(pod))), secret_exists()),
    ]
}

fn secret_exists() -> Check<StatusOutput> {
    ask(Request::SecretExists {
        name: SECRET.into(),
    })
}

/// A report `test` accepts.
fn reports(
    what: &'static str,
    test: impl FnOnce(&StatusReport) -> bool + 'static,
) -> Check<StatusOutput> {
    ends(what, move |o: &StatusOutput| o.as_ref().is_ok_and(test))
}

fn claim() -> ClaimStatus {
    ClaimStatus {
        name: format!("{POD}-workspace"),
        ours: true,
        shape: ClaimShape {
            size: Some("1Gi".into()),
            storage_class: None,
        },
        phase: Some("Bound".into()),
        deleting: false,
    }
}

/// A started pod: one read, one Secret check, the report with the intent compared by the
/// verified pod's own rule.
#[test]
fn s1_s2_started_pod_reads_its_secret_and_compares_intent() {
    for (desired, matches) in [
        (Some(INTENT), Some(true)),
        (Some(OTHER_INTENT), Some(false)),
        (None, None),
    ] {
        let started = reports("started, its Secret present", move |r| {
            r.state == StatusState::Started
                && r.secret
                    == Some(SecretStatus {
                        name: SECRET.into(),
                        exists: true,
                    })
                && r.intent_matches == matches
        });
        let mut beats = to_secret_check(own_pod(running()));
        beats.push(feed(Answer::Exists(Ok(true)), started));
        play(spec(desired), beats);
    }
}

/// Absent and foreign: one read, no Secret, nothing of a foreign pod reported.
#[test]
fn s1_absent_and_foreign_read_nothing_more() {
    let absent = reports("absent", |r| {
        (r.state, &r.secret, r.intent_matches) == (StatusState::Absent, &None, None)
    });
    play(
        spec(Some(INTENT)),
        vec![
            feed(Answer::Start, get()),
            feed(Answer::PodRead(Ok(None)), absent),
        ],
    );
    let mut foreign = own_pod(running());
    foreign.marks.agent_id = Some(OTHER_AGENT_ID.into());
    let nothing = reports("foreign, nothing of it", |r| {
        r.state == StatusState::Foreign
            && (&r.condition, &r.secret, r.intent_matches) == (&None, &None, None)
    });
    play(
        spec(Some(INTENT)),
        vec![
            feed(Answer::Start, get()),
            feed(Answer::PodRead(Ok(Some(foreign))), nothing),
        ],
    );
}

fn get() -> Check<StatusOutput> {
    ask(Request::GetPod {
        name: POD.into(),
        watch_stuck: false,
    })
}

/// A pod pending its Secret check is settled by the one check, which is also the report's
/// Secret: a missing Secret settles as broken.
#[test]
fn a_pending_pod_is_settled_by_one_check() {
    let broken = reports("broken, its Secret missing", |r| {
        r.state == StatusState::Broken && r.secret.as_ref().map(|s| s.exists) == Some(false)
    });
    let mut beats = to_secret_check(own_pod(waiting(Some("CreateContainerConfigError"), None)));
    beats.push(feed(Answer::Exists(Ok(false)), broken));
    play(spec(None), beats);
}

/// Pull-failure text names the configured image, else the pod's own.
#[test]
fn pull_failure_names_the_image() {
    for (configured, expected) in [
        (Some("registry.example.com/x:1"), "registry.example.com/x:1"),
        (None, crate::testkit::IMAGE),
    ] {
        let pulling = own_pod(waiting(Some("ErrImagePull"), Some("manifest unknown")));
        let named = reports("pull failing, naming the image", move |r| {
            r.state == StatusState::PullFailing
                && r.condition.as_deref().is_some_and(|c| c.contains(expected))
        });
        let mut beats = to_secret_check(pulling);
        beats.push(feed(Answer::Exists(Ok(true)), named));
        let spec = StatusSpec {
            image: configured.map(str::to_owned),
            ..spec(None)
        };
        play(spec, beats);
    }
}

/// A failed read fails the report; an unasked answer is an internal error; finish repeats.
#[test]
fn failures_and_unasked_answers() {
    let failure = RequestFailure::api(403, "Forbidden", "no");
    let failed = || done(Err(failure.clone()));
    play(
        spec(None),
        vec![
            feed(Answer::Start, get()),
            feed(Answer::PodRead(Err(failure.clone())), failed()),
            feed(Answer::Start, failed()),
        ],
    );
    let mut beats = to_secret_check(own_pod(running()));
    beats.push(feed(Answer::Exists(Err(failure.clone())), failed()));
    play(spec(None), beats);
    let internal = ends("an internal error", |o: &StatusOutput| {
        o.as_ref().is_err_and(|f| f.message().contains("internal"))
    });
    play(spec(None), vec![feed(Answer::Exists(Ok(true)), internal)]);
}

/// deploy.md § status: with a configuration and the pod's own Secret present, its environment
/// is compared (keys only) and the claim read, in that order; a failed comparison fails the
/// status; without a configuration only the claim is read.
#[test]
fn a_configuration_compares_the_environment_then_the_claim_is_read() {
    let comparing = |compare_env, then: Vec<Beat<StatusMachine>>| {
        let spec = StatusSpec {
            compare_env,
            ..spec(Some(INTENT))
        };
        let mut beats = to_secret_check(own_pod(running()));
        beats.extend(then);
        play_reading(spec, beats);
    };
    let compare = || {
        ask(Request::CompareEnv {
            secret: SECRET.into(),
            log_keys: false,
        })
    };
    let differs = Answer::EnvCompared(Ok(Some(vec!["TOKEN".into()])));
    let both = reports("the keys and the claim", |r| {
        r.env_differs == Some(vec!["TOKEN".to_owned()]) && r.workspace == Some(claim())
    });
    comparing(
        true,
        vec![
            feed(Answer::Exists(Ok(true)), compare()),
            feed(differs, ask(Request::ReadWorkspace)),
            feed(Answer::WorkspaceRead(Some(claim())), both),
        ],
    );
    let failure = RequestFailure::api(500, "InternalError", "boom");
    comparing(
        true,
        vec![
            feed(Answer::Exists(Ok(true)), compare()),
            feed(
                Answer::EnvCompared(Err(failure.clone())),
                done(Err(failure)),
            ),
        ],
    );
    comparing(
        false,
        vec![feed(Answer::Exists(Ok(true)), ask(Request::ReadWorkspace))],
    );
}

/// deploy.md § Naming what differs and § Persistent workspace: with a configuration, a differing
/// intent names the settings whose recorded digests differ (or says none are recorded), a
/// matching one names nothing, and an own claim of another size is reported as a claim
/// difference, never as the pod's intent.
#[test]
fn a_configuration_names_the_differing_settings_and_the_claims_differences() {
    let run = |recorded_intent: &str, recorded: Option<&str>, check: Check<StatusOutput>| {
        let spec = StatusSpec {
            desired_settings: Some("cpu-limit=aa,image=11".into()),
            desired_claim: Some(ClaimShape {
                size: Some("2Gi".into()),
                storage_class: None,
            }),
            ..spec(Some(INTENT))
        };
        let mut pod = own_pod(running());
        pod.marks.create_intent = Some(recorded_intent.to_owned());
        pod.marks.intent_settings = recorded.map(str::to_owned);
        let mut beats = to_secret_check(pod);
        beats.extend([
            feed(Answer::Exists(Ok(true)), ask(Request::ReadWorkspace)),
            feed(Answer::WorkspaceRead(Some(claim())), check),
        ]);
        play_reading(spec, beats);
    };
    let size = ClaimDifference::Size {
        wanted: "2Gi".into(),
        found: Some("1Gi".into()),
    };
    run(
        "other",
        Some("cpu-limit=bb,image=11"),
        reports("cpu-limit and the size differ", move |r| {
            r.intent_matches == Some(false)
                && r.intent_differs == Some(SettingsDiff::Named(vec!["cpu-limit".into()]))
                && r.workspace_differs == Some(vec![size])
        }),
    );
    run(
        "other",
        None,
        reports("unrecorded", |r| {
            r.intent_differs == Some(SettingsDiff::Unrecorded)
        }),
    );
    run(
        INTENT,
        Some("cpu-limit=bb"),
        reports("matching, nothing named", |r| {
            r.intent_matches == Some(true) && r.intent_differs.is_none()
        }),
    );
}

/// deploy.md § Persistent workspace: a claim under the agent's workspace name that apiary did not
/// create is reported as found, but its size is never compared with the configuration's: it is
/// not the agent's workspace to differ.
#[test]
fn a_foreign_claim_is_reported_but_never_compared() {
    let spec = StatusSpec {
        desired_claim: Some(ClaimShape {
            size: Some("2Gi".into()),
            storage_class: None,
        }),
        ..spec(Some(INTENT))
    };
    let foreign = ClaimStatus {
        ours: false,
        ..claim()
    };
    let mut beats = to_secret_check(own_pod(running()));
    beats.extend([
        feed(Answer::Exists(Ok(true)), ask(Request::ReadWorkspace)),
        feed(
            Answer::WorkspaceRead(Some(foreign)),
            reports("found, not compared", |r| {
                r.workspace.as_ref().is_some_and(|c| !c.ours) && r.workspace_differs.is_none()
            }),
        ),
    ]);
    play_reading(spec, beats);
}

/// A running pod of `agent_id` recording the expiry instant [`AT`].
fn expiring(agent_id: &str) -> ObservedPod {
    let mut pod = own_pod(running());
    pod.marks.agent_id = Some(agent_id.into());
    pod.marks.expires_at = Some("2026-01-01T02:00:00Z".into());
    pod
}

const AT: i64 = 1_767_232_800;

/// deploy.md § Expiry: a verified pod recording an expiry has the server clock read last (a pod
/// list's `Date`), and the report carries the instant and the time left on that clock; a
/// listing without a usable `Date` leaves the time left unknown, and a failed one only loses the
/// expiry (status is read-only and its report stands).
#[test]
fn an_expiring_pod_reads_the_server_clock_last() {
    let clock = || {
        ask(Request::List {
            secrets: false,
            dropping: None,
        })
    };
    let listed = |server_now| {
        Answer::Listed(Ok(Listing {
            server_now,
            ..Listing::default()
        }))
    };
    let failed = Answer::Listed(Err(RequestFailure::api(403, "Forbidden", "no list")));
    for (answer, expiry) in [
        (
            listed(Some(AT - 7_140)),
            Some(StatusExpiry {
                expires_at: AT,
                seconds_left: Some(7_140),
            }),
        ),
        (
            listed(Some(AT + 30)),
            Some(StatusExpiry {
                expires_at: AT,
                seconds_left: Some(-30),
            }),
        ),
        (
            listed(None),
            Some(StatusExpiry {
                expires_at: AT,
                seconds_left: None,
            }),
        ),
        (failed.clone(), None),
    ] {
        let shown = reports("the expiry as the clock shows it", move |r| {
            r.state == StatusState::Started && r.expiry == expiry
        });
        let mut beats = to_secret_check(expiring(AGENT_ID));
        beats.extend([
            feed(Answer::Exists(Ok(true)), ask(Request::ReadWorkspace)),
            feed(Answer::WorkspaceRead(None), clock()),
            feed(answer, shown),
        ]);
        play_reading(spec(None), beats);
    }
}

/// A foreign pod's expiry is not shown and no clock is read for it; a pod recording no expiry
/// (or one that does not parse) reads no clock either.
#[test]
fn no_clock_is_read_without_an_expiry_of_the_agents_own() {
    let nothing = || reports("no expiry", |r| r.expiry.is_none());
    play(
        spec(None),
        vec![
            feed(Answer::Start, get()),
            feed(
                Answer::PodRead(Ok(Some(expiring(OTHER_AGENT_ID)))),
                nothing(),
            ),
        ],
    );
    let mut malformed = expiring(AGENT_ID);
    malformed.marks.expires_at = Some("in two hours".into());
    for pod in [own_pod(running()), malformed] {
        let mut beats = to_secret_check(pod);
        beats.push(feed(Answer::Exists(Ok(true)), nothing()));
        play(spec(None), beats);
    }
}
