//! `--format sarif`: SARIF 2.1.0 as GitHub code scanning ingests it. Every rule that ran is
//! in tool.driver.rules (with full description and markdown help); every finding is a
//! result with a physical location relative to the working directory, a partial
//! fingerprint, and its suppression or baseline state. The document is the SARIF types
//! below (the subset of the 2.1.0 schema chaudit writes), serialized.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Component, Path, PathBuf};

use serde::Serialize;

use super::sizing::{Sized, Sizing};
use super::{Report, RuleInfo};
use crate::eval::finding::Remediation;
use crate::eval::{Finding, OutcomeKind};
use crate::rules::Severity;

const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";
const FINGERPRINT_KEY: &str = "chauditFingerprint/v1";

#[derive(Serialize)]
struct Log<'a> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    version: &'static str,
    runs: [Run<'a>; 1],
}

#[derive(Serialize)]
struct Run<'a> {
    tool: Tool<'a>,
    invocations: [Invocation; 1],
    results: Results<'a>,
}

/// The results, each made as it is written: 25,000 of them are never held at once.
struct Results<'a> {
    report: &'a Report,
    written: usize,
    /// The index of the rule of the errors' results, when there are errors.
    error_rule: Option<usize>,
}

impl Serialize for Results<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let findings = &self.report.findings[..self.written];
        let errors = if self.error_rule.is_some() { self.report.errors.len() } else { 0 };
        let mut seq = s.serialize_seq(Some(findings.len() + errors))?;
        for f in findings {
            seq.serialize_element(&result(self.report, f))?;
        }
        if let Some(index) = self.error_rule {
            for e in &self.report.errors {
                seq.serialize_element(&error_result(self.report, e, index))?;
            }
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct Tool<'a> {
    driver: Driver<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Driver<'a> {
    name: &'static str,
    version: &'a str,
    semantic_version: &'a str,
    information_uri: &'static str,
    rules: Vec<Rule>,
}

/// A reportingDescriptor: one rule.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Rule {
    id: String,
    name: String,
    short_description: Text,
    full_description: Text,
    help: Help,
    default_configuration: Configuration,
    properties: RuleProperties,
    #[serde(skip_serializing_if = "Option::is_none")]
    help_uri: Option<String>,
}

#[derive(Serialize)]
struct Text {
    text: String,
}

impl Text {
    fn of(text: impl Into<String>) -> Text {
        Text { text: text.into() }
    }
}

#[derive(Serialize)]
struct Help {
    text: String,
    markdown: String,
}

#[derive(Serialize)]
struct Configuration {
    level: &'static str,
}

