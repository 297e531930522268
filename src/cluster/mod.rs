//! The cluster audit: every replica audited with the same rules, one finding per problem
//! listing the replicas where it holds, plus the divergence rules over the `cluster`
//! document. An unreachable replica makes its rules inconclusive for it.

pub mod document;

use std::collections::{BTreeMap, BTreeSet};

use crate::collect::cluster::Collected;
use crate::eval::{self, Evaluation, Finding, HostEvidence, HostOutcome, Outcome, OutcomeKind, Selection};
use crate::facts::{Facts, Source};
use crate::rules::RulePack;
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
    let versions: BTreeSet<Option<Version>> = collected
        .nodes
        .iter()
        .filter_map(|n| n.live.as_ref())
        .map(|live| crate::facts::live_version(live).or(base.version))
        .collect();
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
    // each replica's audit is independent of the others'
    let evaluations = crate::parallel::on_every_core(&collected.nodes, |node| {
        let live = node.live.as_ref()?;
        let mut facts = bases.get(&crate::facts::live_version(live).or(base.version))?.clone();
        facts.add_live(live.clone());
        if let Some(log) = &node.log {
            facts.add_log(log.clone());
        }
        Some(eval::evaluate(pack, &facts, selection))
    });
    for (node, evaluation) in collected.nodes.iter().zip(evaluations) {
        let (Some(live), Some(evaluation)) = (&node.live, evaluation) else {
            for rule in pack.rules.iter().filter(|r| selection.includes(r) && !r.sources.contains(&Source::Cluster)) {
                let needs_server = rule.sources.iter().any(|s| matches!(s, Source::Live | Source::Log));
                let (outcome, reason) = if needs_server {
                    (
                        OutcomeKind::Inconclusive,
                        format!("replica not read: {}", node.error.as_deref().unwrap_or("no answer")),
                    )
                } else {
                    (OutcomeKind::NotApplicable, "replica not read".to_string())
                };
                per_rule.entry(rule.id.clone()).or_default().push(HostOutcome {
                    host: node.name.clone(),
                    outcome,
                    reason: Some(reason),
                });
            }
            continue;
        };
        for o in evaluation.outcomes.into_iter().filter(|o| !is_cluster_rule(pack, &o.rule_id)) {
            per_rule.entry(o.rule_id).or_default().push(HostOutcome {
                host: node.name.clone(),
                outcome: o.outcome,
                reason: o.reason,
            });
        }
        let endpoint = live["endpoint"].as_str().unwrap_or_default();
        let version = live["version"].as_str().map(str::to_string);
        for mut f in evaluation.findings {
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
