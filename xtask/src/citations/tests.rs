//! Unit tests of the citation rule: paragraphs, the document a section sign cites, heading
//! matching and the problems reported. Pure: every input is a string.

use super::*;

/// Headings of a small deploy document and a small seeds document.
fn documents() -> Vec<Vec<String>> {
    let deploy = "# Title\n\n## Environment\n\n### Age gate\n\n### Create\n\n### Create-intent fingerprint\n\n## `status`, `undeploy`\n";
    let seeds = "# Seeds\n\n## Watch mode\n\n```\n## Not a heading\n```\n";
    vec![headings_of(deploy), headings_of(seeds)]
}

fn problems(kind: Kind, own: Option<usize>, text: &str) -> Vec<String> {
    file_problems("f", kind, own, text, &documents())
}

/// ATX headings are found with their markers removed; fenced code is not read.
#[test]
fn headings_skip_fenced_code() {
    assert_eq!(
        documents()[1],
        vec!["Seeds".to_owned(), "Watch mode".to_owned()]
    );
    assert_eq!(
        headings_of("#NoSpace\n####### seven\n## Closed ##\n"),
        vec!["Closed"]
    );
}

/// A heading that occurs twice is reported once.
#[test]
fn duplicate_heading_is_reported_once() {
    let headings: Vec<String> = ["A", "B", "A", "A"].map(String::from).to_vec();
    assert_eq!(
        duplicate_headings("d.md", &headings),
        vec!["d.md: heading `A` occurs more than once".to_owned()]
    );
}

/// The longest heading that is a prefix of the cited text at a word boundary wins.
#[test]
fn longest_heading_at_a_boundary_wins() {
    let deploy = &documents()[0];
    assert_eq!(
        heading_named("Environment, rule 7", deploy),
        Some("Environment")
    );
    assert_eq!(heading_named("Age gate argues", deploy), Some("Age gate"));
    assert_eq!(
        heading_named("Create-intent fingerprint).", deploy),
        Some("Create-intent fingerprint")
    );
    assert_eq!(heading_named("Create: pause", deploy), Some("Create"));
    assert_eq!(
        heading_named("status, undeploy", deploy),
        Some("`status`, `undeploy`")
    );
    // A boundary is required: a letter, digit, `-` or `_` continues the word.
    assert_eq!(heading_named("Created", deploy), None);
    assert_eq!(heading_named("Create-intent", deploy), None);
    assert_eq!(heading_named("Environment_x", deploy), None);
    // Case-sensitive, and a section number names nothing.
    assert_eq!(heading_named("environment", deploy), None);
    assert_eq!(heading_named("3.5 rule 7", deploy), None);
    assert_eq!(heading_named("", deploy), None);
}

/// Citations of both documents in Rust comments are checked; a bad one is reported with its
/// line and document.
#[test]
fn rust_comment_citations_are_checked() {
    let text = "//! Env (deploy.md \u{a7} Environment).\n\nfn f() {}\n/// See seeds.md \u{a7} 7 item 4.\nfn g() {}\n";
    assert_eq!(
        problems(Kind::Rust, None, text),
        vec![
            "f:4: `seeds.md \u{a7} 7 item 4.` names no heading of docs/seeds.md (cite by heading)"
        ]
    );
}

/// String literals in Rust code are not citations; a comment after code is.
#[test]
fn rust_strings_are_not_read() {
    assert!(problems(Kind::Rust, None, "let s = \"deploy.md \u{a7} 12\";\n").is_empty());
    assert_eq!(
        problems(Kind::Rust, None, "let x = 1; // deploy.md \u{a7} 12\n").len(),
        1
    );
}

/// A citation wrapped onto the next comment line of the same kind is read whole.
#[test]
fn wrapped_citation_is_joined() {
    let text = "/// Waits (deploy.md \u{a7} Create-intent\n/// fingerprint).\n";
    assert!(problems(Kind::Rust, None, text).is_empty());
    // A different comment kind or a blank comment line ends the paragraph.
    let split = "//! Waits (deploy.md \u{a7} Create-intent\n/// fingerprint).\n";
    assert_eq!(problems(Kind::Rust, None, split).len(), 1);
    let blank = "/// Waits (deploy.md \u{a7} Create-intent\n///\n/// fingerprint).\n";
    assert_eq!(problems(Kind::Rust, None, blank).len(), 1);
}

/// Bare section signs continue the document cited before them in the paragraph.
#[test]
fn continuations_inherit_the_document() {
    let good = "//! (deploy.md \u{a7} Environment, \u{a7} Age gate and \u{a7} Create)\n//! (\u{a7} Create)\n";
    assert!(problems(Kind::Rust, None, good).is_empty());
    let bad = "//! (seeds.md \u{a7} Watch mode, \u{a7} Age gate)\n";
    assert_eq!(
        problems(Kind::Rust, None, bad),
        vec!["f:1: `seeds.md \u{a7} Age gate` names no heading of docs/seeds.md (cite by heading)"]
    );
}

