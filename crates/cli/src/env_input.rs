//! Environment input assembly (deploy.md § Environment, "Sources (CLI)"): every `--env-file`
//! in the order given, then every `--env` in the order given, a later entry replacing an
//! earlier one for the same key; `--env KEY` takes the value from apiary's own environment.
//!
//! Shell layer: it reads the files and the process environment and merges. Parsing a file
//! (`apiary_substrate::dotenv`), splitting `--env` (`EnvArg`), key validation, authoritative
//! keys and the 1 MiB cap all belong to `apiary-substrate`. Must not: print, log or put into an
//! error message any value (messages name the file, line or key only).

use std::ffi::OsString;
use std::path::PathBuf;

use apiary_substrate::dotenv::parse_dotenv_bytes;
use apiary_substrate::env::{Env, EnvArg, validate_key};

use crate::outcome::Failure;

/// Merge the environment sources. `lookup` reads apiary's own environment (`std::env::var_os`
/// in the binary; a closure in tests).
///
/// # Errors
///
/// An exit-2 [`Failure`] naming the file (unreadable or malformed, with its line) or the key
/// (an invalid key, or `--env KEY` unset or not UTF-8 in apiary's environment).
pub fn assemble(
    files: &[PathBuf],
    entries: &[String],
    lookup: impl Fn(&str) -> Option<OsString>,
) -> Result<Env, Failure> {
    let mut env = Env::new();
    for path in files {
        let bytes = std::fs::read(path).map_err(|err| {
            Failure::refused(format!(
                "cannot read env file {} (--env-file): {err}; check the path and its permissions",
                path.display()
            ))
        })?;
        let from_file =
            parse_dotenv_bytes(path, &bytes).map_err(|e| Failure::refused(e.to_string()))?;
        env.extend(from_file.iter());
    }
    for entry in entries {
        let arg = EnvArg::parse(entry);
        // A malformed key is named as such, before apiary's environment is consulted.
        validate_key(arg.key()).map_err(|e| Failure::refused(e.to_string()))?;
        let (key, value) = arg
            .resolve(|key| lookup(key).and_then(|value| value.into_string().ok()))
            .map_err(|e| Failure::refused(e.to_string()))?;
        env.set(key, value);
    }
    Ok(env)
}

#[cfg(test)]
mod tests {
    //! Source order, `--env KEY` lookup and refusals; every refusal is checked for the absence
    //! of the secret value.

    use std::collections::HashMap;
    use std::io::Write;

    use super::*;
    use crate::outcome::Exit;

    const SECRET: &str = "s3cr3t-value-that-must-not-leak";

    fn lookup(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let map: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), OsString::from(*v)))
            .collect();
        move |key| map.get(key).cloned()
    }

    fn file(contents: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().expect("temp file");
        f.write_all(contents.as_bytes()).expect("write");
        f
    }

    /// Files in order, then `--env` in order; a later entry for the same key wins.
    #[test]
    fn later_sources_win_files_then_flags() {
        let one = file("A=from-one\nB=from-one\nC=from-one\n");
        let two = file("B=from-two\nC=from-two\n");
        let env = assemble(
            &[one.path().to_owned(), two.path().to_owned()],
            &[
                "C=from-flag".to_owned(),
                "D=x".to_owned(),
                "D=y=z".to_owned(),
            ],
            lookup(&[]),
        )
        .expect("assembled");
        assert_eq!(env.get("A"), Some("from-one"));
        assert_eq!(env.get("B"), Some("from-two"));
        assert_eq!(env.get("C"), Some("from-flag"));
        assert_eq!(env.get("D"), Some("y=z"));
        assert_eq!(env.len(), 4);
    }

    /// `--env KEY` takes the value from apiary's own environment; an empty value is a value.
    #[test]
    fn env_key_reads_apiarys_environment() {
        let env = assemble(
            &[],
            &[
                "TOKEN".to_owned(),
                "EMPTY".to_owned(),
                "TOKEN=override".to_owned(),
            ],
            lookup(&[("TOKEN", SECRET), ("EMPTY", "")]),
        )
        .expect("assembled");
        assert_eq!(env.get("TOKEN"), Some("override"));
        assert_eq!(env.get("EMPTY"), Some(""));
        let env = assemble(&[], &["TOKEN".to_owned()], lookup(&[("TOKEN", SECRET)])).expect("ok");
        assert_eq!(env.get("TOKEN"), Some(SECRET));
    }

    /// V9: `--env KEY` with KEY unset is refused (exit 2) naming the key.
    #[test]
    fn v9_unset_env_key_is_refused_naming_it() {
        let err = assemble(&[], &["MISSING_KEY".to_owned()], lookup(&[])).expect_err("refused");
        assert_eq!(err.exit, Exit::Refused);
        assert!(err.message.contains("MISSING_KEY"), "{}", err.message);
    }

    /// `--env KEY` whose value is not UTF-8 is refused naming the key, never showing the value.
    #[cfg(unix)]
    #[test]
    fn non_utf8_inherited_value_is_refused_naming_the_key() {
        use std::os::unix::ffi::OsStringExt;
        let bad = OsString::from_vec(vec![b's', 0xff, b'x']);
        let err =
            assemble(&[], &["BIN".to_owned()], move |_| Some(bad.clone())).expect_err("refused");
        assert_eq!(err.exit, Exit::Refused);
        assert!(err.message.contains("BIN") && err.message.contains("UTF-8"));
    }

    /// `--env KEY` with a non-POSIX key is refused for the key, before any lookup.
    #[test]
    fn inherited_key_must_be_posix() {
        let err = assemble(&[], &["foo.bar".to_owned()], lookup(&[("foo.bar", SECRET)]))
            .expect_err("refused");
        assert_eq!(err.exit, Exit::Refused);
        assert!(err.message.contains("foo.bar") && err.message.contains("POSIX"));
        assert!(!err.message.contains(SECRET));
    }

    /// An unreadable env file is refused (exit 2) naming the file.
    #[test]
    fn unreadable_env_file_is_refused_naming_it() {
        let dir = tempfile::tempdir().expect("dir");
        let missing = dir.path().join("no-such.env");
        let err = assemble(std::slice::from_ref(&missing), &[], lookup(&[])).expect_err("refused");
        assert_eq!(err.exit, Exit::Refused);
        assert!(
            err.message.contains(&missing.display().to_string()),
            "{}",
            err.message
        );
    }

    /// V10: a malformed line is refused with file and line number, never the line's content.
    #[test]
    fn v10_malformed_line_names_file_and_line_not_content() {
        let f = file(&format!("# comment\nGOOD=1\nBAD LINE {SECRET}\n"));
        let err = assemble(&[f.path().to_owned()], &[], lookup(&[])).expect_err("refused");
        assert_eq!(err.exit, Exit::Refused);
        assert!(err.message.contains(&f.path().display().to_string()));
        assert!(err.message.contains("line 3"), "{}", err.message);
        assert!(!err.message.contains(SECRET));
    }
}
