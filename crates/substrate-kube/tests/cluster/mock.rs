//! Test support: a real `kube::Client` over a scripted `tower::service_fn`, capturing every
//! request (method, URI, body) and answering from a script (a response, a dropped connection,
//! or a hang). Shared by the mock-service suites of this binary (`outcomes`, `requests`, `retry`,
//! `deadline`, `node`, `watch`); contacts no network.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use apiary_substrate_kube::{Cluster, RetryPolicy};
use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::client::Body;

/// One captured request.
#[derive(Clone, Debug)]
pub struct Captured {
    pub method: String,
    pub uri: String,
    /// The `Accept` header, when sent.
    pub accept: Option<String>,
    pub body: Vec<u8>,
}

impl Captured {
    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("JSON body")
    }

    /// The path component of the URI.
    pub fn path(&self) -> &str {
        self.uri.split('?').next().unwrap_or("")
    }

    /// The query component of the URI (empty when none).
    pub fn query(&self) -> &str {
        self.uri.split_once('?').map_or("", |(_, q)| q)
    }
}

/// One scripted answer.
pub enum Answer {
    /// Respond with this status, headers and body.
    Respond {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: Vec<u8>,
    },
    /// Fail the request as a dropped connection would.
    Drop,
    /// Never answer (until the client gives up).
    Hang,
    /// Respond 200 with a watch stream body made of these lines, then end.
    Stream(Vec<String>),
    /// Respond 200 with a watch stream that sends these lines and then stays open.
    StreamThenHang(Vec<String>),
}

/// A 2xx JSON answer.
pub fn ok(body: serde_json::Value) -> Answer {
    Answer::Respond {
        status: 200,
        headers: vec![],
        body: body.to_string().into_bytes(),
    }
}

/// A 201 JSON answer.
pub fn created(body: serde_json::Value) -> Answer {
    Answer::Respond {
        status: 201,
        headers: vec![],
        body: body.to_string().into_bytes(),
    }
}

/// A `Status` answer with this code and reason (empty = absent).
pub fn status(code: u16, reason: &str) -> Answer {
    let mut body = serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": format!("scripted {code} {reason}"),
        "code": code,
    });
    if !reason.is_empty() {
        body["reason"] = serde_json::Value::String(reason.to_owned());
    }
    Answer::Respond {
        status: code,
        headers: vec![],
        body: body.to_string().into_bytes(),
    }
}

/// Add a header to a `Respond` answer.
pub fn with_header(answer: Answer, name: &'static str, value: &str) -> Answer {
    match answer {
        Answer::Respond {
            status,
            mut headers,
            body,
        } => {
            headers.push((name, value.to_owned()));
            Answer::Respond {
                status,
                headers,
                body,
            }
        }
        other => other,
    }
}

/// The requests seen so far.
#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Vec<Captured>>>);

impl Log {
    pub fn all(&self) -> Vec<Captured> {
        self.0.lock().expect("log").clone()
    }

    pub fn count(&self) -> usize {
        self.0.lock().expect("log").len()
    }

    pub fn only(&self) -> Captured {
        let all = self.all();
        assert_eq!(all.len(), 1, "expected exactly one request: {all:#?}");
        all[0].clone()
    }
}

/// A `kube::Client` over the script, and the request log. Once the script is exhausted every
/// request is answered 500 (so a test never hangs on a missing entry).
pub fn client(script: Vec<Answer>) -> (kube::Client, Log) {
    let script = Arc::new(Mutex::new(VecDeque::from(script)));
    let log = Log::default();
    let seen = log.clone();
    let service = tower::service_fn(move |request: http::Request<Body>| {
        let script = Arc::clone(&script);
        let seen = seen.clone();
        async move {
            let (parts, body) = request.into_parts();
            let body = body.collect_bytes().await.expect("request body").to_vec();
            seen.0.lock().expect("log").push(Captured {
                method: parts.method.to_string(),
                uri: parts.uri.to_string(),
                accept: parts
                    .headers
                    .get(http::header::ACCEPT)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned),
                body,
            });
            let answer = script
                .lock()
                .expect("script")
                .pop_front()
                .unwrap_or_else(|| status(500, "InternalError"));
            respond(answer).await
        }
    });
    (kube::Client::new(service, "default"), log)
}

type MockBody = UnsyncBoxBody<Bytes, std::io::Error>;

fn full(bytes: Vec<u8>) -> MockBody {
    Full::new(Bytes::from(bytes))
        .map_err(|never| match never {})
        .boxed_unsync()
}

async fn respond(answer: Answer) -> Result<http::Response<MockBody>, std::io::Error> {
    match answer {
        Answer::Respond {
            status,
            headers,
            body,
        } => {
            let mut builder = http::Response::builder().status(status);
            for (name, value) in headers {
                builder = builder.header(name, value);
            }
            Ok(builder.body(full(body)).expect("response"))
        }
        Answer::Drop => Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "connection reset by peer",
        )),
        Answer::Hang => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Err(std::io::Error::other("hung"))
        }
        Answer::Stream(lines) => {
            let text: String = lines.iter().map(|line| format!("{line}\n")).collect();
            Ok(http::Response::builder()
                .status(200)
                .body(full(text.into_bytes()))
                .expect("response"))
        }
        Answer::StreamThenHang(lines) => {
            let (mut sender, receiver) =
                futures::channel::mpsc::channel::<Result<Frame<Bytes>, std::io::Error>>(16);
            let text: String = lines.iter().map(|line| format!("{line}\n")).collect();
            sender
                .try_send(Ok(Frame::data(Bytes::from(text))))
                .expect("send");
            // Keep the sender alive for the rest of the test so the stream stays open.
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                drop(sender);
            });
            let body = StreamBody::new(receiver).boxed_unsync();
            Ok(http::Response::builder()
                .status(200)
                .body(body)
                .expect("response"))
        }
    }
}

/// A `Cluster` in namespace `agents` over the script.
pub fn cluster(script: Vec<Answer>) -> (Cluster, Log) {
    let (client, log) = client(script);
    (Cluster::new(client, "agents"), log)
}

/// A `Cluster` in namespace `agents` over the script whose retries end quickly (a 300 ms budget),
/// for answers that are retried (dropped connections, 5xx).
pub fn short_cluster(script: Vec<Answer>) -> (Cluster, Log) {
    let (client, log) = client(script);
    let policy = RetryPolicy {
        budget: Duration::from_millis(300),
        attempt_timeout: Duration::from_millis(100),
        base: Duration::from_millis(10),
        cap: Duration::from_millis(20),
    };
    (
        Cluster::new(client, "agents").with_retry_policy(policy),
        log,
    )
}

/// A pod named `agent-x` with nothing else set, as a create or patch would send it.
pub fn agent_pod() -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some("agent-x".to_owned()),
            ..ObjectMeta::default()
        },
        ..Pod::default()
    }
}

/// A minimal pod object as the apiserver would return it.
pub fn pod_json(name: &str, uid: &str, resource_version: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "agents",
            "uid": uid,
            "resourceVersion": resource_version,
        },
    })
}

/// A pod list with these pods.
pub fn pod_list(items: Vec<serde_json::Value>) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "PodList",
        "metadata": {"resourceVersion": "100"},
        "items": items,
    })
}
