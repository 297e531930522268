//! Command-line arguments and exit codes. Everything else lives in the library.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use chaudit::config::render::{RenderOptions, render};
use chaudit::config::{self, ConfigError, LoadOptions};

/// Documented exit codes (README "Exit codes").
pub mod exit {
    pub const OK: u8 = 0;
    pub const USAGE_OR_CONFIG: u8 = 2;
    pub const RUNTIME: u8 = 3;
}

#[derive(Parser)]
#[command(name = "chaudit", version, about = "Audit a ClickHouse server's configuration")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Work with the configuration files.
    #[command(subcommand)]
    Config(ConfigCommand),
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Print the merged configuration, as ClickHouse's preprocessed_configs/ would hold it.
    Show(ShowArgs),
}

#[derive(Args)]
struct ShowArgs {
    /// The main server config (config.xml or config.yaml); config.d/ and conf.d/ beside it are merged.
    #[arg(long, value_name = "MAIN")]
    config: PathBuf,
    /// Print the merged users config (users.xml + users.d/) instead.
    #[arg(long)]
    users: bool,
    /// Add each element's source file:line (and the files it overrode) as XML comments.
    #[arg(long)]
    provenance: bool,
}

pub fn run() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Config(ConfigCommand::Show(args)) => show(&args),
    }
}

fn show(args: &ShowArgs) -> ExitCode {
    let mut loaded = match config::load(&args.config, &LoadOptions::default()) {
        Ok(loaded) => loaded,
        Err(err) => return report_fatal(err),
    };
    let errors = report_problems(std::mem::take(&mut loaded.problems));
    if errors > 0 {
        eprintln!("chaudit: {errors} configuration error(s); nothing printed");
        return ExitCode::from(exit::USAGE_OR_CONFIG);
    }
    let tree = if args.users {
        match &loaded.users {
            Some(users) => users,
            None if loaded.users_in_main => &loaded.server,
            None => {
                eprintln!("chaudit: this configuration has no users config (user_directories names no users_xml)");
                return ExitCode::from(exit::USAGE_OR_CONFIG);
            }
        }
    } else {
        &loaded.server
    };
    let text = render(tree, &loaded.sources, &RenderOptions { provenance: args.provenance });
    write_stdout(&text)
}

/// Prints every problem; returns how many are errors.
fn report_problems(problems: Vec<ConfigError>) -> usize {
    let mut errors = 0;
    for problem in problems {
        if !problem.is_warning() {
            errors += 1;
        }
        eprintln!("{:?}", miette::Report::new(problem));
    }
    errors
}

/// A configuration that cannot be loaded at all: ClickHouse would not start either.
fn report_fatal(err: ConfigError) -> ExitCode {
    eprintln!("{:?}", miette::Report::new(err));
    ExitCode::from(exit::USAGE_OR_CONFIG)
}

/// Writes all output in one go: a closed pipe is not a crash.
fn write_stdout(text: &str) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Ok(()) => ExitCode::from(exit::OK),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::from(exit::OK),
        Err(e) => {
            eprintln!("chaudit: cannot write output: {e}");
            ExitCode::from(exit::RUNTIME)
        }
    }
}
