//! Rule files: parse (spanned YAML) → validate → compile. Every problem in every file is
//! collected, each pointing at its file, line and column.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::config::error::FileProblem;
use crate::config::{ConfigFs, Origin, SourceMap};
use crate::facts::Source;
use crate::spanned_yaml::{Yaml, read_document, read_recorded};

use super::check;
use super::error::RuleError;
use super::expr::{CompileError, Expr, Template};
use super::schema::{
    Confidence, ConfigTree, Effect, Expectation, Param, ParamType, Remediation, Rule, RuleTest, Severity,
};
use crate::rules::OutcomeKind;

mod files;
mod fixtures;
mod sections;

pub use files::rule_files;

const KEYS: &[&str] = &[
    "id",
    "title",
    "severity",
    "effect",
    "category",
    "tags",
    "description",
    "applies",
    "for_each",
    "as",
    "let",
    "when",
    "location",
    "object",
    "message",
    "evidence",
    "remediation",
    "references",
    "confidence",
    "impact",
    "tests",
    "opt_in",
    "params",
    "live_twin",
];

/// Parses one rule file already in `sources`. `base` is its directory; fixtures are in `base/<id>/`.
/// A built-in rule's YAML events were recorded when chaudit was built (`events`).
/// With `defer`, its expressions are parsed and checked when first read (see
/// [`Expr::deferred`]): for the built-in rules of an audit.
pub fn parse_rule(
    sources: &SourceMap,
    id: crate::config::FileId,
    base: &Path,
    events: Option<&[u8]>,
    defer: bool,
) -> Result<Rule, Vec<RuleError>> {
    let file = sources.file(id);
    let doc = match events {
        Some(events) => read_recorded(events, id),
        None => read_document(&file.text, id),
    }
    .map_err(|(origin, message)| vec![invalid(sources, origin, message, "here", None)])?;
    let mut p = Parser { sources, errors: Vec::new(), doc: &doc, defer };
    let rule = p.rule(base, file.display.clone());
    match rule {
        Some(rule) if p.errors.is_empty() => Ok(rule),
        _ => Err(p.errors),
    }
}

struct Parser<'a> {
    sources: &'a SourceMap,
    errors: Vec<RuleError>,
    doc: &'a Yaml,
    defer: bool,
}

fn invalid(
    sources: &SourceMap,
    origin: Origin,
    message: impl Into<String>,
    label: &str,
    help: Option<String>,
) -> RuleError {
    RuleError::Invalid(FileProblem::new("chaudit::rules::invalid", sources, origin, message, label, help))
}

