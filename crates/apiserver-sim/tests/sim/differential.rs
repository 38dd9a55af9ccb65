//! Differential checks: the same request sequences go to the simulator and to a real
//! `kube-apiserver` (v1.20.2 + etcd, `apiary-envtest`), through the same raw `kube::Client::send`
//! calls, and the status codes, `reason`s and object shapes apiary reads must agree. Each
//! sequence is written once, as a function over a [`Side`], and run on both; each also pins the
//! literal answers it expects, so without `KUBEBUILDER_ASSETS` (the real side skipped with one
//! line) the simulator is still held to what the real server answered.
//!
//! The harness (the two sides, what a transcript records, the comparison) lives in
//! [`harness`]; the sequences of this file cover creates, fenced deletes, graceful deletion,
//! lists, watches, selectors, missing objects and invalid objects, and those of [`pod_fields`]
//! the pod fields apiary's pod options set (deploy.md § Pod options), field by field.
//!
//! Layer: integration test. It talks only to loopback (the simulator and the envtest control
//! plane); it asserts on answers and their order, never on durations (the harness's waits are
//! bounds against hangs).

#[path = "../differential/harness.rs"]
mod harness;
#[path = "../differential/pod_fields.rs"]
mod pod_fields;

use std::future::Future;
use std::pin::Pin;

use harness::{
    RUNNING_IMAGE, STALE_UID, Side, UNSCHEDULABLE_IMAGE, differential, phase_is, pod, rv, secret,
    status_of, uid,
};
use serde_json::{Value, json};
/// A second create of a pod, a Secret and a namespace is `409 AlreadyExists` with the name and
/// kind in `details`; a create into a missing namespace is `404 NotFound` naming the namespace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_twice_is_already_exists() {
    fn sequence(s: &Side) -> Pin<Box<dyn Future<Output = ()> + '_>> {
        Box::pin(async move {
            let body = pod("twice", UNSCHEDULABLE_IMAGE, &json!({"app": "agent"}));
            let first = s
                .call("create pod", "POST", &s.path("pods"), Some(&body))
                .await;
            assert_eq!(first.code, 201, "{}", s.label);
            let again = s
                .call("create pod again", "POST", &s.path("pods"), Some(&body))
                .await;
            assert_eq!(status_of(&again), (409, "AlreadyExists"), "{}", s.label);
            assert_eq!(again.body["message"], r#"pods "twice" already exists"#);

            let body = secret("twice", true);
            let first = s
                .call("create secret", "POST", &s.path("secrets"), Some(&body))
                .await;
            assert_eq!(first.code, 201, "{}", s.label);
            let again = s
                .call(
                    "create secret again",
                    "POST",
                    &s.path("secrets"),
                    Some(&body),
                )
                .await;
            assert_eq!(status_of(&again), (409, "AlreadyExists"), "{}", s.label);

            let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": s.ns}});
            let again = s
                .call(
                    "create namespace again",
                    "POST",
                    "/api/v1/namespaces",
                    Some(&body),
                )
                .await;
            assert_eq!(status_of(&again), (409, "AlreadyExists"), "{}", s.label);

            let missing = format!("{}-missing", s.ns);
            let path = format!("/api/v1/namespaces/{missing}/pods");
            let body = pod("p", UNSCHEDULABLE_IMAGE, &json!({}));
            let refused = s
                .call(
                    "create pod in a missing namespace",
                    "POST",
                    &path,
                    Some(&body),
                )
                .await;
            assert_eq!(status_of(&refused), (404, "NotFound"), "{}", s.label);
            assert_eq!(
                refused.body["message"],
                format!(r#"namespaces "{missing}" not found"#)
            );
            let path = format!("/api/v1/namespaces/{missing}/secrets");
            let body = secret("s", true);
            let refused = s
                .call(
                    "create secret in a missing namespace",
                    "POST",
                    &path,
                    Some(&body),
                )
                .await;
            assert_eq!(status_of(&refused), (404, "NotFound"), "{}", s.label);
        })
    }
    differential("diff-create", false, sequence).await;
}

/// `DeleteOptions` carrying preconditions, as apiary's fenced deletes send them.
fn fenced(uid: Option<&str>, resource_version: Option<&str>) -> Value {
    let mut preconditions = serde_json::Map::new();
    if let Some(uid) = uid {
        preconditions.insert("uid".to_owned(), json!(uid));
    }
    if let Some(rv) = resource_version {
        preconditions.insert("resourceVersion".to_owned(), json!(rv));
    }
    json!({"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": preconditions})
}

