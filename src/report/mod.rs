//! Emitters: one module per output format. None of them computes anything; they turn the
//! ranked findings and outcomes of a [`Report`] into text.

pub mod json;
pub mod markdown;
pub mod text;

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
}

#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub findings: usize,
    /// Findings per severity.
    pub by_severity: BTreeMap<&'static str, usize>,
    /// Rules per outcome.
    pub outcomes: BTreeMap<&'static str, usize>,
    /// Findings at or above `--fail-on` (they decide the exit code).
    pub failing: usize,
    pub fail_on: Severity,
}

impl Report {
    pub fn new(target: String, evaluation: Evaluation, fail_on: Severity) -> Report {
        let mut by_severity = BTreeMap::new();
        for f in &evaluation.findings {
            *by_severity.entry(f.severity.name()).or_insert(0) += 1;
        }
        let mut outcomes = BTreeMap::new();
        for o in &evaluation.outcomes {
            *outcomes.entry(outcome_name(o.outcome)).or_insert(0) += 1;
        }
        let failing = evaluation.findings.iter().filter(|f| f.severity >= fail_on).count();
        Report {
            chaudit_version: env!("CARGO_PKG_VERSION"),
            target,
            summary: Summary { findings: evaluation.findings.len(), by_severity, outcomes, failing, fail_on },
            findings: evaluation.findings,
            outcomes: evaluation.outcomes,
        }
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
