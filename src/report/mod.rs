//! Emitters: one module per output format. None of them computes anything; they turn the
//! ranked findings and outcomes of a [`Report`] into text.

pub mod html;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod openmetrics;
pub mod sarif;
pub mod series;
pub mod text;
pub mod upgrade;

mod config_view;
mod replicas;
mod sizing;

pub use config_view::{ConfigView, SHOWN_ELEMENTS, SHOWN_POINTED, ViewElement};

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Serialize;

use crate::eval::{Evaluation, Finding, HostEvidence, Outcome, OutcomeKind};
use crate::mask;
use crate::rules::Severity;
use crate::verdict::{self, Failure, Policy, Status, Unjudged};

use replicas::unread_replicas;
pub use replicas::{NotJudged, UnreadReplica, alike_hosts, one_version, replicas_named};

/// The documented JSON shape (see README "JSON output"); emitters read only this.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub chaudit_version: &'static str,
    pub target: String,
    pub findings: Vec<Finding>,
    pub outcomes: Vec<Outcome>,
    pub summary: Summary,
    /// Unused or expired suppressions, and other notes about the run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// What could not be processed (a config ClickHouse refuses, a broken rule file): CI
    /// formats carry it at its file and line, so code scanning shows it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<RunError>,
    /// The rules that did not judge, on the target or on a replica (status `incomplete`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unjudged: Vec<Unjudged>,
    /// The replicas a cluster audit could not read, with the rules that did not judge only
    /// because of them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unread_replicas: Vec<UnreadReplica>,
    /// The findings in the baseline left out of `findings` (`--new-only`): counted in the
    /// summary, not listed.
    #[serde(skip_serializing_if = "is_zero")]
    pub baselined_not_shown: usize,
    /// Inconclusive rules let pass (`--allow-inconclusive`).
    #[serde(skip)]
    pub allowed_inconclusive: Vec<Unjudged>,
    /// The fail-on severity and whether inconclusive rules pass, as the run was asked.
    #[serde(skip)]
    pub policy: Policy,
    /// The rules that ran (for SARIF's rule list).
    #[serde(skip)]
    pub rules: Vec<RuleInfo>,
    /// The main config's directory as given on the command line: finding files are relative
    /// to it, SARIF URIs relative to the working directory.
    #[serde(skip)]
    pub artifact_base: String,
    /// The merged config trees the audit read, each element with where it was set (the HTML
    /// report shows them); empty unless the audit was asked for them.
    #[serde(skip)]
    pub config: Vec<ConfigView>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub findings: usize,
    /// Findings per severity.
    pub by_severity: BTreeMap<&'static str, usize>,
    /// Rules per outcome.
    pub outcomes: BTreeMap<&'static str, usize>,
    /// Active findings at or above `--fail-on` (0 with `never`).
    pub failing: usize,
    /// The `--fail-on` severity, or `never`.
    #[serde(serialize_with = "fail_on_name")]
    pub fail_on: Option<Severity>,
    /// How the run ended: `passed`, `failing` (findings at or above fail_on), `incomplete`
    /// (a rule errored, or could not read its evidence, on the target or a replica) or
    /// `not-audited` (a config tree refused, or no selected rule applies): what the exit
    /// code says.
    pub status: Status,
    /// Whether inconclusive rules were let pass (`--allow-inconclusive`).
    pub allow_inconclusive: bool,
    pub suppressed: usize,
    pub baselined: usize,
}

/// What SARIF's tool.driver needs to know about each rule that ran.
#[derive(Debug, Clone)]
pub struct RuleInfo {
    pub id: String,
    pub title: String,
    pub description: String,
    pub severity: Severity,
    pub tags: Vec<String>,
    pub category: String,
    pub help_uri: Option<String>,
}

impl Summary {
    /// "3 suppressed, 2 in the baseline": the findings that do not count, when there are any.
    pub fn set_aside(&self) -> Vec<String> {
        [(self.suppressed, "suppressed"), (self.baselined, "in the baseline")]
            .iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, what)| format!("{n} {what}"))
            .collect()
    }

    /// "2 high, 1 low": the findings per severity, the most severe first.
    pub fn severity_counts(&self) -> Vec<String> {
        Severity::names().filter_map(|name| self.by_severity.get(name).map(|n| format!("{n} {name}"))).collect()
    }
}

