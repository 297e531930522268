//! A rule, parsed and compiled. One rule = one YAML file under rules/<area>/; the file also
//! carries the rule's documentation and its test fixtures.

use std::path::PathBuf;

use crate::config::Origin;
use crate::facts::{ConfigKind, Source};
use crate::version::VersionRange;

use super::expr::{Expr, Template};

#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    strum::EnumString,
    strum::IntoStaticStr,
    strum::VariantNames,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum Severity {
    Info,
    Low,
    Medium,
    High,
    Critical,
}

impl Severity {
    pub fn parse(s: &str) -> Option<Severity> {
        s.parse().ok()
    }

    pub fn name(self) -> &'static str {
        self.into()
    }

    /// Every severity's name, the most severe first.
    pub fn names() -> impl Iterator<Item = &'static str> {
        <Self as strum::VariantNames>::VARIANTS.iter().rev().copied()
    }

    /// The severity's share of a finding's rank.
    pub fn weight(self) -> f64 {
        match self {
            Severity::Critical => 5.0,
            Severity::High => 4.0,
            Severity::Medium => 3.0,
            Severity::Low => 2.0,
            Severity::Info => 1.0,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    High,
    Medium,
    Low,
}

impl Confidence {
    pub fn factor(self) -> f64 {
        match self {
            Confidence::High => 1.0,
            Confidence::Medium => 0.7,
            Confidence::Low => 0.4,
        }
    }
}

/// What ClickHouse does with the problem a config rule finds, proven on the real server
/// (tests/effect_engine.rs starts clickhouse-server on each must-fire fixture).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Effect {
    /// The server does not start on the config (such a rule is critical).
    RefusesToStart,
    /// The server starts and the element has no effect.
    Ignored,
    /// The server starts; queries or background work fail later.
    FailsAtRuntime,
    /// The server starts and works, worse (slower, less safe, unbounded).
    Degrades,
}

/// The config tree a fragment is merged into: the server config (config.d/) or the users
/// config (users.d/, or config.d/ when users live in the main config).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfigTree {
    Server,
    Users,
}

impl ConfigTree {
    /// The fragment directory a fix goes to, as a stock install names it.
    pub fn fragment_dir(self) -> &'static str {
        match self {
            ConfigTree::Server => "config.d",
            ConfigTree::Users => "users.d",
        }
    }
}

/// The file a fix fragment is written to: `zz-` sorts it after every fragment of a stock
/// install, so its values and `remove="1"` markers apply last.
pub const FIX_FILE: &str = "zz-chaudit-fix.xml";

#[derive(Debug, Clone)]
pub struct Remediation {
    /// Whether the fix needs a server restart.
    pub restart: bool,
    /// Fragments (`<clickhouse>` documents, templates) merged into the server or users
    /// config: what `chaudit fix` writes, each after every other fragment.
    pub config: Vec<(ConfigTree, Template)>,
    /// What only the user can do or choose (a password, a host, an environment variable):
    /// such a finding has no fragment and `chaudit fix` lists it as needing the user.
    pub manual: Option<Template>,
    pub sql: Option<Template>,
    /// A shell command for the host (a sysctl, a mount), never SQL: `chaudit fix` lists the
    /// finding as fixed by a command.
    pub command: Option<Template>,
    /// YAML to merge into a ClickHouseInstallation when the config is one: the change in the
    /// manifest's terms (a cluster's `secret`), which the operator turns into the files.
    pub manifest: Option<Template>,
    /// What only the user can do, in a ClickHouseInstallation's terms (the manifest's keys):
    /// replaces `manual` when the config is a manifest; with `manifest` beside it, that
    /// snippet is printed as an example and `chaudit fix` does not write it.
    pub manifest_manual: Option<Template>,
    /// The same two in a ClickHouseCluster's terms (ClickHouse's operator: `spec.settings`,
    /// such as `defaultUserPassword`); without them its fix is the config fragments as keys
    /// of its `extraConfig`.
    pub cluster_manifest: Option<Template>,
    pub cluster_manual: Option<Template>,
}

impl Remediation {
    /// Its templates: the manual step, the SQL, the command, the manifest's, then the config fragments.
    pub fn templates(&self) -> impl Iterator<Item = &Template> {
        [
            self.manual.as_ref(),
            self.sql.as_ref(),
            self.command.as_ref(),
            self.manifest.as_ref(),
            self.manifest_manual.as_ref(),
            self.cluster_manifest.as_ref(),
            self.cluster_manual.as_ref(),
        ]
        .into_iter()
        .flatten()
        .chain(self.config.iter().map(|(_, t)| t))
    }
}

