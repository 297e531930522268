//! Emitters: one module per output format. None of them computes anything; they turn the
//! ranked findings and outcomes of a [`Report`] into text.

pub mod html;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod openmetrics;
pub mod sarif;
pub mod text;
pub mod upgrade;

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::Serialize;

use crate::eval::{Evaluation, Finding, HostEvidence, Outcome, OutcomeKind};
use crate::mask;
use crate::rules::Severity;
use crate::verdict::{self, Failure, Policy, Status, Unjudged};

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
        evaluation.findings.iter_mut().for_each(present_finding);
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
fn present_finding(f: &mut Finding) {
    // the score as a person reads it: 2.4, not 2.4000000000000004 (the ranking is done)
    f.score = (f.score * 1000.0).round() / 1000.0;
    mask::show(&mut f.message);
    mask_evidence(&mut f.evidence);
    for h in &mut f.hosts {
        mask::make_visible(&mut h.host);
        mask_evidence(&mut h.evidence);
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

/// The replicas a cluster audit could not read (raw names and reasons), each with why and the
/// rules it alone kept from judging: its own (inconclusive there for want of the replica),
/// and the comparisons over the cluster that leave out only unread replicas.
fn unread_replicas(outcomes: &[Outcome]) -> Vec<UnreadReplica> {
    let prefix = format!("{}: ", crate::eval::REPLICA_NOT_READ);
    let mut unread: BTreeMap<&str, (&str, std::collections::BTreeSet<&str>)> = BTreeMap::new();
    for o in outcomes {
        for h in o.hosts.iter().filter(|h| h.outcome == OutcomeKind::Inconclusive) {
            if let Some(why) = h.reason.as_deref().and_then(|r| r.strip_prefix(&prefix)) {
                unread.entry(h.host.as_str()).or_insert((why, Default::default())).1.insert(o.rule_id.as_str());
            }
        }
    }
    for o in outcomes.iter().filter(|o| o.hosts.is_empty() && o.outcome == OutcomeKind::Inconclusive) {
        let Some((_, left_out)) = o.reason.as_deref().and_then(|r| r.split_once("leaves out replicas: ")) else {
            continue;
        };
        let hosts: Option<Vec<&str>> = left_out
            .split("; ")
            .map(|entry| {
                unread.iter().find(|(host, (why, _))| entry == format!("{host} not read: {why}")).map(|(h, _)| *h)
            })
            .collect();
        for host in hosts.unwrap_or_default() {
            if let Some((_, rules)) = unread.get_mut(host) {
                rules.insert(o.rule_id.as_str());
            }
        }
    }
    unread
        .into_iter()
        .map(|(host, (why, rules))| UnreadReplica {
            host: host.to_string(),
            reason: why.to_string(),
            rules: rules.into_iter().map(str::to_string).collect(),
        })
        .collect()
}

/// A replica the cluster audit could not read: why, and the rules that did not judge only
/// because of it (reports say it in one line; each rule's outcome still names it).
#[derive(Debug, Clone, Serialize)]
pub struct UnreadReplica {
    pub host: String,
    pub reason: String,
    pub rules: Vec<String>,
}

/// The rules that did not judge, as a person reads them: those kept from judging only by a
/// replica that could not be read are one line for that replica; the others one line per
/// rule and reason, naming the replicas it holds on.
pub struct NotJudged<'a> {
    /// The unread replicas, those with the same reason and count together, and how many of
    /// `list`'s rules each alone kept from judging.
    pub unread: Vec<(Vec<&'a UnreadReplica>, usize)>,
    /// Every other rule and reason, with the replicas it holds on (none: the target, or the
    /// cluster as a whole).
    pub rest: Vec<(&'a Unjudged, Vec<&'a str>)>,
}

impl Report {
    /// Whether `rule` did not judge (on `host`, or over the cluster) only because a replica
    /// could not be read.
    pub fn unread_alone(&self, rule: &str, host: Option<&str>) -> bool {
        self.unread_replicas.iter().any(|r| host.is_none_or(|h| h == r.host) && r.rules.iter().any(|id| id == rule))
    }

    /// `list` (the report's `unjudged` or `allowed_inconclusive`) as lines.
    pub fn not_judged<'a>(&'a self, list: &'a [Unjudged]) -> NotJudged<'a> {
        let mut unread: Vec<(&UnreadReplica, usize)> = self.unread_replicas.iter().map(|r| (r, 0)).collect();
        let mut rest: Vec<(&Unjudged, Vec<&str>)> = Vec::new();
        for u in list {
            if self.unread_alone(&u.rule_id, u.host.as_deref()) {
                for (r, n) in &mut unread {
                    if u.host.as_deref().is_none_or(|h| h == r.host) && r.rules.contains(&u.rule_id) {
                        *n += 1;
                    }
                }
                continue;
            }
            let alike = |(first, _): &&mut (&Unjudged, Vec<&str>)| {
                first.rule_id == u.rule_id && first.outcome == u.outcome && first.reason == u.reason
            };
            match rest.iter_mut().find(alike) {
                Some((_, hosts)) => hosts.extend(u.host.as_deref()),
                None => rest.push((u, u.host.as_deref().into_iter().collect())),
            }
        }
        unread.retain(|(_, n)| *n > 0);
        let mut grouped: Vec<(Vec<&UnreadReplica>, usize)> = Vec::new();
        for (r, n) in unread {
            match grouped.iter_mut().find(|(g, m)| *m == n && g[0].reason == r.reason) {
                Some((g, _)) => g.push(r),
                None => grouped.push((vec![r], n)),
            }
        }
        NotJudged { unread: grouped, rest }
    }

    /// The unread replicas, those with the same reason and number of rules together.
    pub fn unread_groups(&self) -> Vec<Vec<&UnreadReplica>> {
        let mut grouped: Vec<Vec<&UnreadReplica>> = Vec::new();
        for r in &self.unread_replicas {
            match grouped.iter_mut().find(|g| g[0].reason == r.reason && g[0].rules.len() == r.rules.len()) {
                Some(g) => g.push(r),
                None => grouped.push(vec![r]),
            }
        }
        grouped
    }
}

/// `replica A`, `replicas A, B`, `replicas A, B, C and 3 more`: a fleet's names bounded (the
/// JSON report names each).
pub fn replicas_named(hosts: &[&str]) -> String {
    const SHOWN: usize = 3;
    match hosts {
        [one] => format!("replica {one}"),
        few if few.len() <= SHOWN + 1 => format!("replicas {}", few.join(", ")),
        many => format!("replicas {} and {} more", many[..SHOWN].join(", "), many.len() - SHOWN),
    }
}

/// The replicas of a cluster finding that say the same (the same message and evidence, and
/// with `by_version` the same version), each group in the order its first replica comes: a
/// report shows what every replica says once, and per replica only what differs.
pub fn alike_hosts(hosts: &[HostEvidence], by_version: bool) -> Vec<Vec<&HostEvidence>> {
    let mut groups: Vec<Vec<&HostEvidence>> = Vec::new();
    for h in hosts {
        let alike = |g: &&mut Vec<&HostEvidence>| {
            let first = g[0];
            first.message == h.message && first.evidence == h.evidence && (!by_version || first.version == h.version)
        };
        match groups.iter_mut().find(alike) {
            Some(group) => group.push(h),
            None => groups.push(vec![h]),
        }
    }
    groups
}

/// The version every replica runs, when they all run the same one and there are several.
pub fn one_version(hosts: &[HostEvidence]) -> Option<&str> {
    let first = hosts.first()?.version.as_deref()?;
    (hosts.len() > 1 && hosts.iter().all(|h| h.version.as_deref() == Some(first))).then_some(first)
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

fn mask_evidence(evidence: &mut serde_json::Map<String, serde_json::Value>) {
    for (key, value) in evidence.iter_mut() {
        if mask::is_secret_name(key) && !matches!(value, serde_json::Value::Null | serde_json::Value::Bool(_)) {
            *value = serde_json::Value::String(mask::MASK.into());
        } else {
            mask_value(value);
        }
    }
}

fn mask_value(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::String(s) => mask::show(s),
        serde_json::Value::Array(items) => items.iter_mut().for_each(mask_value),
        serde_json::Value::Object(map) => mask_evidence(map),
        _ => {}
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::HostOutcome;

    fn host(host: &str, outcome: OutcomeKind, reason: &str) -> HostOutcome {
        HostOutcome { host: host.into(), outcome, reason: Some(reason.into()) }
    }

    fn outcome(rule: &str, outcome: OutcomeKind, reason: Option<&str>, hosts: Vec<HostOutcome>) -> Outcome {
        Outcome { rule_id: rule.into(), outcome, reason: reason.map(str::to_string), hosts }
    }

    fn report(outcomes: Vec<Outcome>) -> Report {
        Report::of(Run {
            target: "cluster c".into(),
            evaluation: Evaluation { outcomes, findings: Vec::new() },
            policy: Policy { fail_on: Some(Severity::High), allow_inconclusive: false },
            errors: Vec::new(),
            failure: None,
            warnings: Vec::new(),
            rules: Vec::new(),
            artifact_base: String::new(),
        })
    }

    /// A replica that could not be read is one line for the rules it alone kept from judging,
    /// its reason matched before it is bounded for the reports (a long network error); a rule
    /// that did not judge for another reason keeps its line.
    #[test]
    fn an_unread_replica_is_one_line_and_other_reasons_keep_theirs() {
        let why = format!("cannot reach b:8123: network error: {}", "tcp connect error ".repeat(20));
        let not_read = format!("{REPLICA_NOT_READ}: {why}", REPLICA_NOT_READ = crate::eval::REPLICA_NOT_READ);
        let partial = format!("fact `cluster.versions` is partial: leaves out replicas: b:8123 not read: {why}");
        let mixed = format!(
            "fact `cluster.tables` is partial: leaves out replicas: live.tables not read on a:8123: denied; b:8123 not read: {why}"
        );
        let report = report(vec![
            outcome(
                "disk-space-low",
                OutcomeKind::Inconclusive,
                None,
                vec![host("a:8123", OutcomeKind::Passed, ""), host("b:8123", OutcomeKind::Inconclusive, &not_read)],
            ),
            outcome(
                "detached-parts",
                OutcomeKind::Inconclusive,
                None,
                vec![
                    host("a:8123", OutcomeKind::Inconclusive, "fact `live.detached_parts` could not be read: denied"),
                    host("b:8123", OutcomeKind::Inconclusive, &not_read),
                ],
            ),
            outcome("cluster-version-divergence", OutcomeKind::Inconclusive, Some(&partial), Vec::new()),
            outcome("cluster-table-divergence", OutcomeKind::Inconclusive, Some(&mixed), Vec::new()),
        ]);
        assert!(why.len() > crate::mask::EXCERPT_CHARS, "the reason is one the reports bound");
        assert_eq!(report.unread_replicas.len(), 1, "{:?}", report.unread_replicas);
        let unread = &report.unread_replicas[0];
        assert_eq!(unread.host, "b:8123");
        assert_eq!(unread.rules, ["cluster-version-divergence", "detached-parts", "disk-space-low"]);
        let lines = report.not_judged(&report.unjudged);
        assert_eq!(lines.unread.len(), 1);
        assert_eq!(lines.unread[0].1, 3);
        let rest: Vec<(&str, Vec<&str>)> =
            lines.rest.iter().map(|(u, hosts)| (u.rule_id.as_str(), hosts.clone())).collect();
        assert_eq!(rest, [("detached-parts", vec!["a:8123"]), ("cluster-table-divergence", vec![])]);
        // the JSON report keeps every outcome on every replica
        assert_eq!(report.unjudged.len(), 5);
        let text = text::render(&report, None, &text::TextOptions { color: false, width: 100, per_rule: None });
        let said: Vec<&str> = text.lines().filter(|l| l.contains("b:8123")).collect();
        assert_eq!(said.len(), 2, "{text}");
        assert!(said[0].starts_with("inconclusive cluster-table-divergence: "), "{text}");
        assert!(said[1].starts_with("inconclusive: replica b:8123 could not be read: cannot reach"), "{text}");
        assert!(said[1].ends_with("(3 rule(s) not judged on it)"), "{text}");
        assert!(text.contains("inconclusive detached-parts: a:8123: fact `live.detached_parts`"), "{text}");
    }

    #[test]
    fn replicas_that_say_the_same_are_one_group() {
        let evidence = |n: u64| serde_json::json!({"refused": n}).as_object().unwrap().clone();
        let host = |name: &str, n: u64| HostEvidence {
            host: name.into(),
            version: Some("26.9.2.1".into()),
            message: None,
            evidence: evidence(n),
        };
        let hosts = [host("a", 10), host("b", 7), host("c", 10)];
        let groups: Vec<Vec<&str>> =
            alike_hosts(&hosts, true).iter().map(|g| g.iter().map(|h| h.host.as_str()).collect()).collect();
        assert_eq!(groups, [vec!["a", "c"], vec!["b"]]);
        assert_eq!(one_version(&hosts), Some("26.9.2.1"));
        assert_eq!(one_version(&hosts[..1]), None, "one replica names its version beside it");
    }
}
