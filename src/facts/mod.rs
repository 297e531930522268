//! The one model rules read: facts about a server, whatever they came from (config files
//! now; a live server, its logs and its host later). Rules never touch files or network.

pub mod catalog;
pub mod cluster;
pub mod config;
pub mod config_keeper;
pub mod config_keys;
pub mod config_root;
pub mod config_sections;
pub mod config_storage;
pub mod config_users;
pub mod derived;
pub mod document;
pub mod keys;
pub mod rows;
pub mod schema;
pub mod startup;
pub mod typed;
pub mod value;

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::version::Version;

/// A ClickHouse UInt64 in JSON: a number (a whole double, as a `number` fact is read), or a
/// string when the server quotes 64-bit integers (`output_format_json_quote_64bit_integers`);
/// 0 when absent.
pub fn uint(v: &serde_json::Value) -> u64 {
    v.as_u64().or_else(|| whole(v.as_f64()?)).or_else(|| v.as_str().and_then(|s| s.parse().ok())).unwrap_or(0)
}

/// A double that is a whole, non-negative number, as that number.
pub fn whole(f: f64) -> Option<u64> {
    // u64::MAX as a double rounds up to 2^64, which `as` would saturate
    (f >= 0.0 && f.fract() == 0.0 && f < 18_446_744_073_709_551_616.0).then_some(f as u64)
}

/// The version a server's `live` document says it runs.
pub fn live_version(live: &impl typed::Facts) -> Option<Version> {
    keys::live::VERSION.text(live).parse().ok()
}

/// The positions of a snapshot's facts, for errors that name a fact by path
/// (`live.metrics.Query`, `config.users[3].name`): JSON is YAML, read with its spans.
struct FactLines {
    source: crate::config::SourceMap,
    root: Option<crate::spanned_yaml::Yaml>,
}

impl FactLines {
    fn new(text: &str) -> FactLines {
        let mut source = crate::config::SourceMap::new("/".into());
        let id = source.add("snapshot".into(), text.to_string());
        let root = crate::spanned_yaml::read_document(text, id).ok();
        FactLines { source, root }
    }

    /// The line and column of the deepest node of `path` the file has.
    fn position(&self, path: &str) -> Option<(u32, u32)> {
        use crate::spanned_yaml::Yaml;
        let mut node = self.root.as_ref()?.get("document")?;
        for part in path.split('.') {
            let (key, indexes) = part.split_once('[').map_or((part, ""), |(k, rest)| (k, rest));
            let Some(next) = node.get(key) else { break };
            node = next;
            for index in indexes.split('[').filter_map(|i| i.trim_end_matches(']').parse::<usize>().ok()) {
                match node {
                    Yaml::Sequence(items, _) if index < items.len() => node = &items[index],
                    _ => break,
                }
            }
        }
        let location = self.source.locate(node.origin());
        Some((location.line, location.column))
    }

    /// `problem` said at the position of `path` in the snapshot `shown`.
    fn at(&self, shown: &impl std::fmt::Display, path: &str, problem: impl std::fmt::Display) -> String {
        match self.position(path) {
            Some((line, column)) => format!("{shown}:{line}:{column}: {problem}"),
            None => format!("{shown}: {problem}"),
        }
    }
}

/// Where facts come from; a rule declares the ones it needs.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    strum::EnumString,
    strum::IntoStaticStr,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
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
        s.parse().ok()
    }

    pub fn name(self) -> &'static str {
        self.into()
    }
}

/// What program the audited config is for: a rule applies to the kinds its `applies.configs`
/// names (a ClickHouse server's by default), so a server's rules stay quiet on a Keeper node's
/// config and the Keeper rules that judge a Keeper node's own run on both.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    strum::EnumString,
    strum::IntoStaticStr,
    strum::VariantNames,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum ConfigKind {
    /// clickhouse-server's config (every config but a Keeper installation's)
    #[default]
    Server,
    /// a ClickHouse Keeper node's config (a ClickHouseKeeperInstallation)
    Keeper,
}