/// Everything a run ended with: the report, its status and its exit code are built from it
/// by [`Report::of`], the one place the verdict is decided.
pub struct Run {
    pub target: String,
    pub evaluation: Evaluation,
    pub policy: Policy,
    /// Inputs that could not be processed (a config tree ClickHouse refuses): nothing they
    /// govern was audited.
    pub errors: Vec<RunError>,
    /// The run stopped before any rule ran.
    pub failure: Option<Failure>,
    pub warnings: Vec<String>,
    pub rules: Vec<RuleInfo>,
    pub artifact_base: String,
}

impl Run {
    /// A run that stopped before any rule ran: only its errors.
    pub fn stopped(target: String, artifact_base: String, errors: Vec<RunError>, failure: Failure) -> Run {
        Run {
            target,
            evaluation: Evaluation { outcomes: Vec::new(), findings: Vec::new() },
            // what the command line asked for is unknown when its arguments are the error
            policy: Policy { fail_on: Some(Severity::High), allow_inconclusive: false },
            errors,
            failure: Some(failure),
            warnings: Vec::new(),
            rules: Vec::new(),
            artifact_base,
        }
    }
}

impl Report {
    /// The report of a run, with its verdict; every value it shows has its secrets masked and
    /// is bounded (see [`mask`]), whatever the format.
    pub fn of(run: Run) -> Report {
        let Run { mut target, mut evaluation, policy, mut errors, failure, warnings, rules, artifact_base } = run;
        // a cluster's name, an endpoint and replicas' hosts come from the server or a snapshot
        mask::make_visible(&mut target);
        // read before the reasons are masked and bounded: they are matched whole
        let mut unread_replicas = unread_replicas(&evaluation.outcomes);
        for r in &mut unread_replicas {
            mask::make_visible(&mut r.host);
            r.reason = mask::shown(&r.reason);
        }
        let mut secret_keys = SecretKeys::default();
        evaluation.findings.iter_mut().for_each(|f| present_finding(f, &mut secret_keys));
        for o in &mut evaluation.outcomes {
            o.reason = o.reason.as_deref().map(mask::shown);
            for h in &mut o.hosts {
                mask::make_visible(&mut h.host);
                h.reason = h.reason.as_deref().map(mask::shown);
            }
        }
        let mut by_severity = BTreeMap::new();
        for f in &evaluation.findings {
            *by_severity.entry(f.severity.name()).or_insert(0) += 1;
        }
        let mut outcomes = BTreeMap::new();
        for o in &evaluation.outcomes {
            *outcomes.entry(outcome_name(o.outcome)).or_insert(0) += 1;
        }
        let failing = evaluation.findings.iter().filter(|f| fails(&policy, f)).count();
        let judgement =
            verdict::judge(&evaluation.outcomes, !errors.is_empty(), failure, failing, policy.allow_inconclusive);
        errors.extend(judgement.nothing_applies.as_deref().map(RunError::plain));
        let suppressed = evaluation.findings.iter().filter(|f| f.suppressed.is_some()).count();
        let baselined = evaluation.findings.iter().filter(|f| f.baselined).count();
        Report {
            chaudit_version: env!("CARGO_PKG_VERSION"),
            target,
            summary: Summary {
                findings: evaluation.findings.len(),
                by_severity,
                outcomes,
                failing,
                fail_on: policy.fail_on,
                status: judgement.status,
                allow_inconclusive: policy.allow_inconclusive,
                suppressed,
                baselined,
            },
            warnings,
            errors,
            unjudged: judgement.unjudged,
            unread_replicas,
            baselined_not_shown: 0,
            allowed_inconclusive: judgement.allowed,
            rules,
            artifact_base,
            config: Vec::new(),
            policy,
            findings: evaluation.findings,
            outcomes: evaluation.outcomes,
        }
    }

    /// Leaves the findings in the baseline out of the report (`--new-only`): they do not
    /// count toward the verdict, which is unchanged; the summary still counts them, and
    /// [`Report::not_shown_line`] says how many were left out.
    pub fn new_only(&mut self) {
        let before = self.findings.len();
        self.findings.retain(|f| !f.baselined);
        self.baselined_not_shown += before - self.findings.len();
    }

