//! Logging setup: `tracing` events to stderr, filtered by `-v` or `RUST_LOG`, under hard caps
//! that keep request and response bodies out of every log. Shell layer; decides only filters.
//!
//! Filter (deploy.md § CLI contract, narrowed by issue 11 § 7): default `warn` (warnings and
//! errors only: a deploy's progress lines and result already say what its `INFO` lines would
//! repeat); `-v` `apiary=debug,warn` (the log lines, `INFO` included); `-vv`
//! `apiary=trace,debug`; `-vvv` `trace`. `RUST_LOG`, when set and non-empty, replaces it.
//! Below `-vv`, kube's per-request `ERROR failed with error …` lines
//! (`kube_client::client::builder`) are off: every failure reaches the user once, as apiary's
//! own error message, instead of once per retried request.
//!
//! Caps (applied after the filter, so neither `-vvv` nor `RUST_LOG` can lift them): env values
//! live in the `stringData` of Secret create bodies (deploy.md § Environment, rule 7), and some
//! HTTP-layer targets print bodies or headers:
//! * `kube_client::client` logs whole response bodies at `warn` when they fail to decode and at
//!   `debug`/`trace` for Status answers and headers → capped at `error`;
//!   `kube_client::client::builder` (request spans: method, URL, status; no bodies) stays at
//!   `debug`, and the rest of `kube_client`, `kube_core`, `kube_runtime` at `debug`;
//! * `tower_http` (a body-chunk trace hook exists) → off;
//! * `hyper`, `hyper_util`, `h2`, `rustls` (buffer-level tracing) → `info`;
//! * `apiary_apiserver_sim` (the demo's in-process simulator handles Secret bodies) → `info`.
//!
//! Must not: log anything itself, or let a filter string reach a body-bearing target above its
//! cap.

use std::io::IsTerminal;

use tracing::level_filters::LevelFilter;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::{FilterExt, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, fmt};

/// The filter directives for `-v` repeated `verbosity` times.
pub fn directives_for(verbosity: u8) -> &'static str {
    match verbosity {
        0 => "warn,kube_client::client::builder=off",
        1 => "apiary=debug,warn,kube_client::client::builder=off",
        2 => "apiary=trace,debug",
        _ => "trace",
    }
}

/// The hard caps on body-bearing targets, applied whatever the filter says.
pub fn body_caps() -> Targets {
    Targets::new()
        .with_default(LevelFilter::TRACE)
        .with_target("kube_client", LevelFilter::DEBUG)
        .with_target("kube_client::client", LevelFilter::ERROR)
        .with_target("kube_client::client::builder", LevelFilter::DEBUG)
        .with_target("kube_core", LevelFilter::DEBUG)
        .with_target("kube_runtime", LevelFilter::DEBUG)
        .with_target("kube", LevelFilter::DEBUG)
        .with_target("tower_http", LevelFilter::OFF)
        .with_target("hyper", LevelFilter::INFO)
        .with_target("hyper_util", LevelFilter::INFO)
        .with_target("h2", LevelFilter::INFO)
        .with_target("rustls", LevelFilter::INFO)
        .with_target("apiary_apiserver_sim", LevelFilter::INFO)
}

/// Choose the filter: `RUST_LOG` (when set, non-empty and parseable) replaces the `-v` filter.
/// Returns the filter and, when `RUST_LOG` could not be parsed, a warning to print once the
/// subscriber is installed.
pub fn choose_filter(verbosity: u8, rust_log: Option<&str>) -> (EnvFilter, Option<String>) {
    let fallback = || EnvFilter::new(directives_for(verbosity));
    match rust_log.map(str::trim).filter(|s| !s.is_empty()) {
        None => (fallback(), None),
        Some(spec) => match EnvFilter::try_new(spec) {
            Ok(filter) => (filter, None),
            Err(err) => (
                fallback(),
                Some(format!(
                    "ignoring RUST_LOG: it is not a valid filter ({err}); using the -v filter"
                )),
            ),
        },
    }
}

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

    use super::*;
    use tracing::Level;

    /// The `-v` table is exactly the contract's, with the quieter default of issue 11 § 7:
    /// warnings only, no `INFO` of apiary's own targets until `-v`.
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

    /// Issue 11 § 7: by default apiary's warnings show but its `INFO` lines (which a deploy's
    /// progress and result already say) do not; `-v` adds them.
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
