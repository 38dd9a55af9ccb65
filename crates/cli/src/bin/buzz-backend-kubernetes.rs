//! `buzz-backend-kubernetes`: apiary as the buzz desktop's Kubernetes provider (docs/buzz-provider.md).
//! Shell only: reads stdin, writes exactly one JSON line on stdout; every rule lives in `apiary-buzz`.

fn main() {}
