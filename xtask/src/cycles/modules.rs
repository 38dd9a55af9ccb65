//! Reading one crate's module tree from its sources (`mod` declarations, `#[path]`, inline
//! modules; test-only code left out) and the module graph of which module names a path into
//! which, with re-exports followed to the defining module. Part of the module-cycle rule of
//! `cargo xtask tidy`; reads files, changes nothing, decides nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

use super::graph::Graph;

/// One module of a crate: its path from the crate root (`[]` is the root), its file, what it
/// names, and what it binds with `use`.
#[derive(Debug, Default)]
pub(super) struct Module {
    pub(super) file: PathBuf,
    /// The names of its child modules.
    children: BTreeSet<String>,
    /// The names of items it defines (functions, types, constants, …).
    items: BTreeSet<String>,
    /// What each `use` binding name refers to (absolute, without `crate`), for following
    /// re-exports; only bindings to paths inside the crate.
    bindings: BTreeMap<String, Vec<String>>,
    /// Every path it names, relative to itself (as written).
    references: Vec<Vec<String>>,
}

/// A crate's modules by their path from the root.
pub(super) type Modules = BTreeMap<Vec<String>, Module>;

/// Every module of the crate rooted at `src`.
pub(super) fn load_crate(src: &Path) -> Result<Modules, String> {
    let mut modules = Modules::new();
    let dir = src.parent().unwrap_or(Path::new(".")).to_path_buf();
    load_file(src, Vec::new(), dir, &mut modules)?;
    Ok(modules)
}

/// Parses `file` as module `path`; its `mod name;` children live in `child_dir`.
fn load_file(
    file: &Path,
    path: Vec<String>,
    child_dir: PathBuf,
    modules: &mut Modules,
) -> Result<(), String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("{}: unreadable: {e}", file.display()))?;
    let parsed =
        syn::parse_file(&text).map_err(|e| format!("{}: does not parse: {e}", file.display()))?;
    let file_dir = file.parent().unwrap_or(Path::new(".")).to_path_buf();
    load_items(&parsed.items, file, &file_dir, path, child_dir, modules)
}

/// Records module `path` (whose items are `items`, written in `file`) and loads its children.
fn load_items(
    items: &[syn::Item],
    file: &Path,
    file_dir: &Path,
    path: Vec<String>,
    child_dir: PathBuf,
    modules: &mut Modules,
) -> Result<(), String> {
    let mut module = Module {
        file: file.to_path_buf(),
        ..Module::default()
    };
    let mut children = Vec::new();
    for item in items {
        if is_test_only(item_attrs(item)) {
            continue;
        }
        match item {
            syn::Item::Mod(m) => {
                let name = m.ident.to_string();
                module.children.insert(name.clone());
                children.push(m);
            }
            syn::Item::Use(u) => {
                let mut leaves = Vec::new();
                flatten_use(&u.tree, &mut Vec::new(), &mut leaves);
                for (written, bound) in leaves {
                    if let Some(bound) = bound {
                        module.bindings.insert(bound, written.clone());
                    }
                    module.references.push(written);
                }
            }
            other => {
                if let Some(name) = item_name(other) {
                    module.items.insert(name);
                }
                let mut collector = Collector::default();
                collector.visit_item(other);
                module.references.extend(collector.paths);
            }
        }
    }
    modules.insert(path.clone(), module);
    for m in children {
        let name = m.ident.to_string();
        let mut child_path = path.clone();
        child_path.push(name.clone());
        let explicit = path_attr(&m.attrs).map(|p| file_dir.join(p));
        match &m.content {
            Some((_, inline)) => {
                let dir = explicit.unwrap_or_else(|| child_dir.join(&name));
                load_items(inline, file, file_dir, child_path, dir, modules)?;
            }
            None => {
                let (child_file, dir) = match explicit {
                    Some(p) => {
                        let dir = p.parent().unwrap_or(Path::new(".")).to_path_buf();
                        (p, dir)
                    }
                    None => {
                        let flat = child_dir.join(format!("{name}.rs"));
                        if flat.exists() {
                            (flat, child_dir.join(&name))
                        } else {
                            (child_dir.join(&name).join("mod.rs"), child_dir.join(&name))
                        }
                    }
                };
                load_file(&child_file, child_path, dir, modules)?;
            }
        }
    }
    Ok(())
}

