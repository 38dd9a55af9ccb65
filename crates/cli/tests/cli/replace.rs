//! End-to-end: `apiary deploy --replace` (deploy.md § Replacing a live agent) through the built
//! binary, on the simulator and (with `KUBEBUILDER_ASSETS`) on a real `kube-apiserver` with the
//! fake kubelet: a replace rolls a changed configuration onto the started pod (one fenced delete,
//! the old pod's Secret dropped, then the creates, no warning); with the configuration unchanged it writes nothing; without
//! `--replace` the warning names it; `--help` documents it.
//!
//! Layer: CLI tests over loopback. They decide nothing.

use crate::common::{Fixture, IMAGE, on_both_backends};
use apiary_apiserver_sim::{Resource, Verb};

const AGENT: &str = "Research Bot #1";
const POD: &str = "apiary-research-bot-1-72bea12366a3";

fn uid(fx: &Fixture) -> Option<String> {
    fx.pod(POD).and_then(|p| p.metadata.uid)
}

on_both_backends! {
    /// A replace with a changed configuration: exit 0, the pod name, one pod delete and its
    /// Secret's delete before the creates, a new pod, no "old configuration" warning.
    fn replace_rolls_the_changed_configuration_on(fx) {
        assert_eq!(fx.apiary(&["deploy", AGENT, "--image", IMAGE]).code, 0);
        let old = uid(&fx);
        fx.clear_requests();
        let run = fx.apiary(&["deploy", AGENT, "--image", IMAGE, "--cpu-limit", "3", "--replace"]);
        assert_eq!(run.code, 0, "{run:?}");
        assert_eq!(run.stdout, format!("{POD}\n"));
        assert!(!run.stderr.contains("old configuration"), "{}", run.stderr);
        let mutations = fx.mutations();
        assert_eq!(mutations.len(), 4, "{mutations:?}");
        assert!(mutations[0].starts_with("DELETE ") && mutations[0].ends_with(POD), "{mutations:?}");
        assert!(mutations[1].starts_with("DELETE ") && mutations[1].contains("/secrets/"));
        assert!(mutations[2].starts_with("POST ") && mutations[2].ends_with("/secrets"));
        assert!(mutations[3].starts_with("POST ") && mutations[3].ends_with("/pods"));
        assert_ne!(uid(&fx), old);
        assert_eq!(fx.pod_names(), [POD]);
        assert_eq!(fx.secret_names().len(), 1, "the old pod's Secret went with it");
        // deploy.md § Replacing a live agent, rule 1a: the new pod's create was checked by a dry
        // run, under a generated name, before the running pod was deleted.
        let requests = fx.requests();
        let dry_run = requests.iter().position(|r| r.is_dry_run());
        let delete = requests.iter().position(|r| r.method == "DELETE");
        assert!(dry_run.is_some() && dry_run < delete, "{requests:?}");
        let checked = requests[dry_run.unwrap()].body_json().expect("a pod");
        assert_eq!(checked["metadata"]["generateName"], format!("{POD}-"));
        assert!(checked["metadata"]["name"].is_null());
    }

    /// deploy.md § Replacing a live agent, rule 1a: a replace whose new pod the API server
    /// refuses to create (here: the caller may no longer create pods) fails with E17 at the dry
    /// run, before anything is deleted: the running pod keeps running, nothing is written.
    fn a_replace_the_api_server_would_refuse_keeps_the_running_pod(mut fx) {
        assert_eq!(fx.apiary(&["deploy", AGENT, "--image", IMAGE]).code, 0);
        let old = uid(&fx);
        fx.deny(Verb::Create, Some(Resource::Pods));
        fx.clear_requests();
        let run = fx.apiary(&["deploy", AGENT, "--image", IMAGE, "--cpu-limit", "3", "--replace"]);
        assert_eq!(run.code, 1, "{run:?}");
        assert!(run.stderr.contains("the new pod of --replace would not be created"), "{}", run.stderr);
        assert!(run.stderr.contains("403"), "{}", run.stderr);
        assert!(
            run.stderr.contains(&format!("the running pod {POD} keeps its old configuration")),
            "{}",
            run.stderr
        );
        assert!(fx.mutations().is_empty(), "{:?}", fx.mutations());
        assert!(fx.requests().iter().any(|r| r.is_dry_run()), "{:?}", fx.requests());
        assert_eq!(uid(&fx), old, "the running pod is kept");
    }

    /// `--replace` with the configuration unchanged is the usual no-op: nothing written (json
    /// form: the usual document).
    fn replace_with_the_same_configuration_writes_nothing(fx) {
        assert_eq!(fx.apiary(&["deploy", AGENT, "--image", IMAGE]).code, 0);
        fx.clear_requests();
        let run = fx.apiary(&["-o", "json", "deploy", AGENT, "--image", IMAGE, "--replace"]);
        assert_eq!(run.code, 0, "{run:?}");
        assert_eq!(run.json()["pod"], POD);
        assert_eq!(run.json()["state"], "started");
        assert!(fx.mutations().is_empty(), "{:?}", fx.mutations());
    }

    /// Without `--replace` the started pod is kept, and the warning names the flag.
    fn the_kept_pod_warning_names_replace(fx) {
        assert_eq!(fx.apiary(&["deploy", AGENT, "--image", IMAGE]).code, 0);
        fx.clear_requests();
        let run = fx.apiary(&["deploy", AGENT, "--image", IMAGE, "--cpu-limit", "3"]);
        assert_eq!(run.code, 0, "{run:?}");
        assert!(run.stderr.contains("deploy again with --replace"), "{}", run.stderr);
        assert!(fx.mutations().is_empty(), "{:?}", fx.mutations());
        assert!(!fx.requests().iter().any(|r| r.is(Verb::Delete, Resource::Pods)));
    }
}

