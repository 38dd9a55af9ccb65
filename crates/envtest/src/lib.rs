//! Test support for apiary's real-server tier: starts an upstream `kube-apiserver` and `etcd` on
//! loopback (found through `KUBEBUILDER_ASSETS`), and drives pods through the real status
//! subresource with a fake kubelet. Test-only: never a dependency of a library crate.
//!
//! A test starts with
//!
//! ```no_run
//! let Some(plane) = apiary_envtest::shared() else { return };
//! let namespace = plane.namespace("deploy");
//! let kubeconfig = plane.kubeconfig(apiary_envtest::Identity::User, &namespace);
//! # let _ = kubeconfig;
//! ```
//!
//! [`shared`] skips (returns `None` after one line on stderr) when `KUBEBUILDER_ASSETS` is unset
//! or lacks a binary, and panics instead when `APIARY_ENVTEST_REQUIRED=1`. Layer: test support;
//! it decides nothing about apiary.
#![deny(missing_docs)]

pub mod certs;
mod control_plane;
pub mod kubelet;
pub mod node;
pub mod proxy;
mod service_accounts;
pub mod skip;
pub mod stage;
pub mod tap;
pub mod webhook;

use std::io::Write as _;
use std::path::Path;
use std::sync::{Once, OnceLock};

// One path per item: the control plane's items are reached through the crate root only.
pub use control_plane::{
    ControlPlane, Identity, LogGuard, Options, PLANE_VAR, StartError, TestNamespace, is_running,
};
pub use service_accounts::DefaultServiceAccounts;

/// The control plane shared by the tests: the one the test run's wrapper started and names in
/// [`PLANE_VAR`] (`ControlPlane::attach`: shared by every test process of the run, each in
/// namespaces of its own and with an unprivileged user of its own), or else [`private`]'s.
/// `None` means the tier is skipped (the reason went to stderr once).
///
/// # Panics
/// As for [`private`], and when the wrapper's plane cannot be attached to.
pub fn shared() -> Option<&'static ControlPlane> {
    static ATTACHED: OnceLock<Result<ControlPlane, String>> = OnceLock::new();
    let Some(dir) = control_plane::plane_dir() else {
        return private();
    };
    match ATTACHED.get_or_init(|| ControlPlane::attach(&dir).map_err(|e| e.to_string())) {
        Ok(plane) => Some(plane),
        Err(error) => panic!(
            "cannot attach to the shared control plane in {}: {error}",
            dir.display()
        ),
    }
}

/// The control plane of this process, started on first use with [`Options::default`], for tests
/// that need a plane no other process uses (a compaction of etcd, a fake kubelet of every
/// namespace, the fixture's own tests). `None` means the tier is skipped (the reason went to
/// stderr once). Under `cargo nextest` each test is its own process, so each gets its own
/// (measured: 4–4.4 CPU-seconds of apiserver start-up with the default options).
///
/// # Panics
/// When `APIARY_ENVTEST_REQUIRED=1` and the binaries are missing, or when the binaries are
/// there but the control plane fails to start (then every test using it fails with the reason).
pub fn private() -> Option<&'static ControlPlane> {
    static SHARED: OnceLock<Result<ControlPlane, String>> = OnceLock::new();
    let assets = assets()?;
    let plane = SHARED.get_or_init(|| {
        ControlPlane::start_with_assets(&assets, Options::default()).map_err(|e| e.to_string())
    });
    match plane {
        Ok(plane) => Some(plane),
        Err(error) => panic!("the shared envtest control plane did not start: {error}"),
    }
}

/// A control plane of the test's own (for options the shared one lacks, or to stop its
/// apiserver); dropped, it stops. `None` means the tier is skipped, as for [`shared`].
///
/// # Panics
/// As for [`shared`].
pub fn fresh(options: Options) -> Option<ControlPlane> {
    let assets = assets()?;
    match ControlPlane::start_with_assets(&assets, options) {
        Ok(plane) => Some(plane),
        Err(error) => panic!("an envtest control plane did not start: {error}"),
    }
}

/// Reads the environment and acts on [`skip::decide`]: the assets directory, or `None` after
/// printing the skip line, or a panic when the tier is required.
fn assets() -> Option<std::path::PathBuf> {
    let decision = skip::decide(
        std::env::var_os(skip::ASSETS_VAR).as_deref(),
        std::env::var_os(skip::REQUIRED_VAR).as_deref(),
        Path::is_file,
    );
    match decision {
        skip::Decision::Run(dir) => Some(dir),
        skip::Decision::Skip(line) => {
            static SAID: Once = Once::new();
            // Straight to the process's stderr: libtest captures `eprintln!`, and this line
            // must be visible for passing (skipped) tests too.
            SAID.call_once(|| {
                let _unwritable = writeln!(std::io::stderr(), "{line}");
            });
            None
        }
        skip::Decision::Fail(message) => panic!("{message}"),
    }
}
