//! The fault proxy against a small TLS upstream of the test's own (no control plane needed, so
//! this tier always runs): the admin token replaces the client's credentials, bodies stream
//! through chunk by chunk and are counted as sent, compressed bodies stay compressed, faulted
//! requests never reach the upstream, and the token stays out of `Debug`.
//!
//! Layer: integration test of `apiary_envtest::proxy`. Loopback only; no timed assertions.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use apiary_apiserver_sim::{FaultAction, FaultRule, Matcher, Resource, Verb};
use apiary_envtest::certs::Certificates;
use apiary_envtest::proxy::{FaultProxy, Latency, ProxyError};
use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

const TOKEN: &str = "admin-token-never-shown";

/// What the upstream saw of one request.
#[derive(Debug, Clone)]
struct Seen {
    method: Method,
    path_and_query: String,
    headers: HeaderMap,
    body: Bytes,
}

type UpBody = BoxBody<Bytes, Infallible>;

/// A TLS upstream recording every request. `/stream` answers with chunks the test feeds through
/// [`Upstream::feed`]; `/gzip` answers fixed bytes labelled `Content-Encoding: gzip`; everything
/// else answers `{"echo":true}`.
struct Upstream {
    url: String,
    ca_pem: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    streams: mpsc::UnboundedReceiver<mpsc::UnboundedSender<Bytes>>,
}

const GZIP_BYTES: &[u8] = b"\x1f\x8b\x08\x00pretend-compressed-list";

