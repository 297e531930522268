//! `chaudit config show`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use chaudit::config::render::{Masking, RenderOptions, render};
use chaudit::config::{self, LoadOptions, LoadedConfig};
use chaudit::report::mask;

use super::{exit, report_all, write_stdout};

#[derive(Args)]
pub struct ShowArgs {
    /// The main server config (config.xml or config.yaml); config.d/ and conf.d/ beside it are merged.
    #[arg(long, value_name = "MAIN", value_parser = super::main_config)]
    config: PathBuf,
    /// Print the merged users config (users.xml + users.d/) instead.
    #[arg(long)]
    users: bool,
    /// Add each element's source file:line (and the files it overrode) as XML comments.
    #[arg(long)]
    provenance: bool,
    /// Print the values of passwords, keys and other secrets (masked as ****** by default).
    #[arg(long)]
    show_secrets: bool,
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
    if let Some(w) = users_warning(&loaded, &args.config) {
        super::warn(&w);
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
    let masking = (!args.show_secrets).then_some(Masking { is_secret: mask::is_secret_name, shown: mask::MASK });
    let options = RenderOptions { provenance: args.provenance, masking };
    let code = write_stdout(&render(tree, &loaded.sources, &options), exit::OK);
    // The process ends here: freeing a big tree node by node would only delay the exit.
    std::mem::forget(loaded);
    code
}

/// Said when the files hold no users: the user and profile rules then judge nothing, and
/// `--users` shows the main config (where ClickHouse looks for users without a users file).
pub fn users_warning(loaded: &LoadedConfig, main: &std::path::Path) -> Option<String> {
    match loaded.users_root() {
        None => Some(
            "user_directories names no users_xml: users live in the server's access storage, not in \
             the config files; the user and profile rules see none of them"
                .into(),
        ),
        Some(root) if loaded.users_in_main && root.child("users").is_none() => Some(format!(
            "no users config found: no users.xml or users.yaml beside {main}, and it has no <users> \
             (ClickHouse then reads users from the main config); the user and profile rules see no users",
            main = main.display()
        )),
        Some(_) => None,
    }
}
