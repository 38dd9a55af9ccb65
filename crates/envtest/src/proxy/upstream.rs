//! The proxy's upstream side: the TLS client that trusts the control plane's CA, the admin
//! `Authorization` header (marked sensitive), and one upstream HTTP/1.1 connection per client
//! connection, opened on first use and re-opened when the upstream closed it.
//!
//! Layer: test infrastructure (imperative shell). Decides no faults and never writes the token
//! anywhere but the upstream header.

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderValue, Uri};
use http_body_util::Full;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use super::error::ProxyError;

pub(super) struct Upstream {
    /// `host:port`, for the TCP connect and the `Host` header.
    pub(super) authority: String,
    server_name: ServerName<'static>,
    tls: TlsConnector,
    /// `Bearer <admin token>`, marked sensitive.
    pub(super) authorization: HeaderValue,
}

pub(super) fn upstream(url: &str, ca_pem: &str, token: &str) -> Result<Upstream, ProxyError> {
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

/// The upstream side of one client connection: connected lazily, re-connected when closed.
pub(super) type UpstreamSlot = Arc<tokio::sync::Mutex<Option<SendRequest<Full<Bytes>>>>>;

/// The connection's upstream sender, ready for a request: the open one when it is still usable,
/// otherwise a fresh TLS connection.
pub(super) async fn ready_sender<'a>(
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
