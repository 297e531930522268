//! The merged config trees a report can show (the HTML report does): each element as
//! `chaudit config show --provenance` prints it, with the file:line that set it and the files
//! it overrode, its secrets masked as `config show` masks them. Built by the audit from the
//! trees it read; bounded, so that a tree of thousands of files stays a page to read.

use std::collections::HashSet;

use crate::config::render::is_hidden;
use crate::config::{ConfigTree, Element, LoadedConfig, Location, Node, SourceMap};
use crate::mask;

/// The most elements of one tree shown in their place; past them, only the elements a
/// finding points at are shown (with their path, at most [`SHOWN_POINTED`] more), and the
/// others are counted.
pub const SHOWN_ELEMENTS: usize = 1000;

/// The most elements of one tree shown past [`SHOWN_ELEMENTS`] because a finding points at them.
pub const SHOWN_POINTED: usize = 1000;

/// One merged tree (the server config, or the users config).
#[derive(Debug, Clone)]
pub struct ConfigView {
    /// `server` or `users`.
    pub kind: &'static str,
    /// The files merged into it, in the order read, relative to the main config's directory.
    pub files: Vec<String>,
    pub elements: Vec<ViewElement>,
    /// Every element of the tree, shown or not.
    pub total: usize,
    /// The elements left out after the last one shown.
    pub left_out_after: usize,
}

#[derive(Debug, Clone)]
pub struct ViewElement {
    /// 0 for the root.
    pub depth: usize,
    pub name: String,
    /// Secret values masked.
    pub attributes: Vec<(String, String)>,
    /// The text of a leaf (or of an element that has text beside its children), masked
    /// and bounded; none for an element with only children, or empty.
    pub value: Option<String>,
    /// Whether it holds elements (else, without a value, it is shown as `<name/>`).
    pub has_children: bool,
    /// Where the element was set (its start tag or YAML key).
    pub at: Location,
    /// Where its value is written, when it has one.
    pub value_at: Option<Location>,
    /// `file:line` of each element it overrode or was merged with, the latest first.
    pub overrides: Vec<String>,
    /// How many elements were left out just before this one (past [`SHOWN_ELEMENTS`]).
    pub left_out_before: usize,
    /// The names of its ancestors, from the root, when it is shown out of its place (past
    /// [`SHOWN_ELEMENTS`], because a finding points at it).
    pub path: Option<String>,
}

impl ConfigView {
    /// The server tree and the users tree (unless the users live in the server config), less
    /// `broken` (`server` or `users`): a tree ClickHouse refuses is not shown. `pointed` are
    /// the findings' locations: those elements are shown wherever they are.
    pub fn of(loaded: &LoadedConfig, broken: Option<&str>, pointed: &[Location]) -> Vec<ConfigView> {
        let pointed: HashSet<(&str, u32, u32)> = pointed.iter().map(|l| (l.file.as_str(), l.line, l.column)).collect();
        let mut views = Vec::new();
        if broken != Some("server") {
            views.push(view("server", &loaded.server, &loaded.sources, &pointed));
        }
        if broken != Some("users")
            && let Some(users) = &loaded.users
        {
            views.push(view("users", users, &loaded.sources, &pointed));
        }
        views
    }
}

fn view(kind: &'static str, tree: &ConfigTree, sources: &SourceMap, pointed: &HashSet<(&str, u32, u32)>) -> ConfigView {
    let files = tree.files.iter().map(|id| sources.file(*id).display.clone()).collect();
    let mut walk = Walk { sources, pointed, elements: Vec::new(), total: 0, skipped: 0, extra: 0, path: Vec::new() };
    walk.element(&tree.root, 0);
    ConfigView { kind, files, elements: walk.elements, total: walk.total, left_out_after: walk.skipped }
}

