//! The tracker rule of `cargo xtask tidy`: the repository cites its own documents, never the
//! issues of the tracker it was planned in, which a reader of the repository cannot open. A
//! citation of an issue by number (`issue <n>`, `Issue <n>` and a section of it, `issues <n> and
//! <m>`, `issue #<n>`, in any case) is a problem; the fix is to cite the in-repo document that
//! states the rule (a heading of `docs/deploy.md`, `docs/seeds.md`, `BENCHMARKS.md`, ...) or to
//! state the rule itself. Reads files; changes nothing.
//!
//! # What is scanned
//!
//! The comments of every `.rs` file under `crates/` and `xtask/`, and the whole text of
//! `docs/*.md`, `README.md` and `ARCHITECTURE.md`. `CHANGELOG.md` (history) and `BENCHMARKS.md`
//! (dated measurements) are not. Text is read per paragraph as the citation rule reads it
//! (`crate::citations`), so a citation wrapped onto the next comment line is still found. In
//! `.rs` files string and character literals are blanked first, so a `//` inside a literal
//! starts no comment and a test may spell the refused form in a string.
//!
//! # Matching
//!
//! The word `issue` or `issues` in any case, not preceded by a letter, digit or `_`, then
//! whitespace, an optional `#` and a digit. So `tissue <n>` and "the issue tracker" pass.
//!
//! Files someone else is still rewriting are listed in [`EXEMPT`]. An entry whose file no longer
//! cites an issue is named on stderr on every run, so the list only shrinks.

use std::path::Path;

use crate::citations::{Kind, paragraphs};

/// Files not checked for now: (path from the workspace root, why and who removes the entry).
const EXEMPT: &[(&str, &str)] = &[];

/// Run the rule over the workspace at `root`; one problem per citation found.
pub fn check(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for file in crate::walk::workspace_files(root) {
        let shown = file
            .strip_prefix(root)
            .unwrap_or(&file)
            .display()
            .to_string();
        let Some(kind) = scanned(&shown) else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue; // the citation rule reports an unreadable file
        };
        found.push((shown.clone(), file_problems(&shown, kind, &text)));
    }
    let (problems, stale) = without_exempt(found, EXEMPT);
    for note in stale {
        eprintln!("tidy note: {note}");
    }
    problems
}

/// How a file is read, or `None` when the rule does not scan it (`shown` is its path from the
/// workspace root, with `/` separators).
fn scanned(shown: &str) -> Option<Kind> {
    if shown.ends_with(".rs") && (shown.starts_with("crates/") || shown.starts_with("xtask/")) {
        return Some(Kind::Rust);
    }
    let in_docs = shown
        .strip_prefix("docs/")
        .is_some_and(|name| !name.contains('/') && name.ends_with(".md"));
    (in_docs || shown == "README.md" || shown == "ARCHITECTURE.md").then_some(Kind::Markdown)
}

/// The problems of each scanned file (path, problems) once the files of `exempt` are dropped,
/// and a note for each entry of `exempt` whose file was scanned and cites nothing.
fn without_exempt(
    found: Vec<(String, Vec<String>)>,
    exempt: &[(&str, &str)],
) -> (Vec<String>, Vec<String>) {
    let mut problems = Vec::new();
    let mut stale = Vec::new();
    for (shown, file_problems) in found {
        match exempt.iter().find(|(path, _)| *path == shown) {
            None => problems.extend(file_problems),
            Some((_, why)) if file_problems.is_empty() => stale.push(format!(
                "{shown} no longer cites an issue: remove its entry ({why}) from EXEMPT in \
                 xtask/src/tracker.rs"
            )),
            Some(_) => {}
        }
    }
    (problems, stale)
}

/// The problems of one file's text, read as `kind`.
fn file_problems(shown: &str, kind: Kind, text: &str) -> Vec<String> {
    let text = match kind {
        Kind::Rust => blank_literals(text),
        Kind::Toml | Kind::Markdown => text.to_owned(),
    };
    let mut problems = Vec::new();
    for paragraph in paragraphs(kind, &text) {
        for (offset, cited) in issue_citations(&paragraph.text) {
            problems.push(format!(
                "{shown}:{}: `{cited}` cites the issue tracker, which readers of the repository \
                 cannot open: cite the in-repo document that states the rule instead (e.g. \
                 deploy.md \u{a7} <heading>), or state the rule itself",
                paragraph.line_of(offset)
            ));
        }
    }
    problems
}

