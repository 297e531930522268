//! `--format html`: one self-contained page to read or attach: the verdict, what could not be
//! judged, the ranked findings with their evidence (a series drawn as an SVG chart: chart.rs)
//! and fix (a copy button each), the merged config with provenance (config.rs; a finding links
//! to its element), a replica x rule matrix for a cluster, and filters. Its style
//! and script are inlined and a Content-Security-Policy forbids every request: the page works
//! offline, and nothing a server or a config names can load or run anything. Every text is
//! escaped.

use std::collections::BTreeMap;
use std::fmt::Write;

mod chart;
mod config;

use super::{Report, RuleInfo, outcome_name};
use crate::eval::{Finding, HostEvidence, OutcomeKind};
use crate::rules::Severity;

const STYLE: &str = include_str!("style.css");
const SCRIPT: &str = include_str!("script.js");

/// The page as one string.
pub fn render(report: &Report) -> String {
    super::whole(|out, flush| render_to(report, out, flush))
}

/// Streams the page to `to`, a finding at a time.
pub fn write(report: &Report, to: &mut dyn std::io::Write) -> std::io::Result<()> {
    super::stream(to, |out, flush| render_to(report, out, flush))
}

/// Renders the page into `out`, handed to `flush` after each finding.
fn render_to(report: &Report, out: &mut String, flush: &mut super::Flush) -> std::io::Result<()> {
    let rules: BTreeMap<&str, &RuleInfo> = report.rules.iter().map(|r| (r.id.as_str(), r)).collect();
    head(out, report);
    out.push_str("<body>\n");
    verdict(out, report);
    not_judged(out, report);
    if !report.warnings.is_empty() {
        out.push_str("<section id=\"warnings\"><h2>Warnings</h2><ul>");
        for w in &report.warnings {
            let _ = write!(out, "<li>{}</li>", esc(w));
        }
        out.push_str("</ul></section>\n");
    }
    let hosts = replicas(report);
    let anchors = config::Anchors::of(report);
    if !report.findings.is_empty() {
        by_category(out, report, &rules);
        filters(out, report, &rules, &hosts);
        out.push_str("<section id=\"findings\"><h2>Findings</h2>\n");
        for f in &report.findings {
            finding(out, report, f, rules.get(f.rule_id.as_str()).copied(), anchors.of_finding(f));
            flush(out)?;
        }
        out.push_str("<p id=\"none-shown\" hidden>No finding matches the filters.</p>\n</section>\n");
    }
    config::section(out, report, &anchors);
    if !hosts.is_empty() {
        matrix(out, report, &hosts);
    }
    outcomes(out, report, &rules);
    let _ = write!(out, "<script>{SCRIPT}</script>\n</body>\n</html>\n");
    Ok(())
}

/// The document's head: the style inline, and a policy that allows no request and no script
/// but the page's own (by its hash).
fn head(out: &mut String, report: &Report) {
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; \
         script-src '{}'; img-src data:; form-action 'none'; base-uri 'none'\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"chaudit {}\">\n<link rel=\"icon\" href=\"data:,\">\n\
         <title>chaudit: {}</title>\n<style>{STYLE}</style>\n</head>\n",
        script_hash(),
        report.chaudit_version,
        esc(&report.target)
    );
}

/// A page of the report's style with `body` and no script at all (the drift between two
/// states): nothing is requested, nothing runs.
pub fn static_page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; \
         script-src 'none'; img-src data:; form-action 'none'; base-uri 'none'\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"chaudit {}\">\n<link rel=\"icon\" href=\"data:,\">\n\
         <title>chaudit: {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{body}</body>\n</html>\n",
        env!("CARGO_PKG_VERSION"),
        esc(title)
    )
}

