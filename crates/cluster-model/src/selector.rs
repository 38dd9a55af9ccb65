//! Label and field selectors with the apiserver's grammar and matching rules: equality (`=`,
//! `==`, `!=`), set-based (`in`, `notin`) and existence (`key`, `!key`) label requirements, and
//! the field selectors `metadata.name`, `metadata.namespace` and (pods) `status.phase` /
//! `spec.nodeName`, (Secrets) `type`. Parse errors are reported as [`ModelError::BadRequest`], as
//! the apiserver answers a malformed selector with 400. Pure: performs no I/O.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Namespace, Pod, Secret};

use crate::error::{Kind, ModelError};

/// One label requirement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Requirement {
    /// `key=value` or `key==value`: the label is present with exactly this value.
    Equals(String, String),
    /// `key!=value`: the label is absent or has another value.
    NotEquals(String, String),
    /// `key in (a,b)`: the label is present with one of the values.
    In(String, Vec<String>),
    /// `key notin (a,b)`: the label is absent or has none of the values.
    NotIn(String, Vec<String>),
    /// `key`: the label is present (any value).
    Exists(String),
    /// `!key`: the label is absent.
    DoesNotExist(String),
}

impl Requirement {
    /// Whether `labels` satisfy this requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            Self::Equals(k, v) => labels.get(k) == Some(v),
            Self::NotEquals(k, v) => labels.get(k) != Some(v),
            Self::In(k, vs) => labels.get(k).is_some_and(|have| vs.contains(have)),
            Self::NotIn(k, vs) => labels.get(k).is_none_or(|have| !vs.contains(have)),
            Self::Exists(k) => labels.contains_key(k),
            Self::DoesNotExist(k) => !labels.contains_key(k),
        }
    }
}

/// A parsed label selector: the conjunction of its requirements. The empty selector matches
/// every object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Word(String),
    Comma,
    Open,
    Close,
    Eq,
    DoubleEq,
    NotEq,
    Bang,
}

fn tokenize(input: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut chars = input.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            c if c.is_whitespace() => {
                chars.next();
            }
            ',' => {
                chars.next();
                tokens.push(Token::Comma);
            }
            '(' => {
                chars.next();
                tokens.push(Token::Open);
            }
            ')' => {
                chars.next();
                tokens.push(Token::Close);
            }
            '=' => {
                chars.next();
                if chars.peek() == Some(&'=') {
                    chars.next();
                    tokens.push(Token::DoubleEq);
                } else {
                    tokens.push(Token::Eq);
                }
            }
            '!' => {
                chars.next();
                if chars.peek() == Some(&'=') {
                    chars.next();
                    tokens.push(Token::NotEq);
                } else {
                    tokens.push(Token::Bang);
                }
            }
            _ => {
                let mut word = String::new();
                while let Some(&c) = chars.peek() {
                    if c.is_whitespace() || matches!(c, ',' | '(' | ')' | '=' | '!') {
                        break;
                    }
                    word.push(c);
                    chars.next();
                }
                tokens.push(Token::Word(word));
            }
        }
    }
    tokens
}

fn bad(message: impl Into<String>) -> ModelError {
    ModelError::BadRequest {
        message: message.into(),
    }
}

