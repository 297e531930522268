//! Human output: ranked findings, each with the config snippet and the offending line
//! labelled, then a summary. Prose wraps at the terminal's width; the fix (config snippets
//! and SQL) is never wrapped, so it can be pasted as printed.

use std::fmt::Write;

use miette::{
    Diagnostic, GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteError, MietteSpanContents, SourceCode,
    SourceSpan, SpanContents,
};

use super::{Report, outcome_name};
use crate::config::{Location, SourceMap};
use crate::eval::{Finding, OutcomeKind};
use crate::mask;
use crate::rules::Severity;

pub struct TextOptions {
    pub color: bool,
    /// Where prose wraps (the fix is never wrapped).
    pub width: usize,
    /// The findings shown per rule, in rank order; the rest are counted (`None`: all).
    pub per_rule: Option<usize>,
}

/// A rule's findings a text report shows by default: enough to see the pattern; a tree
/// with 100,000 unknown elements would otherwise print 100,000 snippets.
pub const FINDINGS_PER_RULE: usize = 20;

impl TextOptions {
    /// For stdout: the width of `COLUMNS`, else of the terminal, else 100.
    pub fn new(color: bool) -> TextOptions {
        TextOptions { color, width: terminal_width(), per_rule: Some(FINDINGS_PER_RULE) }
    }
}

fn terminal_width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|c| *c > 0)
        .or_else(|| terminal_size::terminal_size().map(|(w, _)| usize::from(w.0)))
        .unwrap_or(100)
        .max(40)
}

/// Lines of source shown before and after the labelled one.
const CONTEXT_LINES: usize = 1;

/// The report as one string.
pub fn render(report: &Report, sources: Option<&SourceMap>, options: &TextOptions) -> String {
    super::whole(|out, flush| render_to(report, sources, options, out, flush))
}

/// Streams the report to `to`, a finding at a time (`--all` prints every one).
pub fn write(
    report: &Report,
    sources: Option<&SourceMap>,
    options: &TextOptions,
    to: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    super::stream(to, |out, flush| render_to(report, sources, options, out, flush))
}