impl Parser<'_> {
    fn error(&mut self, origin: Origin, message: impl Into<String>, help: Option<String>) {
        self.errors.push(invalid(self.sources, origin, message, "here", help));
    }

    /// Every key of a mapping must be one of `allowed`: a misspelled key would otherwise
    /// drop what it says (a version gate, a test's expected location) without a word.
    fn known_keys(&mut self, pairs: &[(Yaml, Yaml)], allowed: &[&str], section: &str) {
        for (key, _) in pairs {
            let Some(k) = key.as_str() else {
                self.error(key.origin(), "keys are strings", None);
                continue;
            };
            if allowed.contains(&k) {
                continue;
            }
            let suggestion =
                crate::suggest::closest_above(k, allowed.iter().copied(), 0.7).map(|s| format!("did you mean `{s}`?"));
            let help = suggestion.or_else(|| Some(format!("known keys: {}", allowed.join(", "))));
            self.error(key.origin(), format!("unknown key `{section}{k}`"), help);
        }
    }

    fn rule(&mut self, base: &Path, file: String) -> Option<Rule> {
        let Yaml::Mapping(pairs, origin) = self.doc else {
            self.error(self.doc.origin(), "a rule file is a mapping (id, title, severity, when, ...)", None);
            return None;
        };
        self.known_keys(pairs, KEYS, "");
        let origin = *origin;
        let id = self.required_str(self.doc, "id", origin);
        if let Some(id) = &id
            && !id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        {
            let at = self.doc.get("id").map_or(origin, Yaml::origin);
            self.error(at, format!("rule id `{id}` must be lowercase letters, digits and dashes"), None);
        }
        let title = self.required_str(self.doc, "title", origin);
        let severity = self.required_str(self.doc, "severity", origin).and_then(|s| {
            let parsed = Severity::parse(&s);
            if parsed.is_none() {
                let at = self.doc.get("severity").map_or(origin, Yaml::origin);
                self.error(
                    at,
                    format!("unknown severity `{s}`"),
                    Some(format!("one of {}", Severity::names().collect::<Vec<_>>().join(", "))),
                );
            }
            parsed
        });
        let confidence = match self.doc.get("confidence") {
            None => Some(Confidence::High),
            Some(node) => {
                let parsed = node.as_str().and_then(Confidence::parse);
                if parsed.is_none() {
                    self.error(node.origin(), "confidence is high, medium or low", None);
                }
                parsed
            }
        };
        let category = self.optional_str(self.doc, "category").unwrap_or_else(|| "general".into());
        let tags = self.string_list(self.doc, "tags");
        let references = self.string_list(self.doc, "references");
        let live_twin = super::twin::parse(self.doc.get("live_twin")).unwrap_or_else(|(at, message)| {
            self.error(at, message, None);
            None
        });
        let description = self.required_str(self.doc, "description", origin);
        let (sources, optional_sources, versions) = self.applies(origin);
        let effect = self.effect(severity, &sources, origin);
        let item = self.optional_str(self.doc, "as").unwrap_or_else(|| "item".into());
        let for_each = self.optional_expr(self.doc, "for_each");
        let lets = self.named_exprs("let", &item);
        // without `when`, every item `for_each` gives is a finding (or, without `for_each`,
        // the rule fires wherever it applies: a version gate is its whole condition)
        let when = match self.doc.get("when") {
            None => self.compile("true", origin),
            Some(_) => self.required_expr(self.doc, "when", origin),
        };
        let location = self.optional_expr(self.doc, "location");
        let object = self.optional_expr(self.doc, "object");
        let impact = self.optional_expr(self.doc, "impact");
        let message = self.template(self.doc, "message", true, origin);
        let evidence = self.named_exprs("evidence", "");
        let remediation = self.remediation(origin);
        // fixtures live in a directory named after the rule, beside its file
        let tests = self.tests(&base.join(id.as_deref().unwrap_or_default()));
        let params = self.params();
        let reads = (!self.defer).then(|| {
            self.check_facts(check::Expressions {
                sources: &sources,
                optional: &optional_sources,
                params: &params,
                item: &item,
                for_each: for_each.as_ref(),
                lets: &lets,
                when: when.as_ref(),
                location: location.as_ref(),
                impact: impact.as_ref(),
                object: object.as_ref(),
                evidence: &evidence,
                templates: message
                    .as_ref()
                    .and_then(Option::as_ref)
                    .into_iter()
                    .chain(remediation.iter().flat_map(Remediation::templates))
                    .collect(),
            })
        });
        let opt_in = match self.doc.get("opt_in").map(|n| (n.as_str(), n.origin())) {
            None | Some((Some("false"), _)) => false,
            Some((Some("true"), _)) => true,
            Some((_, at)) => {
                self.error(at, "`opt_in` is true or false", None);
                false
            }
        };
        Some(Rule {
            id: id?,
            title: title?,
            severity: severity?,
            effect,
            category,
            tags,
            description: description?,
            sources,
            optional_sources,
            checked: reads.map(std::sync::OnceLock::from).unwrap_or_default(),
            versions,
            for_each,
            item,
            lets,
            when: when?,
            location,
            object,
            message: message??,
            evidence,
            remediation: remediation?,
            references,
            live_twin,
            confidence: confidence?,
            impact,
            tests,
            opt_in,
            params,
            file,
            origin,
        })
    }

    fn required_str(&mut self, node: &Yaml, key: &str, origin: Origin) -> Option<String> {
        self.required_scalar(node, key, origin, "a string").map(|(s, _)| s.to_string())
    }

    /// The scalar under `key` and where it is written; a diagnostic names `what` it must be.
    fn required_scalar<'y>(
        &mut self,
        node: &'y Yaml,
        key: &str,
        origin: Origin,
        what: &str,
    ) -> Option<(&'y str, Origin)> {
        match node.get(key) {
            Some(Yaml::Scalar(s, o)) => Some((s.as_str(), *o)),
            Some(other) => {
                self.error(other.origin(), format!("`{key}` must be {what}"), None);
                None
            }
            None => {
                self.error(origin, format!("missing `{key}`"), None);
                None
            }
        }
    }

    fn optional_str(&mut self, node: &Yaml, key: &str) -> Option<String> {
        match node.get(key)? {
            Yaml::Scalar(s, _) => Some(s.clone()),
            Yaml::Null(_) => None,
            other => {
                self.error(other.origin(), format!("`{key}` must be a string"), None);
                None
            }
        }
    }

    fn string_list(&mut self, node: &Yaml, key: &str) -> Vec<String> {
        match node.get(key) {
            None | Some(Yaml::Null(_)) => Vec::new(),
            Some(Yaml::Sequence(items, _)) => items
                .iter()
                .filter_map(|i| match i {
                    Yaml::Scalar(s, _) => Some(s.clone()),
                    other => {
                        self.error(other.origin(), format!("`{key}` holds strings"), None);
                        None
                    }
                })
                .collect(),
            Some(other) => {
                self.error(other.origin(), format!("`{key}` must be a list"), None);
                Vec::new()
            }
        }
    }

    fn compile(&mut self, source: &str, origin: Origin) -> Option<Expr> {
        if self.defer {
            return Some(Expr::deferred(source, origin));
        }
        Expr::compile(source, origin).map_err(|e| self.compile_error(origin, 0, e)).ok()
    }

    fn compile_error(&mut self, origin: Origin, offset: usize, e: CompileError) {
        // point at the failing column when the expression sits on one line
        let at = Origin { file: origin.file, offset: origin.offset + (offset + e.column) as u32 };
        self.error(
            at,
            format!("invalid expression: {}", e.message),
            Some("expressions are CEL: https://cel.dev".into()),
        );
    }

    fn required_expr(&mut self, node: &Yaml, key: &str, origin: Origin) -> Option<Expr> {
        let (source, at) = self.required_scalar(node, key, origin, "an expression string")?;
        self.compile(source, at)
    }

    fn optional_expr(&mut self, node: &Yaml, key: &str) -> Option<Expr> {
        match node.get(key)? {
            Yaml::Scalar(s, o) => self.compile(s, *o),
            other => {
                self.error(other.origin(), format!("`{key}` must be an expression string"), None);
                None
            }
        }
    }

    /// `Some(None)` when absent and not required, `None` after an error.
    fn template(&mut self, node: &Yaml, key: &str, required: bool, origin: Origin) -> Option<Option<Template>> {
        match node.get(key) {
            Some(Yaml::Scalar(s, o)) => {
                match if self.defer { Template::deferred(s, *o) } else { Template::compile(s, *o) } {
                    Ok(t) => Some(Some(t)),
                    Err((offset, e)) => {
                        self.compile_error(*o, offset, e);
                        None
                    }
                }
            }
            None if !required => Some(None),
            None => {
                self.error(origin, format!("missing `{key}`"), None);
                None
            }
            Some(other) => {
                self.error(other.origin(), format!("`{key}` must be a string"), None);
                None
            }
        }
    }

    /// The rule's expressions against the facts catalog; returns what they read.
    fn check_facts(&mut self, expressions: check::Expressions) -> check::Reads {
        let (reads, problems) = check::rule(expressions);
        for (at, message, help) in problems {
            self.error(at, message, help);
        }
        reads
    }
}

