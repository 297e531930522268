//! A rule, parsed and compiled. One rule = one YAML file under rules/<area>/; the file also
//! carries the rule's documentation and its test fixtures.

use std::path::PathBuf;

use crate::config::Origin;
use crate::facts::Source;
use crate::version::VersionRange;

use super::expr::{Expr, Template};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Low,
    Medium,
    High,
    Critical,
}

impl Severity {
    pub const NAMES: &'static str = "critical, high, medium, low, info";

    pub fn parse(s: &str) -> Option<Severity> {
        Some(match s {
            "critical" => Severity::Critical,
            "high" => Severity::High,
            "medium" => Severity::Medium,
            "low" => Severity::Low,
            "info" => Severity::Info,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Severity::Critical => "critical",
            Severity::High => "high",
            Severity::Medium => "medium",
            Severity::Low => "low",
            Severity::Info => "info",
        }
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    High,
    Medium,
    Low,
}

impl Confidence {
    pub fn parse(s: &str) -> Option<Confidence> {
        Some(match s {
            "high" => Confidence::High,
            "medium" => Confidence::Medium,
            "low" => Confidence::Low,
            _ => return None,
        })
    }

    pub fn factor(self) -> f64 {
        match self {
            Confidence::High => 1.0,
            Confidence::Medium => 0.7,
            Confidence::Low => 0.4,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Remediation {
    /// Whether the fix needs a server restart.
    pub restart: bool,
    /// A config.d (or users.d) snippet, a template.
    pub config: Option<Template>,
    pub sql: Option<Template>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expectation {
    Fires,
    Quiet,
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

#[derive(Debug, Clone)]
pub struct Rule {
    pub id: String,
    pub title: String,
    pub severity: Severity,
    pub category: String,
    pub tags: Vec<String>,
    /// Markdown: what, why, how to fix.
    pub description: String,
    pub sources: Vec<Source>,
    /// Live facts the rule reads (`errors`, `settings`...): unreadable ones make it inconclusive.
    pub facts: Vec<String>,
    pub versions: Option<VersionRange>,
    /// The items checked; without it the rule is checked once.
    pub for_each: Option<Expr>,
    /// The name an item has in the other expressions.
    pub item: String,
    pub when: Expr,
    /// Where the finding points: an expression giving `file:line:column` (an item's `at`).
    pub location: Option<Expr>,
    pub message: Template,
    pub evidence: Vec<(String, Expr)>,
    pub remediation: Remediation,
    pub references: Vec<String>,
    pub confidence: Confidence,
    /// A number in 0..=1 for ranking among findings of one severity (default 1).
    pub impact: Option<Expr>,
    pub tests: Vec<RuleTest>,
    /// Tunable constants (`params.NAME` in expressions), overridable with `--param NAME=VALUE`.
    pub params: serde_json::Map<String, serde_json::Value>,
    /// Off unless selected by id, tag or category (`--select`): advice most operators
    /// of a stock install would not want by default.
    pub opt_in: bool,
    /// The rule file (as shown to users) and where the rule starts in it.
    pub file: String,
    pub origin: Origin,
}

impl Rule {
    /// Whether `--select`/`--ignore` term names this rule (by id or tag).
    pub fn matches(&self, term: &str) -> bool {
        self.id == term || self.tags.iter().any(|t| t == term) || self.category == term
    }
}
