//! `--format openmetrics`: the report as Prometheus metrics, in the text exposition format
//! 0.0.4 that node_exporter's textfile collector reads. Every family has its `# HELP` and
//! `# TYPE`; every family with a fixed set of labels (the verdict, the findings per
//! severity, the rules per outcome) lists all of them, zeros included, so an alert matches
//! a value rather than a series that may be absent. The findings are one series per
//! active finding (and per replica, for a cluster's): suppressed and baselined findings
//! are only counted. No message, evidence or reason is a label; the names that are
//! (target, rule, object, replica) are escaped as the format says, with control
//! characters written out, and bounded as every report bounds a value.

use std::fmt::Write;
use std::time::{Duration, SystemTime};

use super::Report;
use crate::verdict::Status;

/// Every status, in the order the verdict family lists them.
const STATUSES: [Status; 5] = [Status::Passed, Status::Failing, Status::NotAudited, Status::Incomplete, Status::Failed];

const OUTCOMES: [&str; 5] = ["fired", "passed", "not-applicable", "inconclusive", "errored"];

/// The metrics of a report made now, as one string; `duration` is how long the run took,
/// when known.
pub fn render(report: &Report, duration: Option<Duration>) -> String {
    super::whole(|text, flush| render_to(report, SystemTime::now(), duration, text, flush))
}

/// Streams the metrics of a report made now to `to`, a series at a time.
pub fn write(report: &Report, duration: Option<Duration>, to: &mut dyn std::io::Write) -> std::io::Result<()> {
    super::stream(to, |text, flush| render_to(report, SystemTime::now(), duration, text, flush))
}

fn render_to(
    report: &Report,
    at: SystemTime,
    duration: Option<Duration>,
    text: &mut String,
    flush: &mut super::Flush,
) -> std::io::Result<()> {
    let summary = &report.summary;
    let mut out = Metrics { text: std::mem::take(text) };

    out.family("chaudit_info", "The chaudit version and the target it audited.");
    out.sample("chaudit_info", &[("version", Some(report.chaudit_version)), ("target", Some(&report.target))], 1);

    out.family(
        "chaudit_verdict",
        "How the audit ended: 1 for its status (passed, failing, not-audited, incomplete, failed), 0 for the others.",
    );
    for status in STATUSES {
        out.sample("chaudit_verdict", &[("status", Some(status.name()))], u64::from(status == summary.status));
    }
    out.family(
        "chaudit_exit_code",
        "The exit code of the run: 0 passed, 1 failing, 2 not audited, 3 failed or incomplete.",
    );
    out.sample("chaudit_exit_code", &[], u64::from(summary.status.exit_code()));

    out.family("chaudit_findings", "Active findings (neither suppressed nor baselined) per severity.");
    let severities = crate::rules::Severity::names();
    for severity in severities {
        let active = report.findings.iter().filter(|f| f.is_active() && f.severity.name() == severity).count();
        out.sample("chaudit_findings", &[("severity", Some(severity))], active as u64);
    }
    out.family(
        "chaudit_findings_failing",
        "Active findings at or above the fail-on severity (fail_on=\"never\": none fail the run).",
    );
    let fail_on = summary.fail_on.map_or("never", crate::rules::Severity::name);
    out.sample("chaudit_findings_failing", &[("fail_on", Some(fail_on))], summary.failing as u64);
    out.family("chaudit_findings_suppressed", "Findings set aside by an ignore comment or the suppressions file.");
    out.sample("chaudit_findings_suppressed", &[], summary.suppressed as u64);
    out.family("chaudit_findings_baselined", "Findings in the baseline given with --baseline.");
    out.sample("chaudit_findings_baselined", &[], summary.baselined as u64);

    out.family(
        "chaudit_finding",
        "One series per active finding (per replica in a cluster audit); the value counts the findings with these labels.",
    );
    let mut series = Series::default();
    for f in report.findings.iter().filter(|f| f.is_active()) {
        let labels = |replica: Option<&str>| {
            label_set(&[
                ("rule", Some(f.rule_id.as_str())),
                ("severity", Some(f.severity.name())),
                ("object", f.object.as_deref()),
                ("replica", replica),
            ])
        };
        if f.hosts.is_empty() {
            series.count(labels(None));
        }
        for h in &f.hosts {
            series.count(labels(Some(&h.host)));
        }
    }
    for (labels, n) in series.in_order() {
        let _ = writeln!(out.text, "chaudit_finding{labels} {n}");
        flush(&mut out.text)?;
    }

    out.family("chaudit_rules", "Rules per outcome (fired, passed, not-applicable, inconclusive, errored).");
    for outcome in OUTCOMES {
        let n = summary.outcomes.get(outcome).copied().unwrap_or(0);
        out.sample("chaudit_rules", &[("outcome", Some(outcome))], n as u64);
    }
    out.family(
        "chaudit_rule_unjudged",
        "A rule that did not judge (errored, or inconclusive unless allowed), on the target or on a replica.",
    );
    let mut unjudged = Series::default();
    for u in &report.unjudged {
        unjudged.count(label_set(&[
            ("rule", Some(u.rule_id.as_str())),
            ("replica", u.host.as_deref()),
            ("outcome", Some(super::outcome_name(u.outcome))),
        ]));
    }
    for (labels, n) in unjudged.in_order() {
        let _ = writeln!(out.text, "chaudit_rule_unjudged{labels} {n}");
    }
    out.family("chaudit_errors", "Errors that kept the run from auditing something (the report's errors).");
    out.sample("chaudit_errors", &[], report.errors.len() as u64);

    out.family("chaudit_audit_timestamp_seconds", "When the report was made, in seconds since the Unix epoch.");
    let since_epoch = at.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    out.sample_seconds("chaudit_audit_timestamp_seconds", since_epoch);
    if let Some(duration) = duration {
        out.family("chaudit_audit_duration_seconds", "How long the run took until its report, in seconds.");
        out.sample_seconds("chaudit_audit_duration_seconds", duration);
    }
    *text = out.text;
    Ok(())
}

