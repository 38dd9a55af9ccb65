//! A loopback fault proxy in front of a real `kube-apiserver`: clients talk plain HTTP to
//! `127.0.0.1:<free port>` without credentials; the proxy forwards every request over TLS with the
//! admin token, injects the simulator's faults on chosen requests, adds a fixed latency per request
//! and per response, and counts requests and bytes.
//!
//! Layer: test infrastructure (imperative shell). Which fault a request gets is decided by the
//! simulator's own [`Faults`] and answered with the simulator's own Status bodies
//! ([`FaultAction::answer`]), and requests are parsed into verb and resource by the simulator's
//! router, so a rule means the same thing in front of the model and in front of the real server.
//! The proxy never decodes or buffers a response body (watch streams pass through chunk by chunk,
//! compressed bodies stay compressed), never lets a faulted request reach the upstream, and never
//! writes the admin token anywhere but the upstream `Authorization` header (not to `Debug`, logs,
//! errors or kubeconfigs).
//!
//! A `Date` shift ([`FaultProxy::set_date_shift`]) moves the server clock the client reads forward,
//! so garbage collection's age gate (deploy.md § Age gate (why 1200 s) and the same-clock rule)
//! can be crossed without waiting twenty minutes; object timestamps stay the server's own.
//!
//! Each client connection gets its own upstream TLS connection (opened on its first request and
//! re-opened when the upstream closed it), so connection-level behaviour on the client side (a
//! reset, a long watch) maps onto exactly one upstream connection.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use apiary_apiserver_sim::{
    FaultAction, Faults, LoggedRequest, Query, RequestFacts, Route, http_date, kubeconfig_yaml,
    route,
};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode, Uri, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};
use tokio_rustls::TlsConnector;

/// The body the proxy answers with: a streamed upstream body or a whole fault answer.
type ProxyBody = BoxBody<Bytes, hyper::Error>;

/// Why the proxy could not start.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    /// The upstream URL is not `https://<host>:<port>`.
    #[error("upstream URL {url:?} is not an https://host:port URL: {why}")]
    UpstreamUrl {
        /// The URL given.
        url: String,
        /// What is wrong with it.
        why: String,
    },
    /// The CA PEM holds no usable certificate.
    #[error("the upstream CA PEM holds no usable certificate: {0}")]
    CaPem(String),
    /// The admin token cannot be sent in an HTTP header (it is not shown).
    #[error("the admin token contains characters an HTTP header cannot carry")]
    Token,
    /// The TLS client configuration could not be built.
    #[error("cannot build the TLS client configuration: {0}")]
    Tls(#[from] rustls::Error),
    /// No loopback port could be bound.
    #[error("cannot listen on 127.0.0.1: {0}")]
    Listen(#[from] std::io::Error),
}

/// The fixed delays the latency knob adds: one before forwarding each request, one before
/// returning each response head (faulted answers included), as a network `request` and
/// `response` one-way trip would.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Latency {
    /// Added before a request is forwarded (or answered by a fault).
    pub request: Duration,
    /// Added before a response head is returned to the client.
    pub response: Duration,
}

impl Latency {
    /// The same delay each way: `one_way` per request and `one_way` per response.
    pub fn symmetric(one_way: Duration) -> Latency {
        Latency {
            request: one_way,
            response: one_way,
        }
    }
}

/// Totals since start or the last [`FaultProxy::clear`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Requests received from clients.
    pub requests: u64,
    /// Requests forwarded to the upstream (not answered by a fault).
    pub forwarded: u64,
    /// Requests answered (or dropped) by a fault.
    pub faulted: u64,
    /// Request body bytes received from clients.
    pub bytes_from_client: u64,
    /// Response body bytes received from the upstream, as they went over the wire (compressed
    /// when the upstream compressed).
    pub bytes_from_upstream: u64,
}

