//! End-to-end: `apiary list` (deploy.md § list) through the built binary: the table and the JSON
//! array, sorted by agent; foreign pods skipped and counted on stderr; `--selector` narrowing;
//! `--all`'s absent rows; exactly one pod LIST and one Secret LIST whatever the number of agents
//! (one request per 500 objects); and the exit-2 refusals, which send nothing. Scenarios that need
//! no simulator-only control run on both backends.

use crate::common::{Fixture, IMAGE, on_both_backends};
use apiary_apiserver_sim::{Resource, Verb};

const AGENT: &str = "Research Bot #1";
const POD: &str = "apiary-research-bot-1-72bea12366a3";
const OTHER: &str = "Release Notes Drafting Helper - EU";
const OTHER_POD: &str = "apiary-release-notes-drafting-helper-f9b32d5e68dd";

/// How many LIST requests of `resource` the server received.
fn lists(fx: &Fixture, resource: Resource) -> usize {
    fx.requests()
        .iter()
        .filter(|r| r.is(Verb::List, resource))
        .count()
}

on_both_backends! {
    /// The table has a header and one row per agent, sorted by agent name; a foreign pod
    /// carrying apiary's labels is skipped and counted on stderr; one pod LIST, one Secret LIST
    /// and nothing else were sent.
    fn list_shows_each_agent_once_sorted_and_skips_foreign_pods(fx) {
        let other = fx.insert_attempt(OTHER, IMAGE, true, false);
        fx.insert_attempt(AGENT, IMAGE, true, false);
        fx.insert_foreign_pod(&other.pod, "apiary-impostor-000000000000");
        let run = fx.apiary(&["list"]);
        assert_eq!(run.code, 0, "{run:?}");
        let lines: Vec<&str> = run.stdout.lines().collect();
        assert_eq!(lines.len(), 3, "{}", run.stdout);
        assert!(lines[0].starts_with("AGENT"), "{}", run.stdout);
        // Byte order of the names: "Rel…" before "Res…".
        assert!(lines[1].starts_with(OTHER), "{}", run.stdout);
        assert!(lines[1].contains(OTHER_POD), "{}", run.stdout);
        assert!(lines[2].starts_with(AGENT), "{}", run.stdout);
        assert!(lines[2].contains(POD), "{}", run.stdout);
        assert!(lines[1].contains("registry.example.com/team/agent@sha256:aaaaaaaaaaaa"));
        assert!(run.stderr.contains("skipped 1 pod(s)"), "{}", run.stderr);
        assert_eq!(lists(&fx, Resource::Pods), 1);
        assert_eq!(lists(&fx, Resource::Secrets), 1);
        let others: Vec<_> = fx
            .requests()
            .iter()
            .filter(|r| {
                r.target.is_some()
                    && !r.is(Verb::List, Resource::Pods)
                    && !r.is(Verb::List, Resource::Secrets)
            })
            .map(|r| format!("{} {}", r.method, r.path))
            .collect();
        assert!(others.is_empty(), "only the two lists: {others:?}");
    }

    /// JSON mode: one document, an array of row objects with every documented key.
    fn list_json_is_one_array(fx) {
        fx.insert_attempt(AGENT, IMAGE, true, false);
        let run = fx.apiary(&["-o", "json", "list"]);
        assert_eq!(run.code, 0, "{run:?}");
        let doc = run.json();
        let rows = doc.as_array().expect("an array");
        assert_eq!(rows.len(), 1);
        let row = &rows[0];
        assert_eq!(row["agent"], AGENT);
        assert_eq!(
            row["agent_id"],
            "72bea12366a35432ab394024ae44c214b8cee51a8e1c04be8797a1dc17805c98"
        );
        assert_eq!(row["namespace"], fx.namespace());
        assert_eq!(row["pod"], POD);
        assert!(row["state"].is_string());
        assert!(row["age_seconds"].is_i64(), "{row}");
        assert_eq!(row["image"]["repository"], "registry.example.com/team/agent");
        assert_eq!(row["image"]["digest"], "sha256:aaaaaaaaaaaa");
        assert!(row["expires_at"].is_null());
        assert_eq!(row["secrets"], 1);
        assert!(row["workspace"].is_null(), "{row}");
        let keys = row.as_object().map(|o| o.len());
        assert_eq!(keys, Some(12), "{row}");
    }

    /// `--selector` narrows by label (ANDed with apiary's marker label, in both lists).
    fn list_selector_narrows(fx) {
        fx.insert_attempt(AGENT, IMAGE, true, false);
        fx.insert_attempt(OTHER, IMAGE, true, false);
        let run = fx.apiary(&[
            "-o",
            "json",
            "list",
            "--selector",
            "apiary.dev/agent=f9b32d5e68dde69e024b9bb5268f0b7a",
        ]);
        assert_eq!(run.code, 0, "{run:?}");
        let doc = run.json();
        let agents: Vec<_> = doc
            .as_array()
            .expect("array")
            .iter()
            .map(|r| r["agent"].clone())
            .collect();
        assert_eq!(agents, [OTHER]);
        for r in fx.requests().iter().filter(|r| r.target.is_some()) {
            let selector = r.query_param("labelSelector").unwrap_or_default();
            assert!(
                selector.contains("app.kubernetes.io/managed-by=apiary")
                    && selector.contains("apiary.dev/agent=f9b32d5e68dde69e024b9bb5268f0b7a"),
                "{selector}"
            );
        }
    }

    /// An empty namespace lists nothing: empty stdout, `[]` in json mode, exit 0.
    fn list_of_an_empty_namespace(fx) {
        let run = fx.apiary(&["list"]);
        assert_eq!(run.code, 0, "{run:?}");
        assert_eq!(run.stdout, "");
        let json = fx.apiary(&["list", "-o", "json"]);
        assert_eq!(json.json(), serde_json::json!([]));
    }
}

