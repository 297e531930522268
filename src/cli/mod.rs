//! Command-line arguments and exit codes. Everything else lives in the library.

// Every byte for stderr passes through `chaudit::redact` (chaudit's own credentials and the
// values a config took from the environment are masked): these shadow the standard macros in
// this module and every module below it, so no message can forget it.
macro_rules! eprintln {
    ($($arg:tt)*) => { $crate::cli::write_stderr(&format!("{}\n", format_args!($($arg)*))) };
}
macro_rules! eprint {
    ($($arg:tt)*) => { $crate::cli::write_stderr(&format!($($arg)*)) };
}

mod audit;
pub mod config_show;
mod diff;
mod fix;
mod live;
mod manual;
mod rules;
mod upgrade;

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::OnceLock;

use chaudit::rules::Severity;
use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};

/// Documented exit codes (README "Exit codes").
/// The exit codes of runs that end before a verdict (arguments, writing output): the
/// verdict's own codes.
pub mod exit {
    use chaudit::verdict::Status;

    pub const OK: u8 = Status::Passed.exit_code();
    pub const USAGE_OR_CONFIG: u8 = Status::NotAudited.exit_code();
    pub const RUNTIME: u8 = Status::Failed.exit_code();

    /// A target that is not a regular file, or is an input, is the user's mistake; anything
    /// else is the system's.
    pub fn of_write_error(e: &chaudit::regular_file::WriteError) -> std::process::ExitCode {
        if e.is_usage() { USAGE_OR_CONFIG.into() } else { RUNTIME.into() }
    }
}

#[derive(Parser)]
#[command(
    name = "chaudit",
    version,
    about = "Audit a ClickHouse server's configuration",
    args_conflicts_with_subcommands = true,
    // -h is the host, as in clickhouse-client: `chaudit -h ch1` must audit ch1, not print the
    // help and exit 0 having judged nothing
    disable_help_flag = true
)]
struct Cli {
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help, global = true)]
    help: Option<bool>,
    /// Color in text output: auto (a terminal, and NO_COLOR unset), always or never.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, global = true)]
    color: ColorChoice,
    /// No warnings or progress on stderr (errors still print).
    #[arg(long, short = 'q', global = true)]
    quiet: bool,
    /// Print the values a config takes from the environment (`from_env`), and in `config show`
    /// the values of passwords, keys and other secrets. Without it they are masked as ******
    /// everywhere chaudit writes; chaudit's own credentials are never printed.
    #[arg(long, global = true)]
    show_secrets: bool,
    /// A variable of the server's environment for `from_env` (repeatable). With it or
    /// --env-file, from_env reads only what they give, not chaudit's own environment.
    #[arg(long = "env", value_name = "KEY=VALUE", global = true, value_parser = parse_param)]
    env: Vec<(String, String)>,
    /// The server's environment for `from_env`, from an env file in Docker Compose's syntax
    /// (.env, env_file:); repeatable, later files and --env winning.
    #[arg(long, value_name = "FILE", global = true)]
    env_file: Vec<PathBuf>,
    /// Read the absolute paths the config names under SERVER_DIR (include_from, the users
    /// config, /etc/metrika.xml) from DIR, a checkout of the server's files, e.g. --root
    /// /etc/clickhouse-server=./deploy/clickhouse (repeatable; the longest SERVER_DIR wins).
    #[arg(long = "root", value_name = "SERVER_DIR=DIR", global = true, value_parser = chaudit::config::Root::parse)]
    roots: Vec<chaudit::config::Root>,
    /// Read the config as the official Docker image runs it: the config's directory (often
    /// config.d/ and users.d/ alone) mounted file by file over the image's
    /// /etc/clickhouse-server. `image`: stock files bundled into chaudit (not proven to be a
    /// given release's); DIR: a copy of the image's directory (docker run --rm --entrypoint tar
    /// clickhouse/clickhouse-server:VERSION -C /etc/clickhouse-server -c . | tar -x -C DIR).
    /// With the users.d/default-user.xml the image's entrypoint writes from the container's
    /// environment (--env, --env-file). Fixes go into the config's directory, never the base.
    #[arg(long, value_name = "image|DIR", global = true, value_parser = chaudit::config::Base::parse)]
    base: Option<chaudit::config::Base>,
    #[command(flatten)]
    audit: AuditArgs,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Args)]
