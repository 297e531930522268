//! Each rule evaluated once per distinct input over a cluster's replicas. A rule's result
//! depends only on the fields its expressions read (derived when the pack loads), the
//! version, and what the collection could not read: replicas alike in those share it. A
//! fleet's replicas mostly run one config, so their settings are judged once and their
//! metrics once per replica.

use rustc_hash::FxHasher;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{Hash, Hasher};

use serde_json::{Map, Value};

use crate::collect::cluster::NodeFacts;
use crate::collect::interned::{Document, hash_json};
use crate::eval::{Finding, Outcome, RuleResult, Selection, Variables, evaluate_rule_with};
use crate::facts::{Facts, Source, keys};
use crate::rules::Rule;
use crate::rules::check::WHOLE;
use crate::version::Version;

/// Fields that decide whether a rule runs at all (its facts unread, absent or partial):
/// part of every rule's input.
const COLLECTION: &[&str] = &[keys::live::UNAVAILABLE.name(), keys::live::ABSENT.name(), keys::cluster::PARTIAL.name()];

/// The endpoint a derived fact's reason names: kept for every evaluation, but not part of
/// a rule's input unless it reads it (a reason judged on one replica is retold of another).
const ENDPOINT: &str = keys::live::ENDPOINT.name();

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
            Some(Replica::new(live.version().or(stated), live, n.log.as_ref()))
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
    node.live.as_ref().map_or("", |live| crate::facts::keys::live::ENDPOINT.text(live))
}

/// One replica's server documents with a hash of each top-level field, computed once.
struct Replica<'a> {
    version: Option<Version>,
    sources: [(Source, bool); 2],
    hashes: HashMap<(Source, &'a str), u64>,
    whole: HashMap<Source, u64>,
}

impl<'a> Replica<'a> {
    fn new(version: Option<Version>, live: &'a Document, log: Option<&'a Value>) -> Replica<'a> {
        let log_fields = log.and_then(Value::as_object).into_iter().flatten().map(|(name, value)| {
            let mut h = FxHasher::default();
            hash_json(value, &mut h);
            (Source::Log, name.as_str(), h.finish())
        });
        let fields = live.fields().map(|(name, hash, _)| (Source::Live, name, hash)).chain(log_fields);
        let mut hashes = HashMap::new();
        let mut whole: HashMap<Source, FxHasher> = HashMap::new();
        for (source, name, hash) in fields {
            (name, hash).hash(whole.entry(source).or_default());
            hashes.insert((source, name), hash);
        }
        let whole = whole.into_iter().map(|(source, h)| (source, h.finish())).collect();
        Replica { version, sources: [(Source::Live, true), (Source::Log, log.is_some())], hashes, whole }
    }

    /// What `rule`'s result on this replica depends on (the config files are the same for
    /// the replicas of a version), as one number.
    fn input_of(&self, rule: &Rule) -> u64 {
        let mut h = FxHasher::default();
        self.version.hash(&mut h);
        for (source, present) in self.sources {
            present.hash(&mut h);
            if !present {
                continue;
            }
            if rule.reads().fields.contains(&(source, WHOLE.to_string())) {
                self.whole.get(&source).hash(&mut h);
                continue;
            }
            let read = rule.reads_of(source);
            for field in COLLECTION.iter().copied().chain(read) {
                (field, self.hashes.get(&(source, field))).hash(&mut h);
            }
        }
        h.finish()
    }
}

/// The facts `rules` read: of each source document only the fields they read, and those
/// that decide whether a rule runs, so a replica's evaluation converts and copies no more.
fn facts_for(rules: &[&Rule], base: &Facts, live: &Document, log: Option<&Value>) -> Facts {
    let mut facts = Facts::empty(base.target.clone());
    facts.version = live.version().or(base.version);
    facts.sources = base.sources.clone();
    facts.config_kind = base.config_kind;
    facts.typed = base.typed.clone();
    let documents = base.document.iter().filter_map(|(name, doc)| Some((Source::parse(name)?, doc)));
    for (source, document) in documents.chain(log.map(|l| (Source::Log, l))) {
        facts.sources.insert(source);
        let kept = match document.as_object() {
            Some(fields) => read_by(rules, source, |name| fields.get(name), || document.clone()),
            None => document.clone(),
        };
        facts.document.insert(source.name().into(), kept);
    }
    facts.sources.insert(Source::Live);
    facts
        .document
        .insert(Source::Live.name().into(), read_by(rules, Source::Live, |name| live.get(name), || live.to_value()));
    facts
}

/// Of a document (its fields by name, or whole), what `rules` read of `source`.
fn read_by<'d>(
    rules: &[&Rule],
    source: Source,
    field: impl Fn(&str) -> Option<&'d Value>,
    whole: impl FnOnce() -> Value,
) -> Value {
    let reads: BTreeSet<&str> = rules.iter().flat_map(|r| r.reads_of(source)).collect();
    if reads.contains(WHOLE) {
        return whole();
    }
    let kept: Map<String, Value> = COLLECTION
        .iter()
        .copied()
        .chain([ENDPOINT])
        .chain(reads)
        .filter_map(|name| Some((name.to_string(), field(name)?.clone())))
        .collect();
    Value::Object(kept)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn document(value: Value) -> Document {
        crate::collect::interned::Interner::default().document(value)
    }

    fn rule_reading(reads: &[(Source, &str)]) -> Rule {
        let rule = crate::rules::RulePack::load(true, &[]).map_err(|_| "built-in rules").unwrap().rules[0].clone();
        rule.reading(reads.iter().map(|(s, f)| (*s, f.to_string())).collect())
    }

    #[test]
    fn replicas_share_a_rule_only_when_what_it_reads_is_equal() {
        let a = document(json!({"endpoint": "a", "settings": {"x": 1}, "metrics": {"Query": 1}}));
        let b = document(json!({"endpoint": "a", "settings": {"x": 1}, "metrics": {"Query": 7}}));
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
        let a = document(json!({"settings": {"x": 1}}));
        let b = document(json!({"settings": {"x": 1}, "unavailable": {"metrics": "denied"}}));
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
        let value = json!({"endpoint": "e", "settings": {"x": 1}, "metrics": {}, "unavailable": {"grants": "denied"}});
        let live = document(value.clone());
        let settings = rule_reading(&[(Source::Live, "settings")]);
        let facts = facts_for(&[&settings], &Facts::empty("t".into()), &live, None);
        assert_eq!(
            facts.document["live"],
            json!({"endpoint": "e", "settings": {"x": 1}, "unavailable": {"grants": "denied"}})
        );
        let whole = rule_reading(&[(Source::Live, WHOLE)]);
        assert_eq!(facts_for(&[&whole], &Facts::empty("t".into()), &live, None).document["live"], value);
    }
}
