//! The review as one library call: a [`Request`] (the config, the versions, the rules) and
//! what the server gave, if it was read, in; the [`Review`] out. The command line only reads
//! the server and prints.

use std::path::PathBuf;

use super::history::{self, History};
use super::{Inputs, Review, UpgradeError, check_versions, review};
use crate::collect::NodeDocuments;
use crate::config::{self, ConfigError, LoadOptions};
use crate::facts::{self, Facts};
use crate::rules::RulePack;
use crate::version::Version;

pub struct Request<'a> {
    /// The main server config: the profiles and `<merge_tree>` settings it sets.
    pub config: Option<PathBuf>,
    pub load: LoadOptions,
    /// The running version as the user states it (a server's own wins).
    pub from: Option<Version>,
    pub to: Version,
    pub pack: &'a RulePack,
    /// Where the review will be written: never over a file of the tree it reviews.
    pub output: Option<PathBuf>,
}

/// Why a review could not be made.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum RequestError {
    /// A tree ClickHouse refuses cannot be reviewed: its profiles are unknown.
    #[error("the config cannot be reviewed: ClickHouse refuses it")]
    #[diagnostic(code(chaudit::upgrade::config))]
    Config(#[related] Vec<ConfigError>),
    #[error("{0}")]
    #[diagnostic(code(chaudit::upgrade::output))]
    Output(crate::regular_file::WriteError),
    #[error("the running version is unknown: give --dsn (the server says) or --from 25.8")]
    #[diagnostic(code(chaudit::upgrade::from))]
    UnknownFrom,
    #[error(transparent)]
    #[diagnostic(code(chaudit::upgrade::versions))]
    Versions(#[from] UpgradeError),
}

/// The review, and what the user should know about how it was made.
pub struct Reviewed {
    pub review: Review,
    pub warnings: Vec<String>,
}

/// Reviews the upgrade of the config and/or the server (`server`: its collection, with the
/// review's queries).
pub fn run(request: &Request, server: Option<NodeDocuments>) -> Result<Reviewed, RequestError> {
    let mut warnings = Vec::new();
    let mut facts = match &request.config {
        Some(main) => {
            let mut loaded = config::load(main, &request.load).map_err(|e| RequestError::Config(vec![e]))?;
            let refused: Vec<ConfigError> =
                loaded.server_error.take().into_iter().chain(loaded.users_error.take()).collect();
            if !refused.is_empty() {
                return Err(RequestError::Config(refused));
            }
            if let Some(output) = &request.output {
                let inputs: Vec<(&str, &std::path::Path)> = loaded.inputs().collect();
                crate::regular_file::ensure_not_input(output, &inputs).map_err(RequestError::Output)?;
            }
            facts::config::facts(&loaded, loaded.target(main), request.from)
        }
        None => Facts::empty(String::new()),
    };
    let read_server = server.is_some();
    let mut server_history = None;
    if let Some(node) = server {
        facts.target = crate::facts::keys::live::ENDPOINT.text(&node.live).to_string();
        let server_version = crate::facts::keys::live::VERSION.text(&node.live).to_string();
        facts.add_live(node.live.into_value());
        if let Some(log) = node.log {
            facts.add_log(log);
        }
        if let Some(rows) = node.settings_changes {
            match History::from_rows(server_version, &rows) {
                Ok(h) => server_history = Some(h),
                Err(message) => warnings.push(format!("the server's {message}; using chaudit's history")),
            }
        }
    }
    let from = facts.version.or(request.from).ok_or(RequestError::UnknownFrom)?;
    facts.version = Some(from);
    if let (Some(stated), true) = (request.from, read_server)
        && (stated.major, stated.minor) != (from.major, from.minor)
    {
        warnings.push(format!("--from {stated} ignored: the server runs {from}"));
    }
    let (history, history_source): (&History, String) = match &server_history {
        Some(h) => (h, format!("system.settings_changes of the server (ClickHouse {})", h.version)),
        None => {
            let h = history::builtin();
            (h, format!("system.settings_changes of ClickHouse {} (bundled with chaudit)", h.version))
        }
    };
    check_versions(from, request.to, history)?;
    let review = review(&Inputs { facts: &facts, from, to: request.to, history, history_source, pack: request.pack });
    Ok(Reviewed { review, warnings })
}