    /// "12 findings in the baseline not shown": what `--new-only` left out, when it did.
    pub fn not_shown_line(&self) -> Option<String> {
        match self.baselined_not_shown {
            0 => None,
            1 => Some("1 finding in the baseline not shown (--new-only)".to_string()),
            n => Some(format!("{n} findings in the baseline not shown (--new-only)")),
        }
    }

    /// Whether this finding is one the run fails on (active, at or above fail-on): the
    /// summary's `failing` counts these, JUnit lists them as failures.
    pub fn fails(&self, finding: &Finding) -> bool {
        fails(&self.policy, finding)
    }
}

fn fails(policy: &Policy, finding: &Finding) -> bool {
    finding.is_active() && policy.fails(finding.severity)
}

/// A problem that stopped the run or part of it, where it is.
#[derive(Debug, Clone, Serialize)]
pub struct RunError {
    /// The diagnostic's code, e.g. `chaudit::config::syntax`.
    pub code: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<ErrorLocation>,
}

/// 1-based line and column in a file named relative to the main config's directory.
#[derive(Debug, Clone, Serialize)]
pub struct ErrorLocation {
    pub file: String,
    pub line: usize,
    pub column: usize,
}

impl RunError {
    /// An error known only by its message.
    pub fn plain(message: &str) -> RunError {
        RunError { code: "chaudit::error".to_string(), message: mask::shown(message), location: None }
    }

    /// The diagnostic and, when it gathers several (a rule pack's problems), each of them.
    pub fn of(diagnostic: &dyn miette::Diagnostic) -> Vec<RunError> {
        let related: Vec<RunError> = diagnostic.related().into_iter().flatten().flat_map(RunError::of).collect();
        if !related.is_empty() {
            return related;
        }
        let location =
            diagnostic.source_code().zip(diagnostic.labels().and_then(|mut l| l.next())).and_then(|(source, label)| {
                let contents = source.read_span(label.inner(), 0, 0).ok()?;
                Some(ErrorLocation {
                    file: contents.name().unwrap_or_default().to_string(),
                    line: contents.line() + 1,
                    column: contents.column() + 1,
                })
            });
        vec![RunError {
            code: diagnostic.code().map_or_else(|| "chaudit::error".to_string(), |c| c.to_string()),
            message: mask::shown(&diagnostic.to_string()),
            location,
        }]
    }
}

/// A finding as every format shows it: secrets masked, values bounded, the score rounded.
fn present_finding(f: &mut Finding, secret_keys: &mut SecretKeys) {
    // the score as a person reads it: 2.4, not 2.4000000000000004 (the ranking is done)
    f.score = (f.score * 1000.0).round() / 1000.0;
    mask::show(&mut f.message);
    mask_evidence(f.evidence.iter_mut(), secret_keys);
    for h in &mut f.hosts {
        mask::make_visible(&mut h.host);
        mask_evidence(h.evidence.iter_mut(), secret_keys);
        if let Some(message) = &mut h.message {
            mask::show(message);
        }
    }
    let texts =
        [&mut f.remediation.config, &mut f.remediation.manual, &mut f.remediation.sql, &mut f.remediation.command]
            .into_iter()
            .flatten();
    let manifest = f.remediation.manifest.iter_mut().flat_map(|m| {
        let mut texts = vec![&mut m.merge, &mut m.command];
        texts.extend(json_strings(&mut m.patch));
        texts
    });
    for text in texts.chain(manifest).chain(f.remediation.fragments.iter_mut().map(|fragment| &mut fragment.xml)) {
        if let Cow::Owned(masked) = mask::mask_text(text) {
            *text = masked;
        }
        // an element named with a control character in the user's file
        mask::make_visible(text);
    }
}

/// Every string inside a JSON value.
fn json_strings(value: &mut serde_json::Value) -> Vec<&mut String> {
    match value {
        serde_json::Value::String(text) => vec![text],
        serde_json::Value::Array(items) => items.iter_mut().flat_map(json_strings).collect(),
        serde_json::Value::Object(map) => map.values_mut().flat_map(json_strings).collect(),
        _ => Vec::new(),
    }
}

