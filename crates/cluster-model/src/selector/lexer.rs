//! The apiserver's label-selector lexer (k8s.io/apimachinery `labels` lexer): words run to
//! whitespace or a special character, and a run of special characters yields its longest
//! leading symbol; `in` and `notin` are operators only right after a key.
//!
//! Layer: pure text processing; performs no I/O.

/// The apiserver's selector tokens (`k8s.io/apimachinery` `labels` lexer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Tok {
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
pub(super) enum Context {
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
pub(super) fn lex(input: &str) -> Vec<(Tok, String)> {
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
