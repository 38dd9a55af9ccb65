//! How apiary was invoked (deploy.md § A quieter, more familiar terminal, item 3): run through a
//! symlink or copy named `kubectl-apiary`, kubectl's plugin convention, it is `kubectl apiary`, and
//! usage, `--help` and `--version` say so; under any other name it is `apiary`.
//!
//! Shell layer: it only names the clap command after `argv[0]`. It must not change what any flag
//! means, and must not pick up arbitrary program names (a build artefact such as
//! `apiary-3f2a…` or a renamed copy still says `apiary`, so documentation and scripts stay true).

use std::ffi::OsStr;
use std::path::Path;

use clap::CommandFactory;

use crate::args::Cli;

/// The executable name kubectl looks for on PATH to run `kubectl apiary`.
pub const PLUGIN_EXECUTABLE: &str = "kubectl-apiary";

/// The name apiary shows for itself when invoked as `argv0`: `kubectl apiary` for the kubectl
/// plugin executable (any directory, with or without `.exe`), else `apiary`.
pub fn display_name(argv0: Option<&OsStr>) -> &'static str {
    let stem = argv0
        .map(Path::new)
        .and_then(Path::file_stem)
        .and_then(OsStr::to_str);
    if stem == Some(PLUGIN_EXECUTABLE) {
        "kubectl apiary"
    } else {
        "apiary"
    }
}

/// The clap command for this invocation: the derive definition, named after `argv[0]` for usage
/// lines (`bin_name`), the help header and `--version` (`display_name`).
pub fn command(argv0: Option<&OsStr>) -> clap::Command {
    let name = display_name(argv0);
    Cli::command().bin_name(name).display_name(name)
}

#[cfg(test)]
mod tests {
    //! `argv[0]` → the shown name; the end-to-end check through a real symlink is
    //! `tests/kubectl_plugin.rs`.

    use super::*;

    /// Only the plugin executable's name, in any directory, becomes `kubectl apiary`.
    #[test]
    fn only_the_plugin_executable_is_kubectl_apiary() {
        for argv0 in [
            "kubectl-apiary",
            "/usr/local/bin/kubectl-apiary",
            "./kubectl-apiary",
            r"kubectl-apiary.exe",
        ] {
            assert_eq!(
                display_name(Some(OsStr::new(argv0))),
                "kubectl apiary",
                "{argv0}"
            );
        }
        for argv0 in [
            "apiary",
            "/home/me/.cargo/bin/apiary",
            "target/debug/deps/apiary-3f2a9c",
            "kubectl-apiary-old",
            "kubectl",
            "",
        ] {
            assert_eq!(display_name(Some(OsStr::new(argv0))), "apiary", "{argv0}");
        }
        assert_eq!(display_name(None), "apiary");
    }

    /// The usage line and the version text carry the shown name.
    #[test]
    fn usage_and_version_carry_the_name() {
        let mut plugin = command(Some(OsStr::new("/x/kubectl-apiary")));
        assert!(
            plugin
                .render_usage()
                .to_string()
                .contains("kubectl apiary [OPTIONS] <COMMAND>")
        );
        assert_eq!(
            plugin.render_version(),
            format!("kubectl apiary {}\n", env!("CARGO_PKG_VERSION"))
        );
        let mut plain = command(Some(OsStr::new("apiary")));
        assert!(
            plain
                .render_usage()
                .to_string()
                .contains("apiary [OPTIONS] <COMMAND>")
        );
        assert!(!plain.render_usage().to_string().contains("kubectl"));
    }
}
