//! Unit tests of `dotenv`: V10 and V11 of deploy.md § Templates, fingerprint, names, image,
//! input. Pure; no I/O (the text is passed in).

use std::path::Path;

use proptest::prelude::*;

use super::*;

const SECRET: &str = "hunter2SECRET";

fn parse(text: &str) -> Result<Env, DotenvError> {
    parse_dotenv(Path::new("/etc/agent.env"), text)
}

fn pairs(env: &Env) -> Vec<(String, String)> {
    env.iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

fn one(line: &str) -> String {
    let env = parse(line).unwrap_or_else(|e| panic!("{line:?}: {e}"));
    assert_eq!(env.len(), 1, "{line:?}");
    env.get("K")
        .unwrap_or_else(|| panic!("{line:?}: no K"))
        .to_owned()
}

/// V10: comments, blank and whitespace-only lines are ignored; `export` is accepted.
#[test]
fn v10_comments_blank_lines_and_export() {
    let text =
        "# a comment\n\n   \n  # indented comment\nexport A=1\n  B=2\nexport\tC=3\nexport=4\n";
    let env = parse(text).unwrap();
    assert_eq!(
        pairs(&env),
        [
            ("A".to_owned(), "1".to_owned()),
            ("B".to_owned(), "2".to_owned()),
            ("C".to_owned(), "3".to_owned()),
            ("export".to_owned(), "4".to_owned())
        ]
    );
}

/// V10: single quotes are literal, no escapes, no comment inside.
#[test]
fn v10_single_quotes_literal() {
    assert_eq!(one(r"K='a\nb # c $HOME'"), r"a\nb # c $HOME");
    assert_eq!(one("K=''"), "");
    assert_eq!(one("K='x'   # trailing comment"), "x");
    assert_eq!(one("K='x'#c"), "x");
    assert_eq!(one("K=  'x'  "), "x");
    assert_eq!(one("K='\"'"), "\"");
}

/// V10: double quotes support exactly `\\ \" \n \t \r`.
#[test]
fn v10_double_quote_escapes() {
    assert_eq!(one(r#"K="a\\b\"c\nd\te\rf""#), "a\\b\"c\nd\te\rf");
    assert_eq!(one(r##"K="# not a comment""##), "# not a comment");
    assert_eq!(one(r##"K="x" # comment"##), "x");
    assert_eq!(one(r#"K="""#), "");
    assert_eq!(one(r#"K="it's""#), "it's");
    assert_eq!(one(r#"K="é ü""#), "é ü");
}

/// V10: unquoted values are trimmed and a whitespace-then-`#` starts a comment.
#[test]
fn v10_unquoted_values_and_inline_comment() {
    assert_eq!(one("K=  value with  spaces  "), "value with  spaces");
    assert_eq!(one("K=value # comment"), "value");
    assert_eq!(one("K=value\t# comment"), "value");
    assert_eq!(one("K=a#b"), "a#b");
    assert_eq!(one("K=#b"), "#b");
    assert_eq!(one("K= #b"), "");
    assert_eq!(one("K="), "");
    assert_eq!(one("K=a=b"), "a=b");
    assert_eq!(one("K=a'b\"c"), "a'b\"c");
}

/// deploy.md § Environment, rule 3: no `$VAR` interpolation anywhere.
#[test]
fn no_interpolation() {
    assert_eq!(one("K=$HOME"), "$HOME");
    assert_eq!(one("K=\"${HOME}\""), "${HOME}");
    assert_eq!(one("K='$HOME'"), "$HOME");
}

/// deploy.md § Environment, rule 3: a trailing CR is dropped (CRLF files).
#[test]
fn trailing_cr_dropped() {
    let env = parse("A=1\r\nB=\"2\"\r\nC='3'\r\n").unwrap();
    assert_eq!(env.get("A"), Some("1"));
    assert_eq!(env.get("B"), Some("2"));
    assert_eq!(env.get("C"), Some("3"));
    // Only one CR is dropped; an inner CR in an unquoted value is trimmed as whitespace.
    assert_eq!(one("K=\"a\r\"\r"), "a\r");
}

/// deploy.md § Environment: a later line for the same key replaces the earlier one.
#[test]
fn later_line_wins() {
    assert_eq!(parse("K=1\nK=2").unwrap().get("K"), Some("2"));
}

/// V10: each kind of malformed line is refused with file and line number, without content.
#[test]
fn v10_malformed_lines_name_file_and_line_never_content() {
    let cases = [
        (SECRET.to_owned(), DotenvProblem::MissingEquals),
        (format!("export {SECRET}"), DotenvProblem::MissingEquals),
        (format!("K ={SECRET}"), DotenvProblem::InvalidKey),
        (format!("{SECRET}.x=1"), DotenvProblem::InvalidKey),
        (format!("=  {SECRET}"), DotenvProblem::InvalidKey),
        (
            format!("K='{SECRET}"),
            DotenvProblem::UnterminatedSingleQuote,
        ),
        (
            format!("K=\"{SECRET}"),
            DotenvProblem::UnterminatedDoubleQuote,
        ),
        (
            format!("K=\"{SECRET}\\"),
            DotenvProblem::UnterminatedDoubleQuote,
        ),
        (
            format!("K=\"{SECRET}\\x\""),
            DotenvProblem::UnsupportedEscape,
        ),
        (
            format!("K=\"{SECRET}\\$\""),
            DotenvProblem::UnsupportedEscape,
        ),
        (
            format!("K='a' {SECRET}"),
            DotenvProblem::TextAfterClosingQuote,
        ),
        (
            format!("K=\"a\"{SECRET}"),
            DotenvProblem::TextAfterClosingQuote,
        ),
    ];
    for (bad, problem) in cases {
        let text = format!("# header\nGOOD=1\n\n{bad}\nLATER=2\n");
        let err = parse(&text).unwrap_err();
        assert_eq!(err.line, 4, "{bad:?}");
        assert_eq!(err.problem, problem, "{bad:?}");
        assert_eq!(err.path, Path::new("/etc/agent.env"));
        let shown = err.to_string();
        assert!(shown.contains("/etc/agent.env"), "{shown}");
        assert!(shown.contains("line 4"), "{shown}");
        assert!(shown.contains(&problem.to_string()), "{shown}");
        assert!(!shown.contains(SECRET), "{shown}");
        assert!(!format!("{err:?}").contains(SECRET));
    }
}

/// Every problem has its own wording, and none leaks a line.
#[test]
fn problem_texts_are_distinct() {
    let all = [
        DotenvProblem::InvalidUtf8,
        DotenvProblem::MissingEquals,
        DotenvProblem::InvalidKey,
        DotenvProblem::UnterminatedSingleQuote,
        DotenvProblem::UnterminatedDoubleQuote,
        DotenvProblem::UnsupportedEscape,
        DotenvProblem::TextAfterClosingQuote,
    ];
    let texts: std::collections::BTreeSet<String> = all.iter().map(ToString::to_string).collect();
    assert_eq!(texts.len(), all.len());
    assert!(DotenvProblem::InvalidUtf8.to_string().contains("UTF-8"));
    assert!(DotenvProblem::InvalidKey.to_string().contains("POSIX"));
}

/// Invalid UTF-8 is refused with the line where it occurs.
#[test]
fn invalid_utf8_names_line() {
    let path = Path::new("x.env");
    let bytes = b"A=1\nB=2\nC=\xff\xfe\n";
    let err = parse_dotenv_bytes(path, bytes).unwrap_err();
    assert_eq!(err.line, 3);
    assert_eq!(err.problem, DotenvProblem::InvalidUtf8);
    assert!(err.to_string().starts_with("env file x.env, line 3"));
    let err = parse_dotenv_bytes(path, b"\xffA=1").unwrap_err();
    assert_eq!(err.line, 1);
    let env = parse_dotenv_bytes(path, b"A=1\n").unwrap();
    assert_eq!(env.get("A"), Some("1"));
}

/// An empty file and a file without final newline parse.
#[test]
fn empty_and_unterminated_files() {
    assert!(parse("").unwrap().is_empty());
    assert_eq!(parse("A=1").unwrap().get("A"), Some("1"));
}

/// Writes `value` as a double-quoted dotenv value.
fn quote(value: &str) -> String {
    let mut out = String::from("\"");
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

proptest! {
    /// Round trip: any map of POSIX keys to any values, written double-quoted (with optional
    /// `export`, indentation, comments and CRLF), parses back to the same map.
    #[test]
    fn dotenv_round_trip(
        entries in proptest::collection::btree_map("[A-Za-z_][A-Za-z0-9_]{0,10}", any::<String>(), 0..8),
        export in any::<bool>(),
        crlf in any::<bool>(),
    ) {
        let newline = if crlf { "\r\n" } else { "\n" };
        let mut text = format!("# generated{newline}{newline}");
        for (k, v) in &entries {
            let prefix = if export { "  export " } else { "" };
            text.push_str(&format!("{prefix}{k}={} # note{newline}", quote(v)));
        }
        let env = parse(&text).unwrap();
        let got: std::collections::BTreeMap<String, String> = env.into_map();
        prop_assert_eq!(got, entries);
    }

    /// Unquoted values without `#`, quotes or surrounding whitespace round-trip verbatim.
    #[test]
    fn unquoted_round_trip(value in "[A-Za-z0-9=$:/._-]([A-Za-z0-9=$:/._ -]{0,20}[A-Za-z0-9=$:/._-])?") {
        let env = parse(&format!("K={value}")).unwrap();
        prop_assert_eq!(env.get("K"), Some(value.as_str()));
    }

    /// V11: whatever the line, a refusal never contains it.
    #[test]
    fn v11_errors_never_contain_the_line(line in "[^\n]{1,40}", secret in "[A-Za-z0-9]{16}") {
        let text = format!("{line}{secret}");
        if let Err(err) = parse(&text) {
            let shown = err.to_string();
            prop_assert!(!shown.contains(&secret));
            prop_assert_eq!(err.line, 1);
        }
    }
}
