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
    /// The lost create race: the loser drops its own Secret and adopts the winner's pod.
    lost_race_adopts_the_winner
);
on_both_backends!(
    /// R15/R22: 16 concurrent deploys → one pod, 16 × its name, one Secret after GC.
    r15_sixteen_concurrent_deploys_one_pod
);
on_both_backends!(
    /// status reports every state, reading only.
    status_in_every_state
);
on_both_backends!(
    /// G5/G8: gc keeps a young orphan Secret and collects terminated residue.
    g5_gc_keeps_the_young_orphan
);