/// A pod whose `PodScheduled` condition is `False` (the kubelet stand-ins left it unscheduled).
fn unscheduled(pod: &Value) -> bool {
    pod["status"]["conditions"]
        .as_array()
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c["type"] == "PodScheduled" && c["status"] == "False")
        })
}

/// A fenced delete with a stale uid or a stale resourceVersion is `409 Conflict` with the
/// apiserver's "Precondition failed" message and the object untouched; the current fence is
/// accepted. A Secret delete with a stale uid is refused the same way, and with its own uid
/// answers a `Success` Status naming the Secret.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fenced_delete_with_a_stale_fence_is_conflict() {
    fn sequence(s: &Side) -> Pin<Box<dyn Future<Output = ()> + '_>> {
        Box::pin(async move {
            let body = pod("fenced", RUNNING_IMAGE, &json!({"app": "agent"}));
            let created = s
                .call("create pod", "POST", &s.path("pods"), Some(&body))
                .await;
            let (pod_uid, created_rv) = (uid(&created.body), rv(&created.body));
            s.alias("<uid>", &pod_uid);
            s.alias("<rv-created>", &created_rv);
            s.alias("<stale-uid>", STALE_UID);
            let running = s.wait_pod("fenced", phase_is("Running")).await;
            let running_rv = rv(&running);
            assert_ne!(
                running_rv, created_rv,
                "{}: the kubelet changed the pod",
                s.label
            );
            s.alias("<rv-running>", &running_rv);
            let path = s.path("pods/fenced");

            let stale = fenced(Some(STALE_UID), None);
            let refused = s
                .call("delete with a stale uid", "DELETE", &path, Some(&stale))
                .await;
            assert_eq!(status_of(&refused), (409, "Conflict"), "{}", s.label);
            assert_eq!(
                refused.body["message"],
                format!(
                    "Operation cannot be fulfilled on Pod \"fenced\": the UID in the precondition \
                     ({STALE_UID}) does not match the UID in record ({pod_uid}). The object might \
                     have been deleted and then recreated"
                )
            );
            assert_eq!(refused.body["details"]["kind"], "Pod", "{}", s.label);
            let stale = fenced(Some(&pod_uid), Some(&created_rv));
            let refused = s
                .call(
                    "delete with a stale resourceVersion",
                    "DELETE",
                    &path,
                    Some(&stale),
                )
                .await;
            assert_eq!(status_of(&refused), (409, "Conflict"), "{}", s.label);
            let stale = fenced(None, Some(&created_rv));
            s.call(
                "delete with only a stale resourceVersion",
                "DELETE",
                &path,
                Some(&stale),
            )
            .await;
            s.call("get after the refusals", "GET", &path, None).await;
            let current = fenced(Some(&pod_uid), Some(&running_rv));
            let accepted = s
                .call(
                    "delete with the current fence",
                    "DELETE",
                    &path,
                    Some(&current),
                )
                .await;
            assert_eq!(accepted.code, 200, "{}", s.label);

            let created = s
                .call(
                    "create secret",
                    "POST",
                    &s.path("secrets"),
                    Some(&secret("fenced", true)),
                )
                .await;
            let secret_uid = uid(&created.body);
            s.alias("<secret-uid>", &secret_uid);
            let path = s.path("secrets/fenced");
            let stale = fenced(Some(STALE_UID), None);
            let refused = s
                .call(
                    "delete secret with a stale uid",
                    "DELETE",
                    &path,
                    Some(&stale),
                )
                .await;
            assert_eq!(status_of(&refused), (409, "Conflict"), "{}", s.label);
            let current = fenced(Some(&secret_uid), None);
            let accepted = s
                .call(
                    "delete secret with its uid",
                    "DELETE",
                    &path,
                    Some(&current),
                )
                .await;
            assert_eq!(accepted.code, 200, "{}", s.label);
            assert_eq!(accepted.body["status"], "Success", "{}", s.label);
            s.call("delete secret again", "DELETE", &path, Some(&current))
                .await;
        })
    }
    differential("diff-fence", true, sequence).await;
}

