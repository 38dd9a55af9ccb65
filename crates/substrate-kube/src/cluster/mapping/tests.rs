//! Unit tests of `cluster::mapping`: the 409 split on the literal reason, confirmed absence,
//! namespace ensure, the IMF-fixdate server clock, and error text (deploy.md § Apiserver
//! mapping A2–A6, A9). Pure; no client.

use super::*;
use apiary_seeds_kube::exchange::decode::decode_refusal;
use proptest::prelude::*;

fn refused(code: u16, reason: &str) -> Failure {
    Failure::Refused {
        refusal: Refusal {
            code,
            reason: reason.to_owned(),
            message: "m".to_owned(),
        },
        retry_after: None,
    }
}

fn transport(kind: TransportKind) -> Failure {
    Failure::Transport {
        kind,
        cause: TransportCause::Other,
        message: "connection reset".to_owned(),
    }
}

const ALL_TRANSPORT: [TransportKind; 4] = [
    TransportKind::Connection,
    TransportKind::Timeout,
    TransportKind::Undecodable,
    TransportKind::Other,
];

/// A6: the reason constants are exactly the apiserver's spellings.
#[test]
fn a6_reason_literals_are_exact() {
    assert_eq!(REASON_ALREADY_EXISTS, "AlreadyExists");
    assert_eq!(REASON_CONFLICT, "Conflict");
    assert_eq!(REASON_NOT_FOUND, "NotFound");
    assert_eq!(REASON_FORBIDDEN, "Forbidden");
}

/// A3: a 409 `AlreadyExists` is the create outcome, a 409 `Conflict` the delete outcome, and
/// neither matches the other's mapping.
#[test]
fn a3_each_409_matches_only_its_own_reason() {
    let exists = refused(409, "AlreadyExists");
    let conflict = refused(409, "Conflict");
    assert_eq!(create_answer(&exists), Some(CreateAnswer::AlreadyExists));
    assert_eq!(create_answer(&conflict), None);
    assert_eq!(
        delete_answer(&conflict),
        Some(DeleteAnswer::PreconditionFailed)
    );
    assert_eq!(delete_answer(&exists), None);
    assert!(exists.has_reason("AlreadyExists"));
    assert!(!exists.has_reason("Conflict"));
}

/// A4: a transport failure matches no reason: never an outcome, never an absence.
#[test]
fn a4_transport_error_matches_no_reason() {
    for kind in ALL_TRANSPORT {
        let failure = transport(kind);
        for reason in ["AlreadyExists", "Conflict", "NotFound", "Forbidden", ""] {
            assert!(!failure.has_reason(reason), "{kind:?} matched {reason:?}");
        }
        assert_eq!(failure.refusal(), None);
        assert_eq!(create_answer(&failure), None);
        assert_eq!(delete_answer(&failure), None);
        assert!(!is_absent(&failure));
    }
}

/// A5: a 409 (or 404) with an empty reason matches nothing, not even the empty string.
#[test]
fn a5_empty_reason_matches_nothing() {
    for code in [404, 409] {
        let failure = refused(code, "");
        assert!(!failure.has_reason(""));
        assert_eq!(create_answer(&failure), None);
        assert_eq!(delete_answer(&failure), None);
        assert!(!is_absent(&failure));
    }
}

/// Reasons are matched by the reason, never by the code: a 404 `NotFound` is an absence, a
/// `NotFound` reason is decisive whatever the code, and case matters.
#[test]
fn reason_not_code_decides_absence() {
    assert!(is_absent(&refused(404, "NotFound")));
    assert!(!is_absent(&refused(404, "notfound")));
    assert!(!is_absent(&refused(404, "Forbidden")));
    assert_eq!(
        delete_answer(&refused(404, "NotFound")),
        Some(DeleteAnswer::NotFound)
    );
    assert_eq!(delete_answer(&refused(403, "Forbidden")), None);
    assert_eq!(create_answer(&refused(409, "alreadyexists")), None);
}

