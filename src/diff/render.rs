//! The diff as text (nothing when the sides are equal), Markdown, HTML and JSON.

use std::fmt::Write;

use super::{Diff, Value1};

/// The differences, one line each, by section; empty when the sides are equal.
pub fn text(diff: &Diff) -> String {
    if diff.equal {
        return String::new();
    }
    let mut out = String::new();
    let _ = writeln!(out, "--- A: {} ({})", diff.a.name, diff.a.kind.name());
    let _ = writeln!(out, "+++ B: {} ({})", diff.b.name, diff.b.kind.name());
    for section in diff.sections.iter().filter(|s| !s.differences.is_empty()) {
        let _ = writeln!(out, "\n{} ({} differ of {}):", section.section, section.differences.len(), section.compared);
        for d in &section.differences {
            let masked = matches!((&d.a, &d.b), (Some(a), Some(b)) if a.value == b.value);
            let note = if masked { " (the values differ; secrets are not shown)" } else { "" };
            let _ = writeln!(out, "  {}: {} -> {}{note}", d.key, side(d.a.as_ref()), side(d.b.as_ref()));
        }
    }
    if let Some(f) = diff.findings.as_ref().filter(|f| !f.new.is_empty() || !f.gone.is_empty()) {
        let _ = writeln!(
            out,
            "\nfindings ({} new in B, {} gone from A, {} unchanged):",
            f.new.len(),
            f.gone.len(),
            f.unchanged
        );
        for (sign, items) in [("+", &f.new), ("-", &f.gone)] {
            for item in items {
                let object = item.object.as_deref().map(|o| format!(" ({o})")).unwrap_or_default();
                let _ = writeln!(out, "  {sign} {} [{}]{object}: {}", item.rule_id, item.severity.name(), item.title);
            }
        }
    }
    if !diff.not_compared.is_empty() {
        let _ = writeln!(out);
        for n in &diff.not_compared {
            let _ = writeln!(out, "not compared: {}: {}", n.section, n.reason);
        }
    }
    crate::mask::without_controls(&out).into_owned()
}

fn side(value: Option<&Value1>) -> String {
    match value {
        None => "(absent)".into(),
        Some(Value1 { value, default: true, .. }) => format!("{} (not set: the default)", quoted(value)),
        Some(Value1 { value, at: Some(at), .. }) => format!("{} ({at})", quoted(value)),
        Some(Value1 { value, at: None, .. }) => quoted(value),
    }
}

fn quoted(value: &str) -> String {
    if value.is_empty() || value.contains([' ', ',']) { format!("`{value}`") } else { value.to_string() }
}

/// The diff in Markdown: a table per section that differs, the findings, what was not
/// compared; a line saying so when the sides are equal.
pub fn markdown(diff: &Diff) -> String {
    let cell = |text: &str| text.replace('|', "\\|").replace('\n', " ");
    let mut out = String::new();
    let _ = writeln!(out, "# Drift\n");
    let _ = writeln!(out, "- A: `{}` ({})", cell(&diff.a.name), diff.a.kind.name());
    let _ = writeln!(out, "- B: `{}` ({})\n", cell(&diff.b.name), diff.b.kind.name());
    if diff.equal {
        let _ = writeln!(out, "The two sides are equal.\n");
    }
    for section in diff.sections.iter().filter(|s| !s.differences.is_empty()) {
        let _ =
            writeln!(out, "## {} ({} differ of {})\n", section.section, section.differences.len(), section.compared);
        let _ = writeln!(out, "| name | A | B |\n|---|---|---|");
        for d in &section.differences {
            let masked = matches!((&d.a, &d.b), (Some(a), Some(b)) if a.value == b.value);
            let note = if masked { " (the values differ; secrets are not shown)" } else { "" };
            let (a, b) = (cell(&side(d.a.as_ref())), cell(&side(d.b.as_ref())));
            let _ = writeln!(out, "| `{}` | {a} | {b}{note} |", cell(&d.key));
        }
        let _ = writeln!(out);
    }
    if let Some(f) = diff.findings.as_ref().filter(|f| !f.new.is_empty() || !f.gone.is_empty()) {
        let _ = writeln!(
            out,
            "## Findings ({} new in B, {} gone from A, {} unchanged)\n",
            f.new.len(),
            f.gone.len(),
            f.unchanged
        );
        for (what, items) in [("new", &f.new), ("gone", &f.gone)] {
            for item in items {
                let object = item.object.as_deref().map(|o| format!(" (`{}`)", cell(o))).unwrap_or_default();
                let _ = writeln!(
                    out,
                    "- {what}: `{}` [{}]{object}: {}",
                    item.rule_id,
                    item.severity.name(),
                    cell(&item.title)
                );
            }
        }
        let _ = writeln!(out);
    }
    if !diff.not_compared.is_empty() {
        let _ = writeln!(out, "## Not compared\n");
        for n in &diff.not_compared {
            let _ = writeln!(out, "- {}: {}", n.section, cell(&n.reason));
        }
    }
    crate::mask::without_controls(&out).into_owned()
}

