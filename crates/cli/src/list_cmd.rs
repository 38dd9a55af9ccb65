//! `apiary list` (deploy.md § list): every agent apiary manages in the namespace, one row each,
//! as a text table or one JSON array; how many listed pods were skipped goes to stderr.
//!
//! Shell layer: it checks the flags before any request, calls the driver, and renders the
//! inventory `apiary-classify` decided. Must not: decide what a row shows, read the local clock
//! (ages and time left are the server's), or print anything but the result on stdout.

use apiary_classify::duration::render_span;
use apiary_classify::expiry::{format_instant, render_time_left};
use apiary_classify::inventory::{AgentRow, Inventory};
use apiary_substrate::Substrate;
use apiary_substrate::driver::{self, ListOptions};
use serde_json::{Value, json};

use crate::args::ListArgs;
use crate::outcome::{CommandResult, Failure, Report};

/// The options of `list`, checked before any request (exit 2 names the flag, the problem and
/// the fix).
///
/// # Errors
/// A blank `--selector`, or one with an empty term (a leading, trailing or doubled comma).
pub fn list_options(args: &ListArgs) -> Result<ListOptions, Failure> {
    if let Some(selector) = &args.selector {
        if selector.trim().is_empty() {
            return Err(Failure::refused(
                "--selector is blank: give a label selector such as team=research, or leave \
                 --selector out to list every agent",
            ));
        }
        if selector.split(',').any(|term| term.trim().is_empty()) {
            return Err(Failure::refused(format!(
                "--selector {selector:?} has an empty term (a leading, trailing or doubled \
                 comma): write terms separated by single commas, such as team=research,tier=1"
            )));
        }
    }
    Ok(ListOptions {
        selector: args.selector.clone(),
        include_absent: args.all,
        ..ListOptions::default()
    })
}

/// `apiary list`: one pod LIST and one Secret LIST, the rows sorted by agent.
pub async fn list<S: Substrate>(substrate: &S, options: &ListOptions) -> CommandResult {
    let inventory = driver::list(substrate, options)
        .await
        .map_err(|failure| Failure::request(&failure, substrate.namespace()))?;
    if inventory.skipped_pods > 0 {
        tracing::warn!(
            "skipped {} pod(s) labelled as apiary's that are not an agent's own (foreign or \
             unverifiable); `apiary status AGENT` says more about one agent",
            inventory.skipped_pods
        );
    }
    if inventory.rows.is_empty() {
        tracing::info!("no agents in namespace {}", substrate.namespace());
    }
    Ok(report(substrate.namespace(), &inventory))
}

/// The inventory in both forms: a table (nothing when empty), and one JSON array.
pub fn report(namespace: &str, inventory: &Inventory) -> Report {
    let rows: Vec<Value> = inventory
        .rows
        .iter()
        .map(|row| row_json(namespace, row))
        .collect();
    Report::new(table(&inventory.rows), Value::Array(rows))
}

fn row_json(namespace: &str, row: &AgentRow) -> Value {
    json!({
        "agent": row.agent,
        "agent_id": row.agent_id,
        "namespace": namespace,
        "pod": row.pod,
        "state": row.state.as_str(),
        "age_seconds": row.age_seconds,
        "restarts": row.restarts,
        "image": row.image.as_ref().map(|i| json!({
            "repository": i.repository,
            "digest": i.digest,
        })),
        "expires_at": row.expires_at_unix.map(format_instant),
        "expires_in_seconds": row.expires_in_seconds,
        "secrets": row.secrets,
        "workspace": row.workspace,
    })
}

const HEADERS: [&str; 9] = [
    "AGENT",
    "POD",
    "STATE",
    "AGE",
    "RESTARTS",
    "IMAGE",
    "EXPIRES",
    "SECRETS",
    "WORKSPACE",
];