/// A retried Secret create answering `AlreadyExists` is success (the name is this attempt's
/// alone); a first answer of `AlreadyExists` and a created Secret pass through unchanged.
#[test]
fn retried_secret_create_already_exists_is_success() {
    use CreateAnswer::{AlreadyExists, Created};
    assert_eq!(secret_create_answer(AlreadyExists, true), Created);
    assert_eq!(secret_create_answer(AlreadyExists, false), AlreadyExists);
    assert_eq!(secret_create_answer(Created, true), Created);
    assert_eq!(secret_create_answer(Created, false), Created);
}

/// A9: namespace GET: exists → done, NotFound → create, Forbidden → continue, other → E9.
#[test]
fn a9_namespace_get_mapping() {
    assert_eq!(after_namespace_get(Ok(())), AfterNamespaceGet::Exists);
    assert_eq!(
        after_namespace_get(Err(refused(404, "NotFound"))),
        AfterNamespaceGet::Create
    );
    assert_eq!(
        after_namespace_get(Err(refused(403, "Forbidden"))),
        AfterNamespaceGet::Continue
    );
    for failure in [
        refused(500, "InternalError"),
        refused(404, ""),
        refused(403, ""),
        transport(TransportKind::Connection),
    ] {
        assert_eq!(
            after_namespace_get(Err(failure.clone())),
            AfterNamespaceGet::Fail(failure)
        );
    }
}

/// A9: namespace create: AlreadyExists → success, Forbidden → E11, other → E9.
#[test]
fn a9_namespace_create_mapping() {
    assert_eq!(after_namespace_create(Ok(())), AfterNamespaceCreate::Done);
    assert_eq!(
        after_namespace_create(Err(refused(409, "AlreadyExists"))),
        AfterNamespaceCreate::Done
    );
    assert_eq!(
        after_namespace_create(Err(refused(403, "Forbidden"))),
        AfterNamespaceCreate::Forbidden
    );
    for failure in [
        refused(409, "Conflict"),
        refused(403, ""),
        refused(422, "Invalid"),
        transport(TransportKind::Timeout),
    ] {
        assert_eq!(
            after_namespace_create(Err(failure.clone())),
            AfterNamespaceCreate::Fail(failure)
        );
    }
}

/// Every error names the operation and the object, and keeps code, reason and message.
#[test]
fn errors_name_operation_and_object() {
    let api = refused(409, "Conflict").into_failure(Operation::DeletePod, "agents/agent-x");
    assert_eq!(
        api,
        RequestFailure::answered(Operation::DeletePod, "agents/agent-x", 409, "Conflict", "m")
    );
    assert_eq!(
        api.to_string(),
        "could not delete pod agents/agent-x: the apiserver answered 409 Conflict: m"
    );
    let lost =
        transport(TransportKind::Connection).into_failure(Operation::GetPod, "agents/agent-x");
    assert_eq!(
        lost,
        RequestFailure::lost(
            Operation::GetPod,
            "agents/agent-x",
            TransportCause::Other,
            "connection reset"
        )
    );
    assert_eq!(
        lost.to_string(),
        "could not read pod agents/agent-x: connection reset"
    );
}

/// A1: the spec's example `Date` header is the server clock.
#[test]
fn a1_date_header_parses_as_utc() {
    let parsed = parse_imf_fixdate("Sun, 02 Aug 2026 04:00:00 GMT");
    assert_eq!(
        parsed.map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
        Some("2026-08-02T04:00:00Z".to_owned())
    );
    assert_eq!(
        parse_imf_fixdate("Wed, 31 Dec 2025 23:59:59 GMT")
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)),
        Some("2025-12-31T23:59:59Z".to_owned())
    );
}

