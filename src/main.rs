//! The `chaudit` command: arguments in, library calls, exit code out.

mod cli;

fn main() -> std::process::ExitCode {
    cli::run()
}