impl ConfigKind {
    pub fn name(self) -> &'static str {
        self.into()
    }
}

/// The snapshot format, `chaudit_snapshot` in the file: a reader refuses any other.
pub const SNAPSHOT_FORMAT: u64 = 1;

/// Everything an audit knows, as the document rule expressions see. Serialized, it is a
/// snapshot (`chaudit collect`), re-checked offline with `chaudit check --snapshot`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Facts {
    /// What was audited, as the user named it (a config path, a DSN without password).
    pub target: String,
    /// The ClickHouse version, when known (from the server or `--clickhouse-version`).
    pub version: Option<Version>,
    pub sources: BTreeSet<Source>,
    /// The program the audited config is for.
    #[serde(default)]
    pub config_kind: ConfigKind,
    /// The sources collected from a server (`live`, `log`) as JSON, their rows as the server
    /// wrote them (a newer server's columns kept), checked against the catalog: with
    /// [`Facts::typed`], the variables of rule expressions.
    pub document: serde_json::Map<String, serde_json::Value>,
    /// The sources chaudit builds itself, typed: the config's facts, the comparison of a
    /// cluster's replicas and this machine's facts (shared by the replicas of a cluster audit;
    /// JSON only in a snapshot file, read back into their types).
    #[serde(skip)]
    pub typed: std::collections::BTreeMap<Source, std::sync::Arc<document::Document>>,
}

impl Facts {
    /// Adds one node's `live` document (from `collect::collect`); its version wins over a
    /// stated one.
    pub fn add_live(&mut self, live: serde_json::Value) {
        if let Some(v) = live_version(&live) {
            self.version = Some(v);
        }
        self.sources.insert(Source::Live);
        self.document.insert(Source::Live.name().into(), live);
    }

    /// Adds the workload evidence (`log`).
    pub fn add_log(&mut self, log: serde_json::Value) {
        self.sources.insert(Source::Log);
        self.document.insert(Source::Log.name().into(), log);
    }

    /// Adds the facts of the machine chaudit runs on.
    pub fn add_host(&mut self, host: std::sync::Arc<document::Document>) {
        self.sources.insert(Source::Host);
        self.typed.insert(Source::Host, host);
    }

    /// Adds the comparison of a cluster's replicas.
    pub fn add_cluster(&mut self, cluster: cluster::ClusterDocument) {
        self.sources.insert(Source::Cluster);
        self.typed.insert(Source::Cluster, std::sync::Arc::new(cluster.into_document()));
    }

    /// Facts with nothing yet (a live-only audit).
    pub fn empty(target: String) -> Facts {
        Facts {
            target,
            version: None,
            sources: BTreeSet::new(),
            config_kind: ConfigKind::Server,
            document: serde_json::Map::new(),
            typed: Default::default(),
        }
    }

    /// The document of a source collected from a server (`live`, `log`), if collected.
    pub fn collected(&self, source: Source) -> Option<&serde_json::Value> {
        self.document.get(source.name())
    }

    /// No source's facts at all.
    pub fn is_empty(&self) -> bool {
        self.document.is_empty() && self.typed.is_empty()
    }

    /// Takes another set of facts in (a snapshot re-checked with the config files).
    pub fn merge(&mut self, other: Facts) {
        self.version = other.version.or(self.version);
        if other.sources.contains(&Source::Config) {
            self.config_kind = other.config_kind;
        }
        self.sources.extend(other.sources);
        self.document.extend(other.document);
        self.typed.extend(other.typed);
    }

    /// Every source's facts as JSON, the typed ones included (a snapshot, the catalog check).
    pub fn json_document(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut document = self.document.clone();
        for (source, typed) in &self.typed {
            document.insert(source.name().into(), serde_json::Value::Object(typed.to_json()));
        }
        document
    }

