//! End-to-end `apiary seeds` (seeds.md § CLI contract, K39): sorted text output with IPv6
//! bracketed, the json shape with all six skip keys, the zero-address diagnostic (exit 1), the 403
//! RBAC hint, the namespace rule, `--ip-family` and `--require-running` (with the refusal of a bad
//! family), and `--watch` until SIGTERM. Each scenario runs twice (README.md § Testing):
//! `<name>::sim` against the loopback simulator and `<name>::real` against a real `kube-apiserver`
//! with the fake kubelet (skipped without `KUBEBUILDER_ASSETS`).

use std::io::{BufRead, BufReader};

use crate::common::{Fixture, on_both_backends};
use apiary_apiserver_sim::{Resource, Verb};

/// `seeds --selector app=ring` followed by `flags`.
fn ring<'a>(flags: &[&'a str]) -> Vec<&'a str> {
    [&["seeds", "--selector", "app=ring"][..], flags].concat()
}

/// `args` in json mode (`-o json` before the subcommand).
fn json<'a>(args: &[&'a str]) -> Vec<&'a str> {
    [&["-o", "json"][..], args].concat()
}

/// Inserts a `ring` seed pod on port 7000 with the pod status `status`, deletion-marked when
/// `deleting`.
fn ring_pod(fx: &Fixture, name: &str, status: serde_json::Value, deleting: bool) {
    let status = serde_json::from_value(status).expect("status");
    fx.insert_inert_pod(fx.seed_pod(name, "ring", 7000), status, deleting);
}

