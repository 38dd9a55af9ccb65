//! The scenario table of the deploy loop (deploy.md § Scenario inventory): each row is written
//! once — a setup (objects, kubelet scripts, faults), one act (a deploy or an undeploy) and an
//! expectation (the outcome, the requests in the one record shape every backend logs, the
//! objects left) — and runs on every backend it names ([`world::Backend`]): the fake in virtual
//! time, the simulator calm and stormy, the real kube-apiserver. The rows name their ids (`ids`)
//! and are named after them; `cargo xtask tidy` checks both against the inventory.
//!
//! This file is compiled into the `cluster` test binary (fake, calm, stormy) and the
//! `real_server` one (real); each binary's `backend_test!` decides which of a row's backends it
//! runs, so a row's tests are `<row>::fake`, `::calm`, `::stormy` and `::real`. What a row is and
//! how it runs is [`row`]; the backends are [`world`].
//!
//! Layer: test scenarios; they decide nothing. Objects are staged through the API or the model,
//! never by reaching past what a backend offers.

#![allow(
    dead_code,
    reason = "each test binary runs a different subset of the backends"
)]

pub mod row;
pub mod world;

use std::time::Duration;

use apiary_apiserver_sim::{Resource, Verb};
use apiary_classify::status::StatusState;
use apiary_substrate::driver::{DeployError, UndeployError};
use k8s_openapi::api::core::v1::Pod;

use crate::real_support::fixtures::{POD, after_preflight, image};
use crate::real_support::{has_container_status, is_running, phase, waiting_reason};
pub use row::run;
use row::{
    Act, Expect, Marks, Op, Outcome, PodAfter, Row, SecretsAfter, Settle, Setup, Timing, Winner,
    Writes, nothing_else, unedited,
};
use world::{Backend, Deadline};

/// A deploy of the configuration for the image of `keyword`, with an ample deadline.
fn deploy(keyword: &'static str) -> Act {
    Act {
        op: Op::Deploy,
        keyword,
        edit: unedited,
        deadline: Deadline::Long,
    }
}

/// An undeploy of the agent.
fn undeploy() -> Act {
    Act {
        op: Op::Undeploy,
        ..deploy("")
    }
}

/// A `deploy --replace` of the configuration for the image of `keyword`, edited by `edit`.
fn replace(keyword: &'static str, edit: fn(&mut apiary_substrate::config::DeployConfig)) -> Act {
    Act {
        op: Op::Replace,
        edit,
        ..deploy(keyword)
    }
}

/// Another CPU limit: another create intent for the same image.
fn more_cpu(config: &mut apiary_substrate::config::DeployConfig) {
    config.cpu_limit = "3".to_owned();
}

/// The replaced pod's own Secret was deleted, once, by a uid-fenced delete (its name in the
/// path, its uid as the precondition, no grace override), and is gone.
fn replaced_secret_deleted(seen: &row::Seen) {
    let old = seen
        .staged_secret
        .clone()
        .expect("the replaced pod's Secret");
    let deletes = seen.answered(Verb::Delete, Resource::Secrets);
    assert_eq!(deletes.len(), 1, "{:?}", seen.log);
    assert!(
        deletes[0].path.ends_with(&format!("/{old}")),
        "{:?}",
        deletes[0]
    );
    let body = deletes[0].body_json().expect("a delete body");
    assert!(body["preconditions"]["uid"].is_string(), "{body}");
    assert!(body.get("gracePeriodSeconds").is_none(), "{body}");
    assert!(!seen.secrets.contains(&old), "{:?}", seen.secrets);
    assert!(seen.secrets_before.contains(&old));
}

/// A deploy that must reach its (short) deadline.
fn deploy_to_deadline(keyword: &'static str) -> Act {
    Act {
        deadline: Deadline::Short,
        ..deploy(keyword)
    }
}

/// A failure whose error text holds each of `says`.
fn failed(kind: fn(&DeployError) -> bool, says: &'static [&'static str]) -> Outcome {
    Outcome::Failed(kind, says)
}

