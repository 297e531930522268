//! The rule pack: built-in rules compiled into the binary plus the user's `--rules DIR`,
//! loaded and checked at start.

pub mod budget;
pub mod check;
pub mod docs;
pub mod error;
pub mod expr;
pub mod load;
mod native;
pub mod schema;
pub mod twin;

use std::path::{Path, PathBuf};

pub use error::RuleError;
pub use schema::{ConfigTree, FIX_FILE, OutcomeKind, Rule, Severity};

use crate::config::error::FileProblem;
use crate::config::{ConfigFs, RealFs, SourceMap, files};

mod builtin {
    include!(concat!(env!("OUT_DIR"), "/builtin_rules.rs"));
}

pub struct RulePack {
    pub rules: Vec<Rule>,
    /// The rule files' text, for diagnostics.
    pub sources: SourceMap,
    /// (live rule, config rule) of every config rule with a live twin.
    pub live_twins: Vec<(String, String)>,
}

impl RulePack {
    /// The built-in rules and those under each of `dirs`. All problems are returned together.
    pub fn load(include_builtin: bool, dirs: &[PathBuf]) -> Result<RulePack, Vec<RuleError>> {
        RulePack::load_with(&RealFs, include_builtin, dirs)
    }

    /// As [`RulePack::load`], reading the rule files from `fs` (a fuzz input held in memory).
    pub fn load_with(fs: &impl ConfigFs, include_builtin: bool, dirs: &[PathBuf]) -> Result<RulePack, Vec<RuleError>> {
        RulePack::load_from(fs, include_builtin, dirs, false)
    }

    /// As [`RulePack::load`] for an audit: the built-in rules' expressions are parsed and
    /// checked when first read ([`Expr::deferred`](expr::Expr::deferred)), so an offline audit
    /// does not compile the half of the pack that needs a server; the user's rules are
    /// compiled and checked now, their problems reported before anything runs.
    pub fn load_for_audit(include_builtin: bool, dirs: &[PathBuf]) -> Result<RulePack, Vec<RuleError>> {
        RulePack::load_from(&RealFs, include_builtin, dirs, true)
    }

    fn load_from(
        fs: &impl ConfigFs,
        include_builtin: bool,
        dirs: &[PathBuf],
        defer_builtin: bool,
    ) -> Result<RulePack, Vec<RuleError>> {
        let mut sources = SourceMap::new(PathBuf::new());
        // (file, the directory its fixtures are relative to, its recorded YAML events, whether
        // its expressions are deferred)
        let mut listed: Vec<(crate::config::FileId, PathBuf, Option<&[u8]>, bool)> = Vec::new();
        let base = |path: &Path| path.parent().map(Path::to_path_buf).unwrap_or_default();
        if include_builtin {
            for (path, text, events) in builtin_files() {
                let id = sources.add(PathBuf::from(path), text.to_string());
                listed.push((id, base(Path::new(path)), events, defer_builtin));
            }
        }
        let mut read_errors = Vec::new();
        for dir in dirs {
            match load::rule_files(fs, dir) {
                // a directory named for rules that holds none is a mistake (a wrong path), not an empty pack
                Ok(paths) if paths.is_empty() => read_errors.push(RuleError::Read {
                    path: dir.clone(),
                    message: "no rule file (*.yaml) in this directory".into(),
                }),
                Ok(paths) => {
                    for path in paths {
                        match files::read(fs, &mut sources, &path) {
                            Ok(id) => listed.push((id, base(&path), None, false)),
                            Err(e) => read_errors.push(RuleError::Read { path, message: e.to_string() }),
                        }
                    }
                }
                Err(e) => read_errors.push(e),
            }
        }
        // every start reads every rule file (and compiles those not deferred): on every core
        let parsed = crate::parallel::on_every_core(&listed, |(id, base, events, defer)| {
            load::parse_rule(&sources, *id, base, *events, *defer)
        });
        let mut rules = Vec::new();
        let mut errors = Vec::new();
        for rule in parsed {
            match rule {
                Ok(rule) => rules.push(rule),
                Err(mut e) => errors.append(&mut e),
            }
        }
        errors.append(&mut read_errors);
        if let Err(duplicate) = load::index(&rules) {
            let message = format!("rule id `{}` is defined twice", duplicate.id);
            errors.push(RuleError::Invalid(FileProblem::new(
                "chaudit::rules::invalid",
                &sources,
                duplicate.origin,
                message,
                "second definition",
                None,
            )));
        }
        for rule in &rules {
            if let Err(message) = twin::check(rule, &rules) {
                errors.push(RuleError::Invalid(FileProblem::new(
                    "chaudit::rules::invalid",
                    &sources,
                    rule.origin,
                    message,
                    "this rule",
                    None,
                )));
            }
        }
        let live_twins = twin::pairs(&rules);
        if errors.is_empty() { Ok(RulePack { rules, sources, live_twins }) } else { Err(errors) }
    }

    pub fn get(&self, id: &str) -> Option<&Rule> {
        self.rules.iter().find(|r| r.id == id)
    }
}

/// The built-in rule files: path, text and the YAML events build.rs recorded of it.
fn builtin_files() -> impl Iterator<Item = (&'static str, &'static str, Option<&'static [u8]>)> {
    builtin::BUILTIN_RULES
        .iter()
        .map(|(path, text, events)| (*path, *text, events.clone().and_then(|span| builtin::EVENTS.get(span))))
}

#[cfg(test)]
mod tests {
    use crate::config::FileId;
    use crate::spanned_yaml::{read_document, read_recorded};

    #[test]
    fn every_builtin_rule_file_is_recorded_as_its_text_parses() {
        for (path, text, events) in super::builtin_files() {
            let events = events.unwrap_or_else(|| panic!("{path}: not recorded"));
            assert_eq!(read_recorded(events, FileId(0)), read_document(text, FileId(0)), "{path}");
        }
    }
}
