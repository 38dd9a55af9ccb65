//! The HTTP shell: the hyper 1 server on `127.0.0.1:0`, the per-request pipeline (log → fault →
//! route → answer → `Date` header) and the background task that advances the model clock.
//!
//! Layer: imperative shell. It performs the network I/O and reads the scaled clock; every answer
//! about objects comes from the shared cluster model (via `api`) and every error body from
//! `status`. It must not keep any object state of its own.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use apiary_cluster_model::ClusterModel;
use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Frame, Incoming};
use hyper_util::rt::TokioIo;
use jiff::Timestamp;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::{JoinHandle, JoinSet};

use crate::clock::{ScaledClock, http_date};
use crate::faults::{DateMode, FaultAction, Faults, GARBLED_DATE, RequestFacts};
use crate::log::{LoggedRequest, RequestLog};
use crate::route::{Query, Route, route};
use crate::status::ApiError;
use crate::{api, discovery};

/// The response body type: a whole body or a stream of watch lines.
pub(crate) type SimBody = BoxBody<Bytes, StreamBroken>;

/// The error a watch body yields to make hyper abort the connection mid-stream.
#[derive(Debug)]
pub(crate) struct StreamBroken;

impl std::fmt::Display for StreamBroken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("watch stream broken by the simulator")
    }
}

impl std::error::Error for StreamBroken {}

/// How [`Simulator::end_watches`] and [`Simulator::break_watches`] end open watch streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WatchEnd {
    /// The stream ends normally (as after `timeoutSeconds`).
    Close,
    /// The connection is aborted mid-stream.
    Break,
}

/// How the simulator runs.
#[derive(Debug, Clone)]
pub struct SimOptions {
    /// Model seconds per real second: 1000 makes a 60 s grace period pass in 60 ms. Default 1.
    pub time_scale: f64,
    /// The model time when the simulator starts; `None` (the default) means the real time now.
    pub start_time: Option<Timestamp>,
    /// Real interval at which the background task advances the model clock (default 5 ms). The
    /// clock is also advanced before every request.
    pub tick: Duration,
    /// Real interval between BOOKMARK events on watches that allow them (default 1 s).
    pub bookmark_interval: Duration,
    /// Seed of the fault-injection random generator (default 0).
    pub fault_seed: u64,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            time_scale: 1.0,
            start_time: None,
            tick: Duration::from_millis(5),
            bookmark_interval: Duration::from_secs(1),
            fault_seed: 0,
        }
    }
}

impl SimOptions {
    /// Sets [`SimOptions::time_scale`].
    #[must_use]
    pub fn with_time_scale(mut self, scale: f64) -> Self {
        self.time_scale = scale;
        self
    }

    /// Sets [`SimOptions::start_time`].
    #[must_use]
    pub fn with_start_time(mut self, start: Timestamp) -> Self {
        self.start_time = Some(start);
        self
    }

    /// Sets [`SimOptions::fault_seed`].
    #[must_use]
    pub fn with_fault_seed(mut self, seed: u64) -> Self {
        self.fault_seed = seed;
        self
    }

    /// Sets [`SimOptions::tick`].
    #[must_use]
    pub fn with_tick(mut self, tick: Duration) -> Self {
        self.tick = tick;
        self
    }

    /// Sets [`SimOptions::bookmark_interval`].
    #[must_use]
    pub fn with_bookmark_interval(mut self, interval: Duration) -> Self {
        self.bookmark_interval = interval;
        self
    }
}

/// State shared by the accept loop, the connections, the clock task and the [`Simulator`] handle.
pub(crate) struct Shared {
    model: Mutex<ClusterModel>,
    pub(crate) clock: ScaledClock,
    pub(crate) faults: Faults,
    pub(crate) log: RequestLog,
    /// The model's resourceVersion as last published; watches wait on it.
    pub(crate) changes: tokio::sync::watch::Sender<u64>,
    /// Orders to end every open watch stream.
    pub(crate) watch_ends: tokio::sync::broadcast::Sender<WatchEnd>,
    pub(crate) options: SimOptions,
    pub(crate) addr: SocketAddr,
}

