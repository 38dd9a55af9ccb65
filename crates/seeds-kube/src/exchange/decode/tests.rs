//! Unit tests of `exchange::decode`: a refusal's `Status` body decoded verbatim and any other
//! body never quoted (the quoting rule, rule 2), the chain of causes described once, and
//! `Retry-After` in delta-seconds only. Pure; no client.

use std::time::Duration;

use super::*;

/// A Status body is decoded verbatim; a missing message is said so.
#[test]
fn status_body_is_decoded_verbatim() {
    let body = br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods \"a\" already exists","reason":"AlreadyExists","code":409}"#;
    assert_eq!(
        decode_refusal(409, body),
        Refusal {
            code: 409,
            reason: "AlreadyExists".to_owned(),
            message: "pods \"a\" already exists".to_owned(),
        }
    );
    let bare = br#"{"kind":"Status","code":500}"#;
    assert_eq!(
        decode_refusal(500, bare),
        Refusal {
            code: 500,
            reason: String::new(),
            message: "no message".to_owned(),
        }
    );
}

/// A body that is not a Status gives an empty reason and a message that never quotes it.
#[test]
fn non_status_body_is_not_quoted() {
    let refusal = decode_refusal(502, b"<html>SECRET-LOOKING</html>");
    assert_eq!(refusal.code, 502);
    assert_eq!(refusal.reason, "");
    assert!(!refusal.message.contains("SECRET"), "{}", refusal.message);
    assert_eq!(
        refusal.message,
        "the response carried no Status body (27 bytes)"
    );
}

#[derive(Debug)]
struct Layer(&'static str, Option<Box<Layer>>);

impl std::fmt::Display for Layer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for Layer {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.1
            .as_deref()
            .map(|layer| layer as &(dyn std::error::Error + 'static))
    }
}

/// The chain is described once: causes already in the text are skipped, new ones appended.
#[test]
fn describe_chain_appends_only_new_causes() {
    let error = Layer(
        "client error: tcp connect error",
        Some(Box::new(Layer(
            "tcp connect error",
            Some(Box::new(Layer("Connection refused", None))),
        ))),
    );
    assert_eq!(
        describe_chain(&error),
        "client error: tcp connect error: Connection refused"
    );
    assert_eq!(describe_chain(&Layer("alone", None)), "alone");
}

/// `Retry-After` delta-seconds parse; anything else does not.
#[test]
fn retry_after_parses_delta_seconds_only() {
    assert_eq!(parse_retry_after("3"), Some(Duration::from_secs(3)));
    assert_eq!(parse_retry_after(" 7 "), Some(Duration::from_secs(7)));
    assert_eq!(parse_retry_after("0"), Some(Duration::ZERO));
    for value in [
        "",
        " ",
        "-1",
        "+3",
        "1.5",
        "3s",
        "Sun, 02 Aug 2026 04:00:00 GMT",
        "99999999999999999999999",
    ] {
        assert_eq!(parse_retry_after(value), None, "{value:?}");
    }
}
