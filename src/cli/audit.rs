//! `chaudit --config X`: the audit.

use std::path::PathBuf;
use std::process::ExitCode;

use chaudit::baseline::Baseline;
use chaudit::config::{self, LoadOptions, LoadedConfig, Location};
use chaudit::eval::Finding;
use chaudit::eval::{Selection, evaluate};
use chaudit::facts;
use chaudit::report::RuleInfo;
use chaudit::report::{self, Report, text::TextOptions};
use chaudit::rules::Rule;
use chaudit::rules::{RulePack, Severity};
use chaudit::suppress::{self, date::Date};
use chaudit::version::Version;

use super::{AuditArgs, FailOn, Format, color_stdout, exit, report_all, write_stdout};

pub fn run(args: &AuditArgs) -> ExitCode {
    let Some(main) = &args.config else {
        eprintln!("chaudit: nothing to audit: give --config /etc/clickhouse-server/config.xml (see --help)");
        return ExitCode::from(exit::USAGE_OR_CONFIG);
    };
    let version = match args.clickhouse_version.as_deref().map(str::parse::<Version>).transpose() {
        Ok(v) => v,
        Err(message) => {
            eprintln!("chaudit: --clickhouse-version: {message}");
            return ExitCode::from(exit::USAGE_OR_CONFIG);
        }
    };
    let pack = match load_pack(&args.rules) {
        Ok(pack) => pack,
        Err(code) => return code,
    };
    let loaded = match config::load(main, &LoadOptions::default()) {
        Ok(loaded) => loaded,
        Err(err) => {
            report_all(vec![err]);
            return ExitCode::from(exit::USAGE_OR_CONFIG);
        }
    };
    // Problems ClickHouse starts with become findings of rules; fatal ones stopped the load.
    let facts = facts::config::facts(&loaded, main.display().to_string(), version);
    let selection = Selection { select: args.select.clone(), ignore: args.ignore.clone() };
    let mut evaluation = evaluate(&pack, &facts, &selection);
    let warnings = match suppress(&loaded, args, &mut evaluation.findings) {
        Ok(warnings) => warnings,
        Err(code) => return code,
    };
    if let Some(path) = &args.baseline {
        match Baseline::read(path) {
            Ok(baseline) => baseline.apply(&mut evaluation.findings),
            Err(message) => {
                eprintln!("chaudit: {message}");
                return ExitCode::from(exit::USAGE_OR_CONFIG);
            }
        }
    }
    if let Some(path) = &args.write_baseline {
        let baseline = Baseline::of(&evaluation.findings);
        if let Err(message) = baseline.write(path) {
            eprintln!("chaudit: {message}");
            return ExitCode::from(exit::RUNTIME);
        }
        baseline.apply(&mut evaluation.findings);
    }
    let fail_on = match args.fail_on {
        FailOn::Critical => Some(Severity::Critical),
        FailOn::High => Some(Severity::High),
        FailOn::Medium => Some(Severity::Medium),
        FailOn::Low => Some(Severity::Low),
        FailOn::Info => Some(Severity::Info),
        FailOn::Never => None,
    };
    let mut report = Report::new(facts.target.clone(), evaluation, fail_on.unwrap_or(Severity::Critical));
    for w in &warnings {
        eprintln!("chaudit: warning: {w}");
    }
    report.warnings = warnings;
    report.rules = pack.rules.iter().filter(|r| selection.includes(r)).map(rule_info).collect();
    report.artifact_base = main.parent().map(|p| p.display().to_string()).unwrap_or_default();
    let failing = if fail_on.is_some() { report.summary.failing } else { 0 };
    let text = match args.format {
        Format::Text => report::text::render(&report, Some(&loaded.sources), &TextOptions { color: color_stdout() }),
        Format::Json => report::json::render(&report),
        Format::Markdown => report::markdown::render(&report),
        Format::Sarif => report::sarif::render(&report),
        Format::Junit => report::junit::render(&report),
    };
    write_stdout(&text, if failing > 0 { exit::FINDINGS } else { exit::OK })
}

/// Inline ignore comments and the project file, applied to the findings; returns the
/// warnings (unused or expired suppressions).
fn suppress(loaded: &LoadedConfig, args: &AuditArgs, findings: &mut [Finding]) -> Result<Vec<String>, ExitCode> {
    let (mut ignores, errors) = suppress::inline::collect(&loaded.sources);
    if !errors.is_empty() {
        report_all(errors);
        return Err(ExitCode::from(exit::USAGE_OR_CONFIG));
    }
    let project = args.suppressions.clone().or_else(|| Some(PathBuf::from(".chaudit.yaml")).filter(|p| p.is_file()));
    if let Some(path) = project {
        let resolve = |element: &str| -> Vec<Location> {
            [Some(&loaded.server.root), loaded.users_root()]
                .into_iter()
                .flatten()
                .filter_map(|root| root.find(element))
                .flat_map(|e| [loaded.locate(e.origin), loaded.locate(e.value_origin())])
                .collect()
        };
        match suppress::project::load(&path, &resolve) {
            Ok(mut more) => ignores.append(&mut more),
            Err(errors) => {
                report_all(errors);
                return Err(ExitCode::from(exit::USAGE_OR_CONFIG));
            }
        }
    }
    Ok(suppress::apply(findings, &ignores, Date::today()))
}

fn rule_info(r: &Rule) -> RuleInfo {
    RuleInfo {
        id: r.id.clone(),
        title: r.title.clone(),
        description: r.description.clone(),
        severity: r.severity,
        tags: r.tags.clone(),
        category: r.category.clone(),
        help_uri: r.references.iter().find(|u| u.starts_with("https://")).cloned(),
    }
}

pub fn load_pack(args: &super::RuleArgs) -> Result<RulePack, ExitCode> {
    RulePack::load(!args.no_builtin_rules, &args.dirs).map_err(|errors| {
        report_all(errors);
        ExitCode::from(exit::USAGE_OR_CONFIG)
    })
}
