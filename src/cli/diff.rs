//! `chaudit diff A B`: the sides' arguments in, the drift's verdict out as the exit code.

use std::path::PathBuf;
use std::process::ExitCode;

use chaudit::audit::RulesRequest;
use chaudit::diff::{self, DiffError, Options, Side};

use super::{RuleArgs, live, write_output};

#[derive(clap::Args)]
pub struct DiffArgs {
    /// The first side: http(s)://user:password@host:8123 (a server), FILE.json (a snapshot
    /// from `chaudit collect`), or a config (config.xml or its directory).
    #[arg(value_name = "A")]
    pub a: String,
    /// The second side, as A.
    #[arg(value_name = "B")]
    pub b: String,
    /// Compare the values that differ by nature too: display_name, interserver_http_host,
    /// and each config's <macros>.
    #[arg(long)]
    pub all: bool,
    #[arg(long, value_enum, default_value_t = DiffFormat::Text)]
    pub format: DiffFormat,
    /// Write the diff to this file (whole or not at all) instead of stdout.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Seconds to wait for each query to a server side (at least 1).
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: u64,
    /// The password of the server sides, from this file (first line), rather than in their
    /// URLs (visible to other users) or CLICKHOUSE_PASSWORD.
    #[arg(long, value_name = "FILE")]
    pub password_file: Option<PathBuf>,
    /// Also trust the CA certificates in this PEM file, for https:// sides.
    #[arg(long, value_name = "FILE", env = "CLICKHOUSE_CA_CERT")]
    pub ca_cert: Option<PathBuf>,
    /// The ClickHouse version the config sides run on (e.g. 25.8): a setting one config
    /// leaves unset is compared as that release's default. A manifest's image says its own.
    #[arg(long, value_name = "VERSION", value_parser = str::parse::<chaudit::version::Version>)]
    pub clickhouse_version: Option<chaudit::version::Version>,
    /// The include file for `incl` when a config side has no <include_from>, or `none`.
    #[arg(long, value_name = "FILE|none")]
    pub default_include_from: Option<String>,
    #[command(flatten)]
    pub rules: RuleArgs,
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum DiffFormat {
    Text,
    Json,
    Markdown,
    /// One self-contained page: no script, no request.
    Html,
}

pub fn run(args: &DiffArgs) -> ExitCode {
    let version = args.clickhouse_version;
    let load = match super::config_show::load_options(args.default_include_from.as_deref()) {
        Ok(load) => load,
        Err(code) => return code,
    };
    let options = Options {
        load,
        rules: RulesRequest {
            builtin: !args.rules.no_builtin_rules,
            dirs: args.rules.dirs.clone(),
            ..Default::default()
        },
        all: args.all,
        version,
    };
    let read = |text: &str, which: &str| {
        let side = Side::parse(text);
        diff::load(&side, &options, |dsn| collect(dsn, args)).map_err(|e| {
            eprintln!("chaudit: diff: side {which}: {}", e.message);
            e.failure.status().exit_code()
        })
    };
    let (a, b) = std::thread::scope(|scope| {
        let a = scope.spawn(|| read(&args.a, "A"));
        let b = read(&args.b, "B");
        (a.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)), b)
    });
    // the more serious failure wins: a server not read (3) over a bad input (2)
    let (a, b) = match (a, b) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(x), Err(y)) => return ExitCode::from(x.max(y)),
        (Err(code), _) | (_, Err(code)) => return ExitCode::from(code),
    };
    // the diff is never written over a file it read
    if let Some(output) = &args.output {
        let of_a = a.inputs.iter().map(|p| ("a file of side A", p.as_path()));
        let inputs: Vec<(&str, &std::path::Path)> =
            of_a.chain(b.inputs.iter().map(|p| ("a file of side B", p.as_path()))).collect();
        if let Err(e) = chaudit::regular_file::ensure_not_input(output, &inputs) {
            eprintln!("chaudit: {e}");
            return super::exit::of_write_error(&e);
        }
    }
    let drift = diff::compare(&a, &b, args.all);
    // the text diff lists them when the sides differ; when equal it prints nothing
    for n in drift.not_compared.iter().filter(|_| drift.equal || matches!(args.format, DiffFormat::Json)) {
        super::warn(&format!("not compared: {}: {}", n.section, n.reason));
    }
    let text = match args.format {
        DiffFormat::Text => diff::render::text(&drift),
        DiffFormat::Json => diff::render::json(&drift),
        DiffFormat::Markdown => diff::render::markdown(&drift),
        DiffFormat::Html => diff::render::html(&drift),
    };
    write_output(args.output.as_deref(), &text, drift.status.exit_code())
}

/// Reads a server side as the live audit does (no query_log window: the diff compares state).
fn collect(dsn: &str, args: &DiffArgs) -> Result<chaudit::collect::NodeDocuments, DiffError> {
    let connect = live::ConnectArgs {
        dsn: vec![dsn.to_string()],
        timeout: args.timeout,
        password_file: args.password_file.clone(),
        ca_cert: args.ca_cert.clone(),
        parallel: 1,
        in_flight: 1,
        since: 0,
        ..Default::default()
    };
    live::collect_live(&connect, false)
        .map(|(node, _)| node)
        .map_err(|unread| DiffError { failure: unread.failure, message: unread.message })
}
