//! Rule files: parse (spanned YAML) → validate → compile. Every problem in every file is
//! collected, each pointing at its file, line and column.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::config::error::FileProblem;
use crate::config::{ConfigFs, Origin, SourceMap};
use crate::facts::{ConfigKind, Source};
use crate::spanned_yaml::de::{self, Spanned};
use crate::spanned_yaml::{Yaml, read_document, read_recorded};

use super::check;
use super::error::RuleError;
use super::expr::{CompileError, Expr, Template};
use super::schema::{
    Confidence, ConfigTree, Effect, Expectation, Param, ParamType, Remediation, Rule, RuleTest, Severity,
};
use super::twin::LiveTwin;
use crate::rules::OutcomeKind;

mod file;
mod files;
mod fixtures;
mod sections;

pub use files::rule_files;

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
        None => read_document(&file.text(), id),
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

    /// A problem the reader found (an unknown key, a value of the wrong kind), at its node.
    fn read_problem(&mut self, problem: de::Problem) {
        let at = problem.origin.unwrap_or(self.doc.origin());
        self.error(at, problem.message, problem.help);
    }

    fn rule(&mut self, base: &Path, file: String) -> Option<Rule> {
        let (read, problems) = de::from_yaml::<file::RuleFile>(self.doc);
        for problem in problems {
            self.read_problem(problem);
        }
        let rule = read?;
        let origin = self.doc.origin();
        let id = rule.id.value.clone();
        if !id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-') {
            self.error(rule.id.origin, format!("rule id `{id}` must be lowercase letters, digits and dashes"), None);
        }
        let severity = rule.severity.0.map(|s| s.value);
        let (sources, optional_sources, versions) = match &rule.applies.0 {
            Some(applies) => self.applies(applies),
            None => (Vec::new(), Vec::new(), None),
        };
        let configs = rule.applies.0.as_ref().map_or_else(|| vec![ConfigKind::Server], |a| self.configs(a));
        let effect = self.effect(rule.effect.as_ref().and_then(|e| e.0.as_ref()), severity, &sources);
        let item = rule.item.clone().unwrap_or_else(|| "item".into());
        let for_each = self.optional_expr(rule.for_each.as_ref());
        let lets = rule.lets.0.as_ref().map_or_else(Vec::new, |lets| self.named_exprs(lets, Some(&item)));
        // without `when`, every item `for_each` gives is a finding (or, without `for_each`,
        // the rule fires wherever it applies: a version gate is its whole condition)
        let when = match &rule.when {
            None => self.compile("true", origin),
            Some(when) => self.compile(&when.value, when.origin),
        };
        let location = self.optional_expr(rule.location.as_ref());
        let object = self.optional_expr(rule.object.as_ref());
        let impact = self.optional_expr(rule.impact.as_ref());
        let message = self.template(Some(&rule.message));
        let evidence = rule.evidence.0.as_ref().map_or_else(Vec::new, |named| self.named_exprs(named, None));
        let remediation = rule.remediation.0.as_ref().and_then(|r| self.remediation(r));
        // fixtures live in a directory named after the rule, beside its file
        let tests = self.tests(rule.tests.0.as_deref().unwrap_or_default(), &base.join(&id));
        let params = rule.params.0.as_ref().map_or_else(Vec::new, |params| self.params(params));
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
        let live_twin = rule.live_twin.and_then(|twin| twin.0).map(|twin| match twin {
            file::LiveTwinFile::Rule(id) => LiveTwin::Rule(id),
            file::LiveTwinFile::None(why) => LiveTwin::None(why),
        });
        Some(Rule {
            id,
            title: rule.title,
            severity: severity?,
            effect,
            category: rule.category.unwrap_or_else(|| "general".into()),
            tags: rule.tags,
            description: rule.description,
            sources,
            optional_sources,
            checked: reads.map(std::sync::OnceLock::from).unwrap_or_default(),
            versions,
            configs,
            for_each,
            item,
            lets,
            when: when?,
            location,
            object,
            message: message??,
            evidence,
            remediation: remediation?,
            references: rule.references,
            live_twin,
            confidence: match rule.confidence {
                None => Confidence::High,
                Some(confidence) => confidence.0?.value,
            },
            impact,
            tests,
            opt_in: rule.opt_in.0?,
            params,
            file,
            origin,
        })
    }

    fn compile(&mut self, source: &str, origin: Origin) -> Option<Expr> {
        let at = self.sources.locate(origin).to_string();
        if self.defer {
            return Some(Expr::deferred(source, origin).located(at));
        }
        Expr::compile(source, origin).map(|e| e.located(at)).map_err(|e| self.compile_error(origin, 0, e)).ok()
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

    fn optional_expr(&mut self, source: Option<&Spanned<String>>) -> Option<Expr> {
        let source = source?;
        self.compile(&source.value, source.origin)
    }

    /// `Some(None)` when absent, `None` after an error.
    fn template(&mut self, text: Option<&Spanned<String>>) -> Option<Option<Template>> {
        let Some(Spanned { value, origin }) = text else { return Some(None) };
        let compiled = if self.defer { Template::deferred(value, *origin) } else { Template::compile(value, *origin) };
        match compiled {
            Ok(t) => Some(Some(t.located(|at| self.sources.locate(at).to_string()))),
            Err((offset, e)) => {
                self.compile_error(*origin, offset, e);
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

    /// A rule judges a server's config unless `applies.configs` says otherwise; an unknown
    /// config is refused where it is written.
    #[test]
    fn the_configs_a_rule_judges_are_read_from_applies() {
        use crate::facts::ConfigKind;
        let rule_with = |configs: &str| {
            let text = format!(
                "id: x\ntitle: t\nseverity: low\ndescription: d\napplies:\n  sources: [config]\n{configs}\
                 when: 'true'\nmessage: m\nremediation:\n  manual: fix it\n"
            );
            let mut sources = SourceMap::new(PathBuf::new());
            let id = sources.add(PathBuf::from("rules/x.yaml"), text);
            parse_rule(&sources, id, Path::new("rules"), None, false)
        };
        assert_eq!(rule_with("").expect("loads").configs, [ConfigKind::Server]);
        let both = rule_with("  configs: [server, keeper]\n").expect("loads");
        assert_eq!(both.configs, [ConfigKind::Server, ConfigKind::Keeper]);
        let errors = rule_with("  configs: [kepeer]\n").expect_err("refused");
        let [RuleError::Invalid(problem)] = errors.as_slice() else { panic!("one problem: {errors:?}") };
        assert_eq!(
            (problem.message.as_str(), problem.at.as_str()),
            ("unknown config `kepeer` (server, keeper)", "rules/x.yaml:7:13")
        );
    }
}