fn describe(token: Option<&Token>) -> String {
    match token {
        None => "end of string".to_owned(),
        Some(Token::Word(w)) => format!("'{w}'"),
        Some(Token::Comma) => "','".to_owned(),
        Some(Token::Open) => "'('".to_owned(),
        Some(Token::Close) => "')'".to_owned(),
        Some(Token::Eq) => "'='".to_owned(),
        Some(Token::DoubleEq) => "'=='".to_owned(),
        Some(Token::NotEq) => "'!='".to_owned(),
        Some(Token::Bang) => "'!'".to_owned(),
    }
}

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`, at most 63 characters.
fn is_label_name(s: &str) -> bool {
    let bytes = s.as_bytes();
    !s.is_empty()
        && s.len() <= 63
        && bytes[0].is_ascii_alphanumeric()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// A DNS-1123 subdomain: lower-case alphanumerics, `-` and `.`, at most 253 characters.
fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|part| {
            let b = part.as_bytes();
            !b.is_empty()
                && b[0].is_ascii_alphanumeric()
                && b[b.len() - 1].is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        })
}

fn check_key(key: &str) -> Result<(), ModelError> {
    let valid = match key.split_once('/') {
        Some((prefix, name)) => is_dns_subdomain(prefix) && is_label_name(name),
        None => is_label_name(key),
    };
    if valid {
        Ok(())
    } else {
        Err(bad(format!(
            "unable to parse requirement: Invalid value: \"{key}\": a label key must be a \
             qualified name (an optional DNS subdomain prefix and '/', then 1-63 alphanumeric \
             characters, '-', '_' or '.', starting and ending with an alphanumeric character)"
        )))
    }
}

fn check_value(value: &str) -> Result<(), ModelError> {
    if value.is_empty() || is_label_name(value) {
        Ok(())
    } else {
        Err(bad(format!(
            "unable to parse requirement: Invalid value: \"{value}\": a label value must be \
             empty or 1-63 alphanumeric characters, '-', '_' or '.', starting and ending with \
             an alphanumeric character"
        )))
    }
}

impl LabelSelector {
    /// Parse the `labelSelector` query parameter.
    ///
    /// # Errors
    /// [`ModelError::BadRequest`] when the text is not a valid selector (syntax, an invalid key or
    /// value, an empty `in`/`notin` set).
    pub fn parse(input: &str) -> Result<Self, ModelError> {
        let tokens = tokenize(input);
        let mut pos = 0;
        let mut requirements = Vec::new();
        if tokens.is_empty() {
            return Ok(Self::default());
        }
        loop {
            let requirement = match tokens.get(pos) {
                Some(Token::Bang) => {
                    pos += 1;
                    match tokens.get(pos) {
                        Some(Token::Word(key)) => {
                            pos += 1;
                            check_key(key)?;
                            Requirement::DoesNotExist(key.clone())
                        }
                        other => {
                            return Err(bad(format!(
                                "found {}, expected: identifier after '!'",
                                describe(other)
                            )));
                        }
                    }
                }
                Some(Token::Word(key)) => {
                    pos += 1;
                    check_key(key)?;
                    match tokens.get(pos) {
                        None | Some(Token::Comma) => Requirement::Exists(key.clone()),
                        Some(op @ (Token::Eq | Token::DoubleEq | Token::NotEq)) => {
                            pos += 1;
                            let value = match tokens.get(pos) {
                                Some(Token::Word(v)) => {
                                    pos += 1;
                                    v.clone()
                                }
                                None | Some(Token::Comma) => String::new(),
                                other => {
                                    return Err(bad(format!(
                                        "found {}, expected: identifier",
                                        describe(other)
                                    )));
                                }
                            };
                            check_value(&value)?;
                            if *op == Token::NotEq {
                                Requirement::NotEquals(key.clone(), value)
                            } else {
                                Requirement::Equals(key.clone(), value)
                            }
                        }
                        Some(Token::Word(op)) if op == "in" || op == "notin" => {
                            pos += 1;
                            let values = parse_set(&tokens, &mut pos)?;
                            if op == "in" {
                                Requirement::In(key.clone(), values)
                            } else {
                                Requirement::NotIn(key.clone(), values)
                            }
                        }
                        other => {
                            return Err(bad(format!(
                                "found {}, expected: in, notin, =, ==, !=, or end of string",
                                describe(other)
                            )));
                        }
                    }
                }
                other => {
                    return Err(bad(format!(
                        "found {}, expected: !, identifier, or end of string",
                        describe(other)
                    )));
                }
            };
            requirements.push(requirement);
            match tokens.get(pos) {
                None => break,
                Some(Token::Comma) => pos += 1,
                other => {
                    return Err(bad(format!(
                        "found {}, expected: ',' or end of string",
                        describe(other)
                    )));
                }
            }
        }
        Ok(Self { requirements })
    }

    /// The requirements, in the order written.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Whether `labels` (absent labels = empty map) satisfy every requirement.
    pub fn matches(&self, labels: Option<&BTreeMap<String, String>>) -> bool {
        let empty = BTreeMap::new();
        let labels = labels.unwrap_or(&empty);
        self.requirements.iter().all(|r| r.matches(labels))
    }
}

fn parse_set(tokens: &[Token], pos: &mut usize) -> Result<Vec<String>, ModelError> {
    if tokens.get(*pos) != Some(&Token::Open) {
        return Err(bad(format!(
            "found {}, expected: '('",
            describe(tokens.get(*pos))
        )));
    }
    *pos += 1;
    let mut values = Vec::new();
    loop {
        match tokens.get(*pos) {
            Some(Token::Word(v)) => {
                check_value(v)?;
                values.push(v.clone());
                *pos += 1;
            }
            Some(Token::Close) if values.is_empty() => {
                return Err(bad(
                    "unable to parse requirement: for 'in', 'notin' operators, values set can't \
                     be empty",
                ));
            }
            other => {
                return Err(bad(format!(
                    "found {}, expected: identifier",
                    describe(other)
                )));
            }
        }
        match tokens.get(*pos) {
            Some(Token::Comma) => *pos += 1,
            Some(Token::Close) => {
                *pos += 1;
                return Ok(values);
            }
            other => {
                return Err(bad(format!(
                    "found {}, expected: ',' or ')'",
                    describe(other)
                )));
            }
        }
    }
}

/// Objects whose fields a [`FieldSelector`] can read.
pub trait HasFields {
    /// The kind, which decides which field labels are supported.
    const KIND: Kind;
    /// The value of a supported field label (`None` when the object lacks it; it then compares
    /// as the empty string, as on the apiserver).
    fn field(&self, label: &str) -> Option<String>;
}

impl HasFields for Pod {
    const KIND: Kind = Kind::Pod;
    fn field(&self, label: &str) -> Option<String> {
        match label {
            "metadata.name" => self.metadata.name.clone(),
            "metadata.namespace" => self.metadata.namespace.clone(),
            "status.phase" => self.status.as_ref().and_then(|s| s.phase.clone()),
            "spec.nodeName" => self.spec.as_ref().and_then(|s| s.node_name.clone()),
            _ => None,
        }
    }
}

impl HasFields for Secret {
    const KIND: Kind = Kind::Secret;
    fn field(&self, label: &str) -> Option<String> {
        match label {
            "metadata.name" => self.metadata.name.clone(),
            "metadata.namespace" => self.metadata.namespace.clone(),
            "type" => self.type_.clone(),
            _ => None,
        }
    }
}

impl HasFields for Namespace {
    const KIND: Kind = Kind::Namespace;
    fn field(&self, label: &str) -> Option<String> {
        match label {
            "metadata.name" => self.metadata.name.clone(),
            "status.phase" => self.status.as_ref().and_then(|s| s.phase.clone()),
            _ => None,
        }
    }
}

fn supported_fields(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::Pod => &[
            "metadata.name",
            "metadata.namespace",
            "status.phase",
            "spec.nodeName",
        ],
        Kind::Secret => &["metadata.name", "metadata.namespace", "type"],
        Kind::Namespace => &["metadata.name", "status.phase"],
    }
}

/// One field requirement: `label=value` (also `==`) or `label!=value`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldRequirement {
    /// The field label (`metadata.name`).
    pub label: String,
    /// The compared value.
    pub value: String,
    /// `true` for `!=`.
    pub negated: bool,
}

/// A parsed field selector for one kind: the conjunction of its requirements.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// Parse the `fieldSelector` query parameter for objects of `kind`.
    ///
    /// # Errors
    /// [`ModelError::BadRequest`] for a requirement without an operator
    /// (`invalid selector: 'x'; can't understand 'x'`) or a field label the kind does not support
    /// (`field label not supported: x`).
    pub fn parse(kind: Kind, input: &str) -> Result<Self, ModelError> {
        let mut requirements = Vec::new();
        if input.trim().is_empty() {
            return Ok(Self::default());
        }
        for part in input.split(',') {
            let (label, value, negated) = if let Some((l, v)) = part.split_once("!=") {
                (l, v, true)
            } else if let Some((l, v)) = part.split_once("==") {
                (l, v, false)
            } else if let Some((l, v)) = part.split_once('=') {
                (l, v, false)
            } else {
                return Err(bad(format!(
                    "invalid selector: '{input}'; can't understand '{part}'"
                )));
            };
            let label = label.trim();
            if !supported_fields(kind).contains(&label) {
                return Err(bad(format!("field label not supported: {label}")));
            }
            requirements.push(FieldRequirement {
                label: label.to_owned(),
                value: value.trim().to_owned(),
                negated,
            });
        }
        Ok(Self { requirements })
    }

    /// The requirements, in the order written.
    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }

    /// Whether `object` satisfies every requirement.
    pub fn matches<T: HasFields>(&self, object: &T) -> bool {
        self.requirements.iter().all(|r| {
            let have = object.field(&r.label).unwrap_or_default();
            (have == r.value) != r.negated
        })
    }
}

#[cfg(test)]
mod tests;
