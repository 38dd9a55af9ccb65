//! Feature hygiene of seed discovery (seeds.md § Cargo feature tellus; K38): without the
//! `tellus` feature no `tellus` crate is in `apiary-seeds-kube`'s dependency tree, with it
//! there is.
//!
//! Runs `cargo tree --offline` on this workspace; contacts no network and no cluster.

use std::process::Command;

fn normal_tree(features: &[&str]) -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(cargo);
    command.current_dir(env!("CARGO_MANIFEST_DIR")).args([
        "tree",
        "--offline",
        "-p",
        "apiary-seeds-kube",
        "-e",
        "normal",
        "--prefix",
        "none",
    ]);
    for feature in features {
        command.args(["--features", feature]);
    }
    let output = command.output().expect("cargo tree runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("utf-8 tree")
}

fn has_tellus(tree: &str) -> bool {
    tree.lines().any(|line| line.starts_with("tellus "))
}

/// K38: the `tellus` crate is compiled only when the feature asks for it.
#[test]
fn k38_tellus_only_with_the_feature() {
    assert!(
        !has_tellus(&normal_tree(&[])),
        "tellus leaked into the default build"
    );
    assert!(
        has_tellus(&normal_tree(&["tellus"])),
        "the feature must bring tellus in"
    );
}
