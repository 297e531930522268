//! Command-line arguments and exit codes. Everything else lives in the library.

mod audit;
pub mod config_show;
mod live;
mod rules;
mod upgrade;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use chaudit::rules::Severity;
use clap::{Args, Parser, Subcommand, ValueEnum};

/// Documented exit codes (README "Exit codes").
pub mod exit {
    pub const OK: u8 = 0;
    pub const FINDINGS: u8 = 1;
    pub const USAGE_OR_CONFIG: u8 = 2;
    pub const RUNTIME: u8 = 3;

    /// A target that is not a regular file is the user's mistake; anything else is the system's.
    pub fn of_write_error(e: &chaudit::regular_file::WriteError) -> std::process::ExitCode {
        match e {
            chaudit::regular_file::WriteError::NotRegular { .. } => USAGE_OR_CONFIG.into(),
            chaudit::regular_file::WriteError::Io { .. } => RUNTIME.into(),
        }
    }
}

#[derive(Parser)]
#[command(
    name = "chaudit",
    version,
    about = "Audit a ClickHouse server's configuration",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(flatten)]
    audit: AuditArgs,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Args)]
pub struct AuditArgs {
    /// The main server config (config.xml or config.yaml); config.d/, conf.d/ and the users config are read too.
    #[arg(long, value_name = "MAIN")]
    pub config: Option<PathBuf>,
    /// The include file for `incl` when the config has no <include_from>, or `none`. Default:
    /// /etc/metrika.xml, only for a config under /etc/clickhouse-server.
    #[arg(long, value_name = "FILE|none")]
    pub default_include_from: Option<String>,
    #[command(flatten)]
    pub connect: live::ConnectArgs,
    /// Read this machine's TCP facts (/proc, `ip route`): run chaudit on the server node.
    #[arg(long)]
    pub host_facts: bool,
    /// The ClickHouse version the config runs on, for version-gated rules (e.g. 25.8).
    #[arg(long, value_name = "VERSION")]
    pub clickhouse_version: Option<String>,
    #[command(flatten)]
    pub rules: RuleArgs,
    /// Only these rules: ids, tags or categories (repeat or comma-separate).
    #[arg(long, value_delimiter = ',')]
    pub select: Vec<String>,
    /// Skip these rules: ids, tags or categories.
    #[arg(long, value_delimiter = ',')]
    pub ignore: Vec<String>,
    /// Override a rule parameter, e.g. --param context-lock-heavy-shapes.lock_ceiling=60000, or
    /// NAME=VALUE when only one rule has it (see `rules explain`).
    #[arg(long = "param", value_name = "[RULE.]NAME=VALUE", value_parser = parse_param)]
    pub params: Vec<(String, String)>,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Exit 1 when a finding is at or above this severity.
    #[arg(long, value_enum, default_value_t = FailOn::High)]
    pub fail_on: FailOn,
    /// Let rules whose evidence could not be read (inconclusive) pass the run; without it
    /// they make it exit 3.
    #[arg(long)]
    pub allow_inconclusive: bool,
    /// Suppressions file (default: .chaudit.yaml in the working directory, if present).
    #[arg(long, value_name = "FILE")]
    pub suppressions: Option<PathBuf>,
    /// Only findings not in this baseline count toward the exit code.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Seconds one rule's evaluation may take; a rule still running then is stopped and errored.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0, value_parser = parse_budget)]
    pub rule_budget: f64,
    /// Record the current findings as the baseline (this run then passes).
    #[arg(long, value_name = "FILE")]
    pub write_baseline: Option<PathBuf>,
}

