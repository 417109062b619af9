//! The library's layers depend one way (file → Dataset → Problem → Backend → solver → Model,
//! with prediction, training and the CLI above): no import circle between its top-level
//! modules. The graph is read from the sources: every `crate::MODULE` path outside test code.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Top-level module of a file under src/ (`backend/gpu/mod.rs` → `backend`).
fn module_of(rel: &Path) -> String {
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

/// The source without its test module and comments.
fn code_of(text: &str) -> String {
    let end = text.find("#[cfg(test)]\nmod ").unwrap_or(text.len());
    text[..end]
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

fn walk(dir: &Path, root: &Path, graph: &mut BTreeMap<String, BTreeSet<String>>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(&path, root, graph);
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let me = module_of(path.strip_prefix(root).unwrap());
        if me == "lib" || me == "main" {
            continue;
        }
        let code = code_of(&std::fs::read_to_string(&path).unwrap());
        let deps = graph.entry(me.clone()).or_default();
        for (i, _) in code.match_indices("crate::") {
            let name: String = code[i + 7..]
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || *c == '_' || c.is_ascii_digit())
                .collect();
            if !name.is_empty() && name != me {
                deps.insert(name);
            }
        }
    }
}

/// A cycle through `node`, if one is reachable from it.
fn cycle(
    node: &str,
    graph: &BTreeMap<String, BTreeSet<String>>,
    path: &mut Vec<String>,
    done: &mut BTreeSet<String>,
) -> Option<Vec<String>> {
    if let Some(at) = path.iter().position(|n| n == node) {
        let mut c = path[at..].to_vec();
        c.push(node.to_string());
        return Some(c);
    }
    if done.contains(node) {
        return None;
    }
    path.push(node.to_string());
    for next in graph.get(node).into_iter().flatten() {
        if let Some(c) = cycle(next, graph, path, done) {
            return Some(c);
        }
    }
    path.pop();
    done.insert(node.to_string());
    None
}

#[test]
fn no_import_circle_between_top_level_modules() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut graph = BTreeMap::new();
    walk(&root, &root, &mut graph);
    // The graph was read: the layers this test is about are in it.
    for (from, to) in [
        ("solver", "backend"),
        ("backend", "problem"),
        ("train", "solver"),
    ] {
        assert!(
            graph[from].contains(to),
            "{from} → {to} not found: {graph:?}"
        );
    }
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        if let Some(c) = cycle(node, &graph, &mut Vec::new(), &mut done) {
            panic!("import circle: {}", c.join(" → "));
        }
    }
    // The two circles this test was written after stay broken.
    assert!(
        !graph["backend"].contains("solver"),
        "backend reaches up into solver"
    );
    assert!(
        !graph["backend"].contains("model"),
        "backend reaches up into model"
    );
}