/// Renders the report into `out`, handed to `flush` after each finding.
fn render_to(
    report: &Report,
    sources: Option<&SourceMap>,
    options: &TextOptions,
    out: &mut String,
    flush: &mut super::Flush,
) -> std::io::Result<()> {
    let theme = if options.color { GraphicalTheme::unicode() } else { GraphicalTheme::unicode_nocolor() };
    // a path or a tag in prose is moved to the next line whole, never split at a hyphen
    let handler = GraphicalReportHandler::new_themed(theme)
        .with_width(options.width)
        .with_context_lines(CONTEXT_LINES)
        .with_word_splitter(textwrap::WordSplitter::NoHyphenation)
        .with_break_words(false);
    let limit = options.per_rule.unwrap_or(usize::MAX);
    // per rule: its findings, and how many of them are printed
    let mut shown: std::collections::BTreeMap<&str, (usize, usize)> = std::collections::BTreeMap::new();
    // each file masked once, however many findings quote it
    let mut masked = MaskedFiles::default();
    for group in sibling_groups(&report.findings) {
        let f = group[0];
        let (total, printed) = shown.entry(f.rule_id.as_str()).or_default();
        *total += group.len();
        if *printed >= limit {
            continue;
        }
        *printed += 1;
        let diagnostic = FindingDiagnostic::new(f, sources, &mut masked);
        if handler.render_report(out, &diagnostic).is_err() {
            let _ = writeln!(out, "{}", diagnostic.headline);
        }
        if group.len() > 1 {
            let _ = writeln!(
                out,
                "  and {} more of the same kind{} (each one in the JSON report, with its fix):",
                group.len() - 1,
                if f.hosts.is_empty() { "" } else { " on the same replicas" }
            );
            for sibling in group[1..].iter().take(limit - *printed) {
                let at = sibling.location.as_ref().map_or(String::new(), |l| format!("{}:{}: ", l.file, l.line));
                let _ = writeln!(out, "    #{} {at}{}", sibling.rank, mask::excerpt(&sibling.message));
                *printed += 1;
                flush(out)?;
            }
        }
        write_fix(out, f);
        out.push('\n');
        flush(out)?;
    }
    let cut: Vec<(&str, usize)> =
        shown.into_iter().filter(|(_, (total, printed))| total > printed).map(|(r, (t, p))| (r, t - p)).collect();
    for (rule, count) in &cut {
        let _ = writeln!(out, "{rule}: {count} more finding(s) not shown (--all prints every one)");
    }
    if !cut.is_empty() {
        out.push('\n');
    }
    if let Some(line) = report.not_shown_line() {
        let _ = writeln!(out, "{line}\n");
    }
    // a replica that could not be read is one line: the rules it alone kept from judging
    // are counted there (the JSON report lists each), not listed one by one
    let not_judged = |kind: OutcomeKind| matches!(kind, OutcomeKind::Errored | OutcomeKind::Inconclusive);
    for o in report.outcomes.iter().filter(|o| not_judged(o.outcome)) {
        let reason = if o.hosts.is_empty() {
            if report.unread_alone(&o.rule_id, None) {
                continue;
            }
            o.reason.clone().unwrap_or_default()
        } else {
            let mut other =
                o.hosts.iter().filter(|h| not_judged(h.outcome) && !report.unread_alone(&o.rule_id, Some(&h.host)));
            match other.clone().find(|h| h.outcome == o.outcome).or_else(|| other.next()) {
                Some(h) => format!("{}: {}", h.host, h.reason.as_deref().unwrap_or("")),
                None => continue,
            }
        };
        let _ = writeln!(out, "{} {}: {reason}", outcome_name(o.outcome), o.rule_id);
    }
    for group in report.unread_groups() {
        let hosts: Vec<&str> = group.iter().map(|r| r.host.as_str()).collect();
        let _ = writeln!(
            out,
            "inconclusive: {} could not be read: {} ({} rule(s) not judged on {})",
            super::replicas_named(&hosts),
            group[0].reason,
            group[0].rules.len(),
            if hosts.len() == 1 { "it" } else { "each" }
        );
    }
    let s = &report.summary;
    let counts = s.severity_counts();
    let outcomes: Vec<String> = s.outcomes.iter().map(|(k, v)| format!("{v} {k}")).collect();
    let set_aside = s.set_aside();
    let _ = writeln!(
        out,
        "{}: {} finding(s){}{}; rules: {}; {} at or above {}",
        report.target,
        s.findings,
        if counts.is_empty() { String::new() } else { format!(" ({})", counts.join(", ")) },
        if set_aside.is_empty() { String::new() } else { format!(", of them {} (not counted)", set_aside.join(", ")) },
        outcomes.join(", "),
        s.failing,
        s.fail_on.map_or("never", Severity::name)
    );
    if let Some(line) = super::status_line(report) {
        let _ = writeln!(out, "{line}");
    }
    Ok(())
}

/// Findings of one rule on sibling objects (twelve log tables without a TTL) as one group,
/// at the place of the best-ranked; suppressed or baselined findings stay apart, and in a
/// cluster audit so do findings on another set of replicas.
fn sibling_groups(findings: &[Finding]) -> Vec<Vec<&Finding>> {
    let mut groups: Vec<Vec<&Finding>> = Vec::new();
    for f in findings {
        let same = |g: &&mut Vec<&Finding>| {
            let first = g[0];
            first.rule_id == f.rule_id
                && first.is_active()
                && f.is_active()
                && first.hosts.len() == f.hosts.len()
                && first.hosts.iter().zip(&f.hosts).all(|(a, b)| a.host == b.host)
        };
        match groups.iter_mut().find(|g| same(g)) {
            Some(group) => group.push(f),
            None => groups.push(vec![f]),
        }
    }
    groups
}

