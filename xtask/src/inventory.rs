//! The scenario-inventory rule of `cargo xtask tidy`: `docs/deploy.md` and `docs/seeds.md`
//! § Scenario inventory list every scenario id with the tests that run it, and the two must not
//! drift apart. Reads files; changes nothing.
//!
//! # What is checked
//!
//! - Every row of an inventory (`* **R1** … Tests: `path::fn`, …`) names at least one test.
//! - Every test it names exists: the file (a path under `crates/`) is there and holds the last
//!   segment of the name as a word (a `fn`, or the module a scenario macro generates).
//! - Every scenario id a test is named after exists: a test function or module whose name starts
//!   with an id (`r1_fresh_deploy`, `k37_lean_equals_full`) names a row of an inventory, or one of
//!   the error ids of deploy.md § Errors (`E…`, `V…`). Only names whose letters are the prefix of
//!   some inventory id are read as ids, so `ipv6_address` is no id.
//! - Every row of the scenario table (`pub fn <row>() -> Row` with `ids: &["R1", …]` in
//!   [`TABLE`]) names at least one id, every id it names is in an inventory, and the inventory
//!   row of each of those ids names the table row (`substrate-kube/tests/scenarios/mod.rs::<row>`),
//!   so the table and the inventory cannot drift apart.

use std::collections::BTreeSet;
use std::path::Path;

/// The documents with a scenario inventory, from the workspace root.
const INVENTORIES: &[&str] = &["docs/deploy.md", "docs/seeds.md"];

/// The scenario table of the deploy loop, from the workspace root.
const TABLE: &str = "crates/substrate-kube/tests/scenarios/mod.rs";

/// Error ids defined in deploy.md § Errors rather than in an inventory.
const ERROR_PREFIXES: &[&str] = &["E", "V"];

/// One row of an inventory: its id and the tests it names (`path`, `name`).
#[derive(Debug, PartialEq, Eq)]
struct Row {
    id: String,
    tests: Vec<(String, String)>,
}

/// Run the rule over the workspace at `root`; one problem per drift found.
pub fn check(root: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let mut rows = Vec::new();
    for doc in INVENTORIES {
        match std::fs::read_to_string(root.join(doc)) {
            Ok(text) => rows.extend(inventory_rows(&text).into_iter().map(|row| (*doc, row))),
            Err(e) => problems.push(format!("{doc}: {e}")),
        }
    }
    for (doc, row) in &rows {
        if row.tests.is_empty() {
            problems.push(format!(
                "{doc} § Scenario inventory: {} names no test (add `Tests: `path::fn``)",
                row.id
            ));
        }
        for (path, name) in &row.tests {
            let file = root.join("crates").join(path);
            let last = name.rsplit("::").next().unwrap_or(name);
            match std::fs::read_to_string(&file) {
                Ok(text) if contains_word(&text, last) => {}
                Ok(_) => problems.push(format!(
                    "{doc} § Scenario inventory: {} names `{path}::{name}`, which that file does \
                     not define",
                    row.id
                )),
                Err(_) => problems.push(format!(
                    "{doc} § Scenario inventory: {} names `{path}`, which does not exist",
                    row.id
                )),
            }
        }
    }
    let ids: BTreeSet<String> = rows.iter().map(|(_, row)| row.id.clone()).collect();
    match std::fs::read_to_string(root.join(TABLE)) {
        Ok(text) => problems.extend(table_problems(&text, &rows)),
        Err(e) => problems.push(format!("{TABLE}: {e}")),
    }
    let prefixes: BTreeSet<String> = ids.iter().map(|id| letters(id).to_owned()).collect();
    for file in crate::walk::workspace_files(root) {
        if file.extension().and_then(|e| e.to_str()) != Some("rs") {
            continue;
        }
        let shown = file
            .strip_prefix(root)
            .unwrap_or(&file)
            .display()
            .to_string();
        if !shown.starts_with("crates/") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        for id in named_ids(&text, &prefixes) {
            let known = ids.contains(&id)
                || ERROR_PREFIXES
                    .iter()
                    .any(|p| letters(&id) == *p && id.len() > p.len());
            if !known {
                problems.push(format!(
                    "{shown}: a test is named after scenario {id}, which no § Scenario inventory \
                     lists (add its row, or rename the test)"
                ));
            }
        }
    }
    problems
}