struct Walk<'a> {
    sources: &'a SourceMap,
    pointed: &'a HashSet<(&'a str, u32, u32)>,
    elements: Vec<ViewElement>,
    total: usize,
    /// Left out since the last element shown.
    skipped: usize,
    /// Shown past [`SHOWN_ELEMENTS`].
    extra: usize,
    /// The names of the ancestors of the element being walked.
    path: Vec<&'a str>,
}

impl<'a> Walk<'a> {
    fn element(&mut self, e: &'a Element, depth: usize) {
        if is_hidden(e) {
            return;
        }
        self.total += 1;
        let at = self.sources.locate(e.origin);
        let value_origin = e.value_origin();
        let value_at = (value_origin != e.origin).then(|| self.sources.locate(value_origin));
        let in_place = self.total <= SHOWN_ELEMENTS;
        let is_pointed = |l: &Location| self.pointed.contains(&(l.file.as_str(), l.line, l.column));
        let pointed = || is_pointed(&at) || value_at.as_ref().is_some_and(is_pointed);
        if in_place || (self.extra < SHOWN_POINTED && pointed()) {
            self.extra += usize::from(!in_place);
            let path = (!in_place).then(|| self.path.join("/"));
            let shown = shown(e, at, value_at, depth, self.sources, std::mem::take(&mut self.skipped), path);
            self.elements.push(shown);
        } else {
            self.skipped += 1;
        }
        self.path.push(e.name.as_str());
        for child in &e.children {
            if let Node::Element(child) = child {
                self.element(child, depth + 1);
            }
        }
        self.path.pop();
    }
}

/// An element as `config show` prints it with its secrets masked.
fn shown(
    e: &Element,
    at: Location,
    value_at: Option<Location>,
    depth: usize,
    sources: &SourceMap,
    left_out_before: usize,
    path: Option<String>,
) -> ViewElement {
    let attributes = e
        .attributes
        .iter()
        .map(|a| {
            let value = if mask::is_secret_name(&a.name) { mask::MASK.to_string() } else { masked_value(&a.value) };
            (visible(&a.name), value)
        })
        .collect();
    let mut text = String::new();
    for node in &e.children {
        if let Node::Text(t) = node
            && !t.is_whitespace()
        {
            text.push_str(t.value());
        }
    }
    let text = text.trim();
    let value = (!text.is_empty())
        .then(|| if mask::is_secret_name(&e.name) { mask::MASK.to_string() } else { masked_value(text) });
    let overrides = e
        .history
        .iter()
        .rev()
        .map(|o| {
            let l = sources.locate(*o);
            format!("{}:{}", l.file, l.line)
        })
        .collect();
    ViewElement {
        depth,
        name: visible(&e.name),
        attributes,
        value,
        has_children: e.children.iter().any(|n| matches!(n, Node::Element(_))),
        at,
        value_at,
        overrides,
        left_out_before,
        path: path.map(|p| visible(&p)),
    }
}

/// A value with a URL's credentials masked (as `config show`), its control characters
/// written out, and bounded.
fn masked_value(text: &str) -> String {
    let masked = mask::mask_url_credentials(text);
    let visible = mask::without_controls(&masked);
    mask::excerpt(&visible).into_owned()
}

