//! Whether the real-node tier can start on this machine, is skipped, or fails: a pure decision
//! over who runs the tests, which programs exist and whether the tier is required.
//!
//! Layer: test support, functional core. It reads no environment, touches no file system and
//! prints nothing; the node wrapper and [`super::check_machine`] gather the inputs and act on
//! the answer.

use std::ffi::OsStr;

/// The environment variable that turns a skipped node tier into a failure (`1` or `true`).
pub const REQUIRED_VAR: &str = "APIARY_NODE_REQUIRED";

/// The Debian packages the node needs, as `.ci/run` installs them.
pub const PACKAGES: &str =
    "containerd runc containernetworking-plugins docker-registry busybox-static apache2-utils";

/// What the node's processes and its recipe's scripts call, with the package each comes from.
/// A program is found when it is on `PATH` (or, for an absolute path, when the file exists).
pub const PROGRAMS: [(&str, &str); 13] = [
    ("containerd", "containerd"),
    ("containerd-shim-runc-v2", "containerd"),
    ("ctr", "containerd"),
    ("runc", "runc"),
    ("/usr/lib/cni/bridge", "containernetworking-plugins"),
    ("/usr/lib/cni/host-local", "containernetworking-plugins"),
    ("/usr/lib/cni/loopback", "containernetworking-plugins"),
    ("docker-registry", "docker-registry"),
    ("/bin/busybox", "busybox-static"),
    ("htpasswd", "apache2-utils"),
    ("openssl", "openssl"),
    ("gcc", "gcc"),
    ("python3", "python3"),
];

/// What to do with the node tier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Everything is there: start the node.
    Run,
    /// Skip the tier; the message is the one line to print.
    Skip(String),
    /// Fail: the tier is required but cannot run; the message says what is missing.
    Fail(String),
}

/// Decides whether the node can start. `root` says whether the process runs as uid 0 (the
/// kubelet, containerd and the bridge need it), `found` whether a program of [`PROGRAMS`]
/// exists, `recipe_found` whether the recipe directory (`shared/node`) with its scripts exists,
/// and `required` is the raw value of [`REQUIRED_VAR`].
pub fn decide(
    root: bool,
    found: impl Fn(&str) -> bool,
    recipe_found: bool,
    required: Option<&OsStr>,
) -> Decision {
    let required = required
        .and_then(OsStr::to_str)
        .is_some_and(|value| value == "1" || value.eq_ignore_ascii_case("true"));
    let mut problems = Vec::new();
    if !root {
        problems.push("the tests do not run as root".to_owned());
    }
    if !recipe_found {
        problems.push(
            "the node recipe (shared/node beside the repository, or APIARY_NODE_RECIPE) is missing"
                .to_owned(),
        );
    }
    let mut missing: Vec<String> = Vec::new();
    for (program, package) in PROGRAMS {
        if !found(program) {
            missing.push(format!("{program} ({package})"));
        }
    }
    if !missing.is_empty() {
        problems.push(format!("missing {}", missing.join(", ")));
    }
    if problems.is_empty() {
        return Decision::Run;
    }
    let hint =
        format!("as root: apt-get install --no-install-recommends {PACKAGES} gcc python3 openssl");
    let problem = problems.join("; ");
    if required {
        Decision::Fail(format!(
            "the real-node tier is required ({REQUIRED_VAR}=1) but {problem} ({hint})"
        ))
    } else {
        Decision::Skip(format!("skipping the real-node tier: {problem} ({hint})"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn everything(_: &str) -> bool {
        true
    }

    /// Root, every program and the recipe: the node starts, whatever the required flag says.
    #[test]
    fn everything_present_runs() {
        assert_eq!(decide(true, everything, true, None), Decision::Run);
        assert_eq!(
            decide(true, everything, true, Some(OsStr::new("1"))),
            Decision::Run
        );
    }

    /// A missing program is named with its package, on one line, and skipped when not required.
    #[test]
    fn a_missing_program_is_named_with_its_package() {
        let decision = decide(true, |p| p != "runc", true, None);
        let Decision::Skip(line) = decision else {
            panic!("expected a skip, got {decision:?}");
        };
        assert!(
            line.starts_with("skipping the real-node tier: missing runc (runc)"),
            "{line}"
        );
        assert!(line.contains("apt-get install"), "{line}");
        assert!(!line.contains('\n'), "{line}");
    }

    /// Every program of the list is checked: each one alone missing is reported.
    #[test]
    fn every_program_is_checked() {
        for (program, package) in PROGRAMS {
            let decision = decide(true, |p| p != program, true, None);
            let Decision::Skip(line) = decision else {
                panic!("{program}: expected a skip, got {decision:?}");
            };
            assert!(line.contains(&format!("{program} ({package})")), "{line}");
        }
    }

    /// Without root or without the recipe the tier cannot run either, and says why.
    #[test]
    fn not_root_and_no_recipe_are_reported() {
        let decision = decide(false, everything, false, None);
        let Decision::Skip(line) = decision else {
            panic!("expected a skip, got {decision:?}");
        };
        assert!(line.contains("not run as root"), "{line}");
        assert!(line.contains("recipe"), "{line}");
    }

    /// `APIARY_NODE_REQUIRED=1` (or `true`, any case) turns the skip into a failure; `0` does not.
    #[test]
    fn required_turns_a_skip_into_a_failure() {
        for value in ["1", "true", "TRUE"] {
            let decision = decide(false, everything, true, Some(OsStr::new(value)));
            assert!(
                matches!(&decision, Decision::Fail(m) if m.contains("APIARY_NODE_REQUIRED=1")),
                "{value}: {decision:?}"
            );
        }
        let decision = decide(false, everything, true, Some(OsStr::new("0")));
        assert!(matches!(decision, Decision::Skip(_)), "{decision:?}");
    }
}
