//! A scripted apiserver for `PodSeeds` tests: a real `kube::Client` over a `tower` service that
//! logs every request URI and answers from a handler (JSON with a status, a never-answering
//! request, or a watch stream fed by the test).
//!
//! Test-only; it decides nothing about pods. Pod JSON helpers mirror seeds.md § Scenario
//! inventory's fixture.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::Frame;
use kube::Client;
use serde_json::{Value, json};
use tokio::sync::mpsc;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// How the mock answers one request.
pub enum Reply {
    /// A status and a JSON (or any) body.
    Json(u16, String),
    /// Never answers.
    Never,
    /// A 200 watch stream; each received chunk is sent as is; the stream ends when the sender
    /// is dropped.
    Stream(mpsc::UnboundedReceiver<String>),
}

type Handler = Box<dyn FnMut(&str) -> Reply + Send>;

/// The request log and the handler, shared with the service.
#[derive(Clone)]
pub struct MockApi {
    log: Arc<Mutex<Vec<String>>>,
    handler: Arc<Mutex<Handler>>,
}

impl MockApi {
    /// A mock answering with `handler(uri)`.
    pub fn new(handler: impl FnMut(&str) -> Reply + Send + 'static) -> Self {
        MockApi {
            log: Arc::default(),
            handler: Arc::new(Mutex::new(Box::new(handler))),
        }
    }

    /// Every request URI (path and query) so far.
    pub fn requests(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// The list requests (not watches) so far.
    pub fn lists(&self) -> Vec<String> {
        self.requests()
            .into_iter()
            .filter(|uri| !uri.contains("watch=true"))
            .collect()
    }

    /// The watch requests so far.
    pub fn watches(&self) -> Vec<String> {
        self.requests()
            .into_iter()
            .filter(|uri| uri.contains("watch=true"))
            .collect()
    }

    /// A client whose default namespace is `default-ns`.
    pub fn client(&self) -> Client {
        let log = Arc::clone(&self.log);
        let handler = Arc::clone(&self.handler);
        let service = tower::service_fn(move |request: http::Request<kube::client::Body>| {
            let uri = request.uri().to_string();
            log.lock().unwrap().push(uri.clone());
            let reply = (handler.lock().unwrap())(&uri);
            async move {
                let code = match reply {
                    Reply::Json(code, _) => code,
                    _ => 200,
                };
                let body: BoxBody<Bytes, BoxError> = match reply {
                    Reply::Json(_, text) => full(text),
                    Reply::Never => std::future::pending().await,
                    Reply::Stream(receiver) => {
                        let chunks = futures::stream::unfold(receiver, |mut receiver| async move {
                            let chunk = receiver.recv().await?;
                            Some((Ok::<_, BoxError>(Frame::data(Bytes::from(chunk))), receiver))
                        });
                        StreamBody::new(chunks).boxed()
                    }
                };
                Ok::<_, Infallible>(http::Response::builder().status(code).body(body).unwrap())
            }
        });
        Client::new(service, "default-ns")
    }
}

fn full(text: String) -> BoxBody<Bytes, BoxError> {
    Full::new(Bytes::from(text))
        .map_err(|never: Infallible| match never {})
        .boxed()
}

/// A running pod with one container; uid derived from the name.
pub fn running(name: &str, ip: &str) -> Value {
    json!({
        "metadata": {"name": name, "namespace": "ring", "uid": format!("uid-{name}"), "resourceVersion": "10"},
        "spec": {"containers": [{"name": "main", "image": "ring:1",
                                 "ports": [{"name": "gossip", "containerPort": 7000}]}]},
        "status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}]}
    })
}

/// The same pod with a `resourceVersion`.
pub fn at_version(mut pod: Value, resource_version: &str) -> Value {
    pod["metadata"]["resourceVersion"] = json!(resource_version);
    pod
}

/// The same pod marked for deletion.
pub fn terminating(mut pod: Value) -> Value {
    pod["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    pod
}

/// A pod list page.
pub fn page(items: &[Value], continue_token: Option<&str>, resource_version: &str) -> String {
    let mut metadata = json!({"resourceVersion": resource_version});
    if let Some(token) = continue_token {
        metadata["continue"] = json!(token);
    }
    json!({"kind": "PodList", "apiVersion": "v1", "metadata": metadata, "items": items}).to_string()
}

/// A `Status` body.
pub fn status(code: u16, reason: &str, message: &str) -> String {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": message, "reason": reason, "code": code})
    .to_string()
}

/// One watch event line.
pub fn event(kind: &str, object: &Value) -> String {
    format!("{}\n", json!({"type": kind, "object": object}))
}

/// The value of a query parameter in a request URI.
pub fn query_param(uri: &str, key: &str) -> Option<String> {
    let query = uri.split_once('?')?.1;
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(name, _)| *name == key)
        .map(|(_, value)| value.to_owned())
}

/// Polls `condition` every 10 ms for up to 5 s.
pub async fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    for _ in 0..500 {
        if condition() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for: {what}");
}
