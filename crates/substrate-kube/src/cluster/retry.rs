//! Retry policy: which failures are transient and how long to wait before the next attempt
//! (deploy.md § Create, the decision on transient failures).
//!
//! Layer: pure functions over plain values; the caller passes elapsed time and a random jitter
//! word in. Performs no I/O, reads no clock and draws no randomness. It must never retry an
//! answer the algorithm branches on (4xx other than 429): those are outcomes or real refusals.

use std::time::Duration;

use apiary_classify::refusal::{Refusal as AdmissionRefusal, read_refusal};

use apiary_classify::failure::TransportCause;

use super::mapping::{Failure, TransportKind};

/// Bounds of one request's retries. Every attempt and every wait happens inside `budget`; an
/// operation's deadline narrows that further (`Window`) (deploy.md § Latest
/// condition, deadline, zero mutation: every API request must time out within 30 s).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// One request, all its attempts and waits included.
    pub budget: Duration,
    /// One attempt at most (further limited by what remains of `budget`).
    pub attempt_timeout: Duration,
    /// The ceiling of the first backoff; it doubles per retry.
    pub base: Duration,
    /// The largest backoff ceiling.
    pub cap: Duration,
}

/// The most an operation may take, retries included.
pub const MAX_BUDGET: Duration = Duration::from_secs(30);

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            budget: MAX_BUDGET,
            attempt_timeout: Duration::from_secs(10),
            base: Duration::from_millis(200),
            cap: Duration::from_secs(5),
        }
    }
}

impl RetryPolicy {
    /// This policy with `budget` clamped to 1 ms ..= 30 s.
    #[must_use]
    pub fn with_budget(self, budget: Duration) -> Self {
        Self {
            budget: budget.clamp(Duration::from_millis(1), MAX_BUDGET),
            ..self
        }
    }
}

/// Whether a failure may succeed when tried again: a 5xx or 429 answer, a 403 whose message
/// shows an admission plugin's own lookup failing (deploy.md § Who refused it: it says nothing
/// about the request, for example while the API server restarts), a dropped or refused
/// connection, or a timeout. Everything else is final: a 4xx is the apiserver's decision, an
/// undecodable body would decode no better, and a client-side failure would recur.
pub fn is_transient(failure: &Failure) -> bool {
    match failure {
        Failure::Refused { refusal, .. } => {
            refusal.code == 429
                || (500..=599).contains(&refusal.code)
                || (refusal.code == 403
                    && read_refusal(&refusal.message) == AdmissionRefusal::Transient)
        }
        Failure::Transport { kind, .. } => {
            matches!(kind, TransportKind::Connection | TransportKind::Timeout)
        }
    }
}

/// Whether a failure is a refusal by RBAC (`User "…" cannot …`), which a restarting API server
/// can give before its authorization caches have loaded: such a 403 counts only from a ready
/// server (deploy.md § Who refused it).
pub fn needs_ready_server(failure: &Failure) -> bool {
    matches!(failure, Failure::Refused { refusal, .. }
        if refusal.code == 403
            && matches!(read_refusal(&refusal.message), AdmissionRefusal::Rbac { .. }))
}

/// What `GET /readyz` said of the server that gave a 403.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Readiness {
    /// 200: ready; the 403 is the server's answer.
    Ready,
    /// A 5xx, no answer, or a timeout: not ready (starting, or stopping); the 403 is transient.
    NotReady,
    /// Refused (401, 403) or not served (404, an older server or the simulator): nothing to
    /// tell, so the 403 is believed.
    Unknown,
}

impl Readiness {
    /// The readiness an answer to `GET /readyz` shows: its status code, or `None` without an
    /// answer.
    pub fn of(code: Option<u16>) -> Readiness {
        match code {
            Some(200..=299) => Readiness::Ready,
            Some(500..=599) | None => Readiness::NotReady,
            Some(_) => Readiness::Unknown,
        }
    }
}

/// How long after this process last saw the API server down or not ready an RBAC 403 is still
/// taken for a server whose authorization caches have not loaded yet (deploy.md § Who refused
/// it: on kube-apiserver v1.20 they can still refuse after `/readyz` is ok).
pub const AFTER_OUTAGE: Duration = Duration::from_secs(60);

/// Whether an RBAC 403 is transient: the server was seen down or not ready within
/// [`AFTER_OUTAGE`] (`recent_outage`), or `/readyz` says it is not ready now. A genuine denial
/// on a server that stayed up is final.
pub fn rbac_refusal_is_transient(recent_outage: bool, readiness: Readiness) -> bool {
    recent_outage || readiness == Readiness::NotReady
}

/// Whether a failure shows the server down: a refused connection, which is what a stopped API
/// server answers (the mark [`AFTER_OUTAGE`] counts from). A dropped connection, a timeout or a
/// 503 is a flaky network's or a busy server's too, and marks nothing: after them a genuine
/// denial is still reported at once.
pub fn shows_an_outage(failure: &Failure) -> bool {
    matches!(
        failure,
        Failure::Transport {
            cause: TransportCause::ConnectionRefused,
            ..
        }
    )
}