/// Whether each evidence key names a secret, asked once per key: the keys are the rules'
/// own few names, asked again for each of 100,000 findings (asking is a few thousand
/// instructions).
#[derive(Default)]
struct SecretKeys(rustc_hash::FxHashMap<String, bool>);

impl SecretKeys {
    fn is_secret(&mut self, key: &str) -> bool {
        if let Some(known) = self.0.get(key) {
            return *known;
        }
        let secret = mask::is_secret_name(key);
        self.0.insert(key.to_owned(), secret);
        secret
    }
}

/// Masks the values of evidence entries (a finding's, a replica's, or an object nested in one).
fn mask_evidence<'a>(
    entries: impl Iterator<Item = (&'a String, &'a mut serde_json::Value)>,
    secret_keys: &mut SecretKeys,
) {
    for (key, value) in entries {
        if secret_keys.is_secret(key) && !matches!(value, serde_json::Value::Null | serde_json::Value::Bool(_)) {
            *value = serde_json::Value::String(mask::MASK.into());
        } else {
            mask_value(value, secret_keys);
        }
    }
}

fn mask_value(value: &mut serde_json::Value, secret_keys: &mut SecretKeys) {
    match value {
        serde_json::Value::String(s) => mask::show(s),
        serde_json::Value::Array(items) => items.iter_mut().for_each(|item| mask_value(item, secret_keys)),
        serde_json::Value::Object(map) => mask_evidence(map.iter_mut(), secret_keys),
        _ => {}
    }
}

/// What a renderer calls between findings: it writes out and empties the text rendered so
/// far once that is large, or keeps it all (see [`stream`] and [`whole`]).
pub(crate) type Flush<'a> = dyn FnMut(&mut String) -> std::io::Result<()> + 'a;

/// How much rendered text is held before it is written.
const FLUSH_AT: usize = 64 * 1024;

/// Streams what `render` renders to `to`: a report of 100,000 findings (170 MB of HTML) is
/// never held whole as text.
pub(crate) fn stream(
    to: &mut dyn std::io::Write,
    render: impl FnOnce(&mut String, &mut Flush) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut text = String::with_capacity(2 * FLUSH_AT);
    render(&mut text, &mut |text: &mut String| {
        if text.len() > FLUSH_AT {
            to.write_all(text.as_bytes())?;
            text.clear();
        }
        Ok(())
    })?;
    to.write_all(text.as_bytes())
}

/// What `render` renders, as one string.
pub(crate) fn whole(render: impl FnOnce(&mut String, &mut Flush) -> std::io::Result<()>) -> String {
    let mut text = String::new();
    // a flush that keeps everything cannot fail
    let _: std::io::Result<()> = render(&mut text, &mut |_: &mut String| Ok(()));
    text
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn fail_on_name<S: serde::Serializer>(fail_on: &Option<Severity>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(fail_on.map_or("never", Severity::name))
}

/// The verdict in one sentence when the run did not judge what it was asked to (None when
/// it did: the findings and their count say the rest).
pub fn status_line(report: &Report) -> Option<String> {
    let errors = || report.errors.iter().map(|e| e.message.as_str()).collect::<Vec<_>>().join("; ");
    match report.summary.status {
        Status::NotAudited => Some(format!("not audited: {}", errors())),
        Status::Failed => Some(format!("failed: {}", errors())),
        Status::Incomplete => {
            let rules: std::collections::BTreeSet<&str> = report.unjudged.iter().map(|u| u.rule_id.as_str()).collect();
            Some(format!(
                "incomplete: {} rule(s) could not be judged ({})",
                rules.len(),
                rules.into_iter().collect::<Vec<_>>().join(", ")
            ))
        }
        Status::Failing | Status::Passed => None,
    }
}

pub fn outcome_name(kind: OutcomeKind) -> &'static str {
    match kind {
        OutcomeKind::Fired => "fired",
        OutcomeKind::Passed => "passed",
        OutcomeKind::NotApplicable => "not-applicable",
        OutcomeKind::Inconclusive => "inconclusive",
        OutcomeKind::Errored => "errored",
    }
}
