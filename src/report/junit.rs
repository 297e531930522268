//! `--format junit`: one test case per rule, the same verdict as the exit code: a rule
//! with active findings at or above `--fail-on` is a failure (suppressed, baselined and
//! lower findings are its output, not failures); a rule that did not judge (errored, or
//! inconclusive unless allowed, on the target or any replica) is an error; not applicable
//! and allowed inconclusive are skipped. What kept the run from auditing is one more error
//! case. For CI systems that read JUnit XML.

use std::fmt::Write;

use super::Report;
use crate::eval::{Finding, Outcome, OutcomeKind};

/// The document as one string.
pub fn render(report: &Report) -> String {
    super::whole(|out, flush| render_to(report, out, flush))
}

/// Streams the document to `to`, a finding at a time.
pub fn write(report: &Report, to: &mut dyn std::io::Write) -> std::io::Result<()> {
    super::stream(to, |out, flush| render_to(report, out, flush))
}

/// What a rule's test case says.
enum Case<'a> {
    /// Judged, nothing to show: an empty test case.
    Passed,
    /// Did not judge: an error with the reasons.
    Unjudged(OutcomeKind, String),
    /// Findings the run fails on.
    Failed,
    /// Not applicable, or inconclusive and let pass.
    Skipped(&'a str),
    /// Findings that do not fail the run, shown as its output.
    Output,
}

fn case<'a>(report: &'a Report, o: &'a Outcome, findings: &[&Finding]) -> Case<'a> {
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
        Case::Passed
    } else if !unjudged.is_empty() {
        let kind = report.unjudged.iter().find(|u| u.rule_id == o.rule_id).map_or(o.outcome, |u| u.outcome);
        Case::Unjudged(kind, unjudged.join("; "))
    } else if findings.iter().any(|f| report.fails(f)) {
        Case::Failed
    } else if matches!(o.outcome, OutcomeKind::NotApplicable | OutcomeKind::Inconclusive) {
        Case::Skipped(o.reason.as_deref().unwrap_or(""))
    } else {
        Case::Output
    }
}

/// Renders the document into `out`, handed to `flush` after each finding: the counts the
/// header carries are made first, from each rule's case.
fn render_to(report: &Report, out: &mut String, flush: &mut super::Flush) -> std::io::Result<()> {
    let findings_of =
        |o: &Outcome| -> Vec<&Finding> { report.findings.iter().filter(|f| f.rule_id == o.rule_id).collect() };
    let (mut failures, mut errors, mut skipped) = (0, report.errors.len(), 0);
    for o in &report.outcomes {
        match case(report, o, &findings_of(o)) {
            Case::Unjudged(..) => errors += 1,
            Case::Failed => failures += 1,
            Case::Skipped(_) => skipped += 1,
            Case::Passed | Case::Output => {}
        }
    }
    let tests = report.outcomes.len() + report.errors.len();
    out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let counts = format!("tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\"");
    let _ = writeln!(out, "<testsuites name=\"chaudit\" {counts}>");
    let _ = writeln!(out, "  <testsuite name=\"{}\" {counts}>", escape(&report.target));
    for error in &report.errors {
        let _ = writeln!(
            out,
            "    <testcase classname=\"chaudit\" name=\"{}\">\n      <error type=\"{}\" message=\"{}\"/>\n    </testcase>",
            escape(&error.code),
            escape(&error.code),
            escape(&error.message)
        );
    }
    for o in &report.outcomes {
        let _ = write!(out, "    <testcase classname=\"chaudit\" name=\"{}\"", escape(&o.rule_id));
        let findings = findings_of(o);
        let case = case(report, o, &findings);
        if matches!(case, Case::Passed) {
            out.push_str("/>\n");
            continue;
        }
        out.push_str(">\n");
        match case {
            Case::Unjudged(kind, reasons) => {
                let _ = writeln!(
                    out,
                    "      <error type=\"{}\" message=\"{}\"/>",
                    super::outcome_name(kind),
                    escape(&reasons)
                );
            }
            Case::Failed => {
                for f in findings.iter().filter(|f| report.fails(f)) {
                    let _ = writeln!(
                        out,
                        "      <failure type=\"{}\" message=\"{}\">{}</failure>",
                        f.severity.name(),
                        escape(&f.title),
                        escape(&line(f))
                    );
                    flush(out)?;
                }
            }
            Case::Skipped(reason) => {
                let _ = writeln!(out, "      <skipped message=\"{}\"/>", escape(reason));
            }
            Case::Passed | Case::Output => {}
        }
        // the findings that do not fail, one per line (escaping keeps a line break)
        let mut output = findings.iter().filter(|f| !report.fails(f));
        if let Some(first) = output.next() {
            out.push_str("      <system-out>");
            out.push_str(&escape(&line(first)));
            for f in output {
                out.push('\n');
                out.push_str(&escape(&line(f)));
                flush(out)?;
            }
            out.push_str("</system-out>\n");
        }
        out.push_str("    </testcase>\n");
    }
    if let Some(line) = report.not_shown_line() {
        let _ = writeln!(out, "    <system-out>{}</system-out>", escape(&line));
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    Ok(())
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
