//! Unit tests of the crate table of `ARCHITECTURE.md`: rendering from hand-written `cargo
//! metadata` JSON, the stale and fresh verdicts, and the refusal of missing or misplaced markers.
//! Pure: every input is a string or a JSON value.

use super::*;

/// A small workspace: a core with no dependencies, a shell with an optional dependency behind a
/// feature, a build dependency and a dev-dependency that turns a feature on, and a tool with
/// nothing but crates.io dependencies.
fn metadata() -> Value {
    serde_json::json!({"packages": [
        {"name": "shell", "features": {"fake": ["dep:model"], "default": []}, "dependencies": [
            {"name": "serde", "kind": null, "optional": false, "features": []},
            {"name": "model", "kind": null, "optional": true, "features": []},
            {"name": "core", "kind": null, "optional": false, "features": []},
            {"name": "gen", "kind": "build", "optional": false, "features": []},
            {"name": "shell", "kind": "dev", "optional": false, "features": ["fake"]},
            {"name": "proptest", "kind": "dev", "optional": false, "features": []}]},
        {"name": "core", "features": {}, "dependencies": []},
        {"name": "model", "features": {}, "dependencies": [
            {"name": "core", "kind": null, "optional": false, "features": []}]},
        {"name": "gen", "features": {}, "dependencies": []},
        {"name": "tool", "features": {}, "dependencies": [
            {"name": "serde_json", "kind": null, "optional": false, "features": []}]},
    ]})
}

/// The table it renders, as the document holds it.
const TABLE: &str = "
| Package | Depends on | Dev-dependencies |
|---|---|---|
| `core` | — | — |
| `gen` | — | — |
| `model` | `core` | — |
| `shell` | `core`, `gen` (build), `model` (feature `fake`) | `shell` (with `fake`) |
| `tool` | — | — |

";

/// `table` between the markers of a small document.
fn document(table: &str) -> String {
    format!("# Architecture\n\n### Crate dependencies\n\n{BEGIN}{table}{END}\n\n## Code map\n")
}

/// Rows are sorted by package and arrows by target; only workspace packages appear; an optional
/// dependency names the feature that enables it, a build dependency says so, and a
/// dev-dependency names the features it turns on.
#[test]
fn table_is_rendered_from_metadata() {
    assert_eq!(render(&rows(&metadata()).expect("rows")), TABLE);
}

/// The order of packages and dependencies in the metadata does not change the table.
#[test]
fn rendering_does_not_depend_on_metadata_order() {
    let mut reversed = metadata();
    let packages = reversed["packages"].as_array_mut().expect("packages");
    packages.reverse();
    for package in packages {
        if let Some(deps) = package["dependencies"].as_array_mut() {
            deps.reverse();
        }
    }
    assert_eq!(render(&rows(&reversed).expect("rows")), TABLE);
}

/// An optional dependency is named by every feature that turns it on (`dep:x`, the implicit
/// `x`, `x/f`, through its new name when renamed) but not by a weak `x?/f`; with no such
/// feature it is still marked optional. A target-specific dependency names its target.
#[test]
fn optional_dependencies_name_their_features() {
    let json = serde_json::json!({"packages": [
        {"name": "a", "features": {
            "sim": ["dep:b"], "demo": ["b/fast"], "weak": ["b?/fast"], "own": ["c2"]},
         "dependencies": [
            {"name": "b", "kind": null, "optional": true, "features": []},
            {"name": "c", "rename": "c2", "kind": null, "optional": true, "features": []},
            {"name": "d", "kind": null, "optional": true, "features": []},
            {"name": "e", "kind": null, "optional": false, "target": "cfg(unix)",
             "features": ["x", "y"]}]},
        {"name": "b", "features": {}, "dependencies": []},
        {"name": "c", "features": {}, "dependencies": []},
        {"name": "d", "features": {}, "dependencies": []},
        {"name": "e", "features": {}, "dependencies": []},
    ]});
    let rendered = render(&rows(&json).expect("rows"));
    let row = rendered
        .lines()
        .find(|l| l.starts_with("| `a`"))
        .expect("row of a");
    assert_eq!(
        row,
        "| `a` | `b` (features `demo`, `sim`), `c` (feature `own`), `d` (optional), `e` (on \
         `cfg(unix)`; with `x`, `y`) | — |"
    );
}

