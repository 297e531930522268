//! `--format markdown`: a review document to attach to a change request.

use std::fmt::Write;

use super::{Report, outcome_name};

/// The document as one string.
pub fn render(report: &Report) -> String {
    super::whole(|out, flush| render_to(report, out, flush))
}

/// Streams the document to `to`, a finding at a time.
pub fn write(report: &Report, to: &mut dyn std::io::Write) -> std::io::Result<()> {
    super::stream(to, |out, flush| render_to(report, out, flush))
}

/// Renders the document into `out`, handed to `flush` after each finding.
fn render_to(report: &Report, out: &mut String, flush: &mut super::Flush) -> std::io::Result<()> {
    let _ = writeln!(out, "# ClickHouse configuration audit\n");
    let _ = writeln!(out, "Target: {} · chaudit {}\n", code(&report.target), report.chaudit_version);
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
    if let Some(line) = report.not_shown_line() {
        let _ = writeln!(out, "{}\n", text(&line));
    }
    if !report.findings.is_empty() {
        let _ = writeln!(out, "| # | severity | rule | where | finding |\n|---|---|---|---|---|");
        for f in &report.findings {
            let at = f.location.as_ref().map_or("-".into(), |l| code(&format!("{}:{}", l.file, l.line)));
            let _ = writeln!(
                out,
                "| {} | {} | `{}` | {} | {} |",
                f.rank,
                f.severity.name(),
                f.rule_id,
                at,
                cell(&f.message)
            );
            flush(out)?;
        }
        out.push('\n');
    }
    for f in &report.findings {
        let _ = writeln!(out, "## {}. {}\n", f.rank, text(&f.title));
        let at = f.location.as_ref().map_or(String::new(), |l| format!(" at {}", code(&l.to_string())));
        let _ = writeln!(out, "`{}` · {}{}\n", f.rule_id, f.severity.name(), at);
        let _ = writeln!(out, "{}\n", text(&f.message));
        if !f.hosts.is_empty() {
            // the replicas that say the same on one line: equal evidence is shown once
            let groups = super::alike_hosts(&f.hosts, true);
            if groups.len() == 1 && f.hosts.len() > 1 {
                let _ = writeln!(out, "On {} replica(s), each with the same evidence:\n", f.hosts.len());
            } else {
                let _ = writeln!(out, "On {} replica(s):\n", f.hosts.len());
            }
            for group in groups {
                let h = group[0];
                let evidence: Vec<String> = h.evidence.iter().map(|(k, v)| format!("{k} {}", value_code(v))).collect();
                let said = h.message.as_deref().map_or_else(String::new, |m| format!(" {}", text(m)));
                let _ = writeln!(
                    out,
                    "- {}{}{said}{}",
                    group.iter().map(|h| code(&h.host)).collect::<Vec<_>>().join(", "),
                    h.version.as_deref().map_or_else(String::new, |v| format!(" ({v})")),
                    if evidence.is_empty() { String::new() } else { format!(": {}", evidence.join(", ")) }
                );
            }
            out.push('\n');
        } else if !f.evidence.is_empty() {
            let _ = writeln!(out, "Evidence:\n");
            for (k, v) in &f.evidence {
                match v.as_str().filter(|v| v.contains('\n')) {
                    // a multi-line value (an XML fragment) keeps its lines
                    Some(lines) => {
                        let block = fenced("", lines).replace('\n', "\n  ");
                        let _ = writeln!(out, "- {k}:\n\n  {block}");
                    }
                    None => {
                        let _ = writeln!(out, "- {k}: {}", value_code(v));
                    }
                }
            }
            out.push('\n');
        }
        let restart = if f.remediation.restart { "needs a restart" } else { "no restart needed" };
        let _ = writeln!(out, "Fix ({restart}):\n");
        if let Some(manual) = &f.remediation.manual {
            let _ = writeln!(out, "{}\n", text(manual.trim_end()));
        }
        if let Some(config) = &f.remediation.config {
            let _ = writeln!(out, "{}\n", fenced("xml", config));
        }
        if let Some(sql) = &f.remediation.sql {
            let _ = writeln!(out, "{}\n", fenced("sql", sql));
        }
        if let Some(manifest) = &f.remediation.manifest {
            let label = if f.remediation.manual.is_some() { "For example, merge" } else { "Merge" };
            let _ = writeln!(out, "{label} into the manifest:\n\n{}\n", fenced("yaml", &manifest.merge));
            let _ = writeln!(out, "Or patch the {}:\n\n{}\n", manifest.patches, fenced("sh", &manifest.command));
        }
        if let Some(command) = &f.remediation.command {
            let _ = writeln!(out, "On the host:\n\n{}\n", fenced("sh", command));
        }
        flush(out)?;
    }
    let _ = writeln!(out, "## Rules\n\n| rule | outcome | reason |\n|---|---|---|");
    for o in &report.outcomes {
        let _ = writeln!(
            out,
            "| {} | {} | {} |",
            code(&o.rule_id),
            outcome_name(o.outcome),
            cell(o.reason.as_deref().unwrap_or(""))
        );
    }
    Ok(())
}