/// The backoff before retry number `retry` (0 for the first retry): the ceiling is
/// `base × 2^retry`, capped at `cap`; the wait is drawn from the upper half of the ceiling by
/// `jitter`, so contending clients spread out but never hammer.
pub fn backoff(policy: &RetryPolicy, retry: u32, jitter: u64) -> Duration {
    let base = millis(policy.base);
    let cap = millis(policy.cap);
    let ceiling = base
        .saturating_mul(1u64.checked_shl(retry).unwrap_or(u64::MAX))
        .min(cap);
    let half = ceiling / 2;
    let spread = ceiling - half;
    Duration::from_millis(half + jitter % (spread + 1))
}

/// How long to wait before retrying, or `None` to give up: the failure is not transient, or the
/// wait (the backoff, or the answer's `Retry-After` when longer) would not end before the budget.
pub fn next_delay(
    policy: &RetryPolicy,
    retry: u32,
    failure: &Failure,
    elapsed: Duration,
    jitter: u64,
) -> Option<Duration> {
    if !is_transient(failure) {
        return None;
    }
    let mut delay = backoff(policy, retry, jitter);
    if let Failure::Refused {
        retry_after: Some(asked),
        ..
    } = failure
    {
        delay = delay.max(*asked);
    }
    (elapsed + delay < policy.budget).then_some(delay)
}

/// What an operation's deadline leaves one exchange, on the exchange's own clock (zero at its
/// first attempt). The budget bounds one request's retries; the deadline bounds the operation
/// that sends many requests: a retry (its backoff wait included) only starts if it ends before
/// the deadline, and no attempt runs past one attempt limit after it. So an operation overruns
/// its deadline by at most one request, the one in flight when the deadline passed, however
/// many requests it sends (before, a request started a second before a 3 s deadline still
/// retried for its whole 30 s budget, and a dead server made `--timeout 3s` take 30 s).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// A retry's wait must end before this.
    pub retries_until: Duration,
    /// No attempt may still run at this.
    pub ends_by: Duration,
    /// What was left of the operation's deadline when the exchange started, not bounded by the
    /// budget (`None` without a deadline): how long a starting API server is waited for
    /// ([`Window::while_starting`]).
    pub deadline: Option<Duration>,
}

impl Window {
    /// The policy's budget alone (an operation without a deadline).
    pub fn budget(policy: &RetryPolicy) -> Self {
        Self {
            retries_until: policy.budget,
            ends_by: policy.budget,
            deadline: None,
        }
    }

    /// The window of an exchange that starts `left` before the operation's deadline, or
    /// `overdue` after it (at most one of the two is non-zero): retries stop at the deadline,
    /// attempts one attempt limit after it, and neither later than the budget.
    pub fn before_deadline(policy: &RetryPolicy, left: Duration, overdue: Duration) -> Self {
        Self {
            retries_until: left.min(policy.budget),
            ends_by: (left + one_request(policy))
                .saturating_sub(overdue)
                .min(policy.budget),
            deadline: Some(left),
        }
    }

    /// This window once the server that answered has shown it is starting (deploy.md § Who
    /// refused it): its refusals are retried until the operation's deadline, not only for the
    /// request's budget, since a restart on a loaded machine can outlast the budget. The
    /// deadline still bounds the overrun to one request; without a deadline the window is
    /// unchanged.
    #[must_use]
    pub fn while_starting(self, policy: &RetryPolicy) -> Self {
        match self.deadline {
            Some(left) if left > self.retries_until => Self {
                retries_until: left,
                ends_by: left + one_request(policy),
                deadline: self.deadline,
            },
            _ => self,
        }
    }

    /// The time limit of the next attempt, `elapsed` into the exchange, or `None` when the
    /// window is closed (no request is sent then).
    pub fn attempt_limit(&self, policy: &RetryPolicy, elapsed: Duration) -> Option<Duration> {
        let remaining = self.ends_by.checked_sub(elapsed)?;
        (!remaining.is_zero()).then(|| remaining.min(policy.attempt_timeout))
    }

    /// The backoff before retrying a failure that is not transient by itself but came from a
    /// server that was not ready (deploy.md § Who refused it), when it ends inside the window.
    pub fn not_ready_delay(
        &self,
        policy: &RetryPolicy,
        retry: u32,
        elapsed: Duration,
        jitter: u64,
    ) -> Option<Duration> {
        let delay = backoff(policy, retry, jitter);
        (elapsed + delay < self.retries_until).then_some(delay)
    }

    /// [`next_delay`], with the window's end in place of the budget (the same, or earlier,
    /// unless the window is [`Window::while_starting`]).
    pub fn next_delay(
        &self,
        policy: &RetryPolicy,
        retry: u32,
        failure: &Failure,
        elapsed: Duration,
        jitter: u64,
    ) -> Option<Duration> {
        let widened = RetryPolicy {
            budget: self.retries_until,
            ..*policy
        };
        next_delay(&widened, retry, failure, elapsed, jitter)
    }
}

/// One attempt's longest run: the attempt timeout, within the budget.
fn one_request(policy: &RetryPolicy) -> Duration {
    policy.attempt_timeout.min(policy.budget)
}

/// Milliseconds of a duration, saturating.
fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests;