/// What a fixture expects of the rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expectation {
    /// `fires: DIR`: at least one finding.
    Fires,
    /// `quiet: DIR`: the rule ran and passed.
    Quiet,
    /// `quiet: DIR` with `outcome: not-applicable` or `outcome: inconclusive`: the rule did
    /// not judge, and says so.
    Outcome(OutcomeKind),
}

/// The type of a rule parameter; `--param` values are parsed as it says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::EnumString, strum::IntoStaticStr, strum::VariantNames)]
#[strum(serialize_all = "lowercase")]
pub enum ParamType {
    UInt,
    Int,
    Float,
    Bool,
    String,
}

impl ParamType {
    pub fn parse(s: &str) -> Option<ParamType> {
        s.parse().ok()
    }

    pub fn name(self) -> &'static str {
        self.into()
    }

    /// The type a bare default implies: a number is a float (expressions compare it with
    /// `num(...)`, a float), `true`/`false` a bool, anything else a string.
    pub fn of_literal(s: &str) -> ParamType {
        if s.parse::<f64>().is_ok() {
            ParamType::Float
        } else if s == "true" || s == "false" {
            ParamType::Bool
        } else {
            ParamType::String
        }
    }

    /// A value of this type written as text, or why it is not one.
    pub fn value(self, s: &str) -> Result<serde_json::Value, String> {
        let s = s.trim();
        let bad = || format!("`{s}` is not a {}", self.name());
        Ok(match self {
            ParamType::UInt => serde_json::json!(s.parse::<u64>().map_err(|_| bad())?),
            ParamType::Int => serde_json::json!(s.parse::<i64>().map_err(|_| bad())?),
            ParamType::Float => {
                let f = s.parse::<f64>().ok().filter(|f| f.is_finite()).ok_or_else(bad)?;
                serde_json::json!(f)
            }
            ParamType::Bool => serde_json::json!(s.parse::<bool>().map_err(|_| bad())?),
            ParamType::String => serde_json::json!(s),
        })
    }
}

/// A tunable constant of a rule (`params.NAME` in its expressions).
#[derive(Debug, Clone)]
pub struct Param {
    pub name: String,
    pub kind: ParamType,
    pub default: serde_json::Value,
    /// What it means, for `rules explain`.
    pub doc: Option<String>,
}

/// One fixture of a rule's test: a config tree that must (or must not) make it fire.
#[derive(Debug, Clone)]
pub struct RuleTest {
    pub expect: Expectation,
    /// Directory holding the fixture's config.xml (or config.yaml).
    pub fixture: PathBuf,
    /// Expected location of the finding, `file:line` relative to the fixture.
    pub at: Option<String>,
    /// The ClickHouse version the fixture stands for.
    pub version: Option<crate::version::Version>,
    pub origin: Origin,
}

/// A top-level fact of a source (`live`, `settings`), as rules read it.
pub type FactRef = (Source, String);

#[derive(Debug, Clone)]
pub struct Rule {
    pub id: String,
    pub title: String,
    pub severity: Severity,
    /// What ClickHouse does with the problem (every built-in rule that reads only the config says).
    pub effect: Option<Effect>,
    pub category: String,
    pub tags: Vec<String>,
    /// Markdown: what, why, how to fix.
    pub description: String,
    /// The sources the rule needs: without one it is not applicable.
    pub sources: Vec<Source>,
    /// Sources it reads when they are there (`has(config.x)`), and runs without.
    pub optional_sources: Vec<Source>,
    /// What its expressions read of the facts: found when the pack loads, or for a rule
    /// loaded with deferred expressions (an audit's built-in rules) when first asked.
    pub(super) checked: std::sync::OnceLock<super::check::Reads>,
    pub versions: Option<VersionRange>,
    /// The programs whose config it judges: on another's it is not applicable.
    pub configs: Vec<ConfigKind>,
    /// The items checked; without it the rule is checked once.
    pub for_each: Option<Expr>,
    /// The name an item has in the other expressions.
    pub item: String,
    /// Named subexpressions, evaluated in order for each item after it is bound: each is a
    /// variable of the ones after it, `when`, the message, evidence and fix.
    pub lets: Vec<(String, Expr)>,
    /// Whether an item is a finding (`true` when a rule over items has none).
    pub when: Expr,
    /// Where the finding points: an expression giving `file:line:column` (an item's `at`).
    pub location: Option<Expr>,
    /// What a finding is about (`user.name`, `t.database + "." + t.table`): with the rule and
    /// the file, its fingerprint. Without it, an item that is text is its own object and an
    /// item with a `name` is that name; a rule without `for_each` has none.
    pub object: Option<Expr>,
    pub message: Template,
    pub evidence: Vec<(String, Expr)>,
    pub remediation: Remediation,
    pub references: Vec<String>,
    /// The live rule judging the same objects on the running server, or why none can.
    pub live_twin: Option<super::twin::LiveTwin>,
    pub confidence: Confidence,
    /// A number in 0..=1 for ranking among findings of one severity (default 1).
    pub impact: Option<Expr>,
    pub tests: Vec<RuleTest>,
    /// Tunable constants (`params.NAME` in expressions), overridable with
    /// `--param RULE.NAME=VALUE` (or `NAME=VALUE` when only this rule has it).
    pub params: Vec<Param>,
    /// Off unless selected by id, tag or category (`--select`): advice most operators
    /// of a stock install would not want by default.
    pub opt_in: bool,
    /// The rule file (as shown to users) and where the rule starts in it.
    pub file: String,
    pub origin: Origin,
}