/// R1: an empty namespace ends with exactly one started pod whose name is returned; one Secret
/// then one pod are created, nothing is deleted, every read is a quorum read, and the requests
/// start with the fixed prefix of a fresh deploy.
pub fn r1_fresh_deploy() -> Row {
    Row {
        ids: &["R1"],
        expect: Expect {
            order: &[
                (Verb::Create, Resource::Secrets),
                (Verb::Create, Resource::Pods),
            ],
            also: |seen| {
                assert!(is_running(seen.pod.as_ref().expect("pod")));
                for read in seen.log.iter().filter(|r| r.method == "GET") {
                    if read.query_param("watch").is_none() {
                        assert_eq!(read.query_param("resourceVersion"), None, "{read:?}");
                    }
                }
                if seen.backend == Backend::Stormy {
                    return;
                }
                // The fixed prefix of a fresh deploy (the preflight's four requests in any
                // order that keeps GC's own, then the creates); only watch wake-ups and
                // re-reads follow.
                let targets = seen.targets();
                let creates = [
                    (Resource::Secrets, Verb::Create),
                    (Resource::Pods, Verb::Create),
                ];
                assert_eq!(after_preflight(&targets, true)[..2], creates.map(Some));
                let rereads = [(Resource::Pods, Verb::Watch), (Resource::Pods, Verb::Get)];
                assert!(
                    targets[6..]
                        .iter()
                        .all(|t| t.is_some_and(|t| rereads.contains(&t))),
                    "{targets:?}"
                );
                if seen.backend == Backend::Calm {
                    assert!(targets.len() <= 12, "{} requests", targets.len());
                }
            },
            ..Expect::default()
        },
        ..Row::default()
    }
}

/// A no-op deploy: the agent's started pod is kept and nothing is written — the namespace GET
/// and the preflight's reads only.
fn noop(matches: Option<bool>) -> Expect {
    Expect {
        outcome: Outcome::Deployed(matches),
        writes: Writes::None,
        pod: PodAfter::Kept,
        secrets: SecretsAfter::Unchanged,
        also: |seen| {
            if seen.backend != Backend::Stormy {
                assert_eq!(after_preflight(&seen.targets(), true), []);
            }
        },
        ..Expect::default()
    }
}

/// R2 and deploy.md § Latest condition, deadline, zero mutation: deploying an agent whose pod is
/// started writes nothing — only the namespace GET and the preflight's reads.
pub fn r2_noop_zero_mutation() -> Row {
    Row {
        ids: &["R2"],
        setup: Setup::Deployed("", unedited),
        expect: noop(Some(true)),
        ..Row::default()
    }
}

/// R3: a started pod with a stale intent (another CPU limit) is kept and reported as not
/// matching; nothing is written.
pub fn r3_stale_intent_kept_without_writes() -> Row {
    Row {
        ids: &["R3"],
        setup: Setup::Deployed("", |c| c.cpu_limit = "4".into()),
        expect: noop(Some(false)),
        ..Row::default()
    }
}

/// R4: an edited environment (a changed value and a new key) reaches no running pod: the same
/// name, no Secret or pod created, nothing written.
pub fn r4_edited_env_reaches_no_running_pod() -> Row {
    Row {
        ids: &["R4"],
        setup: Setup::Deployed("", |c| c.env.set("TOKEN", "one")),
        act: Act {
            edit: |c| {
                c.env.set("TOKEN", "two");
                c.env.set("EXTRA", "x");
            },
            ..deploy("")
        },
        expect: noop(None),
    }
}

/// Whether `error` is E3 for [`POD`].
fn pull_failing(error: &DeployError) -> bool {
    matches!(error, DeployError::PullFailing { pod, .. } if pod == POD)
}

/// R10: the created pod's image has no manifest: E3 at once, naming the registry and the image,
/// with the pod kept and nothing deleted.
pub fn r10_pull_failure_reported_without_delete() -> Row {
    Row {
        ids: &["R10"],
        act: deploy("pullfail-manifest"),
        expect: Expect {
            outcome: failed(pull_failing, &["has no image at", "registry.example.com"]),
            also: |seen| {
                let text = seen.error_text();
                assert!(text.contains(&image("pullfail-manifest")), "{text}");
            },
            ..Expect::default()
        },
        ..Row::default()
    }
}

/// R10 on a pod that was already failing its pull (`ImagePullBackOff`, manifest unknown) with
/// the desired intent: E3 "has no image at" before the deadline, and nothing written.
pub fn r10_pull_failing_pod_reported_at_once() -> Row {
    Row {
        ids: &["R10"],
        setup: Setup::Attempt {
            keyword: "pullfail-manifest",
            generation: 1,
            secret: true,
            settle: Settle::Kubelet("the pull fails", |p| {
                waiting_reason(p).is_some_and(|r| r == "ErrImagePull" || r == "ImagePullBackOff")
            }),
        },
        act: deploy("pullfail-manifest"),
        expect: Expect {
            outcome: failed(pull_failing, &["has no image at"]),
            ..noop(None)
        },
    }
}

