//! The verdict: how a run ended, decided once. Every command ends in a [`Status`]: the
//! audit (offline, snapshot, live, cluster), a run stopped by an error, `fix`, `upgrade`,
//! `collect` and `rules test`. The exit code is [`Status::exit_code`], and every format
//! reads the status from the report; none decides it again.

use std::collections::BTreeSet;

use crate::eval::{Outcome, OutcomeKind};
use crate::rules::Severity;

/// When a run fails: findings at or above `fail_on` (None: never on findings), and whether
/// rules that could not read their evidence still let the run pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    pub fail_on: Option<Severity>,
    pub allow_inconclusive: bool,
}

impl Policy {
    /// Whether an active finding of this severity fails the run.
    pub fn fails(&self, severity: Severity) -> bool {
        self.fail_on.is_some_and(|floor| severity >= floor)
    }
}

/// Why a run stopped before judging: the user asked for something impossible (usage, a
/// config ClickHouse refuses, a broken rule file), or the run itself failed (a server that
/// cannot be read, an output that cannot be written).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    Usage,
    Runtime,
}

impl Failure {
    pub fn status(self) -> Status {
        match self {
            Failure::Usage => Status::NotAudited,
            Failure::Runtime => Status::Failed,
        }
    }
}

/// How the run ended, most serious first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, strum::IntoStaticStr)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum Status {
    /// Nothing was audited as asked: a usage error, a config tree ClickHouse refuses, or a
    /// selection none of whose rules applies (exit 2).
    NotAudited,
    /// The run failed before it could judge: a server that cannot be read, an output that
    /// cannot be written (exit 3).
    Failed,
    /// Some rule errored, or could not read its evidence (unless allowed), on the target or
    /// on any replica: the run did not judge everything it was asked to, whatever it found
    /// (exit 3).
    Incomplete,
    /// Findings at or above the fail-on severity; `fix`: one remains; `upgrade`: something
    /// blocks it; `rules test`: a fixture failed (exit 1).
    Failing,
    Passed,
}

impl Status {
    /// The documented exit code (README "Exit codes").
    pub const fn exit_code(self) -> u8 {
        match self {
            Status::Passed => 0,
            Status::Failing => 1,
            Status::NotAudited => 2,
            Status::Failed | Status::Incomplete => 3,
        }
    }

    /// Whether the run judged what it was asked to (SARIF's executionSuccessful).
    pub fn judged(self) -> bool {
        matches!(self, Status::Passed | Status::Failing)
    }

    /// The status as the JSON report spells it.
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// What the exit code says, in one sentence (SARIF's and JUnit's texts).
    pub fn meaning(self) -> &'static str {
        match self {
            Status::NotAudited => "Nothing was audited as asked: fix the input at the location shown (exit 2).",
            Status::Failed => "The run failed before it could judge: the message says why (exit 3).",
            Status::Incomplete => "Some rules could not be judged: their reasons say why (exit 3).",
            Status::Failing => "Findings at or above the fail-on severity (exit 1).",
            Status::Passed => "Every selected rule judged, nothing at or above the fail-on severity (exit 0).",
        }
    }
}

/// A rule that did not judge, on the target or on one replica, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Unjudged {
    pub rule_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    pub outcome: OutcomeKind,
    pub reason: String,
}

/// The verdict of an evaluation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judgement {
    pub status: Status,
    /// The rules that did not judge and count against the run (errored; inconclusive
    /// unless allowed).
    pub unjudged: Vec<Unjudged>,
    /// Inconclusive rules let pass by `--allow-inconclusive`.
    pub allowed: Vec<Unjudged>,
    /// Why nothing was judged although every rule ran: none of them applies.
    pub nothing_applies: Option<String>,
}

/// What an evaluation ended in: `errors` (inputs that could not be processed) and a
/// `failure` (the run stopped) come first, then the rules that did not judge, then the
/// `failing` findings.
pub fn judge(
    outcomes: &[Outcome],
    errors: bool,
    failure: Option<Failure>,
    failing: usize,
    allow_inconclusive: bool,
) -> Judgement {
    let (mut unjudged, mut allowed) = (Vec::new(), Vec::new());
    for o in outcomes {
        // a rule that fired on one replica still did not judge the replica it could not read
        let on_target = o.hosts.is_empty().then_some((None, o.outcome, o.reason.as_deref()));
        let on_hosts = o.hosts.iter().map(|h| (Some(h.host.clone()), h.outcome, h.reason.as_deref()));
        for (host, outcome, reason) in on_target.into_iter().chain(on_hosts) {
            let entry = || Unjudged {
                rule_id: o.rule_id.clone(),
                host: host.clone(),
                outcome,
                reason: reason.unwrap_or_default().to_string(),
            };
            match outcome {
                OutcomeKind::Errored => unjudged.push(entry()),
                OutcomeKind::Inconclusive if allow_inconclusive => allowed.push(entry()),
                OutcomeKind::Inconclusive => unjudged.push(entry()),
                _ => {}
            }
        }
    }
    let nothing_applies = (!outcomes.is_empty() && outcomes.iter().all(|o| o.outcome == OutcomeKind::NotApplicable))
        .then(|| {
            let reasons: BTreeSet<&str> = outcomes.iter().filter_map(|o| o.reason.as_deref()).collect();
            format!(
                "none of the {} selected rule(s) applies to what was given, nothing was judged ({})",
                outcomes.len(),
                reasons.into_iter().collect::<Vec<_>>().join("; ")
            )
        });
    let status = match failure {
        Some(failure) => failure.status(),
        None if errors || nothing_applies.is_some() => Status::NotAudited,
        None if !unjudged.is_empty() => Status::Incomplete,
        None if failing > 0 => Status::Failing,
        None => Status::Passed,
    };
    Judgement { status, unjudged, allowed, nothing_applies }
}

