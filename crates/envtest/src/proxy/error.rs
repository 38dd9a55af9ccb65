//! Why the fault proxy could not start.
//!
//! Layer: test infrastructure, a plain error type. Never carries the admin token.

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
