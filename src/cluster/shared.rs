//! Each rule evaluated once per distinct input over a cluster's replicas. A rule's result
//! depends only on the fields its expressions read (derived when the pack loads), the
//! version, and what the collection could not read: replicas alike in those share it. A
//! fleet's replicas mostly run one config, so their settings are judged once and their
//! metrics once per replica.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{Hash, Hasher};

use serde_json::{Map, Value};

use crate::collect::cluster::NodeFacts;
use crate::eval::{Finding, Outcome, RuleResult, Selection, Variables, evaluate_rule_with};
use crate::facts::{Facts, Source};
use crate::rules::Rule;
use crate::rules::check::WHOLE;
use crate::version::Version;

/// Fields that decide whether a rule runs at all (its facts unread, absent or partial):
/// part of every rule's input.
const COLLECTION: &[&str] = &["unavailable", "absent", "partial"];

/// The endpoint a derived fact's reason names: kept for every evaluation, but not part of
/// a rule's input unless it reads it (a reason judged on one replica is retold of another).
const ENDPOINT: &str = "endpoint";

/// Each reachable replica's results, one per rule in `rules`' order (None for a replica not
/// read): each rule is evaluated on the first replica of each distinct input, and its
/// result told of the others alike (a reason or message naming that replica's endpoint
/// names theirs).
pub fn evaluate(
    rules: &[&Rule],
    bases: &BTreeMap<Option<Version>, Facts>,
    stated: Option<Version>,
    nodes: &[NodeFacts],
    selection: &Selection,
) -> Vec<Option<Vec<RuleResult>>> {
    let replicas: Vec<Option<Replica>> = nodes
        .iter()
        .map(|n| {
            let live = n.live.as_ref()?;
            Some(Replica::new(crate::facts::live_version(live).or(stated), live, n.log.as_ref()))
        })
        .collect();
    let inputs: Vec<Option<Vec<u64>>> =
        replicas.iter().map(|r| r.as_ref().map(|r| rules.iter().map(|rule| r.input_of(rule)).collect())).collect();
    // the rules each replica is the first to have the input of
    let mut first: HashMap<(usize, u64), usize> = HashMap::new();
    let mut work: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for (n, inputs) in inputs.iter().enumerate() {
        for (r, input) in inputs.iter().flatten().enumerate() {
            first.entry((r, *input)).or_insert_with(|| {
                work[n].push(r);
                n
            });
        }
    }
    let indexes: Vec<usize> = (0..nodes.len()).collect();
    let evaluated = crate::parallel::on_every_core(&indexes, |&n| {
        let (Some(live), Some(replica)) = (&nodes[n].live, &replicas[n]) else { return Vec::new() };
        let Some(base) = bases.get(&replica.version).filter(|_| !work[n].is_empty()) else { return Vec::new() };
        let mine: Vec<&Rule> = work[n].iter().map(|&r| rules[r]).collect();
        let facts = facts_for(&mine, base, live, nodes[n].log.as_ref());
        let variables = Variables::of(&facts);
        mine.iter().map(|rule| evaluate_rule_with(rule, &facts, &variables, selection.overrides(rule))).collect()
    });
    let mut judged: HashMap<(usize, u64), (&str, &RuleResult)> = HashMap::new();
    for (n, evaluated) in evaluated.iter().enumerate() {
        let Some(Some(inputs)) = inputs.get(n) else { continue };
        for (&r, result) in work[n].iter().zip(evaluated) {
            judged.insert((r, inputs[r]), (endpoint(&nodes[n]), result));
        }
    }
    nodes
        .iter()
        .zip(&inputs)
        .map(|(node, inputs)| {
            let endpoint = endpoint(node);
            let retold = |text: &str, on: &str| {
                if on.is_empty() || on == endpoint { text.to_string() } else { text.replace(on, endpoint) }
            };
            let results = inputs.as_ref()?.iter().enumerate().filter_map(|(r, input)| {
                let (on, (outcome, findings)) = judged.get(&(r, *input))?;
                let reason = outcome.reason.as_deref().map(|why| retold(why, on));
                let findings =
                    findings.iter().map(|f| Finding { message: retold(&f.message, on), ..f.clone() }).collect();
                Some((Outcome { reason, ..outcome.clone() }, findings))
            });
            Some(results.collect())
        })
        .collect()
}

/// Where a replica's facts came from (`user@http://host:port`), as its findings name it.
pub fn endpoint(node: &NodeFacts) -> &str {
    node.live.as_ref().and_then(|live| live["endpoint"].as_str()).unwrap_or_default()
}

