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

    fn applies(&mut self, origin: Origin) -> (Vec<Source>, Vec<Source>, Option<crate::version::VersionRange>) {
        let Some(applies) = self.doc.get("applies") else {
            self.error(origin, "missing `applies` (its `sources`: config, live, log, host, cluster)", None);
            return (Vec::new(), Vec::new(), None);
        };
        if let Yaml::Mapping(pairs, _) = applies {
            self.known_keys(pairs, &["sources", "optional", "versions"], "applies.");
        } else {
            self.error(applies.origin(), "`applies` maps `sources` (and `versions`)", None);
        }
        let mut sources = Vec::new();
        let mut optional = Vec::new();
        for (key, out) in [("sources", &mut sources), ("optional", &mut optional)] {
            for name in self.string_list(applies, key) {
                match Source::parse(&name) {
                    Some(s) => out.push(s),
                    None => self.error(
                        applies.get(key).map_or(applies.origin(), Yaml::origin),
                        format!("unknown source `{name}` (config, live, log, host, cluster)"),
                        None,
                    ),
                }
            }
        }
        if sources.is_empty() {
            self.error(
                applies.origin(),
                "`applies.sources` names at least one of config, live, log, host, cluster",
                None,
            );
        }
        let versions = self.optional_str(applies, "versions").and_then(|v| match v.parse() {
            Ok(range) => Some(range),
            Err(message) => {
                let at = applies.get("versions").map_or(origin, Yaml::origin);
                self.error(at, message, None);
                None
            }
        });
        (sources, optional, versions)
    }

    /// `params:`: `NAME: {type, default, doc}`, or `NAME: DEFAULT` (its type read from the
    /// literal).
    fn params(&mut self) -> Vec<Param> {
        let mut out: Vec<Param> = Vec::new();
        let pairs = match self.doc.get("params") {
            None | Some(Yaml::Null(_)) => return out,
            Some(Yaml::Mapping(pairs, _)) => pairs,
            Some(other) => {
                self.error(other.origin(), "`params` maps names to `{type, default, doc}`", None);
                return out;
            }
        };
        for (key, value) in pairs {
            let Some(name) = key.as_str() else { continue };
            if !name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') {
                self.error(key.origin(), format!("param `{name}`: lowercase letters, digits and `_`"), None);
                continue;
            }
            let param = match value {
                Yaml::Scalar(literal, _) => {
                    let kind = ParamType::of_literal(literal);
                    kind.value(literal).ok().map(|default| Param { name: name.into(), kind, default, doc: None })
                }
                Yaml::Mapping(fields, origin) => {
                    self.known_keys(fields, &["type", "default", "doc"], &format!("params.{name}."));
                    let kind = self.required_scalar(value, "type", *origin, "a type name").and_then(|(t, at)| {
                        let kind = ParamType::parse(t);
                        if kind.is_none() {
                            self.error(
                                at,
                                format!("unknown param type `{t}`"),
                                Some(format!("one of {}", <ParamType as strum::VariantNames>::VARIANTS.join(", "))),
                            );
                        }
                        kind
                    });
                    let default = self.required_scalar(value, "default", *origin, "a value");
                    let doc = self.optional_str(value, "doc");
                    match (kind, default) {
                        (Some(kind), Some((literal, at))) => match kind.value(literal) {
                            Ok(default) => Some(Param { name: name.into(), kind, default, doc }),
                            Err(why) => {
                                self.error(at, format!("default of `{name}`: {why}"), None);
                                None
                            }
                        },
                        _ => None,
                    }
                }
                other => {
                    self.error(
                        other.origin(),
                        format!("param `{name}` is `{{type, default, doc}}` or a default"),
                        None,
                    );
                    None
                }
            };
            out.extend(param);
        }
        out
    }

    /// A mapping of names to expressions, in order: `evidence`, or `let` (each name a new
    /// variable, not the item's).
    fn named_exprs(&mut self, key: &str, item: &str) -> Vec<(String, Expr)> {
        match self.doc.get(key) {
            None => Vec::new(),
            Some(Yaml::Mapping(pairs, _)) => pairs
                .iter()
                .filter_map(|(k, v)| match (k.as_str(), v) {
                    (Some(name), Yaml::Scalar(source, o)) => {
                        if key == "let" && !is_variable_name(name, item) {
                            let why = format!(
                                "`let` names a new variable: `{name}` is not an identifier, or is the item, `params`, \
                                 `version` or a source"
                            );
                            self.error(k.origin(), why, None);
                            return None;
                        }
                        self.compile(source, *o).map(|e| (name.to_string(), e))
                    }
                    _ => {
                        self.error(k.origin(), format!("`{key}` maps a name to an expression"), None);
                        None
                    }
                })
                .collect(),
            Some(other) => {
                self.error(other.origin(), format!("`{key}` maps names to expressions"), None);
                Vec::new()
            }
        }
    }

    fn remediation(&mut self, origin: Origin) -> Option<Remediation> {
        let Some(node) = self.doc.get("remediation") else {
            self.error(origin, "missing `remediation` (restart, config, manual, sql or command)", None);
            return None;
        };
        match node {
            Yaml::Mapping(pairs, _) => {
                self.known_keys(pairs, &["restart", "config", "manual", "sql", "command", "manifest"], "remediation.")
            }
            other => self.error(
                other.origin(),
                "`remediation` maps `restart`, `config`, `manual`, `sql`, `command` and `manifest`",
                None,
            ),
        }
        let restart = match node.get("restart").and_then(Yaml::as_str) {
            Some("true") => true,
            Some("false") | None => false,
            Some(other) => {
                self.error(node.origin(), format!("`restart` is true or false, not `{other}`"), None);
                false
            }
        };
        let config = self.fragments(node, origin)?;
        let manual = self.template(node, "manual", false, origin)?;
        let sql = self.template(node, "sql", false, origin)?;
        let command = self.template(node, "command", false, origin)?;
        let manifest = self.template(node, "manifest", false, origin)?;
        if config.is_empty() && manual.is_none() && sql.is_none() && command.is_none() {
            self.error(
                node.origin(),
                "a remediation gives `config` fragments, `manual` steps, `sql` or a `command`",
                None,
            );
        }
        // with both, each finding has the one its templates render non-empty (a section with
        // an <engine> gets the manual step, one without it the fragment); a finding that
        // renders a fragment is written by `chaudit fix`, its manual text left unused
        Some(Remediation { restart, config, manual, sql, command, manifest })
    }

    /// `effect:`: what ClickHouse does with the problem (every built-in config rule states
    /// it, and an engine test proves it on the rule's fixtures); one that stops the server
    /// is critical; a rule that does not read the config files has none (its fixtures are no
    /// tree an engine could start).
    fn effect(&mut self, severity: Option<Severity>, sources: &[Source], origin: Origin) -> Option<Effect> {
        let node = self.doc.get("effect");
        let effect = match node.map(|n| (n.as_str(), n.origin())) {
            None => None,
            Some((text, at)) => {
                let parsed = text.and_then(Effect::parse);
                if parsed.is_none() {
                    self.error(
                        at,
                        "unknown effect",
                        Some(format!("one of {}", <Effect as strum::VariantNames>::VARIANTS.join(", "))),
                    );
                }
                parsed
            }
        };
        if effect.is_some() && !sources.contains(&Source::Config) {
            let at = node.map_or(origin, Yaml::origin);
            self.error(at, "`effect:` is what the server does with the config files: a rule of `config` only", None);
        }
        if effect == Some(Effect::RefusesToStart) && severity.is_some_and(|s| s != Severity::Critical) {
            let at = node.map_or(origin, Yaml::origin);
            self.error(at, "a problem that stops the server is `severity: critical`", None);
        }
        effect
    }

    /// `config:` maps a tree (`server`, `users`) to the `<clickhouse>` fragment merged into it.
    fn fragments(&mut self, node: &Yaml, origin: Origin) -> Option<Vec<(ConfigTree, Template)>> {
        let Some(config) = node.get("config") else { return Some(Vec::new()) };
        let Yaml::Mapping(pairs, _) = config else {
            self.error(
                config.origin(),
                "`config` maps a tree (`server` or `users`) to the `<clickhouse>` fragment merged into it",
                None,
            );
            return None;
        };
        self.known_keys(pairs, &["server", "users"], "remediation.config.");
        let mut fragments = Vec::new();
        for (tree, key) in [(ConfigTree::Server, "server"), (ConfigTree::Users, "users")] {
            if let Some(template) = self.template(config, key, false, origin)? {
                fragments.push((tree, template));
            }
        }
        Some(fragments)
    }

    fn tests(&mut self, base: &Path) -> Vec<RuleTest> {
        let Some(node) = self.doc.get("tests") else { return Vec::new() };
        let Yaml::Sequence(items, _) = node else {
            self.error(node.origin(), "`tests` is a list of `- fires: DIR` / `- quiet: DIR`", None);
            return Vec::new();
        };
        let mut tests = Vec::new();
        for item in items {
            let Yaml::Mapping(pairs, _) = item else {
                self.error(
                    item.origin(),
                    "a test is `fires: DIR` or `quiet: DIR` (with `at`, `version`, `outcome`)",
                    None,
                );
                continue;
            };
            self.known_keys(pairs, &["fires", "quiet", "at", "version", "outcome"], "tests[].");
            let (fires, dir) = match (item.get("fires"), item.get("quiet")) {
                (Some(d), None) => (true, d),
                (None, Some(d)) => (false, d),
                _ => {
                    self.error(item.origin(), "each test has exactly one of `fires: DIR` or `quiet: DIR`", None);
                    continue;
                }
            };
            let Some(dir) = dir.as_str() else {
                self.error(dir.origin(), "the fixture is a directory name", None);
                continue;
            };
            let expect = match (fires, item.get("outcome")) {
                (true, None) => Expectation::Fires,
                (false, None) => Expectation::Quiet,
                (false, Some(node)) => match node.as_str() {
                    Some("passed") => Expectation::Quiet,
                    Some("not-applicable") => Expectation::Outcome(OutcomeKind::NotApplicable),
                    Some("inconclusive") => Expectation::Outcome(OutcomeKind::Inconclusive),
                    _ => {
                        self.error(
                            node.origin(),
                            "`outcome` of a quiet test is passed, not-applicable or inconclusive",
                            None,
                        );
                        continue;
                    }
                },
                (true, Some(node)) => {
                    self.error(node.origin(), "`outcome` goes with `quiet:` (a firing test's outcome is fired)", None);
                    continue;
                }
            };
            let version = match item.get("version") {
                None => None,
                Some(node) => match node.as_str().map(str::parse) {
                    Some(Ok(v)) => Some(v),
                    Some(Err(m)) => {
                        self.error(node.origin(), m, None);
                        None
                    }
                    None => {
                        self.error(node.origin(), "`version` is a ClickHouse version such as \"25.8\"", None);
                        None
                    }
                },
            };
            let at = match item.get("at") {
                None => None,
                Some(node) => match (fires, node.as_str()) {
                    (true, Some(at)) => Some(at.to_string()),
                    (false, _) => {
                        self.error(node.origin(), "`at` is the expected location of a firing test", None);
                        None
                    }
                    (true, None) => {
                        self.error(node.origin(), "`at` is `file:line`", None);
                        None
                    }
                },
            };
            tests.push(RuleTest { expect, fixture: base.join(dir), at, version, origin: item.origin() });
        }
        tests
    }
}

