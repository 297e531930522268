//! `chaudit config show`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use chaudit::config::render::{RenderOptions, render};
use chaudit::config::{self, LoadOptions};

use super::{exit, report_all, write_stdout};

#[derive(Args)]
pub struct ShowArgs {
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

pub fn run(args: &ShowArgs) -> ExitCode {
    let mut loaded = match config::load(&args.config, &LoadOptions::default()) {
        Ok(loaded) => loaded,
        Err(err) => {
            report_all(vec![err]);
            return ExitCode::from(exit::USAGE_OR_CONFIG);
        }
    };
    let problems = std::mem::take(&mut loaded.problems);
    let errors = problems.iter().filter(|p| !p.is_warning()).count();
    report_all(problems);
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
    let code = write_stdout(&render(tree, &loaded.sources, &RenderOptions { provenance: args.provenance }), exit::OK);
    // The process ends here: freeing a big tree node by node would only delay the exit.
    std::mem::forget(loaded);
    code
}
