//! Suppressions, each with a reason: an ignore comment just before the element
//! (`<!-- chaudit: ignore RULE-ID reason="..." -->`, or `# chaudit: ignore ...` in YAML),
//! or an entry of the project file `.chaudit.yaml`. Suppressed findings stay in the report,
//! marked; an ignore that matches nothing is a warning; an expired one stops suppressing.

pub mod date;
pub mod inline;
pub mod project;

use miette::Diagnostic;
use thiserror::Error;

use crate::config::Location;
use crate::config::error::FileProblem;
use crate::eval::Finding;
use crate::eval::finding::Suppression;
use date::Date;

/// One ignore: which rules, where, why, until when.
#[derive(Debug, Clone)]
pub struct Ignore {
    pub rules: Vec<String>,
    pub reason: String,
    pub kind: &'static str,
    /// Where the ignore is written (`file:line`), for messages.
    pub at: String,
    /// What it covers.
    pub target: Target,
    pub expires: Option<Date>,
    /// Only a finding that holds on this replica alone (cluster audits): one that holds on
    /// other replicas too stays reported.
    pub host: Option<String>,
    /// Only findings about this object (a table, disk, user...): the finding's `object`; for
    /// files written before findings had one, also an object named in the message in
    /// backticks, or an evidence value.
    pub object: Option<String>,
}

#[derive(Debug, Clone)]
pub enum Target {
    /// The element at this file and line (an inline comment's next element).
    Line { file: String, line: u32 },
    /// Findings in this file (any line), or everywhere when `None`.
    File(Option<String>),
    /// Findings at one of these locations (an element path resolved in the merged tree).
    Locations(Vec<Location>),
}

#[derive(Debug, Error, Diagnostic)]
pub enum SuppressionError {
    #[error(transparent)]
    #[diagnostic(transparent)]
    Invalid(FileProblem),
    #[error("cannot read {path}: {message}")]
    #[diagnostic(code(chaudit::suppress::read))]
    Read { path: String, message: String },
}

impl Ignore {
    fn covers(&self, f: &Finding) -> bool {
        if !self.rules.iter().any(|r| r == &f.rule_id || r == "all") {
            return false;
        }
        if let Some(host) = &self.host
            && !(f.hosts.len() == 1 && &f.hosts[0].host == host)
        {
            return false;
        }
        if let Some(object) = &self.object
            && f.object.as_ref() != Some(object)
            && !f.message.contains(&format!("`{object}`"))
            && !f.evidence.values().any(|v| v.as_str() == Some(object))
        {
            return false;
        }
        match (&self.target, &f.location) {
            (Target::Line { file, line }, Some(l)) => &l.file == file && l.line == *line,
            (Target::File(None), _) => true,
            (Target::File(Some(file)), Some(l)) => &l.file == file,
            (Target::Locations(locations), Some(l)) => locations.iter().any(|x| x.file == l.file && x.line == l.line),
            _ => false,
        }
    }
}

/// Marks the findings the ignores cover; returns warnings for ignores that matched nothing
/// or have expired.
pub fn apply(findings: &mut [Finding], ignores: &[Ignore], today: Date) -> Vec<String> {
    let mut warnings = Vec::new();
    for ignore in ignores {
        if let Some(expires) = ignore.expires
            && expires < today
        {
            warnings.push(format!(
                "{}: suppression of {} expired on {expires}; it no longer applies",
                ignore.at,
                ignore.rules.join(", ")
            ));
            continue;
        }
        let mut used = false;
        for f in findings.iter_mut().filter(|f| f.suppressed.is_none() && ignore.covers(f)) {
            f.suppressed =
                Some(Box::new(Suppression { kind: ignore.kind, reason: ignore.reason.clone(), at: ignore.at.clone() }));
            used = true;
        }
        if !used {
            warnings.push(format!("{}: suppression of {} matched no finding", ignore.at, ignore.rules.join(", ")));
        }
    }
    warnings
}