/// Deleting a running (scheduled) pod marks it: 200 with the pod, `deletionTimestamp` set,
/// `deletionGracePeriodSeconds` its own 60 s and phase still `Running`, and a GET still finds it;
/// an unscheduled pod and a terminal pod are removed at once (a GET answers 404), and a delete of
/// a missing pod is `404 NotFound`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_marks_a_running_pod_and_removes_an_unscheduled_one() {
    fn sequence(s: &Side) -> Pin<Box<dyn Future<Output = ()> + '_>> {
        Box::pin(async move {
            let labels = json!({"app": "agent"});
            s.call(
                "create running",
                "POST",
                &s.path("pods"),
                Some(&pod("running", RUNNING_IMAGE, &labels)),
            )
            .await;
            s.call(
                "create unscheduled",
                "POST",
                &s.path("pods"),
                Some(&pod("unscheduled", UNSCHEDULABLE_IMAGE, &labels)),
            )
            .await;
            s.call(
                "create crashing",
                "POST",
                &s.path("pods"),
                Some(&pod("crashing", "registry.example/crash:1", &labels)),
            )
            .await;
            s.wait_pod("running", phase_is("Running")).await;
            s.wait_pod("unscheduled", unscheduled).await;
            s.wait_pod("crashing", phase_is("Failed")).await;

            s.pause_kubelet();
            let path = s.path("pods/running");
            let marked = s.call("delete running", "DELETE", &path, None).await;
            assert_eq!(marked.code, 200, "{}", s.label);
            assert_eq!(
                marked.body["metadata"]["deletionGracePeriodSeconds"], 60,
                "{}",
                s.label
            );
            assert_eq!(marked.body["status"]["phase"], "Running", "{}", s.label);
            s.call("get running after the delete", "GET", &path, None)
                .await;
            s.call("delete running again", "DELETE", &path, None).await;

            let path = s.path("pods/unscheduled");
            let removed = s.call("delete unscheduled", "DELETE", &path, None).await;
            assert_eq!(removed.code, 200, "{}", s.label);
            let gone = s
                .call("get unscheduled after the delete", "GET", &path, None)
                .await;
            assert_eq!(status_of(&gone), (404, "NotFound"), "{}", s.label);
            let missing = s
                .call("delete unscheduled again", "DELETE", &path, None)
                .await;
            assert_eq!(status_of(&missing), (404, "NotFound"), "{}", s.label);
            assert_eq!(missing.body["message"], r#"pods "unscheduled" not found"#);

            let path = s.path("pods/crashing");
            s.call("delete terminal", "DELETE", &path, None).await;
            let gone = s
                .call("get terminal after the delete", "GET", &path, None)
                .await;
            assert_eq!(status_of(&gone), (404, "NotFound"), "{}", s.label);
        })
    }
    differential("diff-delete", true, sequence).await;
}

/// Percent-encodes a query value (everything but RFC 3986 unreserved characters).
fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A list with `limit` pages by name: `continue` while items remain, `remainingItemCount` only
/// without a selector; the last page has no `continue`. A `continue` token older than a
/// compaction is `410 Expired`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_with_limit_pages_and_expires() {
    fn sequence(s: &Side) -> Pin<Box<dyn Future<Output = ()> + '_>> {
        Box::pin(async move {
            for name in ["a-0", "a-1", "a-2", "a-3", "a-4"] {
                let body = pod(name, UNSCHEDULABLE_IMAGE, &json!({"app": "agent"}));
                s.send("POST", &s.path("pods"), Some(&body)).await;
            }
            let body = pod("b-other", UNSCHEDULABLE_IMAGE, &json!({"app": "other"}));
            s.send("POST", &s.path("pods"), Some(&body)).await;

            for (what, query) in [
                ("without a selector", ""),
                ("with a selector", "&labelSelector=app%3Dagent"),
            ] {
                let mut path = s.path(&format!("pods?limit=2{query}"));
                for page in 0.. {
                    let answer = s
                        .call(&format!("list {what}, page {page}"), "GET", &path, None)
                        .await;
                    assert_eq!(answer.code, 200, "{}", s.label);
                    let token = answer.body["metadata"]["continue"].as_str().unwrap_or("");
                    if token.is_empty() {
                        break;
                    }
                    path = s.path(&format!("pods?limit=2{query}&continue={}", encode(token)));
                }
            }
            s.call("list with limit 0", "GET", &s.path("pods?limit=0"), None)
                .await;
            s.call(
                "list with limit above the count",
                "GET",
                &s.path("pods?limit=100"),
                None,
            )
            .await;

            let first = s
                .call(
                    "first page before a compaction",
                    "GET",
                    &s.path("pods?limit=2"),
                    None,
                )
                .await;
            let token = first.body["metadata"]["continue"]
                .as_str()
                .expect("a continue token")
                .to_owned();
            s.send("POST", &s.path("secrets"), Some(&secret("bump", true)))
                .await;
            s.compact();
            let path = s.path(&format!("pods?limit=2&continue={}", encode(&token)));
            let expired = s
                .call("continue after the compaction", "GET", &path, None)
                .await;
            assert_eq!(status_of(&expired), (410, "Expired"), "{}", s.label);
            let path = s.path("pods?limit=2&continue=garbage");
            let prefix = "invalid continue token: continue key is not valid: ";
            s.call_up_to("continue with a garbled token", "GET", &path, None, prefix)
                .await;
        })
    }
    differential("diff-list", false, sequence).await;
}

