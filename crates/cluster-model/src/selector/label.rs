//! Label selectors: the [`Requirement`]s and the parser of the `labelSelector` parameter, step
//! for step the apiserver's (k8s.io/apimachinery `labels.Parse`), so a malformed selector gets
//! the apiserver's message.
//!
//! Layer: pure parsing and matching; performs no I/O.

use std::collections::BTreeMap;

use super::lexer::{Context, Tok, lex};
use super::validation::{bad, check_key, check_value};
use crate::error::ModelError;

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
