//! Server-side printing: the `meta.k8s.io/v1` `Table` answer `kubectl get` asks for (`Accept:
//! application/json;as=Table;…`), with the apiserver's columns for namespaces, pods and Secrets
//! and ages computed on the simulator's clock (so they stay right under time scaling).
//!
//! Layer: pure presentation over already-read objects and a given `now`; it reads no clock and
//! decides nothing about the objects.

use jiff::Timestamp;
use serde_json::{Value, json};

use crate::route::Resource;

/// Whether an `Accept` header asks for a Table.
pub fn wants_table(accept: Option<&str>) -> bool {
    accept.is_some_and(|a| {
        a.split(',')
            .next()
            .is_some_and(|first| first.contains("as=Table"))
    })
}

/// A duration in kubectl's short human form (`45s`, `3m12s`, `17m`, `5h3m`, `2d4h`, `90d`).
pub fn human_duration(seconds: i64) -> String {
    let s = seconds.max(0);
    let (m, h, d) = (s / 60, s / 3600, s / 86_400);
    if s < 120 {
        format!("{s}s")
    } else if m < 10 {
        match s % 60 {
            0 => format!("{m}m"),
            r => format!("{m}m{r}s"),
        }
    } else if h < 3 {
        format!("{m}m")
    } else if h < 8 {
        match m % 60 {
            0 => format!("{h}h"),
            r => format!("{h}h{r}m"),
        }
    } else if h < 48 {
        format!("{h}h")
    } else if d < 8 {
        match h % 24 {
            0 => format!("{d}d"),
            r => format!("{d}d{r}h"),
        }
    } else if d < 365 * 2 {
        format!("{d}d")
    } else {
        format!("{}y", d / 365)
    }
}

fn column(name: &str, kind: &str, format: &str, description: &str) -> Value {
    json!({ "name": name, "type": kind, "format": format, "description": description, "priority": 0 })
}

fn age(object: &Value, now: Timestamp) -> String {
    object["metadata"]["creationTimestamp"]
        .as_str()
        .and_then(|t| t.parse::<Timestamp>().ok())
        .map_or_else(
            || "<unknown>".to_owned(),
            |created| human_duration(now.as_second() - created.as_second()),
        )
}

/// The STATUS column of a pod, as kubectl derives it: Terminating, else a container's waiting or
/// terminated reason, else the phase.
fn pod_status(pod: &Value) -> String {
    if pod["metadata"]["deletionTimestamp"].is_string() {
        return "Terminating".to_owned();
    }
    let statuses = pod["status"]["containerStatuses"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for cs in &statuses {
        for state in ["waiting", "terminated"] {
            if let Some(reason) = cs["state"][state]["reason"].as_str() {
                return reason.to_owned();
            }
        }
    }
    pod["status"]["phase"]
        .as_str()
        .unwrap_or("Unknown")
        .to_owned()
}

/// The STATUS column of a node, as kubectl derives it from the `Ready` condition.
fn node_status(node: &Value) -> &'static str {
    let conditions = node["status"]["conditions"].as_array();
    let ready = conditions
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Ready");
    match ready.and_then(|c| c["status"].as_str()) {
        Some("True") => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }
}

