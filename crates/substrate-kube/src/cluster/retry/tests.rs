//! Unit tests of `cluster::retry`: what is transient, the backoff schedule, the budget and
//! `Retry-After`. Pure; no client, no clock.

use super::*;
use crate::cluster::mapping::Refusal;
use proptest::prelude::*;

fn refused(code: u16, retry_after: Option<u64>) -> Failure {
    Failure::Refused {
        refusal: Refusal {
            code,
            reason: String::new(),
            message: String::new(),
        },
        retry_after: retry_after.map(Duration::from_secs),
    }
}

fn transport(kind: TransportKind) -> Failure {
    Failure::Transport {
        kind,
        cause: apiary_classify::failure::TransportCause::Other,
        message: String::new(),
    }
}

fn policy() -> RetryPolicy {
    RetryPolicy {
        budget: Duration::from_secs(30),
        attempt_timeout: Duration::from_secs(10),
        base: Duration::from_millis(200),
        cap: Duration::from_secs(5),
    }
}

const MS: fn(u64) -> Duration = Duration::from_millis;

/// 5xx and 429 are transient, every other answer is final (boundaries 499/500, 599/600).
#[test]
fn transient_answers_are_5xx_and_429() {
    for code in [429, 500, 502, 503, 504, 599] {
        assert!(is_transient(&refused(code, None)), "{code}");
    }
    for code in [400, 401, 403, 404, 409, 410, 422, 428, 430, 499, 600] {
        assert!(!is_transient(&refused(code, None)), "{code}");
    }
}

/// deploy.md § Who refused it: a 403 showing an admission plugin's own lookup failing is
/// transient (retried within the window); an RBAC or quota 403 stays final.
#[test]
fn a_403_of_a_failed_admission_lookup_is_transient() {
    let forbidden = |message: &str| Failure::Refused {
        refusal: Refusal {
            code: 403,
            reason: "Forbidden".into(),
            message: message.into(),
        },
        retry_after: None,
    };
    assert!(is_transient(&forbidden(
        "pods \"p\" is forbidden: Get \"https://127.0.0.1:16443/api/v1/namespaces/a/limitranges\": \
         dial tcp 127.0.0.1:16443: connect: connection refused"
    )));
    assert!(!is_transient(&forbidden(
        "pods \"p\" is forbidden: User \"limited\" cannot create resource \"pods\" in API group \
         \"\" in the namespace \"a\""
    )));
    assert!(!is_transient(&forbidden(
        "pods \"p\" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1"
    )));
}

/// Dropped connections and timeouts are transient; undecodable bodies and client-side
/// failures are not.
#[test]
fn transient_transport_is_connection_and_timeout() {
    assert!(is_transient(&transport(TransportKind::Connection)));
    assert!(is_transient(&transport(TransportKind::Timeout)));
    assert!(!is_transient(&transport(TransportKind::Undecodable)));
    assert!(!is_transient(&transport(TransportKind::Other)));
}

/// The schedule doubles from `base` and stops at `cap`; jitter picks within the upper half.
#[test]
fn backoff_doubles_within_upper_half_and_caps() {
    let p = policy();
    assert_eq!(backoff(&p, 0, 0), MS(100));
    assert_eq!(backoff(&p, 0, 100), MS(200));
    assert_eq!(backoff(&p, 0, 101), MS(100));
    assert_eq!(backoff(&p, 0, 37), MS(137));
    assert_eq!(backoff(&p, 1, 0), MS(200));
    assert_eq!(backoff(&p, 1, 200), MS(400));
    assert_eq!(backoff(&p, 4, 0), MS(1600));
    assert_eq!(backoff(&p, 4, 1600), MS(3200));
    // 200 ms × 2^5 = 6400 ms is over the cap.
    assert_eq!(backoff(&p, 5, 0), MS(2500));
    assert_eq!(backoff(&p, 5, 2500), MS(5000));
    // Shifts past the word size saturate instead of wrapping to small waits.
    assert_eq!(backoff(&p, 63, 0), MS(2500));
    assert_eq!(backoff(&p, 64, 0), MS(2500));
    assert_eq!(backoff(&p, u32::MAX, 2500), MS(5000));
}

/// An odd ceiling splits so the wait can reach the whole ceiling.
#[test]
fn backoff_odd_ceiling_reaches_ceiling() {
    let p = RetryPolicy {
        base: MS(3),
        cap: MS(3),
        ..policy()
    };
    assert_eq!(backoff(&p, 0, 0), MS(1));
    assert_eq!(backoff(&p, 0, 2), MS(3));
    assert_eq!(backoff(&p, 0, 3), MS(1));
}

