//! The `Cluster` scenarios of the real-server tier (README.md § Testing) through the real driver
//! and the real `Cluster`, each defined once in `real_support::scenarios` and run twice:
//! `<scenario>::sim` against the loopback simulator and `<scenario>::real` against an upstream
//! `kube-apiserver` + etcd with the fake kubelet (`apiary-envtest`), so the two backends cannot
//! drift apart unnoticed.
//!
//! Layer: integration tests over real HTTP on 127.0.0.1. They decide nothing. The real runs skip
//! (one stderr line) without `KUBEBUILDER_ASSETS` and fail with `APIARY_ENVTEST_REQUIRED=1`.
//! No timed assertions: waits are bounded only to turn a hang into a failure.

on_both_backends!(
    /// R1: a fresh deploy creates one Secret then one pod, deletes nothing, returns the name.
    r1_fresh_deploy
);
on_both_backends!(
    /// R2/R4: a no-op deploy performs only the namespace GET and reads.
    r2_noop_zero_mutation
);
on_both_backends!(
    /// R16: a crashing pod is reported once (E2, exit code) with exactly one Secret created.
    r16_crash_reported_once
);
on_both_backends!(
    /// R10: a pull failure is E3 at once with no delete.
    r10_pull_failure_reported_without_delete
);
on_both_backends!(
    /// C9: a never-started pod with a changed intent is fence-deleted and recreated.
    c9_wedge_escape_on_changed_intent
);
on_both_backends!(
    /// R14: `CreateContainerConfigError` with its Secret absent: delete and recreate.
    r14_config_error_with_absent_secret_replaced
);
on_both_backends!(
    /// R29: deadline expiry is E1 and deletes nothing.
    r29_deadline_expiry_cleans_nothing
);
on_both_backends!(
    /// The lost create race: the loser drops its own Secret and adopts the winner's pod.
    lost_race_adopts_the_winner
);
on_both_backends!(
    /// R15/R22: 16 concurrent deploys → one pod, 16 × its name, one Secret after GC.
    r15_sixteen_concurrent_deploys_one_pod
);
on_both_backends!(
    /// R21: a foreign pod under the name is E8 with no writes.
    r21_foreign_pod_never_touched
);
on_both_backends!(
    /// status reports every state, reading only.
    status_in_every_state
);
on_both_backends!(
    /// S3: undeploy fence-deletes the started pod, waits, then deletes its Secret.
    s3_undeploy_started_pod
);
on_both_backends!(
    /// S5: undeploy of a foreign pod is E8 with no writes.
    s5_undeploy_foreign_pod_touches_nothing
);
on_both_backends!(
    /// G5/G8: gc keeps a young orphan Secret and collects terminated residue.
    g5_gc_keeps_the_young_orphan
);
