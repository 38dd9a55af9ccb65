//! Fault injection: rules that make chosen requests fail (500/503, 429 with `Retry-After`, a
//! dropped connection, 403 `Forbidden`, any `Status`), and the `Date` header mode.
//!
//! Layer: a shared, thread-safe handle the tests hold ([`Faults`]) plus the pure choice of which
//! rule fires for a request. Randomness comes only from a seeded generator, so a run with a given
//! seed injects the same faults into the same request sequence. This module never touches the
//! model: a faulted request is answered before the model sees it, so it has no effect.

use std::sync::{Arc, Mutex, MutexGuard};

use crate::route::{Resource, Route, Verb};
use crate::status::ApiError;

/// What a matching request gets instead of its normal answer.
#[derive(Debug, Clone, PartialEq)]
pub enum FaultAction {
    /// 500 `InternalError`.
    InternalError,
    /// 503 `ServiceUnavailable`.
    ServiceUnavailable,
    /// 429 `TooManyRequests` with a `Retry-After: <seconds>` header.
    TooManyRequests {
        /// The `Retry-After` value in seconds.
        retry_after_seconds: u32,
    },
    /// The connection is closed without any response.
    DropConnection,
    /// The request is answered normally, but only after this much real time (a slow or, with a
    /// long delay, hung apiserver: for client timeouts).
    Delay(std::time::Duration),
    /// 403 `Forbidden` in the authorizer's wording for the request's verb and resource.
    Forbidden,
    /// Any failure `Status`: the code, the reason and the message.
    Status {
        /// HTTP code and `Status.code`.
        code: u16,
        /// `Status.reason`.
        reason: String,
        /// `Status.message`.
        message: String,
    },
}

/// The answer a [`FaultAction`] gives in place of the real one: its failure `Status` and, for
/// 429, the `Retry-After` header value. Shared by the simulator and by any proxy that injects the
/// same faults in front of a real apiserver, so both answer a rule identically.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultAnswer {
    /// The Status body and its HTTP code.
    pub error: ApiError,
    /// The `Retry-After` header, in seconds, when the action asks for one.
    pub retry_after_seconds: Option<u32>,
}

impl FaultAction {
    /// The answer this action gives to a request routed to `routed`; `None` for
    /// [`FaultAction::DropConnection`] and [`FaultAction::Delay`], which answer nothing themselves.
    pub fn answer(&self, routed: &Route) -> Option<FaultAnswer> {
        let (error, retry_after_seconds) = match self {
            FaultAction::InternalError => (ApiError::internal("injected fault"), None),
            FaultAction::ServiceUnavailable => (ApiError::service_unavailable(), None),
            FaultAction::TooManyRequests {
                retry_after_seconds,
            } => (
                ApiError::too_many_requests(*retry_after_seconds),
                Some(*retry_after_seconds),
            ),
            FaultAction::Forbidden => {
                let e = match routed {
                    Route::Resource(r) => ApiError::forbidden(
                        r.verb.as_str(),
                        r.resource.plural(),
                        r.namespace.as_deref(),
                        r.name.as_deref(),
                    ),
                    _ => ApiError::new(
                        403,
                        "Forbidden",
                        "forbidden: User \"system:anonymous\" cannot get path",
                        None,
                    ),
                };
                (e, None)
            }
            FaultAction::Status {
                code,
                reason,
                message,
            } => (ApiError::new(*code, reason, message.clone(), None), None),
            FaultAction::DropConnection | FaultAction::Delay(_) => return None,
        };
        Some(FaultAnswer {
            error,
            retry_after_seconds,
        })
    }
}

/// Which requests a rule applies to. Every field that is `Some` must match; the default matches
/// every request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Matcher {
    /// The Kubernetes verb (`get`, `list`, `watch`, `create`, `delete`).
    pub verb: Option<Verb>,
    /// The resource.
    pub resource: Option<Resource>,
    /// The HTTP method.
    pub method: Option<http::Method>,
    /// A substring of the request path.
    pub path_contains: Option<String>,
}

impl Matcher {
    /// Matches every request.
    pub fn any() -> Matcher {
        Matcher::default()
    }

    /// Matches requests with this verb on this resource.
    pub fn verb(verb: Verb, resource: Resource) -> Matcher {
        Matcher {
            verb: Some(verb),
            resource: Some(resource),
            ..Matcher::default()
        }
    }

