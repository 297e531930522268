//! Evaluating the rule pack against the facts: one outcome per rule, findings ranked.

mod evidence;
pub mod finding;
mod restart;
mod same_problem;

use std::collections::{BTreeMap, HashMap};

use cel::Value;
use cel::common::types::{CelList, CelMap, CelNull, CelString, Kind};
use cel::common::value::Val;
use serde_json::Map;

pub use crate::rules::OutcomeKind;
pub use evidence::Evidence;
pub use finding::{Finding, Fragment, HostEvidence, HostOutcome, Outcome, REPLICA_NOT_READ};

use crate::config::Location;
use crate::facts::{Facts, value};
use crate::rules::expr::{self, display};
use crate::rules::{Rule, RulePack, budget};
use crate::suggest::closest;

/// Which rules run: `--select` and `--ignore` terms (ids, tags or categories), and the
/// overrides of their params. Built with [`Selection::new`], which checks every term and
/// param against the pack.
#[derive(Debug, Default, Clone)]
pub struct Selection {
    pub select: Vec<String>,
    pub ignore: Vec<String>,
    /// Param overrides by rule id, each value of the param's declared type.
    pub params: BTreeMap<String, Vec<(String, serde_json::Value)>>,
}

/// A selection or param that names nothing, or a value of the wrong type: the run would
/// check something else than what was asked.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum SelectionError {
    #[error("`--{flag} {term}` matches no rule id, tag or category")]
    #[diagnostic(code(chaudit::select::unknown), help("{}", suggestion.as_deref().unwrap_or("see `chaudit rules list`")))]
    UnknownTerm { flag: &'static str, term: String, suggestion: Option<String> },
    #[error("no rule selected: the selection leaves nothing to check")]
    #[diagnostic(code(chaudit::select::empty), help("check --select, --ignore, --rules and --no-builtin-rules"))]
    NothingSelected,
    #[error("`--param {name}`: no rule has a param `{param}`")]
    #[diagnostic(code(chaudit::param::unknown), help("{}", suggestion.as_deref().unwrap_or("`chaudit rules explain RULE` lists a rule's params")))]
    UnknownParam { name: String, param: String, suggestion: Option<String> },
    #[error("`--param {name}`: rules {} all have a param `{name}`", rules.join(", "))]
    #[diagnostic(code(chaudit::param::ambiguous), help("name one: --param RULE.{name}=VALUE"))]
    AmbiguousParam { name: String, rules: Vec<String> },
    #[error("`--param {name}`: {why} (`{param}` of {rule} is a {kind})")]
    #[diagnostic(code(chaudit::param::invalid))]
    BadParam { name: String, param: String, rule: String, kind: &'static str, why: String },
}

impl Selection {
    /// Checks the terms and params against the pack: a term or param that names nothing,
    /// a param value of the wrong type, or a selection of no rule at all is an error.
    pub fn new(
        pack: &RulePack,
        select: &[String],
        ignore: &[String],
        params: &[(String, String)],
    ) -> Result<Selection, SelectionError> {
        for (flag, terms) in [("select", select), ("ignore", ignore)] {
            for term in terms {
                if !pack.rules.iter().any(|r| r.matches(term)) {
                    let names = pack.rules.iter().flat_map(|r| {
                        std::iter::once(r.id.as_str())
                            .chain(r.tags.iter().map(String::as_str))
                            .chain([r.category.as_str()])
                    });
                    let suggestion = closest(term, names).map(|s| format!("did you mean `{s}`?"));
                    return Err(SelectionError::UnknownTerm { flag, term: term.clone(), suggestion });
                }
            }
        }
        let mut selection = Selection { select: select.to_vec(), ignore: ignore.to_vec(), params: BTreeMap::new() };
        if !pack.rules.iter().any(|r| selection.includes(r)) {
            return Err(SelectionError::NothingSelected);
        }
        for (name, text) in params {
            let (rule, param) = match name.split_once('.') {
                Some((rule, param)) => {
                    let Some(rule) = pack.get(rule) else {
                        let suggestion = closest(rule, pack.rules.iter().map(|r| r.id.as_str()))
                            .map(|s| format!("did you mean `{s}.{param}`?"));
                        return Err(SelectionError::UnknownParam {
                            name: name.clone(),
                            param: param.into(),
                            suggestion,
                        });
                    };
                    (rule, param)
                }
                None => {
                    let having: Vec<&Rule> = pack.rules.iter().filter(|r| r.param(name).is_some()).collect();
                    match having.as_slice() {
                        [rule] => (*rule, name.as_str()),
                        [] => {
                            let all = pack.rules.iter().flat_map(|r| r.params.iter().map(|p| p.name.as_str()));
                            let suggestion = closest(name, all).map(|s| format!("did you mean `{s}`?"));
                            return Err(SelectionError::UnknownParam {
                                name: name.clone(),
                                param: name.clone(),
                                suggestion,
                            });
                        }
                        many => {
                            let rules = many.iter().map(|r| r.id.clone()).collect();
                            return Err(SelectionError::AmbiguousParam { name: name.clone(), rules });
                        }
                    }
                }
            };
            let Some(declared) = rule.param(param) else {
                let suggestion = closest(param, rule.params.iter().map(|p| p.name.as_str()))
                    .map(|s| format!("did you mean `{}.{s}`?", rule.id));
                return Err(SelectionError::UnknownParam { name: name.clone(), param: param.into(), suggestion });
            };
            let value = declared.kind.value(text).map_err(|why| SelectionError::BadParam {
                name: name.clone(),
                param: param.into(),
                rule: rule.id.clone(),
                kind: declared.kind.name(),
                why,
            })?;
            selection.params.entry(rule.id.clone()).or_default().push((param.to_string(), value));
        }
        Ok(selection)
    }

    /// The params of a rule that `--param` overrides.
    pub fn overrides(&self, rule: &Rule) -> &[(String, serde_json::Value)] {
        self.params.get(&rule.id).map_or(&[][..], Vec::as_slice)
    }

    /// Opt-in rules run only when a `--select` term names them.
    pub fn includes(&self, rule: &Rule) -> bool {
        let selected = self.select.iter().any(|t| rule.matches(t));
        let by_default = self.select.is_empty() && !rule.opt_in;
        (selected || by_default) && !self.ignore.iter().any(|t| rule.matches(t))
    }
}

#[derive(Debug, Clone)]
pub struct Evaluation {
    pub outcomes: Vec<Outcome>,
    pub findings: Vec<Finding>,
}

/// One rule's outcome and findings.
pub type RuleResult = (Outcome, Vec<Finding>);

pub fn evaluate(pack: &RulePack, facts: &Facts, selection: &Selection) -> Evaluation {
    evaluate_with(pack, facts, &Variables::of(facts), selection)
}

/// [`evaluate`] with the facts converted by the caller, who may keep them (or, at the end of
/// a run, not free them: the values the rules read of 2,000 users take 3% of that audit to
/// free).
pub fn evaluate_with(pack: &RulePack, facts: &Facts, variables: &Variables, selection: &Selection) -> Evaluation {
    let rules: Vec<&Rule> = pack.rules.iter().filter(|r| selection.includes(r)).collect();
    // rules are independent: they share the converted facts and run on every core
    let results = crate::parallel::on_every_core(&rules, |rule| {
        evaluate_rule_with(rule, facts, variables, selection.overrides(rule))
    });
    assemble(results, &pack.live_twins)
}

/// The evaluation of rules' results: their outcomes by rule, their findings as one finding
/// per problem, ranked.
pub fn assemble(results: Vec<RuleResult>, live_twins: &[(String, String)]) -> Evaluation {
    let (mut outcomes, found): (Vec<Outcome>, Vec<Vec<Finding>>) = results.into_iter().unzip();
    outcomes.sort_by(|a, b| a.rule_id.cmp(&b.rule_id));
    Evaluation { outcomes, findings: one_per_problem(concatenated(found), live_twins) }
}

/// The findings of several rules (or chunks of one rule's items) in one list, in order, each
/// moved once into the largest part's buffer: 100,000 findings of 500 bytes are not held
/// twice, in their part and in a new list, while the list is built.
fn concatenated(mut parts: Vec<Vec<Finding>>) -> Vec<Finding> {
    let Some(largest) = (0..parts.len()).max_by_key(|&i| parts[i].len()) else { return Vec::new() };
    let mut all = std::mem::take(&mut parts[largest]);
    all.reserve_exact(parts.iter().map(Vec::len).sum());
    let before: Vec<Finding> = parts.drain(..largest).flatten().collect();
    all.splice(..0, before);
    // each part is freed once moved
    for mut part in parts.drain(1..) {
        all.append(&mut part);
    }
    all
}

/// Findings as one per problem (a live finding joined to its live twin's config finding
/// about the same object), ranked.
pub fn one_per_problem(findings: Vec<Finding>, live_twins: &[(String, String)]) -> Vec<Finding> {
    let mut findings = same_problem::merge(findings, live_twins);
    finding::rank(&mut findings);
    findings
}

fn outcome(rule: &Rule, outcome: OutcomeKind, reason: Option<String>) -> Outcome {
    Outcome { rule_id: rule.id.clone(), outcome, reason, hosts: Vec::new() }
}

/// The facts as expression variables, converted once: every rule evaluates in an inner
/// scope of this context (converting the facts per rule would copy them per rule).
pub struct Variables<'f>(cel::Context<'f, 'f>);

impl<'f> Variables<'f> {
    pub fn of(facts: &'f Facts) -> Variables<'f> {
        let mut context = expr::context(crate::facts::catalog::of(facts.version));
        context.set_variable_resolver(&budget::WATCH);
        for (name, value) in &facts.document {
            context.add_variable_as_val(name.clone(), value::cel_value(value));
        }
        for (source, typed) in &facts.typed {
            context.add_variable_as_val(source.name(), value::object(typed.as_ref()));
        }
        // every source's document exists, empty when not collected: rules test `has(...)`
        use crate::facts::Source::{Cluster, Config, Host, Live, Log};
        for source in [Config, Live, Log, Host, Cluster] {
            if !facts.document.contains_key(source.name()) && !facts.typed.contains_key(&source) {
                context.add_variable_as_val(source.name(), Box::new(CelMap::from(HashMap::new())));
            }
        }
        context.add_variable_from_value("version", facts.version.map_or(String::new(), |v| v.to_string()));
        Variables(context)
    }
}

/// One rule's outcome and findings, with its default params.
pub fn evaluate_rule(rule: &Rule, facts: &Facts, variables: &Variables) -> RuleResult {
    evaluate_rule_with(rule, facts, variables, &[])
}

/// One rule's outcome and findings, with params overridden.
pub fn evaluate_rule_with(
    rule: &Rule,
    facts: &Facts,
    variables: &Variables,
    overrides: &[(String, serde_json::Value)],
) -> RuleResult {
    if let Some(missing) = rule.sources.iter().find(|s| !facts.sources.contains(s)) {
        let reason = format!("needs {} facts, not collected in this audit", missing.name());
        return (outcome(rule, OutcomeKind::NotApplicable, Some(reason)), Vec::new());
    }
    if facts.sources.contains(&crate::facts::Source::Config) && !rule.configs.contains(&facts.config_kind) {
        let judged: Vec<&str> = rule.configs.iter().map(|k| k.name()).collect();
        let reason =
            format!("judges a {} config, not the {} config audited", judged.join(" or "), facts.config_kind.name());
        return (outcome(rule, OutcomeKind::NotApplicable, Some(reason)), Vec::new());
    }
    if let Some((source, fact, why)) =
        rule.facts().iter().find_map(|(source, f)| facts.absent(*source, f).map(|why| (source, f, why)))
    {
        let reason = format!("needs `{}.{fact}`: {why}", source.name());
        return (outcome(rule, OutcomeKind::NotApplicable, Some(reason)), Vec::new());
    }
    if let Some((source, fact, why)) =
        rule.facts().iter().find_map(|(source, f)| facts.unavailable(*source, f).map(|why| (source, f, why)))
    {
        let reason = format!("fact `{}.{fact}` could not be read: {why}", source.name());
        return (outcome(rule, OutcomeKind::Inconclusive, Some(reason)), Vec::new());
    }
    if let Some(range) = &rule.versions {
        match facts.version {
            None => {
                let reason = format!(
                    "applies to ClickHouse {range}; the server version is unknown (give --dsn or --clickhouse-version)"
                );
                return (outcome(rule, OutcomeKind::NotApplicable, Some(reason)), Vec::new());
            }
            Some(v) if !range.contains(v) => {
                let reason = format!("applies to ClickHouse {range}, not {v}");
                return (outcome(rule, OutcomeKind::NotApplicable, Some(reason)), Vec::new());
            }
            Some(_) => {}
        }
    }
    // a fact that leaves part of its inputs out: what it shows is true, its silence is not
    let partial = rule.facts().iter().find_map(|(source, f)| facts.partial(*source, f).map(|why| (source, f, why)));
    // restart advice from the audited version's catalog (else the newest)
    let catalog = crate::facts::catalog::of(facts.version);
    match budget::within(|| findings_of(rule, variables, overrides, catalog)) {
        Ok(found) if found.is_empty() => match partial {
            Some((source, fact, why)) => {
                let reason = format!("fact `{}.{fact}` is partial: {why}", source.name());
                (outcome(rule, OutcomeKind::Inconclusive, Some(reason)), found)
            }
            None => (outcome(rule, OutcomeKind::Passed, None), found),
        },
        Ok(found) => (outcome(rule, OutcomeKind::Fired, None), found),
        Err(reason) => (outcome(rule, OutcomeKind::Errored, Some(reason)), Vec::new()),
    }
}

fn findings_of(
    rule: &Rule,
    variables: &Variables,
    overrides: &[(String, serde_json::Value)],
    catalog: &crate::facts::catalog::Catalog,
) -> Result<Vec<Finding>, String> {
    let mut context = variables.0.new_inner_scope();
    let mut params: Map<String, serde_json::Value> =
        rule.params.iter().map(|p| (p.name.clone(), p.default.clone())).collect();
    params.extend(overrides.iter().cloned());
    context.add_variable_from_value("params", cel::to_value(&params).map_err(|e| e.to_string())?);
    let for_each = rule.for_each.as_ref().map(|e| e.eval_val(&context)).transpose()?;
    // a map's items are its values (held here: the items borrow them)
    let values = match for_each.as_deref() {
        Some(map) if map.get_type().kind() == Kind::Map => Some(value::values(map).map_err(|e| e.to_string())?),
        _ => None,
    };
    let items: Vec<&dyn Val> = match (for_each.as_deref(), &values) {
        (None, _) => vec![&CelNull],
        (Some(_), Some(values)) => values.iter().map(AsRef::as_ref).collect(),
        (Some(value), None) => match value.downcast_ref::<CelList>() {
            Some(list) => list.inner().iter().map(AsRef::as_ref).collect(),
            None => {
                let shown = value::to_value(value).map_or_else(|_| value.get_type().name().to_owned(), |v| display(&v));
                return Err(format!("`for_each` gave {shown}, not a list"));
            }
        },
    };
    let judge = |items: &[&dyn Val]| -> Result<Vec<Finding>, String> {
        let mut found = Vec::new();
        for item in items {
            // without `object:`, an item that is text is its object, else its `name`
            let named = match (&rule.object, &rule.for_each) {
                (None, Some(_)) => own_name(*item),
                _ => None,
            };
            let mut scope = context.new_inner_scope();
            scope.add_variable_as_val(rule.item.clone(), item.clone_as_boxed());
            for (name, expr) in &rule.lets {
                let value = expr.eval_val(&scope).map_err(|e| format!("`let` {name}: {e}"))?.as_ref().clone_as_boxed();
                scope.add_variable_as_val(name.clone(), value);
            }
            match rule.when.eval(&scope)? {
                Value::Bool(true) => found.push(finding(rule, &scope, named, catalog)?),
                Value::Bool(false) => {}
                other => return Err(format!("`when` gave {}, not true or false", display(&other))),
            }
        }
        Ok(found)
    };
    // a rule over many items (100,000 unknown elements) judges them on every core, in order
    let mut found = if items.len() < ITEMS_PER_CORE {
        judge(&items)?
    } else {
        let chunks: Vec<&[&dyn Val]> = items.chunks(items.len().div_ceil(crate::parallel::cores())).collect();
        let judged = budget::on_every_core(&chunks, |chunk| judge(chunk));
        concatenated(judged.into_iter().collect::<Result<Vec<_>, String>>()?)
    };
    tell_apart(&mut found);
    Ok(found)
}

/// Below this many items, a rule's items are judged on one thread (a thread costs more).
const ITEMS_PER_CORE: usize = 2048;

/// An item's own name: itself when it is text, else its `name` field.
fn own_name(item: &dyn Val) -> Option<String> {
    let text = |value: &dyn Val| value.downcast_ref::<CelString>().map(|s| s.inner().to_string());
    if item.get_type().kind() != Kind::Map {
        return text(item);
    }
    item.as_indexer()?.get(&CelString::from("name")).ok().and_then(|name| text(name.as_ref()))
}

/// Findings of one rule that share a fingerprint (an object that does not tell its items
/// apart, e.g. a rule's own `object:` that is too coarse) are told apart by where they
/// point and what they say: two problems never share one identity. `rules test` fails a
/// rule whose fixtures need this.
fn tell_apart(found: &mut [Finding]) {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for f in found.iter() {
        *seen.entry(f.fingerprint.as_str()).or_default() += 1;
    }
    let shared: Vec<bool> = found.iter().map(|f| seen[f.fingerprint.as_str()] > 1).collect();
    for (f, _) in found.iter_mut().zip(shared).filter(|(_, shared)| *shared) {
        let at = f.location.as_ref().map_or_else(String::new, ToString::to_string);
        f.fingerprint = finding::fingerprint(&[&f.fingerprint, &at, &f.message]);
    }
}

fn finding(
    rule: &Rule,
    scope: &cel::Context,
    named: Option<String>,
    catalog: &crate::facts::catalog::Catalog,
) -> Result<Finding, String> {
    let message = rule.message.render(scope)?;
    let location = match &rule.location {
        Some(e) => location_of(&e.eval(scope)?),
        None => None,
    };
    let object = match &rule.object {
        Some(e) => match e.eval(scope)? {
            Value::String(s) => Some(s.to_string()),
            other => return Err(format!("`object` gave {}, not text", display(&other))),
        },
        None => named,
    };
    let mut evidence = Evidence::new();
    for (name, e) in &rule.evidence {
        let value = e.eval(scope)?;
        evidence.insert(name.clone(), value.json().map_or_else(|_| display(&value).into(), whole_numbers));
    }
    let impact = match &rule.impact {
        None => 1.0,
        Some(e) => match e.eval(scope)? {
            Value::Float(f) => f,
            Value::Int(i) => i as f64,
            Value::UInt(u) => u as f64,
            other => return Err(format!("`impact` gave {}, not a number", display(&other))),
        },
    };
    let render = |t: &Option<expr::Template>| t.as_ref().map(|t| t.render(scope)).transpose();
    let fragments = rule
        .remediation
        .config
        .iter()
        .map(|(tree, t)| Ok(finding::Fragment { tree: *tree, xml: t.render(scope)? }))
        // a fragment rendered empty is not needed for this finding
        .filter(|f| !matches!(f, Ok(f) if f.xml.trim().is_empty()))
        .collect::<Result<Vec<_>, String>>()?;
    let file = location.as_ref().map_or("", |l| l.file.as_str());
    let fingerprint = finding::identity(&rule.id, object.as_deref(), file);
    // a secret is never printed, nor copied by `chaudit fix`: a fix that would carry one is
    // the user's to make where the value is written (a printed `******` would be pasted)
    let copies_secret = fragments.iter().any(|f| crate::mask::holds_secret(&f.xml));
    // a manual step rendered empty is not one for this finding (it has a config fix instead)
    let manual = match render(&rule.remediation.manual)?.filter(|m| !m.trim().is_empty()) {
        None if copies_secret => Some(format!(
            "This fix would copy a secret value, which chaudit never prints or copies: make the change where \
             the value is written ({}).",
            location.as_ref().map_or_else(|| "the element this finding names".to_string(), |l| l.to_string())
        )),
        manual => manual,
    };
    let remediation = finding::Remediation {
        restart: restart::needs_restart(&fragments, rule.remediation.restart, catalog),
        config: if copies_secret { None } else { finding::Remediation::pasteable(&fragments, &fingerprint) },
        fragments,
        manual,
        // a statement rendered empty is not one for this server (its version lacks the syntax)
        sql: render(&rule.remediation.sql)?.filter(|sql| !sql.trim().is_empty()),
        command: render(&rule.remediation.command)?.filter(|command| !command.trim().is_empty()),
        // the rule's snippet, made a patch of the manifest by the audit when the config is one
        manifest: render(&rule.remediation.manifest)?
            .filter(|m| !m.trim().is_empty())
            .map(|merge| Box::new(finding::ManifestFix::snippet(merge))),
        manifest_manual: render(&rule.remediation.manifest_manual)?.filter(|m| !m.trim().is_empty()),
        cluster_manifest: render(&rule.remediation.cluster_manifest)?.filter(|m| !m.trim().is_empty()),
        cluster_manual: render(&rule.remediation.cluster_manual)?.filter(|m| !m.trim().is_empty()),
    };
    Ok(Finding {
        fingerprint,
        rule_id: rule.id.clone(),
        severity: rule.severity,
        title: rule.title.clone(),
        message,
        object,
        location,
        evidence,
        remediation: Box::new(remediation),
        rank: 0,
        suppressed: None,
        baselined: false,
        hosts: Vec::new(),
        score: rule.severity.weight() * rule.confidence.factor() * impact.clamp(0.0, 1.0),
    })
}

/// A `file:line:column` string (the `at` of config facts) as a location.
fn location_of(value: &Value) -> Option<Location> {
    let Value::String(text) = value else { return None };
    let mut parts = text.rsplitn(3, ':');
    let column = parts.next()?.parse().ok()?;
    let line = parts.next()?.parse().ok()?;
    Some(Location { file: parts.next()?.to_string(), line, column })
}

/// Evidence with its whole doubles written as integers: a count the server quoted is read as
/// a double (`7.0`), and a count is shown as one (`7`).
fn whole_numbers(json: serde_json::Value) -> serde_json::Value {
    use serde_json::Value as Json;
    // integers up to 2^53 are exact as doubles
    const EXACT: f64 = 9_007_199_254_740_992.0;
    match json {
        Json::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() <= EXACT => Json::from(f as i64),
            _ => Json::Number(n),
        },
        Json::Array(items) => Json::Array(items.into_iter().map(whole_numbers).collect()),
        Json::Object(fields) => Json::Object(fields.into_iter().map(|(k, v)| (k, whole_numbers(v))).collect()),
        other => other,
    }
}
