//! Rule files: parse (spanned YAML) → validate → compile. Every problem in every file is
//! collected, each pointing at its file, line and column.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::config::error::FileProblem;
use crate::config::{Origin, SourceMap};
use crate::facts::Source;
use crate::spanned_yaml::{Yaml, read_document};

use super::error::RuleError;
use super::expr::{CompileError, Expr, Template};
use super::schema::{Confidence, Expectation, Remediation, Rule, RuleTest, Severity};

const KEYS: &[&str] = &[
    "id",
    "title",
    "severity",
    "category",
    "tags",
    "description",
    "applies",
    "for_each",
    "as",
    "when",
    "location",
    "message",
    "evidence",
    "remediation",
    "references",
    "confidence",
    "impact",
    "tests",
    "opt_in",
    "params",
];

/// Parses one rule file already in `sources`. `base` is its directory; fixtures are in `base/<id>/`.
pub fn parse_rule(sources: &SourceMap, id: crate::config::FileId, base: &Path) -> Result<Rule, Vec<RuleError>> {
    let file = sources.file(id);
    let doc = read_document(&file.text, id)
        .map_err(|(origin, message)| vec![invalid(sources, origin, message, "here", None)])?;
    let mut p = Parser { sources, errors: Vec::new(), doc: &doc };
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

    fn rule(&mut self, base: &Path, file: String) -> Option<Rule> {
        let Yaml::Mapping(pairs, origin) = self.doc else {
            self.error(self.doc.origin(), "a rule file is a mapping (id, title, severity, when, ...)", None);
            return None;
        };
        for (key, _) in pairs {
            if let Some(k) = key.as_str().filter(|k| !KEYS.contains(k)) {
                let suggestion =
                    KEYS.iter().max_by(|a, b| strsim::jaro_winkler(k, a).total_cmp(&strsim::jaro_winkler(k, b)));
                self.error(
                    key.origin(),
                    format!("unknown key `{k}`"),
                    suggestion.map(|s| format!("did you mean `{s}`?")),
                );
            }
        }
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
                self.error(at, format!("unknown severity `{s}`"), Some(format!("one of {}", Severity::NAMES)));
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
        let description = self.required_str(self.doc, "description", origin);
        let (sources, versions) = self.applies(origin);
        let facts = self.doc.get("applies").map(|a| self.string_list(a, "facts")).unwrap_or_default();
        let item = self.optional_str(self.doc, "as").unwrap_or_else(|| "item".into());
        let for_each = self.optional_expr(self.doc, "for_each");
        let when = self.required_expr(self.doc, "when", origin);
        let location = self.optional_expr(self.doc, "location");
        let impact = self.optional_expr(self.doc, "impact");
        let message = self.template(self.doc, "message", true, origin);
        let evidence = self.evidence();
        let remediation = self.remediation(origin);
        // fixtures live in a directory named after the rule, beside its file
        let tests = self.tests(&base.join(id.as_deref().unwrap_or_default()));
        let params = self.params();
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
            category,
            tags,
            description: description?,
            sources,
            facts,
            versions,
            for_each,
            item,
            when: when?,
            location,
            message: message??,
            evidence,
            remediation: remediation?,
            references,
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
            Some(Yaml::Scalar(s, o)) => match Template::compile(s, *o) {
                Ok(t) => Some(Some(t)),
                Err((offset, e)) => {
                    self.compile_error(*o, offset, e);
                    None
                }
            },
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

    fn applies(&mut self, origin: Origin) -> (Vec<Source>, Option<crate::version::VersionRange>) {
        let Some(applies) = self.doc.get("applies") else {
            self.error(origin, "missing `applies` (its `sources`: config, live, log, host, cluster)", None);
            return (Vec::new(), None);
        };
        let mut sources = Vec::new();
        for name in self.string_list(applies, "sources") {
            match Source::parse(&name) {
                Some(s) => sources.push(s),
                None => self.error(
                    applies.origin(),
                    format!("unknown source `{name}` (config, live, log, host, cluster)"),
                    None,
                ),
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
        (sources, versions)
    }

    /// `params: {name: number or string}`.
    fn params(&mut self) -> serde_json::Map<String, serde_json::Value> {
        let mut out = serde_json::Map::new();
        match self.doc.get("params") {
            None => {}
            Some(Yaml::Mapping(pairs, _)) => {
                for (k, v) in pairs {
                    match (k.as_str(), v.as_str()) {
                        (Some(name), Some(value)) => {
                            let value = value
                                .parse::<f64>()
                                .map_or_else(|_| serde_json::json!(value), |n| serde_json::json!(n));
                            out.insert(name.to_string(), value);
                        }
                        _ => self.error(k.origin(), "a param maps a name to a number or string", None),
                    }
                }
            }
            Some(other) => self.error(other.origin(), "`params` maps names to values", None),
        }
        out
    }

    fn evidence(&mut self) -> Vec<(String, Expr)> {
        match self.doc.get("evidence") {
            None => Vec::new(),
            Some(Yaml::Mapping(pairs, _)) => pairs
                .iter()
                .filter_map(|(k, v)| match (k.as_str(), v) {
                    (Some(name), Yaml::Scalar(source, o)) => self.compile(source, *o).map(|e| (name.to_string(), e)),
                    _ => {
                        self.error(k.origin(), "evidence maps a name to an expression", None);
                        None
                    }
                })
                .collect(),
            Some(other) => {
                self.error(other.origin(), "`evidence` maps names to expressions", None);
                Vec::new()
            }
        }
    }

    fn remediation(&mut self, origin: Origin) -> Option<Remediation> {
        let Some(node) = self.doc.get("remediation") else {
            self.error(origin, "missing `remediation` (restart, config or sql)", None);
            return None;
        };
        for (key, _) in match node {
            Yaml::Mapping(pairs, _) => pairs.as_slice(),
            _ => &[],
        } {
            if let Some(k) = key.as_str().filter(|k| !["restart", "config", "sql"].contains(k)) {
                self.error(key.origin(), format!("unknown remediation key `{k}` (restart, config, sql)"), None);
            }
        }
        let restart = match node.get("restart").and_then(Yaml::as_str) {
            Some("true") => true,
            Some("false") | None => false,
            Some(other) => {
                self.error(node.origin(), format!("`restart` is true or false, not `{other}`"), None);
                false
            }
        };
        let config = self.template(node, "config", false, origin)?;
        let sql = self.template(node, "sql", false, origin)?;
        if config.is_none() && sql.is_none() {
            self.error(node.origin(), "a remediation gives a `config` snippet or `sql`", None);
        }
        Some(Remediation { restart, config, sql })
    }

    fn tests(&mut self, base: &Path) -> Vec<RuleTest> {
        let Some(node) = self.doc.get("tests") else { return Vec::new() };
        let Yaml::Sequence(items, _) = node else {
            self.error(node.origin(), "`tests` is a list of `- fires: DIR` / `- quiet: DIR`", None);
            return Vec::new();
        };
        let mut tests = Vec::new();
        for item in items {
            let (expect, dir) = match (item.get("fires"), item.get("quiet")) {
                (Some(d), None) => (Expectation::Fires, d),
                (None, Some(d)) => (Expectation::Quiet, d),
                _ => {
                    self.error(item.origin(), "each test has exactly one of `fires: DIR` or `quiet: DIR`", None);
                    continue;
                }
            };
            let Some(dir) = dir.as_str() else {
                self.error(dir.origin(), "the fixture is a directory name", None);
                continue;
            };
            let version = item.get("version").and_then(Yaml::as_str).and_then(|v| match v.parse() {
                Ok(v) => Some(v),
                Err(m) => {
                    self.error(item.origin(), m, None);
                    None
                }
            });
            let at = item.get("at").and_then(Yaml::as_str).map(str::to_string);
            tests.push(RuleTest { expect, fixture: base.join(dir), at, version, origin: item.origin() });
        }
        tests
    }
}

/// Rule files found under a directory (recursively), sorted.
pub fn rule_files(dir: &Path) -> Result<Vec<PathBuf>, RuleError> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            if path.is_dir() {
                walk(&path, out)?;
            } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") && is_rule_file(&path) {
                out.push(path);
            }
        }
        Ok(())
    }
    let mut files = Vec::new();
    walk(dir, &mut files).map_err(|e| RuleError::Read { path: dir.to_path_buf(), message: e.to_string() })?;
    files.sort();
    Ok(files)
}

/// Fixture trees live in directories beside the rules; a rule file is a YAML file whose
/// directory has no config.xml (fixtures may hold YAML configs).
fn is_rule_file(path: &Path) -> bool {
    let dir = path.parent().unwrap_or(Path::new("."));
    !["config.xml", "config.yaml", "config.yml"].iter().any(|main| dir.join(main).exists())
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
