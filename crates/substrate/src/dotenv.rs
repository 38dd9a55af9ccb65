//! The `--env-file` format (deploy.md § Environment, rule 3): a strict dotenv dialect with
//! comments, blank lines, `export `, literal single quotes, double quotes with exactly the
//! escapes `\\ \" \n \t \r`, inline ` #` comments for unquoted values, and no interpolation.
//!
//! Pure: the caller reads the file and passes its path (for messages only) and its contents.
//! A refusal names the file and the line number and never the line's content, because the line
//! may hold a secret.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::env::{Env, validate_key};

/// What is wrong with one line of an env file. No variant carries any text of the line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DotenvProblem {
    /// The file is not valid UTF-8 (the line is where the first invalid byte sits).
    InvalidUtf8,
    /// The line has no `=` after the key.
    MissingEquals,
    /// The text before `=` is not a POSIX name (this includes a space before `=`).
    InvalidKey,
    /// A `'` value does not close on the same line.
    UnterminatedSingleQuote,
    /// A `"` value does not close on the same line.
    UnterminatedDoubleQuote,
    /// A `"` value uses an escape other than `\\ \" \n \t \r`.
    UnsupportedEscape,
    /// Something other than whitespace or a `#` comment follows a closing quote.
    TextAfterClosingQuote,
}

impl fmt::Display for DotenvProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::InvalidUtf8 => "the file is not valid UTF-8",
            Self::MissingEquals => {
                "expected KEY=VALUE (optionally prefixed by 'export '), found no '='"
            }
            Self::InvalidKey => {
                "the key before '=' is not a POSIX name [A-Za-z_][A-Za-z0-9_]* (no space is \
                 allowed between the key and '=')"
            }
            Self::UnterminatedSingleQuote => "a single-quoted value does not close on its line",
            Self::UnterminatedDoubleQuote => "a double-quoted value does not close on its line",
            Self::UnsupportedEscape => {
                "a double-quoted value uses an unsupported escape (only \\\\ \\\" \\n \\t \\r)"
            }
            Self::TextAfterClosingQuote => {
                "only whitespace or a '#' comment may follow a closing quote"
            }
        })
    }
}

/// A malformed env file: its path, the 1-based line number and the problem, never the content.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "env file {}, line {line} (--env-file): {problem}; the line is not shown because it may \
     contain a secret",
    path.display()
)]
pub struct DotenvError {
    /// The file, as given.
    pub path: PathBuf,
    /// The 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub problem: DotenvProblem,
}

/// Parses an env file read as raw bytes; refuses invalid UTF-8 with the line it occurs on.
///
/// # Errors
///
/// [`DotenvError`] with [`DotenvProblem::InvalidUtf8`], or any error of [`parse_dotenv`].
pub fn parse_dotenv_bytes(path: &Path, bytes: &[u8]) -> Result<Env, DotenvError> {
    match std::str::from_utf8(bytes) {
        Ok(text) => parse_dotenv(path, text),
        Err(e) => {
            let valid = bytes.get(..e.valid_up_to()).unwrap_or_default();
            let line = 1 + valid.iter().filter(|&&b| b == b'\n').count();
            Err(DotenvError {
                path: path.to_owned(),
                line,
                problem: DotenvProblem::InvalidUtf8,
            })
        }
    }
}

/// Parses the text of an env file. Later lines replace earlier ones for the same key.
///
/// # Errors
///
/// [`DotenvError`] for the first malformed line, naming `path` and the line number.
pub fn parse_dotenv(path: &Path, text: &str) -> Result<Env, DotenvError> {
    let mut env = Env::new();
    for (index, raw) in text.split('\n').enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        match parse_line(line) {
            Ok(Some((key, value))) => env.set(key, value),
            Ok(None) => {}
            Err(problem) => {
                return Err(DotenvError {
                    path: path.to_owned(),
                    line: index + 1,
                    problem,
                });
            }
        }
    }
    Ok(env)
}

/// One line (without its terminator): `None` for a blank or comment line.
fn parse_line(line: &str) -> Result<Option<(&str, String)>, DotenvProblem> {
    let line = line.trim_start();
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let line = strip_export(line);
    let (key, rest) = line.split_once('=').ok_or(DotenvProblem::MissingEquals)?;
    validate_key(key).map_err(|_| DotenvProblem::InvalidKey)?;
    Ok(Some((key, parse_value(rest)?)))
}

/// Drops a leading `export` followed by whitespace; `export=1` keeps `export` as the key.
fn strip_export(line: &str) -> &str {
    match line.strip_prefix("export") {
        Some(after) if after.starts_with(char::is_whitespace) => after.trim_start(),
        _ => line,
    }
}

/// The text after `=`.
fn parse_value(rest: &str) -> Result<String, DotenvProblem> {
    let start = rest.trim_start();
    if let Some(body) = start.strip_prefix('\'') {
        let (value, after) = body
            .split_once('\'')
            .ok_or(DotenvProblem::UnterminatedSingleQuote)?;
        check_after_quote(after)?;
        return Ok(value.to_owned());
    }
    if let Some(body) = start.strip_prefix('"') {
        let (value, after) = parse_double_quoted(body)?;
        check_after_quote(after)?;
        return Ok(value);
    }
    Ok(strip_inline_comment(rest).trim().to_owned())
}

/// Reads a double-quoted body up to the closing quote; returns the value and what follows.
fn parse_double_quoted(body: &str) -> Result<(String, &str), DotenvProblem> {
    let mut value = String::with_capacity(body.len());
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Ok((value, &body[i + 1..])),
            '\\' => {
                let (_, escaped) = chars.next().ok_or(DotenvProblem::UnterminatedDoubleQuote)?;
                value.push(match escaped {
                    '\\' => '\\',
                    '"' => '"',
                    'n' => '\n',
                    't' => '\t',
                    'r' => '\r',
                    _ => return Err(DotenvProblem::UnsupportedEscape),
                });
            }
            other => value.push(other),
        }
    }
    Err(DotenvProblem::UnterminatedDoubleQuote)
}

/// After a closing quote only whitespace or a `#` comment may follow.
fn check_after_quote(after: &str) -> Result<(), DotenvProblem> {
    let after = after.trim_start();
    if after.is_empty() || after.starts_with('#') {
        Ok(())
    } else {
        Err(DotenvProblem::TextAfterClosingQuote)
    }
}

/// Cuts an unquoted value at the first `#` that follows whitespace.
fn strip_inline_comment(value: &str) -> &str {
    let mut previous_is_space = false;
    for (i, c) in value.char_indices() {
        if c == '#' && previous_is_space {
            return &value[..i];
        }
        previous_is_space = c.is_whitespace();
    }
    value
}

#[cfg(test)]
mod tests;
