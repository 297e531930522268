//! The one model rules read: facts about a server, whatever they came from (config files
//! now; a live server, its logs and its host later). Rules never touch files or network.

pub mod catalog;
pub mod config;

use std::collections::BTreeSet;

use serde::Serialize;

use crate::version::Version;

/// Where facts come from; a rule declares the ones it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Config,
    Live,
    Log,
    Host,
}

impl Source {
    pub fn parse(s: &str) -> Option<Source> {
        match s {
            "config" => Some(Source::Config),
            "live" => Some(Source::Live),
            "log" => Some(Source::Log),
            "host" => Some(Source::Host),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Source::Config => "config",
            Source::Live => "live",
            Source::Log => "log",
            Source::Host => "host",
        }
    }
}

/// Everything an audit knows, as the document rule expressions see.
#[derive(Debug, Clone)]
pub struct Facts {
    /// What was audited, as the user named it (a config path, a DSN without password).
    pub target: String,
    /// The ClickHouse version, when known (from the server or `--clickhouse-version`).
    pub version: Option<Version>,
    pub sources: BTreeSet<Source>,
    /// `{"config": {...}}` and later `live`, `log`, `host`: the variables of rule expressions.
    pub document: serde_json::Map<String, serde_json::Value>,
}