proptest! {
    /// Every wait lies in [ceiling / 2, ceiling] with ceiling = min(cap, base × 2^retry).
    #[test]
    fn backoff_stays_in_bounds(retry in 0u32..80, jitter in any::<u64>()) {
        let p = policy();
        let ceiling = 200u64.saturating_mul(1u64.checked_shl(retry).unwrap_or(u64::MAX)).min(5000);
        let wait = backoff(&p, retry, jitter);
        prop_assert!(wait >= MS(ceiling / 2));
        prop_assert!(wait <= MS(ceiling));
    }
}

/// A non-transient failure is never retried, whatever the budget.
#[test]
fn non_transient_is_not_retried() {
    assert_eq!(
        next_delay(&policy(), 0, &refused(400, None), Duration::ZERO, 0),
        None
    );
    assert_eq!(
        next_delay(&policy(), 0, &refused(409, Some(1)), Duration::ZERO, 0),
        None
    );
}

/// A transient failure is retried after the backoff while the wait ends inside the budget;
/// a wait ending exactly at the budget gives up.
#[test]
fn transient_is_retried_inside_budget_only() {
    let p = policy();
    let failure = transport(TransportKind::Connection);
    assert_eq!(
        next_delay(&p, 0, &failure, Duration::ZERO, 0),
        Some(MS(100))
    );
    assert_eq!(next_delay(&p, 0, &failure, MS(29_899), 0), Some(MS(100)));
    assert_eq!(next_delay(&p, 0, &failure, MS(29_900), 0), None);
    assert_eq!(next_delay(&p, 0, &failure, MS(31_000), 0), None);
}

/// `Retry-After` is honoured when longer than the backoff, and the backoff applies when
/// longer; a `Retry-After` past the budget gives up.
#[test]
fn retry_after_is_honoured() {
    let p = policy();
    assert_eq!(
        next_delay(&p, 0, &refused(429, Some(3)), Duration::ZERO, 0),
        Some(Duration::from_secs(3))
    );
    assert_eq!(
        next_delay(&p, 5, &refused(503, Some(1)), Duration::ZERO, 0),
        Some(MS(2500))
    );
    assert_eq!(
        next_delay(&p, 0, &refused(429, Some(30)), Duration::ZERO, 0),
        None
    );
    assert_eq!(
        next_delay(&p, 0, &refused(429, Some(3)), MS(26_999), 0),
        Some(Duration::from_secs(3))
    );
    assert_eq!(
        next_delay(&p, 0, &refused(429, Some(3)), MS(27_000), 0),
        None
    );
}

/// An attempt gets the attempt timeout or what remains of the budget, whichever is less, and
/// none once the budget is spent.
#[test]
fn attempt_limit_respects_budget() {
    let p = policy();
    assert_eq!(
        Window::budget(&p).attempt_limit(&p, Duration::ZERO),
        Some(Duration::from_secs(10))
    );
    assert_eq!(
        Window::budget(&p).attempt_limit(&p, Duration::from_secs(20)),
        Some(Duration::from_secs(10))
    );
    assert_eq!(
        Window::budget(&p).attempt_limit(&p, Duration::from_secs(25)),
        Some(Duration::from_secs(5))
    );
    assert_eq!(
        Window::budget(&p).attempt_limit(&p, MS(29_999)),
        Some(MS(1))
    );
    assert_eq!(
        Window::budget(&p).attempt_limit(&p, Duration::from_secs(30)),
        None
    );
    assert_eq!(
        Window::budget(&p).attempt_limit(&p, Duration::from_secs(31)),
        None
    );
}

/// The request budget is clamped to 1 ms ..= 30 s (every request must end within 30 s).
#[test]
fn budget_is_clamped_to_thirty_seconds() {
    let p = RetryPolicy::default();
    assert_eq!(p.budget, Duration::from_secs(30));
    assert_eq!(
        p.with_budget(Duration::from_secs(31)).budget,
        Duration::from_secs(30)
    );
    assert_eq!(
        p.with_budget(Duration::from_secs(30)).budget,
        Duration::from_secs(30)
    );
    assert_eq!(
        p.with_budget(Duration::from_secs(5)).budget,
        Duration::from_secs(5)
    );
    assert_eq!(p.with_budget(Duration::ZERO).budget, MS(1));
    assert_eq!(MAX_BUDGET, Duration::from_secs(30));
}