    /// The facts as a snapshot file's text.
    pub fn to_snapshot(&self) -> Result<String, serde_json::Error> {
        #[derive(Serialize)]
        struct File<'a> {
            chaudit_snapshot: u64,
            target: &'a str,
            version: Option<Version>,
            sources: &'a BTreeSet<Source>,
            document: serde_json::Map<String, serde_json::Value>,
        }
        let file = File {
            chaudit_snapshot: SNAPSHOT_FORMAT,
            target: &self.target,
            version: self.version,
            sources: &self.sources,
            document: self.json_document(),
        };
        serde_json::to_string_pretty(&file).map(|t| t + "\n")
    }

    /// Reads a snapshot file: its format must be this one and its facts of the
    /// documented shape.
    pub fn read_snapshot(path: &std::path::Path) -> Result<Facts, String> {
        let shown = path.display();
        let text =
            crate::regular_file::read_to_string(path).map_err(|e| format!("cannot read snapshot {shown}: {e}"))?;
        let mut value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| crate::regular_file::json_error(path, "a chaudit snapshot", &e))?;
        match value.get("chaudit_snapshot").and_then(serde_json::Value::as_u64) {
            Some(SNAPSHOT_FORMAT) => {}
            Some(other) => {
                return Err(format!(
                    "{shown}: snapshot format {other}; this chaudit reads format {SNAPSHOT_FORMAT} (record it again with `chaudit collect`)"
                ));
            }
            None => return Err(format!("{shown}: not a chaudit snapshot (no `chaudit_snapshot` format field)")),
        }
        if let Some(object) = value.as_object_mut() {
            object.remove("chaudit_snapshot");
        }
        // read from the text (not the value) so a field of the wrong type names its line
        let mut facts: Facts = match serde_json::from_value(value) {
            Ok(facts) => facts,
            Err(_) => match serde_json::from_str::<Facts>(&text) {
                Err(e) => return Err(crate::regular_file::json_error(path, "a chaudit snapshot", &e)),
                Ok(facts) => facts,
            },
        };
        if facts.document.is_empty() {
            let why = "the snapshot holds no facts (no config, live, log or host document, no cluster nodes)";
            return Err(format!("{shown}: {why}"));
        }
        // the sources are what the snapshot holds, whatever its `sources` list says
        facts.sources = facts.document.keys().filter_map(|k| Source::parse(k)).collect();
        schema::type_document(&mut facts.document);
        if let Err(problems) = schema::check_document(&facts.document) {
            let lines = FactLines::new(&text);
            let listed: Vec<String> = problems.iter().take(10).map(|p| lines.at(&shown, &p.path, p)).collect();
            return Err(format!("facts of the wrong shape:\n  {}", listed.join("\n  ")));
        }
        // the sources chaudit builds (or reads off this machine) are read back into their types
        for source in [Source::Config, Source::Cluster, Source::Host] {
            let Some(json) = facts.document.remove(source.name()) else { continue };
            let built = document::Document::read(source.name(), json)
                .map_err(|e| FactLines::new(&text).at(&shown, &e.path, format!("`{}`: {}", e.path, e.why)))?;
            facts.typed.insert(source, std::sync::Arc::new(built));
        }
        Ok(facts)
    }

    /// Why a fact of a source is absent by nature (no users config, a table the server's
    /// version lacks), if it is: the rules that need it do not apply.
    pub fn absent(&self, source: Source, fact: &str) -> Option<String> {
        self.reason(source, keys::absent(source), fact)
    }

    /// What a fact leaves out, if it was built from part of its inputs (a cluster comparison
    /// without a replica that could not be read): a rule that finds nothing in it is
    /// inconclusive, one that finds something has found it.
    pub fn partial(&self, source: Source, fact: &str) -> Option<String> {
        self.reason(source, keys::partial(source), fact)
    }

    /// Why this audit could not read a fact of a source, if it could not.
    pub fn unavailable(&self, source: Source, fact: &str) -> Option<String> {
        if let Some(built) = self.typed.get(&source) {
            let why = self.reason(source, keys::unavailable(source), fact);
            // a host fact a collection should hold and does not (an old or trimmed snapshot)
            return why.or_else(|| {
                (source == Source::Host && built.get(fact).is_none()).then(|| "not in the collected facts".to_string())
            });
        }
        let document = self.collected(source)?;
        // a derived fact is as unread as its inputs (recorded snapshots included)
        if source == Source::Live
            && let Some(why) = derived::derived_unread(document, fact)
        {
            return Some(why);
        }
        if let Some(why) = self.reason(source, keys::unavailable(source), fact) {
            return Some(why);
        }
        // a fact a collection should hold and does not (an old or trimmed snapshot)
        (matches!(source, Source::Live | Source::Log) && typed::Facts::fact(document, fact).is_none())
            .then(|| "not in the collected facts".to_string())
    }

    /// The reason a source's `absent`, `partial` or `unavailable` map (`reasons`, if the
    /// source has that map) gives for `fact`; a reason of another shape is said as its error
    /// (the fact is still not judged on it).
    fn reason(&self, source: Source, reasons: Option<keys::Reasons>, fact: &str) -> Option<String> {
        let reasons = reasons?;
        match self.typed.get(&source) {
            // the reasons of a source chaudit builds are typed
            Some(built) => reasons.get(built)?.get(fact).cloned(),
            None => reasons.entry(self.collected(source)?, fact).unwrap_or_else(Some),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(text: &str) -> String {
        let path = std::env::temp_dir().join(format!("chaudit-snapshot-{}.json", std::process::id()));
        std::fs::write(&path, text).unwrap();
        let error = Facts::read_snapshot(&path).unwrap_err();
        let _ = std::fs::remove_file(&path);
        error.replace(&path.display().to_string(), "s.json")
    }

    #[test]
    fn snapshot_errors_name_the_line_and_column() {
        let wrong_type = "{\n \"chaudit_snapshot\": 1,\n \"target\": \"t\",\n \"version\": null,\n \"sources\": [\"live\", 7],\n \"document\": {}\n}\n";
        assert!(error_of(wrong_type).starts_with("s.json:5:"), "{}", error_of(wrong_type));
        let wrong_shape = "{\n \"chaudit_snapshot\": 1,\n \"target\": \"t\",\n \"version\": null,\n \"sources\": [\"live\"],\n \"document\": {\n  \"live\": {\n   \"metrics\": {\"Query\": 1},\n   \"settings\": [\n    1\n   ]\n  }\n }\n}\n";
        assert!(error_of(wrong_shape).contains("s.json:9:16: `live.settings`"), "{}", error_of(wrong_shape));
    }

    /// The config facts of a snapshot are read into their types: a value the catalog's
    /// `uint` allows and the type does not (a port above 65535) names its line.
    #[test]
    fn a_snapshots_config_is_read_into_its_types() {
        let snapshot = |port: u32| {
            format!(
                "{{\n \"chaudit_snapshot\": 1,\n \"target\": \"t\",\n \"version\": null,\n \"sources\": [\"config\"],\n \"document\": {{\n  \"config\": {{\n   \"exposed\": true,\n   \"clusters\": [{{\"name\": \"c\", \"at\": \"c.xml:1:1\", \"secret\": false, \"remote\": false,\n    \"shards\": [[{{\"host\": \"h\", \"port\": {port}}}]]}}]\n  }}\n }}\n}}\n"
            )
        };
        let path = std::env::temp_dir().join(format!("chaudit-config-snapshot-{}.json", std::process::id()));
        std::fs::write(&path, snapshot(9000)).unwrap();
        let facts = Facts::read_snapshot(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert!(!facts.document.contains_key("config") && facts.sources.contains(&Source::Config));
        let config = &facts.typed[&Source::Config];
        assert_eq!(keys::config::EXPOSED.get(config), Some(&true));
        let clusters = keys::config::CLUSTERS.get(config).unwrap();
        assert_eq!(clusters[0].shards[0][0].port, Some(9000));
        let error = error_of(&snapshot(70000));
        assert!(
            error.starts_with(
                "s.json:10:39: `config.clusters[0].shards[0][0].port`: not of its type: invalid value: integer `70000`"
            ),
            "{error}"
        );
    }
}
