//! `buzz-backend-kubernetes`: apiary as the buzz desktop's Kubernetes provider
//! (docs/buzz-provider.md; buzz-provider.md § 2.1).
//!
//! Shell only: reads all of stdin, writes exactly one JSON line on stdout and exits 0 whenever a
//! response was produced; every rule (dispatch, config, identity, environment, the response
//! shapes) lives in `apiary-buzz`, the deploy itself in the unchanged `apiary-substrate` driver
//! over `apiary-substrate-kube`'s `Cluster`. It is a separate executable, not an `apiary`
//! subcommand, because the desktop discovers providers by file name (`buzz-backend-<id>` on its
//! search path) and runs them without arguments.
//!
//! Must not: print anything but the one response on stdout, log an environment value or the
//! nsec (stderr carries diagnostics only, under the same body caps as `apiary`), use any
//! network before the ring rustls provider is installed, or fall back to the in-cluster service
//! account.

use std::io::{Read, Write};
use std::process::ExitCode;

use tracing_subscriber::filter::FilterExt;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{Layer, fmt};

use apiary_buzz::entropy::OsEntropy;
use apiary_buzz::outcome::deploy_response;
use apiary_buzz::path::plugin_path;
use apiary_buzz::plan::plan_deploy;
use apiary_buzz::wire::{self, DeployRequest, Dispatch, Response};
use apiary_substrate::driver::{self, DeployOptions};
use apiary_substrate_kube::Cluster;

// The same filter table and body caps as `apiary`, from the one file that defines them.
#[path = "../logging/filter.rs"]
mod log_filter;

fn main() -> ExitCode {
    // Process-wide, before anything can open a connection: with two rustls providers compiled
    // in, rustls refuses to choose and the first TLS handshake panics.
    apiary_substrate_kube::install_crypto_provider();
    init_logging();
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    if let Some(response) = wire::check_arguments(&args) {
        return write_response(&response);
    }
    let mut input = String::new();
    if let Err(error) = std::io::stdin().read_to_string(&mut input) {
        eprintln!("could not read the request from stdin: {error}");
        return ExitCode::from(1);
    }
    let response = match wire::dispatch(&input, &mut OsEntropy) {
        Dispatch::Answer(response) => response,
        Dispatch::Deploy(request) => run_deploy(&request),
    };
    write_response(&response)
}

/// Step 5 of the dispatch order: a current-thread runtime, then the deploy to completion.
fn run_deploy(request: &DeployRequest) -> Response {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => return Response::error(format!("could not start the runtime: {error}")),
    };
    runtime.block_on(deploy_agent(request))
}

/// `deploy_agent`: the pure steps (config, identity, env), then connect and run the driver.
async fn deploy_agent(request: &DeployRequest) -> Response {
    let plan = match plan_deploy(request, &mut OsEntropy) {
        Ok(plan) => plan,
        Err(error) => return Response::error(error.to_string()),
    };
    // Exec credential plugins (aws, gke-gcloud-auth-plugin) are found through this PATH even
    // when a Finder-launched desktop passed launchd's minimal one.
    let path = plugin_path(
        std::env::var_os("PATH").as_deref(),
        std::env::var_os("HOME").as_deref(),
    );
    let connection =
        match apiary_substrate_kube::connect_kubeconfig_only(plan.context.as_deref(), Some(&path))
            .await
        {
            Ok(connection) => connection,
            Err(error) => return Response::error(error.to_string()),
        };
    // The operation's 600 s clock starts here, after parsing and connecting
    // (buzz-provider.md § 2.4, step 5): no retry starts past it.
    let cluster = Cluster::new(connection.client, plan.config.namespace())
        .with_deadline(plan.config.timeout());
    let options = DeployOptions::for_config(&plan.config);
    deploy_response(driver::deploy(&cluster, &plan.config, &options).await)
}

/// Write the one line; a response that cannot be serialized becomes the hand-built object.
fn write_response(response: &Response) -> ExitCode {
    let line = response
        .to_line()
        .unwrap_or_else(|error| wire::serialize_failure_line(&error.to_string()));
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(line.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("could not write the response to stdout: {error}");
            ExitCode::from(1)
        }
    }
}

/// Diagnostics on stderr: `RUST_LOG` when set and valid, else warnings and errors only (the
/// filter of `apiary` without `-v`). The caps hold whatever the filter says: Secret create
/// bodies carry every env value, and the HTTP-layer targets can print bodies or headers at
/// their finer levels.
fn init_logging() {
    let rust_log = std::env::var("RUST_LOG").ok();
    let (filter, warning) = log_filter::choose_filter(0, rust_log.as_deref());
    let layer = fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_filter(filter.and(log_filter::body_caps()));
    let _ = tracing_subscriber::registry().with(layer).try_init();
    if let Some(warning) = warning {
        tracing::warn!("{warning}");
    }
}
