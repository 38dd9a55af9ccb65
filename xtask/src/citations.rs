//! The citation rule of `cargo xtask tidy`: every section-sign citation of `deploy.md` or
//! `seeds.md` in the repository names a heading that exists in `docs/deploy.md` or
//! `docs/seeds.md`. Reads files; changes nothing; decides nothing about apiary itself.
//!
//! # What is scanned
//!
//! Every `*.rs`, `*.md` and `*.toml` file under the workspace root, skipping hidden folders,
//! `target` folders and `mutants.out*`. In `.rs` files only comments are read (the text after
//! the first `//` of a line, without its `/`/`!` markers), so string literals are never
//! citations; in `.toml` files only the text after the first `#`; `.md` files are read whole.
//!
//! # Paragraphs
//!
//! Citations are read per paragraph, so one that wraps onto the next comment line is still
//! whole. A paragraph is a run of consecutive non-blank lines: in `.md` files any lines; in
//! `.rs` and `.toml` files whole-line comments of the same kind (`//!`, `///`, `//`, `#`). A
//! comment that follows code on its line is a paragraph of its own. Lines are joined with one
//! space.
//!
//! # Which document a section sign cites
//!
//! Each section sign is classified by the word before it (the last whitespace-separated word
//! of the paragraph text before it, with surrounding backticks, quotes, brackets and
//! parentheses removed):
//!
//! 1. `deploy.md` or `seeds.md`, or a path ending in `/deploy.md` or `/seeds.md`: a citation
//!    of that document.
//! 2. A foreign reference, not checked: the word is a number (`RFC 9110`), ends in `.md`
//!    (another document, e.g. `STYLE.md`), or is two or more capital letters (`README`).
//! 3. Anything else (`and`, a comma, an opening parenthesis, the start of the paragraph): a
//!    continuation of the nearest earlier reference of kind 1 or 2 in the paragraph: it cites
//!    the same document, or is foreign too. Inside `docs/deploy.md` and `docs/seeds.md` a
//!    continuation with no earlier reference cites the file itself; elsewhere it is a problem,
//!    because a reader cannot tell which document is meant.
//!
//! # Matching a heading
//!
//! The headings of a document are its ATX heading lines (`#` to `######` then a space) outside
//! fenced code blocks, with the markers and surrounding spaces removed; two equal headings in
//! one document are a problem. The cited text is everything after the section sign (leading
//! spaces skipped) to the end of the paragraph. It names a heading when the heading is a prefix
//! of it and the character after that prefix is not a letter, digit, `-` or `_` (or there is
//! none); the longest such heading wins. So `deploy.md § Environment, rule 7` names
//! `Environment` and `deploy.md § Age gate` names `Age gate`, while a section number cited the
//! same way names nothing and is reported. Backticks are ignored on both sides; the comparison
//! is otherwise exact and case-sensitive. Because prose may follow a heading, the rule cannot
//! tell a wrong longer name from a right shorter one followed by words (a citation of a
//! non-existent "Secret settling" passes as the heading `Secret` followed by "settling"); that
//! residue is for review, the rule catches numbers, typos and renamed headings.

use std::path::Path;

/// The two design documents a citation may name, with their place in the repository.
const DOCUMENTS: [(&str, &str); 2] = [
    ("deploy.md", "docs/deploy.md"),
    ("seeds.md", "docs/seeds.md"),
];

/// The section sign.
const SIGN: char = '\u{a7}';

/// How a file's text is read.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    /// Rust: comments only.
    Rust,
    /// TOML: `#` comments only.
    Toml,
    /// Markdown: every line.
    Markdown,
}

impl Kind {
    fn of(path: &Path) -> Option<Kind> {
        match path.extension()?.to_str()? {
            "rs" => Some(Kind::Rust),
            "toml" => Some(Kind::Toml),
            "md" => Some(Kind::Markdown),
            _ => None,
        }
    }
}

/// One paragraph: its joined text and, for each joined line, the byte offset where it starts
/// in the text and its 1-based line number in the file.
pub(crate) struct Paragraph {
    pub(crate) text: String,
    starts: Vec<(usize, usize)>,
}

impl Paragraph {
    /// The 1-based line number of the file line that holds byte `offset` of the text.
    pub(crate) fn line_of(&self, offset: usize) -> usize {
        self.starts
            .iter()
            .rev()
            .find(|(start, _)| *start <= offset)
            .map_or(0, |(_, line)| *line)
    }
}

/// A citation found in a file: where, which document (an index into [`DOCUMENTS`]) and the
/// cited text (everything after the section sign to the end of its paragraph).
#[derive(Debug, PartialEq, Eq)]
struct Citation {
    line: usize,
    document: usize,
    cited: String,
}

