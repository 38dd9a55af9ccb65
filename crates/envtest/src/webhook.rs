//! A validating admission webhook served over HTTPS on loopback, for tests that need a pod
//! refused by a webhook rather than by a built-in admission plugin: it answers `POST /validate`
//! with an `AdmissionReview` (`admission.k8s.io/v1`) that denies every object lacking one label.
//!
//! Layer: test support. [`review`] decides (pure, no I/O); [`LabelWebhook`] only serves it. It
//! registers nothing with the apiserver: the test writes the `ValidatingWebhookConfiguration`
//! from [`LabelWebhook::url`] and [`LabelWebhook::ca_pem`].

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};
use tokio_rustls::TlsAcceptor;

use crate::certs::Certificates;

/// Why a [`LabelWebhook`] could not start.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    /// `rcgen` could not generate the key material.
    #[error("generate the webhook's certificate: {0}")]
    Certificate(#[from] rcgen::Error),
    /// The generated PEM could not be read back (a bug in this module).
    #[error("read the webhook's PEM: {0}")]
    Pem(#[from] rustls::pki_types::pem::Error),
    /// rustls refused the server configuration.
    #[error("configure TLS: {0}")]
    Tls(#[from] rustls::Error),
    /// No loopback port could be bound.
    #[error("bind a loopback port: {0}")]
    Bind(#[from] std::io::Error),
}

/// The `AdmissionReview` answering `request_review`: allowed when the reviewed object carries
/// the label `required`, otherwise denied with a 403 and gatekeeper's wording
/// (`[require-<label>-label] you must provide labels: {"<label>"}`). The answer echoes the
/// request's `uid`, as the apiserver requires.
pub fn review(request_review: &Value, required: &str) -> Value {
    let request = &request_review["request"];
    let labelled = request["object"]["metadata"]["labels"]
        .get(required)
        .is_some();
    let mut response = json!({ "uid": request["uid"], "allowed": labelled });
    if !labelled {
        response["status"] = json!({
            "code": 403,
            "message": format!(
                "[require-{required}-label] you must provide labels: {{\"{required}\"}}"
            ),
        });
    }
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": response,
    })
}

/// A running webhook requiring one label. Dropping it stops it (listener and connections).
pub struct LabelWebhook {
    addr: SocketAddr,
    ca_pem: String,
    accept: JoinHandle<()>,
}

impl std::fmt::Debug for LabelWebhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LabelWebhook")
            .field("url", &self.url())
            .finish_non_exhaustive()
    }
}

impl LabelWebhook {
    /// Starts a webhook on `127.0.0.1` on a free port, with a fresh CA and a serving
    /// certificate for `127.0.0.1`, denying objects without the label `required`.
    ///
    /// Must be called inside a Tokio runtime.
    ///
    /// # Errors
    /// [`WebhookError`] when the key material cannot be made or no port can be bound.
    pub async fn start(required: &str) -> Result<Self, WebhookError> {
        let certs = Certificates::generate()?;
        let chain = vec![CertificateDer::from_pem_slice(
            certs.serving_cert_pem.as_bytes(),
        )?];
        let key = PrivateKeyDer::from_pem_slice(certs.serving_key_pem.as_bytes())?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(chain, key)?;
        // The apiserver's client speaks HTTP/1.1 here; offer nothing else.
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let accept = tokio::spawn(accept_loop(
            listener,
            TlsAcceptor::from(Arc::new(config)),
            Arc::from(required),
        ));
        Ok(Self {
            addr,
            ca_pem: certs.ca_pem,
            accept,
        })
    }

    /// The URL for `clientConfig.url`: `https://127.0.0.1:<port>/validate`.
    pub fn url(&self) -> String {
        format!("https://{}/validate", self.addr)
    }

    /// The CA that signed the serving certificate, PEM (`clientConfig.caBundle`).
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }
}

impl Drop for LabelWebhook {
    fn drop(&mut self) {
        // Aborting the accept task drops its JoinSet, which aborts every connection.
        self.accept.abort();
    }
}

async fn accept_loop(listener: TcpListener, tls: TlsAcceptor, required: Arc<str>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else {
                    // Out of file descriptors or similar: back off instead of spinning.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                let tls = tls.clone();
                let required = Arc::clone(&required);
                connections.spawn(async move {
                    // A failed handshake ends this one connection.
                    let Ok(stream) = tls.accept(stream).await else { return };
                    let service = hyper::service::service_fn(move |req| {
                        let required = Arc::clone(&required);
                        async move { handle(req, &required).await }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

async fn handle(
    req: Request<Incoming>,
    required: &str,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let answer = |status: StatusCode, body: Vec<u8>| {
        let mut response = Response::new(Full::new(Bytes::from(body)));
        *response.status_mut() = status;
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static("application/json"),
        );
        response
    };
    if req.method() != Method::POST || req.uri().path() != "/validate" {
        return Ok(answer(StatusCode::NOT_FOUND, b"{}".to_vec()));
    }
    let Ok(body) = req.into_body().collect().await else {
        return Ok(answer(StatusCode::BAD_REQUEST, b"{}".to_vec()));
    };
    let Ok(request_review) = serde_json::from_slice::<Value>(&body.to_bytes()) else {
        return Ok(answer(StatusCode::BAD_REQUEST, b"{}".to_vec()));
    };
    let body =
        serde_json::to_vec(&review(&request_review, required)).expect("a JSON value serializes");
    Ok(answer(StatusCode::OK, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(labels: Value) -> Value {
        json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {"uid": "u-1", "object": {"metadata": {"labels": labels}}},
        })
    }

    /// An object without the label is denied with a 403 in gatekeeper's words, echoing the uid.
    #[test]
    fn an_object_without_the_label_is_denied() {
        let answer = review(&request(json!({"app": "x"})), "team");
        assert_eq!(answer["apiVersion"], "admission.k8s.io/v1");
        assert_eq!(answer["kind"], "AdmissionReview");
        assert_eq!(answer["response"]["uid"], "u-1");
        assert_eq!(answer["response"]["allowed"], false);
        assert_eq!(answer["response"]["status"]["code"], 403);
        assert_eq!(
            answer["response"]["status"]["message"],
            "[require-team-label] you must provide labels: {\"team\"}"
        );
    }

    /// An object with the label is allowed, and an object with no labels at all is denied.
    #[test]
    fn an_object_with_the_label_is_allowed() {
        let allowed = review(&request(json!({"team": "ml"})), "team");
        assert_eq!(allowed["response"]["allowed"], true);
        assert!(allowed["response"].get("status").is_none());
        let bare = review(&request(Value::Null), "team");
        assert_eq!(bare["response"]["allowed"], false);
    }
}
