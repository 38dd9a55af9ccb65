//! The log filter and its hard caps, one definition for both binaries: `apiary` (through
//! `logging`) and `buzz-backend-kubernetes` (which compiles this file as its own module), so the
//! caps that keep Secret bodies out of the logs cannot drift apart. Shell layer; decides only
//! filters.
//!
//! Filter (deploy.md § Global flags, narrowed by § A quieter, more familiar terminal): default
//! `warn` (warnings and errors only: a deploy's progress lines and result already say what its
//! `INFO` lines would repeat); `-v` `apiary=debug,warn` (the log lines, `INFO` included); `-vv`
//! `apiary=trace,debug`; `-vvv` `trace`. `RUST_LOG`, when set and non-empty, replaces it. Below
//! `-vv`, kube's per-request `ERROR failed with error …` lines (`kube_client::client::builder`) are
//! off: every failure reaches the user once, as apiary's own error message, instead of once per
//! retried request.
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

use tracing::level_filters::LevelFilter;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::Targets;

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