/// A continuation that belongs to no document.
#[derive(Debug, PartialEq, Eq)]
struct Orphan {
    line: usize,
    cited: String,
}

/// Run the rule over the workspace at `root`; one problem per line of output.
pub fn check(root: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let mut headings: Vec<Vec<String>> = Vec::new();
    for (name, path) in DOCUMENTS {
        match std::fs::read_to_string(root.join(path)) {
            Ok(text) => {
                let found = headings_of(&text);
                problems.extend(duplicate_headings(path, &found));
                headings.push(found);
            }
            Err(e) => {
                problems.push(format!(
                    "{path}: unreadable ({e}); citations of {name} cannot be checked"
                ));
                headings.push(Vec::new());
            }
        }
    }
    for file in crate::walk::workspace_files(root) {
        let Some(kind) = Kind::of(&file) else {
            continue;
        };
        let shown = file
            .strip_prefix(root)
            .unwrap_or(&file)
            .display()
            .to_string();
        let Ok(text) = std::fs::read_to_string(&file) else {
            problems.push(format!("{shown}: unreadable"));
            continue;
        };
        let own = DOCUMENTS.iter().position(|(_, path)| shown == *path);
        problems.extend(file_problems(&shown, kind, own, &text, &headings));
    }
    problems
}

/// The problems of one file, given the headings of each document.
fn file_problems(
    shown: &str,
    kind: Kind,
    own: Option<usize>,
    text: &str,
    headings: &[Vec<String>],
) -> Vec<String> {
    let (citations, orphans) = citations_in(kind, own, text);
    let mut problems = Vec::new();
    for citation in citations {
        let (name, path) = DOCUMENTS[citation.document];
        if heading_named(&citation.cited, &headings[citation.document]).is_none() {
            problems.push(format!(
                "{shown}:{}: `{name} \u{a7} {}` names no heading of {path} (cite by heading)",
                citation.line,
                snippet(&citation.cited)
            ));
        }
    }
    for orphan in orphans {
        problems.push(format!(
            "{shown}:{}: `\u{a7} {}` cites no document: write deploy.md or seeds.md before it",
            orphan.line,
            snippet(&orphan.cited)
        ));
    }
    problems
}

/// The citations and orphan continuations of a file's text.
fn citations_in(kind: Kind, own: Option<usize>, text: &str) -> (Vec<Citation>, Vec<Orphan>) {
    let mut citations = Vec::new();
    let mut orphans = Vec::new();
    for paragraph in paragraphs(kind, text) {
        let mut current = own.map_or(Current::Nothing, Current::Document);
        for (offset, _) in paragraph.text.match_indices(SIGN) {
            let before = &paragraph.text[..offset];
            let cited = paragraph.text[offset + SIGN.len_utf8()..]
                .trim_start()
                .to_owned();
            let line = paragraph.line_of(offset);
            match classify(last_word(before)) {
                Cited::Document(document) => {
                    current = Current::Document(document);
                    citations.push(Citation {
                        line,
                        document,
                        cited,
                    });
                }
                Cited::Foreign => current = Current::Foreign,
                Cited::Continuation => match current {
                    Current::Document(document) => citations.push(Citation {
                        line,
                        document,
                        cited,
                    }),
                    Current::Foreign => {}
                    Current::Nothing => orphans.push(Orphan { line, cited }),
                },
            }
        }
    }
    (citations, orphans)
}

/// What a continuation in a paragraph continues.
#[derive(Clone, Copy)]
enum Current {
    /// No citation yet (and the file is not one of the documents).
    Nothing,
    /// A citation of `DOCUMENTS[index]`.
    Document(usize),
    /// A section of something else, which this rule does not check.
    Foreign,
}

/// What the word before a section sign says about it.
#[derive(Debug, PartialEq, Eq)]
enum Cited {
    /// A citation of `DOCUMENTS[index]`.
    Document(usize),
    /// A section of something else (an issue, an RFC, another document).
    Foreign,
    /// A further section of the document cited last.
    Continuation,
}

fn classify(word: &str) -> Cited {
    for (index, (name, _)) in DOCUMENTS.iter().enumerate() {
        if word == *name || word.ends_with(&format!("/{name}")) {
            return Cited::Document(index);
        }
    }
    let number = !word.is_empty() && word.chars().all(|c| c.is_ascii_digit());
    let capitals = word.len() >= 2 && word.chars().all(|c| c.is_ascii_uppercase());
    if number || capitals || word.ends_with(".md") {
        Cited::Foreign
    } else {
        Cited::Continuation
    }
}

