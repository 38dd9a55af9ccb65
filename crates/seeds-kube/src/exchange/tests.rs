//! Tests of the exchange layer: the quoting rule on a real `kube::Client` answered by an
//! in-memory `tower` service (no network), and seed discovery's translation of a miss. The
//! deploy shell's translation (`apiary-substrate-kube`'s `exchange::failure_of`) is tested there.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};

use super::*;

/// A client whose every request is answered with `code`, `body` and `headers`.
fn client_answering(
    code: u16,
    body: &'static str,
    headers: &'static [(&str, &str)],
) -> kube::Client {
    let service = tower::service_fn(move |_request: http::Request<Body>| async move {
        let mut response = http::Response::new(
            Full::new(Bytes::from_static(body.as_bytes()))
                .map_err(|never: Infallible| match never {})
                .boxed(),
        );
        *response.status_mut() = http::StatusCode::from_u16(code).expect("a status code");
        for (name, value) in headers {
            response.headers_mut().insert(
                http::HeaderName::from_static(name),
                http::HeaderValue::from_static(value),
            );
        }
        Ok::<_, Infallible>(response)
    });
    kube::Client::new(service, "default")
}

fn request() -> http::Request<Vec<u8>> {
    http::Request::get("/api/v1/namespaces/default/pods")
        .body(Vec::new())
        .expect("a request")
}

const FORBIDDEN: &str = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"pods is forbidden: User \"x\" cannot list resource \"pods\"","reason":"Forbidden","code":403}"#;

/// Rule 1: a `Status` refusal keeps its code, reason and message verbatim, and the words a
/// person reads are those three, never the `Debug` form of the `Status`.
#[tokio::test]
async fn a_status_refusal_is_described_by_its_own_message() {
    let client = client_answering(403, FORBIDDEN, &[]);
    let miss = fetch(&client, &request(), Duration::from_secs(5))
        .await
        .err()
        .expect("refused");
    let error = miss.into_kube_error();
    let text = describe_kube_error(&error);
    assert_eq!(
        text,
        "the apiserver answered 403 Forbidden: pods is forbidden: User \"x\" cannot list \
         resource \"pods\""
    );
    assert!(!text.contains("Status {"), "{text}");
    match error {
        kube::Error::Api(status) => {
            assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"));
        }
        other => panic!("expected Api, got {other:?}"),
    }
}

/// Rule 2: a body that is not a `Status` is never quoted, in either translation; the HTTP reason
/// phrase stands in for the missing reason in the words, and the reason itself stays empty.
#[tokio::test]
async fn a_body_that_is_no_status_is_never_quoted() {
    let client = client_answering(502, "<html>SECRET-LOOKING</html>", &[]);
    let miss = fetch(&client, &request(), Duration::from_secs(5))
        .await
        .err()
        .expect("refused");
    let Miss::Refused { refusal, .. } = &miss else {
        panic!("expected a refusal, got {miss:?}");
    };
    assert_eq!(refusal.reason, "");
    let error = miss.into_kube_error();
    let text = describe_kube_error(&error);
    assert_eq!(
        text,
        "the apiserver answered 502 Bad Gateway: the response carried no Status body (27 bytes)"
    );
    assert!(!format!("{error:?}").contains("SECRET-LOOKING"));
}

/// A refusal's `Retry-After` reaches the retry decision; a 2xx keeps its headers and body.
#[tokio::test]
async fn retry_after_and_replies_are_read() {
    let client = client_answering(429, "{}", &[("retry-after", "3")]);
    let miss = fetch(&client, &request(), Duration::from_secs(5))
        .await
        .err()
        .expect("refused");
    match miss {
        Miss::Refused { retry_after, .. } => {
            assert_eq!(retry_after, Some(Duration::from_secs(3)));
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    let client = client_answering(200, "{\"items\":[]}", &[("date", "x")]);
    let reply = fetch(&client, &request(), Duration::from_secs(5))
        .await
        .expect("a reply");
    assert_eq!(&reply.body[..], b"{\"items\":[]}");
    assert_eq!(
        reply.headers.get("date").map(|v| v.as_bytes()),
        Some(&b"x"[..])
    );
}

/// A refusal with a reason reads with that reason; an unknown code with no reason reads with
/// none (no invented phrase).
#[test]
fn refusal_words() {
    assert_eq!(
        describe_refusal(409, "Conflict", "the object has been modified"),
        "the apiserver answered 409 Conflict: the object has been modified"
    );
    assert_eq!(
        describe_refusal(599, "", "the response carried no Status body (0 bytes)"),
        "the apiserver answered 599 : the response carried no Status body (0 bytes)"
    );
}
