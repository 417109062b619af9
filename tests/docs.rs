//! The documentation's shape: README stays a short front page, every relative link in the
//! Markdown files resolves (file and heading), and no document sends a reader outside the
//! repository or cites a paper by a number only this project's workspace knows.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The Markdown files users read.
fn documents() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = [
        "README.md",
        "CHANGELOG.md",
        "python/README.md",
        "data/README.md",
    ]
    .iter()
    .map(|p| root().join(p))
    .collect();
    for e in std::fs::read_dir(root().join("docs")).expect("a docs/ folder") {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "md") {
            v.push(p);
        }
    }
    v
}

/// GitHub's anchor for a heading: lower case, punctuation other than '-' and '_' dropped,
/// spaces turned into '-'.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown file's headings (outside code fences), numbered as GitHub does
/// when a heading repeats.
fn anchors(text: &str) -> HashSet<String> {
    let (mut out, mut fence) = (HashSet::new(), false);
    for line in text.lines() {
        if line.starts_with("```") {
            fence = !fence;
        }
        if fence || !line.starts_with('#') {
            continue;
        }
        let base = slug(line.trim_start_matches('#'));
        let mut a = base.clone();
        let mut k = 1;
        while out.contains(&a) {
            a = format!("{base}-{k}");
            k += 1;
        }
        out.insert(a);
    }
    out
}

/// The targets of inline links `[text](target)` outside code fences and code spans.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fence = false;
    for (n, line) in text.lines().enumerate() {
        if line.starts_with("```") {
            fence = !fence;
        }
        if fence {
            continue;
        }
        // Drop code spans: a link inside backticks is an example, not a link.
        let mut plain = String::new();
        for (k, part) in line.split('`').enumerate() {
            if k % 2 == 0 {
                plain.push_str(part);
            }
        }
        let mut rest = plain.as_str();
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(j) = after.find(')') else { break };
            out.push((n + 1, after[..j].to_string()));
            rest = &after[j..];
        }
    }
    out
}

#[test]
fn readme_is_a_front_page() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 300,
        "README.md has {lines} lines; the guides in docs/ take the rest"
    );
    for d in [
        "docs/GUIDE.md",
        "docs/METHODS.md",
        "docs/BENCHMARKS.md",
        "docs/ARCHITECTURE.md",
        "CHANGELOG.md",
        "python/README.md",
    ] {
        assert!(root().join(d).exists(), "{d} is missing");
        assert!(readme.contains(d), "README does not link {d}");
    }
}

#[test]
fn every_relative_link_resolves() {
    let mut bad = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        let dir = doc.parent().unwrap();
        for (line, target) in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (file, anchor) = match target.split_once('#') {
                Some((f, a)) => (f, Some(a)),
                None => (target.as_str(), None),
            };
            let path = if file.is_empty() {
                doc.clone()
            } else {
                dir.join(file)
            };
            let name = format!(
                "{}:{line}: {target}",
                doc.strip_prefix(root()).unwrap().display()
            );
            if !path.exists() {
                bad.push(format!("{name} (no such file)"));
                continue;
            }
            if let Some(a) = anchor {
                let t = std::fs::read_to_string(&path).unwrap_or_default();
                if !anchors(&t).contains(a) {
                    bad.push(format!("{name} (no such heading)"));
                }
            }
        }
    }
    assert!(
        checked > 20,
        "only {checked} links found: is the parser broken?"
    );
    assert!(
        bad.is_empty(),
        "links that do not resolve:\n{}",
        bad.join("\n")
    );
}

#[test]
fn documents_stay_inside_the_repository() {
    let mut bad = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        for (n, line) in text.lines().enumerate() {
            let l = line.to_lowercase();
            let by_number = ["paper 00", "papers 00", "slides 00"]
                .iter()
                .any(|p| l.contains(p));
            if l.contains("../shared") || l.contains("algorithms.md") || by_number {
                bad.push(format!("{}:{}: {line}", doc.display(), n + 1));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "lines that point outside the repository:\n{}",
        bad.join("\n")
    );
}

#[test]
fn slugs_follow_github() {
    assert_eq!(slug(" Cross-validation (`-v K`)"), "cross-validation--v-k");
    assert_eq!(
        slug("Novelty detection: one-class (`-s 2`)"),
        "novelty-detection-one-class--s-2"
    );
    let a = anchors("# A\n## A\n```\n# B\n```\n");
    assert!(a.contains("a") && a.contains("a-1") && !a.contains("b"));
    assert_eq!(
        links("see [x](y.md#z) and `[u](v)`"),
        vec![(1, "y.md#z".to_string())]
    );
}

/// The documents describe the product, not how it was made: no word of the work's
/// organisation anywhere in the repository's text (outside `benches/results/`, the raw output
/// of past runs), BENCHMARKS one current table per benchmark (under 600 lines), and a FAQ.
#[test]
fn documents_describe_the_product() {
    let word = ["ses", "sion"].concat();
    let mut files = documents();
    let mut stack = vec![
        root().join("src"),
        root().join("tests"),
        root().join("python"),
        root().join("benches"),
        root().join(".ci"),
    ];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if p.is_dir() {
                if !["results", "target", "__pycache__", ".venv", "node_modules"]
                    .contains(&name.as_str())
                {
                    stack.push(p);
                }
            } else if ["rs", "py", "sh", "md", "toml", "wgsl", "txt"]
                .iter()
                .any(|x| name.ends_with(&format!(".{x}")))
                || name == "run"
            {
                files.push(p);
            }
        }
    }
    let bad: Vec<String> = files
        .iter()
        .filter_map(|p| {
            let text = std::fs::read_to_string(p).ok()?;
            let n = text
                .lines()
                .position(|l| l.to_lowercase().contains(&word))?;
            Some(format!("{}:{}", p.display(), n + 1))
        })
        .collect();
    assert!(
        bad.is_empty(),
        "text about how the work was organised:\n{}",
        bad.join("\n")
    );
    let bench = std::fs::read_to_string(root().join("docs/BENCHMARKS.md")).unwrap();
    let lines = bench.lines().count();
    assert!(
        lines < 600,
        "docs/BENCHMARKS.md has {lines} lines: one current table per benchmark"
    );
    assert!(
        root().join("docs/FAQ.md").exists(),
        "docs/FAQ.md is missing"
    );
}
