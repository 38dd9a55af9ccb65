//! Test helpers: a minimal plain-HTTP client (hyper's low-level HTTP/1 client over a fresh
//! loopback connection per request) and a line reader for watch streams.
//!
//! Layer: test support only; it talks to the simulator exactly as any HTTP client would and never
//! reaches into its internals.
#![allow(dead_code)] // each test binary uses a different subset of these helpers

pub mod kube_client;

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::Value;

/// A whole response.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: Bytes,
}

impl Resp {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "body is not JSON ({e}): {}",
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub fn date(&self) -> Option<&str> {
        self.headers
            .get(http::header::DATE)
            .and_then(|v| v.to_str().ok())
    }
}

async fn open(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> Result<http::Response<Incoming>, String> {
    let bytes = body.map(|b| Bytes::from(b.to_string())).unwrap_or_default();
    open_raw(addr, method, path, "application/json", bytes, None).await
}

/// `GET path` asking for a Table, as `kubectl get` does.
pub async fn get_table(addr: SocketAddr, path: &str) -> Resp {
    let accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
    let resp = open_raw(
        addr,
        "GET",
        path,
        "application/json",
        Bytes::new(),
        Some(accept),
    )
    .await;
    read(resp)
        .await
        .unwrap_or_else(|e| panic!("GET {path}: {e}"))
}

/// Sends one request with a raw body of the given content type.
pub async fn call_raw(
    addr: SocketAddr,
    method: &str,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> Resp {
    let resp = open_raw(addr, method, path, content_type, Bytes::from(body), None).await;
    read(resp)
        .await
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
}

async fn open_raw(
    addr: SocketAddr,
    method: &str,
    path: &str,
    content_type: &str,
    bytes: Bytes,
    accept: Option<&str>,
) -> Result<http::Response<Incoming>, String> {
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| e.to_string())?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let mut req = http::Request::builder();
    if let Some(accept) = accept {
        req = req.header(http::header::ACCEPT, accept);
    }
    let req = req
        .method(method)
        .uri(path)
        .header(http::header::HOST, addr.to_string())
        .header(http::header::CONTENT_TYPE, content_type)
        .body(Full::new(bytes))
        .map_err(|e| e.to_string())?;
    sender.send_request(req).await.map_err(|e| e.to_string())
}

/// Sends one request; `Err` carries the transport error text (for example a dropped connection).
pub async fn try_call(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> Result<Resp, String> {
    read(open(addr, method, path, body).await).await
}

/// Reads a whole answer; `Err` carries the transport error text.
async fn read(resp: Result<http::Response<Incoming>, String>) -> Result<Resp, String> {
    let (parts, body) = resp?.into_parts();
    let body = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
    Ok(Resp {
        status: parts.status.as_u16(),
        headers: parts.headers,
        body,
    })
}

/// Sends one request and expects an answer.
pub async fn call(addr: SocketAddr, method: &str, path: &str, body: Option<&Value>) -> Resp {
    try_call(addr, method, path, body)
        .await
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
}

pub async fn get(addr: SocketAddr, path: &str) -> Resp {
    call(addr, "GET", path, None).await
}

/// What [`Watch::next_within`] reports when the connection failed mid-stream.
pub const BROKEN: &str = "watch stream broken";

/// An open watch stream, read one JSON line at a time.
pub struct Watch {
    pub status: u16,
    pub headers: http::HeaderMap,
    body: Incoming,
    buf: Vec<u8>,
    ended: bool,
}

impl Watch {
    pub async fn open(addr: SocketAddr, path: &str) -> Watch {
        let resp = open(addr, "GET", path, None)
            .await
            .unwrap_or_else(|e| panic!("watch {path}: {e}"));
        let (parts, body) = resp.into_parts();
        Watch {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body,
            buf: Vec::new(),
            ended: false,
        }
    }

    /// The next event, or `None` when the stream ended (or `wait` passed without one: `Err`).
    pub async fn next_within(&mut self, wait: Duration) -> Result<Option<Value>, &'static str> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if let Some(pos) = self.buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=pos).collect();
                let v = serde_json::from_slice(&line).unwrap_or_else(|e| {
                    panic!(
                        "watch line is not JSON ({e}): {}",
                        String::from_utf8_lossy(&line)
                    )
                });
                return Ok(Some(v));
            }
            if self.ended {
                return Ok(None);
            }
            match tokio::time::timeout_at(deadline, self.body.frame()).await {
                Err(_) => return Err("no watch event in time"),
                Ok(None) => self.ended = true,
                Ok(Some(Err(_))) => return Err(BROKEN),
                Ok(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        self.buf.extend_from_slice(&data);
                    }
                }
            }
        }
    }

    /// The next event within 5 s; panics otherwise.
    pub async fn next(&mut self) -> Value {
        self.next_within(Duration::from_secs(5))
            .await
            .expect("a watch event within 5 s")
            .expect("the watch stream to stay open")
    }

    /// The next event that is not a BOOKMARK.
    pub async fn next_change(&mut self) -> Value {
        loop {
            let e = self.next().await;
            if e["type"] != "BOOKMARK" {
                return e;
            }
        }
    }
}

/// Parses an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) into a timestamp.
pub fn parse_http_date(s: &str) -> Option<jiff::Timestamp> {
    let s = s.strip_suffix(" GMT")?;
    let parsed = jiff::fmt::strtime::parse("%a, %d %b %Y %H:%M:%S", s).ok()?;
    parsed
        .to_datetime()
        .ok()?
        .to_zoned(jiff::tz::TimeZone::UTC)
        .ok()
        .map(|z| z.timestamp())
}

/// A pod manifest with one `agent` container.
pub fn pod_body(name: &str, image: &str, labels: Value) -> Value {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": { "name": name, "labels": labels },
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 60,
            "containers": [{ "name": "agent", "image": image }],
        },
    })
}

/// An image reference that selects no special kubelet script (the pod starts).
pub const IMAGE: &str = "registry.example.com/team/agent@sha256:0000000000000000000000000000000000000000000000000000000000000000";

/// Creates namespace `ns` over HTTP and asserts 201.
pub async fn create_namespace(addr: SocketAddr, ns: &str) {
    let r = call(
        addr,
        "POST",
        "/api/v1/namespaces",
        Some(&serde_json::json!({"metadata": {"name": ns}})),
    )
    .await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
}

/// Creates a pod over HTTP and returns the created object.
pub async fn create_pod(addr: SocketAddr, ns: &str, body: &Value) -> Value {
    let r = call(
        addr,
        "POST",
        &format!("/api/v1/namespaces/{ns}/pods"),
        Some(body),
    )
    .await;
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    r.json()
}

/// Polls `GET path` until `done` holds for the JSON answer (or its status), up to 5 s.
pub async fn poll(addr: SocketAddr, path: &str, done: impl Fn(u16, &Value) -> bool) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let r = get(addr, path).await;
        let v = r.json();
        if done(r.status, &v) {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{path} never reached the state; last: {v}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