impl Upstream {
    async fn start() -> Upstream {
        let certs = Certificates::generate().expect("certificates");
        let chain =
            vec![CertificateDer::from_pem_slice(certs.serving_cert_pem.as_bytes()).expect("cert")];
        let key = PrivateKeyDer::from_pem_slice(certs.serving_key_pem.as_bytes()).expect("key");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocols")
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("server config");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (stream_tx, streams) = mpsc::unbounded_channel();
        let seen2 = Arc::clone(&seen);
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let acceptor = acceptor.clone();
                let seen = Arc::clone(&seen2);
                let stream_tx = stream_tx.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                        let seen = Arc::clone(&seen);
                        let stream_tx = stream_tx.clone();
                        async move { Ok::<_, Infallible>(answer(req, &seen, &stream_tx).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        Upstream {
            url: format!("https://{addr}"),
            ca_pem: certs.ca_pem,
            seen,
            streams,
        }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("lock").clone()
    }

    /// The sender feeding the next `/stream` response that reached the upstream.
    async fn feed(&mut self) -> mpsc::UnboundedSender<Bytes> {
        self.streams.recv().await.expect("a /stream request")
    }
}

async fn answer(
    req: Request<Incoming>,
    seen: &Mutex<Vec<Seen>>,
    streams: &mpsc::UnboundedSender<mpsc::UnboundedSender<Bytes>>,
) -> Response<UpBody> {
    let (parts, body) = req.into_parts();
    let body = body
        .collect()
        .await
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    let path_and_query = parts
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    seen.lock().expect("lock").push(Seen {
        method: parts.method,
        path_and_query: path_and_query.clone(),
        headers: parts.headers,
        body,
    });
    match parts.uri.path() {
        "/stream" => {
            let (tx, rx) = mpsc::unbounded_channel::<Bytes>();
            let _ = streams.send(tx);
            let frames = futures::stream::unfold(rx, |mut rx| async move {
                rx.recv()
                    .await
                    .map(|b| (Ok::<_, Infallible>(Frame::data(b)), rx))
            });
            Response::new(StreamBody::new(frames).boxed())
        }
        "/gzip" => {
            let mut r = Response::new(Full::new(Bytes::from_static(GZIP_BYTES)).boxed());
            r.headers_mut().insert(
                http::header::CONTENT_ENCODING,
                "gzip".parse().expect("value"),
            );
            r
        }
        _ => Response::new(Full::new(Bytes::from_static(br#"{"echo":true}"#)).boxed()),
    }
}

/// A plain HTTP/1.1 client connection to the proxy.
async fn connect(proxy: &FaultProxy) -> hyper::client::conn::http1::SendRequest<Full<Bytes>> {
    let tcp = TcpStream::connect(proxy.addr())
        .await
        .expect("connect to the proxy");
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .expect("handshake");
    tokio::spawn(conn);
    sender
}

fn request(method: Method, uri: &str, body: &'static [u8]) -> Request<Full<Bytes>> {
    Request::builder()
        .method(method)
        .uri(uri)
        .header(http::header::HOST, "proxy.invalid")
        .body(Full::new(Bytes::from_static(body)))
        .expect("request")
}

async fn proxy_for(up: &Upstream) -> FaultProxy {
    FaultProxy::start(&up.url, &up.ca_pem, TOKEN)
        .await
        .expect("proxy starts")
}

/// Every forwarded request carries the admin token in place of the client's credentials, the
/// upstream authority as Host, and the client's method, path, query and body unchanged.
#[tokio::test]
async fn forwards_with_the_admin_token_replacing_client_credentials() {
    let up = Upstream::start().await;
    let proxy = proxy_for(&up).await;
    let mut c = connect(&proxy).await;
    let mut req = request(
        Method::POST,
        "/api/v1/namespaces/a/pods?fieldManager=x",
        b"{\"kind\":\"Pod\"}",
    );
    req.headers_mut().insert(
        http::header::AUTHORIZATION,
        "Bearer client-token".parse().expect("value"),
    );
    let resp = c.send_request(req).await.expect("answered");
    assert_eq!(resp.status(), StatusCode::OK);
    let body = resp.into_body().collect().await.expect("body").to_bytes();
    assert_eq!(&body[..], br#"{"echo":true}"#);

    let seen = up.seen();
    assert_eq!(seen.len(), 1);
    let s = &seen[0];
    assert_eq!(s.method, Method::POST);
    assert_eq!(s.path_and_query, "/api/v1/namespaces/a/pods?fieldManager=x");
    assert_eq!(&s.body[..], b"{\"kind\":\"Pod\"}");
    let auth: Vec<_> = s
        .headers
        .get_all(http::header::AUTHORIZATION)
        .iter()
        .collect();
    assert_eq!(auth, [format!("Bearer {TOKEN}").as_str()]);
    assert_eq!(
        s.headers[http::header::HOST],
        up.url.trim_start_matches("https://")
    );

    let logged = proxy.requests();
    assert_eq!(logged.len(), 1);
    assert_eq!(
        logged[0].request.target,
        Some((Resource::Pods, Verb::Create))
    );
    assert_eq!(logged[0].request.status, Some(200));
    assert!(logged[0].forwarded);
}

/// A streamed response passes through as it arrives: each chunk reaches the client before the
/// upstream sends the next one (a watch is never buffered), and its bytes are counted as sent.
#[tokio::test]
async fn streams_pass_through_chunk_by_chunk() {
    let mut up = Upstream::start().await;
    let proxy = proxy_for(&up).await;
    let mut c = connect(&proxy).await;
    let resp = c
        .send_request(request(Method::GET, "/stream?watch=true", b""))
        .await
        .expect("head arrives before any chunk");
    let feed = up.feed().await;
    let mut body = resp.into_body();
    for chunk in [
        "{\"type\":\"ADDED\"}\n",
        "{\"type\":\"MODIFIED\"}\n",
        "{\"type\":\"DELETED\"}\n",
    ] {
        feed.send(Bytes::from(chunk)).expect("feed");
        let frame = body.frame().await.expect("a frame").expect("not an error");
        assert_eq!(frame.data_ref().map(|b| &b[..]), Some(chunk.as_bytes()));
    }
    let sent: u64 = 17 + 20 + 19;
    assert_eq!(proxy.counts().bytes_from_upstream, sent);
    assert_eq!(proxy.requests()[0].bytes_from_upstream, sent);
    drop(feed);
    assert!(
        body.frame().await.is_none(),
        "the stream ends when the upstream's does"
    );
}

/// Compressed bodies pass through as sent, and are counted at their compressed size.
#[tokio::test]
async fn compressed_bodies_stay_compressed_and_count_as_sent() {
    let up = Upstream::start().await;
    let proxy = proxy_for(&up).await;
    let mut c = connect(&proxy).await;
    let mut req = request(Method::GET, "/gzip", b"");
    req.headers_mut().insert(
        http::header::ACCEPT_ENCODING,
        "gzip".parse().expect("value"),
    );
    let resp = c.send_request(req).await.expect("answered");
    assert_eq!(resp.headers()[http::header::CONTENT_ENCODING], "gzip");
    let body = resp.into_body().collect().await.expect("body").to_bytes();
    assert_eq!(&body[..], GZIP_BYTES);
    assert_eq!(up.seen()[0].headers[http::header::ACCEPT_ENCODING], "gzip");
    assert_eq!(proxy.counts().bytes_from_upstream, GZIP_BYTES.len() as u64);
}

/// A faulted request is answered by the proxy with the simulator's Status and never reaches the
/// upstream; the next one (budget spent) passes. Counts tell them apart.
#[tokio::test]
async fn faulted_requests_never_reach_the_upstream() {
    let up = Upstream::start().await;
    let proxy = proxy_for(&up).await;
    proxy.faults().add(FaultRule::times(
        1,
        Matcher::verb(Verb::Create, Resource::Pods),
        FaultAction::TooManyRequests {
            retry_after_seconds: 7,
        },
    ));
    let mut c = connect(&proxy).await;
    let resp = c
        .send_request(request(Method::POST, "/api/v1/namespaces/a/pods", b"{}"))
        .await
        .expect("answered");
    assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(resp.headers()[http::header::RETRY_AFTER], "7");
    let body = resp.into_body().collect().await.expect("body").to_bytes();
    let status: serde_json::Value = serde_json::from_slice(&body).expect("a Status");
    assert_eq!(status["reason"], "TooManyRequests");
    assert!(up.seen().is_empty(), "the upstream saw the faulted request");

    let resp = c
        .send_request(request(Method::POST, "/api/v1/namespaces/a/pods", b"{}"))
        .await
        .expect("answered");
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(up.seen().len(), 1);
    let counts = proxy.counts();
    assert_eq!(
        (counts.requests, counts.faulted, counts.forwarded),
        (2, 1, 1)
    );
    assert_eq!(counts.bytes_from_client, 4);
    let log = proxy.requests();
    assert!(log[0].request.faulted && !log[0].forwarded);
    assert_eq!(log[0].request.status, Some(429));
    assert!(!log[1].request.faulted && log[1].forwarded);
}

/// A dropped connection answers nothing: the client sees a transport error, the upstream nothing.
#[tokio::test]
async fn drop_connection_is_a_transport_error() {
    let up = Upstream::start().await;
    let proxy = proxy_for(&up).await;
    proxy.faults().add(FaultRule::times(
        1,
        Matcher::any(),
        FaultAction::DropConnection,
    ));
    let mut c = connect(&proxy).await;
    let err = c
        .send_request(request(Method::GET, "/api/v1/namespaces/a/pods", b""))
        .await
        .expect_err("no answer");
    assert!(!err.is_parse(), "{err}");
    assert!(up.seen().is_empty());
    assert_eq!(proxy.requests()[0].request.status, None);
}

/// The latency knob adds at least its configured delays to each request, by the proxy's own
/// accounting, and can be changed at runtime.
#[tokio::test]
async fn latency_knob_adds_at_least_the_configured_delay() {
    let up = Upstream::start().await;
    let proxy = proxy_for(&up).await;
    let mut c = connect(&proxy).await;
    let _ = c
        .send_request(request(Method::GET, "/a", b""))
        .await
        .expect("answered");
    let knob = Latency {
        request: Duration::from_millis(15),
        response: Duration::from_millis(25),
    };
    proxy.set_latency(knob);
    assert_eq!(proxy.latency(), knob);
    let _ = c
        .send_request(request(Method::GET, "/b", b""))
        .await
        .expect("answered");
    proxy.set_latency(Latency::default());
    let _ = c
        .send_request(request(Method::GET, "/c", b""))
        .await
        .expect("answered");
    let log = proxy.requests();
    assert_eq!(log[0].added_latency, Duration::ZERO);
    assert!(
        log[1].added_latency >= Duration::from_millis(40),
        "{:?}",
        log[1].added_latency
    );
    assert_eq!(log[2].added_latency, Duration::ZERO);
}

/// An upstream the CA does not vouch for is refused: the client's connection is dropped and the
/// reason is recorded, without the token.
#[tokio::test]
async fn an_untrusted_upstream_is_refused() {
    let up = Upstream::start().await;
    let other = Certificates::generate().expect("certificates");
    let proxy = FaultProxy::start(&up.url, &other.ca_pem, TOKEN)
        .await
        .expect("starts");
    let mut c = connect(&proxy).await;
    c.send_request(request(Method::GET, "/a", b""))
        .await
        .expect_err("no answer from an untrusted upstream");
    let log = proxy.requests();
    let why = log[0].upstream_error.as_deref().expect("a recorded reason");
    assert!(why.contains("TLS handshake"), "{why}");
    assert!(!why.contains(TOKEN));
}

/// The token never shows in `Debug` output, and start refuses bad inputs with their cause.
#[tokio::test]
async fn token_stays_out_of_debug_and_bad_inputs_are_refused() {
    let up = Upstream::start().await;
    let proxy = proxy_for(&up).await;
    let shown = format!("{proxy:?}");
    assert!(!shown.contains(TOKEN), "{shown}");
    assert!(shown.contains(&proxy.url()), "{shown}");
    assert!(!proxy.kubeconfig_yaml("a").contains(TOKEN));

    let http = FaultProxy::start("http://127.0.0.1:1", &up.ca_pem, TOKEN).await;
    assert!(
        matches!(http, Err(ProxyError::UpstreamUrl { .. })),
        "{http:?}"
    );
    let no_ca = FaultProxy::start(&up.url, "not a pem", TOKEN).await;
    assert!(matches!(no_ca, Err(ProxyError::CaPem(_))), "{no_ca:?}");
    let bad_token = FaultProxy::start(&up.url, &up.ca_pem, "line\nbreak").await;
    assert!(matches!(bad_token, Err(ProxyError::Token)), "{bad_token:?}");
}

/// The simulator's `Delay` fault holds a request and then forwards it: answered by the upstream,
/// not counted as faulted, and not mistaken for the latency knob.
#[tokio::test]
async fn a_delay_fault_forwards_late() {
    let up = Upstream::start().await;
    let proxy = proxy_for(&up).await;
    proxy.faults().add(FaultRule::times(
        1,
        Matcher::any(),
        FaultAction::Delay(Duration::from_millis(20)),
    ));
    let mut c = connect(&proxy).await;
    let resp = c
        .send_request(request(Method::GET, "/api/v1/namespaces/a/pods/p", b""))
        .await
        .expect("answered");
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(up.seen().len(), 1);
    let log = proxy.requests();
    assert!(log[0].forwarded && !log[0].request.faulted, "{log:?}");
    assert_eq!(log[0].added_latency, Duration::ZERO);
    assert_eq!(proxy.faults().injected(), 1);
    assert_eq!(proxy.counts().faulted, 0);
}