/// A bare section sign with nothing before it in the paragraph is a problem outside the
/// documents and a citation of the file itself inside one.
#[test]
fn orphan_continuations() {
    let text = "/// The \u{a7}6.4 text.\n";
    assert_eq!(
        problems(Kind::Rust, None, text),
        vec!["f:1: `\u{a7} 6.4 text.` cites no document: write deploy.md or seeds.md before it"]
    );
    let doc = "See \u{a7} Environment and \u{a7} Nowhere.\n";
    assert_eq!(
        problems(Kind::Markdown, Some(0), doc),
        vec![
            "f:1: `deploy.md \u{a7} Nowhere.` names no heading of docs/deploy.md (cite by heading)"
        ]
    );
}

/// RFCs and other documents are foreign, and so are their continuations.
#[test]
fn foreign_references_are_not_checked() {
    let text = "//! (RFC 9110 \u{a7} 2, \u{a7} 4; RFC 9110\n//! \u{a7} Date/Time Formats; STYLE.md \u{a7} Tests; README \u{a7} Kind)\n";
    assert!(problems(Kind::Rust, None, text).is_empty());
    // A document citation after a foreign one is checked again.
    let mixed = "//! RFC 9110 \u{a7} 2 and deploy.md \u{a7} 12.\n";
    assert_eq!(problems(Kind::Rust, None, mixed).len(), 1);
}

/// Backticks, brackets and paths around the document name are accepted; Markdown is read
/// whole and TOML only in comments.
#[test]
fn markdown_and_toml_forms() {
    let md = "The contract is `deploy.md` \u{a7} Environment and [seeds.md](docs/seeds.md) \u{a7} Watch\nmode; docs/deploy.md \u{a7} Age gate.\n";
    assert!(problems(Kind::Markdown, None, md).is_empty());
    let toml = "# Feature (seeds.md \u{a7} Watch mode).\nx = \"seeds.md \u{a7} 9\"\ny = 1 # deploy.md \u{a7} 9\n";
    assert_eq!(
        problems(Kind::Toml, None, toml),
        vec!["f:3: `deploy.md \u{a7} 9` names no heading of docs/deploy.md (cite by heading)"]
    );
}

/// The word classification, on its own.
#[test]
fn words_are_classified() {
    assert_eq!(classify("deploy.md"), Cited::Document(0));
    assert_eq!(classify("docs/seeds.md"), Cited::Document(1));
    assert_eq!(classify("STYLE.md"), Cited::Foreign);
    assert_eq!(classify("3"), Cited::Foreign);
    assert_eq!(classify("README"), Cited::Foreign);
    assert_eq!(classify("and"), Cited::Continuation);
    assert_eq!(classify("K37,"), Cited::Continuation);
    assert_eq!(classify("E"), Cited::Continuation);
    assert_eq!(classify(""), Cited::Continuation);
    assert_eq!(last_word("see (`deploy.md`"), "deploy.md");
    assert_eq!(
        last_word("[seeds.md](docs/seeds.md)"),
        "seeds.md](docs/seeds.md"
    );
}

/// A scratch repository under the system temp directory, removed on drop.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("apiary-citations-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create scratch dir");
        Scratch(dir)
    }

    fn write(&self, path: &str, text: &str) {
        let path = self.0.join(path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("create dirs");
        std::fs::write(path, text).expect("write file");
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The whole rule over a tree: `.rs`, `.md` and `.toml` files are read, `target`, hidden and
/// `mutants.out*` folders and other extensions are not, and the documents check themselves.
#[test]
fn check_walks_the_tree() {
    let repo = Scratch::new("walk");
    repo.write(
        "docs/deploy.md",
        "# D\n\n## Create\n\nSee \u{a7} Create and \u{a7} Gone.\n",
    );
    repo.write("docs/seeds.md", "# S\n\n## Watch mode\n");
    repo.write(
        "crates/a/src/lib.rs",
        "//! (deploy.md \u{a7} Create, seeds.md \u{a7} Watch mode)\n//! deploy.md \u{a7} 8.3\n",
    );
    repo.write("crates/a/Cargo.toml", "# seeds.md \u{a7} Watch mode\n");
    repo.write("README.md", "seeds.md \u{a7} Nope\n");
    for skipped in [
        "target/x.rs",
        ".git/y.md",
        "mutants.out/z.rs",
        "notes.txt",
        "rbac/r.yaml",
    ] {
        repo.write(skipped, "// deploy.md \u{a7} 99\n");
    }
    let mut problems = check(&repo.0);
    problems.sort();
    assert_eq!(
        problems,
        vec![
            "README.md:1: `seeds.md \u{a7} Nope` names no heading of docs/seeds.md (cite by heading)",
            "crates/a/src/lib.rs:2: `deploy.md \u{a7} 8.3` names no heading of docs/deploy.md (cite by heading)",
            "docs/deploy.md:5: `deploy.md \u{a7} Gone.` names no heading of docs/deploy.md (cite by heading)",
        ]
    );
}

/// Without the documents every citation is unchecked, so their absence is itself a problem.
#[test]
fn missing_documents_are_reported() {
    let repo = Scratch::new("missing");
    repo.write("src/main.rs", "//! Nothing cited.\n");
    let problems = check(&repo.0);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(
        problems[0].starts_with("docs/deploy.md: unreadable"),
        "{problems:?}"
    );
    assert!(
        problems[1].starts_with("docs/seeds.md: unreadable"),
        "{problems:?}"
    );
}
