//! Unit tests of the tracker rule: what counts as an issue citation, which text of a file is
//! read, which files are scanned and the exemptions. Pure: every input is a string.

use super::*;

fn cited(text: &str) -> Vec<&str> {
    issue_citations(text)
        .into_iter()
        .map(|(_, cited)| cited)
        .collect()
}

/// An issue cited by number is refused in any case and form: alone, with a section, in a
/// plural list, with `#`, across a line break.
#[test]
fn issue_numbers_are_refused() {
    assert_eq!(cited("the preflight (issue 14)."), vec!["issue 14"]);
    assert_eq!(cited("Issue 11 \u{a7} 6: a node read"), vec!["Issue 11"]);
    assert_eq!(cited("issues 8 and 14"), vec!["issues 8"]);
    assert_eq!(cited("ISSUE 2, issue #3"), vec!["ISSUE 2", "issue #3"]);
    assert_eq!(cited("see issue\n 14"), vec!["issue\n 14"]);
    assert_eq!(issue_citations("a\u{a7} issue 4")[0].0, "a\u{a7} ".len());
}

/// Words that only contain `issue`, and the word without a number after it, pass.
#[test]
fn other_uses_of_the_word_pass() {
    for text in [
        "the issue tracker",
        "tissue 4",
        "reissue 3",
        "issue_14",
        "issued 3 times",
        "issues: 3",
        "issue #x",
        "an earlier issue asked for one create",
    ] {
        assert!(cited(text).is_empty(), "{text}");
    }
}

/// In Rust only comments are read: a citation in a string, raw string or after a character
/// literal's quote is not one, a comment after code is, and each is reported with its line.
#[test]
fn rust_comments_are_read_and_literals_are_not() {
    let text = "//! Docs.\nlet s = \"// issue 14\";\nlet r = r#\"issue 14 \"// issue 1\"#;\n\
                let c = '\"'; // issue 9\nlet d = '\\''; /* \"issue 5\" */ fn f<'a>() {} // issue 7\n";
    let problems = file_problems("a.rs", Kind::Rust, text);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems[0].starts_with("a.rs:4: `issue 9` cites the issue tracker"));
    assert!(problems[1].starts_with("a.rs:5: `issue 7` cites the issue tracker"));
    assert!(problems[0].ends_with("or state the rule itself"));
}

/// A citation wrapped onto the next line of a doc comment is found, on the line of `issue`.
#[test]
fn wrapped_citation_is_found() {
    let text = "//! Docs.\n\n/// The preflight, see issue\n/// 14 for why.\nfn f() {}\n";
    let problems = file_problems("a.rs", Kind::Rust, text);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].starts_with("a.rs:3: `issue 14`"),
        "{problems:?}"
    );
}

/// Markdown is read whole, code spans and fences included.
#[test]
fn markdown_is_read_whole() {
    let text = "# Title\n\nA rule (deploy.md \u{a7} Loop).\n\n```\nissue 3\n```\n";
    let problems = file_problems("docs/x.md", Kind::Markdown, text);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].starts_with("docs/x.md:6: `issue 3`"));
}

/// Blanking keeps line breaks and the text outside literals, handles escapes, nested block
/// comments, byte and C raw strings, and leaves identifiers ending in `r` and lifetimes alone.
#[test]
fn literals_are_blanked_and_the_rest_kept() {
    assert_eq!(
        blank_literals("a(\"x\\\"y\") // \"z\""),
        "a(\"    \") // \"z\""
    );
    assert_eq!(blank_literals("\"a\nb\" x"), "\" \n \" x");
    assert_eq!(blank_literals("/* /* \" */ \" */ q"), "/* /* \" */ \" */ q");
    assert_eq!(blank_literals("br##\"a\"#b\"## c"), "br##\"    \"## c");
    assert_eq!(blank_literals("cr\"a\" for\"b\""), "cr\" \" for\" \"");
    assert_eq!(blank_literals("&'a str, 'x', b'\"'"), "&'a str, ' ', b' '");
}

/// Scanned: `.rs` files under crates/ and xtask/, `docs/*.md`, README.md and ARCHITECTURE.md;
/// not the changelog, the benchmark log, nested docs or other folders.
#[test]
fn scanned_files() {
    assert_eq!(scanned("crates/classify/src/lib.rs"), Some(Kind::Rust));
    assert_eq!(scanned("xtask/src/main.rs"), Some(Kind::Rust));
    assert_eq!(scanned("docs/deploy.md"), Some(Kind::Markdown));
    assert_eq!(scanned("README.md"), Some(Kind::Markdown));
    assert_eq!(scanned("ARCHITECTURE.md"), Some(Kind::Markdown));
    for skipped in [
        "CHANGELOG.md",
        "BENCHMARKS.md",
        "docs/old/notes.md",
        "crates/envtest/README.md",
        "tests/downstream/seeds-only/src/main.rs",
        "crates/cli/Cargo.toml",
    ] {
        assert_eq!(scanned(skipped), None, "{skipped}");
    }
}

/// An exempt file's problems are dropped; once it cites nothing its entry is noted as stale.
#[test]
fn exempt_files_are_skipped_and_stale_entries_noted() {
    let found = vec![
        ("a.rs".to_owned(), vec!["a.rs:1: x".to_owned()]),
        ("b.rs".to_owned(), vec!["b.rs:1: x".to_owned()]),
        ("c.rs".to_owned(), Vec::new()),
    ];
    let (problems, stale) = without_exempt(found, &[("b.rs", "editor"), ("c.rs", "editor")]);
    assert_eq!(problems, vec!["a.rs:1: x"]);
    assert_eq!(stale.len(), 1, "{stale:?}");
    assert!(stale[0].starts_with("c.rs no longer cites an issue"));
}
