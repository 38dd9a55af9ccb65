//! End-to-end: `apiary deploy --min-running` (deploy.md § Staying up) through the built binary on
//! the simulator: a bad duration, or a window not shorter than the timeout, is refused with exit 2
//! before any request; `--help` documents the default; a valid window on a pod that stays up
//! deploys.
//!
//! Layer: CLI tests over loopback. They decide nothing.

use crate::common::{Fixture, IMAGE};

const AGENT: &str = "Research Bot #1";
const POD: &str = "apiary-research-bot-1-72bea12366a3";

/// Bad durations and a window as long as the timeout: exit 2, the flag named, no request.
#[test]
fn bad_windows_are_refused_before_any_request() {
    let fx = Fixture::on_sim();
    for (args, needle) in [
        (vec!["--min-running", "3x"], "is not a duration"),
        (vec!["--min-running", "1.5s"], "is not a duration"),
        (vec!["--min-running=-1"], "is not a duration"),
        (vec!["--min-running", "60", "--timeout", "60"], "--timeout"),
        (vec!["--min-running", "10m"], "--timeout"),
    ] {
        let mut all = vec!["deploy", AGENT, "--image", IMAGE];
        all.extend(args.iter().copied());
        let run = fx.apiary(&all);
        assert_eq!(run.code, 2, "{all:?}: {run:?}");
        assert!(run.stderr.contains("--min-running"), "{}", run.stderr);
        assert!(run.stderr.contains(needle), "{}", run.stderr);
        fx.assert_no_requests(&format!("{all:?}"));
    }
}

/// `deploy --help` documents `--min-running` and its default.
#[test]
fn deploy_help_documents_min_running() {
    let fx = Fixture::on_sim();
    let run = fx.apiary(&["deploy", "--help"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains("--min-running <DURATION>"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("[default: 0s"), "{}", run.stdout);
}

/// A valid window on a pod that stays up: exit 0 and the pod name.
#[test]
fn a_valid_window_deploys() {
    let fx = Fixture::on_sim();
    let run = fx.apiary(&["deploy", AGENT, "--image", IMAGE, "--min-running", "1s"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, format!("{POD}\n"));
}