/// Every citation of an issue by number in `text`: its byte offset and the cited words (from
/// `issue` to the end of the number).
fn issue_citations(text: &str) -> Vec<(usize, &str)> {
    let lower = text.to_ascii_lowercase();
    let mut found = Vec::new();
    for (at, word) in lower.match_indices("issue") {
        let starts_word = text[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        let after = &lower[at + word.len()..];
        let after = after.strip_prefix('s').unwrap_or(after);
        let spaced = after.trim_start();
        if !starts_word || spaced.len() == after.len() {
            continue;
        }
        let number = spaced.strip_prefix('#').unwrap_or(spaced);
        let digits = number.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 {
            let end = lower.len() - number.len() + digits;
            found.push((at, &text[at..end]));
        }
    }
    found
}

/// Rust source with the contents of every string and character literal replaced by spaces (line
/// breaks kept, so line numbers hold). Comments and code are copied as they are; a quote inside a
/// comment opens nothing, and a lifetime (`'a`) is not a character literal.
fn blank_literals(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            let end = chars[i..]
                .iter()
                .position(|&c| c == '\n')
                .map_or(chars.len(), |n| i + n);
            out.extend(&chars[i..end]);
            i = end;
        } else if c == '/' && next == Some('*') {
            let end = block_comment_end(&chars, i);
            out.extend(&chars[i..end]);
            i = end;
        } else if c == '"' {
            i = blank_quoted(&chars, i, '"', &mut out);
        } else if c == '\'' && (next == Some('\\') || chars.get(i + 2) == Some(&'\'')) {
            i = blank_quoted(&chars, i, '\'', &mut out);
        } else if let Some(hashes) = raw_string_hashes(&chars, i) {
            i = blank_raw(&chars, i, hashes, &mut out);
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The index just past the (possibly nested) block comment that opens at `start`.
fn block_comment_end(chars: &[char], start: usize) -> usize {
    let mut depth = 0;
    let mut i = start;
    while i < chars.len() {
        match (chars[i], chars.get(i + 1)) {
            ('/', Some('*')) => {
                depth += 1;
                i += 2;
            }
            ('*', Some('/')) => {
                depth -= 1;
                i += 2;
                if depth == 0 {
                    return i;
                }
            }
            _ => i += 1,
        }
    }
    chars.len()
}

/// Copy the literal that opens with `quote` at `start` (escapes honoured) with its contents
/// blanked; returns the index just past its closing quote.
fn blank_quoted(chars: &[char], start: usize, quote: char, out: &mut String) -> usize {
    out.push(quote);
    let mut i = start + 1;
    while i < chars.len() && chars[i] != quote {
        let width = if chars[i] == '\\' { 2 } else { 1 };
        for &c in chars.iter().skip(i).take(width) {
            out.push(blank(c));
        }
        i += width;
    }
    if i < chars.len() {
        out.push(quote);
        i += 1;
    }
    i
}

/// The number of `#`s of the raw string literal (`r"…"`, `br#"…"#`, `cr"…"`) whose `r` is at
/// `at`, or `None` when no raw string starts there (an identifier ending in `r`, `r#ident`).
fn raw_string_hashes(chars: &[char], at: usize) -> Option<usize> {
    if chars[at] != 'r' {
        return None;
    }
    let ident = |i: Option<usize>| i.and_then(|i| chars.get(i)).is_some_and(|&c| is_ident(c));
    let before = at.checked_sub(1);
    let prefixed = before.is_some_and(|b| matches!(chars[b], 'b' | 'c'));
    let token_start = if prefixed {
        before.and_then(|b| b.checked_sub(1))
    } else {
        before
    };
    if ident(token_start) {
        return None;
    }
    let hashes = chars[at + 1..].iter().take_while(|&&c| c == '#').count();
    (chars.get(at + 1 + hashes) == Some(&'"')).then_some(hashes)
}

/// Copy the raw string literal whose `r` is at `start` with its contents blanked; returns the
/// index just past its closing `"` and `hashes` `#`s.
fn blank_raw(chars: &[char], start: usize, hashes: usize, out: &mut String) -> usize {
    let open = start + 2 + hashes;
    out.extend(&chars[start..open]);
    let mut i = open;
    while i < chars.len() {
        let closes =
            chars[i] == '"' && chars[i + 1..].iter().take_while(|&&c| c == '#').count() >= hashes;
        if closes {
            out.extend(&chars[i..=i + hashes]);
            return i + 1 + hashes;
        }
        out.push(blank(chars[i]));
        i += 1;
    }
    i
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// A blanked character: a line break stays one, anything else becomes a space.
fn blank(c: char) -> char {
    if c == '\n' { '\n' } else { ' ' }
}

#[cfg(test)]
mod tests;
