//! The merged config section: each tree the audit read, element by element as
//! `chaudit config show --provenance` prints it (secrets masked), with the file:line that set
//! each element and the findings that point at it; each finding links to its element.
//! Folded, and bounded (see [`crate::report::SHOWN_ELEMENTS`]).

use std::collections::HashMap;
use std::fmt::Write;

use super::esc;
use crate::eval::Finding;
use crate::report::{ConfigView, Report, ViewElement};

/// The element id of each place a finding can point at: an element's start or its value.
pub struct Anchors {
    exact: HashMap<(String, u32, u32), String>,
}

impl Anchors {
    pub fn of(report: &Report) -> Anchors {
        let mut anchors = Anchors { exact: HashMap::new() };
        for (t, view) in report.config.iter().enumerate() {
            for (i, e) in view.elements.iter().enumerate() {
                for l in std::iter::once(&e.at).chain(&e.value_at) {
                    let id = element_id(t, i);
                    anchors.exact.entry((l.file.clone(), l.line, l.column)).or_insert(id);
                }
            }
        }
        anchors
    }

    /// The id of the element a finding points at, if it is shown.
    pub fn of_finding<'s>(&'s self, f: &Finding) -> Option<&'s str> {
        let l = f.location.as_ref()?;
        self.exact.get(&(l.file.clone(), l.line, l.column)).map(String::as_str)
    }
}

fn element_id(tree: usize, element: usize) -> String {
    format!("c{tree}-{element}")
}

/// The section, when the report carries the trees.
pub fn section(out: &mut String, report: &Report, anchors: &Anchors) {
    if report.config.is_empty() {
        return;
    }
    let mut pointing: HashMap<&str, Vec<&Finding>> = HashMap::new();
    for f in &report.findings {
        if let Some(id) = anchors.of_finding(f) {
            pointing.entry(id).or_default().push(f);
        }
    }
    out.push_str(
        "<section id=\"config\"><h2>Merged config</h2>\n<p class=\"note\">The config as ClickHouse reads it once \
         config.d/, conf.d/ and users.d/ are merged (as <code>chaudit config show --provenance</code> prints it): \
         each element with the file and line that set it, and the findings that point at it. The values of \
         passwords, keys and other secrets are masked.</p>\n",
    );
    for (t, view) in report.config.iter().enumerate() {
        tree(out, t, view, &pointing);
    }
    out.push_str("</section>\n");
}

fn tree(out: &mut String, t: usize, view: &ConfigView, pointing: &HashMap<&str, Vec<&Finding>>) {
    let what = if view.kind == "users" { "Users config" } else { "Server config" };
    let linked: usize = (0..view.elements.len()).filter(|i| pointing.contains_key(element_id(t, *i).as_str())).count();
    let _ = write!(
        out,
        "<details class=\"config-tree\" id=\"config-{kind}\"><summary>{what}: {total} element(s) from {files} file(s){linked}</summary>\n\
         <p class=\"files\">Files, in the order merged: {names}</p>\n",
        kind = esc(view.kind),
        total = view.total,
        files = view.files.len(),
        linked = if linked > 0 { format!(", {linked} with findings") } else { String::new() },
        names = view.files.iter().map(|f| format!("<code>{}</code>", esc(f))).collect::<Vec<_>>().join(", "),
    );
    let left_out = view.total - view.elements.len();
    if left_out > 0 {
        let _ = writeln!(
            out,
            "<p class=\"note\">{left_out} element(s) are not shown: the first {} are shown in their place, and \
             after them, with their path, up to {} that a finding points at. <code>chaudit config show \
             --provenance</code> prints the whole tree.</p>",
            crate::report::SHOWN_ELEMENTS,
            crate::report::SHOWN_POINTED
        );
    }
    out.push_str(
        "<div class=\"scroll\"><table class=\"config\"><thead><tr><th>element</th><th>set in</th>\
         <th>findings</th></tr></thead><tbody>\n",
    );
    for (i, e) in view.elements.iter().enumerate() {
        if e.left_out_before > 0 {
            gap(out, e.left_out_before);
        }
        let id = element_id(t, i);
        let findings = pointing.get(id.as_str());
        row(out, &id, e, findings.map_or(&[][..], Vec::as_slice));
    }
    if view.left_out_after > 0 {
        gap(out, view.left_out_after);
    }
    out.push_str("</tbody></table></div></details>\n");
}

fn gap(out: &mut String, n: usize) {
    let _ = writeln!(out, "<tr class=\"left-out\"><td colspan=\"3\">… {n} element(s) not shown</td></tr>");
}

fn row(out: &mut String, id: &str, e: &ViewElement, findings: &[&Finding]) {
    let _ = write!(
        out,
        "<tr id=\"{id}\"{class}><td class=\"xml\" style=\"padding-left:{indent:.2}em\">",
        class = if findings.is_empty() { "" } else { " class=\"pointed\"" },
        indent = 0.55 + 1.2 * e.depth.min(40) as f64
    );
    if let Some(path) = e.path.as_deref().filter(|p| !p.is_empty()) {
        let _ = write!(out, "<span class=\"path\">{}/</span>", esc(path));
    }
    let _ = write!(out, "<code>&lt;{}", esc(&e.name));
    for (name, value) in &e.attributes {
        let _ = write!(out, " {}=\"{}\"", esc(name), esc(value));
    }
    match &e.value {
        Some(v) => {
            let _ = write!(out, "&gt;{}&lt;/{}&gt;</code>", esc(v), esc(&e.name));
        }
        None if e.has_children => out.push_str("&gt;</code>"),
        None => out.push_str("/&gt;</code>"),
    }
    let _ = write!(out, "</td><td><code>{}:{}</code>", esc(&e.at.file), e.at.line);
    if !e.overrides.is_empty() {
        let _ = write!(out, " <span class=\"note\">(overrides {})</span>", esc(&e.overrides.join(", ")));
    }
    out.push_str("</td><td>");
    let links: Vec<String> = findings
        .iter()
        .map(|f| {
            format!(
                "<a class=\"badge sev-{sev}\" href=\"#f-{rank}\" title=\"{title}\">#{rank} {rule}</a>",
                sev = f.severity.name(),
                rank = f.rank,
                title = esc(&f.title),
                rule = esc(&f.rule_id)
            )
        })
        .collect();
    out.push_str(&links.join(" "));
    out.push_str("</td></tr>\n");
}