/// One request as the proxy saw it.
///
/// `Debug` leaves out Secret bodies (through [`LoggedRequest`]'s own `Debug`).
#[derive(Debug, Clone, PartialEq)]
pub struct ProxiedRequest {
    /// Method, path, raw query, body, parsed verb and resource, whether a fault answered it,
    /// and the status answered (`None` when the connection was dropped, by a fault or because the
    /// upstream failed).
    pub request: LoggedRequest,
    /// Whether the request was sent to the upstream.
    pub forwarded: bool,
    /// Request body bytes received from the client.
    pub bytes_from_client: u64,
    /// Response body bytes received from the upstream so far (a watch keeps growing).
    pub bytes_from_upstream: u64,
    /// The latency the knob actually added to this request (request and response delays as
    /// slept; at least the configured values).
    pub added_latency: Duration,
    /// Why the upstream exchange failed, when it did (connect, TLS or HTTP error; never a token).
    pub upstream_error: Option<String>,
}

#[derive(Debug, Default)]
struct Record {
    entries: Vec<ProxiedRequest>,
    /// Bumped by every clear, so late byte counts never land on a newer entry.
    generation: u64,
}

#[derive(Clone, Copy)]
struct Slot {
    index: usize,
    generation: u64,
}

#[derive(Default)]
struct Totals {
    requests: AtomicU64,
    forwarded: AtomicU64,
    faulted: AtomicU64,
    bytes_from_client: AtomicU64,
    bytes_from_upstream: AtomicU64,
}

struct Upstream {
    /// `host:port`, for the TCP connect and the `Host` header.
    authority: String,
    server_name: ServerName<'static>,
    tls: TlsConnector,
    /// `Bearer <admin token>`, marked sensitive.
    authorization: HeaderValue,
}

struct Shared {
    upstream: Upstream,
    faults: Faults,
    latency: Mutex<Latency>,
    date_shift: Mutex<Duration>,
    record: Mutex<Record>,
    totals: Totals,
}

impl Shared {
    fn record(&self) -> MutexGuard<'_, Record> {
        // Entries are appended and updated whole; a poisoned lock still holds a consistent log.
        self.record.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn latency(&self) -> Latency {
        *self.latency.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn push(&self, entry: ProxiedRequest) -> Slot {
        let mut r = self.record();
        r.entries.push(entry);
        Slot {
            index: r.entries.len() - 1,
            generation: r.generation,
        }
    }

    fn update(&self, slot: Slot, f: impl FnOnce(&mut ProxiedRequest)) {
        let mut r = self.record();
        if r.generation != slot.generation {
            return;
        }
        if let Some(e) = r.entries.get_mut(slot.index) {
            f(e);
        }
    }
}

/// A running fault proxy. Dropping it stops it (listener and every open connection).
pub struct FaultProxy {
    shared: Arc<Shared>,
    addr: SocketAddr,
    accept: JoinHandle<()>,
}

impl std::fmt::Debug for FaultProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The admin token stays out: only where the proxy listens and where it forwards.
        f.debug_struct("FaultProxy")
            .field("url", &self.url())
            .field("upstream", &self.shared.upstream.authority)
            .finish_non_exhaustive()
    }
}