/// The defaults: 10 s per attempt, 200 ms first ceiling, 5 s cap.
#[test]
fn default_policy_values() {
    let p = RetryPolicy::default();
    assert_eq!(p.attempt_timeout, Duration::from_secs(10));
    assert_eq!(p.base, MS(200));
    assert_eq!(p.cap, Duration::from_secs(5));
}

/// Without a deadline the window is the budget: the same limits and delays as the policy alone.
#[test]
fn the_budget_window_is_the_policy_alone() {
    let p = policy();
    let window = Window::budget(&p);
    let failure = refused(503, None);
    for elapsed in [0, 1, 9_999, 20_000, 29_899, 29_900, 29_999, 30_000, 31_000] {
        let left = Duration::from_secs(30).saturating_sub(MS(elapsed));
        assert_eq!(
            window.attempt_limit(&p, MS(elapsed)),
            (!left.is_zero()).then(|| left.min(Duration::from_secs(10))),
            "{elapsed}"
        );
        assert_eq!(
            window.next_delay(&p, 0, &failure, MS(elapsed), 0),
            next_delay(&p, 0, &failure, MS(elapsed), 0),
            "{elapsed}"
        );
    }
}

/// deploy.md § Deadlines of the other commands: a request sent 1 s before a 3 s deadline retries
/// only until the deadline, not for its whole 30 s budget, and its last attempt ends within one
/// attempt limit after the deadline.
#[test]
fn retries_stop_at_the_operations_deadline() {
    let p = policy();
    let window = Window::before_deadline(&p, MS(1_000), Duration::ZERO);
    assert_eq!(window.retries_until, MS(1_000));
    assert_eq!(window.ends_by, MS(11_000));
    let failure = transport(TransportKind::Connection);
    // The first backoff (jitter 0: 100 ms) still fits before the deadline; one ending at it
    // does not.
    assert_eq!(
        window.next_delay(&p, 0, &failure, MS(899), 0),
        Some(MS(100))
    );
    assert_eq!(window.next_delay(&p, 0, &failure, MS(900), 0), None);
    // An attempt started just before the deadline runs at most one attempt limit.
    assert_eq!(window.attempt_limit(&p, MS(999)), Some(MS(10_000)));
    assert_eq!(window.attempt_limit(&p, MS(5_000)), Some(MS(6_000)));
    assert_eq!(window.attempt_limit(&p, MS(11_000)), None);
}

/// After the deadline, a request (the latest-condition read of a failing deploy) gets one
/// attempt, shortened by how far the deadline is past, and no retry; once the deadline is one
/// attempt limit past, nothing is sent at all.
#[test]
fn after_the_deadline_one_attempt_and_no_retry() {
    let p = policy();
    let late = Window::before_deadline(&p, Duration::ZERO, MS(4_000));
    assert_eq!(late.attempt_limit(&p, Duration::ZERO), Some(MS(6_000)));
    assert_eq!(
        late.next_delay(&p, 0, &transport(TransportKind::Connection), MS(1), 0),
        None
    );
    let closed = Window::before_deadline(&p, Duration::ZERO, MS(10_000));
    assert_eq!(closed.attempt_limit(&p, Duration::ZERO), None);
}

/// The budget still bounds a request whose deadline is far away, and a short budget bounds
/// the attempt after the deadline too.
#[test]
fn the_budget_still_bounds_a_window() {
    let p = policy();
    let far = Window::before_deadline(&p, Duration::from_secs(500), Duration::ZERO);
    assert_eq!(
        (far.retries_until, far.ends_by),
        (Window::budget(&p).retries_until, Window::budget(&p).ends_by)
    );
    let short = policy().with_budget(Duration::from_secs(3));
    let window = Window::before_deadline(&short, MS(2_000), Duration::ZERO);
    assert_eq!(window.retries_until, MS(2_000));
    assert_eq!(window.ends_by, MS(3_000));
    assert_eq!(
        window.attempt_limit(&short, Duration::ZERO),
        Some(MS(3_000))
    );
}

