//! Tests of the deploy shell's side of the exchange layer: the two translations of a miss (for
//! `Cluster`'s mapping and for seed discovery) and the typed failure of a request kube sends
//! itself. The quoting rule on a real client is tested with the layer, in `apiary-seeds-kube`.

use std::time::Duration;

use super::*;

/// A timed-out attempt is a timeout for the mapping and `Error::Service` for seeds.
#[test]
fn a_timeout_translates_both_ways() {
    let failure = failure_of(Miss::TimedOut(Duration::from_millis(250)));
    assert_eq!(
        failure,
        Failure::Transport {
            kind: TransportKind::Timeout,
            cause: apiary_classify::failure::TransportCause::TimedOut(Duration::from_millis(250)),
            message: "no answer within 250 ms".to_owned(),
        }
    );
    let error = Miss::TimedOut(Duration::from_millis(250)).into_kube_error();
    assert!(matches!(error, kube::Error::Service(_)), "{error:?}");
    assert!(describe_kube_error(&error).contains("no answer within 250 ms"));
}

/// Rule 2 for the requests kube sends itself (the log stream): for a body that is not a
/// `Status`, kube makes one up with the body as its message and "Failed to parse error data" as
/// its reason; the typed failure and the words keep the code and quote neither.
#[test]
fn kubes_made_up_status_is_not_quoted() {
    let error = kube::Error::Api(
        kube::core::Status::failure("<html>SECRET-LOOKING</html>", "Failed to parse error data")
            .with_code(502)
            .boxed(),
    );
    let failure = request_failure(Operation::ReadPodLog, "agents/p", &error);
    assert_eq!(failure.code(), Some(502));
    assert_eq!(failure.reason(), Some(""));
    assert_eq!(failure.server_message(), Some(""));
    let words = describe_kube_error(&error);
    assert_eq!(words, "the apiserver answered 502 Bad Gateway: ");
    assert!(!failure.to_string().contains("SECRET"), "{failure}");
}
