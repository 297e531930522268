//! `--format junit`: one test case per rule, the same verdict as the exit code: a rule
//! with active findings at or above `--fail-on` is a failure (suppressed, baselined and
//! lower findings are its output, not failures); a rule that did not judge (errored, or
//! inconclusive unless allowed, on the target or any replica) is an error; not applicable
//! and allowed inconclusive are skipped. What kept the run from auditing is one more error
//! case. For CI systems that read JUnit XML.

use std::fmt::Write;

use super::Report;
use crate::eval::{Finding, OutcomeKind};

pub fn render(report: &Report) -> String {
    let failing = |f: &Finding| report.fails(f);
    let mut cases = String::new();
    let (mut failures, mut errors, mut skipped) = (0, 0, 0);
    for error in &report.errors {
        errors += 1;
        let _ = writeln!(
            cases,
            "    <testcase classname=\"chaudit\" name=\"{}\">\n      <error type=\"{}\" message=\"{}\"/>\n    </testcase>",
            escape(&error.code),
            escape(&error.code),
            escape(&error.message)
        );
    }
    for o in &report.outcomes {
        let _ = write!(cases, "    <testcase classname=\"chaudit\" name=\"{}\"", escape(&o.rule_id));
        let findings: Vec<&Finding> = report.findings.iter().filter(|f| f.rule_id == o.rule_id).collect();
        let unjudged: Vec<String> = report
            .unjudged
            .iter()
            .filter(|u| u.rule_id == o.rule_id)
            .map(|u| {
                let on = u.host.as_ref().map_or_else(String::new, |h| format!("{h}: "));
                format!("{on}{}: {}", super::outcome_name(u.outcome), u.reason)
            })
            .collect();
        if findings.is_empty() && unjudged.is_empty() && o.outcome == OutcomeKind::Passed {
            cases.push_str("/>\n");
            continue;
        }
        cases.push_str(">\n");
        if !unjudged.is_empty() {
            errors += 1;
            let kind = report.unjudged.iter().find(|u| u.rule_id == o.rule_id).map_or(o.outcome, |u| u.outcome);
            let _ = writeln!(
                cases,
                "      <error type=\"{}\" message=\"{}\"/>",
                super::outcome_name(kind),
                escape(&unjudged.join("; "))
            );
        } else if findings.iter().any(|f| failing(f)) {
            failures += 1;
            for f in findings.iter().filter(|f| failing(f)) {
                let _ = writeln!(
                    cases,
                    "      <failure type=\"{}\" message=\"{}\">{}</failure>",
                    f.severity.name(),
                    escape(&f.title),
                    escape(&line(f))
                );
            }
        } else if matches!(o.outcome, OutcomeKind::NotApplicable | OutcomeKind::Inconclusive) {
            skipped += 1;
            let _ = writeln!(cases, "      <skipped message=\"{}\"/>", escape(o.reason.as_deref().unwrap_or("")));
        }
        let output: Vec<String> = findings.iter().filter(|f| !failing(f)).map(|f| line(f)).collect();
        if !output.is_empty() {
            let _ = writeln!(cases, "      <system-out>{}</system-out>", escape(&output.join("\n")));
        }
        cases.push_str("    </testcase>\n");
    }
    let tests = report.outcomes.len() + report.errors.len();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let counts = format!("tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\"");
    let _ = writeln!(out, "<testsuites name=\"chaudit\" {counts}>");
    let _ = writeln!(out, "  <testsuite name=\"{}\" {counts}>", escape(&report.target));
    out.push_str(&cases);
    if let Some(line) = report.not_shown_line() {
        let _ = writeln!(out, "    <system-out>{}</system-out>", escape(&line));
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// A finding on one line: where, what, and whether it is set aside.
fn line(f: &Finding) -> String {
    let at = f.location.as_ref().map_or(String::new(), |l| format!("{l}: "));
    let state = match (&f.suppressed, f.baselined) {
        (Some(s), _) => format!(" (suppressed: {})", s.reason),
        (None, true) => " (in baseline)".to_string(),
        (None, false) => String::new(),
    };
    format!("{at}{}{state}", f.message)
}

/// Text as XML character data or an attribute value: markup escaped, and the characters
/// XML 1.0 forbids written out (the control characters, and U+FFFE and U+FFFF, which a
/// config value or an element name may hold).
fn escape(s: &str) -> String {
    let visible = crate::mask::without_controls(s);
    let mut out = String::with_capacity(visible.len());
    for c in visible.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\u{fffe}' | '\u{ffff}' => out.extend(c.escape_unicode()),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_character_outside_xml_1_0_is_written_out() {
        let escaped = super::escape("a\u{1}b\u{ffff}c\u{fffe}<&\"\u{1b}[31m\r\tok\u{10000}");
        assert_eq!(escaped, "a\\u{1}b\\u{ffff}c\\u{fffe}&lt;&amp;&quot;\\u{1b}[31m\\u{d}\tok\u{10000}");
        roxmltree::Document::parse(&format!("<r a=\"{escaped}\">{escaped}</r>")).unwrap();
    }
}
