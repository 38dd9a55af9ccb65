//! The apiserver's validation of label keys and values (`IsQualifiedName`,
//! `IsValidLabelValue`, `IsDNS1123Subdomain`), with its messages word for word: inside a
//! selector here, and in a pod's labels, annotations, node selector, tolerations and resource
//! names (`model/pods/validation.rs`).
//!
//! Layer: pure checks; performs no I/O.

use crate::error::ModelError;

/// A selector the apiserver refuses: 400 `BadRequest` with `message`.
pub(super) fn bad(message: impl Into<String>) -> ModelError {
    ModelError::BadRequest {
        message: message.into(),
    }
}

/// The apiserver's `RegexError` text: the rule, examples, and the regular expression.
fn regex_error(message: &str, regex: &str, examples: &[&str]) -> String {
    let examples: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{message} (e.g. {}regex used for validation is '{regex}')",
        examples.join(" or ")
    )
}

const QUALIFIED_NAME_REGEX: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_MESSAGE: &str = "must consist of alphanumeric characters, '-', '_' or '.', \
     and must start and end with an alphanumeric character";
const DNS_SUBDOMAIN_REGEX: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS_SUBDOMAIN_MESSAGE: &str = "a lowercase RFC 1123 subdomain must consist of lower case \
     alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]` (no length rule).
fn is_qualified_name_part(s: &str) -> bool {
    let bytes = s.as_bytes();
    !s.is_empty()
        && bytes[0].is_ascii_alphanumeric()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// The DNS-1123 subdomain pattern (no length rule).
fn matches_dns_subdomain(s: &str) -> bool {
    s.split('.').all(|part| {
        let b = part.as_bytes();
        !b.is_empty()
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
    })
}

/// The apiserver's `IsQualifiedName` findings for a label key (empty when valid).
pub(crate) fn qualified_name_errors(key: &str) -> Vec<String> {
    let name_rule = || {
        regex_error(
            QUALIFIED_NAME_MESSAGE,
            QUALIFIED_NAME_REGEX,
            &["MyName", "my.name", "123-abc"],
        )
    };
    let mut errors = Vec::new();
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_owned());
            } else {
                if prefix.len() > 253 {
                    errors.push("prefix part must be no more than 253 characters".to_owned());
                }
                if !matches_dns_subdomain(prefix) {
                    let rule =
                        regex_error(DNS_SUBDOMAIN_MESSAGE, DNS_SUBDOMAIN_REGEX, &["example.com"]);
                    errors.push(format!("prefix part {rule}"));
                }
            }
            *name
        }
        _ => {
            return vec![format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. \
                 'example.com/MyName')",
                name_rule()
            )];
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_owned());
    } else if name.len() > 63 {
        errors.push("name part must be no more than 63 characters".to_owned());
    }
    if !is_qualified_name_part(name) {
        errors.push(format!("name part {}", name_rule()));
    }
    errors
}

pub(super) fn check_key(key: &str) -> Result<(), String> {
    let errors = qualified_name_errors(key);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "invalid label key \"{key}\": {}",
            errors.join("; ")
        ))
    }
}

/// The apiserver's `IsValidLabelValue` findings (empty when valid).
pub(crate) fn label_value_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 63 {
        errors.push("must be no more than 63 characters".to_owned());
    }
    if !value.is_empty() && !is_qualified_name_part(value) {
        errors.push(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', \
             '_' or '.', and must start and end with an alphanumeric character",
            "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?",
            &["MyValue", "my_value", "12345"],
        ));
    }
    errors
}

/// Whether `value` is a DNS-1123 subdomain (`IsDNS1123Subdomain` finds nothing): at most 253
/// characters matching the pattern.
pub(crate) fn is_dns_subdomain(value: &str) -> bool {
    value.len() <= 253 && matches_dns_subdomain(value)
}

pub(super) fn check_value(key: &str, value: &str) -> Result<(), String> {
    let errors = label_value_errors(value);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "invalid label value: \"{value}\": at key: \"{key}\": {}",
            errors.join("; ")
        ))
    }
}
