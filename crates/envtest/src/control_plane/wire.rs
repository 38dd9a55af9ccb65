//! Tiny blocking HTTP/1.0 requests to the fixture's own loopback processes: etcd's health and v3
//! JSON gateway (plain HTTP), and the apiserver's `/readyz` and namespace create (TLS through
//! rustls, trusting only the fixture's CA).
//!
//! Layer: test support, I/O only. Blocking on purpose, so the fixture starts and is driven from
//! any thread, inside or outside a Tokio runtime. It must never talk to anything but loopback,
//! and never put a token into an error.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::{CertificateDer, ServerName};

/// How long one read or write may block: a bound so a hung server fails the fixture instead of
/// hanging the test, not a performance assertion.
const IO_BOUND: Duration = Duration::from_secs(10);

/// A decoded response: the status code and the body as text.
#[derive(Debug)]
pub(crate) struct Response {
    pub(crate) status: u16,
    pub(crate) body: String,
}

/// Sends one plain-HTTP request to `addr` (etcd's client URL).
pub(crate) fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> io::Result<Response> {
    let mut stream = connect(addr)?;
    stream.write_all(request(method, path, None, body).as_bytes())?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    parse(&raw)
}

/// A TLS client for the apiserver that trusts exactly the fixture's CA.
#[derive(Clone)]
pub(crate) struct TlsClient {
    config: Arc<rustls::ClientConfig>,
}

impl TlsClient {
    /// Builds the client from the CA certificate (DER).
    pub(crate) fn new(ca_der: &[u8]) -> io::Result<Self> {
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from(ca_der.to_vec()))
            .map_err(io::Error::other)?;
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(io::Error::other)?
        .with_root_certificates(roots)
        .with_no_client_auth();
        Ok(Self {
            config: Arc::new(config),
        })
    }

    /// Sends one request to the apiserver at `addr` with a bearer token.
    pub(crate) fn send(
        &self,
        addr: SocketAddr,
        token: &str,
        method: &str,
        path: &str,
        body: Option<&str>,
    ) -> io::Result<Response> {
        let name = ServerName::IpAddress(addr.ip().into());
        let connection =
            rustls::ClientConnection::new(self.config.clone(), name).map_err(io::Error::other)?;
        let mut stream = rustls::StreamOwned::new(connection, connect(addr)?);
        stream.write_all(request(method, path, Some(token), body).as_bytes())?;
        let mut raw = Vec::new();
        match stream.read_to_end(&mut raw) {
            Ok(_) => {}
            // A peer that closes without close_notify still sent a whole HTTP/1.0 response.
            Err(error) if error.kind() == io::ErrorKind::UnexpectedEof && !raw.is_empty() => {}
            Err(error) => return Err(error),
        }
        parse(&raw)
    }
}

fn connect(addr: SocketAddr) -> io::Result<TcpStream> {
    debug_assert!(
        addr.ip().is_loopback(),
        "the fixture only talks to loopback"
    );
    let stream = TcpStream::connect_timeout(&addr, IO_BOUND)?;
    stream.set_read_timeout(Some(IO_BOUND))?;
    stream.set_write_timeout(Some(IO_BOUND))?;
    Ok(stream)
}

/// HTTP/1.0, so the server answers without chunking and closes the connection after the body.
fn request(method: &str, path: &str, token: Option<&str>, body: Option<&str>) -> String {
    let mut text =
        format!("{method} {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n");
    if let Some(token) = token {
        text.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    if let Some(body) = body {
        text.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ));
    } else {
        text.push_str("\r\n");
    }
    text
}

fn parse(raw: &[u8]) -> io::Result<Response> {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no HTTP header end"))?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no HTTP status line"))?;
    Ok(Response {
        status,
        body: body.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request with a body carries its length and type; the token rides only in the header.
    #[test]
    fn request_shape() {
        assert_eq!(
            request("POST", "/v3/kv/range", None, Some("{}")),
            "POST /v3/kv/range HTTP/1.0\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\
             Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
        );
        assert_eq!(
            request("GET", "/readyz", Some("t"), None),
            "GET /readyz HTTP/1.0\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\
             Authorization: Bearer t\r\n\r\n"
        );
    }

    /// The status code and body are split out of a raw response.
    #[test]
    fn parses_status_and_body() {
        let response = parse(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nok").unwrap();
        assert_eq!(response.status, 200);
        assert_eq!(response.body, "ok");
        assert!(parse(b"HTTP/1.0 200 OK\r\n").is_err());
    }
}
