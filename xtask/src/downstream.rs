//! The downstream crates of `tests/downstream/` (tests/downstream/README.md): crates outside the
//! workspace that use apiary's libraries as a user's crate would, each with its own lock file and
//! its own k8s-openapi version feature. `cargo xtask ci` builds and runs each, then checks with
//! `cargo tree` that it pulls in exactly what it asked for.
//!
//! Developer tool: it shells out to cargo. The dependency-set rule is a pure function over
//! `cargo tree` output so it is unit-tested without building anything.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// One downstream crate: its folder, the cargo command that exercises it, and what its normal
/// dependency tree may contain.
pub struct Downstream {
    /// Folder name under `tests/downstream/`.
    pub name: &'static str,
    /// `run` (its `main` asserts) or `test` (its tests do).
    pub exercise: &'static str,
    /// Crates that must never appear in its normal dependency tree.
    pub forbidden: &'static [&'static str],
    /// When set, the exact set of crates (by name) of its normal dependency tree.
    pub exact: Option<&'static [&'static str]>,
}

/// Everything a build of `apiary-seeds` alone may need: serde, serde_json, thiserror, tracing and
/// k8s-openapi (with its own jiff and base64); no runtime, no client, no other apiary crate.
const SEEDS_ONLY_TREE: &[&str] = &[
    "apiary-seeds",
    "base64",
    "downstream-seeds-only",
    "itoa",
    "jiff",
    "jiff-core",
    "k8s-openapi",
    "memchr",
    "once_cell",
    "pin-project-lite",
    "proc-macro2",
    "quote",
    "serde",
    "serde_core",
    "serde_derive",
    "serde_json",
    "syn",
    "thiserror",
    "thiserror-impl",
    "tracing",
    "tracing-attributes",
    "tracing-core",
    "unicode-ident",
    "zmij",
];

/// Crates a pure library user must never receive: async runtimes, Kubernetes clients, HTTP and
/// TLS stacks.
const NO_IO: &[&str] = &[
    "tokio",
    "kube",
    "kube-client",
    "kube-core",
    "kube-runtime",
    "hyper",
    "tower",
    "rustls",
    "http",
];

/// The three downstream crates.
pub const DOWNSTREAM: &[Downstream] = &[
    Downstream {
        name: "seeds-only",
        exercise: "run",
        forbidden: NO_IO,
        exact: Some(SEEDS_ONLY_TREE),
    },
    Downstream {
        name: "classify-only",
        exercise: "run",
        forbidden: NO_IO,
        exact: Some(&["apiary-classify", "downstream-classify-only"]),
    },
    // It asked for kube, tellus and seed discovery; the simulator and the model are
    // dev-dependencies only, ring stays the one crypto provider, and none of the deploy crates
    // comes along (apiary-seeds-kube depends on apiary-seeds alone).
    Downstream {
        name: "tellus-seeds",
        exercise: "test",
        forbidden: &[
            "apiary-apiserver-sim",
            "apiary-cluster-model",
            "apiary-classify",
            "apiary-substrate",
            "apiary-substrate-kube",
            "aws-lc-rs",
            "openssl",
        ],
        exact: None,
    },
];

/// Where a check's output goes: the terminal, or a log file (cargo's own stderr included) when
/// the check runs beside the test run.
pub enum Output {
    /// Inherit the terminal.
    Terminal,
    /// Everything into this file.
    File(std::fs::File),
}

impl Output {
    fn stderr(&self) -> Result<std::process::Stdio, String> {
        match self {
            Output::Terminal => Ok(std::process::Stdio::inherit()),
            Output::File(file) => file
                .try_clone()
                .map(std::process::Stdio::from)
                .map_err(|e| format!("could not share the downstream log: {e}")),
        }
    }

    fn say(&mut self, text: &str) {
        use std::io::Write as _;
        match self {
            Output::Terminal => eprintln!("{text}"),
            // A log line lost to a full disk is not worth failing the check for.
            Output::File(file) => drop(writeln!(file, "{text}")),
        }
    }
}

/// Build and exercise every downstream crate with `--locked` in `target/downstream`, print its
/// normal `cargo tree`, and check the tree against its rules. `nice`: at the lowest CPU priority
/// (`cargo xtask ci` runs it beside the test run, which leaves a core idle for much of its time
/// but must not be slowed by it). Its own target directory: the test run's `cargo` invocations
/// must never wait on its build lock, and it shares little with the workspace's build anyway
/// (its own lock files and k8s-openapi version features).
pub fn check_all(root: &Path, nice: bool, mut output: Output) -> Result<(), String> {
    let target = root.join("target").join("downstream");
    for downstream in DOWNSTREAM {
        let manifest = root
            .join("tests")
            .join("downstream")
            .join(downstream.name)
            .join("Cargo.toml");
        let mut cargo = |args: &[&str]| -> Result<String, String> {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
            let mut command = if nice {
                let mut command = Command::new("nice");
                command.args(["-n", "19"]).arg(cargo);
                command
            } else {
                Command::new(cargo)
            };
            command
                .args(args)
                .arg("--manifest-path")
                .arg(&manifest)
                .arg("--locked")
                .env("CARGO_TARGET_DIR", &target)
                .current_dir(root);
            output.say(&format!("xtask: {command:?}"));
            let finished = command
                .stderr(output.stderr()?)
                .output()
                .map_err(|e| format!("could not run cargo {}: {e}", args.join(" ")))?;
            let stdout = String::from_utf8_lossy(&finished.stdout).into_owned();
            if finished.status.success() {
                Ok(stdout)
            } else {
                Err(format!(
                    "downstream {}: `cargo {}` failed ({})\n{stdout}",
                    downstream.name,
                    args.join(" "),
                    finished.status
                ))
            }
        };
        let exercised = cargo(&[downstream.exercise])?;
        let tree = cargo(&["tree", "-e", "normal"])?;
        output.say(exercised.trim_end());
        output.say(&format!(
            "xtask: cargo tree -e normal of tests/downstream/{}:\n{tree}",
            downstream.name
        ));
        let problems = tree_problems(downstream, &tree);
        if !problems.is_empty() {
            return Err(format!(
                "downstream {}:\n{}",
                downstream.name,
                problems.join("\n")
            ));
        }
    }
    Ok(())
}