/// A2: garbled `Date` values give no clock (and never panic).
#[test]
fn a2_garbled_date_is_no_clock() {
    let garbled = [
        "not a date",
        "",
        // Each separator position broken in turn.
        "Sun; 02 Aug 2026 04:00:00 GMT",
        "Sun,x02 Aug 2026 04:00:00 GMT",
        "Sun, 02xAug 2026 04:00:00 GMT",
        "Sun, 02 Augx2026 04:00:00 GMT",
        "Sun, 02 Aug 2026x04:00:00 GMT",
        "Sun, 02 Aug 2026 04x00:00 GMT",
        "Sun, 02 Aug 2026 04:00x00 GMT",
        "Sun, 02 Aug 2026 04:00:00xGMT",
        "Sun, 02 Aug 2026 04:00:00 UTC",
        "Sun, 02 Aug 2026 04:00:00 gmt",
        // Wrong lengths and obsolete forms.
        "Sun, 2 Aug 2026 04:00:00 GMT",
        "Sun, 02 Aug 2026 04:00:00 GMT ",
        "Sunday, 02-Aug-26 04:00:00 GMT",
        "Sun Aug  2 04:00:00 2026     ",
        "Sun, 02 Aug 2026 04:00:00 +0000",
        // Names and numbers.
        "Mon, 02 Aug 2026 04:00:00 GMT",
        "sun, 02 Aug 2026 04:00:00 GMT",
        "Sun, 02 aug 2026 04:00:00 GMT",
        "Sun, 02 Agu 2026 04:00:00 GMT",
        "Sun, +2 Aug 2026 04:00:00 GMT",
        "Sun, 02 Aug +026 04:00:00 GMT",
        "Sun, 02 Aug 2026 +4:00:00 GMT",
        "Sun, 02 Aug 2026 04:+0:00 GMT",
        "Sun, 02 Aug 2026 04:00:+0 GMT",
        "Mon, 30 Feb 2026 04:00:00 GMT",
        "Sun, 00 Aug 2026 04:00:00 GMT",
        "Sun, 02 Aug 2026 24:00:00 GMT",
        "Sun, 02 Aug 2026 04:60:00 GMT",
        "Sun, 02 Aug 2026 04:00:61 GMT",
        // Non-ASCII of the right byte length must not panic on slicing (the last one puts a
        // character across a slice boundary, so only the ASCII check stands between it and a
        // panic: kills `!is_ascii() || len != 29` becoming `&&`).
        "Su\u{e9} 02 Aug 2026 04:00:00 GMT",
        "Sün, 02 Aug 2026 04:00:00 GM",
        "Sun,\u{a0}02 Aug 2026 04:00:00 GM",
    ];
    for value in garbled {
        assert_eq!(parse_imf_fixdate(value), None, "{value:?}");
    }
}

/// Every day and month name is recognised in its own position (kills swapped table entries).
#[test]
fn every_weekday_and_month_name_parses() {
    let cases = [
        ("Thu, 01 Jan 2026 00:00:00 GMT", "2026-01-01"),
        ("Sun, 01 Feb 2026 00:00:00 GMT", "2026-02-01"),
        ("Sun, 01 Mar 2026 00:00:00 GMT", "2026-03-01"),
        ("Wed, 01 Apr 2026 00:00:00 GMT", "2026-04-01"),
        ("Fri, 01 May 2026 00:00:00 GMT", "2026-05-01"),
        ("Mon, 01 Jun 2026 00:00:00 GMT", "2026-06-01"),
        ("Wed, 01 Jul 2026 00:00:00 GMT", "2026-07-01"),
        ("Sat, 01 Aug 2026 00:00:00 GMT", "2026-08-01"),
        ("Tue, 01 Sep 2026 00:00:00 GMT", "2026-09-01"),
        ("Thu, 01 Oct 2026 00:00:00 GMT", "2026-10-01"),
        ("Sun, 01 Nov 2026 00:00:00 GMT", "2026-11-01"),
        ("Tue, 01 Dec 2026 00:00:00 GMT", "2026-12-01"),
    ];
    for (value, date) in cases {
        let parsed = parse_imf_fixdate(value).map(|t| t.date_naive().to_string());
        assert_eq!(parsed.as_deref(), Some(date), "{value}");
    }
}