/// A finding as a miette diagnostic, so the snippet rendering is miette's.
#[derive(Debug)]
struct FindingDiagnostic {
    headline: String,
    severity: miette::Severity,
    source: Option<Excerpt>,
    span: Option<SourceSpan>,
    label: String,
    help: String,
}

impl FindingDiagnostic {
    fn new(f: &Finding, sources: Option<&SourceMap>, masked: &mut MaskedFiles) -> Self {
        let severity = match f.severity {
            Severity::Critical | Severity::High => miette::Severity::Error,
            Severity::Medium => miette::Severity::Warning,
            Severity::Low | Severity::Info => miette::Severity::Advice,
        };
        let (source, span) = match (&f.location, sources) {
            (Some(l), Some(s)) => snippet(s, l, masked).map_or((None, None), |(src, span)| (Some(src), Some(span))),
            _ => (None, None),
        };
        let at = f.location.as_ref().map_or(String::new(), |l| format!(" ({l})"));
        let mut help = String::new();
        // a series in words (its extent and peak), as the HTML report draws it
        let shown = |v: &serde_json::Value| {
            super::series::in_words(v).unwrap_or_else(|| {
                mask::excerpt(v.as_str().map_or_else(|| v.to_string(), str::to_string).trim_end()).into_owned()
            })
        };
        if f.hosts.is_empty() {
            for (k, v) in &f.evidence {
                let _ = writeln!(help, "evidence: {k} = {}", shown(v));
            }
        } else {
            let _ = match super::one_version(&f.hosts) {
                Some(version) => writeln!(
                    help,
                    "on {} replica(s), all {version}: {}",
                    f.hosts.len(),
                    f.hosts.iter().map(|h| h.host.as_str()).collect::<Vec<_>>().join(", ")
                ),
                None => writeln!(
                    help,
                    "on {} replica(s): {}",
                    f.hosts.len(),
                    f.hosts.iter().map(host_and_version).collect::<Vec<_>>().join(", ")
                ),
            };
            // what the replicas say alike once; per replica only where it differs
            let groups = super::alike_hosts(&f.hosts, false);
            for group in &groups {
                let h = group[0];
                let on = if groups.len() == 1 && group.len() == 2 {
                    "both replicas".to_string()
                } else if groups.len() == 1 && group.len() > 1 {
                    format!("all {} replicas", group.len())
                } else {
                    group.iter().map(|h| h.host.as_str()).collect::<Vec<_>>().join(", ")
                };
                if let Some(message) = &h.message {
                    let _ = writeln!(help, "on {on}: {message}");
                }
                let evidence: Vec<String> = h.evidence.iter().map(|(k, v)| format!("{k} = {}", shown(v))).collect();
                if !evidence.is_empty() {
                    let _ = writeln!(help, "evidence on {on}: {}", evidence.join(", "));
                }
            }
        }
        // suppressed and baselined findings stay visible, marked: they do not count
        let state = match (&f.suppressed, f.baselined) {
            (Some(s), _) => format!(" [suppressed at {}: {}]", s.at, s.reason),
            (None, true) => " [in baseline]".to_string(),
            (None, false) => String::new(),
        };
        FindingDiagnostic {
            headline: format!("#{} [{}] {}: {}{at}{state}", f.rank, f.severity.name(), f.rule_id, f.title),
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
        let help = self.help.trim_end();
        (!help.is_empty()).then(|| Box::new(help) as Box<dyn std::fmt::Display + 'a>)
    }

    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        self.source.as_ref().map(|s| s as &dyn miette::SourceCode)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let span = self.span?;
        Some(Box::new(std::iter::once(LabeledSpan::new_with_span(Some(self.label.clone()), span))))
    }
}

/// The fix, after miette's rendering: its snippets as written, never wrapped.
fn write_fix(out: &mut String, f: &Finding) {
    let restart = if f.remediation.restart { "needs a restart" } else { "no restart needed" };
    let _ = writeln!(out, "  fix ({restart}):");
    for snippet in [&f.remediation.manual, &f.remediation.config, &f.remediation.sql].into_iter().flatten() {
        for line in snippet.trim_end().lines() {
            let _ = writeln!(out, "      {line}");
        }
    }
    if let Some(manifest) = &f.remediation.manifest {
        // beside a step only the user can do, the snippet is an example of it
        let label = if f.remediation.manual.is_some() { "for example, merge" } else { "merge" };
        let _ = writeln!(out, "      {label} into the manifest:");
        for line in manifest.merge.trim_end().lines() {
            let _ = writeln!(out, "        {line}");
        }
        let _ = writeln!(out, "      or patch the {}:", manifest.patches);
        let _ = writeln!(out, "      $ {}", manifest.command);
    }
    if let Some(command) = &f.remediation.command {
        let _ = writeln!(out, "      on the host:");
        for line in command.trim_end().lines() {
            let _ = writeln!(out, "      $ {line}");
        }
    }
}

/// The lines of a file around a finding, secrets masked and each line bounded, numbered as
/// in the file: a finding never echoes a password or a whole huge value.
#[derive(Debug)]
struct Excerpt {
    name: String,
    text: String,
    /// The file's line number (0-based) of the excerpt's first line.
    first_line: usize,
}

impl SourceCode for Excerpt {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        before: usize,
        after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let inner = self.text.read_span(span, before, after)?;
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.clone(),
            inner.data(),
            *inner.span(),
            inner.line() + self.first_line,
            inner.column(),
            inner.line_count(),
        )))
    }
}

