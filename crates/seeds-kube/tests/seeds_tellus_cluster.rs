//! A real three-node tellus cluster formed through `PodSeeds` discovery against the loopback
//! apiserver simulator (seeds.md § Cargo feature tellus, § The consumer contract behind the rules;
//! scenario K38 end to end).
//!
//! tellus 0.5 allows one cluster endpoint per process, so each node is a child process: this
//! test binary re-running its own test with [`NODE_ENV`] naming the node. A node binds a QUIC
//! endpoint on `127.0.0.1:0` with tellus's self-signed dev transport (feature `cluster-dev`,
//! reached only through our test-only feature `tellus-cluster-test`), reports its port, and
//! bootstraps through a `PodSeeds` built by `PodSeeds::new` from the simulator's kubeconfig. The
//! parent then inserts one pod per node whose named container port `cluster` is that node's port,
//! plus two decoys that must not count. Every node must report the same three-member cluster.
//!
//! Layer: end-to-end test of the tellus adapter. Networking only on 127.0.0.1. It must never
//! leave a process behind: children are killed when the parent unwinds or finishes, and a child
//! exits by itself when the parent's end of its stdin closes or its own deadline passes.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr};
use std::num::NonZeroUsize;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread;
use std::time::{Duration, Instant};

use apiary_apiserver_sim::{Resource, SimOptions, Simulator, Verb};
use apiary_seeds::{Pods, Port};
use apiary_seeds_kube::{PodSeeds, SeedsMode, SeedsOptions};
use k8s_openapi::api::core::v1::Pod;
use tellus::cluster::transport::QuicTransport;
use tellus::cluster::{self, BootstrapConfig, EndpointConfig};

/// Set on a child to the index of the node it plays; absent in the parent.
const NODE_ENV: &str = "APIARY_TELLUS_CLUSTER_NODE";
/// The test a child re-runs: the one below.
const TEST_NAME: &str = "k38_three_tellus_nodes_form_one_cluster_through_pod_seeds";
const NAMESPACE: &str = "tellus-ring";
const APP: &str = "tellus-ring";
const PORT_NAME: &str = "cluster";
const NODES: usize = 3;
/// The node running `PodSeeds` in watch mode; the others list on every resolve.
const WATCH_NODE: usize = 2;

/// From the pods' insertion until every node reports the full cluster. Formation takes about a
/// second (settle 300 ms, resolves every 100 ms); the rest is slack for a loaded 2-core machine.
const CLUSTER_BOUND: Duration = Duration::from_secs(30);
/// For the children to start and bind their endpoints.
const BIND_BOUND: Duration = Duration::from_secs(30);
/// For the children to exit once released.
const EXIT_BOUND: Duration = Duration::from_secs(10);
/// A child's own lifetime bound, so an orphan (parent SIGKILLed, stdin somehow open) still ends.
const NODE_DEADLINE: Duration = Duration::from_secs(90);

const BOUND_PREFIX: &str = "TELLUS-NODE-BOUND ";
const UP_PREFIX: &str = "TELLUS-NODE-UP ";
const FAILED_PREFIX: &str = "TELLUS-NODE-FAILED ";

/// K38 end to end: three tellus nodes, each discovering its peers only through `PodSeeds` (two in
/// list mode, one in watch mode) against the simulator, form one cluster whose Up members are
/// exactly the three pods' `podIP:cluster-port`; a finished and a terminating pod with the lowest
/// addresses do not count (were either listed, tellus's lowest-address formation rule would wait
/// on an address nobody answers at, and no cluster would form within the bound).
#[test]
fn k38_three_tellus_nodes_form_one_cluster_through_pod_seeds() {
    if let Ok(index) = std::env::var(NODE_ENV) {
        node::run(&index);
        return;
    }

    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let sim = runtime
        .block_on(Simulator::start(SimOptions::default()))
        .expect("simulator on 127.0.0.1");
    sim.ensure_namespace(NAMESPACE);
    let dir = tempfile::tempdir().expect("temporary directory");
    let kubeconfig = dir.path().join("kubeconfig");
    sim.write_kubeconfig(&kubeconfig, NAMESPACE)
        .expect("kubeconfig written");

    // Declared after the simulator, so the children are killed before it stops serving.
    let mut nodes = Nodes::spawn(&kubeconfig);
    let bound: Vec<SocketAddr> = nodes
        .await_all(BOUND_PREFIX, Instant::now() + BIND_BOUND)
        .iter()
        .map(|addr| addr.parse().expect("a bound socket address"))
        .collect();
    for addr in &bound {
        assert_eq!(addr.ip(), Ipv4Addr::LOCALHOST, "nodes bind loopback only");
    }

    let inserted = Instant::now();
    sim.with_model(|model| {
        for (index, addr) in bound.iter().enumerate() {
            let pod = node_pod(&format!("node-{index}"), addr.port(), "Running", false);
            model.insert_pod(pod).expect("node pod inserted");
        }
        // The two lowest possible addresses, so a leak of either into the resolved set decides
        // who forms: tellus's Majority forms only at the lowest address of the universe.
        let finished = node_pod("finished", 1, "Succeeded", false);
        model.insert_pod(finished).expect("finished pod inserted");
        let terminating = node_pod("terminating", 2, "Running", true);
        model
            .insert_pod(terminating)
            .expect("terminating pod inserted");
    });

    let reports = nodes.await_all(UP_PREFIX, inserted + CLUSTER_BOUND);
    let formed_in = inserted.elapsed();
    let mut expected = bound.clone();
    expected.sort();
    let mut cluster_ids = Vec::new();
    for (index, report) in reports.iter().enumerate() {
        let (cluster_id, members) = report
            .split_once(' ')
            .unwrap_or_else(|| panic!("node {index} report {report:?}"));
        let mut members: Vec<SocketAddr> = members
            .split(',')
            .map(|member| member.parse().expect("a member address"))
            .collect();
        members.sort();
        assert_eq!(
            members, expected,
            "node {index} sees exactly the three pods"
        );
        cluster_ids.push(cluster_id.to_owned());
    }
    assert!(
        cluster_ids.iter().all(|id| *id == cluster_ids[0]),
        "one cluster, not several: {cluster_ids:?}"
    );

    // The discovery went through the apiserver: lists by every node, a watch by the watch node.
    let requests = sim.requests();
    let lists = requests
        .iter()
        .filter(|request| request.is(Verb::List, Resource::Pods))
        .count();
    let watches = requests
        .iter()
        .filter(|request| request.is(Verb::Watch, Resource::Pods))
        .count();
    assert!(lists >= NODES, "{lists} pod LISTs");
    assert!(watches >= 1, "{watches} pod WATCHes");

    nodes.release();
    eprintln!("three-node tellus cluster formed {formed_in:?} after the pods appeared");
}

