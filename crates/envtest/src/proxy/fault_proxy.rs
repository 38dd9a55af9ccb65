//! The fault proxy's handle: start it in front of an apiserver, point clients at it (URL,
//! kubeconfig, `kube::Client`), set its faults, latency and `Date` shift, and read its log.
//!
//! Layer: test infrastructure (imperative shell). Its `Debug` shows where it listens and where
//! it forwards, never the admin token.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use apiary_apiserver_sim::{Faults, kubeconfig_yaml};
use http::Uri;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use super::error::ProxyError;
use super::exchange::accept_loop;
use super::record::{Counts, Latency, ProxiedRequest, Record, Shared, Totals};
use super::upstream::upstream;

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