/// A watch from a resourceVersion older than the last compaction answers 200 and one `ERROR`
/// event carrying a `410 Expired` Status, then ends; a watch from a current resourceVersion
/// replays what happened after it (for an unscheduled pod's delete a `MODIFIED` writing the zero
/// grace, then `DELETED`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_from_a_compacted_resource_version_is_expired() {
    fn sequence(s: &Side) -> Pin<Box<dyn Future<Output = ()> + '_>> {
        Box::pin(async move {
            let body = pod("watched", UNSCHEDULABLE_IMAGE, &json!({"app": "agent"}));
            s.call("create", "POST", &s.path("pods"), Some(&body)).await;
            let settled = s.wait_pod("watched", unscheduled).await;
            let before = rv(&settled);
            s.alias("<rv-before>", &before);
            s.call("delete", "DELETE", &s.path("pods/watched"), None)
                .await;
            let path = s.path(&format!(
                "pods?watch=true&fieldSelector=metadata.name%3Dwatched&resourceVersion={before}&timeoutSeconds=5"
            ));
            let events = s.watch("watch from before the delete", &path, 2).await;
            let types: Vec<&Value> = events.iter().map(|e| &e["type"]).collect();
            // The zero grace is written (with the deletion mark), then the pod is removed.
            assert_eq!(
                types,
                [&json!("MODIFIED"), &json!("DELETED")],
                "{}",
                s.label
            );
            assert_eq!(
                events[0]["object"]["metadata"]["deletionGracePeriodSeconds"], 0,
                "{}",
                s.label
            );

            s.send("POST", &s.path("secrets"), Some(&secret("bump", true)))
                .await;
            s.compact();
            let path = s.path(&format!(
                "pods?watch=true&resourceVersion={before}&timeoutSeconds=5"
            ));
            let events = s.watch("watch from before the compaction", &path, 2).await;
            assert_eq!(
                events.len(),
                1,
                "{}: one ERROR event, then the end: {events:?}",
                s.label
            );
            assert_eq!(events[0]["type"], "ERROR", "{}", s.label);
            assert_eq!(events[0]["object"]["code"], 410, "{}", s.label);
            assert_eq!(events[0]["object"]["reason"], "Expired", "{}", s.label);
        })
    }
    differential("diff-watch", true, sequence).await;
}

/// Label-selector edge cases select the same pods (`!key`, `notin` matching pods without the
/// key, `in` with spaces, `!=`, `==`, existence, empty values), and malformed selectors are
/// `400 BadRequest` with the same message; the `metadata.name` field selector apiary's watch
/// uses selects one pod.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn label_selector_edge_cases_select_alike() {
    fn sequence(s: &Side) -> Pin<Box<dyn Future<Output = ()> + '_>> {
        Box::pin(async move {
            for (name, labels) in [
                ("a", json!({"app": "x", "tier": "front"})),
                ("b", json!({"app": "y"})),
                ("c", json!({"tier": "back"})),
                (
                    "d",
                    json!({"app": "z", "tier": "front", "example.com/role": "seed"}),
                ),
                ("e", json!({"app": ""})),
            ] {
                let body = pod(name, UNSCHEDULABLE_IMAGE, &labels);
                s.send("POST", &s.path("pods"), Some(&body)).await;
            }
            for selector in [
                "!app",
                "app notin (x,y)",
                "app in (x, y)",
                "app in ( x , y )",
                "app=x,tier=front",
                "app = x",
                "app!=x",
                "app==x",
                "tier",
                "tier,!app",
                "app=",
                "app in (x,)",
                "example.com/role=seed",
                "",
                "app in (x",
                "a b",
                "app in ()",
                "-bad=1",
                "app=x y",
                "app=a=b",
                "app>1",
                "!app=x",
            ] {
                let path = s.path(&format!("pods?labelSelector={}", encode(selector)));
                s.call(&format!("labelSelector {selector:?}"), "GET", &path, None)
                    .await;
            }
            for selector in [
                "metadata.name=a",
                "metadata.name!=a",
                "metadata.namespace=other",
                "spec.foo=a",
            ] {
                let path = s.path(&format!("pods?fieldSelector={}", encode(selector)));
                s.call(&format!("fieldSelector {selector:?}"), "GET", &path, None)
                    .await;
            }
            let bad = s
                .send(
                    "GET",
                    &s.path(&format!("pods?labelSelector={}", encode("app in (x"))),
                    None,
                )
                .await;
            assert_eq!(status_of(&bad), (400, "BadRequest"), "{}", s.label);
        })
    }
    differential("diff-selector", false, sequence).await;
}

