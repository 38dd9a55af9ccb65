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
        attempt_limit(&p, Duration::ZERO),
        Some(Duration::from_secs(10))
    );
    assert_eq!(
        attempt_limit(&p, Duration::from_secs(20)),
        Some(Duration::from_secs(10))
    );
    assert_eq!(
        attempt_limit(&p, Duration::from_secs(25)),
        Some(Duration::from_secs(5))
    );
    assert_eq!(attempt_limit(&p, MS(29_999)), Some(MS(1)));
    assert_eq!(attempt_limit(&p, Duration::from_secs(30)), None);
    assert_eq!(attempt_limit(&p, Duration::from_secs(31)), None);
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