/// C9 (the wedge escape, deploy.md § Create-intent fingerprint): a never-started pod whose
/// recorded intent differs is deleted with exactly the observed fence (no grace override),
/// waited for through its grace period, and recreated; the new pod starts.
pub fn c9_wedge_escape_on_changed_intent() -> Row {
    Row {
        ids: &["C9"],
        setup: Setup::Attempt {
            keyword: "never-starts",
            generation: 0x0bad_cafe,
            secret: true,
            settle: Settle::Kubelet("the wedged pod waits", has_container_status),
        },
        expect: Expect {
            writes: Writes::Counted(1, 1, Some(1), None),
            order: &[
                (Verb::Delete, Resource::Pods),
                (Verb::Create, Resource::Pods),
            ],
            secrets: SecretsAfter::Any,
            also: |seen| assert!(is_running(seen.pod.as_ref().expect("pod"))),
            ..Expect::default()
        },
        ..Row::default()
    }
}

/// Whether `error` is E2 for [`POD`].
fn created_pod_failed(error: &DeployError) -> bool {
    matches!(error, DeployError::CreatedPodFailed { pod, .. } if pod == POD)
}

/// Whether `error` is E1 for [`POD`].
fn deadline_exceeded(error: &DeployError) -> bool {
    matches!(error, DeployError::DeadlineExceeded { pod, .. } if pod == POD)
}

/// R13: a pod waiting `CreateContainerConfigError` whose Secret exists is recoverable with the
/// desired intent: observed to the deadline (E1) with the Secret checked by a quorum GET, never
/// deleted, nothing created.
pub fn r13_config_error_with_present_secret_keeps_observing() -> Row {
    Row {
        ids: &["R13"],
        setup: Setup::Attempt {
            keyword: "",
            generation: 1,
            secret: true,
            // A transient failure of the kubelet's own Secret cache: nothing is missing.
            settle: Settle::Waiting(
                "CreateContainerConfigError",
                "failed to sync secret cache: timed out waiting for the condition",
            ),
        },
        act: deploy_to_deadline(""),
        expect: Expect {
            outcome: failed(deadline_exceeded, &["CreateContainerConfigError"]),
            timing: Timing::AtDeadline,
            also: |seen| {
                let reads = seen.answered(Verb::Get, Resource::Secrets);
                let secret = seen.staged_secret.as_deref().expect("staged Secret");
                assert!(!reads.is_empty(), "the Secret was checked by a quorum GET");
                assert!(reads.iter().all(|r| r.path.ends_with(secret)), "{reads:?}");
            },
            ..noop(None)
        },
    }
}

/// R38: a pod waiting `CreateContainerConfigError` because a key of a Secret it references is
/// missing (the kubelet's `couldn't find key …`) fails the deploy at once with E14, naming the
/// key and quoting the kubelet's words; the pod is kept and nothing is written.
pub fn r38_missing_key_of_a_referenced_secret_fails_at_once() -> Row {
    Row {
        ids: &["R38"],
        setup: Setup::Attempt {
            keyword: "",
            generation: 1,
            secret: true,
            settle: Settle::Waiting(
                "CreateContainerConfigError",
                "couldn't find key FOO in Secret agents/team-creds",
            ),
        },
        act: deploy(""),
        expect: Expect {
            outcome: failed(
                referenced_missing,
                &[
                    "secret team-creds has no key FOO",
                    "couldn't find key FOO in Secret agents/team-creds",
                    "The pod is kept",
                ],
            ),
            timing: Timing::Early,
            ..noop(None)
        },
    }
}

/// Whether `error` is E14 for [`POD`].
fn referenced_missing(error: &DeployError) -> bool {
    matches!(error, DeployError::ReferencedSecretMissing { pod: Some(pod), .. } if pod == POD)
}

/// R14: a pod waiting `CreateContainerConfigError` whose Secret is confirmed absent is provably
/// broken: fenced delete, wait, recreate with a fresh Secret; the new pod starts.
pub fn r14_config_error_with_absent_secret_replaced() -> Row {
    Row {
        ids: &["R14"],
        setup: Setup::Attempt {
            keyword: "",
            generation: 2,
            secret: false,
            settle: Settle::Kubelet("CreateContainerConfigError", |p| {
                waiting_reason(p).as_deref() == Some("CreateContainerConfigError")
            }),
        },
        expect: Expect {
            writes: Writes::Counted(1, 1, Some(1), None),
            order: &[
                (Verb::Delete, Resource::Pods),
                (Verb::Create, Resource::Secrets),
            ],
            also: |seen| {
                // The fake logs no answers; over HTTP the absence was a 404.
                if seen.backend != Backend::Fake {
                    let reads = seen.of(Verb::Get, Resource::Secrets);
                    assert!(reads.iter().any(|r| r.status == Some(404)), "{reads:?}");
                }
            },
            ..Expect::default()
        },
        ..Row::default()
    }
}