fn pod_row(pod: &Value, now: Timestamp) -> Vec<Value> {
    let statuses = pod["status"]["containerStatuses"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let total = pod["spec"]["containers"].as_array().map_or(0, Vec::len);
    let ready = statuses.iter().filter(|c| c["ready"] == true).count();
    let restarts: i64 = statuses
        .iter()
        .filter_map(|c| c["restartCount"].as_i64())
        .sum();
    vec![
        pod["metadata"]["name"].clone(),
        json!(format!("{ready}/{total}")),
        json!(pod_status(pod)),
        json!(restarts),
        json!(age(pod, now)),
    ]
}

/// A Table of `objects` (full JSON objects of `resource`) as of `now`.
pub fn table(
    resource: Resource,
    objects: &[Value],
    resource_version: &str,
    now: Timestamp,
) -> Value {
    let name = column(
        "Name",
        "string",
        "name",
        "Name must be unique within a namespace.",
    );
    let age_col = column(
        "Age",
        "string",
        "",
        "CreationTimestamp is a timestamp representing the server time when this object was created.",
    );
    let columns = match resource {
        Resource::Namespaces => vec![
            name,
            column("Status", "string", "", "The status of the namespace"),
            age_col,
        ],
        Resource::Pods => vec![
            name,
            column(
                "Ready",
                "string",
                "",
                "The aggregate readiness state of this pod for accepting traffic.",
            ),
            column(
                "Status",
                "string",
                "",
                "The aggregate status of the containers in this pod.",
            ),
            column(
                "Restarts",
                "string",
                "",
                "The number of times the containers in this pod have been restarted.",
            ),
            age_col,
        ],
        Resource::Secrets => vec![
            name,
            column(
                "Type",
                "string",
                "",
                "The type of data stored in the secret",
            ),
            column(
                "Data",
                "string",
                "",
                "The total number of data stored in the secret",
            ),
            age_col,
        ],
        Resource::ServiceAccounts => vec![name, age_col],
        Resource::Nodes => vec![
            name,
            column("Status", "string", "", "The status of the node"),
            age_col,
        ],
    };
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let cells = match resource {
                Resource::Namespaces => vec![
                    o["metadata"]["name"].clone(),
                    o["status"]["phase"].clone(),
                    json!(age(o, now)),
                ],
                Resource::Pods => pod_row(o, now),
                Resource::Secrets => vec![
                    o["metadata"]["name"].clone(),
                    o["type"].clone(),
                    json!(o["data"].as_object().map_or(0, serde_json::Map::len)),
                    json!(age(o, now)),
                ],
                Resource::ServiceAccounts => {
                    vec![o["metadata"]["name"].clone(), json!(age(o, now))]
                }
                Resource::Nodes => vec![
                    o["metadata"]["name"].clone(),
                    json!(node_status(o)),
                    json!(age(o, now)),
                ],
            };
            json!({
                "cells": cells,
                "object": {
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": o["metadata"],
                },
            })
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": { "resourceVersion": resource_version },
        "columnDefinitions": columns,
        "rows": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ages read like kubectl's at each unit boundary.
    #[test]
    fn human_durations() {
        let cases = [
            (-5, "0s"),
            (0, "0s"),
            (119, "119s"),
            (120, "2m"),
            (185, "3m5s"),
            (599, "9m59s"),
            (600, "10m"),
            (3 * 3600 - 1, "179m"),
            (3 * 3600, "3h"),
            (5 * 3600 + 60, "5h1m"),
            (8 * 3600, "8h"),
            (47 * 3600, "47h"),
            (48 * 3600, "2d"),
            (50 * 3600, "2d2h"),
            (8 * 86_400, "8d"),
            (729 * 86_400, "729d"),
            (730 * 86_400, "2y"),
        ];
        for (s, want) in cases {
            assert_eq!(human_duration(s), want, "{s}");
        }
    }

    /// Only a Table asked for first is served as a Table.
    #[test]
    fn table_negotiation() {
        assert!(wants_table(Some(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
        )));
        assert!(!wants_table(Some("application/json")));
        assert!(!wants_table(Some(
            "application/json, application/json;as=Table;v=v1;g=meta.k8s.io"
        )));
        assert!(!wants_table(None));
    }

    /// Pod rows: Terminating beats every other status; waiting reasons beat the phase.
    #[test]
    fn pod_rows() {
        let now: Timestamp = "2026-01-01T00:01:00Z".parse().expect("ts");
        let pod = json!({
            "metadata": {"name": "p", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"containers": [{"name": "agent"}]},
            "status": {"phase": "Pending", "containerStatuses": [
                {"ready": false, "restartCount": 2, "state": {"waiting": {"reason": "CreateContainerConfigError"}}}
            ]},
        });
        let t = table(Resource::Pods, std::slice::from_ref(&pod), "7", now);
        assert_eq!(
            t["rows"][0]["cells"],
            json!(["p", "0/1", "CreateContainerConfigError", 2, "60s"])
        );
        assert_eq!(t["rows"][0]["object"]["metadata"]["name"], "p");
        let mut deleting = pod;
        deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:02:00Z");
        assert_eq!(pod_status(&deleting), "Terminating");
        assert_eq!(
            pod_status(&json!({"status": {"phase": "Running"}})),
            "Running"
        );
    }
}