/// The drift between the scenario table `text` and the inventory `rows`: a table row without
/// ids, an id no inventory lists, an inventory row that does not name the table row showing it.
fn table_problems(text: &str, rows: &[(&str, Row)]) -> Vec<String> {
    let path = TABLE.trim_start_matches("crates/");
    let mut problems = Vec::new();
    for (name, ids) in table_rows(text) {
        if ids.is_empty() {
            problems.push(format!(
                "{TABLE}: row {name} names no scenario id (`ids: &[…]`)"
            ));
        }
        for id in ids {
            let Some((doc, row)) = rows.iter().find(|(_, row)| row.id == id) else {
                problems.push(format!(
                    "{TABLE}: row {name} names scenario {id}, which no § Scenario inventory lists"
                ));
                continue;
            };
            if !row.tests.iter().any(|(p, n)| p == path && *n == name) {
                problems.push(format!(
                    "{doc} § Scenario inventory: {id} does not name the table row that shows it \
                     (add `{path}::{name}`)"
                ));
            }
        }
    }
    problems
}

/// The rows of the scenario table: each `pub fn <name>() -> Row` with the ids of the first
/// `ids: &[…]` line after it.
fn table_rows(text: &str) -> Vec<(String, Vec<String>)> {
    let mut rows: Vec<(String, Vec<String>)> = Vec::new();
    let mut open = false;
    for line in text.lines() {
        let line = line.trim_start();
        if let Some(rest) = line.strip_prefix("pub fn ")
            && line.ends_with("-> Row {")
        {
            let name = rest.split('(').next().unwrap_or(rest);
            rows.push((name.to_owned(), Vec::new()));
            open = true;
        } else if open && let Some(list) = line.strip_prefix("ids: &[") {
            let list = list.split(']').next().unwrap_or(list);
            let ids = list.split('"').skip(1).step_by(2).map(str::to_owned);
            if let Some((_, found)) = rows.last_mut() {
                found.extend(ids);
            }
            open = false;
        }
    }
    rows
}

/// The rows of the scenario inventory of one document: the lines `* **<ID>** …` from that
/// heading to the end, each with the `path::name` test references of its `Tests:` part.
fn inventory_rows(text: &str) -> Vec<Row> {
    let Some(start) = text.find("## Scenario inventory") else {
        return Vec::new();
    };
    let mut rows = Vec::new();
    for line in text[start..].lines() {
        let Some(rest) = line.strip_prefix("* **") else {
            continue;
        };
        let Some((id, after)) = rest.split_once("**") else {
            continue;
        };
        if !is_id(id) {
            continue;
        }
        let tests = after
            .split_once("Tests:")
            .map(|(_, refs)| test_refs(refs))
            .unwrap_or_default();
        rows.push(Row {
            id: id.to_owned(),
            tests,
        });
    }
    rows
}

/// The `` `path.rs::name` `` references in `text`.
fn test_refs(text: &str) -> Vec<(String, String)> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter_map(|quoted| {
            let (path, name) = quoted.split_once(".rs::")?;
            Some((format!("{path}.rs"), name.to_owned()))
        })
        .collect()
}

/// An id: capital letters, then digits, then at most one lowercase letter (`R1`, `K37`, `S12a`).
fn is_id(text: &str) -> bool {
    let head = letters(text);
    let rest = &text[head.len()..];
    let digits = rest.trim_end_matches(|c: char| c.is_ascii_lowercase());
    !head.is_empty()
        && !digits.is_empty()
        && digits.chars().all(|c| c.is_ascii_digit())
        && rest.len() - digits.len() <= 1
}

/// The leading capital letters of an id.
fn letters(id: &str) -> &str {
    let end = id
        .find(|c: char| !c.is_ascii_uppercase())
        .unwrap_or(id.len());
    &id[..end]
}

/// Whether `word` occurs in `text` between non-identifier characters.
fn contains_word(text: &str, word: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(ident) && !after.is_some_and(ident)
    })
}