/// R16 (the 107-Secrets regression): a pod that exits at once is reported once — E2 with the
/// exit code and the `kubectl logs` hint, exactly one Secret and one pod created, nothing
/// deleted, before the deadline; both stay as evidence.
pub fn r16_crash_reported_once() -> Row {
    Row {
        ids: &["R16"],
        act: deploy("crash"),
        expect: Expect {
            outcome: failed(created_pod_failed, &["exited with code 1"]),
            also: |seen| {
                let text = seen.error_text();
                let hint = format!("kubectl logs -n {} {POD} -c agent", seen.namespace);
                assert!(text.contains(&hint), "{text}");
            },
            ..Expect::default()
        },
        ..Row::default()
    }
}

/// R21 / deploy.md § Verification: a pod under the agent's name that is not apiary's is never
/// touched: E8 naming it, and no write of any kind is sent.
pub fn r21_foreign_pod_never_touched() -> Row {
    Row {
        ids: &["R21"],
        setup: Setup::Foreign,
        expect: Expect {
            outcome: failed(
                |e| *e == DeployError::ForeignPod { pod: POD.into() },
                &["not managed by apiary", POD],
            ),
            ..noop(None)
        },
        ..Row::default()
    }
}

/// R29/R30 and deploy.md § Latest condition, deadline, zero mutation: a pod that never starts
/// fails with E1 at the deadline naming the latest condition; expiry cleans nothing — the pod
/// and its Secret stay, no delete is sent.
pub fn r29_deadline_expiry_cleans_nothing() -> Row {
    Row {
        ids: &["R29"],
        act: deploy_to_deadline("never-starts"),
        expect: Expect {
            outcome: failed(deadline_exceeded, &["ContainerCreating", POD]),
            // Not before the deadline; that it is overrun by at most one request is the deploy
            // machine's property test (classify's machine_props), not a clock reading here.
            timing: Timing::AtDeadline,
            ..Expect::default()
        },
        ..Row::default()
    }
}

/// R31 / deploy.md § Namespace ensure: a missing namespace whose creation is forbidden (403) is
/// E11 carrying `kubectl create namespace <ns>`; nothing is written: the only pod and Secret
/// requests are the preflight's reads, sent with the namespace ensure (deploy.md § Sequence).
pub fn r31_forbidden_namespace() -> Row {
    Row {
        ids: &["R31"],
        setup: Setup::NamespaceForbidden,
        expect: Expect {
            outcome: failed(
                |e| {
                    *e == DeployError::NamespaceMissing {
                        namespace: "agents".into(),
                    }
                },
                &["kubectl create namespace agents"],
            ),
            writes: Writes::NamespaceOnly,
            pod: PodAfter::Gone,
            secrets: SecretsAfter::Unchanged,
            also: |seen| {
                if seen.backend != Backend::Fake {
                    let creates: Vec<_> = seen.log.iter().filter(|r| r.method == "POST").collect();
                    assert_eq!(creates.len(), 1, "a 403 is not retried");
                    assert_eq!(creates[0].status, Some(403));
                }
            },
            ..Expect::default()
        },
        ..Row::default()
    }
}

/// An earlier attempt whose pod crashed (exit code 1, phase Failed), its Secret present.
fn terminated() -> Setup {
    Setup::Attempt {
        keyword: "crash",
        generation: 1,
        secret: true,
        settle: Settle::Kubelet("the pod terminates", |p| phase(p) == Some("Failed")),
    }
}

/// R5: a terminated pod is collected by the preflight GC with the observed fence (the pod, then
/// its Secret), before the creates; the recreated pod starts.
pub fn r5_terminated_pod_collected_then_recreated() -> Row {
    Row {
        ids: &["R5"],
        setup: terminated(),
        expect: Expect {
            writes: Writes::Counted(1, 1, Some(1), Some(1)),
            order: &[
                (Verb::Delete, Resource::Pods),
                (Verb::Create, Resource::Secrets),
            ],
            ..Expect::default()
        },
        ..Row::default()
    }
}

/// R17: terminated residue and a crash of the created pod: exactly one pod delete (the GC's)
/// and one Secret create, then E2.
pub fn r17_residue_replaced_once_then_e2() -> Row {
    Row {
        ids: &["R17"],
        setup: terminated(),
        act: deploy("crash"),
        expect: Expect {
            outcome: failed(created_pod_failed, &["exited with code 1"]),
            writes: Writes::Counted(1, 1, Some(1), Some(1)),
            ..Expect::default()
        },
    }
}

/// R36: `deploy --replace` onto a started agent of another configuration: the old pod deleted
/// with its observed fence, and once it is gone its own Secret deleted (uid-fenced) before the
/// new Secret and pod are created; the new pod and only its Secret are left.
pub fn r36_replace_drops_the_replaced_pods_secret() -> Row {
    Row {
        ids: &["R36"],
        setup: Setup::Deployed("", unedited),
        act: replace("", more_cpu),
        expect: Expect {
            writes: Writes::Counted(1, 1, Some(1), Some(1)),
            order: &[
                (Verb::Delete, Resource::Pods),
                (Verb::Delete, Resource::Secrets),
                (Verb::Create, Resource::Secrets),
                (Verb::Create, Resource::Pods),
            ],
            also: replaced_secret_deleted,
            ..Expect::default()
        },
    }
}