    /// Matches requests with this verb on every resource.
    pub fn any_resource(verb: Verb) -> Matcher {
        Matcher {
            verb: Some(verb),
            ..Matcher::default()
        }
    }

    /// Matches requests whose path contains `fragment`.
    pub fn path(fragment: impl Into<String>) -> Matcher {
        Matcher {
            path_contains: Some(fragment.into()),
            ..Matcher::default()
        }
    }

    /// Whether a request matches.
    pub fn matches(&self, req: &RequestFacts<'_>) -> bool {
        self.method.as_ref().is_none_or(|m| m == req.method)
            && self
                .path_contains
                .as_deref()
                .is_none_or(|p| req.path.contains(p))
            && self
                .verb
                .is_none_or(|v| req.target.is_some_and(|(_, rv)| rv == v))
            && self
                .resource
                .is_none_or(|r| req.target.is_some_and(|(rr, _)| rr == r))
    }
}

/// How often a rule fires among the requests it matches.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Budget {
    /// Every matching request.
    Always,
    /// The next `n` matching requests, then the rule is spent.
    Times(u32),
    /// Each matching request with this probability (0.0–1.0), drawn from the seeded generator.
    Fraction(f64),
}

/// One fault rule.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultRule {
    /// Which requests.
    pub matcher: Matcher,
    /// What they get.
    pub action: FaultAction,
    /// How often.
    pub budget: Budget,
}

impl FaultRule {
    /// A rule firing on every request `matcher` matches.
    pub fn always(matcher: Matcher, action: FaultAction) -> FaultRule {
        FaultRule {
            matcher,
            action,
            budget: Budget::Always,
        }
    }

    /// A rule firing on the next `n` matching requests.
    pub fn times(n: u32, matcher: Matcher, action: FaultAction) -> FaultRule {
        FaultRule {
            matcher,
            action,
            budget: Budget::Times(n),
        }
    }

    /// A rule firing on a `fraction` of matching requests (seeded, reproducible).
    pub fn fraction(fraction: f64, matcher: Matcher, action: FaultAction) -> FaultRule {
        FaultRule {
            matcher,
            action,
            budget: Budget::Fraction(fraction),
        }
    }
}

/// What the `Date` response header carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DateMode {
    /// The model clock as an IMF-fixdate (the default, and what the apiserver does).
    #[default]
    Normal,
    /// No `Date` header at all.
    Omit,
    /// A `Date` header that is not an HTTP-date.
    Garbled,
}

/// The value sent in a garbled `Date` header.
pub const GARBLED_DATE: &str = "Yesterday, around teatime";

/// Identifies an added rule, for [`Faults::remove`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RuleId(u64);

/// The facts about a request that rules match on.
#[derive(Debug, Clone, Copy)]
pub struct RequestFacts<'a> {
    /// The HTTP method.
    pub method: &'a http::Method,
    /// The request path.
    pub path: &'a str,
    /// The resource and verb, when the path is a served resource.
    pub target: Option<(Resource, Verb)>,
}

#[derive(Debug)]
struct State {
    rules: Vec<(RuleId, FaultRule)>,
    next_id: u64,
    rng: SplitMix64,
    date: DateMode,
    denied: Vec<(Verb, Option<Resource>)>,
    injected: u64,
}

/// The shared fault-injection handle; clones control the same simulator.
#[derive(Debug, Clone)]
pub struct Faults {
    state: Arc<Mutex<State>>,
}