pub struct AuditArgs {
    /// The main server config (config.xml or config.yaml, or the directory holding it; with --base, a directory of config.d/ and users.d/ alone); config.d/, conf.d/ and the users config are read too.
    #[arg(long, value_name = "MAIN", value_parser = main_config)]
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
    #[arg(long, value_name = "VERSION", value_parser = str::parse::<chaudit::version::Version>)]
    pub clickhouse_version: Option<chaudit::version::Version>,
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
    /// Write the report to this file (whole or not at all) instead of stdout.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Text output: print every finding (by default a rule's first 20, then how many more).
    #[arg(long)]
    pub all: bool,
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
    /// With --baseline: show only the findings not in the baseline, in every format (the
    /// report says how many it left out; the exit code is the same).
    #[arg(long, requires = "baseline")]
    pub new_only: bool,
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
    /// One self-contained HTML page (no request; filters and copy buttons inline).
    Html,
    /// SARIF 2.1.0 for GitHub code scanning.
    Sarif,
    Junit,
    /// Prometheus metrics (text format 0.0.4) for node_exporter's textfile collector.
    Openmetrics,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum ListFormat {
    Text,
    Json,
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
        connect: Box<live::ConnectArgs>,
        /// Where to write the snapshot (JSON, whole or not at all); stdout when absent or `-`.
        #[arg(short = 'o', long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
    /// Fix the config: write the findings' config remediations as fragments merged last.
    ///
    /// Audits the config tree, then writes the config fixes of its findings to
    /// config.d/zz-chaudit-fix.xml (server settings) and users.d/zz-chaudit-fix.xml (profiles
    /// and users, beside the users config): files that sort after every other fragment, so they
    /// apply last. An earlier run's file is folded in. Your own files are never edited: an
    /// element to drop is removed with ClickHouse's own `remove="1"`. A fix only you can make (a
    /// password, a host to choose) is listed as needing you. Then it audits the fixed tree again.
    ///
    /// Exit codes: 0 no finding at or above --fail-on (default high) remains; 1 one does (each
    /// listed with why: still reported after its fix, only you can fix it, SQL fixes it, no fix)
    /// or the fix brought a new finding of medium or more; 2 usage or config error; 3 the run
    /// failed. `--dry-run` prints the change as a unified diff and writes nothing.
    Fix(Box<fix::FixArgs>),
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
    /// The drift between two states: config trees, snapshots or servers.
    ///
    /// Each side is a server (a value starting with http:// or https://), a snapshot (an
    /// existing .json file from `chaudit collect`), or else a config (config.xml or the
    /// directory holding it). Compares the effective state, not text: server settings, the
    /// settings of each profile and user, users, grants, roles, quotas, disks and storage
    /// policies, clusters, the version, and the findings of each side's audit (by
    /// fingerprint). Prints nothing when
    /// the sides are equal. Exit codes: 0 equal, 1 they differ, 2 a side cannot be loaded
    /// (usage or config error), 3 a server that cannot be read.
    Diff(Box<diff::DiffArgs>),
    /// Print a shell completion script (e.g. `chaudit completions bash > /etc/bash_completion.d/chaudit`).
    Completions { shell: clap_complete::Shell },
    /// Print the manual page (roff), e.g. `chaudit man | man -l -`.
    Man,
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
    /// The values of secrets (passwords, keys) are masked unless --show-secrets.
    Show(config_show::ShowArgs),
}

#[derive(Subcommand)]
enum RulesCommand {
    /// Every rule: id, severity, sources, title.
    List {
        #[command(flatten)]
        rules: RuleArgs,
        #[arg(long, value_enum, default_value_t = ListFormat::Text)]
        format: ListFormat,
    },
    /// A rule's documentation.
    Explain {
        id: String,
        #[command(flatten)]
        rules: RuleArgs,
    },
    /// Write the rules reference: one Markdown page per rule and an index (README.md).
    Docs {
        /// The directory (e.g. docs/rules); pages of rules that no longer exist are removed.
        dir: PathBuf,
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
    std::panic::set_hook(Box::new(|info| {
        write_stderr(&format!("chaudit: internal error (please report it): {info}\n"));
    }));
    let cli = Cli::parse();
    chaudit::redact::show_environment_values(cli.show_secrets);
    let _ = OUTPUT.set(OutputOptions { color: cli.color, quiet: cli.quiet, show_secrets: cli.show_secrets });
    let _ = ENVIRONMENT.set((cli.env.clone(), cli.env_file.clone()));
    let _ = ROOTS.set(chaudit::config::Roots::new(cli.roots.clone()));
    let _ = BASE.set(cli.base.clone());
    match cli.command {
        Some(Command::Config(ConfigCommand::Show(args))) => config_show::run(&args),
        Some(Command::Rules(RulesCommand::List { rules, format })) => rules::list(&rules, format),
        Some(Command::Rules(RulesCommand::Explain { id, rules })) => rules::explain(&id, &rules),
        Some(Command::Rules(RulesCommand::Test { dir })) => rules::test(dir),
        Some(Command::Rules(RulesCommand::Docs { dir, rules })) => rules::docs(&dir, &rules),
        Some(Command::Collect { connect, output }) => {
            audit::collect(&connect, output.as_deref().filter(|p| *p != Path::new("-")))
        }
        Some(Command::Upgrade(args)) => upgrade::run(&args),
        Some(Command::Fix(args)) => fix::run(&args),
        Some(Command::Diff(args)) => diff::run(&args),
        Some(Command::Facts) => write_stdout(&chaudit::facts::schema::render(), exit::OK),
        Some(Command::Check { snapshot, audit }) => audit::run(&audit, Some(&snapshot)),
        Some(Command::Completions { shell }) => {
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "chaudit", &mut out);
            write_stdout(&String::from_utf8_lossy(&out), exit::OK)
        }
        Some(Command::Man) => match manual::render(Cli::command()) {
            Ok(out) => write_stdout(&String::from_utf8_lossy(&out), exit::OK),
            Err(e) => {
                eprintln!("chaudit: cannot render the manual page: {e}");
                ExitCode::from(exit::RUNTIME)
            }
        },
        None => audit::run(&cli.audit, None),
    }
}

fn parse_budget(s: &str) -> Result<f64, String> {
    s.parse::<f64>()
        .ok()
        .filter(|seconds| *seconds > 0.0 && *seconds <= 86_400.0)
        .ok_or_else(|| "seconds, more than 0".into())
}

/// `--color`, `--quiet` and `--show-secrets`, for every subcommand.
struct OutputOptions {
    color: ColorChoice,
    quiet: bool,
    show_secrets: bool,
}

static OUTPUT: OnceLock<OutputOptions> = OnceLock::new();

/// `--env` (name, value) and `--env-file` (paths).
type Environment = (Vec<(String, String)>, Vec<PathBuf>);

/// `--env` and `--env-file`, for every subcommand that loads a config.
static ENVIRONMENT: OnceLock<Environment> = OnceLock::new();

/// `--root`, for every subcommand that loads a config.
static ROOTS: OnceLock<chaudit::config::Roots> = OnceLock::new();

/// `--base`, for every subcommand that loads a config.
static BASE: OnceLock<Option<chaudit::config::Base>> = OnceLock::new();

/// The `--base` given.
pub fn base() -> Option<chaudit::config::Base> {
    BASE.get().cloned().flatten()
}

/// The `--root` mappings given.
pub fn roots() -> chaudit::config::Roots {
    ROOTS.get().cloned().unwrap_or_default()
}

/// The environment `from_env` reads: `--env-file` files then `--env` when given (named in the
/// findings), chaudit's own otherwise. An env file that cannot be read or parsed is an error
/// naming its line.
pub fn environment() -> Result<(std::collections::HashMap<String, String>, Option<String>), String> {
    let (vars, files) = ENVIRONMENT.get().map(|(v, f)| (v.as_slice(), f.as_slice())).unwrap_or_default();
    if vars.is_empty() && files.is_empty() {
        return Ok((std::env::vars().collect(), None));
    }
    let mut env = std::collections::HashMap::new();
    for file in files {
        let shown = file.display().to_string();
        let text = chaudit::regular_file::read_to_string(file).map_err(|e| format!("--env-file {shown}: {e}"))?;
        env.extend(chaudit::config::env_file::parse(&text, &shown).map_err(|e| e.to_string())?);
    }
    env.extend(vars.iter().cloned());
    let mut origin: Vec<String> = files.iter().map(|f| format!("--env-file {}", f.display())).collect();
    if !vars.is_empty() {
        origin.push("--env".into());
    }
    Ok((env, Some(origin.join(" and "))))
}

/// `--quiet`: no warnings or progress.
pub fn quiet() -> bool {
    OUTPUT.get().is_some_and(|o| o.quiet)
}

/// `--show-secrets`.
pub fn show_secrets() -> bool {
    OUTPUT.get().is_some_and(|o| o.show_secrets)
}

/// Writes to stderr what [`chaudit::redact`] lets through (see `eprintln!` above).
pub fn write_stderr(text: &str) {
    let _ = std::io::stderr().lock().write_all(chaudit::redact::redact(text).as_bytes());
}

/// A warning on stderr, unless `--quiet`.
pub fn warn(message: &str) {
    if !quiet() {
        eprintln!("chaudit: warning: {message}");
    }
}

/// `--config`: a main config file, or a directory holding config.xml (or config.yaml, config.yml)
/// as /etc/clickhouse-server does. Under `--base`, a directory without one takes the base's
/// config.xml.
pub fn main_config(s: &str) -> Result<PathBuf, String> {
    chaudit::config::base::main_config(Path::new(s), base_given())
}

/// Whether `--base` is on the command line: `--config` is parsed before the options are known,
/// and a directory without config.xml is a tree to mount over a base only with it.
fn base_given() -> bool {
    std::env::args_os().any(|arg| arg == "--base" || arg.to_string_lossy().starts_with("--base="))
}

fn parse_param(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .ok_or_else(|| format!("`{s}`: a param is NAME=VALUE"))
}

/// Writes all output in one go: a closed pipe is not a crash.
pub fn write_stdout(text: &str, code: u8) -> ExitCode {
    stream_stdout(|out| out.write_all(text.as_bytes()), code)
}

/// Streams output to stdout (buffered): a closed pipe is not a crash.
fn stream_stdout(write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>, code: u8) -> ExitCode {
    let mut stdout =
        std::io::BufWriter::with_capacity(1 << 20, chaudit::redact::Redacting::new(std::io::stdout().lock()));
    match write(&mut stdout).and_then(|()| stdout.flush()).and_then(|()| stdout.get_mut().finish()) {
        Ok(()) => ExitCode::from(code),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::from(code),
        Err(e) => {
            eprintln!("chaudit: cannot write output: {e}");
            ExitCode::from(exit::RUNTIME)
        }
    }
}

/// Prints diagnostics (miette) to stderr. The source lines they quote are masked as the
/// whole file masks (a secret's value may begin lines above the quoted one, or run over
/// several).
pub fn report_all<E: miette::Diagnostic + Send + Sync + 'static>(errors: Vec<E>) {
    for e in errors {
        let masked_source = source_text(&e).map(|text| {
            let masked = chaudit::mask::mask_source(&text).into_owned();
            masked.split('\n').map(str::to_string).collect::<Vec<_>>()
        });
        let rendered = format!("{:?}", miette::Report::new(e));
        let masked: Vec<String> = rendered
            .split('\n')
            .map(|line| {
                // a quoted source line: ` 12 │ <password>...</password>`
                let Some(bar) = line.find("│ ") else { return line.to_string() };
                let (gutter, source) = line.split_at(bar + "│ ".len());
                let number = gutter.trim_end_matches("│ ").trim().parse::<usize>().ok();
                match (number, &masked_source) {
                    (Some(n), Some(lines)) if n >= 1 && n <= lines.len() => format!("{gutter}{}", lines[n - 1]),
                    _ => chaudit::mask::mask_line(source).map_or_else(|| line.to_string(), |m| format!("{gutter}{m}")),
                }
            })
            .collect();
        eprintln!("{}", masked.join("\n"));
    }
}

