//! Known issues: the version-gated rules evaluated on this server's facts at the running
//! version and at the target.

use serde::Serialize;

use crate::eval::{self, Finding, OutcomeKind, Selection};
use crate::facts::Facts;
use crate::rules::RulePack;
use crate::version::Version;

#[derive(Debug, Clone, Serialize)]
pub struct KnownIssue {
    pub rule_id: String,
    pub title: String,
    /// The versions the rule describes.
    pub versions: String,
    pub change: IssueChange,
    /// Whether this server's facts show the issue (at the running version for a fix, at the
    /// target for one the target brings).
    pub shows_here: Option<bool>,
    /// Why it could not be checked, when `shows_here` is unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unchecked_reason: Option<String>,
    pub findings: Vec<Finding>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IssueChange {
    FixedByTarget,
    IntroducedByTarget,
    /// Applies to both versions: the upgrade does not fix it.
    Remains,
}

/// The version-gated rules whose verdict differs between the two versions (or that apply to
/// both and fire here), evaluated on this server's facts at each version.
pub(super) fn known_issues(pack: &RulePack, facts: &Facts, from: Version, to: Version) -> Vec<KnownIssue> {
    let at = |version: Version| {
        let mut facts = facts.clone();
        facts.version = Some(version);
        facts
    };
    let (facts_from, facts_to) = (at(from), at(to));
    let (vars_from, vars_to) = (eval::Variables::of(&facts_from), eval::Variables::of(&facts_to));
    let mut out = Vec::new();
    for rule in pack.rules.iter().filter(|r| Selection::default().includes(r)) {
        let Some(range) = &rule.versions else { continue };
        let (before, after) = (range.contains(from), range.contains(to));
        let (change, facts, variables) = match (before, after) {
            (true, false) => (IssueChange::FixedByTarget, &facts_from, &vars_from),
            (false, true) => (IssueChange::IntroducedByTarget, &facts_to, &vars_to),
            (true, true) => (IssueChange::Remains, &facts_to, &vars_to),
            (false, false) => continue,
        };
        let (outcome, findings) = eval::evaluate_rule(rule, facts, variables);
        let shows_here = match outcome.outcome {
            OutcomeKind::Fired => Some(true),
            OutcomeKind::Passed => Some(false),
            _ => None,
        };
        // an issue of both versions is worth a line only where this server shows it
        if change == IssueChange::Remains && shows_here != Some(true) {
            continue;
        }
        out.push(KnownIssue {
            rule_id: rule.id.clone(),
            title: rule.title.clone(),
            versions: range.to_string(),
            change,
            shows_here,
            unchecked_reason: shows_here.is_none().then(|| outcome.reason.unwrap_or_default()),
            findings,
        });
    }
    out.sort_by_key(|i| (i.change != IssueChange::Remains, i.shows_here != Some(true), i.rule_id.clone()));
    out
}
