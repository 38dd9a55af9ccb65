//! The flags of the node's apiserver and kubelet, as the recipe's `start.sh` passes them (its
//! README explains each: loopback addresses, the kubelet's cgroupfs without QoS cgroups, the
//! 2 s status period, …), on the ports the caller chose.
//!
//! Layer: test support, plain values. Starts nothing.

use std::path::Path;

/// The apiserver's flags (all but `--secure-port`), as the recipe's `start.sh` has them.
pub(super) fn apiserver_args(certs: &Path, etcd_url: &str) -> Vec<String> {
    let cert = |name: &str| path(&certs.join(name));
    vec![
        format!("--etcd-servers={etcd_url}"),
        "--bind-address=127.0.0.1".into(),
        "--advertise-address=127.0.0.1".into(),
        format!("--tls-cert-file={}", cert("apiserver.crt")),
        format!("--tls-private-key-file={}", cert("apiserver.key")),
        format!("--client-ca-file={}", cert("ca.crt")),
        format!("--token-auth-file={}", cert("tokens.csv")),
        "--authorization-mode=RBAC".into(),
        "--service-account-issuer=https://kubernetes.default.svc".into(),
        format!("--service-account-key-file={}", cert("sa.pub")),
        format!("--service-account-signing-key-file={}", cert("sa.key")),
        "--service-cluster-ip-range=10.0.0.0/24".into(),
        "--allow-privileged=true".into(),
        "--endpoint-reconciler-type=none".into(),
        "--profiling=false".into(),
        "--kubelet-preferred-address-types=InternalIP".into(),
        format!("--kubelet-certificate-authority={}", cert("ca.crt")),
        format!(
            "--kubelet-client-certificate={}",
            cert("apiserver-kubelet-client.crt")
        ),
        format!(
            "--kubelet-client-key={}",
            cert("apiserver-kubelet-client.key")
        ),
    ]
}

/// The kubelet's flags, as the recipe's `start.sh` has them, on free ports.
pub(super) fn kubelet_args(
    node_name: &str,
    dir: &Path,
    socket: &Path,
    port: u16,
    healthz: u16,
) -> Vec<String> {
    let certs = dir.join("certs");
    let kubelet = dir.join("kubelet");
    vec![
        format!("--kubeconfig={}", path(&dir.join("run/kubeconfig-kubelet"))),
        "--container-runtime=remote".into(),
        format!("--container-runtime-endpoint=unix://{}", path(socket)),
        format!("--containerd={}", path(socket)),
        "--runtime-request-timeout=2m".into(),
        "--cgroup-driver=cgroupfs".into(),
        "--cgroups-per-qos=false".into(),
        "--enforce-node-allocatable=".into(),
        "--fail-swap-on=false".into(),
        format!("--hostname-override={node_name}"),
        "--node-ip=127.0.0.1".into(),
        "--address=127.0.0.1".into(),
        format!("--port={port}"),
        "--read-only-port=0".into(),
        "--healthz-bind-address=127.0.0.1".into(),
        format!("--healthz-port={healthz}"),
        format!("--tls-cert-file={}", path(&certs.join("kubelet.crt"))),
        format!(
            "--tls-private-key-file={}",
            path(&certs.join("kubelet.key"))
        ),
        format!("--client-ca-file={}", path(&certs.join("ca.crt"))),
        "--anonymous-auth=false".into(),
        "--authorization-mode=Webhook".into(),
        format!("--root-dir={}", path(&kubelet.join("root"))),
        format!("--cert-dir={}", path(&kubelet.join("pki"))),
        format!(
            "--volume-plugin-dir={}",
            path(&kubelet.join("volume-plugins"))
        ),
        "--pod-infra-container-image=realnode.local/pause:1".into(),
        "--make-iptables-util-chains=false".into(),
        "--cluster-domain=cluster.local".into(),
        "--image-gc-high-threshold=100".into(),
        "--image-gc-low-threshold=99".into(),
        "--eviction-hard=memory.available<100Mi".into(),
        // The default 10 s would delay Ready (and every status after a restart) by 10 s.
        "--node-status-update-frequency=2s".into(),
        "--v=2".into(),
    ]
}

/// A path as a flag value.
fn path(path: &Path) -> String {
    path.display().to_string()
}
