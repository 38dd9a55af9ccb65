//! Whether the real-server tier runs, is skipped, or fails: a pure decision over the two
//! environment values (`KUBEBUILDER_ASSETS`, `APIARY_ENVTEST_REQUIRED`) and which binaries exist.
//!
//! Layer: test support, functional core. This module reads no environment, touches no file system
//! and prints nothing; [`crate::shared`] gathers the inputs and acts on the answer.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The environment variable naming the directory that holds `kube-apiserver` and `etcd` (the
/// envtest convention shared with controller-runtime and `setup-envtest`).
pub const ASSETS_VAR: &str = "KUBEBUILDER_ASSETS";

/// The environment variable that turns a skip into a failure (`1` or `true`), so CI cannot go
/// green without running the tier.
pub const REQUIRED_VAR: &str = "APIARY_ENVTEST_REQUIRED";

/// The binaries the control plane needs inside the assets directory.
pub const BINARIES: [&str; 2] = ["kube-apiserver", "etcd"];

/// How to get the binaries, appended to every skip or failure message.
pub const INSTALL_HINT: &str = "install the binaries with `setup-envtest use 1.30 -p path` and \
     export KUBEBUILDER_ASSETS=<that path>";

/// What to do with the real-server tier in this process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run it with the binaries in this directory.
    Run(PathBuf),
    /// Skip it; the message is the one line to print to stderr.
    Skip(String),
    /// Fail (panic) with this message: the tier is required but cannot run.
    Fail(String),
}

/// Decides whether the tier runs.
///
/// `assets` and `required` are the raw values of [`ASSETS_VAR`] and [`REQUIRED_VAR`] (`None` when
/// unset); `exists` answers whether a file exists. An empty `assets` counts as unset. `required`
/// is on only for `1` or `true` (any case), so `APIARY_ENVTEST_REQUIRED=0` still allows a skip.
pub fn decide(
    assets: Option<&OsStr>,
    required: Option<&OsStr>,
    exists: impl Fn(&Path) -> bool,
) -> Decision {
    let required = required
        .and_then(OsStr::to_str)
        .is_some_and(|value| value == "1" || value.eq_ignore_ascii_case("true"));
    let problem = match assets.filter(|value| !value.is_empty()) {
        None => format!("{ASSETS_VAR} is not set"),
        Some(dir) => {
            let dir = PathBuf::from(dir);
            let missing: Vec<&str> = BINARIES
                .into_iter()
                .filter(|binary| !exists(&dir.join(binary)))
                .collect();
            if missing.is_empty() {
                return Decision::Run(dir);
            }
            format!(
                "{ASSETS_VAR}={} holds no {}",
                dir.display(),
                missing.join(" and no ")
            )
        }
    };
    if required {
        Decision::Fail(format!(
            "the real-server tier is required ({REQUIRED_VAR}=1) but {problem} ({INSTALL_HINT})"
        ))
    } else {
        Decision::Skip(format!(
            "skipping the real-server tier: {problem} ({INSTALL_HINT})"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_exist(_: &Path) -> bool {
        true
    }

    fn none_exist(_: &Path) -> bool {
        false
    }

    /// Without `KUBEBUILDER_ASSETS` the tier is skipped with one line naming setup-envtest.
    #[test]
    fn unset_assets_skip_with_the_setup_envtest_hint() {
        let decision = decide(None, None, all_exist);
        let Decision::Skip(line) = decision else {
            panic!("expected a skip, got {decision:?}");
        };
        assert!(line.starts_with("skipping the real-server tier: KUBEBUILDER_ASSETS is not set"));
        assert!(line.contains("setup-envtest use"), "{line}");
        assert!(!line.contains('\n'), "one line: {line}");
    }

    /// An empty value is as good as none (`KUBEBUILDER_ASSETS= cargo test`).
    #[test]
    fn empty_assets_count_as_unset() {
        assert!(matches!(
            decide(Some(OsStr::new("")), None, all_exist),
            Decision::Skip(line) if line.contains("is not set")
        ));
    }

    /// With both binaries present the tier runs from that directory.
    #[test]
    fn present_binaries_run() {
        assert_eq!(
            decide(
                Some(OsStr::new("/assets")),
                Some(OsStr::new("1")),
                all_exist
            ),
            Decision::Run(PathBuf::from("/assets"))
        );
        assert_eq!(
            decide(Some(OsStr::new("/assets")), None, all_exist),
            Decision::Run(PathBuf::from("/assets"))
        );
    }

    /// A directory missing a binary names which one.
    #[test]
    fn a_missing_binary_is_named() {
        let only_etcd = |path: &Path| path == Path::new("/assets/etcd");
        let decision = decide(Some(OsStr::new("/assets")), None, only_etcd);
        assert_eq!(
            decision,
            Decision::Skip(format!(
                "skipping the real-server tier: KUBEBUILDER_ASSETS=/assets holds no \
                 kube-apiserver ({INSTALL_HINT})"
            ))
        );
        let decision = decide(Some(OsStr::new("/assets")), None, none_exist);
        assert!(
            matches!(&decision, Decision::Skip(line) if line.contains("holds no kube-apiserver and no etcd")),
            "{decision:?}"
        );
    }

    /// `APIARY_ENVTEST_REQUIRED=1` (or `true`) turns every skip into a failure.
    #[test]
    fn required_turns_a_skip_into_a_failure() {
        for value in ["1", "true", "TRUE"] {
            let required = Some(OsStr::new(value));
            let decision = decide(None, required, all_exist);
            assert!(
                matches!(&decision, Decision::Fail(line) if line.contains("KUBEBUILDER_ASSETS is not set") && line.contains("setup-envtest")),
                "{value}: {decision:?}"
            );
            let decision = decide(Some(OsStr::new("/assets")), required, none_exist);
            assert!(
                matches!(&decision, Decision::Fail(line) if line.contains("holds no kube-apiserver")),
                "{value}: {decision:?}"
            );
        }
    }

    /// Other values of `APIARY_ENVTEST_REQUIRED` do not require the tier.
    #[test]
    fn other_required_values_still_skip() {
        for value in ["0", "false", "", "yes please"] {
            let decision = decide(None, Some(OsStr::new(value)), all_exist);
            assert!(
                matches!(decision, Decision::Skip(_)),
                "{value}: {decision:?}"
            );
        }
    }
}