proptest! {
    /// Any second between 1970 and 9999, written as IMF-fixdate, parses back to itself.
    #[test]
    fn imf_fixdate_round_trips(seconds in 0i64..253_402_300_799) {
        let time = DateTime::from_timestamp(seconds, 0).expect("in range");
        let text = time.format("%a, %d %b %Y %H:%M:%S GMT").to_string();
        prop_assert_eq!(parse_imf_fixdate(&text), Some(time));
    }

    /// Well-formed IMF-fixdates and their near misses (one field, separator or character
    /// perturbed) never panic the parser, and it accepts only the canonical text of the time it
    /// returns: a well-formed date parses to itself, a wrong weekday, a length change or a
    /// non-ASCII character to nothing, and anything it does accept formats back to the input.
    /// Out-of-range fields (day 32, hour 24, second 60, year 0000) reach the calendar checks.
    #[test]
    fn imf_fixdate_never_panics((time, near_miss) in imf_fixdate_near_misses()) {
        let text = near_miss.apply(&imf_fixdate(time));
        let parsed = parse_imf_fixdate(&text);
        if let Some(parsed) = parsed {
            prop_assert_eq!(imf_fixdate(parsed), text.clone(), "accepted a non-canonical date");
        }
        match near_miss {
            NearMiss::None => prop_assert_eq!(parsed, Some(time)),
            NearMiss::Insert(..) | NearMiss::Remove(_) | NearMiss::Weekday(_) => {
                prop_assert_eq!(parsed, None, "{:?}", text);
            }
            NearMiss::Replace(_, with) if !with.is_ascii() => {
                prop_assert_eq!(parsed, None, "{:?}", text);
            }
            NearMiss::Replace(..) | NearMiss::Field(..) => {}
        }
    }
}

/// `time` as an IMF-fixdate (`Sun, 02 Aug 2026 04:00:00 GMT`).
fn imf_fixdate(time: DateTime<Utc>) -> String {
    time.format("%a, %d %b %Y %H:%M:%S GMT").to_string()
}

/// One perturbation of a well-formed 29-byte IMF-fixdate.
#[derive(Debug, Clone, Copy)]
enum NearMiss {
    /// Left as it is.
    None,
    /// The character at a byte offset replaced (any separator, digit or letter).
    Replace(usize, char),
    /// A character inserted at a byte offset.
    Insert(usize, char),
    /// The character at a byte offset removed.
    Remove(usize),
    /// The weekday name moved on by 1 to 6 days (a real name, the wrong day).
    Weekday(u8),
    /// A numeric field (its byte range) rewritten with a value of the same width, in range
    /// or not.
    Field(usize, usize, u32),
}

/// Day names in `%a` order from Monday.
const WEEKDAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];

impl NearMiss {
    fn apply(self, text: &str) -> String {
        let mut out = text.to_owned();
        match self {
            NearMiss::None => {}
            NearMiss::Replace(at, with) => {
                out.replace_range(at..=at, with.encode_utf8(&mut [0; 4]));
            }
            NearMiss::Insert(at, with) => out.insert(at, with),
            NearMiss::Remove(at) => {
                out.remove(at);
            }
            NearMiss::Weekday(shift) => {
                let today = WEEKDAYS
                    .iter()
                    .position(|d| *d == &text[..3])
                    .expect("a %a name");
                out.replace_range(..3, WEEKDAYS[(today + usize::from(shift)) % 7]);
            }
            NearMiss::Field(start, end, value) => {
                let width = end - start;
                let value = value % 10u32.pow(u32::try_from(width).expect("small"));
                out.replace_range(start..end, &format!("{value:0width$}"));
            }
        }
        out
    }
}

/// Times from year 1000 to 9999 (every weekday, month and second of the day), each with one
/// near miss or none.
fn imf_fixdate_near_misses() -> impl Strategy<Value = (DateTime<Utc>, NearMiss)> {
    // 1000-01-01T00:00:00Z and 9999-12-31T23:59:59Z.
    let time = (-30_610_224_000i64..=253_402_300_799)
        .prop_map(|s| DateTime::from_timestamp(s, 0).expect("in range"));
    let character = prop_oneof![
        prop::char::range(' ', '~'),
        prop::char::range('0', '9'),
        Just(' '),
        Just(','),
        Just(':'),
        prop::char::any(),
    ];
    // Day, year, hour, minute, second: (byte range, how far out of range to go).
    let field = prop_oneof![
        (Just(5usize), Just(7usize), 0u32..100),
        (Just(12), Just(16), 0u32..10_000),
        (Just(17), Just(19), 0u32..100),
        (Just(20), Just(22), 0u32..100),
        (Just(23), Just(25), 0u32..100),
    ];
    let near_miss = prop_oneof![
        1 => Just(NearMiss::None),
        4 => (0usize..29, character.clone()).prop_map(|(at, c)| NearMiss::Replace(at, c)),
        1 => (0usize..=29, character).prop_map(|(at, c)| NearMiss::Insert(at, c)),
        1 => (0usize..29).prop_map(NearMiss::Remove),
        1 => (1u8..7).prop_map(NearMiss::Weekday),
        3 => field.prop_map(|(start, end, value)| NearMiss::Field(start, end, value)),
    ];
    (time, near_miss)
}