#[derive(Serialize)]
struct RuleProperties {
    tags: Vec<String>,
    precision: &'static str,
    /// GitHub's score, for security rules
    #[serde(rename = "security-severity", skip_serializing_if = "Option::is_none")]
    security_severity: Option<&'static str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Invocation {
    execution_successful: bool,
    properties: InvocationProperties,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_execution_notifications: Vec<Notification>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InvocationProperties {
    status: crate::verdict::Status,
    fail_on: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Notification {
    level: &'static str,
    message: Text,
    #[serde(skip_serializing_if = "Option::is_none")]
    associated_rule: Option<RuleReference>,
}

#[derive(Serialize)]
struct RuleReference {
    id: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifResult<'a> {
    rule_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    rule_index: Option<usize>,
    level: &'static str,
    message: Text,
    locations: [Location<'a>; 1],
    partial_fingerprints: BTreeMap<&'static str, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    rank: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline_state: Option<&'static str>,
    #[serde(skip_serializing_if = "ResultProperties::is_empty")]
    properties: ResultProperties<'a>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    suppressions: Vec<Suppression<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    fixes: Vec<Fix>,
}

/// A config fix as SARIF states it: each fragment a new file, the one the printed snippet
/// names (it sorts after every other fragment), holding the fragment.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Fix {
    description: Text,
    artifact_changes: Vec<ArtifactChange>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ArtifactChange {
    artifact_location: ArtifactLocation,
    replacements: [Replacement; 1],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Replacement {
    deleted_region: EmptyRegion,
    inserted_content: Content,
}

/// Nothing deleted: the file is new.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EmptyRegion {
    char_offset: usize,
    char_length: usize,
}

#[derive(Serialize)]
struct Content {
    text: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
enum Location<'a> {
    /// written as `{"physicalLocation": ...}`
    PhysicalLocation(PhysicalLocation),
    /// a fact of the running server with no config element: the server
    LogicalLocations([LogicalLocation<'a>; 1]),
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PhysicalLocation {
    artifact_location: ArtifactLocation,
    region: Region,
}

#[derive(Serialize)]
struct ArtifactLocation {
    uri: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Region {
    start_line: usize,
    start_column: usize,
}

#[derive(Serialize)]
struct LogicalLocation<'a> {
    name: &'a str,
    kind: &'static str,
}

#[derive(Serialize, Default)]
struct ResultProperties<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    object: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    hosts: Vec<&'a str>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    versions: BTreeMap<&'a str, &'a str>,
}

impl ResultProperties<'_> {
    fn is_empty(&self) -> bool {
        self.object.is_none() && self.hosts.is_empty() && self.versions.is_empty()
    }
}

#[derive(Serialize)]
struct Suppression<'a> {
    kind: &'static str,
    justification: &'a str,
    status: &'static str,
}

/// The run's verdict: not successful unless it judged what it was asked to, with a
/// notification per error, per rule (and replica) that did not judge, and per inconclusive
/// rule let pass.
fn invocation(report: &Report, written: usize) -> Invocation {
    let mut notifications: Vec<Notification> = report
        .errors
        .iter()
        .map(|e| Notification { level: "error", message: Text::of(&e.message), associated_rule: None })
        .collect();
    let notice = |rule: &str, host: Option<&str>, kind: OutcomeKind, reason: &str, level: &'static str| {
        let on = host.map_or_else(String::new, |h| format!(" on {h}"));
        let text = format!("{rule}{on} {}: {reason}", super::outcome_name(kind));
        Notification { level, message: Text::of(text), associated_rule: Some(RuleReference { id: rule.to_string() }) }
    };
    for u in &report.unjudged {
        notifications.push(notice(&u.rule_id, u.host.as_deref(), u.outcome, &u.reason, "error"));
    }
    for u in &report.allowed_inconclusive {
        notifications.push(notice(&u.rule_id, u.host.as_deref(), u.outcome, &u.reason, "warning"));
    }
    if let Some(line) = report.not_shown_line() {
        notifications.push(Notification { level: "note", message: Text::of(line), associated_rule: None });
    }
    if written < report.findings.len() {
        let text = format!(
            "{written} of {} findings written, the highest ranked: GitHub code scanning takes at most {MAX_RESULTS} \
             results per run and {} MB gzip-compressed per file (the JSON report holds every finding)",
            report.findings.len(),
            MAX_GZIP_BYTES / 1_000_000
        );
        notifications.push(Notification { level: "warning", message: Text::of(text), associated_rule: None });
    }
    Invocation {
        execution_successful: report.summary.status.judged(),
        properties: InvocationProperties {
            status: report.summary.status,
            fail_on: report.summary.fail_on.map_or("never", Severity::name),
        },
        tool_execution_notifications: notifications,
    }
}

/// GitHub code scanning's limits on an upload ("SARIF results exceed limit", "SARIF file
/// is too large" in its docs): results per run, and the size of the gzip-compressed file.
const MAX_RESULTS: usize = 25_000;
const MAX_GZIP_BYTES: usize = 10_000_000;

/// The report as SARIF within GitHub's upload limits, as one string.
pub fn render(report: &Report) -> String {
    let mut text = Vec::new();
    // writing into memory cannot fail, and serde_json writes UTF-8
    let _ = write(report, &mut text);
    String::from_utf8(text).unwrap_or_default()
}

/// Streams the report as SARIF within GitHub's upload limits to `to`: beyond them, the
/// highest-ranked findings that fit, and a notification that says so. The document is
/// sized first (held while it is under the limit, else only gzip-compressed to count its
/// bytes), so a document of 25,000 results is never held whole.
pub fn write(report: &Report, to: &mut dyn Write) -> std::io::Result<()> {
    let mut written = report.findings.len().min(MAX_RESULTS);
    loop {
        let mut sized = Sizing::new(MAX_GZIP_BYTES);
        write_document(report, written, &mut sized)?;
        // gzip never makes JSON bigger than 10 MB when it is not already
        let size = match sized.finish()? {
            Sized::Held(text) => return to.write_all(&text),
            Sized::Compressed(size) => size,
        };
        if size <= MAX_GZIP_BYTES || written == 0 {
            let mut buffered = std::io::BufWriter::with_capacity(1 << 16, to);
            write_document(report, written, &mut buffered)?;
            return buffered.flush();
        }
        written = written * MAX_GZIP_BYTES / size * 9 / 10;
    }
}

/// The rule id of results that say an input could not be processed.
const ERROR_RULE: &str = "chaudit-error";

fn write_document(report: &Report, written: usize, to: &mut impl Write) -> std::io::Result<()> {
    let mut rules: Vec<Rule> = report.rules.iter().map(rule).collect();
    let mut error_rule = None;
    if !report.errors.is_empty() {
        let fix = report.summary.status.meaning().to_string();
        let failed = report.summary.status == crate::verdict::Status::Failed;
        rules.push(Rule {
            id: ERROR_RULE.into(),
            name: "ChauditError".into(),
            short_description: Text::of(if failed { "A run that failed" } else { "An input chaudit could not process" }),
            full_description: Text::of(if failed {
                "A server that could not be read, or an output that could not be written: nothing was judged."
            } else {
                "A config ClickHouse would refuse, or a rule, suppression or baseline file that cannot be read: what it governs was not audited."
            }),
            help: Help { text: fix.clone(), markdown: fix },
            default_configuration: Configuration { level: "error" },
            properties: RuleProperties { tags: vec!["chaudit".into()], precision: "very-high", security_severity: None },
            help_uri: None,
        });
        error_rule = Some(rules.len() - 1);
    }
    let log = Log {
        schema: SCHEMA,
        version: "2.1.0",
        runs: [Run {
            tool: Tool {
                driver: Driver {
                    name: "chaudit",
                    version: report.chaudit_version,
                    semantic_version: report.chaudit_version,
                    information_uri: "https://github.com/chaudit/chaudit",
                    rules,
                },
            },
            invocations: [invocation(report, written)],
            results: Results { report, written, error_rule },
        }],
    };
    serde_json::to_writer_pretty(&mut *to, &log)?;
    to.write_all(b"\n")
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

fn rule(r: &RuleInfo) -> Rule {
    let first_paragraph = r.description.split("\n\n").next().unwrap_or(&r.description).replace('\n', " ");
    let mut tags = vec![r.category.clone()];
    tags.extend(r.tags.iter().filter(|t| **t != r.category).cloned());
    let security = r.tags.iter().any(|t| t == "security") || r.category == "security";
    Rule {
        id: r.id.clone(),
        name: pascal_case(&r.id),
        short_description: Text::of(&r.title),
        full_description: Text::of(first_paragraph.trim()),
        help: Help {
            text: r.description.trim().into(),
            markdown: format!("**{}**\n\n{}", r.title, r.description.trim()),
        },
        default_configuration: Configuration { level: level(r.severity) },
        properties: RuleProperties {
            tags,
            precision: "high",
            security_severity: security.then(|| security_severity(r.severity)),
        },
        help_uri: r.help_uri.clone(),
    }
}

/// Where a result is: its file, line and column, else the server itself.
fn location<'a>(report: &'a Report, file: Option<(&str, usize, usize)>) -> Location<'a> {
    match file {
        Some((file, line, column)) => Location::PhysicalLocation(PhysicalLocation {
            artifact_location: ArtifactLocation { uri: artifact_uri(&report.artifact_base, file) },
            region: Region { start_line: line.max(1), start_column: column.max(1) },
        }),
        None => Location::LogicalLocations([LogicalLocation { name: &report.target, kind: "resource" }]),
    }
}

fn result<'a>(report: &'a Report, f: &'a Finding) -> SarifResult<'a> {
    let hosts: Vec<&str> = f.hosts.iter().map(|h| h.host.as_str()).collect();
    let message = if hosts.is_empty() { f.message.clone() } else { format!("{} (on {})", f.message, hosts.join(", ")) };
    let versions = f.hosts.iter().filter_map(|h| Some((h.host.as_str(), h.version.as_deref()?))).collect();
    let suppression = f.suppressed.as_ref().map(|s| Suppression {
        kind: if s.kind == "inline" { "inSource" } else { "external" },
        justification: &s.reason,
        status: "accepted",
    });
    SarifResult {
        rule_id: &f.rule_id,
        rule_index: report.rules.iter().position(|r| r.id == f.rule_id),
        level: level(f.severity),
        message: Text::of(message),
        locations: [location(
            report,
            f.location.as_ref().map(|l| (l.file.as_str(), l.line as usize, l.column as usize)),
        )],
        partial_fingerprints: BTreeMap::from([(FINGERPRINT_KEY, f.fingerprint.clone())]),
        // one decimal: 25.2, not 25.199999999999996
        rank: Some(((f.score * 20.0).clamp(0.0, 100.0) * 10.0).round() / 10.0),
        baseline_state: Some(if f.baselined { "unchanged" } else { "new" }),
        properties: ResultProperties { object: f.object.as_deref(), hosts, versions },
        suppressions: suppression.into_iter().collect(),
        fixes: fixes(report, f),
    }
}

/// The finding's config fragments as a SARIF fix; none when no snippet is printed (a fix
/// that would copy a secret, one only the user can write, a manifest's).
fn fixes(report: &Report, f: &Finding) -> Vec<Fix> {
    let r = &f.remediation;
    if r.config.is_none() || r.fragments.is_empty() {
        return Vec::new();
    }
    let restart = if r.restart { " (needs a restart)" } else { "" };
    let changes: Vec<ArtifactChange> = r
        .fragments
        .iter()
        .map(|fragment| ArtifactChange {
            artifact_location: ArtifactLocation {
                uri: artifact_uri(&report.artifact_base, &Remediation::snippet_file(fragment.tree, &f.fingerprint)),
            },
            replacements: [Replacement {
                deleted_region: EmptyRegion { char_offset: 0, char_length: 0 },
                inserted_content: Content { text: format!("{}\n", fragment.xml.trim_end()) },
            }],
        })
        .collect();
    let files: Vec<String> =
        r.fragments.iter().map(|fragment| Remediation::snippet_file(fragment.tree, &f.fingerprint)).collect();
    vec![Fix { description: Text::of(format!("Add {}{restart}", files.join(" and "))), artifact_changes: changes }]
}

/// An input that could not be processed, at its file, line and column when known.
fn error_result<'a>(report: &'a Report, e: &'a super::RunError, rule_index: usize) -> SarifResult<'a> {
    let at = e.location.as_ref().map_or(String::new(), |l| format!("{}:{}:{}", l.file, l.line, l.column));
    SarifResult {
        rule_id: ERROR_RULE,
        rule_index: Some(rule_index),
        level: "error",
        message: Text::of(&e.message),
        locations: [location(report, e.location.as_ref().map(|l| (l.file.as_str(), l.line, l.column)))],
        partial_fingerprints: BTreeMap::from([(FINGERPRINT_KEY, format!("{}@{at}", e.code))]),
        rank: None,
        baseline_state: None,
        properties: ResultProperties::default(),
        suppressions: Vec::new(),
        fixes: Vec::new(),
    }
}

/// What a URI path keeps as it is: the unreserved characters and the `/` between segments.
/// Everything else is percent-encoded: a space, `#` and `?` (which would start a fragment or
/// a query), `%`, `:` (which would make a first segment a scheme), and every non-ASCII byte.
const PATH_KEEPS: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~').remove(b'/');

/// The file's path from the working directory as a URI reference: forward slashes, no `./`,
/// a `..` taking off the name before it (a `--base` directory beside the tree),
/// percent-encoded (an absolute path as a `file://` URI). A file that is on no disk, named in
/// parentheses (the stock files of `--base image`), is named as it is shown.
fn artifact_uri(base: &str, file: &str) -> String {
    let on_no_disk = file.starts_with('(');
    let joined = if base.is_empty() || on_no_disk { PathBuf::from(file) } else { Path::new(base).join(file) };
    let mut normal = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir if matches!(normal.components().next_back(), Some(Component::Normal(_))) => {
                normal.pop();
            }
            other => normal.push(other),
        }
    }
    let text = normal.to_string_lossy().replace('\\', "/");
    let encoded = percent_encoding::utf8_percent_encode(&text, PATH_KEEPS).to_string();
    if normal.is_absolute() { format!("file://{encoded}") } else { encoded }
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
        assert_eq!(artifact_uri("ch", "config.d/a b#c%d?e.xml"), "ch/config.d/a%20b%23c%25d%3Fe.xml");
        assert_eq!(artifact_uri("", "a:b.xml"), "a%3Ab.xml");
        assert_eq!(artifact_uri("/etc/ch", "é.xml"), "file:///etc/ch/%C3%A9.xml");
        // --base: a directory beside the tree, and the bundled image's files
        assert_eq!(artifact_uri("deploy/ch", "../../base/config.xml"), "base/config.xml");
        assert_eq!(
            artifact_uri("deploy/ch", "(clickhouse-server image)/config.xml"),
            "%28clickhouse-server%20image%29/config.xml"
        );
    }
}
