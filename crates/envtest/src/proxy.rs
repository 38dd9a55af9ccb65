//! A loopback fault proxy in front of a real `kube-apiserver`: clients talk plain HTTP to
//! `127.0.0.1:<free port>` without credentials; the proxy forwards every request over TLS with the
//! admin token, injects the simulator's faults on chosen requests, adds a fixed latency per request
//! and per response, and counts requests and bytes.
//!
//! Layer: test infrastructure (imperative shell). Which fault a request gets is decided by the
//! simulator's own [`Faults`](apiary_apiserver_sim::Faults) and answered with the simulator's own Status bodies
//! ([`FaultAction::answer`](apiary_apiserver_sim::FaultAction::answer)), and requests are parsed into verb and resource by the simulator's
//! router, so a rule means the same thing in front of the model and in front of the real server.
//! The proxy never decodes or buffers a response body (watch streams pass through chunk by chunk,
//! compressed bodies stay compressed), never lets a faulted request reach the upstream, and never
//! writes the admin token anywhere but the upstream `Authorization` header (not to `Debug`, logs,
//! errors or kubeconfigs).
//!
//! A `Date` shift ([`FaultProxy::set_date_shift`]) moves the server clock the client reads forward,
//! so garbage collection's age gate (deploy.md § Age gate (why 1200 s) and the same-clock rule)
//! can be crossed without waiting twenty minutes; object timestamps stay the server's own.
//!
//! Each client connection gets its own upstream TLS connection (opened on its first request and
//! re-opened when the upstream closed it), so connection-level behaviour on the client side (a
//! reset, a long watch) maps onto exactly one upstream connection.

mod error;
mod exchange;
mod fault_proxy;
mod record;
mod upstream;

pub use error::ProxyError;
pub use fault_proxy::FaultProxy;
pub use record::{Counts, Latency, ProxiedRequest};
