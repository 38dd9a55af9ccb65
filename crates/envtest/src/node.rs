//! The real node: the upstream kubelet v1.20.2 registered against a real control plane, with
//! containerd and runc, CNI bridge networking confined to the machine, and two loopback image
//! registries (one behind htpasswd), built from the recipe in `shared/node` (its README lists
//! the facts this module relies on). The referee for everything a kubelet decides.
//!
//! One node per machine (the kubelet's `/var/log/pods`, the registries' ports and the bridge
//! are machine-wide), so it is started once per test run, not per test: `apiary-node -- CMD`
//! ([`Node::start`], then `CMD` with `APIARY_NODE` naming the node, then the stop) wraps the
//! whole run, and each test calls [`shared`] for a [`NodeHandle`] and a namespace of its own.
//!
//! ```no_run
//! # async fn f() {
//! let Some(node) = apiary_envtest::node::shared() else { return };
//! let namespace = node.namespace("deploy").await;
//! let kubeconfig = node.kubeconfig(&namespace);
//! # let _ = kubeconfig;
//! # }
//! ```
//!
//! Layer: test support. It decides nothing about apiary, addresses only loopback and the node's
//! own bridge, and never prints a token.

mod boot;
mod flags;
mod handle;
mod info;
pub mod prerequisites;

use std::ffi::OsStr;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Once, OnceLock};

pub use boot::{BootError, NODE_NAME, Node};
pub use handle::{NodeHandle, NodeNamespace, PrivateApiserver};
pub use info::{Images, NodeInfo};
pub use prerequisites::{Decision, REQUIRED_VAR};

/// The environment variable naming the directory of the running node (set by `apiary-node`).
pub const NODE_VAR: &str = "APIARY_NODE";

/// The environment variable naming the recipe directory, when it is not `shared/node` beside
/// the repository.
pub const RECIPE_VAR: &str = "APIARY_NODE_RECIPE";

/// The handle on the node of this test run. `None` means the tier is skipped (one line went to
/// stderr): no node is running. With `APIARY_NODE_REQUIRED=1` that is a panic instead.
///
/// # Panics
/// When the tier is required and no node runs, or the node's info cannot be read.
pub fn shared() -> Option<&'static NodeHandle> {
    static SHARED: OnceLock<NodeHandle> = OnceLock::new();
    if let Some(handle) = SHARED.get() {
        return Some(handle);
    }
    let Some(dir) = std::env::var_os(NODE_VAR).filter(|v| !v.is_empty()) else {
        let line = format!(
            "skipping the real-node tier: {NODE_VAR} is not set (run the tests under \
             `cargo run -p apiary-envtest --example apiary_node -- cargo nextest run …`, as root)"
        );
        if required(std::env::var_os(REQUIRED_VAR).as_deref()) {
            panic!("the real-node tier is required ({REQUIRED_VAR}=1) but {line}");
        }
        static SAID: Once = Once::new();
        SAID.call_once(|| {
            let _unwritable = writeln!(std::io::stderr(), "{line}");
        });
        return None;
    };
    let handle = NodeHandle::open(Path::new(&dir)).unwrap_or_else(|e| {
        panic!(
            "cannot read the node in {}: {e}",
            PathBuf::from(&dir).display()
        )
    });
    Some(SHARED.get_or_init(|| handle))
}

/// The recipe directory: `APIARY_NODE_RECIPE`, else `shared/node` beside the repository.
pub fn recipe_dir() -> PathBuf {
    match std::env::var_os(RECIPE_VAR).filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/node"),
    }
}

/// Gathers the inputs of [`prerequisites::decide`] from this machine.
pub fn check_machine() -> Decision {
    let root = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("Uid:"))
                .and_then(|ids| ids.split_whitespace().nth(1).map(|euid| euid == "0"))
        })
        .unwrap_or(false);
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = |program: &str| {
        if program.starts_with('/') {
            return Path::new(program).is_file();
        }
        std::env::split_paths(&path)
            .chain(["/usr/sbin", "/sbin"].map(PathBuf::from))
            .any(|dir| dir.join(program).is_file())
    };
    let recipe = recipe_dir();
    let recipe_found = ["setup.sh", "images.sh", "stop.sh"]
        .iter()
        .all(|script| recipe.join(script).is_file());
    prerequisites::decide(
        root,
        found,
        recipe_found,
        std::env::var_os(REQUIRED_VAR).as_deref(),
    )
}

fn required(value: Option<&OsStr>) -> bool {
    value
        .and_then(OsStr::to_str)
        .is_some_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
}
