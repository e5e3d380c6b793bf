//! The graph of one module's files: which child of a module reaches which other child (a
//! grandchild's paths count for its ancestor below the module), from non-test code, and the
//! groups of files in it that reach each other.

use std::collections::{BTreeMap, BTreeSet};

use super::source::{Source, crate_refs};

/// For each module (its path joined with `/`), its children's edges: child → the siblings it reaches.
pub(crate) type SiblingGraph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

/// The edges among siblings of every module two or more levels deep (`domain/turns`, not the layer
/// folders, whose order the layer rules judge).
pub(crate) fn sibling_edges(sources: &[Source]) -> SiblingGraph {
    let modules: BTreeSet<Vec<String>> = sources.iter().map(|s| s.module.clone()).collect();
    let is_module = |prefix: &[String]| modules.iter().any(|m| m.starts_with(prefix));
    let mut graph = SiblingGraph::new();
    for source in sources.iter().filter(|s| !s.rel.ends_with("tests.rs") && !s.module.iter().any(|m| m == "tests")) {
        for reference in crate_refs(source).into_iter().filter(|r| !r.in_test) {
            let from = &source.module;
            let to = &reference.path;
            let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
            if common < 2 || common >= from.len() || common >= to.len() || !is_module(&to[..=common]) {
                continue;
            }
            graph
                .entry(from[..common].join("/"))
                .or_default()
                .entry(from[common].clone())
                .or_default()
                .insert(to[common].clone());
        }
    }
    graph
}

/// The groups of a module's children that reach each other (each group one or more loops), in
/// name order: an acyclic graph has none.
pub(crate) fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_owned()];
        while let Some(node) = todo.pop() {
            for next in edges.get(&node).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> = edges.keys().map(|node| (node, reach(node))).collect();
    let mut groups: Vec<Vec<String>> = Vec::new();
    for (node, from_node) in &reached {
        if !from_node.contains(*node) || groups.iter().any(|g| g.contains(node)) {
            continue;
        }
        let group = reached
            .iter()
            .filter(|(other, from_other)| from_node.contains(**other) && from_other.contains(*node))
            .map(|(other, _)| (*other).clone())
            .collect();
        groups.push(group);
    }
    groups
}