/// The last whitespace-separated word of `before`, without surrounding backticks, quotes,
/// brackets and parentheses.
fn last_word(before: &str) -> &str {
    let word = before.split_whitespace().next_back().unwrap_or("");
    word.trim_matches(|c| matches!(c, '`' | '"' | '\'' | '(' | ')' | '[' | ']'))
}

/// The paragraphs of a file's text, as described in the module docs.
pub(crate) fn paragraphs(kind: Kind, text: &str) -> Vec<Paragraph> {
    let mut done = Vec::new();
    let mut open: Option<(String, Paragraph)> = None;
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        let (marker, content, whole_line) = match kind {
            Kind::Markdown => ("", line.trim(), true),
            Kind::Rust => match comment(line, "//") {
                Some((marker, content, whole)) => (marker, content, whole),
                None => ("", "", true),
            },
            Kind::Toml => match comment(line, "#") {
                Some((marker, content, whole)) => (marker, content, whole),
                None => ("", "", true),
            },
        };
        let joins =
            whole_line && !content.is_empty() && open.as_ref().is_some_and(|(m, _)| m == marker);
        if joins {
            if let Some((_, paragraph)) = open.as_mut() {
                paragraph.text.push(' ');
                paragraph.starts.push((paragraph.text.len(), number));
                paragraph.text.push_str(content);
            }
            continue;
        }
        if let Some((_, paragraph)) = open.take() {
            done.push(paragraph);
        }
        if content.is_empty() {
            continue;
        }
        let paragraph = Paragraph {
            text: content.to_owned(),
            starts: vec![(0, number)],
        };
        if whole_line {
            open = Some((marker.to_owned(), paragraph));
        } else {
            done.push(paragraph);
        }
    }
    if let Some((_, paragraph)) = open {
        done.push(paragraph);
    }
    done
}

/// The comment of a line: its marker (`//!`, `///`, `//` or `#`), its trimmed text, and whether
/// the comment is the whole line (only whitespace before it). `None` when the line has none.
fn comment<'a>(line: &'a str, opener: &'static str) -> Option<(&'static str, &'a str, bool)> {
    let at = line.find(opener)?;
    let whole = line[..at].trim().is_empty();
    let rest = &line[at + opener.len()..];
    let (marker, rest) = if opener == "//" {
        if let Some(rest) = rest.strip_prefix('!') {
            ("//!", rest)
        } else if let Some(rest) = rest.strip_prefix('/') {
            ("///", rest)
        } else {
            ("//", rest)
        }
    } else {
        ("#", rest)
    };
    Some((marker, rest.trim(), whole))
}

/// The ATX headings of a Markdown document outside fenced code blocks, in order.
fn headings_of(markdown: &str) -> Vec<String> {
    let mut headings = Vec::new();
    let mut fenced = false;
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let hashes = trimmed.chars().take_while(|c| *c == '#').count();
        if (1..=6).contains(&hashes)
            && let Some(rest) = trimmed[hashes..].strip_prefix(' ')
        {
            let heading = rest.trim().trim_end_matches('#').trim();
            if !heading.is_empty() {
                headings.push(heading.to_owned());
            }
        }
    }
    headings
}

/// A problem for every heading that occurs more than once in one document (reported once).
fn duplicate_headings(path: &str, headings: &[String]) -> Vec<String> {
    let mut problems = Vec::new();
    for (index, heading) in headings.iter().enumerate() {
        let earlier = headings[..index].iter().filter(|h| *h == heading).count();
        if earlier == 1 {
            problems.push(format!("{path}: heading `{heading}` occurs more than once"));
        }
    }
    problems
}

/// The heading that `cited` names, if any: the longest heading that is a prefix of it ending
/// at a word boundary (backticks ignored on both sides).
fn heading_named<'h>(cited: &str, headings: &'h [String]) -> Option<&'h str> {
    let cited = cited.replace('`', "");
    headings
        .iter()
        .filter(|heading| {
            let heading = heading.replace('`', "");
            cited.strip_prefix(heading.as_str()).is_some_and(|after| {
                after
                    .chars()
                    .next()
                    .is_none_or(|c| !(c.is_alphanumeric() || c == '-' || c == '_'))
            })
        })
        .max_by_key(|heading| heading.replace('`', "").len())
        .map(String::as_str)
}

/// The cited text as a problem shows it: up to the first `,`, `;` or `)`, at most 48 characters.
fn snippet(cited: &str) -> String {
    let end = cited.find([',', ';', ')']).unwrap_or(cited.len());
    cited[..end].trim_end().chars().take(48).collect()
}

#[cfg(test)]
mod tests;