/// kube errors are sorted: Api keeps its Status, connection failures are transport
/// `Connection`, undecodable bodies `Undecodable`, the rest `Other`.
#[test]
fn kube_errors_are_classified() {
    let api = kube::Error::Api(Box::new(kube::core::Status {
        code: 403,
        reason: "Forbidden".to_owned(),
        message: "no".to_owned(),
        ..kube::core::Status::default()
    }));
    assert_eq!(classify_kube_error(&api), {
        Failure::Refused {
            refusal: Refusal {
                code: 403,
                reason: "Forbidden".to_owned(),
                message: "no".to_owned(),
            },
            retry_after: None,
        }
    });
    let kind = |error: kube::Error| match classify_kube_error(&error) {
        Failure::Transport { kind, message, .. } => {
            assert!(!message.is_empty());
            Some(kind)
        }
        Failure::Refused { .. } => None,
    };
    let reset = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset by peer");
    assert_eq!(
        kind(kube::Error::Service(Box::new(reset))),
        Some(TransportKind::Connection)
    );
    assert_eq!(
        kind(kube::Error::ReadEvents(std::io::Error::other("x"))),
        Some(TransportKind::Connection)
    );
    let serde = serde_json::from_slice::<u8>(b"x").expect_err("not a number");
    assert_eq!(
        kind(kube::Error::SerdeError(serde)),
        Some(TransportKind::Undecodable)
    );
    let utf8 = String::from_utf8(vec![0xff]).expect_err("not UTF-8");
    assert_eq!(
        kind(kube::Error::FromUtf8(utf8)),
        Some(TransportKind::Undecodable)
    );
    assert_eq!(kind(kube::Error::TlsRequired), Some(TransportKind::Other));
}

/// The message of a classified connection failure names the cause, and the cause is typed.
#[test]
fn connection_failure_message_names_cause() {
    let refused = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connection refused");
    match classify_kube_error(&kube::Error::Service(Box::new(refused))) {
        Failure::Transport { message, cause, .. } => {
            assert!(message.contains("connection refused"));
            assert_eq!(cause, TransportCause::ConnectionRefused);
        }
        other => panic!("{other:?}"),
    }
}

/// The plain-words cause of a transport failure: a refused connection by its `io::ErrorKind`
/// (whatever the message), then the chain's words, which include rustls's own for every rejected
/// certificate (also inside an `io::Error`) and hyper-util's DNS failure (a boxed string);
/// anything else is `Other`.
#[test]
fn transport_causes_are_read_from_the_chain() {
    let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
    assert_eq!(transport_cause(&refused), TransportCause::ConnectionRefused);
    let reworded = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "port 6443 closed");
    assert_eq!(
        transport_cause(&reworded),
        TransportCause::ConnectionRefused
    );
    let expired = rustls::Error::InvalidCertificate(rustls::CertificateError::Expired);
    assert_eq!(transport_cause(&expired), TransportCause::TlsNotTrusted);
    let untrusted = rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer);
    assert_eq!(transport_cause(&untrusted), TransportCause::TlsNotTrusted);
    let wrapped = std::io::Error::new(std::io::ErrorKind::InvalidData, untrusted);
    assert_eq!(transport_cause(&wrapped), TransportCause::TlsNotTrusted);
    let other_tls =
        std::io::Error::new(std::io::ErrorKind::InvalidData, rustls::Error::DecryptError);
    assert_eq!(transport_cause(&other_tls), TransportCause::Other);
    let dns = std::io::Error::other("dns error: failed to lookup address information");
    assert_eq!(transport_cause(&dns), TransportCause::Dns);
    let lookup = std::io::Error::other("failed to lookup address information: Name unknown");
    assert_eq!(transport_cause(&lookup), TransportCause::Dns);
    let worded = std::io::Error::other("tcp connect error: Connection refused (os error 111)");
    assert_eq!(transport_cause(&worded), TransportCause::ConnectionRefused);
    let issuer = std::io::Error::other("invalid peer certificate: UnknownIssuer");
    assert_eq!(transport_cause(&issuer), TransportCause::TlsNotTrusted);
    let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
    assert_eq!(transport_cause(&reset), TransportCause::Other);
    assert_eq!(
        classify_kube_error(&kube::Error::TlsRequired),
        Failure::Transport {
            kind: TransportKind::Other,
            cause: TransportCause::Other,
            message: kube::Error::TlsRequired.to_string(),
        }
    );
}