fn visible(name: &str) -> String {
    mask::without_controls(name).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{DefaultInclude, LoadOptions, MemoryFs, load_with};
    use crate::mask::MASK;

    fn load(files: &[(&str, &str)]) -> LoadedConfig {
        let mut memory = MemoryFs::default();
        for (path, text) in files {
            memory.insert(path, *text);
        }
        let options = LoadOptions { default_include_from: DefaultInclude::None, ..LoadOptions::default() };
        load_with(&memory, std::path::Path::new("/etc/ch/config.xml"), &options).unwrap()
    }

    #[test]
    fn secrets_are_masked_as_config_show_masks_them_and_hidden_elements_left_out() {
        let loaded = load(&[
            (
                "/etc/ch/config.xml",
                "<clickhouse>\n<s3 secret_access_key=\"k1\" note=\"x\"><endpoint>https://u:p4ss@h.invalid/b/</endpoint>\
                 <secret_access_key>k2</secret_access_key></s3>\n<hidden hide_in_preprocessed=\"true\"><a>k3</a></hidden>\n\
                 <users_config>users.xml</users_config>\n</clickhouse>\n",
            ),
            ("/etc/ch/config.d/a.xml", "<clickhouse>\n<users_config>users.xml</users_config>\n</clickhouse>\n"),
            ("/etc/ch/users.xml", "<clickhouse><users><u><password>k4</password></u></users></clickhouse>\n"),
        ]);
        let views = ConfigView::of(&loaded, None, &[]);
        assert_eq!(views.iter().map(|v| v.kind).collect::<Vec<_>>(), ["server", "users"]);
        let shown = format!("{views:?}");
        for secret in ["k1", "k2", "k3", "k4", "p4ss"] {
            assert!(!shown.contains(&format!("\"{secret}")) && !shown.contains(&format!(":{secret}@")), "{secret}");
        }
        let server = &views[0];
        assert_eq!(server.files, ["config.xml", "config.d/a.xml"]);
        assert!(server.elements.iter().all(|e| e.name != "hidden" && e.name != "a"), "hidden: {shown}");
        let s3 = server.elements.iter().find(|e| e.name == "s3").unwrap();
        assert_eq!(s3.attributes, [("secret_access_key".into(), MASK.into()), ("note".into(), "x".into())]);
        // each element at the file:line `config show --provenance` names, in its order
        let options = crate::config::render::RenderOptions { provenance: true, masking: None };
        let rendered = crate::config::render::render(&loaded.server, &loaded.sources, &options);
        let comments: Vec<&str> = rendered
            .lines()
            .filter_map(|l| l.trim().strip_prefix("<!-- ")?.strip_suffix(" -->"))
            .filter(|c| !c.contains("generated") && !c.contains("masked"))
            .collect();
        let ours: Vec<String> = server
            .elements
            .iter()
            .map(|e| match e.overrides.as_slice() {
                [] => format!("{}:{}", e.at.file, e.at.line),
                o => format!("{}:{} (overrides {})", e.at.file, e.at.line, o.join(", ")),
            })
            .collect();
        assert_eq!(ours, comments);
        assert!(ours.iter().any(|o| o.contains("overrides")), "{ours:?}");
        let value = |name: &str| server.elements.iter().find(|e| e.name == name).unwrap().value.clone();
        assert_eq!(value("secret_access_key").as_deref(), Some(MASK));
        assert!(value("endpoint").unwrap().starts_with("https://"));
        assert_eq!(views[1].elements.iter().find(|e| e.name == "password").unwrap().value.as_deref(), Some(MASK));
        assert_eq!(ConfigView::of(&loaded, Some("users"), &[]).len(), 1);
    }

    #[test]
    fn a_large_tree_is_bounded_and_keeps_the_elements_findings_point_at() {
        let mut xml = String::from("<clickhouse>\n<macros>\n");
        let n = SHOWN_ELEMENTS + 500;
        for i in 0..n {
            xml.push_str(&format!("<m{i}>v</m{i}>\n"));
        }
        xml.push_str("</macros>\n</clickhouse>\n");
        let loaded = load(&[("/etc/ch/config.xml", &xml)]);
        // the last macro, on line n + 2, column 1
        let last = Location { file: "config.xml".into(), line: n as u32 + 2, column: 1 };
        let views = ConfigView::of(&loaded, None, std::slice::from_ref(&last));
        let server = &views[0];
        assert_eq!(server.total, n + 2);
        assert_eq!(server.elements.len(), SHOWN_ELEMENTS + 1);
        let kept = server.elements.last().unwrap();
        assert_eq!(kept.name, format!("m{}", n - 1));
        assert_eq!(kept.path.as_deref(), Some("clickhouse/macros"));
        assert_eq!(kept.left_out_before, n + 2 - SHOWN_ELEMENTS - 1);
        assert_eq!(server.left_out_after, 0);
    }
}
