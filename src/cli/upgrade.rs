//! `chaudit upgrade --to VERSION`: the pre-upgrade review.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use chaudit::report::upgrade as emit;
use chaudit::upgrade::request::{self, Request, RequestError, Reviewed};
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
    let server = match args.connect.wanted().then(|| live::collect_live(&args.connect, true)).transpose() {
        Ok(server) => server.map(|(node, _)| node),
        Err(unread) => return unread.exit(),
    };
    let request =
        Request { config: args.config.clone(), load, from: stated_from, to, pack: &pack, output: args.output.clone() };
    let Reviewed { review, warnings } = match request::run(&request, server) {
        Ok(reviewed) => reviewed,
        Err(RequestError::Config(errors)) => {
            report_all(errors);
            return ExitCode::from(exit::USAGE_OR_CONFIG);
        }
        Err(e) => return usage(e.to_string()),
    };
    for w in &warnings {
        super::warn(w);
    }
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