/// The whole text a diagnostic quotes, if it quotes one.
fn source_text(e: &dyn miette::Diagnostic) -> Option<String> {
    let contents = e.source_code()?.read_span(&miette::SourceSpan::new(0.into(), 0), 0, usize::MAX).ok()?;
    Some(String::from_utf8_lossy(contents.data()).into_owned())
}

/// Writes a report or snapshot to `path` whole or not at all (a temporary file beside it,
/// renamed over it), or to stdout when there is no path.
pub fn write_output(path: Option<&Path>, text: &str, code: u8) -> ExitCode {
    stream_output(path, |out| out.write_all(text.as_bytes()), code)
}

/// [`write_output`] of what `write` writes, streamed: a report of 100,000 findings is
/// never held whole in memory.
pub fn stream_output(
    path: Option<&Path>,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    code: u8,
) -> ExitCode {
    let Some(path) = path else { return stream_stdout(write, code) };
    // whole or not at all, and never renamed over a device, a FIFO, a link or a directory
    match chaudit::regular_file::replace_with(path, write) {
        Ok(()) => ExitCode::from(code),
        Err(e) => {
            eprintln!("chaudit: {e}");
            exit::of_write_error(&e)
        }
    }
}

/// Color on stdout: `--color`, else a terminal without NO_COLOR.
pub fn color_stdout() -> bool {
    match OUTPUT.get().map_or(ColorChoice::Auto, |o| o.color) {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none(),
    }
}
