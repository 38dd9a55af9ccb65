//! The token syntaxes the flags' values must have: a Kubernetes quantity, a label-value token
//! and a DNS subdomain. Pure predicates.

/// The apiserver's quantity grammar (`^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$`, which it
/// checks while decoding, answering `400` before any validation): a number, then a suffix.
pub(super) fn is_quantity(text: &str) -> bool {
    let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
    let number_end = unsigned
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(unsigned.len());
    let (number, rest) = unsigned.split_at(number_end);
    if !number.bytes().any(|b| b.is_ascii_digit()) {
        return false;
    }
    let suffix_end = rest
        .find(|c: char| !"eEinumkKMGTP".contains(c))
        .unwrap_or(rest.len());
    let exponent = &rest[suffix_end..];
    let digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
    digits.bytes().all(|b| b.is_ascii_digit())
}

pub(super) fn is_label_token(token: &str) -> bool {
    let bytes = token.as_bytes();
    if token.is_empty() {
        return true;
    }
    bytes.len() <= 63
        && bytes[0].is_ascii_alphanumeric()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

pub(super) fn is_dns_subdomain(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 253
        && text.split('.').all(|label| {
            let bytes = label.as_bytes();
            !bytes.is_empty()
                && bytes.len() <= 63
                && bytes[0].is_ascii_alphanumeric()
                && bytes[bytes.len() - 1].is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        })
}
