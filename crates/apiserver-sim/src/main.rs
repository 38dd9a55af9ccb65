//! `apiary-apiserver-sim`: runs the loopback apiserver simulator for manual use, prints its URL
//! and writes a kubeconfig pointing at it, then serves until interrupted.
//!
//! Layer: a thin binary over the library. It never touches `~/.kube/config` unless that path is
//! given explicitly.

use std::path::PathBuf;

use apiary_apiserver_sim::{SimOptions, Simulator};
use clap::Parser;

/// Serve a simulated Kubernetes API (namespaces, pods, Secrets) on 127.0.0.1.
#[derive(Debug, Parser)]
#[command(name = "apiary-apiserver-sim", version)]
struct Args {
    /// Write a kubeconfig pointing at the simulator to this path.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// The namespace on the kubeconfig's context; it is also created in the simulator.
    #[arg(short, long, default_value = "default")]
    namespace: String,
    /// Model seconds per real second (1000 makes a 60 s grace period take 60 ms).
    #[arg(long, default_value_t = 1.0)]
    time_scale: f64,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let sim = match Simulator::start(SimOptions::default().with_time_scale(args.time_scale)).await {
        Ok(sim) => sim,
        Err(e) => {
            eprintln!("apiary-apiserver-sim: cannot bind a loopback port: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    sim.ensure_namespace(&args.namespace);
    if let Some(path) = &args.kubeconfig {
        if let Err(e) = sim.write_kubeconfig(path, &args.namespace) {
            eprintln!(
                "apiary-apiserver-sim: cannot write kubeconfig {}: {e}",
                path.display()
            );
            return std::process::ExitCode::FAILURE;
        }
        eprintln!("kubeconfig written to {}", path.display());
    }
    println!("{}", sim.url());
    // Serve until Ctrl-C; a failure to install the handler also ends the process.
    let _ = tokio::signal::ctrl_c().await;
    sim.shutdown();
    std::process::ExitCode::SUCCESS
}