/// The CSP source of the inline script: `sha256-` and its digest in base64.
fn script_hash() -> String {
    use sha2::Digest;
    format!("sha256-{}", base64(&sha2::Sha256::digest(SCRIPT.as_bytes())))
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The header: what was audited, and the verdict as the exit code says it.
fn verdict(out: &mut String, report: &Report) {
    let s = &report.summary;
    let status = s.status;
    let _ = write!(
        out,
        "<header>\n<h1>ClickHouse configuration audit</h1>\n<p class=\"target\">Target: <code>{}</code> · \
         chaudit {}</p>\n<div id=\"verdict\" class=\"verdict status-{}\"><strong>{}</strong> {} \
         <span class=\"exit\">exit code {}</span></div>\n",
        esc(&report.target),
        esc(report.chaudit_version),
        status.name(),
        status.name(),
        esc(status.meaning()),
        status.exit_code()
    );
    if let Some(line) = super::status_line(report) {
        let _ = writeln!(out, "<p class=\"status-line\">{}</p>", esc(&line));
    }
    out.push_str("<table class=\"counts\"><tr>");
    for name in Severity::names() {
        let n = s.by_severity.get(name).copied().unwrap_or(0);
        let _ = write!(out, "<td class=\"sev-{name}\"><span class=\"n\">{n}</span> {name}</td>");
    }
    out.push_str("</tr></table>\n");
    let set_aside = s.set_aside();
    let _ = writeln!(
        out,
        "<p class=\"summary\">{} finding(s){}; <strong>{} failing</strong> (at or above fail-on \
         <code>{}</code>){}; rules: {}.</p>",
        s.findings,
        if set_aside.is_empty() { String::new() } else { format!(", of them {} (not counted)", set_aside.join(", ")) },
        s.failing,
        s.fail_on.map_or("never", Severity::name),
        if s.allow_inconclusive { "; inconclusive rules allowed" } else { "" },
        esc(&s.outcomes.iter().map(|(k, v)| format!("{v} {k}")).collect::<Vec<_>>().join(", "))
    );
    if let Some(line) = report.not_shown_line() {
        let _ = writeln!(out, "<p class=\"not-shown\" id=\"not-shown\">{}</p>", esc(&line));
    }
    out.push_str("</header>\n");
}

/// Errors, then the rules that did not judge: first, since the findings then are not all.
fn not_judged(out: &mut String, report: &Report) {
    if !report.errors.is_empty() {
        out.push_str(
            "<section id=\"errors\" class=\"alert\"><h2>Errors</h2>\n<table><thead><tr><th>where</th>\
                      <th>error</th><th>code</th></tr></thead><tbody>\n",
        );
        for e in &report.errors {
            let at = e.location.as_ref().map_or_else(String::new, |l| format!("{}:{}:{}", l.file, l.line, l.column));
            let _ = writeln!(
                out,
                "<tr><td><code>{}</code></td><td class=\"text\">{}</td><td><code>{}</code></td></tr>",
                esc(&at),
                esc(&e.message),
                esc(&e.code)
            );
        }
        out.push_str("</tbody></table></section>\n");
    }
    for (id, title, list) in [
        ("unjudged", "Rules not judged", &report.unjudged),
        ("allowed", "Inconclusive rules let pass (--allow-inconclusive)", &report.allowed_inconclusive),
    ] {
        if list.is_empty() {
            continue;
        }
        // a replica that could not be read is one row, its rules folded in it; then one row
        // per rule and reason, naming the replicas it holds on (as stderr says it)
        let lines = report.not_judged(list);
        let rules: std::collections::BTreeSet<&str> = list.iter().map(|u| u.rule_id.as_str()).collect();
        let _ = write!(
            out,
            "<section id=\"{id}\" class=\"{}\"><h2>{title}: {} rule(s)</h2>\n<div class=\"scroll\"><table><thead><tr><th>rule</th>\
             <th>replicas</th><th>outcome</th><th>reason</th></tr></thead><tbody>\n",
            if id == "unjudged" { "alert" } else { "note" },
            rules.len()
        );
        for (group, count) in &lines.unread {
            let hosts: Vec<String> = group.iter().map(|r| format!("<code>{}</code>", esc(&r.host))).collect();
            let rules: Vec<String> = group[0].rules.iter().map(|r| format!("<code>{}</code>", esc(r))).collect();
            let _ = writeln!(
                out,
                "<tr class=\"unread\"><td><details><summary>{count} rule(s)</summary>{}</details></td><td>{}</td>\
                 <td class=\"o-inconclusive\">inconclusive</td><td class=\"text\">could not be read: {}</td></tr>",
                rules.join(", "),
                hosts.join(", "),
                esc(&group[0].reason)
            );
        }
        for (u, hosts) in lines.rest {
            let hosts: Vec<String> = hosts.iter().map(|h| format!("<code>{}</code>", esc(h))).collect();
            let _ = writeln!(
                out,
                "<tr><td><code>{}</code></td><td>{}</td><td class=\"o-{kind}\">{kind}</td><td class=\"text\">{}</td></tr>",
                esc(&u.rule_id),
                hosts.join(", "),
                esc(&u.reason),
                kind = outcome_name(u.outcome)
            );
        }
        out.push_str("</tbody></table></div></section>\n");
    }
}

/// The findings per category and severity.
fn by_category(out: &mut String, report: &Report, rules: &BTreeMap<&str, &RuleInfo>) {
    let severities: Vec<&str> = Severity::names().collect();
    let mut counts: BTreeMap<&str, BTreeMap<&str, usize>> = BTreeMap::new();
    for f in &report.findings {
        *counts.entry(category(rules, f)).or_default().entry(f.severity.name()).or_default() += 1;
    }
    out.push_str("<section id=\"categories\"><h2>By category</h2>\n<table><thead><tr><th>category</th>");
    for s in &severities {
        let _ = write!(out, "<th>{s}</th>");
    }
    out.push_str("</tr></thead><tbody>\n");
    for (cat, per) in &counts {
        let _ = write!(out, "<tr><td>{}</td>", esc(cat));
        for s in &severities {
            match per.get(s) {
                Some(n) => {
                    let _ = write!(out, "<td class=\"sev-{s}\">{n}</td>");
                }
                None => out.push_str("<td></td>"),
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></section>\n");
}

/// The filters: hidden until the script shows them (without it every finding is shown).
fn filters(out: &mut String, report: &Report, rules: &BTreeMap<&str, &RuleInfo>, hosts: &[&str]) {
    out.push_str("<form id=\"filters\" hidden><fieldset><legend>Severity</legend>");
    for name in Severity::names() {
        let _ =
            write!(out, "<label><input type=\"checkbox\" name=\"severity\" value=\"{name}\" checked> {name}</label> ");
    }
    out.push_str("</fieldset>\n<label>Category <select id=\"f-category\"><option value=\"\">all</option>");
    let categories: std::collections::BTreeSet<&str> = report.findings.iter().map(|f| category(rules, f)).collect();
    for c in categories {
        let _ = write!(out, "<option value=\"{0}\">{0}</option>", esc(c));
    }
    out.push_str("</select></label>\n");
    if !hosts.is_empty() {
        out.push_str("<label>Replica <select id=\"f-replica\"><option value=\"\">all</option>");
        for h in hosts {
            let _ = write!(out, "<option value=\"{0}\">{0}</option>", esc(h));
        }
        out.push_str("</select></label>\n");
    }
    out.push_str(
        "<label>Search <input type=\"search\" id=\"f-text\" placeholder=\"rule, object, text\"></label>\n\
         <span id=\"f-count\"></span></form>\n",
    );
}

fn finding(out: &mut String, report: &Report, f: &Finding, rule: Option<&RuleInfo>, element: Option<&str>) {
    let sev = f.severity.name();
    let hosts: Vec<&str> = f.hosts.iter().map(|h| h.host.as_str()).collect();
    let hosts_json = serde_json::to_string(&hosts).unwrap_or_default();
    let state = match (&f.suppressed, f.baselined) {
        (Some(s), _) => format!(
            "<span class=\"badge set-aside\">suppressed ({}) at {}: {}</span>",
            esc(s.kind),
            esc(&s.at),
            esc(&s.reason)
        ),
        (None, true) => "<span class=\"badge set-aside\">in the baseline</span>".to_string(),
        (None, false) if report.fails(f) => "<span class=\"badge failing\">failing</span>".to_string(),
        (None, false) => String::new(),
    };
    let _ = write!(
        out,
        "<article class=\"finding sev-{sev}\" id=\"f-{rank}\" data-severity=\"{sev}\" data-category=\"{cat}\" \
         data-rule=\"{rule_id}\" data-hosts=\"{hosts}\" data-fingerprint=\"{fp}\">\n\
         <h3><span class=\"rank\">#{rank}</span> <span class=\"badge sev-{sev}\">{sev}</span> {title} {state}</h3>\n\
         <p class=\"message text\">{message}</p>\n<dl class=\"facts\">",
        rank = f.rank,
        cat = esc(rule.map_or("", |r| r.category.as_str())),
        rule_id = esc(&f.rule_id),
        hosts = esc(&hosts_json),
        fp = esc(&f.fingerprint),
        title = esc(&f.title),
        message = esc(&f.message),
    );
    let docs = format!("docs/rules/{}.md", f.rule_id);
    let _ = write!(
        out,
        "<dt>rule</dt><dd><a href=\"{}\"><code>{}</code></a> · <a href=\"#rule-{}\">about</a>",
        esc(&docs),
        esc(&f.rule_id),
        esc(&f.rule_id)
    );
    if let Some(uri) = rule.and_then(|r| r.help_uri.as_deref()) {
        let _ = write!(out, " · <a href=\"{}\" rel=\"noreferrer\">reference</a>", esc(uri));
    }
    out.push_str("</dd>");
    if let Some(r) = rule {
        let _ = write!(out, "<dt>category</dt><dd>{}", esc(&r.category));
        if !r.tags.is_empty() {
            let _ = write!(out, " · tags: {}", esc(&r.tags.join(", ")));
        }
        out.push_str("</dd>");
    }
    if let Some(object) = &f.object {
        let _ = write!(out, "<dt>object</dt><dd><code>{}</code></dd>", esc(object));
    }
    if let Some(l) = &f.location {
        let at = format!("<code>{}:{}</code>", esc(&l.file), l.line);
        match element {
            Some(id) => {
                let _ = write!(
                    out,
                    "<dt>location</dt><dd><a class=\"to-config\" href=\"#{id}\">{at}</a> (in the merged config)</dd>"
                );
            }
            None if !report.config.is_empty() => {
                let _ = write!(out, "<dt>location</dt><dd>{at} (not among the elements the merged config shows)</dd>");
            }
            None => {
                let _ = write!(out, "<dt>location</dt><dd>{at}</dd>");
            }
        }
    }
    let _ = writeln!(out, "<dt>fingerprint</dt><dd><code>{}</code> · score {}</dd></dl>", esc(&f.fingerprint), f.score);
    if f.hosts.is_empty() {
        if !f.evidence.is_empty() {
            out.push_str("<h4>Evidence</h4>\n");
            evidence(out, &f.evidence);
        }
    } else {
        host_evidence(out, &f.hosts);
    }
    fix(out, f);
    out.push_str("</article>\n");
}

/// Evidence as a table of its keys, a value that is not a string as compact JSON; a series
/// summed up in the table (its values folded) and drawn below it.
fn evidence(out: &mut String, evidence: &crate::eval::Evidence) {
    out.push_str("<table class=\"evidence\"><tbody>\n");
    let mut series = Vec::new();
    for (k, v) in evidence {
        match super::series::series(v) {
            Some(drawn) => {
                let _ = writeln!(
                    out,
                    "<tr><th>{}</th><td>{} (chart below)<details><summary>values</summary><code>{}</code></details></td></tr>",
                    esc(k),
                    esc(&super::series::summaries(&drawn)),
                    esc(&value(v))
                );
                series.push((k, drawn));
            }
            None => {
                let _ = writeln!(out, "<tr><th>{}</th><td><code>{}</code></td></tr>", esc(k), esc(&value(v)));
            }
        }
    }
    out.push_str("</tbody></table>\n");
    if !series.is_empty() {
        out.push_str("<div class=\"charts\">");
        for (k, points) in series {
            chart::svg(out, k, &points);
        }
        out.push_str("</div>\n");
    }
}

fn value(v: &serde_json::Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

/// A cluster finding: the replicas where it holds, each with its version, message and evidence.
fn host_evidence(out: &mut String, hosts: &[HostEvidence]) {
    let _ = write!(
        out,
        "<h4>On {} replica(s)</h4>\n<table class=\"evidence hosts\"><thead><tr><th>replica</th><th>version</th>\
         <th>message</th><th>evidence</th></tr></thead><tbody>\n",
        hosts.len()
    );
    // the replicas that say the same in one row: equal evidence is shown once
    for group in super::alike_hosts(hosts, true) {
        let h = group[0];
        let names: Vec<String> = group.iter().map(|h| format!("<code>{}</code>", esc(&h.host))).collect();
        let _ = write!(
            out,
            "<tr><th>{}</th><td>{}</td><td class=\"text\">{}</td><td>",
            names.join(", "),
            esc(h.version.as_deref().unwrap_or("")),
            esc(h.message.as_deref().unwrap_or(""))
        );
        if !h.evidence.is_empty() {
            evidence(out, &h.evidence);
        }
        out.push_str("</td></tr>\n");
    }
    out.push_str("</tbody></table>\n");
}

/// The fix: what only the user can do, then each snippet with a copy button.
fn fix(out: &mut String, f: &Finding) {
    let r = &f.remediation;
    let restart = if r.restart { "needs a restart" } else { "no restart needed" };
    let _ = writeln!(out, "<div class=\"fix\"><h4>Fix <span class=\"restart\">({restart})</span></h4>");
    let merge = r.manifest.as_ref().map(|m| m.merge.clone());
    let patch = r.manifest.as_ref().map(|m| m.command.clone());
    let patch_label = format!("Or patch the {}", r.manifest.as_ref().map_or("installation", |m| m.patches));
    for (kind, label, text) in [
        ("manual", "What only you can do", &r.manual),
        ("config", "Config fragment", &r.config),
        ("manifest", "Merge into the manifest", &merge),
        ("manifest", patch_label.as_str(), &patch),
        ("sql", "SQL", &r.sql),
        ("command", "On the server's host", &r.command),
    ] {
        if let Some(text) = text {
            let _ = writeln!(
                out,
                "<div class=\"snippet {kind}\"><div class=\"snippet-head\">{label} \
                 <button type=\"button\" class=\"copy\" hidden>Copy</button></div><pre><code>{}</code></pre></div>",
                esc(text.trim_end())
            );
        }
    }
    out.push_str("</div>\n");
}

/// The replicas of a cluster report, in the order the outcomes name them.
fn replicas(report: &Report) -> Vec<&str> {
    let mut hosts: Vec<&str> = Vec::new();
    let named = report.outcomes.iter().flat_map(|o| o.hosts.iter().map(|h| h.host.as_str()));
    for h in named.chain(report.findings.iter().flat_map(|f| f.hosts.iter().map(|h| h.host.as_str()))) {
        if !hosts.contains(&h) {
            hosts.push(h);
        }
    }
    hosts
}

/// Replica x rule: each rule's outcome on each replica; rules not applicable on every replica
/// are counted, not listed.
fn matrix(out: &mut String, report: &Report, hosts: &[&str]) {
    let rows: Vec<_> = report
        .outcomes
        .iter()
        .filter(|o| {
            o.outcome != OutcomeKind::NotApplicable || o.hosts.iter().any(|h| h.outcome != OutcomeKind::NotApplicable)
        })
        .collect();
    out.push_str("<section id=\"matrix\"><h2>Replicas × rules</h2>\n<div class=\"scroll\"><table class=\"matrix\"><thead><tr><th>rule</th><th>overall</th>");
    for h in hosts {
        let _ = write!(out, "<th><code>{}</code></th>", esc(h));
    }
    out.push_str("</tr></thead><tbody>\n");
    for o in &rows {
        let kind = outcome_name(o.outcome);
        let _ = write!(
            out,
            "<tr><th><code>{}</code></th><td class=\"o-{kind}\" title=\"{}\">{kind}</td>",
            esc(&o.rule_id),
            esc(o.reason.as_deref().unwrap_or(""))
        );
        for h in hosts {
            match o.hosts.iter().find(|x| x.host == *h) {
                Some(x) => {
                    let kind = outcome_name(x.outcome);
                    let _ = write!(
                        out,
                        "<td class=\"o-{kind}\" title=\"{}\">{kind}</td>",
                        esc(x.reason.as_deref().unwrap_or(""))
                    );
                }
                None => out.push_str("<td class=\"o-none\">-</td>"),
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table></div>\n");
    let skipped = report.outcomes.len() - rows.len();
    if skipped > 0 {
        let _ = writeln!(out, "<p class=\"note\">{skipped} rule(s) not applicable on any replica are not listed.</p>");
    }
    out.push_str("</section>\n");
}

/// Every rule that ran with its outcome and what it checks (once, however many findings it
/// has), folded.
fn outcomes(out: &mut String, report: &Report, rules: &BTreeMap<&str, &RuleInfo>) {
    let _ = write!(
        out,
        "<section id=\"rules\"><details><summary><h2>All rules ({})</h2></summary>\n<table><thead><tr><th>rule</th>\
         <th>outcome</th><th>reason</th><th>what it checks</th></tr></thead><tbody>\n",
        report.outcomes.len()
    );
    for o in &report.outcomes {
        let kind = outcome_name(o.outcome);
        let _ = write!(
            out,
            "<tr id=\"rule-{0}\"><td><code>{0}</code></td><td class=\"o-{kind}\">{kind}</td><td class=\"text\">{1}</td><td>",
            esc(&o.rule_id),
            esc(o.reason.as_deref().unwrap_or(""))
        );
        if let Some(r) = rules.get(o.rule_id.as_str()) {
            let _ = write!(
                out,
                "<details><summary>{}</summary><div class=\"text\">{}</div></details>",
                esc(&r.title),
                esc(r.description.trim_end())
            );
        }
        out.push_str("</td></tr>\n");
    }
    out.push_str("</tbody></table></details></section>\n");
}

fn category<'a>(rules: &BTreeMap<&str, &'a RuleInfo>, f: &Finding) -> &'a str {
    rules.get(f.rule_id.as_str()).map_or("other", |r| r.category.as_str())
}

/// Text as HTML text or an attribute value (quoted with `"`): `&`, `<`, `>`, `"` and `'`
/// become references, so no name or value is ever markup.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests;