/// The crate names in `cargo tree` output (any prefix style; `(*)` repeats included once).
pub fn tree_crates(tree: &str) -> BTreeSet<String> {
    tree.lines()
        .filter_map(|line| {
            let start = line.find(|c: char| c.is_ascii_alphanumeric())?;
            let rest = &line[start..];
            // Lines look like `name v1.2.3 (path) (*)`; anything else is not a package line.
            let (name, version) = rest.split_once(' ')?;
            version.starts_with('v').then(|| name.to_owned())
        })
        .collect()
}

/// What is wrong with one downstream crate's normal dependency tree: a forbidden crate, and,
/// when an exact set is given, every crate missing from it or added to it.
pub fn tree_problems(downstream: &Downstream, tree: &str) -> Vec<String> {
    let found = tree_crates(tree);
    let mut problems = Vec::new();
    if found.is_empty() {
        problems.push("cargo tree listed no crates".to_owned());
    }
    for forbidden in downstream.forbidden {
        if found.contains(*forbidden) {
            problems.push(format!("pulls in {forbidden}, which it never asked for"));
        }
    }
    if let Some(exact) = downstream.exact {
        let expected: BTreeSet<String> = exact.iter().map(|s| (*s).to_owned()).collect();
        for extra in found.difference(&expected) {
            if !downstream.forbidden.contains(&extra.as_str()) {
                problems.push(format!(
                    "pulls in {extra}, which is not in its expected set"
                ));
            }
        }
        for missing in expected.difference(&found) {
            problems.push(format!(
                "no longer pulls in {missing}: update the expected set in xtask/src/downstream.rs"
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    const TREE: &str = "\
downstream-classify-only v0.0.0 (/w/tests/downstream/classify-only)
└── apiary-classify v0.1.0 (/w/crates/classify)
";

    /// Names are read from every tree line, indentation and `(*)` markers aside.
    #[test]
    fn tree_lines_give_crate_names() {
        let tree = "a v0.1.0 (/p)\n├── b v1.0.0\n│   └── c v2.0.0 (*)\n└── b v1.0.0 (*)\n\n";
        let names: Vec<String> = tree_crates(tree).into_iter().collect();
        assert_eq!(names, ["a", "b", "c"]);
    }

    /// The exact set passes as is; tokio (forbidden) and an unexpected crate are each reported,
    /// and so is a crate of the set that disappeared.
    #[test]
    fn forbidden_extra_and_missing_crates_are_reported() {
        let classify = &DOWNSTREAM[1];
        assert_eq!(classify.name, "classify-only");
        assert!(tree_problems(classify, TREE).is_empty());

        let grown = format!("{TREE}    └── tokio v1.0.0\n    └── left-pad v0.1.0\n");
        let problems = tree_problems(classify, &grown);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("tokio, which it never asked for"));
        assert!(problems[1].contains("left-pad, which is not in its expected set"));

        let shrunk = "downstream-classify-only v0.0.0 (/w)\n";
        let problems = tree_problems(classify, shrunk);
        assert_eq!(
            problems,
            [
                "no longer pulls in apiary-classify: update the expected set in xtask/src/downstream.rs"
            ]
        );
    }

    /// Both pure-library crates forbid tokio and kube; an empty tree is never a pass.
    #[test]
    fn pure_library_users_forbid_runtime_and_client() {
        for downstream in &DOWNSTREAM[..2] {
            assert!(
                downstream.forbidden.contains(&"tokio"),
                "{}",
                downstream.name
            );
            assert!(
                downstream.forbidden.contains(&"kube"),
                "{}",
                downstream.name
            );
            assert!(downstream.exact.is_some(), "{}", downstream.name);
        }
        assert!(!tree_problems(&DOWNSTREAM[2], "").is_empty());
    }

    /// The tellus user of seed discovery receives no deploy crate: a tree with
    /// `apiary-substrate-kube` (and what it brings) is reported, one with `apiary-seeds-kube` and
    /// `apiary-seeds` alone is not.
    #[test]
    fn the_seeds_user_gets_no_deploy_code() {
        let tellus = &DOWNSTREAM[2];
        assert_eq!(tellus.name, "tellus-seeds");
        let lean = "\
downstream-tellus-seeds v0.0.0 (/w/tests/downstream/tellus-seeds)
├── apiary-seeds-kube v0.1.0 (/w/crates/seeds-kube)
│   └── apiary-seeds v0.1.0 (/w/crates/seeds)
└── tellus v0.5.0
";
        assert!(tree_problems(tellus, lean).is_empty());
        let heavy = format!(
            "{lean}\
└── apiary-substrate-kube v0.1.0 (/w/crates/substrate-kube)
    └── apiary-substrate v0.1.0 (/w/crates/substrate)
        └── apiary-classify v0.1.0 (/w/crates/classify)
"
        );
        let problems = tree_problems(tellus, &heavy);
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].contains("apiary-classify"), "{problems:?}");
    }
}
