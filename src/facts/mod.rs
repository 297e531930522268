//! The one model rules read: facts about a server, whatever they came from (config files
//! now; a live server, its logs and its host later). Rules never touch files or network.

pub mod catalog;
pub mod config;

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::version::Version;

/// A ClickHouse UInt64 in JSON: a number, or a string when the server quotes 64-bit
/// integers (`output_format_json_quote_64bit_integers`); 0 when absent.
pub fn uint(v: &serde_json::Value) -> u64 {
    v.as_u64().or_else(|| v.as_str().and_then(|s| s.parse().ok())).unwrap_or(0)
}

/// Where facts come from; a rule declares the ones it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Config,
    Live,
    Log,
    Host,
    /// The replicas of a cluster compared (divergences, unreachable replicas).
    Cluster,
}

impl Source {
    pub fn parse(s: &str) -> Option<Source> {
        match s {
            "config" => Some(Source::Config),
            "live" => Some(Source::Live),
            "log" => Some(Source::Log),
            "host" => Some(Source::Host),
            "cluster" => Some(Source::Cluster),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Source::Config => "config",
            Source::Live => "live",
            Source::Log => "log",
            Source::Host => "host",
            Source::Cluster => "cluster",
        }
    }
}

/// Everything an audit knows, as the document rule expressions see. Serialized, it is a
/// snapshot (`chaudit collect`), re-checked offline with `chaudit check --snapshot`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Facts {
    /// What was audited, as the user named it (a config path, a DSN without password).
    pub target: String,
    /// The ClickHouse version, when known (from the server or `--clickhouse-version`).
    pub version: Option<Version>,
    pub sources: BTreeSet<Source>,
    /// `{"config": {...}}` and later `live`, `log`, `host`: the variables of rule expressions.
    pub document: serde_json::Map<String, serde_json::Value>,
}

impl Facts {
    /// Adds one node's `live` document (from `collect::collect`); its version wins over a
    /// stated one.
    pub fn add_live(&mut self, live: serde_json::Value) {
        if let Some(v) = live["version"].as_str().and_then(|v| v.parse().ok()) {
            self.version = Some(v);
        }
        self.sources.insert(Source::Live);
        self.document.insert("live".into(), live);
    }

    /// Adds the workload evidence (`log`).
    pub fn add_log(&mut self, log: serde_json::Value) {
        self.sources.insert(Source::Log);
        self.document.insert("log".into(), log);
    }

    /// Adds the facts of the machine chaudit runs on.
    pub fn add_host(&mut self, host: serde_json::Value) {
        self.sources.insert(Source::Host);
        self.document.insert("host".into(), host);
    }

    /// Adds the comparison of a cluster's replicas.
    pub fn add_cluster(&mut self, cluster: serde_json::Value) {
        self.sources.insert(Source::Cluster);
        self.document.insert("cluster".into(), cluster);
    }

    /// Facts with nothing yet (a live-only audit).
    pub fn empty(target: String) -> Facts {
        Facts { target, version: None, sources: BTreeSet::new(), document: serde_json::Map::new() }
    }

    /// Takes another set of facts in (a snapshot re-checked with the config files).
    pub fn merge(&mut self, other: Facts) {
        self.version = other.version.or(self.version);
        self.sources.extend(other.sources);
        self.document.extend(other.document);
    }

    /// Live facts this audit could not read, with the reason.
    pub fn unavailable(&self, fact: &str) -> Option<String> {
        ["live", "log", "host"]
            .iter()
            .find_map(|source| self.document.get(*source)?.get("unavailable")?.get(fact)?.as_str().map(str::to_string))
    }
}