/// R37: a failed replace (the new pod crashes: E2) leaves no old Secret: it was deleted before
/// the create, and only the crashed pod's Secret stays as evidence.
pub fn r37_failed_replace_leaves_no_old_secret() -> Row {
    Row {
        ids: &["R37"],
        setup: Setup::Deployed("", unedited),
        act: replace("crash", unedited),
        expect: Expect {
            outcome: failed(created_pod_failed, &["exited with code 1"]),
            writes: Writes::Counted(1, 1, Some(1), Some(1)),
            order: &[
                (Verb::Delete, Resource::Pods),
                (Verb::Delete, Resource::Secrets),
                (Verb::Create, Resource::Secrets),
            ],
            also: replaced_secret_deleted,
            ..Expect::default()
        },
    }
}

/// R8: a pod that cannot be scheduled, with the desired intent, is observed to the deadline: E1
/// naming `Unschedulable`, nothing written.
pub fn r8_unschedulable_same_intent_e1_at_deadline_no_delete() -> Row {
    Row {
        ids: &["R8"],
        setup: Setup::Attempt {
            keyword: "unschedulable",
            generation: 1,
            secret: true,
            settle: Settle::Kubelet("the pod is unschedulable", |p| {
                let conditions = p.status.as_ref().and_then(|s| s.conditions.as_ref());
                conditions.is_some_and(|c| {
                    c.iter()
                        .any(|c| c.type_ == "PodScheduled" && c.status == "False")
                })
            }),
        },
        act: deploy_to_deadline("unschedulable"),
        expect: Expect {
            outcome: failed(deadline_exceeded, &["Unschedulable"]),
            timing: Timing::AtDeadline,
            also: nothing_else,
            ..noop(None)
        },
    }
}

/// R11: a pull failure whose kubelet message carries a credential (`token=SUPERSECRET`) is
/// reported without it, in `Display` and in `Debug`.
pub fn r11_pull_message_never_echoed() -> Row {
    Row {
        ids: &["R11"],
        setup: Setup::Attempt {
            keyword: "",
            generation: 1,
            secret: true,
            settle: Settle::Waiting("ErrImagePull", "401 Unauthorized token=SUPERSECRET"),
        },
        expect: Expect {
            outcome: failed(pull_failing, &[]),
            also: |seen| {
                assert!(
                    !format!("{:?} {}", seen.outcome, seen.error_text()).contains("SUPERSECRET")
                );
            },
            ..noop(None)
        },
        ..Row::default()
    }
}

/// S1 + S3: a deployed agent is `started` with its Secret present; undeploy sends one fenced
/// delete without a grace override, waits until the pod is gone, then deletes its Secret
/// (uid-fenced); the agent is `absent` afterwards.
pub fn s3_undeploy_started_pod() -> Row {
    Row {
        ids: &["S1", "S3"],
        setup: Setup::Deployed("", unedited),
        act: undeploy(),
        expect: Expect {
            outcome: Outcome::Undeployed,
            writes: Writes::Counted(0, 0, Some(1), Some(1)),
            order: &[
                (Verb::Delete, Resource::Pods),
                (Verb::Delete, Resource::Secrets),
            ],
            pod: PodAfter::Gone,
            secrets: SecretsAfter::Gone,
            also: |seen| {
                let report = seen.report();
                assert_eq!(report.pod.as_deref(), Some(POD));
                assert!(report.pod_deleted && report.waited, "{report:?}");
                assert_eq!(
                    report.secrets,
                    [seen.staged_secret.clone().expect("Secret")]
                );
                assert!(report.kept_secrets.is_empty());
                let before = &seen.before;
                assert_eq!(
                    (before.state, before.intent_matches),
                    (StatusState::Started, Some(true))
                );
                assert!(before.secret.as_ref().is_some_and(|s| s.exists));
                assert_eq!(seen.after.state, StatusState::Absent);
                if seen.backend == Backend::Fake {
                    // The pod's own 60 s grace applied: the virtual wait lasted about that long.
                    assert!(seen.elapsed >= Duration::from_secs(60));
                    return;
                }
                // The Secret goes only after the pod is gone (its last reference).
                let log = &seen.log;
                let gone = log
                    .iter()
                    .rposition(|r| r.is(Verb::Get, Resource::Pods) && r.status == Some(404))
                    .expect("the wait saw the pod gone");
                let deleted = seen.answered(Verb::Delete, Resource::Secrets)[0];
                assert!(log[..gone].iter().all(|r| r != deleted), "{log:?}");
            },
            ..Expect::default()
        },
    }
}