/// One replica's server documents with a hash of each top-level field, computed once.
struct Replica<'a> {
    version: Option<Version>,
    documents: [(Source, Option<&'a Value>); 2],
    hashes: HashMap<(Source, &'a str), u64>,
    whole: HashMap<Source, u64>,
}

impl<'a> Replica<'a> {
    fn new(version: Option<Version>, live: &'a Value, log: Option<&'a Value>) -> Replica<'a> {
        let documents = [(Source::Live, Some(live)), (Source::Log, log)];
        let mut hashes = HashMap::new();
        let mut whole = HashMap::new();
        for (source, document) in documents {
            let Some(fields) = document.and_then(Value::as_object) else { continue };
            let mut all = DefaultHasher::new();
            for (name, value) in fields {
                let mut h = DefaultHasher::new();
                hash_json(value, &mut h);
                let hash = h.finish();
                (name, hash).hash(&mut all);
                hashes.insert((source, name.as_str()), hash);
            }
            whole.insert(source, all.finish());
        }
        Replica { version, documents, hashes, whole }
    }

    /// What `rule`'s result on this replica depends on (the config files are the same for
    /// the replicas of a version), as one number.
    fn input_of(&self, rule: &Rule) -> u64 {
        let mut h = DefaultHasher::new();
        self.version.hash(&mut h);
        for (source, document) in self.documents {
            document.is_some().hash(&mut h);
            if document.is_none() {
                continue;
            }
            if rule.reads.contains(&(source, WHOLE.to_string())) {
                self.whole.get(&source).hash(&mut h);
                continue;
            }
            let read = rule.reads.iter().filter(|(s, _)| *s == source).map(|(_, f)| f.as_str());
            for field in COLLECTION.iter().copied().chain(read) {
                (field, self.hashes.get(&(source, field))).hash(&mut h);
            }
        }
        h.finish()
    }
}

/// The facts `rules` read: of each source document only the fields they read, and those
/// that decide whether a rule runs, so a replica's evaluation converts and copies no more.
fn facts_for(rules: &[&Rule], base: &Facts, live: &Value, log: Option<&Value>) -> Facts {
    let mut facts = Facts::empty(base.target.clone());
    facts.version = crate::facts::live_version(live).or(base.version);
    facts.sources = base.sources.clone();
    facts.sources.insert(Source::Live);
    let documents = base.document.iter().filter_map(|(name, doc)| Some((Source::parse(name)?, doc)));
    for (source, document) in documents.chain([(Source::Live, live)]).chain(log.map(|l| (Source::Log, l))) {
        facts.sources.insert(source);
        facts.document.insert(source.name().into(), read_by(rules, source, document));
    }
    facts
}

fn read_by(rules: &[&Rule], source: Source, document: &Value) -> Value {
    let reads: BTreeSet<&str> =
        rules.iter().flat_map(|r| r.reads.iter().filter(|(s, _)| *s == source).map(|(_, f)| f.as_str())).collect();
    let Some(fields) = document.as_object() else { return document.clone() };
    if reads.contains(WHOLE) {
        return document.clone();
    }
    let kept: Map<String, Value> = COLLECTION
        .iter()
        .copied()
        .chain([ENDPOINT])
        .chain(reads)
        .filter_map(|name| Some((name.to_string(), fields.get(name)?.clone())))
        .collect();
    Value::Object(kept)
}

/// A structural hash: equal values hash alike (an object's fields in their order).
fn hash_json(value: &Value, h: &mut impl Hasher) {
    match value {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => (1u8, b).hash(h),
        Value::Number(n) => (2u8, n).hash(h),
        Value::String(s) => (3u8, s).hash(h),
        Value::Array(items) => {
            (4u8, items.len()).hash(h);
            for item in items {
                hash_json(item, h);
            }
        }
        Value::Object(fields) => {
            (5u8, fields.len()).hash(h);
            for (name, value) in fields {
                name.hash(h);
                hash_json(value, h);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rule_reading(reads: &[(Source, &str)]) -> Rule {
        let mut rule = crate::rules::RulePack::load(true, &[]).map_err(|_| "built-in rules").unwrap().rules[0].clone();
        rule.reads = reads.iter().map(|(s, f)| (*s, f.to_string())).collect();
        rule
    }

    #[test]
    fn replicas_share_a_rule_only_when_what_it_reads_is_equal() {
        let a = json!({"endpoint": "a", "settings": {"x": 1}, "metrics": {"Query": 1}});
        let b = json!({"endpoint": "a", "settings": {"x": 1}, "metrics": {"Query": 7}});
        let (a, b) = (Replica::new(None, &a, None), Replica::new(None, &b, None));
        let settings = rule_reading(&[(Source::Live, "settings")]);
        let metrics = rule_reading(&[(Source::Live, "metrics")]);
        let whole = rule_reading(&[(Source::Live, WHOLE)]);
        assert_eq!(a.input_of(&settings), b.input_of(&settings));
        assert_ne!(a.input_of(&metrics), b.input_of(&metrics));
        assert_ne!(a.input_of(&whole), b.input_of(&whole));
    }

    #[test]
    fn what_could_not_be_read_and_the_log_are_part_of_every_input() {
        let a = json!({"settings": {"x": 1}});
        let b = json!({"settings": {"x": 1}, "unavailable": {"metrics": "denied"}});
        let log = json!({});
        let settings = rule_reading(&[(Source::Live, "settings")]);
        assert_ne!(Replica::new(None, &a, None).input_of(&settings), Replica::new(None, &b, None).input_of(&settings));
        assert_ne!(
            Replica::new(None, &a, None).input_of(&settings),
            Replica::new(None, &a, Some(&log)).input_of(&settings)
        );
    }

    #[test]
    fn a_replica_facts_hold_what_its_rules_read() {
        let live = json!({"endpoint": "e", "settings": {"x": 1}, "metrics": {}, "unavailable": {"grants": "denied"}});
        let settings = rule_reading(&[(Source::Live, "settings")]);
        let facts = facts_for(&[&settings], &Facts::empty("t".into()), &live, None);
        assert_eq!(
            facts.document["live"],
            json!({"endpoint": "e", "settings": {"x": 1}, "unavailable": {"grants": "denied"}})
        );
        let whole = rule_reading(&[(Source::Live, WHOLE)]);
        assert_eq!(facts_for(&[&whole], &Facts::empty("t".into()), &live, None).document["live"], live);
    }
}