/// A pod of the ring: `podIP` 127.0.0.1 and the named port `cluster` at `port`.
fn node_pod(name: &str, port: u16, phase: &str, terminating: bool) -> Pod {
    let mut pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {"app": APP},
        },
        "spec": {
            "containers": [{
                "name": "node",
                "image": "registry.example/tellus-node:1",
                "ports": [{"name": PORT_NAME, "containerPort": port, "protocol": "UDP"}],
            }],
        },
        "status": {
            "phase": phase,
            "podIP": "127.0.0.1",
            "podIPs": [{"ip": "127.0.0.1"}],
        },
    }))
    .expect("pod JSON");
    if terminating {
        // Far in the future, so the model keeps the pod (marked) for the whole test.
        pod.metadata.deletion_timestamp =
            serde_json::from_value(serde_json::json!("2999-01-01T00:00:00Z"))
                .expect("a deletion timestamp");
    }
    pod
}

/// A child process killed and reaped when dropped, whatever happened before.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        // Already exited is the normal case after `release`; the error then says so.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One line of a node's stdout, or `None` once its stdout closed (it exited).
type NodeLine = (usize, Option<String>);

/// The running nodes, their stdins (closing one tells that node to exit) and their lines.
struct Nodes {
    stdins: Vec<Option<ChildStdin>>,
    lines: Receiver<NodeLine>,
    // Last, so a panic while it is alive still drops (kills) every child.
    children: Vec<KillOnDrop>,
}

impl Nodes {
    fn spawn(kubeconfig: &Path) -> Nodes {
        let exe = std::env::current_exe().expect("the test binary's path");
        let (sender, lines) = mpsc::channel();
        let mut children = Vec::with_capacity(NODES);
        let mut stdins = Vec::with_capacity(NODES);
        for index in 0..NODES {
            let mut child = KillOnDrop(
                Command::new(&exe)
                    .args([TEST_NAME, "--exact", "--nocapture", "--test-threads=1"])
                    .env(NODE_ENV, index.to_string())
                    .env("KUBECONFIG", kubeconfig)
                    // Never the in-cluster configuration, even when this runs inside a pod.
                    .env_remove("KUBERNETES_SERVICE_HOST")
                    .env_remove("KUBERNETES_SERVICE_PORT")
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::inherit())
                    .spawn()
                    .expect("node process"),
            );
            stdins.push(child.0.stdin.take());
            let stdout = child.0.stdout.take().expect("piped stdout");
            forward_lines(index, stdout, sender.clone());
            children.push(child);
        }
        Nodes {
            stdins,
            lines,
            children,
        }
    }

    /// The rest of the first line with `prefix` from every node, by node index; panics (killing
    /// every node) at the deadline, on a node's failure report, or when a node exits first.
    fn await_all(&mut self, prefix: &str, deadline: Instant) -> Vec<String> {
        let mut found: Vec<Option<String>> = vec![None; NODES];
        while found.iter().any(Option::is_none) {
            let remaining = deadline.saturating_duration_since(Instant::now());
            let (index, line) = match self.lines.recv_timeout(remaining) {
                Ok(next) => next,
                Err(_) => {
                    let missing: Vec<usize> = (0..NODES).filter(|i| found[*i].is_none()).collect();
                    panic!("nodes {missing:?} did not report {prefix:?} in time");
                }
            };
            let Some(line) = line else {
                let status = self.children[index].0.wait().ok();
                panic!("node {index} exited ({status:?}) before reporting {prefix:?}");
            };
            // libtest's "test <name> ... " has no newline, so a report may follow it on a line.
            if let Some((_, failure)) = line.split_once(FAILED_PREFIX) {
                panic!("node {index} failed: {failure}");
            }
            if let Some((_, rest)) = line.split_once(prefix) {
                found[index].get_or_insert_with(|| rest.to_owned());
            }
        }
        found.into_iter().flatten().collect()
    }

    /// Closes every stdin (the nodes' signal to exit) and asserts each exits cleanly in time.
    fn release(mut self) {
        self.stdins.clear();
        let deadline = Instant::now() + EXIT_BOUND;
        for (index, child) in self.children.iter_mut().enumerate() {
            let status = wait_until(&mut child.0, deadline);
            assert!(
                status.is_some_and(|status| status.success()),
                "node {index} exit status {status:?}"
            );
        }
    }
}