/// The scenario ids the test functions and modules of `text` are named after: `fn r1_x` and
/// `mod s3_y` read as `R1` and `S3` when their letters are one of `prefixes` (each id in a name
/// joined by `_`, as in `r8_r29_…`, is read).
fn named_ids(text: &str, prefixes: &BTreeSet<String>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for line in text.lines() {
        let line = line.trim_start();
        let name = ["fn ", "async fn ", "mod "]
            .iter()
            .find_map(|keyword| line.strip_prefix(keyword));
        let Some(name) = name else {
            continue;
        };
        let name: String = name
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        for part in name.split('_') {
            let lead = part
                .find(|c: char| !c.is_ascii_lowercase())
                .unwrap_or(part.len());
            let id = format!("{}{}", part[..lead].to_ascii_uppercase(), &part[lead..]);
            if lead == 0 || !is_id(&id) {
                break;
            }
            let head = &id[..lead];
            if !prefixes.contains(head) && !ERROR_PREFIXES.contains(&head) {
                break;
            }
            found.insert(id);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "intro\n## Scenario inventory\n\n* **R1** fresh. Tests: \
                       `classify/src/deploy/machine/tests.rs::r1_create`, `substrate/tests/a.rs::r1_x`.\n\
                       * **K37a** lean. Tests: `seeds/tests/seeds/p.rs::m::k37_lean`.\n\
                       * **Cost.** not an id.\n* **S3** none yet.\n";

    #[test]
    fn rows_are_read_with_their_tests() {
        let rows = inventory_rows(DOC);
        assert_eq!(
            rows,
            vec![
                Row {
                    id: "R1".to_owned(),
                    tests: vec![
                        (
                            "classify/src/deploy/machine/tests.rs".to_owned(),
                            "r1_create".to_owned()
                        ),
                        ("substrate/tests/a.rs".to_owned(), "r1_x".to_owned()),
                    ],
                },
                Row {
                    id: "K37a".to_owned(),
                    tests: vec![(
                        "seeds/tests/seeds/p.rs".to_owned(),
                        "m::k37_lean".to_owned()
                    )],
                },
                Row {
                    id: "S3".to_owned(),
                    tests: vec![],
                },
            ]
        );
        assert!(inventory_rows("no inventory\n* **R1** x").is_empty());
    }

    #[test]
    fn ids_are_capitals_digits_and_one_letter() {
        for id in ["R1", "K37", "S12a", "GC3"] {
            assert!(is_id(id), "{id}");
        }
        for not in ["R", "1", "R1ab", "Cost.", "r1", "R-1", ""] {
            assert!(!is_id(not), "{not}");
        }
    }

    #[test]
    fn words_match_whole_identifiers_only() {
        assert!(contains_word("fn r1_x() {}", "r1_x"));
        assert!(contains_word("mod s3 {", "s3"));
        assert!(!contains_word("fn r1_xy() {}", "r1_x"));
        assert!(!contains_word("fn ar1_x() {}", "r1_x"));
    }

    #[test]
    fn test_names_read_as_ids_only_under_known_prefixes() {
        let prefixes: BTreeSet<String> = ["R", "K", "S"].map(str::to_owned).into();
        let text = "fn r8_r29_deadline() {}\n    async fn k37_lean() {}\nmod s3_undeploy {\n\
                    fn ipv6_address() {}\nfn e9_namespace() {}\nfn helper_r1() {}\n\
                    fn x1_unknown() {}\n";
        let ids = named_ids(text, &prefixes);
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        assert_eq!(ids, ["E9", "K37", "R29", "R8", "S3"]);
    }

    /// The table rule: ids are read from each row, and an unknown id, a row without ids and an
    /// inventory row that does not name the table row are each one problem.
    #[test]
    fn table_rows_and_the_inventory_name_each_other() {
        let table = "pub fn r1_fresh() -> Row {\n    Row {\n        ids: &[\"R1\", \"S3\"],\n\
                     pub fn helper() -> Expect {\n        ids: &[\"R9\"],\n\
                     pub fn k37_lean() -> Row {\n        ids: &[\"K37a\"],\n\
                     pub fn x9_unknown() -> Row {\n        ids: &[\"X9\"],\n\
                     pub fn empty() -> Row {\n        ids: &[],\n";
        assert_eq!(
            table_rows(table),
            [
                ("r1_fresh", vec!["R1", "S3"]),
                ("k37_lean", vec!["K37a"]),
                ("x9_unknown", vec!["X9"]),
                ("empty", vec![]),
            ]
            .map(|(n, ids)| (n.to_owned(), ids.into_iter().map(str::to_owned).collect()))
        );
        let doc = "## Scenario inventory\n\
                   * **R1** x. Tests: `substrate-kube/tests/scenarios/mod.rs::r1_fresh`.\n\
                   * **S3** y. Tests: `substrate/tests/a.rs::s3_x`.\n\
                   * **K37a** z. Tests: `substrate-kube/tests/scenarios/mod.rs::k37_lean`.\n";
        let rows: Vec<_> = inventory_rows(doc)
            .into_iter()
            .map(|r| ("d.md", r))
            .collect();
        let problems = table_problems(table, &rows);
        assert_eq!(problems.len(), 3, "{problems:#?}");
        assert!(
            problems[0].contains("S3 does not name the table row"),
            "{problems:?}"
        );
        assert!(
            problems[1].contains("scenario X9, which no"),
            "{problems:?}"
        );
        assert!(
            problems[2].contains("row empty names no scenario id"),
            "{problems:?}"
        );
    }

    #[test]
    fn the_repository_inventories_match_the_tests() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let problems = check(root);
        assert!(problems.is_empty(), "{problems:#?}");
    }
}
