//! How a command ends: a result for stdout, or a failure with its exit code, and the one place
//! that prints either (deploy.md § CLI contract: exit codes and output rules). Shell layer.
//!
//! Rules enforced here: stdout carries only the result (text, or exactly one JSON document and
//! a newline); in json mode a failure is also one document on stdout, an object with at least
//! the string key `error`; in text mode a failure prints nothing on stdout and the error on
//! stderr. Must not: print anything built from env values (callers pass only redacted text).

pub mod explain;

use std::io::Write;

use apiary_classify::deploy::DeployError;
use apiary_classify::failure::RequestFailure;
use apiary_classify::renew::RenewError;
use apiary_substrate_kube::LogsError;
use serde_json::{Map, Value, json};

use crate::args::OutputFormat;
use explain::{Explained, Grant};

/// The process exit code of the contract: 0 success, 1 operation failed, 2 invalid input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// 0: success.
    Success = 0,
    /// 1: the operation failed (cluster refusal, unreachable, agent did not start, timeout…).
    Failed = 1,
    /// 2: invalid input refused before any cluster contact.
    Refused = 2,
}

/// A failed command: its exit code, the sentence(s) a person reads, and extra JSON fields.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    /// Exit 1 or 2.
    pub exit: Exit,
    /// One or two sentences naming the object, the cause and the fix. Never an env value.
    pub message: String,
    /// Extra keys of the json-mode error document (`matched`, `skipped`, …).
    pub details: Map<String, Value>,
}

impl Failure {
    /// Exit 2: invalid input, refused before any cluster contact.
    pub fn refused(message: impl Into<String>) -> Self {
        Self {
            exit: Exit::Refused,
            message: message.into(),
            details: Map::new(),
        }
    }

    /// Exit 1: the operation failed.
    pub fn failed(message: impl Into<String>) -> Self {
        Self {
            exit: Exit::Failed,
            message: message.into(),
            details: Map::new(),
        }
    }

    /// Exit 1: a failed request of a deploy-side command, in the shared shape of docs/errors.md
    /// (what, why, what to do; the server and context tried for a transport failure), with
    /// `code`, `reason`, `operation` and `object` beside `error` in json mode.
    pub fn request(failure: &RequestFailure, namespace: &str) -> Self {
        Self::request_granted(failure, namespace, Grant::Deployer)
    }

    /// [`Failure::request`] for a command whose rights `grant` names (seeds: `Grant::Seeds`).
    pub fn request_granted(failure: &RequestFailure, namespace: &str, grant: Grant) -> Self {
        log_chain(failure);
        Self::explained(explain::request(
            failure,
            namespace,
            grant,
            explain::target(),
        ))
    }

    /// Exit 1: a failed deploy (deploy.md § Errors), its request failures in the shared shape.
    pub fn deploy(error: &DeployError, namespace: &str) -> Self {
        if let Some(failure) = error.request_failure() {
            log_chain(failure);
        }
        Self::explained(explain::deploy(error, namespace, explain::target()))
    }

    /// Exit 1: a failed `apiary logs`, in the shared shape.
    pub fn logs(error: &LogsError, namespace: &str) -> Self {
        if let LogsError::Failed(failure) = error {
            log_chain(failure);
        }
        Self::explained(explain::logs(error, namespace, explain::target()))
    }

    /// Exit 1: a failed `apiary renew` of `agent` (its name), in the shared shape.
    pub fn renew(error: &RenewError, agent: &str, namespace: &str) -> Self {
        if let RenewError::Request(failure) = error {
            log_chain(failure);
        }
        Self::explained(explain::renew(error, agent, namespace, explain::target()))
    }

    fn explained(explained: Explained) -> Self {
        Self {
            exit: Exit::Failed,
            message: explained.message,
            details: explained.fields,
        }
    }

    /// Add a key to the json-mode error document.
    pub fn with_detail(mut self, key: &str, value: Value) -> Self {
        self.details.insert(key.to_owned(), value);
        self
    }

    /// The json-mode error document: `{"error": message, ...details}`.
    pub fn to_json(&self) -> Value {
        let mut doc = Map::new();
        doc.insert("error".to_owned(), Value::String(self.message.clone()));
        for (key, value) in &self.details {
            if key != "error" {
                doc.insert(key.clone(), value.clone());
            }
        }
        Value::Object(doc)
    }
}

/// `-v` adds the underlying chain of a transport failure (the client's own words) on stderr.
fn log_chain(failure: &RequestFailure) {
    if let apiary_classify::failure::Cause::Transport { detail, .. } = failure.cause() {
        tracing::debug!(detail = %detail, "underlying transport failure");
    }
}

/// A successful command's result in both forms.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// Text-mode stdout, without a trailing newline; empty means print nothing.
    pub text: String,
    /// Json-mode stdout document.
    pub json: Value,
    /// The command printed its own output as it ran (`seeds --watch`): print nothing more.
    pub printed: bool,
}

impl Report {
    /// A report from its two forms.
    pub fn new(text: impl Into<String>, json: Value) -> Self {
        Self {
            text: text.into(),
            json,
            printed: false,
        }
    }

