//! `--format markdown`: a review document to attach to a change request.

use std::fmt::Write;

use super::{Report, outcome_name};

pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# ClickHouse configuration audit\n");
    let _ = writeln!(out, "Target: `{}` · chaudit {}\n", report.target, report.chaudit_version);
    if let Some(line) = super::status_line(report) {
        let _ = writeln!(out, "> **Warning**: {}\n", text(&line).replace('\n', " "));
    }
    let s = &report.summary;
    let counts = s.severity_counts();
    let _ = writeln!(
        out,
        "**{} finding(s)**{}; {} at or above `{}`.\n",
        s.findings,
        if counts.is_empty() { String::new() } else { format!(" ({})", counts.join(", ")) },
        s.failing,
        s.fail_on.map_or("never", crate::rules::Severity::name)
    );
    if !report.findings.is_empty() {
        let _ = writeln!(out, "| # | severity | rule | where | finding |\n|---|---|---|---|---|");
        for f in &report.findings {
            let at = f.location.as_ref().map_or("-".into(), |l| format!("`{}:{}`", l.file, l.line));
            let _ = writeln!(
                out,
                "| {} | {} | `{}` | {} | {} |",
                f.rank,
                f.severity.name(),
                f.rule_id,
                at,
                cell(&f.message)
            );
        }
        out.push('\n');
    }
    for f in &report.findings {
        let _ = writeln!(out, "## {}. {}\n", f.rank, f.title);
        let at = f.location.as_ref().map_or(String::new(), |l| format!(" at `{l}`"));
        let _ = writeln!(out, "`{}` · {}{}\n", f.rule_id, f.severity.name(), at);
        let _ = writeln!(out, "{}\n", text(&f.message));
        if !f.hosts.is_empty() {
            let _ = writeln!(out, "On {} replica(s):\n", f.hosts.len());
            for h in &f.hosts {
                let evidence: Vec<String> = h
                    .evidence
                    .iter()
                    .map(|(k, v)| format!("{k} `{}`", v.as_str().map_or_else(|| v.to_string(), str::to_string)))
                    .collect();
                let said = h.message.as_deref().map_or_else(String::new, |m| format!(" {}", text(m)));
                let _ = writeln!(
                    out,
                    "- `{}`{}{said}{}",
                    h.host,
                    h.version.as_deref().map_or_else(String::new, |v| format!(" ({v})")),
                    if evidence.is_empty() { String::new() } else { format!(": {}", evidence.join(", ")) }
                );
            }
            out.push('\n');
        } else if !f.evidence.is_empty() {
            let _ = writeln!(out, "Evidence:\n");
            for (k, v) in &f.evidence {
                let _ = writeln!(out, "- {k}: `{}`", v.as_str().map_or_else(|| v.to_string(), str::to_string));
            }
            out.push('\n');
        }
        let restart = if f.remediation.restart { "needs a restart" } else { "no restart needed" };
        let _ = writeln!(out, "Fix ({restart}):\n");
        if let Some(manual) = &f.remediation.manual {
            let _ = writeln!(out, "{}\n", manual.trim_end());
        }
        if let Some(config) = &f.remediation.config {
            let _ = writeln!(out, "```xml\n{}\n```\n", config.trim_end());
        }
        if let Some(sql) = &f.remediation.sql {
            let _ = writeln!(out, "```sql\n{}\n```\n", sql.trim_end());
        }
        if let Some(command) = &f.remediation.command {
            let _ = writeln!(out, "On the host:\n\n```sh\n{}\n```\n", command.trim_end());
        }
    }
    let _ = writeln!(out, "## Rules\n\n| rule | outcome | reason |\n|---|---|---|");
    for o in &report.outcomes {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} |",
            o.rule_id,
            outcome_name(o.outcome),
            cell(o.reason.as_deref().unwrap_or(""))
        );
    }
    out
}

/// Prose with `<`, `>` and `&` escaped: GitHub would take `<password>` for a tag and hide it.
fn text(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// A table cell: escaped prose on one line, `|` escaped.
fn cell(s: &str) -> String {
    text(s).replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_escape_tags_and_pipes() {
        assert_eq!(cell("plain text (<password>) a|b\nc"), "plain text (&lt;password&gt;) a\\|b c");
    }
}
