//! `chaudit --config X`: the audit.

use std::process::ExitCode;

use chaudit::config::{self, LoadOptions};
use chaudit::eval::{Selection, evaluate};
use chaudit::facts;
use chaudit::report::{self, Report, text::TextOptions};
use chaudit::rules::{RulePack, Severity};
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
    let evaluation = evaluate(&pack, &facts, &selection);
    let fail_on = match args.fail_on {
        FailOn::Critical => Some(Severity::Critical),
        FailOn::High => Some(Severity::High),
        FailOn::Medium => Some(Severity::Medium),
        FailOn::Low => Some(Severity::Low),
        FailOn::Info => Some(Severity::Info),
        FailOn::Never => None,
    };
    let report = Report::new(facts.target.clone(), evaluation, fail_on.unwrap_or(Severity::Critical));
    let failing = if fail_on.is_some() { report.summary.failing } else { 0 };
    let text = match args.format {
        Format::Text => report::text::render(&report, Some(&loaded.sources), &TextOptions { color: color_stdout() }),
        Format::Json => report::json::render(&report),
        Format::Markdown => report::markdown::render(&report),
    };
    write_stdout(&text, if failing > 0 { exit::FINDINGS } else { exit::OK })
}

pub fn load_pack(args: &super::RuleArgs) -> Result<RulePack, ExitCode> {
    RulePack::load(!args.no_builtin_rules, &args.dirs).map_err(|errors| {
        report_all(errors);
        ExitCode::from(exit::USAGE_OR_CONFIG)
    })
}
