//! The crate dependency table of `ARCHITECTURE.md`: rendered from `cargo metadata`, written in
//! place by `cargo xtask architecture`, and checked by `cargo xtask tidy`, so the code map's
//! arrows cannot drift from the manifests.
//!
//! # The table
//!
//! One row per workspace package, sorted by name: the workspace packages it depends on (normal
//! and build dependencies; an optional one names the features that enable it, a build one says
//! so), and the workspace packages its `[dev-dependencies]` add, with the features they turn on.
//! It sits between [`BEGIN`] and [`END`], two HTML comments a Markdown reader does not show.
//!
//! The pure half (reading the packages out of the metadata JSON, rendering the table, finding and
//! replacing the marked block) performs no I/O; only [`check`] and [`write()`] read or write the
//! document, and only [`write()`] changes it.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::path::Path;

use serde_json::Value;

/// The document holding the table, from the workspace root.
const DOCUMENT: &str = "ARCHITECTURE.md";

/// The line before the table.
const BEGIN: &str = "<!-- crate-deps:begin -->";

/// The line after the table.
const END: &str = "<!-- crate-deps:end -->";

/// Tidy's rule: the table in `ARCHITECTURE.md` is the one `metadata` (`cargo metadata
/// --no-deps` JSON) renders. One problem when it is stale or cannot be found.
pub fn check(root: &Path, metadata: &Value) -> Vec<String> {
    let fresh = match rows(metadata) {
        Ok(rows) => render(&rows),
        Err(e) => return vec![e],
    };
    match std::fs::read_to_string(root.join(DOCUMENT)) {
        Ok(document) => staleness(&document, &fresh).into_iter().collect(),
        Err(e) => vec![format!("{DOCUMENT}: unreadable: {e}")],
    }
}

/// `cargo xtask architecture`: rewrite the table of `ARCHITECTURE.md` from `metadata` (`cargo
/// metadata --no-deps` JSON), leaving every other byte of the document as it is.
pub fn write(root: &Path, metadata: &Value) -> Result<(), String> {
    let fresh = render(&rows(metadata)?);
    let path = root.join(DOCUMENT);
    let document =
        std::fs::read_to_string(&path).map_err(|e| format!("{DOCUMENT}: unreadable: {e}"))?;
    let updated = replace(&document, &fresh)?;
    if updated == document {
        eprintln!("xtask: {DOCUMENT}: the crate dependency table is up to date");
        return Ok(());
    }
    std::fs::write(&path, updated).map_err(|e| format!("{DOCUMENT}: could not write: {e}"))?;
    eprintln!("xtask: {DOCUMENT}: rewrote the crate dependency table");
    Ok(())
}

/// One row of the table: a workspace package and its arrows to other workspace packages.
#[derive(Debug, Default, PartialEq, Eq)]
struct Row {
    /// Normal and build dependencies: (package, note).
    depends_on: BTreeSet<(String, String)>,
    /// `[dev-dependencies]`: (package, note).
    dev: BTreeSet<(String, String)>,
}

/// The rows of the table, keyed (and so sorted) by package name, from `cargo metadata --no-deps`
/// JSON. Only dependencies on packages of the workspace are kept.
///
/// # Errors
///
/// The JSON lists no packages, or a package or dependency lacks its name.
fn rows(metadata: &Value) -> Result<BTreeMap<String, Row>, String> {
    let packages = array(metadata.get("packages"));
    if packages.is_empty() {
        return Err("cargo metadata listed no packages".to_owned());
    }
    let names: BTreeSet<&str> = packages
        .iter()
        .map(|p| text(p.get("name")).ok_or("cargo metadata: a package without a name"))
        .collect::<Result<_, _>>()?;
    let mut rows = BTreeMap::new();
    for package in packages {
        let name = text(package.get("name")).unwrap_or_default();
        let mut row = Row::default();
        for dep in array(package.get("dependencies")) {
            let dep_name = text(dep.get("name"))
                .ok_or_else(|| format!("cargo metadata: a dependency of {name} without a name"))?;
            if !names.contains(dep_name) {
                continue;
            }
            let mut notes = Vec::new();
            // `kind` is null for a normal dependency, "dev" or "build" otherwise.
            let kind = text(dep.get("kind"));
            if kind == Some("build") {
                notes.push("build".to_owned());
            }
            if dep.get("optional").and_then(Value::as_bool) == Some(true) {
                notes.push(enabling_features(package, dep));
            }
            if let Some(target) = text(dep.get("target")) {
                notes.push(format!("on `{target}`"));
            }
            let features: Vec<String> = array(dep.get("features"))
                .iter()
                .filter_map(|f| f.as_str())
                .map(|f| format!("`{f}`"))
                .collect();
            if !features.is_empty() {
                notes.push(format!("with {}", features.join(", ")));
            }
            let entry = (dep_name.to_owned(), notes.join("; "));
            if kind == Some("dev") {
                row.dev.insert(entry);
            } else {
                row.depends_on.insert(entry);
            }
        }
        rows.insert(name.to_owned(), row);
    }
    Ok(rows)
}

