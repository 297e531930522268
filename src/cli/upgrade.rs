//! `chaudit upgrade --to VERSION`: the pre-upgrade review.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use chaudit::config;
use chaudit::facts::{self, Facts};
use chaudit::report::upgrade as emit;
use chaudit::upgrade::history::{self, History};
use chaudit::upgrade::{self, Inputs};
use chaudit::verdict::Status;
use chaudit::version::Version;

use super::{RuleArgs, exit, live, report_all, write_output};

#[derive(Args)]
pub struct UpgradeArgs {
    /// The version to upgrade to, e.g. 26.9.
    #[arg(long, value_name = "VERSION")]
    pub to: String,
    /// The running version, when there is no --dsn to ask (e.g. 25.8).
    #[arg(long, value_name = "VERSION")]
    pub from: Option<String>,
    /// The main server config: profiles and <merge_tree> settings it sets.
    #[arg(long, value_name = "MAIN", value_parser = super::main_config)]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub connect: live::ConnectArgs,
    /// Extra rules (their version-gated ones count as known issues).
    #[command(flatten)]
    pub rules: RuleArgs,
    #[arg(long, value_enum, default_value_t = ReviewFormat::Text)]
    pub format: ReviewFormat,
    /// Write the review to this file (whole or not at all) instead of stdout.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Let known issues that could not be checked on a server pass the review; without it
    /// they make it exit 3, as inconclusive rules do in an audit.
    #[arg(long)]
    pub allow_inconclusive: bool,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ReviewFormat {
    Text,
    Json,
    /// A review document for a change request.
    Markdown,
}

pub fn run(args: &UpgradeArgs) -> ExitCode {
    if let Err(message) = args.connect.check_asked() {
        eprintln!("chaudit: {message}");
        return ExitCode::from(exit::USAGE_OR_CONFIG);
    }
    if args.connect.dry_run {
        return live::print_plan(&args.connect, true);
    }
    let usage = |message: String| {
        eprintln!("chaudit: {message}");
        ExitCode::from(exit::USAGE_OR_CONFIG)
    };
    let to = match args.to.parse::<Version>() {
        Ok(v) => v,
        Err(message) => return usage(format!("--to: {message}")),
    };
    let stated_from = match args.from.as_deref().map(str::parse::<Version>).transpose() {
        Ok(v) => v,
        Err(message) => return usage(format!("--from: {message}")),
    };
    if stated_from.is_none() && !args.connect.wanted() {
        return usage("the running version is unknown: give --dsn (the server says) or --from 25.8".into());
    }
    let pack = match super::audit::load_pack(&args.rules) {
        Ok(pack) => pack,
        Err(code) => return code,
    };
    let load = match super::config_show::load_options(None) {
        Ok(load) => load,
        Err(code) => return code,
    };
    let mut facts = match &args.config {
        Some(main) => match config::load(main, &load) {
            // a tree ClickHouse refuses cannot be reviewed: its profiles are unknown
            Ok(mut loaded) if loaded.server_error.is_some() || loaded.users_error.is_some() => {
                report_all(loaded.server_error.take().into_iter().chain(loaded.users_error.take()).collect());
                return ExitCode::from(exit::USAGE_OR_CONFIG);
            }
            Ok(loaded) => {
                // the review never goes over a file of the tree it reviews
                if let Some(output) = &args.output {
                    let inputs: Vec<(&str, &std::path::Path)> = chaudit::audit::inputs_of(&loaded).collect();
                    if let Err(e) = chaudit::regular_file::ensure_not_input(output, &inputs) {
                        eprintln!("chaudit: {e}");
                        return ExitCode::from(exit::USAGE_OR_CONFIG);
                    }
                }
                facts::config::facts(&loaded, main.display().to_string(), stated_from)
            }
            Err(err) => {
                report_all(vec![err]);
                return ExitCode::from(exit::USAGE_OR_CONFIG);
            }
        },
        None => Facts::empty(String::new()),
    };
    let mut live_history = None;
    if args.connect.wanted() {
        match live::collect_live(&args.connect, true) {
            Ok((collected, _)) => {
                facts.target = chaudit::facts::live_text(&collected.live, "endpoint").to_string();
                let server_version = chaudit::facts::live_text(&collected.live, "version").to_string();
                facts.add_live(collected.live.into_value());
                if let Some(log) = collected.log {
                    facts.add_log(log);
                }
                if let Some(rows) = collected.settings_changes {
                    match History::from_rows(server_version, &rows) {
                        Ok(h) => live_history = Some(h),
                        Err(message) => eprintln!("chaudit: warning: the server's {message}; using chaudit's history"),
                    }
                }
            }
            Err(unread) => return unread.exit(),
        }
    } else if let Some(main) = &args.config {
        facts.target = main.display().to_string();
    }
    let Some(from) = facts.version.or(stated_from) else {
        return usage("the server did not say its version; give --from".into());
    };
    facts.version = Some(from);
    if let (Some(stated), true) = (stated_from, args.connect.wanted())
        && (stated.major, stated.minor) != (from.major, from.minor)
    {
        eprintln!("chaudit: warning: --from {stated} ignored: the server runs {from}");
    }
    let (history, history_source): (&History, String) = match &live_history {
        Some(h) => (h, format!("system.settings_changes of the server (ClickHouse {})", h.version)),
        None => {
            let h = history::builtin();
            (h, format!("system.settings_changes of ClickHouse {} (bundled with chaudit)", h.version))
        }
    };
    if let Err(e) = upgrade::check_versions(from, to, history) {
        return usage(e.to_string());
    }
    let review = upgrade::review(&Inputs { facts: &facts, from, to, history, history_source, pack: &pack });
    let text = match args.format {
        ReviewFormat::Text => emit::text::render(&review),
        ReviewFormat::Json => emit::json::render(&review),
        ReviewFormat::Markdown => emit::markdown::render(&review),
    };
    let status = review.summary.status(args.allow_inconclusive);
    if status == Status::Incomplete {
        eprintln!(
            "chaudit: {} known issue(s) of the target could not be checked without a server (--dsn): \
             the review is not complete (--allow-inconclusive lets it pass)",
            review.summary.issues_unchecked
        );
    }
    let code = status.exit_code();
    write_output(args.output.as_deref(), &text, code)
}
