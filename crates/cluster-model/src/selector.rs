//! Label and field selectors with the apiserver's grammar, messages and matching rules (its
//! v1.20 parser, checked against a real one by `apiserver-sim/tests/differential.rs`): equality
//! (`=`, `==`, `!=`), set-based (`in`, `notin`), existence (`key`, `!key`) and integer (`>`, `<`)
//! label requirements, and
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
    /// `key in (a,b)`: the label is present with one of the values (sorted, without
    /// duplicates, as the apiserver keeps them; `key in ()` is `key in ("")`).
    In(String, Vec<String>),
    /// `key notin (a,b)`: the label is absent or has none of the values.
    NotIn(String, Vec<String>),
    /// `key`: the label is present (any value).
    Exists(String),
    /// `!key`: the label is absent.
    DoesNotExist(String),
    /// `key>n`: the label is present, reads as a 64-bit integer, and is greater than `n`.
    GreaterThan(String, i64),
    /// `key<n`: the label is present, reads as a 64-bit integer, and is less than `n`.
    LessThan(String, i64),
}

impl Requirement {
    /// Whether `labels` satisfy this requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let number = |k: &str| labels.get(k).and_then(|v| v.parse::<i64>().ok());
        match self {
            Self::Equals(k, v) => labels.get(k) == Some(v),
            Self::NotEquals(k, v) => labels.get(k) != Some(v),
            Self::In(k, vs) => labels.get(k).is_some_and(|have| vs.contains(have)),
            Self::NotIn(k, vs) => labels.get(k).is_none_or(|have| !vs.contains(have)),
            Self::Exists(k) => labels.contains_key(k),
            Self::DoesNotExist(k) => !labels.contains_key(k),
            Self::GreaterThan(k, n) => number(k).is_some_and(|have| have > *n),
            Self::LessThan(k, n) => number(k).is_some_and(|have| have < *n),
        }
    }
}

/// A parsed label selector: the conjunction of its requirements. The empty selector matches
/// every object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

/// The apiserver's selector tokens (`k8s.io/apimachinery` `labels` lexer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tok {
    End,
    Close,
    Comma,
    Bang,
    DoubleEq,
    Eq,
    Gt,
    Ident,
    In,
    Lt,
    NotEq,
    NotIn,
    Open,
}

/// Where a token is read: after a key, `in` and `notin` are operators; everywhere else they
/// are ordinary words (a key or a value may be `in`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

fn is_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

fn is_special(c: char) -> bool {
    matches!(c, '=' | '!' | '(' | ')' | ',' | '>' | '<')
}

fn symbol(text: &str) -> Option<Tok> {
    Some(match text {
        ")" => Tok::Close,
        "," => Tok::Comma,
        "!" => Tok::Bang,
        "==" => Tok::DoubleEq,
        "=" => Tok::Eq,
        ">" => Tok::Gt,
        "<" => Tok::Lt,
        "!=" => Tok::NotEq,
        "(" => Tok::Open,
        _ => return None,
    })
}

/// Splits the text as the apiserver's lexer does: words run to whitespace or a special
/// character, and a run of special characters yields its longest leading symbol.
fn lex(input: &str) -> Vec<(Tok, String)> {
    let chars: Vec<char> = input.chars().collect();
    let mut pos = 0;
    let mut tokens = Vec::new();
    loop {
        while chars.get(pos).is_some_and(|c| is_whitespace(*c)) {
            pos += 1;
        }
        let Some(&first) = chars.get(pos) else {
            tokens.push((Tok::End, String::new()));
            return tokens;
        };
        if is_special(first) {
            // Every single special character is a symbol, so the longest match is one or two
            // characters long.
            let two: String = chars[pos..(pos + 2).min(chars.len())].iter().collect();
            let (tok, len) = match symbol(&two) {
                Some(tok) if two.chars().count() == 2 => (tok, 2),
                _ => (symbol(&first.to_string()).unwrap_or(Tok::End), 1),
            };
            tokens.push((tok, chars[pos..pos + len].iter().collect()));
            pos += len;
        } else {
            let start = pos;
            while chars
                .get(pos)
                .is_some_and(|c| !is_whitespace(*c) && !is_special(*c))
            {
                pos += 1;
            }
            let word: String = chars[start..pos].iter().collect();
            let tok = match word.as_str() {
                "in" => Tok::In,
                "notin" => Tok::NotIn,
                _ => Tok::Ident,
            };
            tokens.push((tok, word));
        }
    }
}

fn bad(message: impl Into<String>) -> ModelError {
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
fn qualified_name_errors(key: &str) -> Vec<String> {
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

fn check_key(key: &str) -> Result<(), String> {
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

fn check_value(key: &str, value: &str) -> Result<(), String> {
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
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "invalid label value: \"{value}\": at key: \"{key}\": {}",
            errors.join("; ")
        ))
    }
}

/// The apiserver's selector parser, step for step (so a malformed selector gets its message).
struct Parser {
    tokens: Vec<(Tok, String)>,
    pos: usize,
}

impl Parser {
    fn lookahead(&self, context: Context) -> (Tok, &str) {
        let (tok, lit) = self
            .tokens
            .get(self.pos)
            .map_or((Tok::End, ""), |(t, l)| (*t, l.as_str()));
        match tok {
            Tok::In | Tok::NotIn if context == Context::Values => (Tok::Ident, lit),
            _ => (tok, lit),
        }
    }