/// The note of an optional dependency: the package's features that turn it on by naming it
/// (`dep:x`, the implicit feature `x`, or `x/feature`; `x?/feature` does not turn it on).
fn enabling_features(package: &Value, dep: &Value) -> String {
    // A renamed dependency is named by its new name in the feature table.
    let key = text(dep.get("rename"))
        .or_else(|| text(dep.get("name")))
        .unwrap_or_default();
    let enables = |entry: &str| {
        entry.strip_prefix("dep:") == Some(key)
            || entry == key
            || entry.split_once('/').is_some_and(|(dep, _)| dep == key)
    };
    let mut features: Vec<String> = package
        .get("features")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter(|(_, entries)| {
            array(Some(entries))
                .iter()
                .any(|e| e.as_str().is_some_and(enables))
        })
        .map(|(feature, _)| format!("`{feature}`"))
        .collect();
    features.sort();
    match features.len() {
        0 => "optional".to_owned(),
        1 => format!("feature {}", features[0]),
        _ => format!("features {}", features.join(", ")),
    }
}

/// The table as it stands between the markers: a blank line, the Markdown table, a blank line.
fn render(rows: &BTreeMap<String, Row>) -> String {
    let cell = |arrows: &BTreeSet<(String, String)>| -> String {
        if arrows.is_empty() {
            return "—".to_owned();
        }
        let shown: Vec<String> = arrows
            .iter()
            .map(|(name, note)| match note.as_str() {
                "" => format!("`{name}`"),
                note => format!("`{name}` ({note})"),
            })
            .collect();
        shown.join(", ")
    };
    let mut out = String::from("\n| Package | Depends on | Dev-dependencies |\n|---|---|---|\n");
    for (name, row) in rows {
        out.push_str(&format!(
            "| `{name}` | {} | {} |\n",
            cell(&row.depends_on),
            cell(&row.dev)
        ));
    }
    out.push('\n');
    out
}

/// The byte range of `document` between the end of the [`BEGIN`] marker and the start of the
/// [`END`] marker.
///
/// # Errors
///
/// Either marker is missing or appears twice, or the end comes before the beginning.
fn marked(document: &str) -> Result<Range<usize>, String> {
    let find = |marker: &str| -> Result<usize, String> {
        let mut found = document.match_indices(marker).map(|(at, _)| at);
        match (found.next(), found.next()) {
            (Some(at), None) => Ok(at),
            (None, _) => Err(format!(
                "{DOCUMENT}: no `{marker}` line: the crate dependency table must sit between \
                 `{BEGIN}` and `{END}` (add both lines, then run `cargo xtask architecture`)"
            )),
            (Some(_), Some(_)) => Err(format!(
                "{DOCUMENT}: `{marker}` appears more than once: keep one table between one \
                 `{BEGIN}` and one `{END}`"
            )),
        }
    };
    let begin = find(BEGIN)? + BEGIN.len();
    let end = find(END)?;
    if end < begin {
        return Err(format!(
            "{DOCUMENT}: `{END}` comes before `{BEGIN}`: swap the two lines, then run `cargo \
             xtask architecture`"
        ));
    }
    Ok(begin..end)
}

/// `document` with the text between the markers replaced by `table`.
///
/// # Errors
///
/// As [`marked`].
fn replace(document: &str, table: &str) -> Result<String, String> {
    let range = marked(document)?;
    Ok(format!(
        "{}{table}{}",
        &document[..range.start],
        &document[range.end..]
    ))
}

/// The problem with `document`'s table, when it is not `fresh` (or cannot be found): says which
/// line differs first and how to regenerate it.
fn staleness(document: &str, fresh: &str) -> Option<String> {
    let range = match marked(document) {
        Ok(range) => range,
        Err(problem) => return Some(problem),
    };
    let current = &document[range];
    if current == fresh {
        return None;
    }
    let current: Vec<&str> = current.lines().collect();
    let fresh: Vec<&str> = fresh.lines().collect();
    let shown = |line: Option<&&str>| match line {
        None => "(nothing)".to_owned(),
        Some(&"") => "(a blank line)".to_owned(),
        Some(line) => format!("`{line}`"),
    };
    let detail = match (0..current.len().max(fresh.len())).find(|&i| current.get(i) != fresh.get(i))
    {
        Some(i) => format!(
            "first difference: the document has {}, the manifests give {}",
            shown(current.get(i)),
            shown(fresh.get(i))
        ),
        None => "it differs only in line breaks".to_owned(),
    };
    Some(format!(
        "{DOCUMENT}: the crate dependency table is stale against `cargo metadata`: run `cargo \
         xtask architecture` to rewrite it ({detail})"
    ))
}

/// The elements of a JSON array, or none.
fn array(value: Option<&Value>) -> &[Value] {
    value.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// A JSON string, or `None`.
fn text(value: Option<&Value>) -> Option<&str> {
    value.and_then(Value::as_str)
}

#[cfg(test)]
mod tests;