impl Shared {
    /// Locks the model after advancing its clock to now.
    pub(crate) fn model(&self) -> MutexGuard<'_, ClusterModel> {
        // A panic while holding the lock leaves the model as it was between two whole operations.
        let mut m = self.model.lock().unwrap_or_else(|p| p.into_inner());
        m.advance_to(self.clock.now());
        m
    }

    /// Wakes every watch when the model's resourceVersion moved since the last wake-up.
    pub(crate) fn publish(&self) {
        let rv = self.model().resource_version();
        self.publish_rv(rv);
    }

    fn publish_rv(&self, rv: u64) {
        self.changes.send_if_modified(|last| {
            let moved = *last != rv;
            *last = rv;
            moved
        });
    }
}

/// Exclusive access to the simulator's model; see [`Simulator::model`].
pub struct ModelGuard<'a> {
    guard: MutexGuard<'a, ClusterModel>,
    shared: &'a Shared,
}

impl std::ops::Deref for ModelGuard<'_> {
    type Target = ClusterModel;

    fn deref(&self) -> &ClusterModel {
        &self.guard
    }
}

impl std::ops::DerefMut for ModelGuard<'_> {
    fn deref_mut(&mut self) -> &mut ClusterModel {
        &mut self.guard
    }
}

impl Drop for ModelGuard<'_> {
    fn drop(&mut self) {
        // Publishing only signals the watch channel; woken watches lock the model after this
        // guard is released.
        self.shared.publish_rv(self.guard.resource_version());
    }
}

/// A running simulator. Dropping it stops the server (as [`Simulator::shutdown`] does).
pub struct Simulator {
    shared: Arc<Shared>,
    accept: JoinHandle<()>,
    ticker: JoinHandle<()>,
}

impl std::fmt::Debug for Simulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Simulator")
            .field("url", &self.url())
            .finish_non_exhaustive()
    }
}

impl Simulator {
    /// Starts a simulator on `127.0.0.1` on a free port, with an empty model.
    ///
    /// Must be called inside a Tokio runtime.
    ///
    /// # Errors
    ///
    /// The I/O error when no loopback port can be bound.
    pub async fn start(options: SimOptions) -> std::io::Result<Simulator> {
        let start = options.start_time.unwrap_or_else(Timestamp::now);
        let clock = ScaledClock::new(start, options.time_scale);
        Simulator::start_with_model(options, ClusterModel::new(clock.now()), clock).await
    }