impl Faults {
    /// No rules, a normal `Date` header, the random generator seeded with `seed`.
    pub fn new(seed: u64) -> Faults {
        Faults {
            state: Arc::new(Mutex::new(State {
                rules: Vec::new(),
                next_id: 0,
                rng: SplitMix64(seed),
                date: DateMode::Normal,
                denied: Vec::new(),
                injected: 0,
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means a test thread panicked while holding it; the rule list
        // itself is always consistent, so keep serving.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a rule; rules are tried in the order they were added and the first that fires wins.
    pub fn add(&self, rule: FaultRule) -> RuleId {
        let mut s = self.lock();
        let id = RuleId(s.next_id);
        s.next_id += 1;
        s.rules.push((id, rule));
        id
    }

    /// Removes a rule (no effect when it is already gone or spent).
    pub fn remove(&self, id: RuleId) {
        self.lock().rules.retain(|(i, _)| *i != id);
    }

    /// Denies `verb` on `resource` (on every resource when `None`) with 403 `Forbidden`, until
    /// [`Faults::allow_all`] or [`Faults::clear`].
    pub fn deny(&self, verb: Verb, resource: Option<Resource>) {
        self.lock().denied.push((verb, resource));
    }

    /// Lifts every denial.
    pub fn allow_all(&self) {
        self.lock().denied.clear();
    }

    /// Sets what the `Date` header carries.
    pub fn set_date_mode(&self, mode: DateMode) {
        self.lock().date = mode;
    }

    /// The current `Date` header mode.
    pub fn date_mode(&self) -> DateMode {
        self.lock().date
    }

    /// Removes every rule and denial and restores the normal `Date` header.
    pub fn clear(&self) {
        let mut s = self.lock();
        s.rules.clear();
        s.denied.clear();
        s.date = DateMode::Normal;
    }

    /// How many requests have been failed by a rule or a denial so far.
    pub fn injected(&self) -> u64 {
        self.lock().injected
    }

    /// Decides the fault for one request, if any, consuming budgets and random draws.
    ///
    /// Denials come first (a denied verb is refused every time), then the rules in order.
    pub fn decide(&self, req: &RequestFacts<'_>) -> Option<FaultAction> {
        let mut s = self.lock();
        let denied = req.target.is_some_and(|(resource, verb)| {
            s.denied
                .iter()
                .any(|(v, r)| *v == verb && r.is_none_or(|r| r == resource))
        });
        let action = if denied {
            Some(FaultAction::Forbidden)
        } else {
            let State { rules, rng, .. } = &mut *s;
            let mut chosen = None;
            for (_, rule) in rules.iter_mut() {
                if !rule.matcher.matches(req) {
                    continue;
                }
                let fires = match &mut rule.budget {
                    Budget::Always => true,
                    Budget::Times(0) => false,
                    Budget::Times(n) => {
                        *n -= 1;
                        true
                    }
                    Budget::Fraction(f) => rng.next_unit() < *f,
                };
                if fires {
                    chosen = Some(rule.action.clone());
                    break;
                }
            }
            rules.retain(|(_, r)| r.budget != Budget::Times(0));
            chosen
        };
        if action.is_some() {
            s.injected += 1;
        }
        action
    }
}

/// A small seeded generator (SplitMix64): reproducible fault fractions without a dependency.
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform draw in [0, 1).
    fn next_unit(&mut self) -> f64 {
        // 53 random bits fill an f64 mantissa exactly.
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;

    fn facts<'a>(
        method: &'a Method,
        path: &'a str,
        target: Option<(Resource, Verb)>,
    ) -> RequestFacts<'a> {
        RequestFacts {
            method,
            path,
            target,
        }
    }

    /// A `Times(n)` rule fires exactly n times, then the request passes.
    #[test]
    fn times_budget_fires_exactly_n_times() {
        let f = Faults::new(1);
        f.add(FaultRule::times(
            2,
            Matcher::verb(Verb::Create, Resource::Pods),
            FaultAction::ServiceUnavailable,
        ));
        let m = Method::POST;
        let req = facts(
            &m,
            "/api/v1/namespaces/a/pods",
            Some((Resource::Pods, Verb::Create)),
        );
        assert_eq!(f.decide(&req), Some(FaultAction::ServiceUnavailable));
        assert_eq!(f.decide(&req), Some(FaultAction::ServiceUnavailable));
        assert_eq!(f.decide(&req), None);
        assert_eq!(f.injected(), 2);
    }

    /// Matchers require every given field: verb, resource, method and path fragment.
    #[test]
    fn matcher_requires_every_given_field() {
        let get = Method::GET;
        let pod_get = facts(
            &get,
            "/api/v1/namespaces/a/pods/p",
            Some((Resource::Pods, Verb::Get)),
        );
        let secret_get = facts(
            &get,
            "/api/v1/namespaces/a/secrets/s",
            Some((Resource::Secrets, Verb::Get)),
        );
        let discovery = facts(&get, "/api", None);
        assert!(Matcher::any().matches(&discovery));
        assert!(Matcher::verb(Verb::Get, Resource::Pods).matches(&pod_get));
        assert!(!Matcher::verb(Verb::Get, Resource::Pods).matches(&secret_get));
        assert!(!Matcher::verb(Verb::List, Resource::Pods).matches(&pod_get));
        assert!(!Matcher::any_resource(Verb::Get).matches(&discovery));
        assert!(Matcher::path("/secrets/").matches(&secret_get));
        assert!(!Matcher::path("/secrets/").matches(&pod_get));
        let post_only = Matcher {
            method: Some(Method::POST),
            ..Matcher::default()
        };
        assert!(!post_only.matches(&pod_get));
    }

    /// Denials answer Forbidden for the denied verb only, and come before other rules.
    #[test]
    fn deny_forbids_only_the_denied_verb() {
        let f = Faults::new(1);
        f.add(FaultRule::always(
            Matcher::any(),
            FaultAction::InternalError,
        ));
        f.deny(Verb::Create, Some(Resource::Namespaces));
        let post = Method::POST;
        let create_ns = facts(
            &post,
            "/api/v1/namespaces",
            Some((Resource::Namespaces, Verb::Create)),
        );
        assert_eq!(f.decide(&create_ns), Some(FaultAction::Forbidden));
        let get = Method::GET;
        let get_ns = facts(
            &get,
            "/api/v1/namespaces/a",
            Some((Resource::Namespaces, Verb::Get)),
        );
        assert_eq!(f.decide(&get_ns), Some(FaultAction::InternalError));
        f.clear();
        assert_eq!(f.decide(&create_ns), None);
    }

    /// The same seed injects the same faults; a fraction fires near its rate.
    #[test]
    fn fraction_is_seeded_and_near_its_rate() {
        let run = |seed| {
            let f = Faults::new(seed);
            f.add(FaultRule::fraction(
                0.3,
                Matcher::any(),
                FaultAction::DropConnection,
            ));
            let m = Method::GET;
            (0..1000)
                .map(|_| f.decide(&facts(&m, "/x", None)).is_some())
                .collect::<Vec<_>>()
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
        let fired = run(7).iter().filter(|b| **b).count();
        assert!((200..400).contains(&fired), "{fired}");
    }

    /// Fractions 0 and 1 mean never and always.
    #[test]
    fn fraction_bounds() {
        let f = Faults::new(3);
        let never = f.add(FaultRule::fraction(
            0.0,
            Matcher::any(),
            FaultAction::InternalError,
        ));
        let m = Method::GET;
        assert!((0..200).all(|_| f.decide(&facts(&m, "/", None)).is_none()));
        f.remove(never);
        f.add(FaultRule::fraction(
            1.0,
            Matcher::any(),
            FaultAction::InternalError,
        ));
        assert!((0..200).all(|_| f.decide(&facts(&m, "/", None)).is_some()));
    }

    /// Every answering action maps to its Status code and reason; only 429 carries `Retry-After`;
    /// drops and delays answer nothing themselves.
    #[test]
    fn fault_answers_carry_code_reason_and_retry_after() {
        let routed = Route::Unknown;
        let cases = [
            (FaultAction::InternalError, 500, "InternalError", None),
            (
                FaultAction::ServiceUnavailable,
                503,
                "ServiceUnavailable",
                None,
            ),
            (
                FaultAction::TooManyRequests {
                    retry_after_seconds: 3,
                },
                429,
                "TooManyRequests",
                Some(3),
            ),
            (FaultAction::Forbidden, 403, "Forbidden", None),
            (
                FaultAction::Status {
                    code: 410,
                    reason: "Gone".into(),
                    message: "m".into(),
                },
                410,
                "Gone",
                None,
            ),
        ];
        for (action, code, reason, retry) in cases {
            let a = action.answer(&routed).expect("an answer");
            assert_eq!(a.error.code, code, "{action:?}");
            assert_eq!(a.error.reason(), reason, "{action:?}");
            assert_eq!(a.retry_after_seconds, retry, "{action:?}");
        }
        assert_eq!(FaultAction::DropConnection.answer(&routed), None);
        assert_eq!(
            FaultAction::Delay(std::time::Duration::from_millis(1)).answer(&routed),
            None
        );
    }

    /// The Date mode is settable and `clear` restores it.
    #[test]
    fn date_mode_round_trip() {
        let f = Faults::new(0);
        assert_eq!(f.date_mode(), DateMode::Normal);
        f.set_date_mode(DateMode::Garbled);
        assert_eq!(f.date_mode(), DateMode::Garbled);
        f.clear();
        assert_eq!(f.date_mode(), DateMode::Normal);
    }
}