/// Metadata without packages, or with a nameless one, renders no table.
#[test]
fn unusable_metadata_is_refused() {
    assert!(rows(&serde_json::json!({"packages": []})).is_err());
    assert!(rows(&serde_json::json!({})).is_err());
    assert!(rows(&serde_json::json!({"packages": [{"features": {}}]})).is_err());
}

/// A document holding the rendered table passes.
#[test]
fn fresh_table_passes() {
    assert_eq!(staleness(&document(TABLE), TABLE), None);
}

/// A table missing an arrow is stale: the problem names the first differing row and the
/// command that rewrites it.
#[test]
fn stale_table_is_reported_with_the_fix() {
    let stale = TABLE.replace("| `model` | `core` |", "| `model` | — |");
    let problem = staleness(&document(&stale), TABLE).expect("stale");
    assert!(
        problem.starts_with("ARCHITECTURE.md: the crate dependency table is stale"),
        "{problem}"
    );
    assert!(
        problem.contains("run `cargo xtask architecture`"),
        "{problem}"
    );
    assert!(
        problem.contains(
            "the document has `| `model` | — | — |`, the manifests give `| `model` \
                          | `core` | — |`"
        ),
        "{problem}"
    );
}

/// A table that lost its last row or its closing blank line, or whose lines end in CRLF, is
/// stale too.
#[test]
fn shorter_or_respaced_table_is_stale() {
    let shorter = TABLE.replace("| `tool` | — | — |\n", "");
    let problem = staleness(&document(&shorter), TABLE).expect("stale");
    assert!(
        problem.contains("has (a blank line), the manifests give `| `tool`"),
        "{problem}"
    );
    let unspaced = TABLE.trim_end_matches('\n');
    let problem = staleness(&document(unspaced), TABLE).expect("stale");
    assert!(
        problem.contains("has (nothing), the manifests give (a blank line)"),
        "{problem}"
    );
    let crlf = TABLE.replace('\n', "\r\n");
    let problem = staleness(&document(&crlf), TABLE).expect("stale");
    assert!(problem.contains("differs only in line breaks"), "{problem}");
}

/// `replace` rewrites only the text between the markers, and its result is fresh.
#[test]
fn replace_rewrites_only_the_marked_block() {
    let old = document("\n| stale |\n\n");
    let new = replace(&old, TABLE).expect("markers");
    assert_eq!(new, document(TABLE));
    assert_eq!(staleness(&new, TABLE), None);
    assert_eq!(replace(&new, TABLE).expect("markers"), new);
}

/// A document without either marker, with a marker twice, or with the end before the
/// beginning is refused by both the check and the rewrite, naming the markers.
#[test]
fn missing_or_misplaced_markers_are_refused() {
    let no_begin = document(TABLE).replace(BEGIN, "");
    let no_end = document(TABLE).replace(END, "");
    let twice = format!("{}{BEGIN}\n", document(TABLE));
    let swapped = format!("{END}\n{TABLE}{BEGIN}\n");
    for (document, says) in [
        (&no_begin, "no `<!-- crate-deps:begin -->` line"),
        (&no_end, "no `<!-- crate-deps:end -->` line"),
        (&twice, "`<!-- crate-deps:begin -->` appears more than once"),
        (&swapped, "`<!-- crate-deps:end -->` comes before"),
    ] {
        let problem = staleness(document, TABLE).expect("refused");
        assert!(problem.starts_with("ARCHITECTURE.md: "), "{problem}");
        assert!(problem.contains(says), "{problem}");
        assert_eq!(replace(document, TABLE), Err(problem));
    }
}
