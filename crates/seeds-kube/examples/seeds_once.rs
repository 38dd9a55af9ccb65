//! One list-mode seeds resolve with a chosen page size, as a child process the real-server
//! benchmark (`crates/envtest/examples/bench_real.rs`) measures: wall, CPU, peak RSS, requests
//! and bytes received. Compression follows the kubeconfig (`disable-compression: true` on the
//! cluster turns kube's `Accept-Encoding: gzip` off), so one fixture compares both.
//!
//! Usage (a measurement tool, not a test): `seeds_once KUBECONFIG SELECTOR PORT_NAME PAGE_SIZE`.
//! Prints the number of addresses and this process's peak RSS (`VmHWM`, KiB) on one line. It
//! talks only to the server the kubeconfig names (loopback in the benchmark) and prints no
//! credential.

use std::num::NonZeroU32;
use std::process::ExitCode;

use apiary_seeds::{Pods, Port};
use apiary_seeds_kube::{PodSeeds, SeedsMode, SeedsOptions};
use kube::config::{KubeConfigOptions, Kubeconfig};

fn vm_hwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmHWM:"))?.to_owned();
            line.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(0)
}

async fn resolve(
    kubeconfig: &str,
    selector: &str,
    port_name: &str,
    page_size: NonZeroU32,
) -> Result<usize, String> {
    let kubeconfig = Kubeconfig::read_from(kubeconfig).map_err(|e| e.to_string())?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(|e| e.to_string())?;
    let client = kube::Client::try_from(config).map_err(|e| e.to_string())?;
    let pods = Pods {
        namespace: None,
        label_selector: selector.to_owned(),
        port: Port::Name(port_name.to_owned()),
    };
    let mut seeds = PodSeeds::with_client(pods, client)
        .map_err(|e| e.to_string())?
        .with_options(SeedsOptions {
            page_size,
            mode: SeedsMode::List,
        });
    seeds
        .resolve()
        .await
        .map(|a| a.len())
        .map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let [kubeconfig, selector, port_name, page_size] = argv.as_slice() else {
        eprintln!("usage: seeds_once KUBECONFIG SELECTOR PORT_NAME PAGE_SIZE");
        return ExitCode::FAILURE;
    };
    let Some(page_size) = page_size.parse().ok().and_then(NonZeroU32::new) else {
        eprintln!("PAGE_SIZE must be a positive integer");
        return ExitCode::FAILURE;
    };
    let _already_installed = rustls::crypto::ring::default_provider().install_default();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(resolve(kubeconfig, selector, port_name, page_size)) {
        Ok(n) => {
            println!("{n} {}", vm_hwm_kib());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("seeds_once: {e}");
            ExitCode::FAILURE
        }
    }
}
