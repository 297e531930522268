//! The replicas of a cluster audit as reports name them: those that could not be read, each
//! with the rules it alone kept from judging; the replicas of a finding that say the same.

use super::*;

/// The replicas a cluster audit could not read (raw names and reasons), each with why and the
/// rules it alone kept from judging: its own (inconclusive there for want of the replica),
/// and the comparisons over the cluster that leave out only unread replicas.
pub(super) fn unread_replicas(outcomes: &[Outcome]) -> Vec<UnreadReplica> {
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
        let evidence = |n: u64| [("refused".to_string(), serde_json::json!(n))].into_iter().collect();
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
