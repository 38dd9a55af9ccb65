//! `cargo run -p apiary-envtest --example apiary_node -- [--keep] -- COMMAND [ARGS...]`: starts the real node (crates/envtest/README.md
//! § The real node), runs COMMAND with `APIARY_NODE` naming it, stops the node by PID and exits
//! with COMMAND's status. When the machine cannot run a node (not root, a package missing) it
//! says so in one line and runs COMMAND without one, so the node tier skips; with
//! `APIARY_NODE_REQUIRED=1` that is a failure instead. `--keep` keeps the node's directory (its
//! logs) after the stop.
//!
//! With `KUBEBUILDER_ASSETS` set it also starts one control plane for the real-server tier's
//! tests to share (`ControlPlane::start_shared`) and names it in `APIARY_PLANE`, so each test
//! process attaches to it instead of starting its own (crates/envtest/README.md § One control
//! plane per run). If it cannot start, the tests start their own, as without the wrapper.
//!
//! Layer: test support, a process wrapper. It decides nothing about apiary.

use std::process::{Command, ExitCode};

use apiary_envtest::node::{self, Decision, NODE_VAR, Node};
use apiary_envtest::{ControlPlane, PLANE_VAR};

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let keep = args.first().is_some_and(|a| a == "--keep");
    if keep {
        args.remove(0);
    }
    if args.first().is_some_and(|a| a == "--") {
        args.remove(0);
    }
    let Some((program, rest)) = args.split_first() else {
        eprintln!("usage: apiary-node [--keep] -- COMMAND [ARGS...]");
        return ExitCode::from(2);
    };
    let running = match node::check_machine() {
        Decision::Run => {
            let assets = std::env::var_os("KUBEBUILDER_ASSETS").filter(|v| !v.is_empty());
            match Node::start(
                &node::recipe_dir(),
                assets.as_deref().map(std::path::Path::new),
                keep,
            ) {
                Ok(node) => {
                    eprintln!(
                        "apiary-node: node {} ready in {:.1} s at {} ({})",
                        node::NODE_NAME,
                        node.info().started_in_ms as f64 / 1000.0,
                        node.info().server_url,
                        node.info().dir.display()
                    );
                    Some(node)
                }
                Err(error) => {
                    eprintln!("apiary-node: the node did not start: {error}");
                    return ExitCode::FAILURE;
                }
            }
        }
        Decision::Skip(line) => {
            eprintln!("apiary-node: {line}");
            None
        }
        Decision::Fail(message) => {
            eprintln!("apiary-node: {message}");
            return ExitCode::FAILURE;
        }
    };
    let plane = shared_plane();
    let mut command = Command::new(program);
    command.args(rest);
    if let Some(node) = &running {
        command.env(NODE_VAR, &node.info().dir);
    }
    if let Some(plane) = &plane {
        command.env(PLANE_VAR, plane.dir());
    }
    let status = command.status();
    // The node stops here (its watchdog runs the recipe's stop.sh), after COMMAND's output.
    drop(running);
    drop(plane);
    match status {
        Ok(status) => ExitCode::from(status.code().map_or(1, |c| u8::try_from(c).unwrap_or(1))),
        Err(error) => {
            eprintln!("apiary-node: cannot run {program}: {error}");
            ExitCode::FAILURE
        }
    }
}

/// The control plane the tests share, when `KUBEBUILDER_ASSETS` names the binaries; `None`
/// (said in one line when it failed) leaves each test to start its own.
fn shared_plane() -> Option<ControlPlane> {
    let assets = std::env::var_os("KUBEBUILDER_ASSETS").filter(|v| !v.is_empty())?;
    match ControlPlane::start_shared(std::path::Path::new(&assets)) {
        Ok(plane) => {
            eprintln!(
                "apiary-node: shared control plane ready in {:.1} s at {}",
                plane.started_in().as_secs_f64(),
                plane.server_url()
            );
            Some(plane)
        }
        Err(error) => {
            eprintln!("apiary-node: no shared control plane, each test starts its own: {error}");
            None
        }
    }
}