impl FaultProxy {
    /// Starts a proxy on `127.0.0.1` on a free port forwarding to `upstream_url`
    /// (`https://127.0.0.1:<port>`), trusting `upstream_ca_pem` and authenticating every request
    /// as `Bearer <admin_token>`. Pass-through (no fault rules, no latency) until told otherwise.
    ///
    /// Must be called inside a Tokio runtime.
    ///
    /// # Errors
    ///
    /// [`ProxyError`] when the URL is not https with a host and port, the CA PEM has no
    /// certificate, the token cannot be a header value, or no loopback port can be bound.
    pub async fn start(
        upstream_url: &str,
        upstream_ca_pem: &str,
        admin_token: &str,
    ) -> Result<FaultProxy, ProxyError> {
        let upstream = upstream(upstream_url, upstream_ca_pem, admin_token)?;
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            upstream,
            faults: Faults::new(0),
            latency: Mutex::new(Latency::default()),
            date_shift: Mutex::new(Duration::ZERO),
            record: Mutex::new(Record::default()),
            totals: Totals::default(),
        });
        let accept = tokio::spawn(accept_loop(listener, Arc::clone(&shared)));
        Ok(FaultProxy {
            shared,
            addr,
            accept,
        })
    }

    /// The proxy's URL, `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The socket address served.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A kubeconfig pointing at the proxy (`server: http://127.0.0.1:PORT`, no credentials: the
    /// proxy adds them) with `namespace` on its current context.
    pub fn kubeconfig_yaml(&self, namespace: &str) -> String {
        kubeconfig_yaml(&self.url(), namespace)
    }

    /// Writes [`FaultProxy::kubeconfig_yaml`] to `path`.
    ///
    /// # Errors
    ///
    /// The I/O error when the file cannot be written.
    pub fn kubeconfig(&self, path: &Path, namespace: &str) -> std::io::Result<()> {
        std::fs::write(path, self.kubeconfig_yaml(namespace))
    }

    /// A `kube::Client` through the proxy with `namespace` as its default namespace.
    ///
    /// # Errors
    ///
    /// The kube error when the client cannot be built (it must be called inside a Tokio runtime).
    pub fn client(&self, namespace: &str) -> Result<kube::Client, kube::Error> {
        // The one crypto provider in the tree; kube builds its TLS stack even for http URLs.
        let _already_installed = rustls::crypto::ring::default_provider().install_default();
        kube::Client::try_from(self.config(namespace))
    }

    /// A `kube::Config` through the proxy with `namespace` as its default namespace, to adjust
    /// before building a client (for example `default_retry = false`, to see every fault).
    pub fn config(&self, namespace: &str) -> kube::Config {
        let url: Uri = self
            .url()
            .parse()
            .expect("http://127.0.0.1:<port> is a valid URI");
        let mut config = kube::Config::new(url);
        config.default_namespace = namespace.to_owned();
        config
    }

    /// The fault rules (the simulator's vocabulary); clones control this proxy.
    pub fn faults(&self) -> &Faults {
        &self.shared.faults
    }

    /// Sets the latency knob; it applies to requests arriving from now on.
    pub fn set_latency(&self, latency: Latency) {
        *self
            .shared
            .latency
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = latency;
    }

    /// The latency knob's current setting.
    pub fn latency(&self) -> Latency {
        self.shared.latency()
    }

    /// Moves every `Date` response header the upstream sends forward by `shift` (zero: as sent),
    /// as if the client asked that much later. Only the header changes: `creationTimestamp`s
    /// stay the server's, so an object's age as the client computes it grows by `shift`.
    pub fn set_date_shift(&self, shift: Duration) {
        *self
            .shared
            .date_shift
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = shift;
    }

    /// Every request received since start or the last [`FaultProxy::clear`], in arrival order.
    pub fn requests(&self) -> Vec<ProxiedRequest> {
        self.shared.record().entries.clone()
    }

    /// The totals since start or the last [`FaultProxy::clear`].
    pub fn counts(&self) -> Counts {
        let t = &self.shared.totals;
        Counts {
            requests: t.requests.load(Ordering::SeqCst),
            forwarded: t.forwarded.load(Ordering::SeqCst),
            faulted: t.faulted.load(Ordering::SeqCst),
            bytes_from_client: t.bytes_from_client.load(Ordering::SeqCst),
            bytes_from_upstream: t.bytes_from_upstream.load(Ordering::SeqCst),
        }
    }

    /// Empties the request log and zeroes the counts (fault rules and latency stay). Bytes still
    /// streaming on an open watch count towards the new totals.
    pub fn clear(&self) {
        let mut r = self.shared.record();
        r.entries.clear();
        r.generation += 1;
        let t = &self.shared.totals;
        for c in [
            &t.requests,
            &t.forwarded,
            &t.faulted,
            &t.bytes_from_client,
            &t.bytes_from_upstream,
        ] {
            c.store(0, Ordering::SeqCst);
        }
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

fn upstream(url: &str, ca_pem: &str, token: &str) -> Result<Upstream, ProxyError> {
    let bad = |why: &str| ProxyError::UpstreamUrl {
        url: url.to_owned(),
        why: why.to_owned(),
    };
    let uri: Uri = url
        .parse()
        .map_err(|e: http::uri::InvalidUri| bad(&e.to_string()))?;
    if uri.scheme_str() != Some("https") {
        return Err(bad("the scheme must be https"));
    }
    let host = uri.host().ok_or_else(|| bad("no host"))?;
    let port = uri.port_u16().unwrap_or(443);
    // An IPv6 literal keeps its brackets in the URI; the TLS name and the address do not.
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let server_name = ServerName::try_from(bare.to_owned()).map_err(|e| bad(&e.to_string()))?;
    let authority = if bare.contains(':') {
        format!("[{bare}]:{port}")
    } else {
        format!("{bare}:{port}")
    };

    let mut roots = rustls::RootCertStore::empty();
    let mut found = 0;
    for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        let cert = cert.map_err(|e| ProxyError::CaPem(e.to_string()))?;
        roots
            .add(cert)
            .map_err(|e| ProxyError::CaPem(e.to_string()))?;
        found += 1;
    }
    if found == 0 {
        return Err(ProxyError::CaPem("no CERTIFICATE block".to_owned()));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    // One HTTP/1.1 upstream connection per client connection: ask for nothing else.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];

    let mut authorization =
        HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| ProxyError::Token)?;
    authorization.set_sensitive(true);
    Ok(Upstream {
        authority,
        server_name,
        tls: TlsConnector::from(Arc::new(config)),
        authorization,
    })
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    // Owning the connection tasks here means aborting this task closes them all.
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else {
                    // Out of file descriptors or similar: back off instead of spinning.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                connections.spawn(serve_connection(stream, Arc::clone(&shared)));
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// The upstream side of one client connection: connected lazily, re-connected when closed.
type UpstreamSlot = Arc<tokio::sync::Mutex<Option<SendRequest<Full<Bytes>>>>>;

async fn serve_connection(stream: TcpStream, shared: Arc<Shared>) {
    let upstream: UpstreamSlot = Arc::default();
    let service = hyper::service::service_fn(move |req| {
        let shared = Arc::clone(&shared);
        let upstream = Arc::clone(&upstream);
        async move { handle(&shared, &upstream, req).await }
    });
    // Errors end this one connection (the client hung up, a fault dropped it, the upstream failed).
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

/// The error that makes hyper close the client connection without an answer.
#[derive(Debug)]
struct Dropped(&'static str);

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for Dropped {}

async fn handle(
    shared: &Arc<Shared>,
    upstream: &UpstreamSlot,
    req: Request<Incoming>,
) -> Result<Response<ProxyBody>, Dropped> {
    let (parts, body) = req.into_parts();
    // A request body that fails to arrive means the client went away: nothing to answer.
    let body = body
        .collect()
        .await
        .map_err(|_| Dropped("the client's request body did not arrive"))?
        .to_bytes();
    let path = parts.uri.path().to_owned();
    let raw_query = parts.uri.query().unwrap_or_default().to_owned();
    let routed = route(&parts.method, &path, &Query::parse(&raw_query));
    let target = match &routed {
        Route::Resource(r) => Some((r.resource, r.verb)),
        _ => None,
    };
    let fault = shared.faults.decide(&RequestFacts {
        method: &parts.method,
        path: &path,
        target,
    });
    let faulted = !matches!(fault, None | Some(FaultAction::Delay(_)));
    let body_len = body.len() as u64;
    let totals = &shared.totals;
    totals.requests.fetch_add(1, Ordering::SeqCst);
    totals
        .bytes_from_client
        .fetch_add(body_len, Ordering::SeqCst);
    if faulted {
        totals.faulted.fetch_add(1, Ordering::SeqCst);
    }
    let slot = shared.push(ProxiedRequest {
        request: LoggedRequest {
            method: parts.method.to_string(),
            path: path.clone(),
            query: raw_query,
            body: String::from_utf8_lossy(&body).into_owned(),
            target,
            faulted,
            status: None,
        },
        forwarded: false,
        bytes_from_client: body_len,
        bytes_from_upstream: 0,
        added_latency: Duration::ZERO,
        upstream_error: None,
    });

    let latency = shared.latency();
    let mut added = sleep_measured(latency.request).await;
    if let Some(FaultAction::Delay(by)) = &fault {
        // The simulator's slow-apiserver fault: answered normally, only later. Not latency.
        tokio::time::sleep(*by).await;
    }

    let response = match fault {
        Some(FaultAction::DropConnection) => {
            shared.update(slot, |e| e.added_latency = added);
            return Err(Dropped("connection dropped by fault injection"));
        }
        Some(action) if faulted => fault_response(&action, &routed),
        _ => {
            totals.forwarded.fetch_add(1, Ordering::SeqCst);
            shared.update(slot, |e| e.forwarded = true);
            match forward(shared, upstream, parts, body, slot).await {
                Ok(r) => r,
                Err(why) => {
                    added += sleep_measured(latency.response).await;
                    shared.update(slot, |e| {
                        e.added_latency = added;
                        e.upstream_error = Some(why);
                    });
                    return Err(Dropped("the upstream exchange failed"));
                }
            }
        }
    };
    added += sleep_measured(latency.response).await;
    let status = response.status().as_u16();
    shared.update(slot, |e| {
        e.added_latency = added;
        e.request.status = Some(status);
    });
    Ok(response)
}

/// Sleeps `d` (nothing when zero) and returns how long it actually took.
async fn sleep_measured(d: Duration) -> Duration {
    if d.is_zero() {
        return Duration::ZERO;
    }
    let start = Instant::now();
    tokio::time::sleep(d).await;
    start.elapsed()
}

fn fault_response(action: &FaultAction, routed: &Route) -> Response<ProxyBody> {
    let Some(answer) = action.answer(routed) else {
        // Drops and delays never get here; answering 500 is the honest fallback.
        return whole(StatusCode::INTERNAL_SERVER_ERROR, Bytes::new());
    };
    let code = StatusCode::from_u16(answer.error.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut r = whole(code, Bytes::from(answer.error.body.to_string()));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Some(seconds) = answer.retry_after_seconds {
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    }
    r
}

fn whole(status: StatusCode, body: Bytes) -> Response<ProxyBody> {
    let mut r = Response::new(
        Full::new(body)
            .map_err(|never: Infallible| match never {})
            .boxed(),
    );
    *r.status_mut() = status;
    r
}

/// Headers that describe one connection, not the message, and so are never forwarded.
const HOP_BY_HOP: [header::HeaderName; 7] = [
    header::CONNECTION,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
    header::PROXY_AUTHORIZATION,
    header::PROXY_AUTHENTICATE,
];

fn strip_hop_by_hop(headers: &mut HeaderMap) {
    for h in &HOP_BY_HOP {
        headers.remove(h);
    }
    headers.remove("keep-alive");
    headers.remove("proxy-connection");
}

/// Sends one request upstream and returns its response with the body streaming through and
/// counted. `Err` carries why the exchange failed.
async fn forward(
    shared: &Arc<Shared>,
    upstream: &UpstreamSlot,
    parts: http::request::Parts,
    body: Bytes,
    slot: Slot,
) -> Result<Response<ProxyBody>, String> {
    let up = &shared.upstream;
    let path_and_query = parts
        .uri
        .path_and_query()
        .map_or("/", |pq| pq.as_str())
        .to_owned();
    let mut request = Request::new(Full::new(body));
    *request.method_mut() = parts.method;
    *request.uri_mut() = path_and_query.parse().map_err(|e| format!("{e}"))?;
    let headers = request.headers_mut();
    *headers = parts.headers;
    strip_hop_by_hop(headers);
    // The body is forwarded whole; hyper writes its length.
    headers.remove(header::CONTENT_LENGTH);
    // Whatever the client sent (nothing, with the proxy's kubeconfig) is replaced by the admin.
    headers.insert(header::AUTHORIZATION, up.authorization.clone());
    headers.insert(
        header::HOST,
        HeaderValue::from_str(&up.authority).map_err(|e| e.to_string())?,
    );

    let response = {
        let mut guard = upstream.lock().await;
        let sender = ready_sender(up, &mut guard).await?;
        sender.send_request(request)
    };
    let response = response.await.map_err(|e| format!("upstream: {e}"))?;

    let (mut head, incoming) = response.into_parts();
    strip_hop_by_hop(&mut head.headers);
    let shift = *shared.date_shift.lock().unwrap_or_else(|p| p.into_inner());
    shift_date(&mut head.headers, shift);
    let counted = Arc::clone(shared);
    let body = incoming
        .map_frame(move |frame| {
            if let Some(data) = frame.data_ref() {
                let n = data.len() as u64;
                counted
                    .totals
                    .bytes_from_upstream
                    .fetch_add(n, Ordering::SeqCst);
                counted.update(slot, |e| e.bytes_from_upstream += n);
            }
            frame
        })
        .boxed();
    Ok(Response::from_parts(head, body))
}

/// Moves a parseable `Date` header forward by `shift`; anything else is left as it came.
fn shift_date(headers: &mut HeaderMap, shift: Duration) {
    if shift.is_zero() {
        return;
    }
    let Some(shifted) = headers
        .get(header::DATE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| jiff::fmt::rfc2822::parse(v).ok())
        .and_then(|z| {
            let shift = jiff::SignedDuration::try_from(shift).ok()?;
            z.timestamp().checked_add(shift).ok()
        })
        .and_then(|t| HeaderValue::from_str(&http_date(t)).ok())
    else {
        return;
    };
    headers.insert(header::DATE, shifted);
}

/// The connection's upstream sender, ready for a request: the open one when it is still usable,
/// otherwise a fresh TLS connection.
async fn ready_sender<'a>(
    up: &Upstream,
    slot: &'a mut Option<SendRequest<Full<Bytes>>>,
) -> Result<&'a mut SendRequest<Full<Bytes>>, String> {
    if let Some(sender) = slot.as_mut()
        && !sender.is_closed()
        // Waits for the previous response body on this connection to finish, as HTTP/1.1 must.
        && sender.ready().await.is_ok()
    {
        // Re-borrow: the checks above borrowed the sender only for themselves.
    } else {
        *slot = Some(connect(up).await?);
    }
    slot.as_mut()
        .ok_or_else(|| "no upstream connection".to_owned())
}

async fn connect(up: &Upstream) -> Result<SendRequest<Full<Bytes>>, String> {
    let tcp = TcpStream::connect(&up.authority)
        .await
        .map_err(|e| format!("connect to {}: {e}", up.authority))?;
    // Small requests and watch events should not wait for Nagle.
    let _ = tcp.set_nodelay(true);
    let tls = up
        .tls
        .connect(up.server_name.clone(), tcp)
        .await
        .map_err(|e| format!("TLS handshake with {}: {e}", up.authority))?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| format!("HTTP handshake with {}: {e}", up.authority))?;
    // The connection task ends when the upstream closes or the sender is dropped with the
    // client connection.
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(sender)
}
