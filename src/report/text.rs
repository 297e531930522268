//! Human output: ranked findings, each with the config snippet and the offending line
//! labelled, then a summary.

use std::fmt::Write;
use std::sync::Arc;

use miette::{Diagnostic, GraphicalReportHandler, GraphicalTheme, LabeledSpan, NamedSource, SourceSpan};

use super::{Report, outcome_name};
use crate::config::{Location, SourceMap};
use crate::eval::{Finding, OutcomeKind};
use crate::rules::Severity;

pub struct TextOptions {
    pub color: bool,
}

pub fn render(report: &Report, sources: Option<&SourceMap>, options: &TextOptions) -> String {
    let theme = if options.color { GraphicalTheme::unicode() } else { GraphicalTheme::unicode_nocolor() };
    let handler = GraphicalReportHandler::new_themed(theme).with_width(100);
    let mut out = String::new();
    for f in &report.findings {
        let diagnostic = FindingDiagnostic::new(f, sources);
        if handler.render_report(&mut out, &diagnostic).is_err() {
            let _ = writeln!(out, "{}", diagnostic.headline);
        }
        out.push('\n');
    }
    for o in report.outcomes.iter().filter(|o| matches!(o.outcome, OutcomeKind::Errored | OutcomeKind::Inconclusive)) {
        let _ = writeln!(out, "{} {}: {}", outcome_name(o.outcome), o.rule_id, o.reason.as_deref().unwrap_or(""));
    }
    let s = &report.summary;
    let counts: Vec<String> = s.by_severity.iter().rev().map(|(k, v)| format!("{v} {k}")).collect();
    let outcomes: Vec<String> = s.outcomes.iter().map(|(k, v)| format!("{v} {k}")).collect();
    let _ = writeln!(
        out,
        "{}: {} finding(s){}; rules: {}; {} at or above {}",
        report.target,
        s.findings,
        if counts.is_empty() { String::new() } else { format!(" ({})", counts.join(", ")) },
        outcomes.join(", "),
        s.failing,
        s.fail_on.map_or("never", Severity::name)
    );
    out
}

/// A finding as a miette diagnostic, so the snippet rendering is miette's.
#[derive(Debug)]
struct FindingDiagnostic {
    headline: String,
    severity: miette::Severity,
    source: Option<NamedSource<Arc<String>>>,
    span: Option<SourceSpan>,
    label: String,
    help: String,
}

impl FindingDiagnostic {
    fn new(f: &Finding, sources: Option<&SourceMap>) -> Self {
        let severity = match f.severity {
            Severity::Critical | Severity::High => miette::Severity::Error,
            Severity::Medium => miette::Severity::Warning,
            Severity::Low | Severity::Info => miette::Severity::Advice,
        };
        let (source, span) = match (&f.location, sources) {
            (Some(l), Some(s)) => snippet(s, l).map_or((None, None), |(src, span)| (Some(src), Some(span))),
            _ => (None, None),
        };
        let at = f.location.as_ref().map_or(String::new(), |l| format!(" ({}:{}:{})", l.file, l.line, l.column));
        let mut help = String::new();
        let shown = |v: &serde_json::Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
        if f.hosts.is_empty() {
            for (k, v) in &f.evidence {
                let _ = writeln!(help, "evidence: {k} = {}", shown(v));
            }
        } else {
            let _ = writeln!(
                help,
                "on {} replica(s): {}",
                f.hosts.len(),
                f.hosts.iter().map(|h| h.host.as_str()).collect::<Vec<_>>().join(", ")
            );
            for h in &f.hosts {
                let evidence: Vec<String> = h.evidence.iter().map(|(k, v)| format!("{k} = {}", shown(v))).collect();
                if !evidence.is_empty() {
                    let _ = writeln!(help, "evidence on {}: {}", h.host, evidence.join(", "));
                }
            }
        }
        let restart = if f.remediation.restart { "needs a restart" } else { "no restart needed" };
        let _ = write!(help, "fix ({restart}):");
        for snippet in [&f.remediation.config, &f.remediation.sql].into_iter().flatten() {
            for line in snippet.trim_end().lines() {
                let _ = write!(help, "\n    {line}");
            }
        }
        FindingDiagnostic {
            headline: format!("#{} [{}] {}: {}{at}", f.rank, f.severity.name(), f.rule_id, f.title),
            severity,
            source,
            span,
            label: f.message.clone(),
            help,
        }
    }
}

impl std::fmt::Display for FindingDiagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.headline)?;
        if self.span.is_none() {
            write!(f, "\n{}", self.label)?;
        }
        Ok(())
    }
}

impl std::error::Error for FindingDiagnostic {}

impl Diagnostic for FindingDiagnostic {
    fn severity(&self) -> Option<miette::Severity> {
        Some(self.severity)
    }

    fn help<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        Some(Box::new(&self.help))
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.source.as_ref().map(|s| s as &dyn miette::SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let span = self.span?;
        Some(Box::new(std::iter::once(LabeledSpan::new_with_span(Some(self.label.clone()), span))))
    }
}

/// The file text and the span of the element at `l`, when the file is one of `sources`.
fn snippet(sources: &SourceMap, l: &Location) -> Option<(NamedSource<Arc<String>>, SourceSpan)> {
    let (_, file) = sources.files().find(|(_, f)| f.display == l.file)?;
    let line_start: usize = file.text.split_inclusive('\n').take(l.line.saturating_sub(1) as usize).map(str::len).sum();
    let line = file.text[line_start..].lines().next().unwrap_or_default();
    let start = line_start + line.char_indices().nth(l.column.saturating_sub(1) as usize).map_or(0, |(i, _)| i);
    // label the element's start tag (or the YAML key)
    let rest = &file.text[start..];
    let len = rest.find('>').map_or_else(|| rest.find('\n').unwrap_or(rest.len()), |i| i + 1);
    Some((file.named_source(), SourceSpan::new(start.into(), len.min(line.len().max(1)))))
}
