//! `--format junit`: one test case per rule (fired = failure, errored = error, not
//! applicable = skipped; inconclusive = error, or skipped with `--allow-inconclusive`: the
//! same verdict as the exit code), for CI systems that read JUnit XML.

use std::fmt::Write;

use super::Report;
use crate::eval::OutcomeKind;

pub fn render(report: &Report) -> String {
    let allow_inconclusive = report.summary.allow_inconclusive;
    let is_error =
        |kind: OutcomeKind| kind == OutcomeKind::Errored || (kind == OutcomeKind::Inconclusive && !allow_inconclusive);
    let failures = report.outcomes.iter().filter(|o| o.outcome == OutcomeKind::Fired).count();
    let errors = report.outcomes.iter().filter(|o| is_error(o.outcome)).count() + report.errors.len();
    let tests = report.outcomes.len() + report.errors.len();
    let skipped = report
        .outcomes
        .iter()
        .filter(|o| matches!(o.outcome, OutcomeKind::NotApplicable | OutcomeKind::Inconclusive) && !is_error(o.outcome))
        .count();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"chaudit\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\">"
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\">",
        escape(&report.target)
    );
    // an input that could not be processed: what it governs was not judged
    for e in &report.errors {
        let _ = writeln!(
            out,
            "    <testcase classname=\"chaudit\" name=\"{}\">\n      <error type=\"{}\" message=\"{}\"/>\n    </testcase>",
            escape(&e.code),
            escape(&e.code),
            escape(&e.message)
        );
    }
    for o in &report.outcomes {
        let _ = write!(out, "    <testcase classname=\"chaudit\" name=\"{}\"", escape(&o.rule_id));
        match o.outcome {
            OutcomeKind::Passed => out.push_str("/>\n"),
            OutcomeKind::Fired => {
                out.push_str(">\n");
                for f in report.findings.iter().filter(|f| f.rule_id == o.rule_id) {
                    let at =
                        f.location.as_ref().map_or(String::new(), |l| format!("{}:{}:{}: ", l.file, l.line, l.column));
                    let state = match (&f.suppressed, f.baselined) {
                        (Some(s), _) => format!(" (suppressed: {})", s.reason),
                        (None, true) => " (in baseline)".to_string(),
                        (None, false) => String::new(),
                    };
                    let _ = writeln!(
                        out,
                        "      <failure type=\"{}\" message=\"{}\">{at}{}{state}</failure>",
                        f.severity.name(),
                        escape(&f.title),
                        escape(&f.message)
                    );
                }
                out.push_str("    </testcase>\n");
            }
            kind if is_error(kind) => {
                let _ = writeln!(
                    out,
                    ">\n      <error type=\"{}\" message=\"{}\"/>\n    </testcase>",
                    super::outcome_name(kind),
                    escape(o.reason.as_deref().unwrap_or(""))
                );
            }
            OutcomeKind::Errored | OutcomeKind::NotApplicable | OutcomeKind::Inconclusive => {
                let _ = writeln!(
                    out,
                    ">\n      <skipped message=\"{}\"/>\n    </testcase>",
                    escape(o.reason.as_deref().unwrap_or(""))
                );
            }
        }
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}