/// deploy.md § Who refused it: `/readyz` answering 2xx is ready, a 5xx or no answer is not
/// (the 403 is retried), and a refusal or an unserved path tells nothing (the 403 stands); only
/// an RBAC-shaped 403 asks.
#[test]
fn readiness_of_readyz_answers() {
    assert_eq!(Readiness::of(Some(200)), Readiness::Ready);
    for code in [Some(500), Some(503), None] {
        assert_eq!(Readiness::of(code), Readiness::NotReady, "{code:?}");
    }
    for code in [401, 403, 404] {
        assert_eq!(Readiness::of(Some(code)), Readiness::Unknown, "{code}");
    }
    let forbidden = |message: &str| Failure::Refused {
        refusal: Refusal {
            code: 403,
            reason: "Forbidden".into(),
            message: message.into(),
        },
        retry_after: None,
    };
    assert!(needs_ready_server(&forbidden(
        "secrets is forbidden: User \"limited\" cannot create resource \"secrets\" in API group \
         \"\" in the namespace \"a\""
    )));
    assert!(!needs_ready_server(&forbidden(
        "exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1"
    )));
    assert!(!needs_ready_server(&refused(500, None)));
    let window = Window::budget(&policy());
    assert!(window.not_ready_delay(&policy(), 0, MS(0), 0).is_some());
    assert_eq!(
        window.not_ready_delay(&policy(), 0, Duration::from_secs(30), 0),
        None
    );
}

/// deploy.md § Who refused it: an RBAC 403 is transient shortly after an outage this process
/// saw (kube-apiserver v1.20 can refuse after `/readyz` is ok), or while `/readyz` says not
/// ready; otherwise final. A refused connection marks an outage; a dropped one, a timeout, a 503,
/// a 500 or a 403 does not.
#[test]
fn an_rbac_403_is_transient_only_near_an_outage() {
    assert!(rbac_refusal_is_transient(true, Readiness::Ready));
    assert!(rbac_refusal_is_transient(false, Readiness::NotReady));
    assert!(!rbac_refusal_is_transient(false, Readiness::Ready));
    assert!(!rbac_refusal_is_transient(false, Readiness::Unknown));
    let refused_connection = Failure::Transport {
        kind: TransportKind::Connection,
        cause: TransportCause::ConnectionRefused,
        message: String::new(),
    };
    assert!(shows_an_outage(&refused_connection));
    assert!(!shows_an_outage(&transport(TransportKind::Connection)));
    assert!(!shows_an_outage(&transport(TransportKind::Timeout)));
    assert!(!shows_an_outage(&refused(503, None)));
    assert!(!shows_an_outage(&refused(500, None)));
    assert!(!shows_an_outage(&refused(403, None)));
    assert_eq!(AFTER_OUTAGE, Duration::from_secs(60));
}

/// deploy.md § Who refused it: once the server has shown it is starting, its refusals are
/// retried until the operation's deadline (here 500 s away), not for the 30 s budget, and the
/// last attempt still ends within one attempt limit after the deadline. Without a deadline, or
/// with one inside the budget, the window does not change.
#[test]
fn a_starting_server_is_waited_for_until_the_deadline() {
    let p = policy();
    let starting =
        Window::before_deadline(&p, Duration::from_secs(500), Duration::ZERO).while_starting(&p);
    assert_eq!(starting.retries_until, Duration::from_secs(500));
    assert_eq!(starting.ends_by, Duration::from_secs(510));
    let refused_connection = transport(TransportKind::Connection);
    assert_eq!(
        starting.not_ready_delay(&p, 0, Duration::from_secs(100), 0),
        Some(MS(100))
    );
    // A wait that would end at the deadline is not started.
    assert_eq!(
        starting.not_ready_delay(&p, 0, MS(499_899), 0),
        Some(MS(100))
    );
    assert_eq!(starting.not_ready_delay(&p, 0, MS(499_900), 0), None);
    assert_eq!(
        starting.next_delay(&p, 0, &refused_connection, Duration::from_secs(100), 0),
        Some(MS(100))
    );
    assert_eq!(
        starting.next_delay(&p, 0, &refused_connection, MS(499_900), 0),
        None
    );
    assert_eq!(
        starting.attempt_limit(&p, Duration::from_secs(505)),
        Some(Duration::from_secs(5))
    );
    assert_eq!(starting.attempt_limit(&p, Duration::from_secs(510)), None);
    assert_eq!(Window::budget(&p).while_starting(&p), Window::budget(&p));
    let near = Window::before_deadline(&p, Duration::from_secs(3), Duration::ZERO);
    assert_eq!(near.while_starting(&p), near);
    let late = Window::before_deadline(&p, Duration::ZERO, MS(4_000));
    assert_eq!(late.while_starting(&p), late);
}
