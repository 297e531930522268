//! `chaudit rules list | explain | test`.

use std::fmt::Write;
use std::path::PathBuf;
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
    let mut out = String::new();
    let _ = writeln!(out, "# {}: {}\n", r.id, r.title);
    let sources: Vec<&str> = r.sources.iter().map(|s| s.name()).collect();
    let _ =
        writeln!(out, "severity: {} · category: {} · sources: {}", r.severity.name(), r.category, sources.join(", "));
    if !r.tags.is_empty() {
        let _ = writeln!(out, "tags: {}", r.tags.join(", "));
    }
    if let Some(v) = &r.versions {
        let _ = writeln!(out, "ClickHouse versions: {v}");
    }
    let _ = writeln!(out, "\n{}", r.description.trim_end());
    if !r.params.is_empty() {
        let _ = writeln!(out, "\nParameters (--param {}.NAME=VALUE):", r.id);
        for p in &r.params {
            let doc = p.doc.as_deref().map_or(String::new(), |d| format!(": {d}"));
            let _ = writeln!(out, "- `{}` ({}, default {}){doc}", p.name, p.kind.name(), p.default);
        }
    }
    if !r.references.is_empty() {
        let _ = writeln!(out, "\nReferences:");
        for reference in &r.references {
            let _ = writeln!(out, "- {reference}");
        }
    }
    write_stdout(&out, exit::OK)
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
    write_stdout(&out, if failed > 0 { exit::FINDINGS } else { exit::OK })
}
