//! The file-length rule of `cargo xtask tidy`: no non-test source file is longer than [`MAX_LINES`]
//! lines, so each file can be read as one idea. Reads files; changes nothing.
//!
//! A source file is any `.rs` file under a `src` or an `examples` directory. Test files are
//! exempt: a file named `tests.rs`, anything under a `tests` directory, and a module declared
//! only for tests (its parent declares it under `#[cfg(test)]`, or it begins with
//! `#![cfg(test)]`). The whole file is
//! counted, inline `#[cfg(test)]` modules included: a long test module belongs in its own
//! `tests.rs` (STYLE.md § Tests).
//!
//! Files still being split are listed in [`ALLOWED`] with who removes them. An entry whose file
//! is no longer too long (or is gone) is named on stderr on every run, so the list only shrinks;
//! it is a note, not a failure, because the helper who splits a file may commit before the entry
//! goes (make it a failure once the list is empty).

use std::path::{Path, PathBuf};

/// The longest a non-test source file may be, in lines.
pub const MAX_LINES: usize = 600;

/// Files allowed over [`MAX_LINES`] for now: (path from the workspace root, who shortens it).
const ALLOWED: &[(&str, &str)] = &[];

/// Check every source file under `root` against [`MAX_LINES`] and [`ALLOWED`]; one problem per
/// offending file, naming it and its length.
pub fn check(root: &Path, files: &[PathBuf]) -> Vec<String> {
    let mut measured = Vec::new();
    for file in files {
        let shown = shown(root, file);
        if !is_source(&shown) || is_test_only(file) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(file) else {
            continue; // tidy's own pass reports an unreadable file
        };
        measured.push((shown, line_count(&text)));
    }
    let (problems, stale) = problems(&measured, ALLOWED);
    for note in stale {
        eprintln!("tidy note: {note}");
    }
    problems
}

/// The problems of `measured` (path, lines) against the allow-list `allowed`, and the notes on
/// its stale entries.
fn problems(measured: &[(String, usize)], allowed: &[(&str, &str)]) -> (Vec<String>, Vec<String>) {
    let mut problems = Vec::new();
    let mut stale = Vec::new();
    for (path, lines) in measured {
        let listed = allowed.iter().find(|(p, _)| p == path);
        match listed {
            None if *lines > MAX_LINES => problems.push(format!(
                "{path}: {lines} lines, longer than {MAX_LINES}: split it by idea (or move its \
                 tests to a tests.rs)"
            )),
            Some((_, who)) if *lines <= MAX_LINES => stale.push(format!(
                "{path}: {lines} lines, no longer over {MAX_LINES}: remove its entry ({who}) from \
                 ALLOWED in xtask/src/lengths.rs"
            )),
            _ => {}
        }
    }
    for (path, who) in allowed {
        if !measured.iter().any(|(p, _)| p == path) {
            stale.push(format!(
                "{path}: allowed over {MAX_LINES} lines ({who}) but no such source file: remove \
                 its entry from ALLOWED in xtask/src/lengths.rs"
            ));
        }
    }
    (problems, stale)
}

/// `file` relative to `root`, with `/` separators.
fn shown(root: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(root).unwrap_or(file);
    relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// Whether the workspace-relative `path` is a source file the rule applies to: under a `src` or
/// an `examples` directory (an example is code a reader copies), not under a `tests` directory,
/// not named `tests.rs`.
fn is_source(path: &str) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    let Some((name, dirs)) = parts.split_last() else {
        return false;
    };
    name.ends_with(".rs")
        && *name != "tests.rs"
        && (dirs.contains(&"src") || dirs.contains(&"examples"))
        && !dirs.contains(&"tests")
}

/// The number of lines of `text` (a final line without a newline counts).
fn line_count(text: &str) -> usize {
    text.lines().count()
}

/// Whether `file` is a module compiled only for tests: it starts (after its doc comment) with
/// `#![cfg(test)]`, or its parent module declares it under `#[cfg(test)]`.
fn is_test_only(file: &Path) -> bool {
    if let Ok(text) = std::fs::read_to_string(file)
        && starts_cfg_test(&text)
    {
        return true;
    }
    let Some((name, parents)) = declaration_sites(file) else {
        return false;
    };
    parents.iter().any(|parent| {
        std::fs::read_to_string(parent).is_ok_and(|text| declared_for_tests(&text, &name))
    })
}

/// Whether `text`'s first item, after comments and blank lines, is `#![cfg(test)]`.
fn starts_cfg_test(text: &str) -> bool {
    text.lines()
        .map(str::trim)
        .find(|line| !line.is_empty() && !line.starts_with("//"))
        .is_some_and(|line| line.replace(' ', "") == "#![cfg(test)]")
}

/// The module name of `file` and the files that could declare it (`a/b.rs` and `a/b/mod.rs` are
/// module `b`, declared in `a.rs`, `a/mod.rs`, or the crate root `a/lib.rs` / `a/main.rs`).
fn declaration_sites(file: &Path) -> Option<(String, Vec<PathBuf>)> {
    let stem = file.file_stem()?.to_str()?;
    let (name, dir) = if stem == "mod" {
        let dir = file.parent()?;
        (dir.file_name()?.to_str()?.to_owned(), dir.parent()?)
    } else {
        (stem.to_owned(), file.parent()?)
    };
    if matches!(name.as_str(), "lib" | "main") {
        return None;
    }
    let mut sites = vec![dir.join("mod.rs"), dir.join("lib.rs"), dir.join("main.rs")];
    if let (Some(up), Some(dir_name)) = (dir.parent(), dir.file_name()) {
        let mut sibling = dir_name.to_os_string();
        sibling.push(".rs");
        sites.push(up.join(sibling));
    }
    Some((name, sites))
}

