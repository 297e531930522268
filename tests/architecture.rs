//! The library's top-level modules depend on each other one way: no import cycle between
//! them (docs/development.md draws the layers). A module's unit tests are left out: they may
//! read anything.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn source_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            source_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file without comments and without its unit tests.
fn code(text: &str) -> String {
    let text = text.find("#[cfg(test)]\nmod tests").map_or(text, |at| &text[..at]);
    text.lines().map(|line| line.find("//").map_or(line, |at| &line[..at])).collect::<Vec<_>>().join("\n")
}

/// Each top-level module (a folder or a file of src/) and the top-level modules it names
/// (`crate::NAME`, and NAME inside `use crate::{...}`), with a file that does.
fn module_graph() -> BTreeMap<String, BTreeMap<String, String>> {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    source_files(&src, &mut files);
    let top = |path: &Path| {
        let first = path.strip_prefix(&src).unwrap().components().next().unwrap();
        first.as_os_str().to_string_lossy().trim_end_matches(".rs").to_string()
    };
    // the binary's modules and the crate root are not the library's layers
    let library: BTreeSet<String> =
        files.iter().map(|f| top(f)).filter(|m| !["main", "lib", "cli"].contains(&m.as_str())).collect();
    let mut graph: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for file in &files {
        let module = top(file);
        if !library.contains(&module) {
            continue;
        }
        let code = code(&std::fs::read_to_string(file).unwrap());
        let mut named = Vec::new();
        for (at, _) in code.match_indices("crate::") {
            let rest = &code[at + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let group = &group[..group.find(';').unwrap_or(group.len())];
                named.extend(
                    group
                        .split([',', '{', '}', '\n', ' '])
                        .map(|item| item.split("::").next().unwrap_or("").trim())
                        .filter(|n| !n.is_empty())
                        .map(str::to_string),
                );
            } else {
                named.push(rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect());
            }
        }
        let shown = file.strip_prefix(&src).unwrap().display().to_string();
        let edges = graph.entry(module.clone()).or_default();
        for n in named.into_iter().filter(|n| *n != module && library.contains(n)) {
            edges.entry(n).or_insert_with(|| shown.clone());
        }
    }
    graph
}

/// Whether `to` reaches `from` in the graph: the edge from -> to closes a cycle.
fn closes_cycle(graph: &BTreeMap<String, BTreeMap<String, String>>, from: &str, to: &str) -> bool {
    let mut seen = BTreeSet::new();
    let mut stack = vec![to.to_string()];
    while let Some(m) = stack.pop() {
        if m == from {
            return true;
        }
        if seen.insert(m.clone()) {
            stack.extend(graph.get(&m).into_iter().flat_map(|e| e.keys().cloned()));
        }
    }
    false
}

#[test]
fn the_library_modules_have_no_import_cycle() {
    let graph = module_graph();
    let cycles: Vec<String> = graph
        .iter()
        .flat_map(|(from, edges)| edges.iter().map(move |(to, file)| (from, to, file)))
        .filter(|(from, to, _)| closes_cycle(&graph, from, to))
        .map(|(from, to, file)| format!("{from} -> {to} (src/{file}) closes a cycle"))
        .collect();
    assert!(cycles.is_empty(), "{}", cycles.join("\n"));
    // the graph is read: the layers docs/development.md draws are there
    for (from, to) in [("audit", "report"), ("report", "verdict"), ("eval", "rules"), ("collect", "facts")] {
        assert!(graph[from].contains_key(to), "{from} no longer uses {to}: is the graph read?");
    }
}
