//! The `apiary-apiserver-sim` binary: it prints the URL on stdout, writes a kubeconfig to the
//! given path with the namespace on its context, creates that namespace, and serves.
//!
//! Layer: a test of the built binary; it never contacts a real cluster and stops the child it
//! started.

use std::process::Stdio;

use crate::common::get;
use tokio::io::AsyncBufReadExt;

/// The binary prints `http://127.0.0.1:<port>`, writes the kubeconfig and serves the namespace.
#[tokio::test]
async fn binary_prints_url_writes_kubeconfig_and_serves() {
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("config");
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_apiary-apiserver-sim"))
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["--namespace", "demo", "--time-scale", "100"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("binary starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let url = tokio::time::timeout(std::time::Duration::from_secs(10), lines.next_line())
        .await
        .expect("a URL within 10 s")
        .expect("readable")
        .expect("a line");
    let addr = url
        .strip_prefix("http://")
        .expect("http URL")
        .parse()
        .expect("socket address");
    let text = std::fs::read_to_string(&kubeconfig).expect("kubeconfig written");
    assert!(text.contains(&format!("server: \"{url}\"")), "{text}");
    assert!(text.contains("namespace: \"demo\""), "{text}");
    assert_eq!(get(addr, "/api/v1/namespaces/demo").await.status, 200);
    child.kill().await.expect("stopped");
}
