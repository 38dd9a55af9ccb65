//! End-to-end `apiary demo` (deploy.md § CLI contract, the demo): it runs against its own
//! embedded simulator, narrates every step on stdout (json: one document listing the steps),
//! finishes within 30 s, exits 0, and never reads or writes the user's kubeconfig.

use std::time::{Duration, Instant};

/// A home whose kubeconfig points at a closed port, and a `KUBECONFIG` naming a file that
/// must not be created: the demo must ignore both and leave them unchanged.
fn hostile_home() -> (tempfile::TempDir, std::path::PathBuf, String) {
    let home = tempfile::tempdir().expect("dir");
    let kube = home.path().join(".kube");
    std::fs::create_dir_all(&kube).expect("mkdir");
    let config = kube.join("config");
    let contents =
        apiary_apiserver_sim::kubeconfig_yaml("http://127.0.0.1:9", "should-not-be-used");
    std::fs::write(&config, &contents).expect("write");
    (home, config, contents)
}

/// Text mode: every step narrated with its command and result, exit 0, within 30 s.
#[test]
fn demo_narrates_every_step_and_exits_0() {
    let (home, config, contents) = hostile_home();
    let not_created = home.path().join("never-written");
    let mut cmd = crate::common::bare_command(home.path());
    cmd.env("KUBECONFIG", &not_created).arg("demo");
    let started = Instant::now();
    let run = crate::common::run(cmd);
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_eq!(run.code, 0, "{run:?}");
    for needle in [
        "127.0.0.1",
        "$ apiary -n apiary-demo deploy \"demo agent\"",
        "deploy \"demo twin\"",
        "state: started",
        "$ apiary -n apiary-demo list",
        "demo twin",
        "logs \"demo agent\"",
        "agent ready",
        "exited with code 1",
        "seeds --selector app=demo-ring",
        "undeploy \"demo agent\"",
        "state: absent",
        "gc \"demo crasher\"",
        "Every step behaved as specified.",
    ] {
        assert!(
            run.stdout.contains(needle),
            "stdout lacks {needle:?}:\n{}",
            run.stdout
        );
    }
    assert!(!run.stdout.contains("NOT AS SPECIFIED"));
    assert_eq!(std::fs::read_to_string(&config).expect("read"), contents);
    assert!(!not_created.exists());
}

/// Json mode: exactly one document listing the steps, each ok.
#[test]
fn demo_json_is_one_document_of_steps() {
    let (home, _, _) = hostile_home();
    let mut cmd = crate::common::bare_command(home.path());
    cmd.args(["-o", "json", "demo"]);
    let run = crate::common::run(cmd);
    assert_eq!(run.code, 0, "{run:?}");
    let doc = run.json();
    assert_eq!(doc["ok"], true);
    let steps = doc["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 10);
    for step in steps {
        assert_eq!(step["ok"], true, "{step}");
        assert!(
            step["command"]
                .as_str()
                .is_some_and(|c| c.starts_with("apiary "))
        );
    }
}

/// deploy.md § A quieter, more familiar terminal, item 4: the narration reads top to bottom. With
/// stdout and stderr in one file (as on a terminal), each step's heading comes before the progress
/// that step writes to stderr, and the default log level adds no `INFO` lines to it.
#[test]
fn demo_heading_precedes_each_steps_progress() {
    let (home, _, _) = hostile_home();
    let combined = home.path().join("combined.txt");
    let file = std::fs::File::create(&combined).expect("file");
    let mut cmd = crate::common::bare_command(home.path());
    cmd.arg("demo")
        .stdout(file.try_clone().expect("clone"))
        .stderr(file);
    let status = cmd.status().expect("the demo runs");
    assert!(status.success());
    let text = std::fs::read_to_string(&combined).expect("read");
    let at = |needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("{needle:?} missing:\n{text}"))
    };
    for (heading, progress) in [
        ("1. Deploy an agent", "deploying apiary-demo-agent"),
        (
            "6. Deploy an image that crashes",
            "deploying apiary-demo-crasher",
        ),
        ("8. Undeploy the agent", "undeploying apiary-demo-agent"),
    ] {
        assert!(
            at(heading) < at(progress),
            "{heading} after {progress}:\n{text}"
        );
        let previous = text[..at(heading)].rfind("   ok:").unwrap_or(0);
        assert!(
            !text[previous..at(heading)].contains(progress),
            "progress of {heading} before its heading:\n{text}"
        );
    }
    assert!(
        !text.contains(" INFO "),
        "INFO lines at the default level:\n{text}"
    );
}
