//! `Cluster`: the kube-rs implementation of `apiary_substrate::Substrate`.
