//! Strongly connected components and shortest cycles of a small directed graph of module paths.
//! Part of the module-cycle rule of `cargo xtask tidy`; pure, knows nothing about Rust sources.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// For each module, the modules it uses.
pub(super) type Graph = BTreeMap<Vec<String>, BTreeSet<Vec<String>>>;

/// Strongly connected components (Tarjan, iterative over a small graph by recursion depth at
/// most the number of modules).
pub(super) fn components(graph: &Graph) -> Vec<BTreeSet<Vec<String>>> {
    struct State<'g> {
        graph: &'g Graph,
        index: BTreeMap<&'g Vec<String>, usize>,
        low: BTreeMap<&'g Vec<String>, usize>,
        stack: Vec<&'g Vec<String>>,
        on_stack: BTreeSet<&'g Vec<String>>,
        next: usize,
        out: Vec<BTreeSet<Vec<String>>>,
    }
    fn visit<'g>(s: &mut State<'g>, v: &'g Vec<String>) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        let graph = s.graph;
        for w in graph.get(v).into_iter().flatten() {
            let Some((w, _)) = graph.get_key_value(w) else {
                continue;
            };
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = BTreeSet::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.insert(w.clone());
                if w == v {
                    break;
                }
            }
            s.out.push(component);
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.out.sort();
    s.out
}

/// The shortest cycle from `start` back to itself inside `component` (breadth first).
pub(super) fn shortest_cycle(
    graph: &Graph,
    component: &BTreeSet<Vec<String>>,
    start: &Vec<String>,
) -> Option<Vec<Vec<String>>> {
    let mut previous: BTreeMap<Vec<String>, Vec<String>> = BTreeMap::new();
    let mut queue = VecDeque::from([start.clone()]);
    while let Some(v) = queue.pop_front() {
        for w in graph.get(&v).into_iter().flatten() {
            if !component.contains(w) {
                continue;
            }
            if w == start {
                let mut cycle = vec![v.clone()];
                let mut at = v.clone();
                while let Some(p) = previous.get(&at) {
                    cycle.push(p.clone());
                    at = p.clone();
                }
                cycle.reverse();
                return Some(cycle);
            }
            if !previous.contains_key(w) && w != start {
                previous.insert(w.clone(), v.clone());
                queue.push_back(w.clone());
            }
        }
    }
    None
}