/// `--all` adds an agent that has Secrets but no pod, as `absent` with its Secret count; without
/// `--all` it is not shown.
#[test]
fn list_all_shows_agents_with_only_secrets_as_absent() {
    let fx = Fixture::start();
    fx.insert_attempt(AGENT, IMAGE, true, false);
    let orphan = apiary_substrate::build::build_attempt(
        &fx.config(OTHER, IMAGE),
        apiary_substrate::naming::Generation::from_u32(7),
    );
    let second = apiary_substrate::build::build_attempt(
        &fx.config(OTHER, IMAGE),
        apiary_substrate::naming::Generation::from_u32(8),
    );
    fx.with_model(|m| {
        m.insert_secret(orphan.secret).expect("secret");
        m.insert_secret(second.secret).expect("secret");
    });
    let plain = fx.apiary(&["-o", "json", "list"]);
    assert_eq!(plain.json().as_array().map(Vec::len), Some(1));
    let all = fx.apiary(&["-o", "json", "list", "--all"]);
    assert_eq!(all.code, 0, "{all:?}");
    let doc = all.json();
    let rows = doc.as_array().expect("array");
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["agent"], OTHER);
    assert_eq!(rows[0]["state"], "absent");
    assert_eq!(rows[0]["pod"], serde_json::Value::Null);
    assert_eq!(rows[0]["secrets"], 2);
    assert_eq!(rows[1]["agent"], AGENT);
    let text = fx.apiary(&["list", "--all"]);
    let first = text.stdout.lines().nth(1).expect("a row");
    assert!(
        first.starts_with(OTHER) && first.contains("absent"),
        "{first}"
    );
}

/// Whatever the number of agents, `list` costs one paginated pod LIST and one paginated Secret
/// LIST: 1,200 agents take three pages of 500 each, and no other request.
#[test]
fn list_requests_do_not_grow_with_agents_beyond_pages() {
    let fx = Fixture::start();
    let attempts: Vec<_> = (0..1_200)
        .map(|i| {
            apiary_substrate::build::build_attempt(
                &fx.config(&format!("agent {i:04}"), IMAGE),
                apiary_substrate::naming::Generation::from_u32(1),
            )
        })
        .collect();
    fx.with_model(|m| {
        for attempt in attempts {
            m.insert_secret(attempt.secret).expect("secret");
            m.insert_pod_with_script(attempt.pod, apiary_cluster_model::kubelet::PodScript::Inert)
                .expect("pod");
        }
    });
    fx.clear_requests();
    let run = fx.apiary(&["-o", "json", "list"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc = run.json();
    let rows = doc.as_array().expect("array");
    assert_eq!(rows.len(), 1_200);
    assert_eq!(rows[0]["agent"], "agent 0000");
    assert_eq!(rows[1_199]["agent"], "agent 1199");
    let requests = fx.requests();
    let pages: Vec<_> = requests
        .iter()
        .map(|r| {
            (
                r.target,
                r.query_param("limit"),
                r.query_param("continue").is_some(),
            )
        })
        .collect();
    assert_eq!(lists(&fx, Resource::Pods), 3, "{pages:?}");
    assert_eq!(lists(&fx, Resource::Secrets), 3, "{pages:?}");
    assert_eq!(requests.len(), 6, "{pages:?}");
    assert!(
        requests
            .iter()
            .all(|r| r.query_param("limit").as_deref() == Some("500")
                && r.query_param("resourceVersion").is_none()),
        "{pages:?}"
    );
}

/// Bad input is refused with exit 2 before any request, naming the flag; in json mode as one
/// error document.
#[test]
fn list_refusals_send_nothing() {
    let fx = Fixture::start();
    for bad in ["", " ", "a=b,", "a=b,,c=d"] {
        let run = fx.apiary(&["list", "--selector", bad]);
        assert_eq!(run.code, 2, "{bad:?}: {run:?}");
        assert!(run.stdout.is_empty());
        assert!(run.stderr.contains("--selector"), "{}", run.stderr);
    }
    let json = fx.apiary(&["-o", "json", "list", "--selector", ""]);
    assert_eq!(json.code, 2);
    assert!(
        json.json()["error"]
            .as_str()
            .is_some_and(|e| e.contains("--selector"))
    );
    fx.assert_no_requests("list refusals");
}