/// S1 + S5: a foreign pod under the name is reported `foreign` (no condition, no Secret), and
/// undeploy fails with E8 naming it without a single write, Secrets included.
pub fn s5_undeploy_foreign_pod_touches_nothing() -> Row {
    Row {
        ids: &["S1", "S5"],
        setup: Setup::Foreign,
        act: undeploy(),
        expect: Expect {
            outcome: Outcome::Refused(
                |e| matches!(e, UndeployError::ForeignPod { pod } if pod == POD),
                &[POD],
            ),
            also: |seen| {
                let before = &seen.before;
                assert_eq!(before.state, StatusState::Foreign);
                assert_eq!((&before.condition, &before.secret), (&None, &None));
            },
            ..noop(None)
        },
    }
}

/// A winner of the agent's own configuration for the image of `keyword`, brought by its
/// kubelet to `what` (`check`).
fn winner(keyword: &'static str, what: &'static str, check: fn(&Pod) -> bool) -> Winner {
    Winner {
        keyword,
        edit: unedited,
        marks: Marks::Ours,
        settle: Settle::Kubelet(what, check),
        deleting: false,
    }
}

/// A winner of the agent's own configuration that runs.
fn running_winner() -> Winner {
    winner("", "the winner runs", is_running)
}

/// What every lost race shows (deploy.md § Losing the create race): one Secret created, the pod
/// create met `AlreadyExists`, the act's own Secret dropped again by a uid-fenced delete, no pod
/// deleted; the winner and its Secret are left as they were.
fn lost(outcome: Outcome) -> Expect {
    Expect {
        outcome,
        writes: Writes::Counted(1, 0, Some(0), Some(1)),
        order: &[
            (Verb::Create, Resource::Secrets),
            (Verb::Delete, Resource::Secrets),
        ],
        pod: PodAfter::Kept,
        secrets: SecretsAfter::Staged,
        also: lost_create,
        ..Expect::default()
    }
}

/// The act's pod create was answered `AlreadyExists`, and the Secret it deleted (uid-fenced) is
/// the one it created.
fn lost_create(seen: &row::Seen) {
    let creates = seen.of(Verb::Create, Resource::Pods);
    assert_eq!(
        creates.last().and_then(|r| r.status),
        Some(409),
        "{creates:?}"
    );
    let own = own_secret(seen);
    let deletes = seen.answered(Verb::Delete, Resource::Secrets);
    assert!(deletes[0].path.ends_with(&format!("/{own}")), "{deletes:?}");
    let body = deletes[0].body_json().expect("a delete body");
    assert!(body["preconditions"]["uid"].is_string(), "{body}");
}

/// The body of the act's (one) answered Secret create.
fn own_secret_body(seen: &row::Seen) -> serde_json::Value {
    let creates = seen.answered(Verb::Create, Resource::Secrets);
    creates[0].body_json().expect("a create body")
}

/// The name of the act's own Secret.
fn own_secret(seen: &row::Seen) -> String {
    let body = own_secret_body(seen);
    body["metadata"]["name"]
        .as_str()
        .expect("a name")
        .to_owned()
}

/// Whether `error` is E8 for [`POD`].
fn foreign(error: &DeployError) -> bool {
    *error == DeployError::ForeignPod { pod: POD.into() }
}

/// R15 + R22: a create lost to a running winner of the agent's own, whose Secret exists: the
/// winner's name is returned; exactly one Secret was created, named after its own
/// `APIARY_START_NONCE`, and it is the one Secret deleted; the winner's Secret stays.
pub fn r15_r22_lost_race_adopts_the_running_winner() -> Row {
    Row {
        ids: &["R15", "R22"],
        setup: Setup::Race(running_winner()),
        expect: Expect {
            also: |seen| {
                lost_create(seen);
                let body = own_secret_body(seen);
                let nonce = body["stringData"]["APIARY_START_NONCE"]
                    .as_str()
                    .expect("the nonce");
                let name = own_secret(seen);
                assert!(name.ends_with(&format!("-{nonce}")), "{name} / {nonce}");
            },
            ..lost(Outcome::Deployed(Some(true)))
        },
        ..Row::default()
    }
}

/// R19: a create lost to a running look-alike without apiary's marks is E8; the look-alike is
/// never deleted, and the act's own Secret is dropped.
pub fn r19_look_alike_winner_e8_own_secret_dropped() -> Row {
    Row {
        ids: &["R19"],
        setup: Setup::Race(Winner {
            marks: Marks::None,
            ..running_winner()
        }),
        expect: lost(failed(foreign, &["not managed by apiary", POD])),
        ..Row::default()
    }
}