/// A node as the apiserver answers it, with these conditions (type, status, reason).
fn node_with(conditions: &[(&str, &str, Option<&str>)]) -> Node {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "node-7"},
        "status": {"conditions": conditions.iter().map(|(kind, status, reason)| {
            serde_json::json!({"type": kind, "status": status, "reason": reason})
        }).collect::<Vec<_>>()},
    }))
    .expect("a Node")
}

/// deploy.md § When a pod will not go away: a read node shows its `Ready` condition (not another
/// one first in the list); a node without one is read with none.
#[test]
fn a_read_node_shows_its_ready_condition() {
    let node = node_with(&[
        (
            "MemoryPressure",
            "False",
            Some("KubeletHasSufficientMemory"),
        ),
        ("Ready", "False", Some("KubeletNotReady")),
    ]);
    let NodeFacts::Read { ready: Some(ready) } = node_facts(Ok(&node)) else {
        panic!("read with a Ready condition");
    };
    assert_eq!(ready.kind, "Ready");
    assert_eq!(ready.status, "False");
    assert_eq!(ready.reason.as_deref(), Some("KubeletNotReady"));
    let bare = node_with(&[("DiskPressure", "False", None)]);
    assert_eq!(node_facts(Ok(&bare)), NodeFacts::Read { ready: None });
    assert_eq!(
        node_facts(Ok(&Node::default())),
        NodeFacts::Read { ready: None }
    );
}

/// deploy.md § When a pod will not go away: a refused node read is split on the literal reason
/// (never the code): 404 `NotFound` is a node that is gone, 403 `Forbidden` a user who may not read
/// nodes, and every other refusal (an empty reason too) and every transport failure says nothing.
#[test]
fn node_read_refusals_split_on_the_reason() {
    assert_eq!(
        node_facts(Err(&refused(404, "NotFound"))),
        NodeFacts::Missing
    );
    assert_eq!(
        node_facts(Err(&refused(403, "Forbidden"))),
        NodeFacts::NotPermitted
    );
    for (code, reason) in [
        (404, ""),
        (403, ""),
        (500, "InternalError"),
        (401, "Unauthorized"),
        (404, "notfound"),
    ] {
        assert_eq!(
            node_facts(Err(&refused(code, reason))),
            NodeFacts::Unknown,
            "{code} {reason:?}"
        );
    }
    for kind in ALL_TRANSPORT {
        assert_eq!(node_facts(Err(&transport(kind))), NodeFacts::Unknown);
    }
}

/// deploy.md § Namespace ensure, item 4: the body a real kube-apiserver (v1.20) answers a pod
/// create with while the namespace has no `default` ServiceAccount, verbatim, decodes into a
/// failure whose refusal names the account (the words are matched in `apiary-classify`).
#[test]
fn service_account_admission_status_decodes_to_a_named_account() {
    const SA_MISSING_STATUS: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \"apiary-research-bot-1-72bea12366a3\" is forbidden: error looking up service account agents/default: serviceaccount \"default\" not found","reason":"Forbidden","details":{"name":"apiary-research-bot-1-72bea12366a3","kind":"pods"},"code":403}"#;
    let failure = Failure::Refused {
        refusal: decode_refusal(403, SA_MISSING_STATUS.as_bytes()),
        retry_after: None,
    }
    .into_failure(Operation::CreatePod, "agents/p");
    assert_eq!(
        failure.missing_service_account().as_deref(),
        Some("default")
    );
    assert_eq!(failure.code(), Some(403));
    assert!(failure.to_string().contains("403 Forbidden"), "{failure}");
}
