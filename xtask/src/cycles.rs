//! The module-cycle rule of `cargo xtask tidy`: inside each crate of the workspace (every `lib`
//! and `bin` target), the graph of which module uses which has no cycle. Reads source files;
//! changes nothing; decides nothing about apiary itself.
//!
//! # The graph
//!
//! The modules are found from the crate root by following `mod name;` declarations (to
//! `name.rs` or `name/mod.rs`, or a `#[path]`) and inline `mod name { … }` blocks. A module
//! under `#[cfg(test)]` (or any `cfg` naming `test`) is left out with everything inside it, as
//! is any other item under such a `cfg`: test code may reach anywhere.
//!
//! An edge `a -> b` means module `a` names a path into module `b`: in a `use` tree, in code, or
//! inside a macro invocation (`crate::…`, `super::…`, `self::…`, or a path starting with the
//! name of one of `a`'s child modules). A path is resolved to the longest module prefix it
//! names; when the rest names an item that module only re-exports (`pub use x::Item` in the
//! crate root), the edge follows the re-export to the module that defines it. Declaring a child
//! (`mod name;`) is not an edge; using what the child defines is, and so is a child using its
//! parent through `super::`.
//!
//! # What fails
//!
//! Every strongly connected component of more than one module is one problem, naming the crate,
//! one cycle through it (`api -> server -> api`) and the file of each module on it. A component
//! still being untangled may be listed in [`ALLOWED`] by one of its modules, with who removes the
//! entry; an entry that matches no component is itself a problem, so the list only shrinks.

mod graph;
mod modules;

use std::path::{Path, PathBuf};

use modules::{Modules, load_crate};

/// Module cycles tolerated for now: (crate target name, a module on the cycle, who removes the
/// entry and why it is still there).
const ALLOWED: &[(&str, &str, &str)] = &[];

/// The problems of every `lib` and `bin` target listed in `cargo metadata` JSON.
pub fn check(root: &Path, metadata: &serde_json::Value) -> Vec<String> {
    check_allowing(root, metadata, ALLOWED)
}

/// [`check`] with the allow-list `allowed`.
fn check_allowing(
    root: &Path,
    metadata: &serde_json::Value,
    allowed: &[(&str, &str, &str)],
) -> Vec<String> {
    let mut problems = Vec::new();
    let mut used = vec![false; allowed.len()];
    for (name, src) in targets(metadata) {
        let shown_root = src.parent().unwrap_or(root).to_path_buf();
        match load_crate(&src) {
            Ok(modules) => {
                for cycle in cycles(&modules) {
                    let on_it = |module: &str| {
                        cycle
                            .path
                            .iter()
                            .chain(&cycle.others)
                            .any(|m| display(m) == module)
                    };
                    let entry = allowed
                        .iter()
                        .position(|(target, module, _)| *target == name && on_it(module));
                    if let Some(index) = entry {
                        used[index] = true;
                        continue;
                    }
                    let files: Vec<String> = cycle
                        .path
                        .iter()
                        .filter_map(|m| modules.get(m))
                        .map(|m| {
                            m.file
                                .strip_prefix(root)
                                .or_else(|_| m.file.strip_prefix(&shown_root))
                                .unwrap_or(&m.file)
                                .display()
                                .to_string()
                        })
                        .collect();
                    let mut names: Vec<String> = cycle.path.iter().map(|m| display(m)).collect();
                    if let Some(first) = names.first().cloned() {
                        names.push(first);
                    }
                    let mut problem = format!(
                        "{name}: module cycle {} ({})",
                        names.join(" -> "),
                        files.join(", ")
                    );
                    if !cycle.others.is_empty() {
                        let others: Vec<String> = cycle.others.iter().map(|m| display(m)).collect();
                        problem.push_str(&format!("; tangled with it: {}", others.join(", ")));
                    }
                    problem.push_str(
                        ": break it (shared items in a module of their own), or list it in \
                         ALLOWED in xtask/src/cycles.rs while it is being untangled",
                    );
                    problems.push(problem);
                }
            }
            Err(e) => problems.push(format!("{name}: {e}")),
        }
    }
    for ((target, module, who), used) in allowed.iter().zip(used) {
        if !used {
            problems.push(format!(
                "{target}: a module cycle through {module} is allowed ({who}) but there is none: \
                 remove its entry from ALLOWED in xtask/src/cycles.rs"
            ));
        }
    }
    problems
}

/// `(target name, root source file)` of every `lib`, `proc-macro` and `bin` target.
fn targets(metadata: &serde_json::Value) -> Vec<(String, PathBuf)> {
    fn array(v: Option<&serde_json::Value>) -> &[serde_json::Value] {
        v.and_then(|v| v.as_array()).map_or(&[], Vec::as_slice)
    }
    let mut found = Vec::new();
    for package in array(metadata.get("packages")) {
        for target in array(package.get("targets")) {
            let crate_like = array(target.get("kind"))
                .iter()
                .any(|k| matches!(k.as_str(), Some("lib" | "bin" | "proc-macro")));
            let name = target.get("name").and_then(|n| n.as_str());
            let src = target.get("src_path").and_then(|s| s.as_str());
            if let (true, Some(name), Some(src)) = (crate_like, name, src) {
                found.push((name.to_owned(), PathBuf::from(src)));
            }
        }
    }
    found
}

/// The module path as written in a cycle (`crate` for the root).
fn display(path: &[String]) -> String {
    if path.is_empty() {
        "crate".to_owned()
    } else {
        path.join("::")
    }
}

/// One cycle found in the graph.
#[derive(Debug)]
struct Cycle {
    /// The modules of a shortest cycle, from the component's first module.
    path: Vec<Vec<String>>,
    /// The other modules of the same strongly connected component (each on some cycle with it).
    others: Vec<Vec<String>>,
}

/// One cycle through each strongly connected component of more than one module, in a stable
/// order (Tarjan's algorithm, then a shortest path back to the component's first module).
fn cycles(modules: &Modules) -> Vec<Cycle> {
    let graph = modules::edges(modules);
    let mut found = Vec::new();
    for component in graph::components(&graph) {
        if component.len() < 2 {
            continue;
        }
        let Some(start) = component.iter().next().cloned() else {
            continue;
        };
        if let Some(path) = graph::shortest_cycle(&graph, &component, &start) {
            let others = component
                .iter()
                .filter(|m| !path.contains(m))
                .cloned()
                .collect();
            found.push(Cycle { path, others });
        }
    }
    found
}

#[cfg(test)]
mod tests;
