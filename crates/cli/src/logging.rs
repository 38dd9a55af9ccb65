//! Logging setup: `tracing` events to stderr, filtered by `-v` or `RUST_LOG`, under hard caps
//! that keep request and response bodies out of every log. Shell layer; decides only filters.
//!
//! The filter table and the caps (deploy.md § CLI contract) live in `filter`, which
//! `buzz-backend-kubernetes` compiles too; this module installs them for `apiary`.
//!
//! Must not: log anything itself but the one warning about an unparseable `RUST_LOG`, or let a
//! filter string reach a body-bearing target above its cap.

use std::io::IsTerminal;

use tracing_subscriber::filter::FilterExt;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, fmt};

mod filter;

use filter::{body_caps, choose_filter};

/// Install the stderr subscriber. Call once, before anything logs.
pub fn init(verbosity: u8) {
    let rust_log = std::env::var("RUST_LOG").ok();
    let (filter, warning) = choose_filter(verbosity, rust_log.as_deref());
    let layer = fmt::layer()
        .with_writer(|| crate::progress::LogWriter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(verbosity > 0);
    // Timestamps only help when debugging; the default output reads as plain progress.
    let layer = if verbosity > 0 {
        layer.boxed()
    } else {
        layer.without_time().boxed()
    };
    let layer = layer.with_filter(filter.and(body_caps()));
    // A second initialisation (only possible in tests) keeps the first subscriber.
    let _ = tracing_subscriber::registry().with(layer).try_init();
    if let Some(warning) = warning {
        tracing::warn!("{warning}");
    }
}

#[cfg(test)]
mod tests {
    //! The filter table of the CLI contract and the body caps.

    use super::filter::directives_for;
    use super::*;
    use tracing::Level;
    use tracing_subscriber::EnvFilter;

    /// The `-v` table is exactly the contract's, with the quieter default of deploy.md § A quieter,
    /// more familiar terminal: warnings only, no `INFO` of apiary's own targets until `-v`.
    #[test]
    fn verbosity_table_matches_the_contract() {
        assert_eq!(directives_for(0), "warn,kube_client::client::builder=off");
        assert_eq!(
            directives_for(1),
            "apiary=debug,warn,kube_client::client::builder=off"
        );
        assert_eq!(directives_for(2), "apiary=trace,debug");
        assert_eq!(directives_for(3), "trace");
        assert_eq!(directives_for(9), "trace");
    }

    /// Body-bearing targets stay capped at every level: kube's response-body warnings, tower-http,
    /// hyper's buffer tracing and the simulator.
    #[test]
    fn body_caps_hold_for_body_bearing_targets() {
        let caps = body_caps();
        assert!(!caps.would_enable("kube_client::client", &Level::WARN));
        assert!(!caps.would_enable("kube_client::client", &Level::DEBUG));
        assert!(caps.would_enable("kube_client::client", &Level::ERROR));
        assert!(caps.would_enable("kube_client::client::builder", &Level::DEBUG));
        assert!(!caps.would_enable("kube_client::client::builder", &Level::TRACE));
        assert!(!caps.would_enable("tower_http::trace::on_body_chunk", &Level::ERROR));
        assert!(!caps.would_enable("hyper::proto::h1::io", &Level::DEBUG));
        assert!(caps.would_enable("hyper::proto", &Level::INFO));
        assert!(!caps.would_enable("h2::codec", &Level::TRACE));
        assert!(!caps.would_enable("rustls::conn", &Level::DEBUG));
        assert!(!caps.would_enable("apiary_apiserver_sim::server", &Level::DEBUG));
    }

    /// What a filter lets through from apiary's driver target, as lines captured from a real
    /// `fmt` subscriber: one `INFO` and one `WARN` event.
    fn shown_by(verbosity: u8) -> String {
        #[derive(Clone, Default)]
        struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
        impl std::io::Write for Captured {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                if let Ok(mut buffer) = self.0.lock() {
                    buffer.extend_from_slice(bytes);
                }
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let captured = Captured::default();
        let writer = captured.clone();
        let layer = fmt::layer()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .with_filter(EnvFilter::new(directives_for(verbosity)).and(body_caps()));
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!(target: "apiary_substrate::driver::deploy", "created the pod");
            tracing::warn!(target: "apiary_substrate::driver::deploy", "kept a started pod");
        });
        let bytes = captured.0.lock().map(|b| b.clone()).unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// deploy.md § A quieter, more familiar terminal: by default apiary's warnings show but its
    /// `INFO` lines (which a deploy's progress and result already say) do not; `-v` adds them.
    #[test]
    fn default_is_warnings_only_and_v_adds_info() {
        let quiet = shown_by(0);
        assert!(quiet.contains("kept a started pod"), "{quiet}");
        assert!(!quiet.contains("created the pod"), "{quiet}");
        let verbose = shown_by(1);
        assert!(verbose.contains("kept a started pod"), "{verbose}");
        assert!(verbose.contains("created the pod"), "{verbose}");
    }

    /// apiary's own targets are not capped: `-vvv` really shows everything of apiary.
    #[test]
    fn apiary_targets_are_not_capped() {
        let caps = body_caps();
        assert!(caps.would_enable("apiary", &Level::TRACE));
        assert!(caps.would_enable("apiary_substrate::driver", &Level::TRACE));
        assert!(caps.would_enable("apiary_substrate_kube::cluster", &Level::TRACE));
    }

    /// `RUST_LOG` replaces the `-v` filter when set; blank counts as unset; garbage falls back
    /// with a warning.
    #[test]
    fn rust_log_replaces_the_filter() {
        let (filter, warning) = choose_filter(0, Some("apiary=trace"));
        assert_eq!(filter.to_string(), "apiary=trace");
        assert!(warning.is_none());
        let (filter, warning) = choose_filter(1, Some("   "));
        assert_eq!(
            filter.to_string(),
            EnvFilter::new(directives_for(1)).to_string()
        );
        assert!(warning.is_none());
        let (filter, warning) = choose_filter(0, None);
        assert_eq!(
            filter.to_string(),
            EnvFilter::new(directives_for(0)).to_string()
        );
        assert!(warning.is_none());
        let (filter, warning) = choose_filter(2, Some("apiary=[{"));
        assert_eq!(
            filter.to_string(),
            EnvFilter::new("apiary=trace,debug").to_string()
        );
        assert!(warning.expect("warned").contains("RUST_LOG"));
    }
}