#[derive(Args)]
pub struct RuleArgs {
    /// A directory of extra rules (same schema as the built-in ones); repeatable.
    #[arg(long = "rules", value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Leave out the built-in rules.
    #[arg(long)]
    pub no_builtin_rules: bool,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum Format {
    Text,
    Json,
    Markdown,
    /// SARIF 2.1.0 for GitHub code scanning.
    Sarif,
    Junit,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum FailOn {
    Critical,
    High,
    Medium,
    Low,
    Info,
    /// Never fail on findings.
    Never,
}

impl FailOn {
    pub fn severity(self) -> Option<Severity> {
        match self {
            FailOn::Critical => Some(Severity::Critical),
            FailOn::High => Some(Severity::High),
            FailOn::Medium => Some(Severity::Medium),
            FailOn::Low => Some(Severity::Low),
            FailOn::Info => Some(Severity::Info),
            FailOn::Never => None,
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Work with the configuration files.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// List, explain and test rules.
    #[command(subcommand)]
    Rules(RulesCommand),
    /// Record a server's facts to a snapshot file (re-checked offline with `check`).
    Collect {
        #[command(flatten)]
        connect: live::ConnectArgs,
        /// Where to write the snapshot (JSON).
        #[arg(short = 'o', long, value_name = "FILE")]
        output: PathBuf,
    },
    /// Pre-upgrade review: default changes, breaking settings and known issues going to a version.
    Upgrade(Box<upgrade::UpgradeArgs>),
    /// The facts rules read: every path, its type and meaning (Markdown).
    Facts,
    /// Audit a recorded snapshot, offline (with the config files too, if given).
    Check {
        #[arg(long, value_name = "FILE")]
        snapshot: PathBuf,
        #[command(flatten)]
        audit: Box<AuditArgs>,
    },
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Print the merged configuration as ClickHouse writes it to preprocessed_configs/.
    ///
    /// The same element tree as the engine's preprocessed_configs/config.xml (or users.xml),
    /// ignoring only comments, whitespace-only text, attribute order and `<a></a>` vs `<a/>`.
    /// Warnings ClickHouse starts with (an unset from_env, a missing incl) go to stderr and the
    /// tree is printed (exit 0); a tree ClickHouse refuses prints nothing (exit 2). The server
    /// and users configs are independent: an error in one does not stop showing the other.
    Show(config_show::ShowArgs),
}

#[derive(Subcommand)]
enum RulesCommand {
    /// Every rule: id, severity, sources, title.
    List {
        #[command(flatten)]
        rules: RuleArgs,
    },
    /// A rule's documentation.
    Explain {
        id: String,
        #[command(flatten)]
        rules: RuleArgs,
    },
    /// Run each rule's fixtures (must fire / must stay quiet).
    Test {
        /// Rules directory to test (default: ./rules).
        dir: Option<PathBuf>,
    },
}

pub fn run() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::Config(ConfigCommand::Show(args))) => config_show::run(&args),
        Some(Command::Rules(RulesCommand::List { rules })) => rules::list(&rules),
        Some(Command::Rules(RulesCommand::Explain { id, rules })) => rules::explain(&id, &rules),
        Some(Command::Rules(RulesCommand::Test { dir })) => rules::test(dir),
        Some(Command::Collect { connect, output }) => audit::collect(&connect, &output),
        Some(Command::Upgrade(args)) => upgrade::run(&args),
        Some(Command::Facts) => write_stdout(&chaudit::facts::schema::render(), exit::OK),
        Some(Command::Check { snapshot, audit }) => audit::run(&audit, Some(&snapshot)),
        None => audit::run(&cli.audit, None),
    }
}

fn parse_budget(s: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .ok()
        .filter(|seconds| *seconds > 0.0 && *seconds <= 86_400.0)
        .ok_or_else(|| "seconds, more than 0".into())
}

fn parse_param(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .ok_or_else(|| format!("`{s}`: a param is NAME=VALUE"))
}

/// Writes all output in one go: a closed pipe is not a crash.
pub fn write_stdout(text: &str, code: u8) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Ok(()) => ExitCode::from(code),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::from(code),
        Err(e) => {
            eprintln!("chaudit: cannot write output: {e}");
            ExitCode::from(exit::RUNTIME)
        }
    }
}

/// Prints diagnostics (miette) to stderr.
pub fn report_all<E: miette::Diagnostic + Send + Sync + 'static>(errors: Vec<E>) {
    for e in errors {
        eprintln!("{:?}", miette::Report::new(e));
    }
}

pub fn color_stdout() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
}