    /// A result whose output was already written while the command ran.
    pub fn already_printed() -> Self {
        Self {
            text: String::new(),
            json: Value::Null,
            printed: true,
        }
    }
}

/// What a command returns.
pub type CommandResult = Result<Report, Failure>;

/// Render what goes to stdout and to stderr for `result` in `format`.
/// Returns `(stdout, stderr, exit)`; stdout is exactly one line-terminated document in json mode.
pub fn render(format: OutputFormat, result: &CommandResult) -> (String, String, Exit) {
    match (result, format) {
        (Ok(report), _) if report.printed => (String::new(), String::new(), Exit::Success),
        (Ok(report), OutputFormat::Text) => {
            let out = if report.text.is_empty() {
                String::new()
            } else {
                format!("{}\n", report.text)
            };
            (out, String::new(), Exit::Success)
        }
        (Ok(report), OutputFormat::Json) => (document(&report.json), String::new(), Exit::Success),
        (Err(failure), OutputFormat::Text) => (
            String::new(),
            format!("error: {}\n", failure.message),
            failure.exit,
        ),
        (Err(failure), OutputFormat::Json) => {
            (document(&failure.to_json()), String::new(), failure.exit)
        }
    }
}

/// One compact JSON document and a newline.
pub fn document(value: &Value) -> String {
    format!("{value}\n")
}

/// Print `result` and return the exit code. A closed stdout (`apiary … | head`) is not an error.
pub fn emit(format: OutputFormat, result: &CommandResult) -> Exit {
    let (out, err, exit) = render(format, result);
    write_stdout(&out);
    if !err.is_empty() {
        let _ = std::io::stderr().write_all(err.as_bytes());
    }
    exit
}

/// Write to stdout and flush, ignoring a closed pipe.
pub fn write_stdout(text: &str) {
    if text.is_empty() {
        return;
    }
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

/// The json-mode usage-error document for a clap error (output rule 2 covers usage errors).
pub fn usage_error_json(message: &str) -> Value {
    json!({ "error": message })
}

#[cfg(test)]
mod tests {
    //! Output rules 1–3 and the exit codes, on rendered strings (no real stdout).

    use super::*;

    /// Exit codes are exactly 0, 1 and 2.
    #[test]
    fn exit_codes_are_the_contracts() {
        assert_eq!(Exit::Success as i32, 0);
        assert_eq!(Exit::Failed as i32, 1);
        assert_eq!(Exit::Refused as i32, 2);
        assert_eq!(Failure::failed("x").exit, Exit::Failed);
        assert_eq!(Failure::refused("x").exit, Exit::Refused);
    }

    /// Rule 2: json mode prints exactly one document and a newline, on success and on failure,
    /// and the failure document carries the string key `error` plus the details.
    #[test]
    fn json_mode_prints_exactly_one_document() {
        let ok: CommandResult = Ok(Report::new("pod-x", json!({"pod": "pod-x"})));
        let (out, err, exit) = render(OutputFormat::Json, &ok);
        assert_eq!(out, "{\"pod\":\"pod-x\"}\n");
        assert!(err.is_empty());
        assert_eq!(exit, Exit::Success);

        let bad: CommandResult = Err(Failure::failed("no seeds").with_detail("matched", json!(3)));
        let (out, err, exit) = render(OutputFormat::Json, &bad);
        assert_eq!(out.matches('\n').count(), 1);
        assert!(out.ends_with('\n'));
        let doc: Value = serde_json::from_str(&out).expect("one JSON document");
        assert_eq!(doc["error"], "no seeds");
        assert_eq!(doc["matched"], 3);
        assert!(err.is_empty());
        assert_eq!(exit, Exit::Failed);
    }

    /// A result printed while running (`seeds --watch`) adds nothing at the end, in both modes.
    #[test]
    fn already_printed_results_add_nothing() {
        let done: CommandResult = Ok(Report::already_printed());
        for format in [OutputFormat::Text, OutputFormat::Json] {
            assert_eq!(
                render(format, &done),
                (String::new(), String::new(), Exit::Success)
            );
        }
    }

    /// A detail named `error` can never replace the message.
    #[test]
    fn detail_cannot_override_the_error_key() {
        let f = Failure::refused("real").with_detail("error", json!("fake"));
        assert_eq!(f.to_json()["error"], "real");
    }

    /// Rule 3: text mode prints nothing on stdout on failure, and the error on stderr.
    #[test]
    fn text_mode_failure_goes_to_stderr_only() {
        let bad: CommandResult = Err(Failure::refused("bad agent name"));
        let (out, err, exit) = render(OutputFormat::Text, &bad);
        assert!(out.is_empty());
        assert_eq!(err, "error: bad agent name\n");
        assert_eq!(exit, Exit::Refused);
    }

    /// Text success prints the result and a newline; an empty result prints nothing at all.
    #[test]
    fn text_success_prints_the_result_or_nothing() {
        let ok: CommandResult = Ok(Report::new("pod-x", json!({})));
        assert_eq!(render(OutputFormat::Text, &ok).0, "pod-x\n");
        let empty: CommandResult = Ok(Report::new("", json!({})));
        assert_eq!(render(OutputFormat::Text, &empty).0, "");
    }
}