on_both_backends! {
    /// Three started pods, one terminating pod and one IPv6 pod: sorted, IPv6 last and bracketed.
    fn k39_text_is_sorted_with_ipv6_bracketed_and_json_has_every_skip_key(fx) {
        fx.start_seed_pods("ring", &["ring-a", "ring-b", "ring-c"]);
        let v6 = serde_json::json!({
            "phase": "Running", "podIP": "fd00::2", "podIPs": [{"ip": "fd00::2"}]
        });
        ring_pod(&fx, "ring-v6", v6, false);
        let dying = serde_json::json!({"phase": "Running", "podIP": "10.9.9.9"});
        ring_pod(&fx, "ring-dying", dying, true);
        let run = fx.apiary(&ring(&["--port", "7000"]));
        assert_eq!(run.code, 0, "{run:?}");
        let lines: Vec<&str> = run.stdout.lines().collect();
        assert_eq!(lines.len(), 4, "{}", run.stdout);
        assert_eq!(lines[3], "[fd00::2]:7000");
        let mut sorted = lines.clone();
        sorted.sort_by_key(|l| l.parse::<std::net::SocketAddr>().expect("socket address"));
        assert_eq!(lines, sorted);
        assert!(
            !run.stdout.contains("10.9.9.9"),
            "terminating pods are excluded"
        );

        let doc = fx.apiary(&json(&ring(&["--port-name", "gossip"]))).json();
        assert_eq!(doc["addresses"].as_array().map(Vec::len), Some(4));
        let skipped = doc["skipped"].as_object().expect("skipped");
        for key in [
            "terminating",
            "finished",
            "no_address",
            "unparsable_address",
            "missing_port_name",
            "port_out_of_range",
        ] {
            assert!(skipped.contains_key(key), "{key} missing: {doc}");
        }
        assert_eq!(doc["skipped"]["terminating"], 1);
    }

    /// K39: no address → exit 1, the diagnostic on stderr; json carries error, matched, skipped
    /// and port_names_seen.
    fn k39_no_address_is_exit_1_with_the_diagnostic(fx) {
        fx.start_seed_pods("ring", &["ring-a"]);
        let run = fx.apiary(&ring(&["--port-name", "raft"]));
        assert_eq!(run.code, 1, "{run:?}");
        assert!(run.stdout.is_empty());
        assert!(run.stderr.contains("app=ring"), "{}", run.stderr);
        assert!(run.stderr.contains(fx.namespace()), "{}", run.stderr);
        assert!(run.stderr.contains("gossip, http"), "{}", run.stderr);
        let in_json = fx.apiary(&json(&ring(&["--port-name", "raft"])));
        assert_eq!(in_json.code, 1);
        let doc = in_json.json();
        assert!(doc["error"].is_string());
        assert_eq!(doc["matched"], 1);
        assert_eq!(doc["skipped"]["missing_port_name"], 1);
        assert_eq!(
            doc["port_names_seen"],
            serde_json::json!(["gossip", "http"])
        );
        let none = fx.apiary(&["seeds", "--selector", "app=nothing", "--port", "1"]);
        assert_eq!(none.code, 1);
        assert!(none.stderr.contains("0 pods matched"), "{}", none.stderr);
    }

    /// A 403 names the missing permission and `rbac/apiary-seeds.yaml`.
    fn forbidden_listing_adds_the_rbac_hint(mut fx) {
        fx.deny(Verb::List, Some(Resource::Pods));
        let run = fx.apiary(&ring(&["--port", "7000"]));
        assert_eq!(run.code, 1, "{run:?}");
        assert!(
            run.stderr.contains("rbac/apiary-seeds.yaml"),
            "{}",
            run.stderr
        );
        assert!(run.stderr.contains("list"), "{}", run.stderr);
    }

    /// Namespace: `-n` when given, else the context's namespace.
    fn seeds_lists_the_chosen_namespace(fx) {
        let other = fx.other_namespace();
        let _ = fx.apiary(&ring(&["--port", "7000"]));
        let _ = fx.apiary(&[&["-n", &other][..], &ring(&["--port", "7000"])].concat());
        let paths: Vec<String> = fx.requests().iter().map(|r| r.path.clone()).collect();
        assert_eq!(
            paths,
            [
                format!("/api/v1/namespaces/{}/pods", fx.namespace()),
                format!("/api/v1/namespaces/{other}/pods"),
            ]
        );
    }

    /// `--ip-family` (seeds.md § Address family and running containers): dual-stack pods give
    /// their IPv6 entry of `podIPs` under `ipv6` and their primary address under `ipv4`; a
    /// single-stack IPv4 pod is counted as `no_family_address` in the json skip report.
    fn ip_family_takes_the_family_address_from_pod_ips(fx) {
        for (name, v4, v6) in [("ring-a", "10.7.0.1", "fd00::a"), ("ring-b", "10.7.0.2", "fd00::b")] {
            let dual = serde_json::json!({
                "phase": "Running", "podIP": v4, "podIPs": [{"ip": v4}, {"ip": v6}]
            });
            ring_pod(&fx, name, dual, false);
        }
        let single = serde_json::json!({
            "phase": "Running", "podIP": "10.7.0.3", "podIPs": [{"ip": "10.7.0.3"}]
        });
        ring_pod(&fx, "ring-c", single, false);
        let v6 = fx.apiary(&ring(&["--port", "7000", "--ip-family", "ipv6"]));
        assert_eq!(v6.code, 0, "{v6:?}");
        assert_eq!(v6.stdout, "[fd00::a]:7000\n[fd00::b]:7000\n");
        let v4 = fx.apiary(&ring(&["--port-name", "gossip", "--ip-family", "ipv4"]));
        assert_eq!(v4.code, 0, "{v4:?}");
        assert_eq!(v4.stdout, "10.7.0.1:7000\n10.7.0.2:7000\n10.7.0.3:7000\n");
        let doc = fx
            .apiary(&json(&ring(&["--port", "7000", "--ip-family", "ipv6"])))
            .json();
        assert_eq!(
            doc["addresses"],
            serde_json::json!(["[fd00::a]:7000", "[fd00::b]:7000"])
        );
        assert_eq!(doc["skipped"]["no_family_address"], 1, "{doc}");
        assert_eq!(doc["skipped"]["not_running"], 0, "{doc}");
        assert_eq!(doc["skipped"].as_object().map(|o| o.len()), Some(8), "{doc}");
    }

    /// `--require-running`: a pod whose `node` container (the one declaring `gossip`) is still
    /// waiting is skipped and counted as `not_running`; without the flag it counts; when no pod
    /// is left, exit 1 with the diagnostic naming the count.
    fn require_running_skips_pods_whose_serving_container_is_not_running(fx) {
        let status = |ip: &str, state: serde_json::Value| -> k8s_openapi::api::core::v1::PodStatus {
            serde_json::from_value(serde_json::json!({
                "phase": if state.get("running").is_some() { "Running" } else { "Pending" },
                "podIP": ip, "podIPs": [{"ip": ip}],
                "containerStatuses": [{"name": "node", "image": crate::common::IMAGE, "imageID": "",
                                       "ready": false, "restartCount": 0, "state": state}],
            }))
            .expect("status")
        };
        let running = serde_json::json!({"running": {"startedAt": "2026-01-01T00:00:00Z"}});
        let waiting = serde_json::json!({"waiting": {"reason": "ContainerCreating"}});
        fx.insert_inert_pod(fx.seed_pod("ring-up", "ring", 7000), status("10.8.0.1", running), false);
        fx.insert_inert_pod(fx.seed_pod("ring-starting", "ring", 7000), status("10.8.0.2", waiting.clone()), false);
        let loose = fx.apiary(&ring(&["--port-name", "gossip"]));
        assert_eq!(loose.stdout, "10.8.0.1:7000\n10.8.0.2:7000\n", "{loose:?}");
        let strict = fx.apiary(&json(&ring(&["--port-name", "gossip", "--require-running"])));
        assert_eq!(strict.code, 0, "{strict:?}");
        let doc = strict.json();
        assert_eq!(doc["addresses"], serde_json::json!(["10.8.0.1:7000"]));
        assert_eq!(doc["skipped"]["not_running"], 1, "{doc}");

        fx.insert_inert_pod(fx.seed_pod("solo-starting", "solo", 7000), status("10.8.0.3", waiting), false);
        let none = fx.apiary(&[
            "seeds", "--selector", "app=solo", "--port", "7000", "--require-running",
        ]);
        assert_eq!(none.code, 1, "{none:?}");
        assert!(none.stdout.is_empty());
        assert!(
            none.stderr.contains("1 whose serving container is not running yet"),
            "{}",
            none.stderr
        );
    }

    /// `--watch`: the full set at start, again after a change (text: lines then an empty line),
    /// and exit 0 on SIGTERM.
    #[cfg(unix)]
    fn watch_prints_every_change_and_exits_0_on_sigterm(fx) {
        fx.start_seed_pods("ring", &["ring-a"]);
        let mut child = fx
            .command(&ring(&["--port", "7000", "--watch"]))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn");
        // A watchdog: should the watch never print, kill it so the reads below end instead of
        // hanging the suite.
        // It stops watching as soon as the child was reaped, so it can never signal a reused pid.
        let pid = child.id().to_string();
        let reaped = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let watchdog_reaped = std::sync::Arc::clone(&reaped);
        std::thread::spawn(move || {
            for _ in 0..300 {
                if watchdog_reaped.load(std::sync::atomic::Ordering::SeqCst) {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &pid])
                .status();
        });
        let mut out = BufReader::new(child.stdout.take().expect("stdout"));
        let block = |out: &mut BufReader<std::process::ChildStdout>| -> Vec<String> {
            let mut lines = Vec::new();
            loop {
                let mut line = String::new();
                assert!(out.read_line(&mut line).expect("read") > 0, "stdout closed");
                let line = line.trim_end().to_owned();
                if line.is_empty() {
                    return lines;
                }
                lines.push(line);
            }
        };
        let first = block(&mut out);
        assert_eq!(first.len(), 1, "{first:?}");
        fx.start_seed_pods("ring", &["ring-b"]);
        let second = block(&mut out);
        assert_eq!(second.len(), 2, "{second:?}");
        let status = std::process::Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success());
        let waited = child.wait().expect("wait");
        reaped.store(true, std::sync::atomic::Ordering::SeqCst);
        assert_eq!(waited.code(), Some(0));
    }
}

/// A bad `--ip-family` is exit 2 before any request, naming the flag and both values, in text
/// and in json mode.
#[test]
fn bad_ip_family_is_refused_naming_the_flag_and_the_values() {
    let fx = Fixture::start();
    for bad in ["ipv5", "IPv6", ""] {
        let args = ring(&["--port", "7000", "--ip-family", bad]);
        let run = fx.apiary(&args);
        assert_eq!(run.code, 2, "{run:?}");
        assert!(run.stdout.is_empty(), "{run:?}");
        for needle in ["--ip-family", "ipv4", "ipv6"] {
            assert!(
                run.stderr.contains(needle),
                "{needle} missing: {}",
                run.stderr
            );
        }
        let in_json = fx.apiary(&json(&args));
        assert_eq!(in_json.code, 2, "{in_json:?}");
        let error = in_json.json()["error"]
            .as_str()
            .expect("error text")
            .to_owned();
        assert!(
            error.contains("--ip-family") && error.contains("ipv4, ipv6"),
            "{error}"
        );
    }
    fx.assert_no_requests("a refused --ip-family");
}
