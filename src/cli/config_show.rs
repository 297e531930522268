//! `chaudit config show`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use chaudit::config::render::{Masking, RenderOptions, render_to};
use chaudit::config::{self, DefaultInclude, LoadOptions, LoadedConfig};
use chaudit::mask;

use super::{exit, report_all, stream_stdout};

#[derive(Args)]
pub struct ShowArgs {
    /// The main server config (config.xml or config.yaml, or the directory holding it); config.d/ and conf.d/ beside it are merged.
    #[arg(long, value_name = "MAIN", value_parser = super::main_config)]
    config: PathBuf,
    /// Print the merged users config (users.xml + users.d/) instead.
    #[arg(long)]
    users: bool,
    /// Add each element's source file:line (and the files it overrode) as XML comments.
    #[arg(long)]
    provenance: bool,
    /// The include file for `incl` when the config has no <include_from>, or `none`. Default:
    /// /etc/metrika.xml, only for a config under /etc/clickhouse-server.
    #[arg(long, value_name = "FILE|none")]
    default_include_from: Option<String>,
}

/// The loader's options, with `--default-include-from`, `--env`, `--env-file` and `--root` (shared by
/// every command that loads a config); an env file that does not read is a usage error.
pub fn load_options(default_include_from: Option<&str>) -> Result<LoadOptions, ExitCode> {
    let (env, env_origin) = super::environment().map_err(|e| {
        eprintln!("chaudit: {e}");
        ExitCode::from(exit::USAGE_OR_CONFIG)
    })?;
    let mut options =
        LoadOptions { env, env_origin, roots: super::roots(), base: super::base(), ..LoadOptions::default() };
    if let Some(value) = default_include_from {
        options.default_include_from = DefaultInclude::parse(value);
    }
    Ok(options)
}

pub fn run(args: &ShowArgs) -> ExitCode {
    let options = match load_options(args.default_include_from.as_deref()) {
        Ok(options) => options,
        Err(code) => return code,
    };
    let masking = (!super::show_secrets()).then_some(Masking {
        is_secret: mask::is_secret_name,
        in_value: mask::mask_url_credentials,
        shown: mask::MASK,
    });
    let render_options = RenderOptions { provenance: args.provenance, masking };
    let mut loaded = match config::load(&args.config, &options) {
        Ok(loaded) => loaded,
        Err(err) if args.users => return show_users_alone(args, &options, err, &render_options),
        Err(err) => {
            report_all(vec![err]);
            return ExitCode::from(exit::USAGE_OR_CONFIG);
        }
    };
    report_all(std::mem::take(&mut loaded.problems));
    if let Some(path) = &loaded.default_include {
        eprintln!("chaudit: include file (the default, no <include_from>): {}", path.display());
    }
    if let Some(w) = users_warning(&loaded, &args.config).filter(|_| args.users) {
        super::warn(&w);
    }
    let users_error = loaded.users_error.take();
    let tree = if args.users {
        match (&loaded.users, users_error) {
            (Some(users), _) => users,
            (None, Some(err)) => {
                report_all(vec![err]);
                return ExitCode::from(exit::USAGE_OR_CONFIG);
            }
            (None, None) if loaded.users_in_main => &loaded.server,
            (None, None) => {
                eprintln!("chaudit: this configuration has no users config (user_directories names no users_xml)");
                return ExitCode::from(exit::USAGE_OR_CONFIG);
            }
        }
    } else {
        if let Some(err) = users_error {
            // ClickHouse writes the server config and fails only the users config.
            eprintln!("chaudit: warning: the users config cannot be processed (the server config is shown):");
            report_all(vec![err]);
        }
        &loaded.server
    };
    let code = stream_stdout(|out| render_to(tree, &loaded.sources, &render_options, out), exit::OK);
    // The process ends here: freeing a big tree node by node would only delay the exit.
    std::mem::forget(loaded);
    code
}

/// `--users` when the server config is broken: ClickHouse preprocesses the users config on
/// its own, so it is shown with the server config's error as a warning.
fn show_users_alone(
    args: &ShowArgs,
    options: &LoadOptions,
    server_error: config::ConfigError,
    render_options: &RenderOptions,
) -> ExitCode {
    match config::load_users(&args.config, options) {
        Ok((sources, tree, problems)) => {
            eprintln!("chaudit: warning: the server config cannot be processed (the users config is shown):");
            report_all(vec![server_error]);
            report_all(problems);
            stream_stdout(|out| render_to(&tree, &sources, render_options, out), exit::OK)
        }
        Err(err) => {
            report_all(vec![server_error, err]);
            ExitCode::from(exit::USAGE_OR_CONFIG)
        }
    }
}

/// Said when the files hold no users: the user and profile rules then judge nothing, and
/// `--users` shows the main config (where ClickHouse looks for users without a users file).
pub fn users_warning(loaded: &LoadedConfig, main: &std::path::Path) -> Option<String> {
    if loaded.users_error.is_some() {
        return None;
    }
    match loaded.users_root() {
        // <users_config> names a file that is not there: the loader's own warning says so
        None if loaded.server.root.child("users_config").is_some() => None,
        None => Some(
            "user_directories names no users_xml: users live in the server's access storage, not in \
             the config files; the user and profile rules see none of them"
                .into(),
        ),
        Some(root) if loaded.users_in_main && root.child("users").is_none() => Some(match &loaded.unread_users_file {
            Some(beside) => format!(
                "{main} names neither <users_config> nor <user_directories>: ClickHouse reads users from it, \
                 which has no <users>, and does not read {beside}; the user and profile rules see no users",
                main = main.display(),
                beside = beside.display()
            ),
            None => format!(
                "{main} names neither <users_config> nor <user_directories> and has no <users>: ClickHouse \
                 reads users from it; the user and profile rules see no users",
                main = main.display()
            ),
        }),
        Some(_) => None,
    }
}
