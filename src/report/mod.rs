//! Emitters: one module per output format. None of them computes anything; they turn the
//! ranked findings and outcomes of a [`Report`] into text.

pub mod json;
pub mod junit;
pub mod markdown;
pub mod sarif;
pub mod text;
pub mod upgrade;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::eval::{Evaluation, Finding, Outcome, OutcomeKind};
use crate::rules::Severity;

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
    /// The rules that ran (for SARIF's rule list).
    #[serde(skip)]
    pub rules: Vec<RuleInfo>,
    /// The main config's directory as given on the command line: finding files are relative
    /// to it, SARIF URIs relative to the working directory.
    #[serde(skip)]
    pub artifact_base: String,
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
    /// How the run ended: `passed`, `failing` (findings at or above fail_on) or `incomplete`
    /// (a rule errored, or could not read its evidence): what the exit code says.
    pub status: crate::audit::Status,
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

impl Report {
    pub fn new(target: String, evaluation: Evaluation, fail_on: Option<Severity>) -> Report {
        let mut by_severity = BTreeMap::new();
        for f in &evaluation.findings {
            *by_severity.entry(f.severity.name()).or_insert(0) += 1;
        }
        let mut outcomes = BTreeMap::new();
        for o in &evaluation.outcomes {
            *outcomes.entry(outcome_name(o.outcome)).or_insert(0) += 1;
        }
        let failing = match fail_on {
            Some(fail_on) => evaluation.findings.iter().filter(|f| f.is_active() && f.severity >= fail_on).count(),
            None => 0,
        };
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
                fail_on,
                status: crate::audit::Status::Passed,
                allow_inconclusive: false,
                suppressed,
                baselined,
            },
            warnings: Vec::new(),
            rules: Vec::new(),
            artifact_base: String::new(),
            findings: evaluation.findings,
            outcomes: evaluation.outcomes,
        }
    }
}

fn fail_on_name<S: serde::Serializer>(fail_on: &Option<Severity>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(fail_on.map_or("never", Severity::name))
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