/// Forwards a node's stdout line by line, then `None` once it closes.
fn forward_lines(index: usize, stdout: impl Read + Send + 'static, sender: Sender<NodeLine>) {
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if sender.send((index, Some(line))).is_err() {
                return;
            }
        }
        // The receiver may be gone when the parent already finished; nothing to tell then.
        let _ = sender.send((index, None));
    });
}

/// The exit status if the child exits before the deadline.
fn wait_until(child: &mut Child, deadline: Instant) -> Option<ExitStatus> {
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// The child side: one tellus node.
mod node {
    use super::*;

    type NodeError = Box<dyn std::error::Error + Send + Sync>;

    /// Runs node `index` and exits the process: 0 once released by the parent, 1 on failure.
    pub(super) fn run(index: &str) {
        exit_when_stdin_closes();
        // Silent unless `RUST_LOG` asks (e.g. `RUST_LOG=tellus=debug`): diagnosis of a failure.
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .init();
        let outcome = index
            .parse::<usize>()
            .map_err(NodeError::from)
            .and_then(serve);
        if let Err(error) = outcome {
            report(FAILED_PREFIX, &error.to_string());
            std::process::exit(1);
        }
        std::process::exit(0);
    }

    /// The parent closes our stdin to release us, and so does its death: either way we exit.
    fn exit_when_stdin_closes() {
        thread::spawn(|| {
            // Any read error means the parent's end is gone, the same as end of file.
            let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
            std::process::exit(0);
        });
    }

    fn serve(index: usize) -> Result<(), NodeError> {
        let deadline = tokio::time::Instant::now() + NODE_DEADLINE;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        runtime.block_on(async move {
            let transport = QuicTransport::dev(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))?;
            let addr = transport.local_addr()?;
            cluster::start_endpoint(EndpointConfig::new(addr), transport)?;
            report(BOUND_PREFIX, &addr.to_string());

            // The namespace comes from the kubeconfig's context, the client from $KUBECONFIG.
            let pods = Pods {
                namespace: None,
                label_selector: format!("app={APP}"),
                port: Port::Name(PORT_NAME.to_owned()),
            };
            let mode = if index == WATCH_NODE {
                SeedsMode::Watch
            } else {
                SeedsMode::List
            };
            let seeds = PodSeeds::new(pods).await?.with_options(SeedsOptions {
                mode,
                ..SeedsOptions::default()
            });
            let config = BootstrapConfig {
                min_peers: NonZeroUsize::new(NODES).ok_or("three is not zero")?,
                settle: Duration::from_millis(300),
                resolve_interval: Duration::from_millis(100),
                probe_interval: None,
                ..BootstrapConfig::new()
            };
            tokio::time::timeout_at(deadline, cluster::bootstrap(seeds, config))
                .await
                .map_err(|_| "bootstrap did not finish before the node's deadline")??;

            let mut states = cluster::cluster_state()?;
            let (cluster_id, members) = {
                let state = tokio::time::timeout_at(
                    deadline,
                    states.wait_for(|state| state.up().count() == NODES),
                )
                .await
                .map_err(|_| "the cluster did not reach three Up members in time")??;
                let cluster_id = state.cluster().ok_or("a member names its cluster")?;
                let members: Vec<String> =
                    state.up().map(|member| member.addr().to_string()).collect();
                (cluster_id, members)
            };
            report(UP_PREFIX, &format!("{cluster_id} {}", members.join(",")));

            // Stay a member until released (stdin closes) so the others can converge too.
            tokio::time::sleep_until(deadline).await;
            Err::<(), NodeError>("never released by the parent".into())
        })
    }

    fn report(prefix: &str, rest: &str) {
        let mut stdout = std::io::stdout().lock();
        // A parent that stopped reading is gone; the stdin watcher ends us then.
        let _ = writeln!(stdout, "{prefix}{rest}");
        let _ = stdout.flush();
    }
}
