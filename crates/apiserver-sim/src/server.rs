//! The HTTP shell: the `Simulator` handle, the hyper 1 server on `127.0.0.1:0`, the per-request
//! pipeline (log → fault → route → answer → `Date` header) and the background task that advances
//! the model clock.
//!
//! Layer: imperative shell. It performs the network I/O and reads the scaled clock; every answer
//! about objects comes from the shared cluster model (via `api`), every error body from `status`
//! and every response shape from `response`; the state it shares lives in `shared`. It must not
//! keep any object state of its own.

use std::net::SocketAddr;
use std::sync::{Arc, MutexGuard};
use std::time::Duration;

use apiary_cluster_model::ClusterModel;
use http::{HeaderValue, Request, Response, StatusCode, header};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use jiff::Timestamp;
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};

use crate::clock::{ScaledClock, http_date};
use crate::faults::{DateMode, FaultAction, Faults, GARBLED_DATE, RequestFacts};
use crate::log::LoggedRequest;
use crate::options::SimOptions;
use crate::response::{SimBody, error_response, json_response};
use crate::route::{Query, Route, route};
use crate::shared::{Shared, WatchEnd};
use crate::status::ApiError;
use crate::{api, discovery};

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
        let shared = Arc::new(Shared::new(model, clock, options, addr));
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
            Route::Readyz => json_response(StatusCode::OK, &serde_json::json!("ok")),
            Route::CoreVersions => json_response(
                StatusCode::OK,
                &discovery::core_versions(&shared.addr.to_string()),
            ),
            Route::CoreResources => json_response(StatusCode::OK, &discovery::core_resources()),
            Route::Groups => json_response(StatusCode::OK, &discovery::groups()),
            Route::MethodNotAllowed => error_response(&ApiError::method_not_allowed()),
            Route::Unknown => error_response(&ApiError::unknown_path()),
            Route::PodLog { namespace, name } => {
                crate::logs::serve(&shared, &namespace, &name, &query)
            }
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