    async fn start_with_model(
        options: SimOptions,
        model: ClusterModel,
        clock: ScaledClock,
    ) -> std::io::Result<Simulator> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let (changes, _) = tokio::sync::watch::channel(0u64);
        let (watch_ends, _) = tokio::sync::broadcast::channel(8);
        let shared = Arc::new(Shared {
            model: Mutex::new(model),
            clock,
            faults: Faults::new(options.fault_seed),
            log: RequestLog::default(),
            changes,
            watch_ends,
            options,
            addr,
        });
        let accept = tokio::spawn(accept_loop(listener, Arc::clone(&shared)));
        let ticker = tokio::spawn(tick_loop(Arc::clone(&shared)));
        Ok(Simulator {
            shared,
            accept,
            ticker,
        })
    }

    /// The base URL, `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.shared.addr)
    }

    /// The socket address served.
    pub fn addr(&self) -> SocketAddr {
        self.shared.addr
    }

    /// A kubeconfig YAML document pointing at this simulator with `namespace` on its context.
    pub fn kubeconfig_yaml(&self, namespace: &str) -> String {
        crate::kubeconfig::kubeconfig_yaml(&self.url(), namespace)
    }

    /// Writes [`Simulator::kubeconfig_yaml`] to `path`.
    ///
    /// # Errors
    ///
    /// The I/O error when the file cannot be written.
    pub fn write_kubeconfig(&self, path: &std::path::Path, namespace: &str) -> std::io::Result<()> {
        std::fs::write(path, self.kubeconfig_yaml(namespace))
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.shared.log.snapshot()
    }

    /// Empties the request log.
    pub fn clear_requests(&self) {
        self.shared.log.clear();
    }

    /// The fault-injection handle.
    pub fn faults(&self) -> &Faults {
        &self.shared.faults
    }

    /// The model time now (what the `Date` header and new `creationTimestamp`s say).
    pub fn now(&self) -> Timestamp {
        self.shared.clock.now()
    }

    /// The scaled clock.
    pub fn clock(&self) -> ScaledClock {
        self.shared.clock
    }

    /// How long `model` of model time takes in real time at this simulator's scale.
    pub fn real_duration(&self, model: Duration) -> Duration {
        self.shared.clock.real_duration(model)
    }

    /// Runs `f` on the model (its clock advanced to now), then wakes the watches. Use it for
    /// direct setup (inserting pods, choosing kubelet scripts) and inspection. Do not block in
    /// `f`: requests wait for it.
    pub fn with_model<R>(&self, f: impl FnOnce(&mut ClusterModel) -> R) -> R {
        let r = f(&mut self.shared.model());
        self.shared.publish();
        r
    }

    /// Locks the model (its clock advanced to now) for direct setup or inspection; watches are
    /// woken when the guard is dropped. Requests wait while it is held: do not hold it across an
    /// `.await` (it is not `Send`, so a spawned future cannot).
    pub fn model(&self) -> ModelGuard<'_> {
        ModelGuard {
            guard: self.shared.model(),
            shared: &self.shared,
        }
    }

    /// Creates namespace `name` in the model unless it exists.
    pub fn ensure_namespace(&self, name: &str) {
        self.with_model(|m| {
            m.ensure_namespace(name);
        });
    }

    /// Ends every open watch stream normally, as the apiserver does at `timeoutSeconds`
    /// (clients re-open from their last resourceVersion).
    pub fn end_watches(&self) {
        // No open watch means no receiver; nothing to end.
        let _ = self.shared.watch_ends.send(WatchEnd::Close);
    }

    /// Aborts the connection of every open watch stream mid-stream (a transport failure, not a
    /// normal end).
    pub fn break_watches(&self) {
        // No open watch means no receiver; nothing to break.
        let _ = self.shared.watch_ends.send(WatchEnd::Break);
    }

    /// Stops serving: the listener closes and open connections (watches included) are dropped.
    pub fn shutdown(self) {
        drop(self);
    }
}

impl Drop for Simulator {
    fn drop(&mut self) {
        self.accept.abort();
        self.ticker.abort();
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    // Owning the connection tasks here means aborting this task aborts them all.
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else {
                    // Out of file descriptors or similar: back off instead of spinning.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                let shared = Arc::clone(&shared);
                connections.spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let shared = Arc::clone(&shared);
                        async move { handle(shared, req).await }
                    });
                    // Errors end one connection (a client hung up, or an injected drop).
                    let _ = hyper::server::conn::http1::Builder::new()
                        .auto_date_header(false)
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

async fn tick_loop(shared: Arc<Shared>) {
    let mut interval = tokio::time::interval(shared.options.tick.max(Duration::from_millis(1)));
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        // Advancing the clock runs due kubelet steps and graceful removals; watches wake only
        // when that changed something.
        shared.publish();
    }
}

/// The error that makes hyper close the connection without an answer.
#[derive(Debug)]
struct DroppedConnection;

impl std::fmt::Display for DroppedConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection dropped by fault injection")
    }
}

impl std::error::Error for DroppedConnection {}