/// A missing namespace, pod or Secret is `404 NotFound` naming the kind and the name; a list in
/// a missing namespace is an empty list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_objects_are_not_found() {
    fn sequence(s: &Side) -> Pin<Box<dyn Future<Output = ()> + '_>> {
        Box::pin(async move {
            let missing = format!("{}-missing", s.ns);
            let got = s
                .call(
                    "get a missing namespace",
                    "GET",
                    &format!("/api/v1/namespaces/{missing}"),
                    None,
                )
                .await;
            assert_eq!(status_of(&got), (404, "NotFound"), "{}", s.label);
            assert_eq!(
                got.body["message"],
                format!(r#"namespaces "{missing}" not found"#)
            );
            s.call(
                "get the namespace",
                "GET",
                &format!("/api/v1/namespaces/{}", s.ns),
                None,
            )
            .await;
            let path = format!("/api/v1/namespaces/{missing}/pods/p");
            s.call("get a pod in a missing namespace", "GET", &path, None)
                .await;
            let path = format!("/api/v1/namespaces/{missing}/pods?labelSelector=app%3Dagent");
            s.call("list pods in a missing namespace", "GET", &path, None)
                .await;
            s.call("get a missing pod", "GET", &s.path("pods/nope"), None)
                .await;
            s.call("get a missing secret", "GET", &s.path("secrets/nope"), None)
                .await;
            s.call(
                "delete a missing secret",
                "DELETE",
                &s.path("secrets/nope"),
                Some(&fenced(Some(STALE_UID), None)),
            )
            .await;
            s.call(
                "list secrets",
                "GET",
                &s.path("secrets?labelSelector=app%3Dagent"),
                None,
            )
            .await;
        })
    }
    differential("diff-missing", false, sequence).await;
}

/// An update of an immutable Secret's data (PUT or merge PATCH) is `422 Invalid`; invalid
/// creates (a pod without containers, a malformed name, a bad Secret key, a Secret over 1 MiB)
/// are `422 Invalid` too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn immutable_secrets_and_invalid_objects_are_invalid() {
    fn sequence(s: &Side) -> Pin<Box<dyn Future<Output = ()> + '_>> {
        Box::pin(async move {
            s.call(
                "create immutable secret",
                "POST",
                &s.path("secrets"),
                Some(&secret("frozen", true)),
            )
            .await;
            let mut changed = secret("frozen", true);
            changed["stringData"] = json!({"KEY": "other"});
            let refused = s
                .call(
                    "put changed data",
                    "PUT",
                    &s.path("secrets/frozen"),
                    Some(&changed),
                )
                .await;
            assert_eq!(status_of(&refused), (422, "Invalid"), "{}", s.label);

            let empty = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "empty"}, "spec": {"containers": []}});
            s.call(
                "create a pod without containers",
                "POST",
                &s.path("pods"),
                Some(&empty),
            )
            .await;
            let bad_name = pod("Bad_Name", RUNNING_IMAGE, &json!({}));
            s.call(
                "create a pod with a malformed name",
                "POST",
                &s.path("pods"),
                Some(&bad_name),
            )
            .await;
            let mut bad_key = secret("bad-key", true);
            bad_key["stringData"] = json!({"bad key": "v"});
            s.call(
                "create a secret with a bad key",
                "POST",
                &s.path("secrets"),
                Some(&bad_key),
            )
            .await;
            let mut big = secret("big", true);
            big["stringData"] = json!({"A": "x".repeat(600 * 1024), "B": "y".repeat(600 * 1024)});
            s.call(
                "create a secret over 1 MiB",
                "POST",
                &s.path("secrets"),
                Some(&big),
            )
            .await;
        })
    }
    differential("diff-invalid", false, sequence).await;
}