/// Whether `text` declares `mod name;` (any visibility) with `#[cfg(test)]` among the attribute
/// lines right above it.
fn declared_for_tests(text: &str, name: &str) -> bool {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    lines.iter().enumerate().any(|(index, line)| {
        let declaration = line
            .split_whitespace()
            .skip_while(|word| word.starts_with("pub"))
            .collect::<Vec<_>>()
            .join(" ");
        if declaration != format!("mod {name};") {
            return false;
        }
        lines[..index]
            .iter()
            .rev()
            .take_while(|above| above.starts_with("#[") || above.starts_with("//"))
            .any(|above| above.replace(' ', "") == "#[cfg(test)]")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A long source file is named with its length; one at the limit is not.
    #[test]
    fn long_source_files_are_named_with_their_length() {
        let measured = vec![
            ("crates/a/src/big.rs".to_owned(), 601),
            ("crates/a/src/fits.rs".to_owned(), 600),
        ];
        let (problems, stale) = problems(&measured, &[]);
        assert!(stale.is_empty(), "{stale:?}");
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].starts_with("crates/a/src/big.rs: 601 lines"),
            "{problems:?}"
        );
    }

    /// An allowed file may stay long; an entry whose file fits, or is gone, is noted so the list
    /// only shrinks.
    #[test]
    fn the_allow_list_only_shrinks() {
        let allowed = [
            ("crates/a/src/big.rs", "H0"),
            ("crates/a/src/fixed.rs", "H1"),
            ("crates/a/src/gone.rs", "H2"),
        ];
        let measured = vec![
            ("crates/a/src/big.rs".to_owned(), 900),
            ("crates/a/src/fixed.rs".to_owned(), 400),
        ];
        let (problems, stale) = problems(&measured, &allowed);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(stale.len(), 2, "{stale:?}");
        assert!(stale[0].starts_with("crates/a/src/fixed.rs: 400 lines, no longer"));
        assert!(stale[0].contains("(H1)"));
        assert!(stale[1].starts_with("crates/a/src/gone.rs: allowed"));
    }

    /// Only files under `src` or `examples` count, and test files there do not.
    #[test]
    fn test_files_are_not_source_files() {
        assert!(is_source("crates/a/src/lib.rs"));
        assert!(is_source("xtask/src/tidy.rs"));
        assert!(is_source("crates/a/src/model/store.rs"));
        assert!(!is_source("crates/a/src/model/tests.rs"));
        assert!(!is_source("crates/a/src/model/tests/watch.rs"));
        assert!(!is_source("crates/a/tests/suite.rs"));
        assert!(!is_source("tests/downstream/user/src/main.rs"));
        assert!(is_source("crates/a/examples/demo.rs"));
        assert!(is_source("crates/a/examples/demo/report.rs"));
        assert!(!is_source("crates/a/src/notes.md"));
    }

    /// A module declared under `#[cfg(test)]` is test-only; the same name declared plainly, or a
    /// different module under `#[cfg(test)]`, is not.
    #[test]
    fn modules_declared_for_tests_are_recognised() {
        let parent = "//! P.\n\nmod store;\n#[cfg(test)]\n#[allow(dead_code, reason = \"x\")]\npub(crate) mod fixtures;\n";
        assert!(declared_for_tests(parent, "fixtures"));
        assert!(!declared_for_tests(parent, "store"));
        assert!(!declared_for_tests(parent, "absent"));
        assert!(starts_cfg_test(
            "//! Fixtures.\n\n#![cfg(test)]\nfn f() {}\n"
        ));
        assert!(!starts_cfg_test("//! Code.\nfn f() {}\n#![cfg(test)]\n"));
    }

    /// A file's module is looked up in every place that can declare it, on disk.
    #[test]
    fn test_only_files_are_found_through_their_parent() {
        let dir = std::env::temp_dir().join(format!("xtask-lengths-{}", std::process::id()));
        let src = dir.join("src");
        std::fs::create_dir_all(src.join("model")).expect("dirs");
        std::fs::write(
            src.join("lib.rs"),
            "//! L.\nmod model;\n#[cfg(test)]\nmod support;\n",
        )
        .expect("lib.rs");
        std::fs::write(src.join("support.rs"), "//! S.\n").expect("support.rs");
        std::fs::write(
            src.join("model.rs"),
            "//! M.\n#[cfg(test)]\nmod fixtures;\nmod store;\n",
        )
        .expect("model.rs");
        std::fs::write(src.join("model/fixtures.rs"), "//! F.\n").expect("fixtures.rs");
        std::fs::write(src.join("model/store.rs"), "//! S.\n").expect("store.rs");
        let only_for_tests = [
            is_test_only(&src.join("support.rs")),
            is_test_only(&src.join("model/fixtures.rs")),
            is_test_only(&src.join("model/store.rs")),
            is_test_only(&src.join("model.rs")),
            is_test_only(&src.join("lib.rs")),
        ];
        std::fs::remove_dir_all(&dir).expect("cleaned up");
        assert_eq!(only_for_tests, [true, true, false, false, false]);
    }
}