/// The text table: a header and one line per row, columns padded to their widest cell. The
/// WORKSPACE column is shown only when some agent has a persistent workspace (deploy.md
/// § Persistent workspace), so a namespace without any reads as before.
fn table(rows: &[AgentRow]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let columns = if rows.iter().any(|r| r.workspace.is_some()) {
        HEADERS.len()
    } else {
        HEADERS.len() - 1
    };
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|row| cells(row)[..columns].to_vec())
        .collect();
    let mut widths: Vec<usize> = HEADERS[..columns]
        .iter()
        .map(|h| h.chars().count())
        .collect();
    for line in &cells {
        for (width, cell) in widths.iter_mut().zip(line) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let header: Vec<String> = HEADERS[..columns].iter().map(|h| (*h).to_owned()).collect();
    std::iter::once(&header)
        .chain(&cells)
        .map(|line| {
            let padded: Vec<String> = line
                .iter()
                .zip(&widths)
                .map(|(cell, &width)| {
                    let pad = width - cell.chars().count();
                    format!("{cell}{}", " ".repeat(pad))
                })
                .collect();
            padded.join("  ").trim_end().to_owned()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn cells(row: &AgentRow) -> [String; 9] {
    let dash = || "-".to_owned();
    [
        row.agent.clone(),
        row.pod.clone().unwrap_or_else(dash),
        row.state.as_str().to_owned(),
        row.age_seconds.map_or_else(dash, render_span),
        row.restarts.map_or_else(dash, |n| n.to_string()),
        row.image.as_ref().map_or_else(dash, |i| match &i.digest {
            Some(digest) => format!("{}@{digest}", i.repository),
            None => i.repository.clone(),
        }),
        match (row.expires_in_seconds, row.expires_at_unix) {
            (Some(left), _) => render_time_left(left),
            (None, Some(at)) => format_instant(at),
            (None, None) => dash(),
        },
        row.secrets.to_string(),
        row.workspace.clone().unwrap_or_else(dash),
    ]
}

#[cfg(test)]
mod tests {
    //! The flag checks and the table's shape.

    use super::*;
    use apiary_classify::inventory::ImageSummary;
    use apiary_classify::status::StatusState;

    fn args(selector: Option<&str>, all: bool) -> ListArgs {
        ListArgs {
            selector: selector.map(str::to_owned),
            all,
            timeout: None,
        }
    }

    /// A blank selector and one with an empty term are refused, naming the flag.
    #[test]
    fn bad_selectors_are_refused_before_any_request() {
        for bad in ["", "  ", "a=b,", ",a=b", "a=b,,c=d"] {
            let err = list_options(&args(Some(bad), false)).expect_err(bad);
            assert_eq!(err.exit, crate::outcome::Exit::Refused, "{bad:?}");
            assert!(err.message.contains("--selector"), "{}", err.message);
        }
        let ok = list_options(&args(Some("team=research,tier in (a,b)"), true));
        // A set-based term's inner comma splits the text but leaves no term empty.
        let ok = ok.expect("accepted");
        assert!(ok.include_absent);
        assert_eq!(ok.selector.as_deref(), Some("team=research,tier in (a,b)"));
    }

    /// The table has a header and aligned columns; unknown values are `-`; empty is nothing.
    #[test]
    fn table_shape() {
        assert_eq!(table(&[]), "");
        let rows = [
            AgentRow {
                agent: "alpha".to_owned(),
                agent_id: "id".to_owned(),
                pod: Some("apiary-alpha-0123456789ab".to_owned()),
                state: StatusState::Started,
                age_seconds: Some(90),
                restarts: Some(0),
                image: Some(ImageSummary {
                    repository: "r.example/agent".to_owned(),
                    digest: Some("sha256:0123456789ab".to_owned()),
                }),
                expires_at_unix: None,
                expires_in_seconds: None,
                secrets: 1,
                workspace: None,
            },
            AgentRow {
                agent: "orphan".to_owned(),
                agent_id: "id2".to_owned(),
                pod: None,
                state: StatusState::Absent,
                age_seconds: None,
                restarts: None,
                image: None,
                expires_at_unix: None,
                expires_in_seconds: None,
                secrets: 2,
                workspace: None,
            },
        ];
        let text = table(&rows);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("AGENT   POD"), "{text}");
        assert!(lines[1].starts_with("alpha   apiary-alpha-0123456789ab  started  1m30s"));
        assert!(lines[1].contains("r.example/agent@sha256:0123456789ab"));
        assert!(lines[2].starts_with("orphan  -"), "{text}");
        assert!(lines[2].ends_with('2'), "{text}");
        let pod_column = lines[0].find("POD").expect("header");
        assert_eq!(lines[1].find("apiary-alpha"), Some(pod_column));
        assert!(!text.contains("WORKSPACE"), "{text}");
        // One agent with a workspace: the column appears, `-` for the others.
        let mut with_claim = rows.clone();
        with_claim[0].workspace = Some("apiary-alpha-0123456789ab-workspace".to_owned());
        let text = table(&with_claim);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].ends_with("SECRETS  WORKSPACE"), "{text}");
        assert!(
            lines[1].ends_with("1        apiary-alpha-0123456789ab-workspace"),
            "{text}"
        );
        assert!(lines[2].ends_with("2        -"), "{text}");
    }
}
