//! `chaudit fix`: its arguments as a fix request, its outcome as text and an exit code.

use std::fmt::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use chaudit::audit::RulesRequest;
use chaudit::fix::{self, FixOutcome, FixRequest, Item};
use clap::Args;

use super::{FailOn, RuleArgs, report_all, warn};

#[derive(Args)]
pub struct FixArgs {
    /// The main server config (config.xml, or the directory holding it), or a Kubernetes
    /// manifest of the Altinity operator (its fixes are written into the manifest).
    #[arg(long, value_name = "MAIN", value_parser = super::main_config)]
    pub config: PathBuf,
    /// Only these rules: ids, tags or categories (repeat or comma-separate).
    #[arg(long, value_delimiter = ',')]
    pub select: Vec<String>,
    /// Skip these rules: ids, tags or categories.
    #[arg(long, value_delimiter = ',')]
    pub ignore: Vec<String>,
    /// Print the fix files as a unified diff and write none of them (only the --sql file, if given).
    #[arg(long)]
    pub dry_run: bool,
    /// Exit 1 while a finding at or above this severity remains (one only you can fix, one
    /// fixed by SQL, one with no fix, one the fix did not clear).
    #[arg(long, value_enum, default_value_t = FailOn::High)]
    pub fail_on: FailOn,
    /// Write the SQL of findings fixed by a statement (with the finding each is for) to this file.
    #[arg(long, value_name = "FILE")]
    pub sql: Option<PathBuf>,
    /// The ClickHouse version the config runs on, for version-gated rules (e.g. 25.8).
    #[arg(long, value_name = "VERSION", value_parser = str::parse::<chaudit::version::Version>)]
    pub clickhouse_version: Option<chaudit::version::Version>,
    /// The include file for `incl` when the config has no <include_from>, or `none`.
    #[arg(long, value_name = "FILE|none")]
    pub default_include_from: Option<String>,
    #[command(flatten)]
    pub rules: RuleArgs,
}

pub fn run(args: &FixArgs) -> ExitCode {
    let version = args.clickhouse_version;
    let load = match super::config_show::load_options(args.default_include_from.as_deref()) {
        Ok(load) => load,
        Err(code) => return code,
    };
    let request = FixRequest {
        config: args.config.clone(),
        load,
        version,
        rules: RulesRequest {
            builtin: !args.rules.no_builtin_rules,
            dirs: args.rules.dirs.clone(),
            select: args.select.clone(),
            ignore: args.ignore.clone(),
            params: Vec::new(),
        },
        dry_run: args.dry_run,
        sql: args.sql.clone(),
    };
    let outcome = match fix::run(&request) {
        Ok(outcome) => outcome,
        Err(e) => {
            let code = e.class().status().exit_code();
            report_all(vec![e]);
            return ExitCode::from(code);
        }
    };
    for w in &outcome.warnings {
        warn(w);
    }
    let fail_on = args.fail_on.severity();
    let unresolved = outcome.unresolved(fail_on);
    let mut text = render(&outcome);
    if let (false, Some(floor)) = (unresolved.is_empty(), fail_on) {
        let _ = writeln!(text, "\n{} finding(s) at or above {} remain:", unresolved.len(), floor.name());
        for (item, why) in &unresolved {
            let _ = writeln!(text, "  {}\n      {why}", line(item));
        }
    }
    super::write_stdout(&text, outcome.status(fail_on).exit_code())
}

fn line(item: &Item) -> String {
    item.to_string()
}

fn render(outcome: &FixOutcome) -> String {
    let mut out = String::new();
    if outcome.dry_run {
        for file in &outcome.files {
            out.push_str(&file.diff());
        }
    }
    if !outcome.applied.is_empty() {
        let verb = if outcome.dry_run { "would fix" } else { "fixed" };
        let _ = writeln!(out, "{verb} {} finding(s):", outcome.applied.len());
        for item in &outcome.applied {
            let _ = writeln!(out, "  {}", line(item));
        }
        for file in &outcome.files {
            let verb = if outcome.dry_run { "would write" } else { "wrote" };
            match &file.manifest {
                Some(installation) => {
                    let _ = writeln!(
                        out,
                        "{verb} {} ({} fix(es) merged into the {installation}; its other lines, comments included, unchanged)",
                        file.shown, file.fixes
                    );
                }
                None => {
                    let _ =
                        writeln!(out, "{verb} {} ({} fix(es), {} tree)", file.shown, file.fixes, tree_name(file.tree));
                }
            }
        }
        if !outcome.restart.is_empty() {
            let _ = writeln!(out, "restart the server for: {}", outcome.restart.join(", "));
        }
    } else {
        out.push_str("no finding has a config fix\n");
    }
    if !outcome.needs_user.is_empty() {
        let _ = writeln!(out, "\nneeds you ({}):", outcome.needs_user.len());
        for (item, what) in &outcome.needs_user {
            let _ = writeln!(out, "  {}", line(item));
            for l in what.trim_end().lines() {
                let _ = writeln!(out, "      {l}");
            }
        }
    }
    if !outcome.commands.is_empty() {
        let _ =
            writeln!(out, "\n{} finding(s) fixed by a command on the host, not changed here:", outcome.commands.len());
        for (item, command) in &outcome.commands {
            let _ = writeln!(out, "  {}\n      $ {}", line(item), command.trim_end().replace('\n', "\n      $ "));
        }
    }
    if !outcome.sql.is_empty() {
        let _ = writeln!(out, "\n{} finding(s) with SQL (--sql FILE writes it), not changed here", outcome.sql.len());
    }
    if !outcome.dry_run && !outcome.files.is_empty() {
        if outcome.remaining.is_empty() {
            let _ = writeln!(out, "\nre-audit: every fixed finding is gone");
        } else {
            let _ = writeln!(out, "\nre-audit: {} finding(s) remain:", outcome.remaining.len());
            for (item, why) in &outcome.remaining {
                let _ = writeln!(out, "  {}\n      {why}", line(item));
            }
        }
        for item in &outcome.introduced {
            let _ = writeln!(out, "  new after the fix: {}", line(item));
        }
    }
    out
}

fn tree_name(tree: chaudit::rules::ConfigTree) -> &'static str {
    match tree {
        chaudit::rules::ConfigTree::Server => "server",
        chaudit::rules::ConfigTree::Users => "users",
    }
}
