//! Comparing chaudit's merged config with what the real clickhouse-server wrote to
//! preprocessed_configs (scripts/engine-preprocess.py), element for element: comments,
//! whitespace-only text, attribute order and `<a></a>` vs `<a/>` aside.

use std::path::Path;

use chaudit::config::render::{RenderOptions, render};
use chaudit::config::{self, Element, LoadOptions, Node, SourceMap};

/// The first words of the comment ClickHouse's ConfigProcessor puts atop a preprocessed file.
pub const ENGINE_HEADER: &str = "This file was generated automatically.";

/// An element as the comparison sees it: name, sorted attributes, its text trimmed (text
/// and CDATA joined), child elements in order. In mixed content (text beside child
/// elements), whitespace runs with a line break are left out of the text: there they are
/// the pretty-printers' indentation, which parsing glues to the text around it (the engine
/// writes two text nodes as `a2`, or `a` newline `2`, where chaudit indents).
#[derive(Debug, PartialEq)]
pub struct Shape {
    pub name: String,
    pub attributes: Vec<(String, String)>,
    pub text: String,
    pub children: Vec<Shape>,
}

pub fn shape(e: &Element) -> Shape {
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
    if !children.is_empty() {
        text = without_indentation(&text);
    }
    Shape { name: e.name.to_string(), attributes, text, children }
}

/// `text` without its whitespace runs that hold a line break.
fn without_indentation(text: &str) -> String {
    let mut out = String::new();
    let mut run = String::new();
    for c in text.chars() {
        if c.is_whitespace() {
            run.push(c);
            continue;
        }
        if !run.contains('\n') {
            out.push_str(&run);
        }
        run.clear();
        out.push(c);
    }
    out
}

pub fn parse_xml(text: String, what: &str) -> Element {
    let mut sources = SourceMap::new("/".into());
    let id = sources.add(what.into(), text);
    config::xml::parse(sources.file(id), id).unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// The first difference between two shapes, as a path and what differs.
pub fn difference(a: &Shape, b: &Shape, path: &str) -> Option<String> {
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

/// How one tree compared.
#[derive(Debug, Default)]
pub struct Compared {
    /// Files (server config, users config) found equal or different: compared at all.
    pub files: usize,
    /// Both refused the tree.
    pub refused_by_both: bool,
    /// Each difference, prefixed by `name`.
    pub failures: Vec<String>,
}

/// Loads `main` as chaudit does and compares the server and users configs with the
/// engine's `expected/config.xml` and `expected/users.xml` (`expected/log`: the engine's
/// output). A tree the engine refused (no config.xml) must be refused; where the engine
/// wrote the server config but failed the users config, chaudit must fail the users config.
pub fn compare(name: &str, main: &Path, expected: &Path, options: &LoadOptions) -> Compared {
    let mut result = Compared::default();
    let loaded = config::load(main, options);
    let engine_config = std::fs::read_to_string(expected.join("config.xml")).ok();
    // the engine's own file, not a copy of chaudit's
    if let Some(text) = &engine_config {
        assert!(text.contains(ENGINE_HEADER), "{name}: expected/config.xml is not the engine's");
    }
    let loaded = match (loaded, engine_config) {
        (Ok(loaded), Some(engine)) => {
            let ours = render(&loaded.server, &loaded.sources, &RenderOptions { provenance: false, masking: None });
            if let Some(d) = difference(&shape(&parse_xml(ours, "chaudit")), &shape(&parse_xml(engine, "engine")), "") {
                result.failures.push(format!("{name} config.xml: {d}"));
            }
            result.files += 1;
            loaded
        }
        (Err(_), None) => {
            result.refused_by_both = true;
            return result;
        }
        (Ok(_), None) => {
            result.failures.push(format!("{name}: the engine refused the tree, chaudit loaded it"));
            return result;
        }
        (Err(e), Some(_)) => {
            result.failures.push(format!("{name}: chaudit refused the tree ({e}), the engine processed it"));
            return result;
        }
    };
    let Ok(engine_users) = std::fs::read_to_string(expected.join("users.xml")) else {
        // the engine failed the users config alone (its server config is written): so must chaudit
        let log = std::fs::read_to_string(expected.join("log")).unwrap_or_default();
        // (a users file that does not exist is reported as such: users-config-missing)
        let reported = loaded.users_error.is_some()
            || loaded.problems.iter().any(|p| matches!(p, config::ConfigError::UsersConfigMissing { .. }));
        if log.contains("while setting up access control") && !reported {
            result.failures.push(format!("{name}: the engine failed the users config, chaudit loaded it"));
        }
        return result;
    };
    match &loaded.users {
        Some(users) => {
            let ours = render(users, &loaded.sources, &RenderOptions { provenance: false, masking: None });
            if let Some(d) =
                difference(&shape(&parse_xml(ours, "chaudit")), &shape(&parse_xml(engine_users, "engine")), "")
            {
                result.failures.push(format!("{name} users.xml: {d}"));
            }
            result.files += 1;
        }
        None => result.failures.push(format!("{name}: the engine wrote users.xml, chaudit has no users tree")),
    }
    result
}