/// R20: a create lost to a winner with another agent's id is E8; no pod is deleted.
pub fn r20_other_agent_winner_e8() -> Row {
    Row {
        ids: &["R20"],
        setup: Setup::Race(Winner {
            marks: Marks::OtherAgent,
            ..running_winner()
        }),
        expect: lost(failed(foreign, &[POD])),
        ..Row::default()
    }
}

/// R23: a create lost to a running winner with another intent (another memory limit) adopts it,
/// reporting the intent as not matching; the loser never replaces a winner.
pub fn r23_divergent_winner_adopted() -> Row {
    Row {
        ids: &["R23"],
        setup: Setup::Race(Winner {
            edit: |c| c.memory_limit = "8Gi".into(),
            ..running_winner()
        }),
        expect: lost(Outcome::Deployed(Some(false))),
        ..Row::default()
    }
}

/// R24: a winner still `ContainerCreating` (the model's kubelet starts it 300 s after its create)
/// is observed until it runs, then adopted: the act waited for a change of the pod after its
/// lost create.
pub fn r24_creating_winner_observed_until_running() -> Row {
    Row {
        ids: &["R24"],
        setup: Setup::Race(Winner {
            settle: Settle::StartsAfter(Duration::from_secs(300)),
            ..running_winner()
        }),
        expect: Expect {
            also: |seen| {
                lost_create(seen);
                let targets = seen.targets();
                let lost = targets
                    .iter()
                    .rposition(|t| *t == Some((Resource::Pods, Verb::Create)))
                    .expect("the lost create");
                assert!(
                    targets[lost..].contains(&Some((Resource::Pods, Verb::Watch))),
                    "{targets:?}"
                );
            },
            ..lost(Outcome::Deployed(Some(true)))
        },
        ..Row::default()
    }
}

/// R25: a winner that started and is deletion-marked is adopted (the lost-race path checks
/// Started before the mark).
pub fn r25_started_deleting_winner_adopted() -> Row {
    Row {
        ids: &["R25"],
        setup: Setup::Race(Winner {
            deleting: true,
            ..running_winner()
        }),
        expect: lost(Outcome::Deployed(Some(true))),
        ..Row::default()
    }
}

/// R26: a winner deletion-marked before it started is E6.
pub fn r26_deleting_unstarted_winner_e6() -> Row {
    Row {
        ids: &["R26"],
        setup: Setup::Race(Winner {
            deleting: true,
            ..winner("never-starts", "the winner waits", has_container_status)
        }),
        expect: lost(failed(
            |e| matches!(e, DeployError::WinnerDeleting { pod } if pod == POD),
            &[POD],
        )),
        ..Row::default()
    }
}

/// R27: a terminated winner (it exited with code 1) is E7 naming the exit code.
pub fn r27_terminated_winner_e7() -> Row {
    Row {
        ids: &["R27"],
        setup: Setup::Race(winner("crash", "the winner terminates", |p| {
            phase(p) == Some("Failed")
        })),
        expect: lost(failed(
            |e| matches!(e, DeployError::WinnerFailed { pod, .. } if pod == POD),
            &["exited with code 1"],
        )),
        ..Row::default()
    }
}

/// R28: a pull-failing winner is observed on (the loser never replaces it) until the deadline:
/// E5, and no delete.
pub fn r28_pull_failing_winner_observed_to_deadline() -> Row {
    Row {
        ids: &["R28"],
        setup: Setup::Race(winner(
            "pullfail-unauthorized",
            "the winner's pull fails",
            |p| waiting_reason(p).is_some_and(|r| r == "ErrImagePull" || r == "ImagePullBackOff"),
        )),
        act: deploy_to_deadline(""),
        expect: Expect {
            timing: Timing::AtDeadline,
            ..lost(failed(
                |e| matches!(e, DeployError::RaceDeadlineExceeded { pod, .. } if pod == POD),
                &[POD],
            ))
        },
    }
}