/// Rule files found under a directory (recursively), sorted.
pub fn rule_files(fs: &impl ConfigFs, dir: &Path) -> Result<Vec<PathBuf>, RuleError> {
    fn walk(fs: &impl ConfigFs, dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
        for (path, listed_as_file) in fs.read_dir(dir)? {
            // links are followed; what is neither a file nor a directory is taken as a file,
            // and refused when it is read
            let candidate = path.extension().is_some_and(|e| e == "yaml" || e == "yml");
            if listed_as_file || fs.is_file(&path).unwrap_or(true) {
                if candidate && is_rule_file(fs, &path) {
                    out.push(path);
                }
            } else {
                match walk(fs, &path, out) {
                    Err(e) if e.kind() == std::io::ErrorKind::NotADirectory && candidate => out.push(path),
                    Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {}
                    other => other?,
                }
            }
        }
        Ok(())
    }
    let mut files = Vec::new();
    walk(fs, dir, &mut files).map_err(|e| RuleError::Read { path: dir.to_path_buf(), message: e.to_string() })?;
    files.sort();
    Ok(files)
}

/// Fixture trees live in directories beside the rules; a rule file is a YAML file whose
/// directory has no config.xml (fixtures may hold YAML configs).
fn is_rule_file(fs: &impl ConfigFs, path: &Path) -> bool {
    let dir = path.parent().unwrap_or(Path::new("."));
    !["config.xml", "config.yaml", "config.yml"].iter().any(|main| fs.exists(&dir.join(main)))
        && !path
            .components()
            .any(|c| c.as_os_str() == "users.d" || c.as_os_str() == "config.d" || c.as_os_str() == "conf.d")
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

/// Whether `name` can be a `let` variable: an identifier that hides nothing the rule reads.
fn is_variable_name(name: &str, item: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name != item
        && !matches!(name, "params" | "version")
        && crate::facts::Source::parse(name).is_none()
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
        let errors = startup_rule("quota-duration-invalidd").err().expect("refused");
        let [RuleError::Invalid(problem)] = errors.as_slice() else { panic!("one problem: {errors:?}") };
        assert_eq!(problem.message, "`quota-duration-invalidd` is no start-up check: no problem ever has it");
        assert_eq!(problem.at, "rules/x.yaml:7:54");
        assert_eq!(problem.help.as_deref(), Some("did you mean `quota-duration-invalid`?"));
        // another field of the problem compared with the same text is no check's id
        let rule = startup_rule("quota-duration-invalid").expect("loads");
        assert_eq!(rule.reads().start_checks.iter().copied().collect::<Vec<_>>(), [StartCheck::QuotaDurationInvalid]);
    }
}