/// The verdict of a command that judges by a count: `failing` things found (a fix's
/// remaining findings, a review's blocking items, failed fixtures) and `unjudged` things it
/// could not check.
pub fn of_counts(failing: usize, unjudged: usize) -> Status {
    match (failing, unjudged) {
        (0, 0) => Status::Passed,
        (0, _) => Status::Incomplete,
        // a stop is a stop, whatever could not be checked
        _ => Status::Failing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::HostOutcome;

    fn outcome(rule: &str, kind: OutcomeKind) -> Outcome {
        Outcome { rule_id: rule.into(), outcome: kind, reason: Some(format!("{rule} why")), hosts: Vec::new() }
    }

    #[test]
    fn the_most_serious_ending_wins() {
        let fired = [outcome("a", OutcomeKind::Fired)];
        let unread = [outcome("a", OutcomeKind::Fired), outcome("b", OutcomeKind::Inconclusive)];
        assert_eq!(judge(&fired, false, None, 0, false).status, Status::Passed);
        assert_eq!(judge(&fired, false, None, 1, false).status, Status::Failing);
        assert_eq!(judge(&unread, false, None, 1, false).status, Status::Incomplete);
        assert_eq!(judge(&unread, false, None, 1, true).status, Status::Failing);
        assert_eq!(judge(&unread, true, None, 1, false).status, Status::NotAudited);
        assert_eq!(judge(&unread, true, Some(Failure::Runtime), 1, false).status, Status::Failed);
        assert_eq!(judge(&[], false, Some(Failure::Usage), 0, false).status, Status::NotAudited);
    }

    #[test]
    fn allowed_inconclusive_rules_are_listed_apart() {
        let unread = [outcome("b", OutcomeKind::Inconclusive), outcome("c", OutcomeKind::Errored)];
        let strict = judge(&unread, false, None, 0, false);
        assert_eq!(strict.unjudged.iter().map(|u| u.rule_id.as_str()).collect::<Vec<_>>(), ["b", "c"]);
        let lenient = judge(&unread, false, None, 0, true);
        assert_eq!(lenient.unjudged.iter().map(|u| u.rule_id.as_str()).collect::<Vec<_>>(), ["c"]);
        assert_eq!(lenient.allowed.iter().map(|u| u.rule_id.as_str()).collect::<Vec<_>>(), ["b"]);
        assert_eq!(lenient.status, Status::Incomplete);
    }

    #[test]
    fn a_replica_that_was_not_read_is_unjudged_though_the_rule_fired_elsewhere() {
        let mut o = outcome("a", OutcomeKind::Fired);
        o.hosts = vec![
            HostOutcome { host: "r1".into(), outcome: OutcomeKind::Fired, reason: None },
            HostOutcome { host: "r2".into(), outcome: OutcomeKind::Inconclusive, reason: Some("down".into()) },
        ];
        let judged = judge(&[o], false, None, 1, false);
        assert_eq!(judged.status, Status::Incomplete);
        assert_eq!(judged.unjudged[0].host.as_deref(), Some("r2"));
        assert_eq!(judged.unjudged[0].reason, "down");
    }

    #[test]
    fn a_selection_of_which_nothing_applies_audits_nothing() {
        let judged = judge(&[outcome("a", OutcomeKind::NotApplicable)], false, None, 0, false);
        assert_eq!(judged.status, Status::NotAudited);
        assert!(judged.nothing_applies.unwrap().contains("a why"));
    }

    #[test]
    fn counts_judge_the_other_commands() {
        assert_eq!(of_counts(0, 0), Status::Passed);
        assert_eq!(of_counts(0, 2), Status::Incomplete);
        assert_eq!(of_counts(1, 2), Status::Failing);
    }

    #[test]
    fn names_are_the_serialized_names() {
        for s in [Status::NotAudited, Status::Failed, Status::Incomplete, Status::Failing, Status::Passed] {
            assert_eq!(serde_json::to_value(s).unwrap(), s.name());
        }
    }
}
