//! The cluster audit: every replica audited with the same rules, one finding per problem
//! listing the replicas where it holds, plus the divergence rules over the `cluster`
//! document. An unreachable replica makes its rules inconclusive for it.

mod data;
pub mod document;
mod shared;

use std::collections::{BTreeMap, BTreeSet};

use crate::collect::cluster::Collected;
use crate::eval::{self, Evaluation, Finding, HostEvidence, HostOutcome, Outcome, OutcomeKind, Selection};
use crate::facts::{Facts, Source};
use crate::rules::{Rule, RulePack};
use crate::version::Version;

/// The config files' facts as a replica of a version reads them (its catalog says which
/// settings exist), or None without config files.
pub type ConfigFacts<'a> = &'a dyn Fn(Option<Version>) -> Option<Facts>;

/// Audits each reachable node (its `live` and `log` over the shared `base` facts, and the
/// config files' facts built for the version it runs) and the cluster as a whole. Each
/// replica's rules read its own version's catalog and gates: in a rolling upgrade a
/// setting obsolete on the new version is reported on the replicas running it.
pub fn audit(
    pack: &RulePack,
    base: &Facts,
    config: ConfigFacts,
    cluster: Option<&str>,
    collected: &Collected,
    selection: &Selection,
) -> Evaluation {
    let mut per_rule: BTreeMap<String, Vec<HostOutcome>> = BTreeMap::new();
    let mut findings: Vec<Finding> = Vec::new();
    // the config facts once per version the replicas run (usually one)
    let versions: BTreeSet<Option<Version>> =
        collected.nodes.iter().filter_map(|n| n.live.as_ref()).map(|live| live.version().or(base.version)).collect();
    let bases: BTreeMap<Option<Version>, Facts> = versions
        .into_iter()
        .map(|version| {
            let mut facts = base.clone();
            if let Some(mut files) = config(version) {
                files.merge(facts);
                facts = files;
            }
            (version, facts)
        })
        .collect();
    let rules: Vec<&Rule> =
        pack.rules.iter().filter(|r| selection.includes(r) && !r.sources.contains(&Source::Cluster)).collect();
    let results = shared::evaluate(&rules, &bases, base.version, &collected.nodes, selection);
    for (node, results) in collected.nodes.iter().zip(results) {
        let (Some(live), Some(results)) = (&node.live, results) else {
            for rule in &rules {
                let needs_server = rule.sources.iter().any(|s| matches!(s, Source::Live | Source::Log));
                let (outcome, reason) = if needs_server {
                    (
                        OutcomeKind::Inconclusive,
                        format!("{}: {}", eval::REPLICA_NOT_READ, node.error.as_deref().unwrap_or("no answer")),
                    )
                } else {
                    (OutcomeKind::NotApplicable, eval::REPLICA_NOT_READ.to_string())
                };
                per_rule.entry(rule.id.clone()).or_default().push(HostOutcome {
                    host: node.name.clone(),
                    outcome,
                    reason: Some(reason),
                });
            }
            continue;
        };
        let endpoint = shared::endpoint(node);
        let mut found = Vec::new();
        for (outcome, mut findings) in results {
            per_rule.entry(outcome.rule_id).or_default().push(HostOutcome {
                host: node.name.clone(),
                outcome: outcome.outcome,
                reason: outcome.reason,
            });
            found.append(&mut findings);
        }
        let version = Some(crate::facts::keys::live::VERSION.text(live)).filter(|v| !v.is_empty()).map(str::to_string);
        for mut f in eval::one_per_problem(found, &pack.live_twins) {
            // the replica is named in `hosts`: the message reads the same on every replica
            if !endpoint.is_empty() && f.message.contains(endpoint) {
                f.message = f.message.replace(endpoint, "the replica");
            }
            f.hosts = vec![HostEvidence {
                host: node.name.clone(),
                version: version.clone(),
                message: None,
                evidence: f.evidence.clone(),
            }];
            merge_into(&mut findings, f);
        }
    }
    let mut whole = Facts::empty(base.target.clone());
    whole.add_cluster(document::document(cluster, collected));
    // the other rules are not applicable to the cluster document alone: their outcomes are the replicas'
    let cluster_evaluation = eval::evaluate(pack, &whole, selection);
    let mut outcomes: Vec<Outcome> = per_rule.into_iter().map(|(rule_id, hosts)| combined(rule_id, hosts)).collect();
    outcomes.extend(cluster_evaluation.outcomes.into_iter().filter(|o| is_cluster_rule(pack, &o.rule_id)));
    outcomes.sort_by(|a, b| a.rule_id.cmp(&b.rule_id));
    findings.extend(cluster_evaluation.findings);
    eval::finding::rank(&mut findings);
    Evaluation { outcomes, findings }
}

fn is_cluster_rule(pack: &RulePack, id: &str) -> bool {
    pack.rules.iter().any(|r| r.id == id && r.sources.contains(&Source::Cluster))
}