    fn consume(&mut self, context: Context) -> (Tok, String) {
        let (tok, lit) = self.lookahead(context);
        let lit = lit.to_owned();
        if self.pos < self.tokens.len() {
            self.pos += 1;
        }
        (tok, lit)
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut requirements = Vec::new();
        loop {
            let (tok, lit) = self.lookahead(Context::Values);
            match tok {
                Tok::Ident | Tok::Bang => {
                    let requirement = self
                        .requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    requirements.push(requirement);
                    let (tok, lit) = self.consume(Context::Values);
                    match tok {
                        Tok::End => return Ok(requirements),
                        Tok::Comma => {
                            let (next, lit) = self.lookahead(Context::Values);
                            if next != Tok::Ident && next != Tok::Bang {
                                return Err(format!(
                                    "found '{lit}', expected: identifier after ','"
                                ));
                            }
                        }
                        _ => {
                            return Err(format!("found '{lit}', expected: ',' or 'end of string'"));
                        }
                    }
                }
                Tok::End => return Ok(requirements),
                _ => {
                    return Err(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    ));
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        let (mut tok, mut key) = self.consume(Context::Values);
        let negated = tok == Tok::Bang;
        if negated {
            (tok, key) = self.consume(Context::Values);
        }
        if tok != Tok::Ident {
            return Err(format!("found '{key}', expected: identifier"));
        }
        check_key(&key)?;
        if negated {
            return Ok(Requirement::DoesNotExist(key));
        }
        if matches!(self.lookahead(Context::Values).0, Tok::End | Tok::Comma) {
            return Ok(Requirement::Exists(key));
        }
        let (op, lit) = self.consume(Context::KeyAndOperator);
        let requirement = match op {
            Tok::In | Tok::NotIn => {
                let values = self.values()?;
                for value in &values {
                    check_value(&key, value)?;
                }
                if op == Tok::In {
                    Requirement::In(key, values)
                } else {
                    Requirement::NotIn(key, values)
                }
            }
            Tok::Eq | Tok::DoubleEq | Tok::NotEq | Tok::Gt | Tok::Lt => {
                let value = self.exact_value()?;
                if matches!(op, Tok::Gt | Tok::Lt) {
                    let Ok(n) = value.parse::<i64>() else {
                        return Err(
                            "for 'Gt', 'Lt' operators, the value must be an integer".to_owned()
                        );
                    };
                    check_value(&key, &value)?;
                    if op == Tok::Gt {
                        Requirement::GreaterThan(key, n)
                    } else {
                        Requirement::LessThan(key, n)
                    }
                } else {
                    check_value(&key, &value)?;
                    if op == Tok::NotEq {
                        Requirement::NotEquals(key, value)
                    } else {
                        Requirement::Equals(key, value)
                    }
                }
            }
            _ => {
                return Err(format!(
                    "found '{lit}', expected: '=', '!=', '==', 'in', notin'"
                ));
            }
        };
        Ok(requirement)
    }

    /// `( v1, v2 )`; empty members read as `""`, and the set is sorted without duplicates.
    fn values(&mut self) -> Result<Vec<String>, String> {
        let (tok, lit) = self.consume(Context::Values);
        if tok != Tok::Open {
            return Err(format!("found '{lit}' expected: '('"));
        }
        let (tok, lit) = self.lookahead(Context::Values);
        let lit = lit.to_owned();
        let mut set = match tok {
            Tok::Ident | Tok::Comma => {
                let set = self.identifiers()?;
                if self.consume(Context::Values).0 != Tok::Close {
                    return Err(format!("found '{lit}', expected: ')'"));
                }
                set
            }
            Tok::Close => {
                self.consume(Context::Values);
                vec![String::new()]
            }
            _ => return Err(format!("found '{lit}', expected: ',', ')' or identifier")),
        };
        set.sort();
        set.dedup();
        Ok(set)
    }

    fn identifiers(&mut self) -> Result<Vec<String>, String> {
        let mut set = Vec::new();
        loop {
            let (tok, lit) = self.consume(Context::Values);
            match tok {
                Tok::Ident => {
                    set.push(lit);
                    let (next, lit) = self.lookahead(Context::Values);
                    match next {
                        Tok::Comma => {}
                        Tok::Close => return Ok(set),
                        _ => return Err(format!("found '{lit}', expected: ',' or ')'")),
                    }
                }
                Tok::Comma => {
                    if set.is_empty() {
                        set.push(String::new());
                    }
                    match self.lookahead(Context::Values).0 {
                        Tok::Close => {
                            set.push(String::new());
                            return Ok(set);
                        }
                        Tok::Comma => {
                            self.consume(Context::Values);
                            set.push(String::new());
                        }
                        _ => {}
                    }
                }
                _ => return Err(format!("found '{lit}', expected: ',', or identifier")),
            }
        }
    }

    /// The value after `=`, `==`, `!=`, `>` or `<` (empty before a comma or the end).
    fn exact_value(&mut self) -> Result<String, String> {
        if matches!(self.lookahead(Context::Values).0, Tok::End | Tok::Comma) {
            return Ok(String::new());
        }
        let (tok, lit) = self.consume(Context::Values);
        if tok == Tok::Ident {
            Ok(lit)
        } else {
            Err(format!("found '{lit}', expected: identifier"))
        }
    }
}

impl LabelSelector {
    /// Parse the `labelSelector` query parameter with the apiserver's grammar and messages.
    ///
    /// # Errors
    /// [`ModelError::BadRequest`] when the text is not a valid selector (syntax, an invalid key or
    /// value, a non-integer `>`/`<` operand).
    pub fn parse(input: &str) -> Result<Self, ModelError> {
        let mut parser = Parser {
            tokens: lex(input),
            pos: 0,
        };
        let requirements = parser.parse().map_err(bad)?;
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
        Kind::ServiceAccount => &["metadata.name", "metadata.namespace"],
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
