//! The proxy's exchange of one request: accept client connections, record the request, decide
//! its fault with the simulator's rules, add the configured latency, and either answer the fault
//! with the simulator's Status body or forward the request upstream with the response streaming
//! back counted (and its `Date` shifted when asked).
//!
//! Layer: test infrastructure (imperative shell). Never decodes or buffers a response body and
//! never lets a faulted request reach the upstream.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use apiary_apiserver_sim::{
    FaultAction, LoggedRequest, Query, RequestFacts, Route, http_date, route,
};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

use super::record::{ProxiedRequest, Shared, Slot};
use super::upstream::{UpstreamSlot, ready_sender};

/// The body the proxy answers with: a streamed upstream body or a whole fault answer.
type ProxyBody = BoxBody<Bytes, hyper::Error>;

pub(super) async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
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