/// The same problem (one fingerprint: rule, object, file) on several replicas is one
/// finding; a replica whose message says otherwise (its own numbers) keeps it beside its host.
fn merge_into(findings: &mut Vec<Finding>, mut f: Finding) {
    match findings.iter_mut().find(|g| g.fingerprint == f.fingerprint) {
        Some(existing) => {
            if f.message != existing.message {
                for host in &mut f.hosts {
                    host.message = Some(f.message.clone());
                }
            }
            existing.hosts.extend(f.hosts);
        }
        None => findings.push(f),
    }
}

/// A rule's outcome over the replicas: fired anywhere, else inconclusive or errored
/// anywhere (never a "passed" that a replica could not confirm), else passed, else not
/// applicable.
fn combined(rule_id: String, hosts: Vec<HostOutcome>) -> Outcome {
    let order = [
        OutcomeKind::Fired,
        OutcomeKind::Errored,
        OutcomeKind::Inconclusive,
        OutcomeKind::Passed,
        OutcomeKind::NotApplicable,
    ];
    let outcome =
        order.into_iter().find(|k| hosts.iter().any(|h| h.outcome == *k)).unwrap_or(OutcomeKind::NotApplicable);
    let reason = hosts
        .iter()
        .filter(|h| h.outcome == outcome && h.reason.is_some())
        .map(|h| format!("{}: {}", h.host, h.reason.as_deref().unwrap_or_default()))
        .next();
    Outcome { rule_id, outcome, reason, hosts }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde_json::json;

    use super::*;

    /// Replicas of the recorded cluster snapshots, each also as a twin under another name
    /// and endpoint, one twin with other metrics.
    fn replicas() -> Collected {
        let mut nodes = Vec::new();
        for file in ["cluster-rolling-upgrade.json", "cluster-one-unread.json"] {
            let path = format!("{}/tests/cmd/fixtures/snapshots/{file}", env!("CARGO_MANIFEST_DIR"));
            let facts = Facts::read_snapshot(std::path::Path::new(&path)).expect("a recorded snapshot");
            let recorded = Collected::from_json(facts.document["nodes"].clone()).expect("recorded nodes");
            for (i, node) in recorded.nodes.into_iter().enumerate() {
                let mut twin = node.clone();
                twin.name = format!("twin-{i}-{}", node.name);
                if let Some(live) = &node.live {
                    let mut live = live.to_value();
                    live["endpoint"] = json!(format!("default@http://twin-{i}:8123"));
                    if i == 0 {
                        live["metrics"] = json!({"Query": 4000, "TCPConnection": 1});
                    }
                    twin.live = Some(crate::collect::interned::Interner::default().document(live));
                }
                nodes.push(node);
                nodes.push(twin);
            }
        }
        Collected { path: crate::collect::cluster::Path::Direct, nodes, round_trips: 0 }
    }

    /// (host, rule, outcome) and (host, finding).
    type Results = (BTreeSet<(String, String, String)>, BTreeSet<(String, String)>);

    /// Each replica audited whole and alone.
    fn alone(pack: &RulePack, collected: &Collected) -> Results {
        let (mut outcomes, mut findings) = (BTreeSet::new(), BTreeSet::new());
        for node in &collected.nodes {
            let Some(live) = &node.live else { continue };
            let mut facts = Facts::empty("t".into());
            facts.add_live(live.to_value());
            if let Some(log) = &node.log {
                facts.add_log(log.clone());
            }
            let evaluation = eval::evaluate(pack, &facts, &Selection::default());
            for o in evaluation.outcomes.iter().filter(|o| !is_cluster_rule(pack, &o.rule_id)) {
                outcomes.insert((node.name.clone(), o.rule_id.clone(), format!("{:?}", o.outcome)));
            }
            for f in evaluation.findings {
                let endpoint = shared::endpoint(node);
                findings.insert((
                    node.name.clone(),
                    format!("{} {}", f.fingerprint, f.message.replace(endpoint, "the replica")),
                ));
            }
        }
        (outcomes, findings)
    }

    #[test]
    fn replicas_alike_share_results_as_if_each_were_audited_alone() {
        let pack = RulePack::load(true, &[]).map_err(|_| "built-in rules").unwrap();
        let collected = replicas();
        let evaluation = audit(&pack, &Facts::empty("t".into()), &|_| None, None, &collected, &Selection::default());
        let outcomes: BTreeSet<(String, String, String)> = evaluation
            .outcomes
            .iter()
            .flat_map(|o| o.hosts.iter().map(|h| (h.host.clone(), o.rule_id.clone(), format!("{:?}", h.outcome))))
            .filter(|(host, _, _)| collected.nodes.iter().any(|n| n.name == *host && n.live.is_some()))
            .collect();
        let findings: BTreeSet<(String, String)> = evaluation
            .findings
            .iter()
            .flat_map(|f| {
                f.hosts.iter().map(|h| {
                    let message = h.message.as_deref().unwrap_or(&f.message);
                    (h.host.clone(), format!("{} {message}", f.fingerprint))
                })
            })
            .collect();
        let (expected_outcomes, expected_findings) = alone(&pack, &collected);
        assert_eq!(outcomes, expected_outcomes);
        assert_eq!(findings, expected_findings);
        assert!(findings.iter().any(|(host, _)| host.starts_with("twin-")), "the twins have findings of their own");
    }
}
