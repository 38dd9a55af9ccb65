//! Test support for apiary's real-server tier: starts an upstream `kube-apiserver` and `etcd` on
//! loopback (found through `KUBEBUILDER_ASSETS`), and drives pods through the real status
//! subresource with a fake kubelet. Test-only: never a dependency of a library crate.