/// The config files as reports quote them: masked as a whole (a secret's value may start
/// lines above an excerpt), each once.
#[derive(Default)]
struct MaskedFiles(std::collections::HashMap<String, String>);

impl MaskedFiles {
    fn get(&mut self, file: &crate::config::source::SourceFile) -> &str {
        self.0.entry(file.display.clone()).or_insert_with(|| mask::mask_source(&file.text()).into_owned())
    }
}

/// The excerpt around the element at `l` and the span of its start tag (or YAML key) in
/// it, when the file is one of `sources`.
fn snippet(sources: &SourceMap, l: &Location, masked: &mut MaskedFiles) -> Option<(Excerpt, SourceSpan)> {
    let (_, file) = sources.files().find(|(_, f)| f.display == l.file)?;
    let masked_file = masked.get(file);
    let target = (l.line.max(1) - 1) as usize;
    let first_line = target.saturating_sub(CONTEXT_LINES);
    let mut text = String::new();
    let mut span = None;
    for (n, line) in masked_file.split('\n').enumerate().skip(first_line).take(target - first_line + 1 + CONTEXT_LINES)
    {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if n != target {
            text.push_str(&mask::excerpt(line));
            text.push('\n');
            continue;
        }
        let column = line.char_indices().nth(l.column.saturating_sub(1) as usize).map_or(0, |(i, _)| i);
        let (before, element) = line.split_at(column);
        // a line longer than the bound is cut so that the element shows
        let start = if before.len() + element.len() > mask::EXCERPT_CHARS && before.len() > mask::EXCERPT_CHARS / 2 {
            text.push('…');
            let start = text.len();
            text.push_str(&mask::excerpt(element));
            start
        } else {
            let start = text.len() + before.len();
            text.push_str(&mask::excerpt(line));
            start
        };
        // the element's start tag, or the rest of its (YAML) line
        let shown = &text[start..];
        let len = shown.find('>').map_or(shown.len(), |i| i + 1).max(1);
        span = Some(SourceSpan::new(start.into(), len));
        text.push('\n');
    }
    Some((Excerpt { name: file.display.clone(), text, first_line }, span?))
}

/// A replica as a cluster finding lists it: its host and the version it runs.
fn host_and_version(h: &crate::eval::HostEvidence) -> String {
    match &h.version {
        Some(v) => format!("{} ({v})", h.host),
        None => h.host.clone(),
    }
}
