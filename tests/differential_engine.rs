//! `config show` against what the real clickhouse-server writes to preprocessed_configs.
//!
//! Each directory under tests/engine-cases/ holds `tree/` (a config tree built from
//! ClickHouse's own files, see tests/engine-cases/SOURCES), an optional `env` (KEY=VALUE
//! lines, the only environment of its from_env) and `expected/`: the config.xml and users.xml
//! clickhouse-server 25.8.2.1 wrote for it (scripts/engine-preprocess.py --all
//! tests/engine-cases regenerates them), or no config.xml when the engine refused the tree.
//! chaudit's rendering must be the same element tree: comments, whitespace-only text,
//! attribute order and `<a></a>` vs `<a/>` aside.

mod support;

use std::path::{Path, PathBuf};

use chaudit::config::render::{RenderOptions, render};
use chaudit::config::{self, DefaultInclude, Element, LoadOptions, Node, SourceMap};

/// The first words of the comment ClickHouse's ConfigProcessor puts atop a preprocessed file.
const ENGINE_HEADER: &str = "This file was generated automatically.";

fn cases() -> Vec<PathBuf> {
    let root = support::repo_root().join("tests/engine-cases");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("tree/config.xml").is_file())
        .collect();
    dirs.sort();
    dirs
}

/// An element as the comparison sees it: name, sorted attributes, its text trimmed (text
/// and CDATA joined), child elements in order.
#[derive(Debug, PartialEq)]
struct Shape {
    name: String,
    attributes: Vec<(String, String)>,
    text: String,
    children: Vec<Shape>,
}

fn shape(e: &Element) -> Shape {
    let mut attributes: Vec<(String, String)> =
        e.attributes.iter().map(|a| (a.name.clone(), a.value.clone())).collect();
    attributes.sort();
    let mut text = String::new();
    let mut children = Vec::new();
    for node in &e.children {
        match node {
            Node::Element(child) => children.push(shape(child)),
            Node::Text(t) => text.push_str(t.value().trim()),
            Node::Comment(_) => {}
        }
    }
    Shape { name: e.name.to_string(), attributes, text, children }
}

fn parse_xml(text: String, what: &str) -> Element {
    let mut sources = SourceMap::new("/".into());
    let id = sources.add(what.into(), text);
    config::xml::parse(sources.file(id), id).unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// The first difference between two shapes, as a path and what differs.
fn difference(a: &Shape, b: &Shape, path: &str) -> Option<String> {
    let here = format!("{path}/{}", a.name);
    if a.name != b.name || a.attributes != b.attributes || a.text != b.text {
        return Some(format!(
            "{here}: chaudit <{} {:?}>{:?} vs engine <{} {:?}>{:?}",
            a.name, a.attributes, a.text, b.name, b.attributes, b.text
        ));
    }
    for (i, (x, y)) in a.children.iter().zip(&b.children).enumerate() {
        if let Some(d) = difference(x, y, &format!("{here}[{i}]")) {
            return Some(d);
        }
    }
    if a.children.len() != b.children.len() {
        let names = |s: &Shape| s.children.iter().map(|c| c.name.clone()).collect::<Vec<_>>().join(",");
        return Some(format!("{here}: chaudit children [{}] vs engine [{}]", names(a), names(b)));
    }
    None
}

fn options(case: &Path) -> LoadOptions {
    let mut options = LoadOptions::for_fixture(case);
    options.default_include_from = DefaultInclude::None;
    options
}

#[test]
fn config_show_equals_the_engines_preprocessed_configs() {
    let cases = cases();
    assert!(cases.len() >= 50, "{} engine cases", cases.len());
    let mut failures = Vec::new();
    let (mut compared, mut refused) = (0, 0);
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        let expected = case.join("expected");
        let loaded = config::load(&case.join("tree/config.xml"), &options(case));
        let engine_config = std::fs::read_to_string(expected.join("config.xml")).ok();
        // the engine's own file, not a copy of chaudit's
        if let Some(text) = &engine_config {
            assert!(text.contains(ENGINE_HEADER), "{name}: expected/config.xml is not the engine's");
        }
        let loaded = match (loaded, engine_config) {
            (Ok(loaded), Some(engine)) => {
                let ours = render(&loaded.server, &loaded.sources, &RenderOptions { provenance: false, masking: None });
                if let Some(d) =
                    difference(&shape(&parse_xml(ours, "chaudit")), &shape(&parse_xml(engine, "engine")), "")
                {
                    failures.push(format!("{name} config.xml: {d}"));
                }
                compared += 1;
                loaded
            }
            (Err(_), None) => {
                refused += 1;
                continue;
            }
            (Ok(_), None) => {
                failures.push(format!("{name}: the engine refused the tree, chaudit loaded it"));
                continue;
            }
            (Err(e), Some(_)) => {
                failures.push(format!("{name}: chaudit refused the tree ({e}), the engine processed it"));
                continue;
            }
        };
        let Ok(engine_users) = std::fs::read_to_string(expected.join("users.xml")) else {
            // the engine failed the users config alone (its server config is written): so must chaudit
            let log = std::fs::read_to_string(expected.join("log")).unwrap_or_default();
            // (a users file that does not exist is reported as such: users-config-missing)
            let reported = loaded.users_error.is_some()
                || loaded.problems.iter().any(|p| matches!(p, chaudit::config::ConfigError::UsersConfigMissing { .. }));
            if log.contains("while setting up access control") && !reported {
                failures.push(format!("{name}: the engine failed the users config, chaudit loaded it"));
            }
            continue;
        };
        match &loaded.users {
            Some(users) => {
                let ours = render(users, &loaded.sources, &RenderOptions { provenance: false, masking: None });
                if let Some(d) =
                    difference(&shape(&parse_xml(ours, "chaudit")), &shape(&parse_xml(engine_users, "engine")), "")
                {
                    failures.push(format!("{name} users.xml: {d}"));
                }
                compared += 1;
            }
            None => failures.push(format!("{name}: the engine wrote users.xml, chaudit has no users tree")),
        }
    }
    eprintln!("{} cases: {compared} files compared, {refused} trees refused by both", cases.len());
    assert!(failures.is_empty(), "{} differences:\n{}", failures.len(), failures.join("\n"));
}

/// `chaudit config show` in each of its modes, on every engine case, as a strict XML parser
/// reads it: whatever a user pipes the output into must accept it.
#[test]
fn config_show_is_well_formed_xml_in_every_mode() {
    let modes: [&[&str]; 6] = [
        &[],
        &["--users"],
        &["--provenance"],
        &["--show-secrets"],
        &["--users", "--provenance"],
        &["--users", "--show-secrets"],
    ];
    let mut failures = Vec::new();
    let mut parsed = 0;
    for case in cases() {
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        let env = options(&case).env;
        for mode in modes {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_chaudit"))
                .args(["config", "show", "--default-include-from", "none", "--config"])
                .arg(case.join("tree/config.xml"))
                .args(mode)
                .envs(&env)
                .output()
                .expect("run chaudit");
            if out.stdout.is_empty() {
                continue; // refused, as the engine refuses the tree
            }
            let text = String::from_utf8_lossy(&out.stdout);
            match roxmltree::Document::parse(&text) {
                Ok(_) => parsed += 1,
                Err(e) => failures.push(format!("{name} {}: {e}", mode.join(" "))),
            }
        }
    }
    eprintln!("{parsed} outputs parsed");
    assert!(parsed >= 300, "only {parsed} outputs");
    assert!(failures.is_empty(), "{} outputs are not well-formed XML:\n{}", failures.len(), failures.join("\n"));
}
