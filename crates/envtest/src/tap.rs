//! A client-side tap for the real-server tier's tests (`apiary-substrate-kube`'s `real_*` and
//! `apiary-seeds-kube`'s `real_seeds`): a tower layer inside a `kube::Client` that logs every
//! request the client sends (method, path, query, body, parsed target, answered status) in the
//! simulator's own [`LoggedRequest`] shape, can hold chosen requests until the test releases them,
//! and can cut open watch streams on command.
//!
//! Why client-side: the same log then exists for the simulator and for the real apiserver (which
//! keeps no request log), so one scenario asserts the same request order against both. Holding a
//! request is how a test stages a race or pauses a paginated listing between two pages without
//! timing; cutting a watch is how it makes a watcher resume from a stale `resourceVersion`.
//!
//! Layer: test-only harness. It decides nothing and changes no request; the request body is
//! recorded for assertions and never printed (`LoggedRequest`'s `Debug` leaves Secret bodies out).

use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use apiary_apiserver_sim::{LoggedRequest, Query, Route, route};
use bytes::Bytes;
use futures::StreamExt as _;
use http::{Request, Response};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt as _, BodyStream, StreamBody};
use kube::client::{Body, DynBody};
use tokio::sync::watch;

/// How long [`Gate::held`] waits before the test fails as hung (not a performance bound).
const HELD_WITHIN: Duration = Duration::from_secs(60);

/// The error type of kube's service stack.
type BoxError = Box<dyn std::error::Error + Send + Sync>;
/// The body the tapped service answers with.
type TapBody = UnsyncBoxBody<Bytes, BoxError>;
type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;
type Predicate = Box<dyn Fn(&LoggedRequest) -> bool + Send + Sync>;

/// A `kube::Client` from `config` with `tap` in front of its service stack (the ring crypto
/// provider installed first, as apiary's client construction does).
///
/// # Panics
/// When no client stack builds from `config` (a test fixture's configuration is always valid).
pub fn tapped_client(config: kube::Config, tap: &Tap) -> kube::Client {
    let _already_installed = rustls::crypto::ring::default_provider().install_default();
    kube::client::ClientBuilder::try_from(config)
        .expect("a client stack builds from the configuration")
        .with_layer(&tap.layer())
        .build()
}

/// The log, holds and watch cutter shared by every client built with this tap.
#[derive(Clone)]
pub struct Tap {
    state: Arc<State>,
}

struct State {
    log: Mutex<Vec<LoggedRequest>>,
    holds: Mutex<Vec<HoldRule>>,
    cuts: watch::Sender<u64>,
}

struct HoldRule {
    matches: Predicate,
    remaining: usize,
    gate: Gate,
}

/// Requests held by one [`Tap::hold`] rule: count them, then let them all go.
#[derive(Clone)]
pub struct Gate {
    held: watch::Sender<usize>,
    open: watch::Sender<bool>,
}

impl Gate {
    /// Wait until at least `n` requests are held (bounded so a hang becomes a failure).
    pub async fn held(&self, n: usize) {
        let mut held = self.held.subscribe();
        let waited = tokio::time::timeout(HELD_WITHIN, held.wait_for(|count| *count >= n)).await;
        assert!(waited.is_ok(), "timed out waiting for {n} held requests");
    }

    /// Let every held request (and every later match of the rule) go.
    pub fn release(&self) {
        self.open.send_replace(true);
    }