/// The diff as one self-contained HTML page: a table per section that differs, the
/// findings, what was not compared; every name and value escaped, no script.
pub fn html(diff: &Diff) -> String {
    use crate::report::html::esc;
    let mut out = String::new();
    let _ = writeln!(out, "<header><h1>Drift</h1>\n<table class=\"sides\"><tbody>");
    for (which, side) in [("A", &diff.a), ("B", &diff.b)] {
        let _ =
            writeln!(out, "<tr><th>{which}</th><td><code>{}</code> ({})</td></tr>", esc(&side.name), side.kind.name());
    }
    let differing: usize = diff.sections.iter().map(|s| s.differences.len()).sum();
    let verdict = match diff.equal {
        true => "The two sides are equal.".to_string(),
        false => format!("{differing} difference(s); exit 1"),
    };
    let _ = writeln!(out, "</tbody></table>\n<p id=\"verdict\">{}</p>\n</header>", esc(&verdict));
    for section in diff.sections.iter().filter(|s| !s.differences.is_empty()) {
        let _ = writeln!(
            out,
            "<section class=\"drift\"><h2>{} ({} differ of {})</h2>\n<table><thead><tr><th>name</th><th>A</th>\
             <th>B</th></tr></thead><tbody>",
            esc(section.section),
            section.differences.len(),
            section.compared
        );
        for d in &section.differences {
            let masked = matches!((&d.a, &d.b), (Some(a), Some(b)) if a.value == b.value);
            let note = if masked { " (the values differ; secrets are not shown)" } else { "" };
            let _ = writeln!(
                out,
                "<tr><td><code>{}</code></td><td>{}</td><td>{}{}</td></tr>",
                esc(&d.key),
                esc(&side(d.a.as_ref())),
                esc(&side(d.b.as_ref())),
                esc(note)
            );
        }
        let _ = writeln!(out, "</tbody></table>\n</section>");
    }
    if let Some(f) = diff.findings.as_ref().filter(|f| !f.new.is_empty() || !f.gone.is_empty()) {
        let _ = writeln!(
            out,
            "<section id=\"findings\"><h2>Findings ({} new in B, {} gone from A, {} unchanged)</h2>\n<table>\
             <thead><tr><th></th><th>rule</th><th>severity</th><th>object</th><th>title</th></tr></thead><tbody>",
            f.new.len(),
            f.gone.len(),
            f.unchanged
        );
        for (what, items) in [("new", &f.new), ("gone", &f.gone)] {
            for item in items {
                let _ = writeln!(
                    out,
                    "<tr><td>{what}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(&item.rule_id),
                    item.severity.name(),
                    esc(item.object.as_deref().unwrap_or("")),
                    esc(&item.title)
                );
            }
        }
        let _ = writeln!(out, "</tbody></table>\n</section>");
    }
    if !diff.not_compared.is_empty() {
        let _ = writeln!(out, "<section id=\"not-compared\"><h2>Not compared</h2>\n<ul>");
        for n in &diff.not_compared {
            let _ = writeln!(out, "<li>{}: {}</li>", esc(n.section), esc(&n.reason));
        }
        let _ = writeln!(out, "</ul>\n</section>");
    }
    let title = format!("drift between {} and {}", diff.a.name, diff.b.name);
    crate::mask::without_controls(&crate::report::html::static_page(&title, &out)).into_owned()
}

/// The diff as one JSON object.
pub fn json(diff: &Diff) -> String {
    let mut text = serde_json::to_string_pretty(diff).expect("a diff serializes");
    text.push('\n');
    text
}