/// `deploy --help` documents `--replace` and its default.
#[test]
fn deploy_help_documents_replace() {
    let fx = Fixture::on_sim();
    let run = fx.apiary(&["deploy", "--help"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("--replace"), "{}", run.stdout);
    assert!(run.stdout.contains("keep a started pod"), "{}", run.stdout);
}

on_both_backends! {
    /// deploy.md § Replacing a live agent: a rotated value (same keys, so the same intent) is
    /// kept without `--replace` (status names the key), and rolled on with it: one fenced delete,
    /// then the creates. No value is ever printed.
    fn replace_rolls_a_changed_environment_value_on(fx) {
        let old = "API_KEY=old-value-7c1e";
        let new = "API_KEY=new-value-93ad";
        assert_eq!(fx.apiary(&["deploy", AGENT, "--image", IMAGE, "--env", old]).code, 0);
        fx.clear_requests();
        let kept = fx.apiary(&["deploy", AGENT, "--image", IMAGE, "--env", new]);
        assert_eq!(kept.code, 0, "{kept:?}");
        assert!(fx.mutations().is_empty(), "{:?}", fx.mutations());
        let status = fx.apiary(&["status", AGENT, "--image", IMAGE, "--env", new]);
        assert_eq!(status.code, 0, "{status:?}");
        assert!(status.stdout.contains("intent: matches"), "{status:?}");
        assert!(status.stdout.contains("environment differs: API_KEY"), "{status:?}");
        let same = fx.apiary(&["-o", "json", "status", AGENT, "--image", IMAGE, "--env", old]);
        assert_eq!(same.json()["environment_differs"], serde_json::json!([]), "{same:?}");
        let before = uid(&fx);
        fx.clear_requests();
        let run = fx.apiary(&["deploy", AGENT, "--image", IMAGE, "--env", new, "--replace"]);
        assert_eq!(run.code, 0, "{run:?}");
        let mutations = fx.mutations();
        assert_eq!(mutations.len(), 4, "{mutations:?}");
        assert!(mutations[0].starts_with("DELETE ") && mutations[0].ends_with(POD), "{mutations:?}");
        assert!(mutations[1].starts_with("DELETE ") && mutations[1].contains("/secrets/"));
        assert_ne!(uid(&fx), before);
        for output in [&kept, &status, &same, &run] {
            for value in ["old-value-7c1e", "new-value-93ad"] {
                assert!(!output.stdout.contains(value) && !output.stderr.contains(value), "{output:?}");
            }
        }
        fx.clear_requests();
        let again = fx.apiary(&["deploy", AGENT, "--image", IMAGE, "--env", new, "--replace"]);
        assert_eq!(again.code, 0, "{again:?}");
        assert!(fx.mutations().is_empty(), "the same value: nothing written {:?}", fx.mutations());
    }
}