/// The rows, each with the backends it runs on; `backend_test!` (defined by the test binary)
/// turns each backend into a test `<row>::<backend>`.
macro_rules! table {
    ($($(#[doc = $doc:literal])* $row:ident on [$($backend:ident),+];)+) => {$(
        $(#[doc = $doc])*
        mod $row {
            $(backend_test!($backend, $row);)+
        }
    )+};
}

table! {
    /// R1: a fresh deploy creates one Secret then one pod, deletes nothing, returns the name.
    r1_fresh_deploy on [fake, calm, stormy, real];
    /// R2: a no-op deploy performs only the namespace GET and reads.
    r2_noop_zero_mutation on [fake, calm, stormy, real];
    /// R3: a stale intent is reported, the pod kept, nothing written.
    r3_stale_intent_kept_without_writes on [fake, calm, stormy, real];
    /// R4: an edited environment reaches no running pod.
    r4_edited_env_reaches_no_running_pod on [fake, calm, stormy, real];
    /// R10: a pull failure of the created pod is E3 at once with no delete.
    r10_pull_failure_reported_without_delete on [fake, calm, stormy, real];
    /// R10: a pod already failing its pull is E3 at once, nothing written.
    r10_pull_failing_pod_reported_at_once on [fake, calm, stormy, real];
    /// C9: a never-started pod with a changed intent is fence-deleted and recreated.
    c9_wedge_escape_on_changed_intent on [fake, calm, stormy, real];
    /// R13: `CreateContainerConfigError` with its Secret present: E1, no delete.
    r13_config_error_with_present_secret_keeps_observing on [fake, calm, stormy];
    /// R38: a key missing from a referenced Secret is E14 at once, the pod kept.
    r38_missing_key_of_a_referenced_secret_fails_at_once on [fake, calm, stormy];
    /// R14: `CreateContainerConfigError` with its Secret absent: delete and recreate.
    r14_config_error_with_absent_secret_replaced on [fake, calm, stormy, real];
    /// R16: a crashing pod is reported once (E2, exit code) with exactly one Secret created.
    r16_crash_reported_once on [fake, calm, stormy, real];
    /// R21: a foreign pod under the name is E8 with no writes.
    r21_foreign_pod_never_touched on [fake, calm, stormy, real];
    /// R29: deadline expiry is E1 and deletes nothing.
    r29_deadline_expiry_cleans_nothing on [fake, calm, stormy, real];
    /// R31: a forbidden namespace create is E11 naming the kubectl command, nothing written.
    r31_forbidden_namespace on [fake, calm, stormy];
    /// R5: terminated residue is collected with the observed fence, then the agent recreated.
    r5_terminated_pod_collected_then_recreated on [fake, calm, stormy, real];
    /// R17: residue collected once, then the created pod's crash is E2.
    r17_residue_replaced_once_then_e2 on [fake, calm, stormy, real];
    /// R8: an unschedulable pod is observed to the deadline, nothing written.
    r8_unschedulable_same_intent_e1_at_deadline_no_delete on [fake, calm, stormy, real];
    /// R11: a credential in a pull message never reaches the error.
    r11_pull_message_never_echoed on [fake, calm, stormy];
    /// R36: a replace drops the replaced pod's Secret once that pod is gone.
    r36_replace_drops_the_replaced_pods_secret on [fake, calm, stormy, real];
    /// R37: a failed replace leaves no old Secret.
    r37_failed_replace_leaves_no_old_secret on [fake, calm, stormy, real];
    /// S3: undeploy fence-deletes the started pod, waits, then deletes its Secret.
    s3_undeploy_started_pod on [fake, calm, stormy, real];
    /// S5: undeploy of a foreign pod is E8 with no writes.
    s5_undeploy_foreign_pod_touches_nothing on [fake, calm, stormy, real];
    /// R15 + R22: a create lost to a running winner adopts it and drops only its own Secret.
    r15_r22_lost_race_adopts_the_running_winner on [fake, calm, stormy, real];
    /// R19: a create lost to a look-alike is E8, its own Secret dropped.
    r19_look_alike_winner_e8_own_secret_dropped on [fake, calm, stormy, real];
    /// R20: a create lost to another agent's pod is E8.
    r20_other_agent_winner_e8 on [fake, calm, stormy, real];
    /// R23: a create lost to a winner of another intent adopts it.
    r23_divergent_winner_adopted on [fake, calm, stormy, real];
    /// R24: a winner still creating is observed until it runs (its start delay is the model's
    /// script: not on the real tier, whose fake kubelet starts pods by a delay of its own, nor
    /// stormy, where a retried read may first see it running).
    r24_creating_winner_observed_until_running on [fake, calm];
    /// R25: a started, deletion-marked winner is adopted (not on the real tier: its fake
    /// kubelet ends the containers as soon as the pod is marked, as a container that exits on
    /// `SIGTERM` does; the model's keeps them running through the grace period, as one that
    /// ignores it does, which is the case the row states).
    r25_started_deleting_winner_adopted on [fake, calm, stormy];
    /// R26: a winner marked for deletion before it started is E6.
    r26_deleting_unstarted_winner_e6 on [fake, calm, stormy, real];
    /// R27: a terminated winner is E7.
    r27_terminated_winner_e7 on [fake, calm, stormy, real];
    /// R28: a pull-failing winner is observed to the deadline: E5, no delete.
    r28_pull_failing_winner_observed_to_deadline on [fake, calm, stormy, real];
}
