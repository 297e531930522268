//! `chaudit rules list | explain | test`.

use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use chaudit::rules::RulePack;
use chaudit::ruletest;

use super::audit::load_pack;
use super::{ListFormat, RuleArgs, exit, report_all, write_stdout};

pub fn list(args: &RuleArgs, format: ListFormat) -> ExitCode {
    let pack = match load_pack(args) {
        Ok(pack) => pack,
        Err(code) => return code,
    };
    let mut out = String::new();
    let mut rules: Vec<_> = pack.rules.iter().collect();
    rules.sort_by(|a, b| a.id.cmp(&b.id));
    if let ListFormat::Json = format {
        let list: Vec<serde_json::Value> = rules
            .iter()
            .map(|r| {
                serde_json::json!({
                    "id": r.id, "title": r.title, "severity": r.severity.name(), "category": r.category,
                    "sources": r.sources.iter().map(|s| s.name()).collect::<Vec<_>>(), "tags": r.tags,
                    "versions": r.versions.as_ref().map(ToString::to_string), "opt_in": r.opt_in,
                })
            })
            .collect();
        let text = serde_json::to_string_pretty(&list).unwrap_or_default() + "\n";
        return write_stdout(&text, exit::OK);
    }
    for r in rules {
        let sources: Vec<&str> = r.sources.iter().map(|s| s.name()).collect();
        let opt_in = if r.opt_in { " (opt-in)" } else { "" };
        let _ = writeln!(out, "{:<48} {:<9} {:<12} {}{opt_in}", r.id, r.severity.name(), sources.join(","), r.title);
    }
    write_stdout(&out, exit::OK)
}

pub fn explain(id: &str, args: &RuleArgs) -> ExitCode {
    let pack = match load_pack(args) {
        Ok(pack) => pack,
        Err(code) => return code,
    };
    let Some(r) = pack.get(id) else {
        eprintln!("chaudit: no rule `{id}` (see `chaudit rules list`)");
        return ExitCode::from(exit::USAGE_OR_CONFIG);
    };
    write_stdout(&chaudit::rules::docs::page(r, &pack.live_twins), exit::OK)
}

/// `rules docs DIR`: the rules reference, one page per rule and an index (README.md), as
/// docs/rules/ holds it; pages of rules that no longer exist are removed.
pub fn docs(dir: &Path, args: &RuleArgs) -> ExitCode {
    let pack = match load_pack(args) {
        Ok(pack) => pack,
        Err(code) => return code,
    };
    match chaudit::rules::docs::write(dir, &pack) {
        Ok(()) => ExitCode::from(exit::OK),
        Err(e) => {
            eprintln!("chaudit: cannot write the rules reference to {}: {e}", dir.display());
            ExitCode::from(exit::RUNTIME)
        }
    }
}

pub fn test(dir: Option<PathBuf>) -> ExitCode {
    let given = dir.is_some();
    let dir = dir.unwrap_or_else(|| PathBuf::from("rules"));
    if !dir.is_dir() {
        let what =
            if given { format!("{} is not a directory", dir.display()) } else { "no ./rules directory here".into() };
        eprintln!(
            "chaudit: {what}: give the directory of your rules (`chaudit rules test path/to/rules`, \
             one YAML file per rule with its fixtures beside it); the built-in rules are tested with \
             `chaudit rules test rules` in chaudit's source tree"
        );
        return ExitCode::from(exit::USAGE_OR_CONFIG);
    }
    let pack = match RulePack::load(false, &[dir]) {
        Ok(pack) => pack,
        Err(errors) => {
            report_all(errors);
            return ExitCode::from(exit::USAGE_OR_CONFIG);
        }
    };
    let results = ruletest::run(&pack);
    let mut out = String::new();
    let mut failed = 0;
    for r in &results {
        match &r.failure {
            None => {
                let _ = writeln!(out, "ok     {} {} {}", r.rule_id, r.expect, r.fixture);
            }
            Some(why) => {
                failed += 1;
                let _ = writeln!(out, "FAILED {} {} {}: {why}", r.rule_id, r.expect, r.fixture);
            }
        }
    }
    let _ = writeln!(out, "{} rule(s), {} case(s), {failed} failed", pack.rules.len(), results.len());
    write_stdout(&out, ruletest::status(&results).exit_code())
}