impl Rule {
    /// What its expressions read (see [`super::check::Reads`]).
    pub fn reads(&self) -> &super::check::Reads {
        // a deferred rule is a built-in one, checked whole by the test suite: no problem here
        self.checked.get_or_init(|| super::check::rule(self.expressions()).0)
    }

    /// The rule as one reading `fields` (a test of what depends on them).
    #[cfg(test)]
    pub fn reading(mut self, fields: std::collections::BTreeSet<FactRef>) -> Rule {
        self.checked =
            std::sync::OnceLock::from(super::check::Reads { needed: Vec::new(), fields, ..Default::default() });
        self
    }

    /// The facts its expressions read of the sources it needs: one that could not be read
    /// makes the rule inconclusive.
    pub fn facts(&self) -> &[FactRef] {
        &self.reads().needed
    }

    /// The top-level fields of `source` its expressions read.
    pub fn reads_of(&self, source: Source) -> impl Iterator<Item = &str> {
        self.reads().fields.iter().filter(move |(s, _)| *s == source).map(|(_, f)| f.as_str())
    }

    /// Its expressions, as the checker reads them.
    pub(crate) fn expressions(&self) -> super::check::Expressions<'_> {
        super::check::Expressions {
            sources: &self.sources,
            optional: &self.optional_sources,
            params: &self.params,
            item: &self.item,
            for_each: self.for_each.as_ref(),
            lets: &self.lets,
            when: Some(&self.when),
            location: self.location.as_ref(),
            impact: self.impact.as_ref(),
            object: self.object.as_ref(),
            evidence: &self.evidence,
            templates: std::iter::once(&self.message).chain(self.remediation.templates()).collect(),
        }
    }

    /// Whether `--select`/`--ignore` term names this rule (by id or tag).
    pub fn matches(&self, term: &str) -> bool {
        self.id == term || self.tags.iter().any(|t| t == term) || self.category == term
    }

    pub fn param(&self, name: &str) -> Option<&Param> {
        self.params.iter().find(|p| p.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{RulePack, check};

    #[test]
    fn a_deferred_builtin_rule_parses_and_reads_as_the_compiled_one() {
        let compiled = RulePack::load(true, &[]).map_err(|_| "errors").expect("the built-in rules compile");
        let deferred = RulePack::load_for_audit(true, &[]).map_err(|_| "errors").expect("the built-in rules load");
        assert!(compiled.rules.len() > 100 && compiled.rules.len() == deferred.rules.len());
        for (a, b) in compiled.rules.iter().zip(&deferred.rules) {
            assert_eq!(a.id, b.id);
            assert!(b.checked.get().is_none(), "{}: checked before it was asked", b.id);
            let (expected, found) = (a.expressions().all(), b.expressions().all());
            assert_eq!(expected.len(), found.len(), "{}", a.id);
            for (x, y) in expected.iter().zip(&found) {
                assert_eq!(x.tree(), y.tree(), "{}: {}", a.id, x.source);
            }
            assert!(check::rule(b.expressions()).1.is_empty(), "{}: a problem the pack load would report", b.id);
            assert_eq!(a.reads(), b.reads(), "{}", a.id);
        }
    }
}

/// What a rule ended in on one target (a rule fixture names the one it expects).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OutcomeKind {
    Fired,
    Passed,
    /// The rule does not apply: a version outside its range, or a source not collected.
    NotApplicable,
    /// The evidence could not be read; never reported as passed.
    Inconclusive,
    /// The rule itself is broken (an expression failed).
    Errored,
}