/// Series counted by their labels as written, in the order they first appear (the
/// report's ranking): two findings with the same labels (one rule, one object, in two
/// files; two long names cut to the same excerpt) are one series of value 2, as a scrape
/// refuses a series twice. Each label set is held once, with its place and count.
#[derive(Default)]
struct Series {
    counts: std::collections::HashMap<String, (usize, u64)>,
}

impl Series {
    fn count(&mut self, labels: String) {
        let first = self.counts.len();
        self.counts.entry(labels).or_insert((first, 0)).1 += 1;
    }

    /// The label sets and their counts, in the order they first appeared.
    fn in_order(&self) -> Vec<(&str, u64)> {
        let mut order = vec![("", 0); self.counts.len()];
        for (labels, &(place, n)) in &self.counts {
            order[place] = (labels.as_str(), n);
        }
        order
    }
}

/// `{a="1",b="2"}`, or nothing without labels; a label without a value (a finding about
/// the server as a whole has no object) is left out, as Prometheus treats an empty one.
fn label_set(labels: &[(&str, Option<&str>)]) -> String {
    let written: Vec<String> =
        labels.iter().filter_map(|(label, value)| Some(format!("{label}=\"{}\"", label_value((*value)?)))).collect();
    if written.is_empty() { String::new() } else { format!("{{{}}}", written.join(",")) }
}

#[derive(Default)]
struct Metrics {
    text: String,
}

impl Metrics {
    /// A family's `# HELP` and `# TYPE` (every family is a gauge: each value is the last run's).
    fn family(&mut self, name: &str, help: &str) {
        let _ = writeln!(self.text, "# HELP {name} {}", help.replace('\\', "\\\\").replace('\n', "\\n"));
        let _ = writeln!(self.text, "# TYPE {name} gauge");
    }

    /// One sample (see [`label_set`] for its labels).
    fn sample(&mut self, name: &str, labels: &[(&str, Option<&str>)], value: u64) {
        let _ = writeln!(self.text, "{name}{} {value}", label_set(labels));
    }

    fn sample_seconds(&mut self, name: &str, seconds: Duration) {
        let _ = writeln!(self.text, "{name} {:.3}", seconds.as_secs_f64());
    }
}

/// A label value as the text format takes it: backslash, double quote and line feed
/// escaped; other control characters written out (`\u{1b}`), so a file read with `cat`
/// never moves the terminal's cursor; a name longer than reports show cut to their excerpt.
fn label_value(s: &str) -> String {
    let visible = crate::mask::without_controls(s);
    let bounded = crate::mask::excerpt(&visible);
    let mut out = String::with_capacity(bounded.len());
    for c in bounded.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::label_value;

    #[test]
    fn label_values_escape_backslash_quote_and_line_feed() {
        assert_eq!(label_value(r#"a\b"c"#), r#"a\\b\"c"#);
        assert_eq!(label_value("one\ntwo"), "one\\ntwo");
        // a written-out control character's backslash is itself escaped
        assert_eq!(label_value("x\u{1b}[31m\ry"), "x\\\\u{1b}[31m\\\\u{d}y");
        assert_eq!(label_value("tab\tand ünïcode"), "tab\tand ünïcode");
        assert_eq!(label_value(r"\n"), r"\\n");
        let long = label_value(&"x".repeat(100_000));
        assert!(long.len() < 300 && long.ends_with(" more bytes)"), "{long}");
    }

    #[test]
    fn an_empty_label_is_left_out() {
        let mut m = super::Metrics::default();
        m.sample("x", &[("a", None), ("b", Some("1"))], 2);
        m.sample("y", &[("a", None)], 0);
        assert_eq!(m.text, "x{b=\"1\"} 2\ny 0\n");
    }

    /// An escape character and its written-out form are one label value as written: one
    /// series, counted twice, never the same series twice.
    #[test]
    fn names_written_alike_are_one_series() {
        let mut series = super::Series::default();
        series.count(super::label_set(&[("object", Some("a\u{1b}"))]));
        series.count(super::label_set(&[("object", Some("a\\u{1b}"))]));
        series.count(super::label_set(&[("object", Some("b"))]));
        assert_eq!(series.in_order(), [("{object=\"a\\\\u{1b}\"}", 2), ("{object=\"b\"}", 1)]);
    }
}