/// Prose for GitHub, which strips raw HTML (`<password remove="1"/>` would vanish): its code
/// spans kept as written, each run of XML tags outside them (with the text between tags of
/// one run: `<ip>::1</ip>`) as inline code, and any other `<`, `>` and `&` escaped.
pub(crate) fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while !rest.is_empty() {
        if rest.starts_with('`') {
            let ticks = rest.len() - rest.trim_start_matches('`').len();
            let after = &rest[ticks..];
            match closing_ticks(after, ticks) {
                Some(end) => {
                    out.push_str(&rest[..ticks + end + ticks]);
                    rest = &after[end + ticks..];
                }
                None => {
                    out.push_str(&"\\`".repeat(ticks));
                    rest = after;
                }
            }
        } else if let Some(len) = tag_run(rest) {
            out.push_str(&code(&rest[..len]));
            rest = &rest[len..];
        } else {
            let c = rest.chars().next().unwrap_or_default();
            match c {
                '&' => out.push_str("&amp;"),
                '<' => out.push_str("&lt;"),
                '>' => out.push_str("&gt;"),
                c => out.push(c),
            }
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// Where a code span opened by `ticks` backticks closes in `s` (a run of exactly as many).
fn closing_ticks(s: &str, ticks: usize) -> Option<usize> {
    let mut at = 0;
    while let Some(found) = s[at..].find('`') {
        let start = at + found;
        let run = s[start..].len() - s[start..].trim_start_matches('`').len();
        if run == ticks {
            return Some(start);
        }
        at = start + run;
    }
    None
}

/// The length of the XML tag at the start of `s` (`<name ...>`, `</name>`, `<!-- ... -->`,
/// `<?...?>`), if one is.
fn tag(s: &str) -> Option<usize> {
    let mut chars = s.chars();
    if chars.next() != Some('<') || !chars.next().is_some_and(|c| c.is_ascii_alphabetic() || "/!?_".contains(c)) {
        return None;
    }
    if s.starts_with("<!--") {
        return s.find("-->").map(|end| end + 3);
    }
    s.find('>').map(|end| end + 1).filter(|end| !s[1..end - 1].contains('<'))
}

/// The length of the run of tags at the start of `s`: a tag, and any tag that follows it
/// directly or after text without white space (`<clickhouse><users>`, `<ip>::1</ip>`).
fn tag_run(s: &str) -> Option<usize> {
    let mut len = tag(s)?;
    loop {
        let rest = &s[len..];
        let word = rest.find(|c: char| c.is_whitespace() || c == '<' || c == '`').unwrap_or(rest.len());
        match tag(&rest[word..]) {
            Some(next) if rest[word..].starts_with('<') => len += word + next,
            _ => return Some(len),
        }
    }
}

/// `s` as inline code on one line: between backtick runs longer than any inside it, padded
/// with a space when it starts or ends with a backtick (CommonMark).
pub(crate) fn code(s: &str) -> String {
    let s = s.replace('\n', " ");
    let fence = "`".repeat(longest_tick_run(&s) + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') { " " } else { "" };
    format!("{fence}{pad}{s}{pad}{fence}")
}

/// `s` as a fenced block of `lang`: the fence longer than any backtick run inside it.
fn fenced(lang: &str, s: &str) -> String {
    let fence = "`".repeat(longest_tick_run(s).max(2) + 1);
    format!("{fence}{lang}\n{}\n{fence}", s.trim_end())
}

fn longest_tick_run(s: &str) -> usize {
    s.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

/// An evidence value as inline code (a string as it is, a series in words, anything else as
/// JSON).
fn value_code(v: &serde_json::Value) -> String {
    let words = || super::series::in_words(v).unwrap_or_else(|| v.to_string());
    code(&v.as_str().map_or_else(words, str::to_string))
}

/// A table cell: prose on one line, `|` escaped.
pub(crate) fn cell(s: &str) -> String {
    text(s).replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_keep_tags_as_code_and_escape_pipes() {
        assert_eq!(cell("plain text (<password>) a|b\nc & d < e"), "plain text (`<password>`) a\\|b c &amp; d &lt; e");
    }

    #[test]
    fn tags_in_prose_are_code_never_raw_html() {
        let manual = "under <clickhouse><users><default>: <password remove=\"1\"/>; and\n<networks replace=\"1\"> \
                      listing <ip>127.0.0.1</ip>, <ip>::1</ip>; `<kept> as written` and <!-- a comment -->";
        assert_eq!(
            text(manual),
            "under `<clickhouse><users><default>`: `<password remove=\"1\"/>`; and\n`<networks replace=\"1\">` \
             listing `<ip>127.0.0.1</ip>`, `<ip>::1</ip>`; `<kept> as written` and `<!-- a comment -->`"
        );
        // a backtick inside a tag, or one that opens no code span
        assert_eq!(text("<a b=\"`x`\"/> and ` alone"), "``<a b=\"`x`\"/>`` and \\` alone");
        assert_eq!(code("`x`"), "`` `x` ``");
        assert_eq!(fenced("xml", "<a>\n```\n</a>\n"), "````xml\n<a>\n```\n</a>\n````");
        // whatever the text, no `<` is left outside a code span
        for s in [manual, "<a>`<b>`</a>", "x <y z> ` <w>", "<<a>>", "`<a>``"] {
            let rendered = text(s);
            let mut outside = String::new();
            let mut rest = rendered.as_str();
            while let Some(open) = rest.find('`') {
                outside.push_str(&rest[..open]);
                if rest[..open].ends_with('\\') {
                    rest = &rest[open + 1..];
                    continue;
                }
                let ticks = rest[open..].len() - rest[open..].trim_start_matches('`').len();
                let after = &rest[open + ticks..];
                rest = closing_ticks(after, ticks).map_or(after, |end| &after[end + ticks..]);
            }
            outside.push_str(rest);
            assert!(!outside.contains('<'), "{s:?} -> {rendered:?}");
        }
    }
}