/// Rules by id, or the id of the second definition of a duplicate.
pub fn index(rules: &[Rule]) -> Result<BTreeMap<&str, &Rule>, &Rule> {
    let mut out = BTreeMap::new();
    for r in rules {
        if out.insert(r.id.as_str(), r).is_some() {
            return Err(r);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::{RuleError, parse_rule};
    use crate::config::SourceMap;
    use crate::facts::startup::StartCheck;

    /// A start-up rule reading the problems of `check`, loaded from rules/x.yaml.
    fn startup_rule(check: &str) -> Result<super::Rule, Vec<RuleError>> {
        let text = format!(
            "id: x\ntitle: t\nseverity: critical\ndescription: d\napplies:\n  sources: [config]\n\
             for_each: config.start_problems.filter(p, p.check == \"{check}\")\nas: problem\n\
             object: problem.subject\nwhen: 'problem.part == \"\" || problem.part != \"{check}\"'\n\
             message: \"{{{{ problem.reason }}}}\"\nremediation:\n  manual: fix it\n"
        );
        let mut sources = SourceMap::new(PathBuf::new());
        let id = sources.add(PathBuf::from("rules/x.yaml"), text);
        parse_rule(&sources, id, Path::new("rules"), None, false)
    }

    #[test]
    fn a_rule_comparing_a_problem_with_no_registered_check_is_refused_where_it_is_written() {
        let errors = startup_rule("quota-duration-invalidd").expect_err("refused");
        let [RuleError::Invalid(problem)] = errors.as_slice() else { panic!("one problem: {errors:?}") };
        assert_eq!(problem.message, "`quota-duration-invalidd` is no start-up check: no problem ever has it");
        assert_eq!(problem.at, "rules/x.yaml:7:54");
        assert_eq!(problem.help.as_deref(), Some("did you mean `quota-duration-invalid`?"));
        // another field of the problem compared with the same text is no check's id
        let rule = startup_rule("quota-duration-invalid").expect("loads");
        assert_eq!(rule.reads().start_checks.iter().copied().collect::<Vec<_>>(), [StartCheck::QuotaDurationInvalid]);
    }
}
