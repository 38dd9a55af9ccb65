//! Tests of the module-cycle rule on small crates written to a scratch directory.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

/// A scratch crate: `files` as `(path under src/, text)`; removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(files: &[(&str, &str)]) -> Scratch {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "xtask-cycles-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        for (path, text) in files {
            let file = dir.join("src").join(path);
            std::fs::create_dir_all(file.parent().expect("has a parent")).expect("mkdir");
            std::fs::write(&file, text).expect("write");
        }
        Scratch(dir)
    }

    fn root(&self) -> PathBuf {
        self.0.join("src/lib.rs")
    }

    /// The cycles of the crate, each as its module names joined by ` -> `.
    fn cycles(&self) -> Vec<String> {
        let modules = load_crate(&self.root()).expect("loads");
        cycles(&modules)
            .iter()
            .map(|c| {
                let mut text = c
                    .path
                    .iter()
                    .map(|m| display(m))
                    .collect::<Vec<_>>()
                    .join(" -> ");
                if !c.others.is_empty() {
                    let others: Vec<String> = c.others.iter().map(|m| display(m)).collect();
                    text.push_str(&format!(" + {}", others.join(", ")));
                }
                text
            })
            .collect()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // A leftover scratch directory in the temp dir harms nothing.
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Two sibling modules that use each other (one in a `use`, one in code) are a cycle.
#[test]
fn sibling_modules_using_each_other_are_a_cycle() {
    let s = Scratch::new(&[
        ("lib.rs", "//! x\nmod a;\nmod b;\n"),
        ("a.rs", "use crate::b::B;\npub fn f() -> B { B }\n"),
        ("b.rs", "pub struct B;\npub fn g() { crate::a::f(); }\n"),
    ]);
    assert_eq!(s.cycles(), vec!["a -> b".to_owned()]);
}

/// A chain of three is reported once, as one cycle through all of them.
#[test]
fn a_longer_cycle_is_reported_once() {
    let s = Scratch::new(&[
        ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
        ("a.rs", "use crate::b::B;\n"),
        ("b.rs", "pub struct B;\nuse crate::c::C;\n"),
        ("c.rs", "pub struct C;\nuse crate::{a};\n"),
    ]);
    assert_eq!(s.cycles(), vec!["a -> b -> c".to_owned()]);
}

/// Dependencies that point one way are no cycle.
#[test]
fn a_layered_crate_passes() {
    let s = Scratch::new(&[
        ("lib.rs", "mod a;\nmod b;\npub use a::A;\n"),
        ("a.rs", "use crate::b::B;\npub struct A(B);\n"),
        ("b.rs", "pub struct B;\n"),
    ]);
    assert!(s.cycles().is_empty(), "{:?}", s.cycles());
}

/// What only tests use is left out: a `#[cfg(test)]` module and a test-only `use`.
#[test]
fn test_code_is_left_out() {
    let s = Scratch::new(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        (
            "a.rs",
            "pub fn f() {}\n#[cfg(test)]\nmod tests;\n#[cfg(all(test, unix))]\nuse crate::b::g;\n",
        ),
        ("a/tests.rs", "use crate::b::g;\n"),
        ("b.rs", "pub fn g() { crate::a::f() }\n"),
    ]);
    assert!(s.cycles().is_empty(), "{:?}", s.cycles());
}

/// A path through a re-export lands on the module defining the item, not on the root: here the
/// cycle is a -> b, and the root (which only re-exports) is not on it.
#[test]
fn re_exports_are_followed_to_the_defining_module() {
    let s = Scratch::new(&[
        ("lib.rs", "mod a;\nmod b;\npub use b::Thing;\n"),
        ("a.rs", "use crate::Thing;\npub fn f(_: Thing) {}\n"),
        ("b.rs", "pub struct Thing;\nfn g() { super::a::f(Thing) }\n"),
    ]);
    assert_eq!(s.cycles(), vec!["a -> b".to_owned()]);
}

/// A parent using its child and the child using the parent through `super::` is a cycle;
/// declaring the child alone is not an edge.
#[test]
fn parent_and_child_can_form_a_cycle() {
    let s = Scratch::new(&[
        ("lib.rs", "mod p;\n"),
        ("p.rs", "mod c;\npub struct P;\npub fn f() { c::g() }\n"),
        ("p/c.rs", "pub fn g() { let _ = super::P; }\n"),
    ]);
    assert_eq!(s.cycles(), vec!["p -> p::c".to_owned()]);
    let s = Scratch::new(&[
        ("lib.rs", "mod p;\n"),
        ("p.rs", "mod c;\npub struct P;\n"),
        ("p/c.rs", "use super::P;\n"),
    ]);
    assert!(s.cycles().is_empty(), "{:?}", s.cycles());
}

/// Paths inside macro invocations count (macro bodies are not parsed as code).
#[test]
fn paths_inside_macros_count() {
    let s = Scratch::new(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        (
            "a.rs",
            "pub fn f() -> u8 { 1 }\nfn h() { let _ = crate::b::G; }\n",
        ),
        (
            "b.rs",
            "pub const G: u8 = 0;\nfn g() { println!(\"{}\", crate::a::f()); }\n",
        ),
    ]);
    assert_eq!(s.cycles(), vec!["a -> b".to_owned()]);
}

/// `mod x;` finds `x/mod.rs` as well as `x.rs`, and inline modules are modules.
#[test]
fn mod_rs_files_and_inline_modules_are_modules() {
    let s = Scratch::new(&[
        (
            "lib.rs",
            "mod a;\nmod inline { pub fn i() { crate::a::f() } }\n",
        ),
        ("a/mod.rs", "pub fn f() {}\nfn g() { crate::inline::i() }\n"),
    ]);
    assert_eq!(s.cycles(), vec!["a -> inline".to_owned()]);
}

/// The problem names the target, the cycle back to its start, and the files.
#[test]
fn the_problem_names_the_crate_the_cycle_and_the_files() {
    let s = Scratch::new(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a.rs", "use crate::b::B;\n"),
        ("b.rs", "pub struct B;\nuse crate::a;\n"),
    ]);
    let metadata = serde_json::json!({"packages": [{"targets": [
        {"name": "demo", "kind": ["lib"], "src_path": s.root().display().to_string()},
        {"name": "demo_tests", "kind": ["test"], "src_path": "/nonexistent/tests.rs"},
    ]}]});
    let problems = check_allowing(&s.0, &metadata, &[]);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].starts_with("demo: module cycle a -> b -> a (src/a.rs, src/b.rs): break it"),
        "{problems:?}"
    );
}

/// An allowed cycle passes; an entry matching no cycle is a problem, so the list only shrinks.
#[test]
fn the_allow_list_only_shrinks() {
    let s = Scratch::new(&[
        ("lib.rs", "mod a;\nmod b;\nmod c;\n"),
        ("a.rs", "use crate::b::B;\n"),
        ("b.rs", "pub struct B;\nuse crate::a;\n"),
        ("c.rs", "\n"),
    ]);
    let metadata = serde_json::json!({"packages": [{"targets": [
        {"name": "demo", "kind": ["lib"], "src_path": s.root().display().to_string()},
    ]}]});
    assert!(check_allowing(&s.0, &metadata, &[("demo", "b", "x")]).is_empty());
    let problems = check_allowing(&s.0, &metadata, &[("demo", "b", "x"), ("demo", "c", "y")]);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].starts_with("demo: a module cycle through c is allowed (y) but there is none"),
        "{problems:?}"
    );
}