    async fn pass(&self) {
        self.held.send_modify(|count| *count += 1);
        let mut open = self.open.subscribe();
        // The gate is never dropped while a request waits (the tap holds it), so an error
        // only means the test ended.
        let _ended = open.wait_for(|open| *open).await;
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Default for Tap {
    fn default() -> Self {
        Self::new()
    }
}

impl Tap {
    /// An empty tap.
    pub fn new() -> Self {
        Tap {
            state: Arc::new(State {
                log: Mutex::new(Vec::new()),
                holds: Mutex::new(Vec::new()),
                cuts: watch::channel(0).0,
            }),
        }
    }

    /// Every request sent so far, in the order the client sent them.
    pub fn requests(&self) -> Vec<LoggedRequest> {
        lock(&self.state.log).clone()
    }

    /// Forget the log.
    pub fn clear(&self) {
        lock(&self.state.log).clear();
    }

    /// Hold the next `times` requests matching `matches` until the returned gate is released.
    pub fn hold(
        &self,
        times: usize,
        matches: impl Fn(&LoggedRequest) -> bool + Send + Sync + 'static,
    ) -> Gate {
        let gate = Gate {
            held: watch::channel(0).0,
            open: watch::channel(false).0,
        };
        lock(&self.state.holds).push(HoldRule {
            matches: Box::new(matches),
            remaining: times,
            gate: gate.clone(),
        });
        gate
    }

    /// End every watch stream open right now (as the server ending it normally would); watches
    /// started later are not affected.
    pub fn cut_watches(&self) {
        self.state.cuts.send_modify(|epoch| *epoch += 1);
    }

    /// Wrap a kube service stack (`ClientBuilder::with_layer`).
    pub fn layer(&self) -> TapLayer {
        TapLayer { tap: self.clone() }
    }

    fn gate_for(&self, request: &LoggedRequest) -> Option<Gate> {
        let mut holds = lock(&self.state.holds);
        let rule = holds
            .iter_mut()
            .find(|rule| rule.remaining > 0 && (rule.matches)(request))?;
        rule.remaining -= 1;
        Some(rule.gate.clone())
    }

    fn record(&self, request: LoggedRequest) -> usize {
        let mut log = lock(&self.state.log);
        log.push(request);
        log.len() - 1
    }

    fn answered(&self, index: usize, status: Option<u16>) {
        if let Some(entry) = lock(&self.state.log).get_mut(index) {
            entry.status = status;
        }
    }
}

/// The tower layer of a [`Tap`].
#[derive(Clone)]
pub struct TapLayer {
    tap: Tap,
}

impl<S> tower::Layer<S> for TapLayer {
    type Service = Tapped<S>;

    fn layer(&self, inner: S) -> Tapped<S> {
        Tapped {
            inner: Arc::new(tokio::sync::Mutex::new(inner)),
            tap: self.tap.clone(),
        }
    }
}

/// A kube service stack with a [`Tap`] in front.
pub struct Tapped<S> {
    inner: Arc<tokio::sync::Mutex<S>>,
    tap: Tap,
}

impl<S> tower::Service<Request<Body>> for Tapped<S>
where
    S: tower::Service<Request<Body>, Response = Response<Box<DynBody>>, Error = BoxError>
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = Response<TapBody>;
    type Error = BoxError;
    type Future = BoxFuture<Result<Response<TapBody>, BoxError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // Readiness of the inner stack is awaited inside `call`, under its lock.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let inner = Arc::clone(&self.inner);
        let tap = self.tap.clone();
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let bytes = body.collect_bytes().await?;
            let path = parts.uri.path().to_owned();
            let query = parts.uri.query().unwrap_or_default().to_owned();
            let target = match route(&parts.method, &path, &Query::parse(&query)) {
                Route::Resource(resource) => Some((resource.resource, resource.verb)),
                _ => None,
            };
            let logged = LoggedRequest {
                method: parts.method.to_string(),
                path,
                query,
                body: String::from_utf8_lossy(&bytes).into_owned(),
                target,
                faulted: false,
                status: None,
            };
            let is_watch = logged
                .query_param("watch")
                .is_some_and(|w| w == "true" || w == "1");
            let gate = tap.gate_for(&logged);
            let index = tap.record(logged);
            if let Some(gate) = gate {
                gate.pass().await;
            }
            // Subscribed before the request goes out: a cut from now on ends this stream.
            let mut cuts = tap.state.cuts.subscribe();
            cuts.mark_unchanged();
            let request = Request::from_parts(parts, Body::from(bytes));
            let response = {
                let mut inner = inner.lock().await;
                tower::ServiceExt::ready(&mut *inner).await?.call(request)
            }
            .await;
            let response = match response {
                Ok(response) => response,
                Err(error) => {
                    tap.answered(index, None);
                    return Err(error);
                }
            };
            tap.answered(index, Some(response.status().as_u16()));
            Ok(response.map(|body| {
                if is_watch {
                    let cut: BoxFuture<()> = Box::pin(async move {
                        let _ended = cuts.changed().await;
                    });
                    StreamBody::new(BodyStream::new(body).take_until(cut)).boxed_unsync()
                } else {
                    body.boxed_unsync()
                }
            }))
        })
    }
}