/// Whether an item is compiled for tests only: a `cfg` whose predicate names `test`.
fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .meta
                .require_list()
                .is_ok_and(|list| names_test(list.tokens.clone()))
    })
}

/// Whether a `cfg` predicate mentions `test` outside a `not(…)`.
fn names_test(tokens: proc_macro2::TokenStream) -> bool {
    let mut negated = false;
    for token in tokens {
        match token {
            proc_macro2::TokenTree::Ident(i) if i == "not" => negated = true,
            proc_macro2::TokenTree::Ident(i) if i == "test" => return true,
            proc_macro2::TokenTree::Group(g) => {
                if !negated && names_test(g.stream()) {
                    return true;
                }
                negated = false;
            }
            _ => {}
        }
    }
    false
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::ExternCrate(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::ForeignMod(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::TraitAlias(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Union(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

fn item_name(item: &syn::Item) -> Option<String> {
    let ident = match item {
        syn::Item::Const(i) => &i.ident,
        syn::Item::Enum(i) => &i.ident,
        syn::Item::Fn(i) => &i.sig.ident,
        syn::Item::Static(i) => &i.ident,
        syn::Item::Struct(i) => &i.ident,
        syn::Item::Trait(i) => &i.ident,
        syn::Item::TraitAlias(i) => &i.ident,
        syn::Item::Type(i) => &i.ident,
        syn::Item::Union(i) => &i.ident,
        syn::Item::Macro(i) => i.ident.as_ref()?,
        _ => return None,
    };
    Some(ident.to_string())
}

/// The value of a `#[path = "…"]` attribute.
fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|attr| match &attr.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

/// The leaves of a `use` tree: each written path (a glob ends at its module) and the name it
/// binds, if any.
fn flatten_use(
    tree: &syn::UseTree,
    prefix: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            flatten_use(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let name = n.ident.to_string();
            let mut path = prefix.clone();
            if name != "self" {
                path.push(name.clone());
            }
            let bound = if name == "self" {
                prefix.last().cloned()
            } else {
                Some(name)
            };
            out.push((path, bound));
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix.clone();
            if r.ident != "self" {
                path.push(r.ident.to_string());
            }
            out.push((path, Some(r.rename.to_string())));
        }
        syn::UseTree::Glob(_) => out.push((prefix.clone(), None)),
        syn::UseTree::Group(g) => {
            for tree in &g.items {
                flatten_use(tree, prefix, out);
            }
        }
    }
}

/// Collects every path named in an item: in code, in types, and in macro invocations; skips
/// anything under a test-only `cfg`.
#[derive(Default)]
struct Collector {
    paths: Vec<Vec<String>>,
}

impl<'ast> Visit<'ast> for Collector {
    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() && path.segments.len() > 1 {
            self.paths
                .push(path.segments.iter().map(|s| s.ident.to_string()).collect());
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        syn::visit::visit_macro(self, mac);
        macro_paths(mac.tokens.clone(), &mut self.paths);
    }

    fn visit_item(&mut self, item: &'ast syn::Item) {
        if !is_test_only(item_attrs(item)) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !is_test_only(&f.attrs) {
            syn::visit::visit_impl_item_fn(self, f);
        }
    }

    fn visit_stmt(&mut self, stmt: &'ast syn::Stmt) {
        if let syn::Stmt::Item(item) = stmt {
            // A `use` inside a function body names paths too.
            if let syn::Item::Use(u) = item
                && !is_test_only(&u.attrs)
            {
                let mut leaves = Vec::new();
                flatten_use(&u.tree, &mut Vec::new(), &mut leaves);
                self.paths.extend(leaves.into_iter().map(|(p, _)| p));
                return;
            }
        }
        syn::visit::visit_stmt(self, stmt);
    }
}

/// Paths of the form `a::b::c` inside a macro's tokens (macro bodies are not parsed by syn).
fn macro_paths(tokens: proc_macro2::TokenStream, out: &mut Vec<Vec<String>>) {
    let tokens: Vec<proc_macro2::TokenTree> = tokens.into_iter().collect();
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            proc_macro2::TokenTree::Group(g) => {
                macro_paths(g.stream(), out);
                i += 1;
            }
            proc_macro2::TokenTree::Ident(first) => {
                let mut path = vec![first.to_string()];
                let mut j = i + 1;
                while j + 2 < tokens.len() && is_path_sep(&tokens[j], &tokens[j + 1]) {
                    match &tokens[j + 2] {
                        proc_macro2::TokenTree::Ident(next) => {
                            path.push(next.to_string());
                            j += 3;
                        }
                        _ => break,
                    }
                }
                if path.len() > 1 {
                    out.push(path);
                }
                i = j.max(i + 1);
            }
            proc_macro2::TokenTree::Punct(_) | proc_macro2::TokenTree::Literal(_) => i += 1,
        }
    }
}

/// Whether two tokens are `::` (a joint `:` followed by `:`).
fn is_path_sep(a: &proc_macro2::TokenTree, b: &proc_macro2::TokenTree) -> bool {
    matches!(
        (a, b),
        (proc_macro2::TokenTree::Punct(x), proc_macro2::TokenTree::Punct(y))
            if x.as_char() == ':' && x.spacing() == proc_macro2::Spacing::Joint && y.as_char() == ':'
    )
}

/// The absolute form (without `crate`) of `written` as named in module `from`, or `None` for a
/// path outside the crate (another crate, a local variable's field, a generic parameter).
fn absolute(modules: &Modules, from: &[String], written: &[String]) -> Option<Vec<String>> {
    let (first, rest) = written.split_first()?;
    let mut base: Vec<String> = match first.as_str() {
        "crate" => Vec::new(),
        "self" => from.to_vec(),
        "super" => {
            let mut base = from.to_vec();
            base.pop()?;
            let mut rest = rest;
            while let Some((next, tail)) = rest.split_first() {
                if next != "super" {
                    break;
                }
                base.pop()?;
                rest = tail;
            }
            base.extend(rest.iter().cloned());
            return Some(base);
        }
        name if modules.get(from).is_some_and(|m| m.children.contains(name)) => {
            let mut base = from.to_vec();
            base.push(name.to_owned());
            base
        }
        _ => return None,
    };
    base.extend(rest.iter().cloned());
    Some(base)
}

/// The module an absolute path lands in: its longest module prefix, followed through
/// re-exports (`pub use a::Item` there) to the module that defines the item.
fn target(modules: &Modules, path: &[String]) -> Vec<String> {
    let mut path = path.to_vec();
    // A chain of re-exports is short; the bound stops a `use` loop the compiler would refuse.
    for _ in 0..8 {
        let mut module_len = 0;
        for len in (0..=path.len()).rev() {
            if modules.contains_key(&path[..len]) {
                module_len = len;
                break;
            }
        }
        let module = path[..module_len].to_vec();
        let Some(name) = path.get(module_len) else {
            return module;
        };
        let Some(m) = modules.get(&module) else {
            return module;
        };
        if m.items.contains(name) {
            return module;
        }
        match m
            .bindings
            .get(name)
            .and_then(|written| absolute(modules, &module, written))
        {
            Some(mut followed) if followed != path[..=module_len] => {
                followed.extend(path[module_len + 1..].iter().cloned());
                path = followed;
            }
            _ => return module,
        }
    }
    Vec::new()
}

/// The crate's module graph: for each module, the modules it uses.
pub(super) fn edges(modules: &Modules) -> Graph {
    let mut graph = BTreeMap::new();
    for (from, module) in modules {
        let mut to = BTreeSet::new();
        for written in &module.references {
            if let Some(path) = absolute(modules, from, written) {
                let t = target(modules, &path);
                if &t != from {
                    to.insert(t);
                }
            }
        }
        graph.insert(from.clone(), to);
    }
    graph
}
