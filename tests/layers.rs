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

/// The sibling modules `text` (a file of folder `folder`, `prefix` its crate path such as
/// `crate::backend::gpu::`) imports: `super::NAME` and `prefix NAME`, brace groups included,
/// kept where NAME is one of `siblings`.
fn sibling_uses(text: &str, prefix: &str, siblings: &BTreeSet<String>) -> BTreeSet<String> {
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = BTreeSet::new();
    for key in ["super::", prefix] {
        for (i, _) in text.match_indices(key) {
            let rest = &text[i + key.len()..];
            let names: Vec<String> = if let Some(group) = rest.strip_prefix('{') {
                // The group's top-level entries: `{a, b::{c, d}, e}` gives a, b, e.
                let (mut depth, mut start, mut v) = (0usize, 0usize, Vec::new());
                for (k, ch) in group.char_indices() {
                    match ch {
                        '{' => depth += 1,
                        '}' if depth == 0 => {
                            v.push(ident(&group[start..k]));
                            break;
                        }
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            v.push(ident(&group[start..k]));
                            start = k + 1;
                        }
                        _ => {}
                    }
                }
                v
            } else {
                vec![ident(rest)]
            };
            out.extend(names.into_iter().filter(|n| siblings.contains(n)));
        }
    }
    out
}

/// Inside every folder of the library (src/) and of the command (cli/src/, its top level
/// included), the sibling modules (files, and sub-folders through their mod.rs) import one
/// another one way: no circle such as a.rs → b.rs → a.rs.
#[test]
fn no_import_circle_inside_a_folder() {
    fn folders(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                out.push(p.clone());
                folders(&p, out);
            }
        }
    }
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = vec![];
    for src in [manifest.join("src"), manifest.join("cli/src")] {
        dirs.push((src.clone(), src.clone()));
        let mut inside = vec![];
        folders(&src, &mut inside);
        dirs.extend(inside.into_iter().map(|d| (src.clone(), d)));
    }
    let mut checked = 0;
    for (src, dir) in dirs {
        let rel = dir.strip_prefix(&src).unwrap();
        let prefix: String = rel
            .components()
            .map(|c| format!("{}::", c.as_os_str().to_string_lossy()))
            .fold("crate::".to_string(), |p, c| p + &c);
        // Siblings: name → the file whose `super::` means this folder's module.
        let mut siblings: BTreeMap<String, std::path::PathBuf> = BTreeMap::new();
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_stem().unwrap().to_string_lossy().to_string();
            if p.is_dir() && p.join("mod.rs").exists() {
                siblings.insert(name, p.join("mod.rs"));
            } else if p.extension().is_some_and(|x| x == "rs")
                && !["mod", "lib", "main"].contains(&name.as_str())
            {
                siblings.insert(name, p);
            }
        }
        let names: BTreeSet<String> = siblings.keys().cloned().collect();
        let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (name, file) in &siblings {
            let code = code_of(&std::fs::read_to_string(file).unwrap());
            let mut uses = sibling_uses(&code, &prefix, &names);
            uses.remove(name);
            graph.insert(name.clone(), uses);
        }
        checked += graph.values().map(|u| u.len()).sum::<usize>();
        let mut done = BTreeSet::new();
        for node in graph.keys() {
            if let Some(c) = cycle(node, &graph, &mut Vec::new(), &mut done) {
                let folder = dir.strip_prefix(manifest).unwrap().display();
                panic!("import circle in {folder}: {}", c.join(" → "));
            }
        }
    }
    // The folders' imports were read (solver/shrink.rs uses warm.rs, gpu files use passes.rs).
    assert!(checked > 20, "only {checked} sibling imports found");
}
