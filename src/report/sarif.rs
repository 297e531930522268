//! `--format sarif`: SARIF 2.1.0 as GitHub code scanning ingests it. Every rule that ran is
//! in tool.driver.rules (with full description and markdown help); every finding is a
//! result with a physical location relative to the working directory, a partial
//! fingerprint, and its suppression or baseline state.

use std::path::{Component, Path, PathBuf};

use serde_json::{Value, json};

use super::{Report, RuleInfo};
use crate::eval::Finding;
use crate::rules::Severity;

const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";
const FINGERPRINT_KEY: &str = "chauditFingerprint/v1";

/// The run's verdict: not successful unless it judged what it was asked to, with a
/// notification per error, per rule (and replica) that did not judge, and per inconclusive
/// rule let pass.
fn invocation(report: &Report, written: usize) -> serde_json::Value {
    use crate::eval::OutcomeKind;
    let mut notifications: Vec<serde_json::Value> =
        report.errors.iter().map(|e| json!({"level": "error", "message": {"text": e.message}})).collect();
    let notice = |rule: &str, host: Option<&str>, kind: OutcomeKind, reason: &str, level: &str| {
        let on = host.map_or_else(String::new, |h| format!(" on {h}"));
        let text = format!("{rule}{on} {}: {reason}", super::outcome_name(kind));
        json!({"level": level, "message": {"text": text}, "associatedRule": {"id": rule}})
    };
    for u in &report.unjudged {
        notifications.push(notice(&u.rule_id, u.host.as_deref(), u.outcome, &u.reason, "error"));
    }
    if report.summary.allow_inconclusive {
        for o in report.outcomes.iter() {
            let hosts: Vec<(Option<&str>, Option<&str>, OutcomeKind)> = if o.hosts.is_empty() {
                vec![(None, o.reason.as_deref(), o.outcome)]
            } else {
                o.hosts.iter().map(|h| (Some(h.host.as_str()), h.reason.as_deref(), h.outcome)).collect()
            };
            for (host, reason, kind) in hosts.into_iter().filter(|(_, _, k)| *k == OutcomeKind::Inconclusive) {
                notifications.push(notice(&o.rule_id, host, kind, reason.unwrap_or(""), "warning"));
            }
        }
    }
    if written < report.findings.len() {
        let text = format!(
            "{written} of {} findings written, the highest ranked: GitHub code scanning takes at most {MAX_RESULTS} \
             results per run and {} MB gzip-compressed per file (the JSON report holds every finding)",
            report.findings.len(),
            MAX_GZIP_BYTES / 1_000_000
        );
        notifications.push(json!({"level": "warning", "message": {"text": text}}));
    }
    let mut invocation = json!({
        "executionSuccessful": report.summary.status.judged(),
        "properties": {"status": report.summary.status, "failOn": report.summary.fail_on.map_or("never", Severity::name)},
    });
    if !notifications.is_empty() {
        invocation["toolExecutionNotifications"] = Value::Array(notifications);
    }
    invocation
}

/// GitHub code scanning's limits on an upload ("SARIF results exceed limit", "SARIF file
/// is too large" in its docs): results per run, and the size of the gzip-compressed file.
const MAX_RESULTS: usize = 25_000;
const MAX_GZIP_BYTES: usize = 10_000_000;

/// The report as SARIF within GitHub's upload limits: beyond them, the highest-ranked
/// findings that fit, and a notification that says so.
pub fn render(report: &Report) -> String {
    let mut written = report.findings.len().min(MAX_RESULTS);
    loop {
        let text = document(report, written);
        // gzip never makes JSON bigger than 10 MB when it is not already
        if text.len() <= MAX_GZIP_BYTES || written == 0 {
            return text;
        }
        let size = gzip_size(&text);
        if size <= MAX_GZIP_BYTES {
            return text;
        }
        written = written * MAX_GZIP_BYTES / size * 9 / 10;
    }
}

fn gzip_size(text: &str) -> usize {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let _ = encoder.write_all(text.as_bytes());
    encoder.finish().map_or(usize::MAX, |bytes| bytes.len())
}

/// The rule id of results that say an input could not be processed.
const ERROR_RULE: &str = "chaudit-error";

fn document(report: &Report, written: usize) -> String {
    let mut rules: Vec<Value> = report.rules.iter().map(rule).collect();
    let mut results: Vec<Value> = report.findings.iter().take(written).map(|f| result(report, f)).collect();
    if !report.errors.is_empty() {
        rules.push(json!({
            "id": ERROR_RULE,
            "name": "ChauditError",
            "shortDescription": {"text": "An input chaudit could not process"},
            "fullDescription": {"text": "A config ClickHouse would refuse, or a rule, suppression or baseline file that cannot be read: what it governs was not audited."},
            "help": {"text": "Fix the input at the location shown; the audit exits 2 until then.", "markdown": "Fix the input at the location shown; the audit exits 2 until then."},
            "defaultConfiguration": {"level": "error"},
            "properties": {"tags": ["chaudit"], "precision": "very-high"},
        }));
        let index = rules.len() - 1;
        results.extend(report.errors.iter().map(|e| error_result(report, e, index)));
    }
    let sarif = json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "chaudit",
                "version": report.chaudit_version,
                "semanticVersion": report.chaudit_version,
                "informationUri": "https://github.com/chaudit/chaudit",
                "rules": rules,
            }},
            "invocations": [invocation(report, written)],
            "results": results,
        }],
    });
    let mut text = serde_json::to_string_pretty(&sarif).unwrap_or_default();
    text.push('\n');
    text
}

fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Critical | Severity::High => "error",
        Severity::Medium => "warning",
        Severity::Low | Severity::Info => "note",
    }
}

/// GitHub's security-severity score, for rules tagged `security`.
fn security_severity(severity: Severity) -> &'static str {
    match severity {
        Severity::Critical => "9.5",
        Severity::High => "8.0",
        Severity::Medium => "5.5",
        Severity::Low => "3.0",
        Severity::Info => "1.0",
    }
}

fn rule(r: &RuleInfo) -> Value {
    let first_paragraph = r.description.split("\n\n").next().unwrap_or(&r.description).replace('\n', " ");
    let mut tags = vec![r.category.clone()];
    tags.extend(r.tags.iter().filter(|t| **t != r.category).cloned());
    let mut properties = json!({"tags": tags, "precision": "high"});
    if r.tags.iter().any(|t| t == "security") || r.category == "security" {
        properties["security-severity"] = json!(security_severity(r.severity));
    }
    let mut value = json!({
        "id": r.id,
        "name": pascal_case(&r.id),
        "shortDescription": {"text": r.title},
        "fullDescription": {"text": first_paragraph.trim()},
        "help": {"text": r.description.trim(), "markdown": format!("**{}**\n\n{}", r.title, r.description.trim())},
        "defaultConfiguration": {"level": level(r.severity)},
        "properties": properties,
    });
    if let Some(uri) = &r.help_uri {
        value["helpUri"] = json!(uri);
    }
    value
}

fn result(report: &Report, f: &Finding) -> Value {
    let rule_index = report.rules.iter().position(|r| r.id == f.rule_id);
    let location = match &f.location {
        Some(l) => json!({"physicalLocation": {
            "artifactLocation": {"uri": artifact_uri(&report.artifact_base, &l.file)},
            "region": {"startLine": l.line.max(1), "startColumn": l.column.max(1)},
        }}),
        // a fact of the running server with no config element: name the server
        None => json!({"logicalLocations": [{"name": report.target, "kind": "resource"}]}),
    };
    let mut value = json!({
        "ruleId": f.rule_id,
        "level": level(f.severity),
        "message": {"text": f.message},
        "locations": [location],
        "partialFingerprints": {FINGERPRINT_KEY: f.fingerprint},
        // one decimal: 25.2, not 25.199999999999996
        "rank": ((f.score * 20.0).clamp(0.0, 100.0) * 10.0).round() / 10.0,
        "baselineState": if f.baselined { "unchanged" } else { "new" },
    });
    if let Some(i) = rule_index {
        value["ruleIndex"] = json!(i);
    }
    if let Some(object) = &f.object {
        value["properties"]["object"] = json!(object);
    }
    if !f.hosts.is_empty() {
        let hosts: Vec<&str> = f.hosts.iter().map(|h| h.host.as_str()).collect();
        value["message"]["text"] = json!(format!("{} (on {})", f.message, hosts.join(", ")));
        value["properties"]["hosts"] = json!(hosts);
        let versions: serde_json::Map<String, Value> =
            f.hosts.iter().filter_map(|h| Some((h.host.clone(), json!(h.version.as_ref()?)))).collect();
        if !versions.is_empty() {
            value["properties"]["versions"] = Value::Object(versions);
        }
    }
    if let Some(s) = &f.suppressed {
        let kind = if s.kind == "inline" { "inSource" } else { "external" };
        value["suppressions"] = json!([{"kind": kind, "justification": s.reason, "status": "accepted"}]);
    }
    value
}

/// An input that could not be processed, at its file, line and column when known.
fn error_result(report: &Report, e: &super::RunError, rule_index: usize) -> Value {
    let location = match &e.location {
        Some(l) => json!({"physicalLocation": {
            "artifactLocation": {"uri": artifact_uri(&report.artifact_base, &l.file)},
            "region": {"startLine": l.line.max(1), "startColumn": l.column.max(1)},
        }}),
        None => json!({"logicalLocations": [{"name": report.target, "kind": "resource"}]}),
    };
    let at = e.location.as_ref().map_or(String::new(), |l| format!("{}:{}:{}", l.file, l.line, l.column));
    json!({
        "ruleId": ERROR_RULE,
        "ruleIndex": rule_index,
        "level": "error",
        "message": {"text": e.message},
        "locations": [location],
        "partialFingerprints": {FINGERPRINT_KEY: format!("{}@{at}", e.code)},
    })
}

/// The file's path from the working directory, with forward slashes and no `./`.
fn artifact_uri(base: &str, file: &str) -> String {
    let joined = if base.is_empty() { PathBuf::from(file) } else { Path::new(base).join(file) };
    let normal: PathBuf = joined.components().filter(|c| !matches!(c, Component::CurDir)).collect();
    let text = normal.to_string_lossy().replace('\\', "/");
    if normal.is_absolute() { format!("file://{text}") } else { text }
}

fn pascal_case(id: &str) -> String {
    id.split('-').map(|w| w[..1].to_ascii_uppercase() + &w[1..]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_are_relative_to_the_working_directory() {
        assert_eq!(artifact_uri("deploy/ch", "users.d/a.xml"), "deploy/ch/users.d/a.xml");
        assert_eq!(artifact_uri("./ch", "config.xml"), "ch/config.xml");
        assert_eq!(artifact_uri("", "config.xml"), "config.xml");
        assert_eq!(artifact_uri("/etc/clickhouse-server", "config.xml"), "file:///etc/clickhouse-server/config.xml");
        assert_eq!(pascal_case("default-user-open"), "DefaultUserOpen");
    }
}