async fn handle(
    shared: Arc<Shared>,
    req: Request<Incoming>,
) -> Result<Response<SimBody>, DroppedConnection> {
    let (parts, body) = req.into_parts();
    // A body that fails to arrive is treated as empty; the handlers then refuse it as invalid.
    let body = body
        .collect()
        .await
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    let path = parts.uri.path().to_owned();
    let raw_query = parts.uri.query().unwrap_or_default().to_owned();
    let query = Query::parse(&raw_query);
    let routed = route(&parts.method, &path, &query);
    let target = match &routed {
        Route::Resource(r) => Some((r.resource, r.verb)),
        _ => None,
    };
    let facts = RequestFacts {
        method: &parts.method,
        path: &path,
        target,
    };
    let fault = shared.faults.decide(&facts);
    let slot = shared.log.push(LoggedRequest {
        method: parts.method.to_string(),
        path: path.clone(),
        query: raw_query,
        body: String::from_utf8_lossy(&body).into_owned(),
        target,
        faulted: fault.is_some(),
        status: None,
    });
    if let Some(FaultAction::Delay(by)) = &fault {
        tokio::time::sleep(*by).await;
    }
    let mut response = match fault {
        Some(FaultAction::DropConnection) => return Err(DroppedConnection),
        Some(
            action @ (FaultAction::InternalError
            | FaultAction::ServiceUnavailable
            | FaultAction::TooManyRequests { .. }
            | FaultAction::Forbidden
            | FaultAction::Status { .. }),
        ) => fault_response(&action, &routed),
        Some(FaultAction::Delay(_)) | None => match routed {
            Route::Version => json_response(StatusCode::OK, &discovery::version()),
            Route::CoreVersions => json_response(
                StatusCode::OK,
                &discovery::core_versions(&shared.addr.to_string()),
            ),
            Route::CoreResources => json_response(StatusCode::OK, &discovery::core_resources()),
            Route::Groups => json_response(StatusCode::OK, &discovery::groups()),
            Route::MethodNotAllowed => error_response(&ApiError::method_not_allowed()),
            Route::Unknown => error_response(&ApiError::unknown_path()),
            Route::Resource(r) => {
                let content_type = parts
                    .headers
                    .get(header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok());
                let accept = parts
                    .headers
                    .get(header::ACCEPT)
                    .and_then(|v| v.to_str().ok());
                api::serve(&shared, &r, &query, &body, content_type, accept)
            }
        },
    };
    shared
        .log
        .set_status(slot, Some(response.status().as_u16()));
    stamp_date(&shared, response.headers_mut());
    Ok(response)
}

fn stamp_date(shared: &Shared, headers: &mut http::HeaderMap) {
    let value = match shared.faults.date_mode() {
        DateMode::Omit => return,
        DateMode::Garbled => HeaderValue::from_static(GARBLED_DATE),
        DateMode::Normal => match HeaderValue::from_str(&http_date(shared.clock.now())) {
            Ok(v) => v,
            // Cannot happen: an HTTP-date is ASCII. Omitting is the only honest fallback.
            Err(_) => return,
        },
    };
    headers.insert(header::DATE, value);
}

fn fault_response(action: &FaultAction, routed: &Route) -> Response<SimBody> {
    // DropConnection and Delay are handled before an answer is built; never reached for them.
    let Some(answer) = action.answer(routed) else {
        return error_response(&ApiError::internal("unexpected fault"));
    };
    let mut r = error_response(&answer.error);
    if let Some(seconds) = answer.retry_after_seconds {
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    r
}

/// A JSON response with `Content-Type: application/json`.
pub(crate) fn json_response(status: StatusCode, body: &Value) -> Response<SimBody> {
    let bytes = Bytes::from(body.to_string());
    let mut r = Response::new(
        Full::new(bytes)
            .map_err(|never: Infallible| match never {})
            .boxed(),
    );
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// A failure `Status` response.
pub(crate) fn error_response(e: &ApiError) -> Response<SimBody> {
    json_response(
        StatusCode::from_u16(e.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        &e.body,
    )
}

/// A streaming body fed line by line from a channel; it ends when the sender is dropped.
/// A chunk that fails makes hyper abort the connection.
pub(crate) struct ChannelBody {
    rx: mpsc::Receiver<Result<Bytes, StreamBroken>>,
}

impl ChannelBody {
    pub(crate) fn new(rx: mpsc::Receiver<Result<Bytes, StreamBroken>>) -> ChannelBody {
        ChannelBody { rx }
    }
}

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = StreamBroken;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, StreamBroken>>> {
        self.rx
            .poll_recv(cx)
            .map(|o| o.map(|chunk| chunk.map(Frame::data)))
    }
}
