//! One side of a diff read: a config tree, a snapshot or a running server, audited; its
//! facts as JSON and its findings.

use super::*;

/// One side of the comparison, as named on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Side {
    /// A main config (config.xml or the directory holding it).
    Config(PathBuf),
    /// A snapshot file written by `chaudit collect`.
    Snapshot(PathBuf),
    /// A server's DSN (`http://...` or `https://...`).
    Server(String),
    /// One replica of a cluster snapshot (`chaudit collect --cluster`): `FILE#HOST`.
    Replica(PathBuf, String),
}

impl Side {
    /// A value starting with http:// or https:// is a server; an existing `.json` file a
    /// snapshot, and `FILE.json#HOST` one replica of a cluster snapshot; anything else a
    /// config (a file, or a directory holding config.xml).
    pub fn parse(text: &str) -> Side {
        let lower = text.to_ascii_lowercase();
        if lower.starts_with("http://") || lower.starts_with("https://") {
            return Side::Server(text.to_string());
        }
        let snapshot = |path: &Path| path.is_file() && path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json"));
        let path = PathBuf::from(text);
        if snapshot(&path) {
            return Side::Snapshot(path);
        }
        if let Some((file, host)) = text.rsplit_once('#')
            && snapshot(Path::new(file))
        {
            return Side::Replica(PathBuf::from(file), host.to_string());
        }
        Side::Config(path)
    }

    pub fn kind(&self) -> Kind {
        match self {
            Side::Config(_) => Kind::Config,
            Side::Snapshot(_) | Side::Replica(..) => Kind::Snapshot,
            Side::Server(_) => Kind::Server,
        }
    }
}

/// What a side is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Config,
    Snapshot,
    Server,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Config => "config",
            Kind::Snapshot => "snapshot",
            Kind::Server => "server",
        }
    }

    /// A snapshot and a server give the same facts (the server's).
    pub(super) fn is_live(self) -> bool {
        !matches!(self, Kind::Config)
    }
}

/// Why a side could not be read: the user's mistake (a config ClickHouse refuses, a file
/// that is not a snapshot) or the run's (a server that cannot be read).
#[derive(Debug, Clone)]
pub struct DiffError {
    pub failure: Failure,
    pub message: String,
}

impl DiffError {
    fn usage(message: String) -> DiffError {
        DiffError { failure: Failure::Usage, message }
    }
}

/// What one side gave: its facts as JSON (the config's, or the server's `live` document)
/// and its audit's findings.
pub struct State {
    pub label: String,
    pub kind: Kind,
    pub(super) config: Option<serde_json::Map<String, Value>>,
    /// A config's elements the settings sections do not hold (see `elements`).
    pub(super) elements: Option<super::Items>,
    /// The release a config side runs, when known (`--clickhouse-version`, a manifest's
    /// image): a setting it leaves unset is compared as that release's default.
    pub(super) release: Option<crate::version::Version>,
    pub(super) live: Option<Value>,
    pub(super) findings: BTreeMap<String, FindingItem>,
    /// The rules its audit judged (fired or passed): a finding is compared only where both
    /// audits could judge its rule.
    pub(super) judged: BTreeSet<String>,
    /// The files read (a config's every file, a snapshot): an output must name none.
    pub inputs: Vec<PathBuf>,
}

/// A finding of one side, as the diff lists it.
#[derive(Debug, Clone, Serialize)]
pub struct FindingItem {
    pub rule_id: String,
    pub severity: crate::rules::Severity,
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    pub fingerprint: String,
}

/// How to read the sides: the config loading options, and the audit's rules.
pub struct Options {
    pub load: LoadOptions,
    pub rules: RulesRequest,
    /// Compare the values that differ by nature too (hosts, macros, display_name).
    pub all: bool,
    /// The release the config sides run (`--clickhouse-version`); a manifest's image says
    /// its own otherwise.
    pub version: Option<crate::version::Version>,
}

/// Reads one side. `collect` reads a server (the caller owns the connection and its
/// options).
pub fn load(
    side: &Side,
    options: &Options,
    collect: impl FnOnce(&str) -> Result<NodeDocuments, DiffError>,
) -> Result<State, DiffError> {
    let request = |config: Option<PathBuf>, snapshot: Option<PathBuf>| Request {
        config,
        load: options.load.clone(),
        version: options.version,
        snapshot,
        host: None,
        rules: options.rules.clone(),
        suppressions: ProjectSuppressions::Default,
        baseline: None,
        write_baseline: None,
        output: None,
        policy: Policy { fail_on: None, allow_inconclusive: true },
        config_view: false,
        fix_fragments: false,
    };
    let failed = |e: AuditError| DiffError { failure: e.class(), message: e.to_string() };
    match side {
        Side::Config(path) => {
            let main = main_config(path, options.load.base.is_some()).map_err(DiffError::usage)?;
            let audited = audit::run(&request(Some(main.clone()), None), || Ok(None)).map_err(|e| match e {
                AuditError::Config(err) => DiffError::usage(config_error(&err)),
                other => failed(other),
            })?;
            if let Some((tree, err)) = &audited.broken {
                return Err(DiffError::usage(format!(
                    "{}: the {tree} config cannot be processed: {}",
                    main.display(),
                    config_error(err)
                )));
            }
            let loaded = audited.loaded.as_ref().expect("a config side loads its config");
            let facts = crate::facts::config::facts(loaded, loaded.target(&main), None);
            let config = facts.typed.get(&crate::facts::Source::Config).map(|d| d.to_json());
            let image = loaded.manifest.as_ref().and_then(|m| m.image_version()).map(|(_, v)| v);
            Ok(State {
                label: path.display().to_string(),
                kind: Kind::Config,
                config,
                elements: Some(super::elements::config_elements(loaded)),
                release: options.version.or(image),
                live: None,
                findings: findings_of(&audited.report),
                judged: judged_by(&audited.report),
                inputs: loaded.inputs().map(|(_, p)| p.to_path_buf()).collect(),
            })
        }
        Side::Snapshot(path) => {
            let (facts, cluster) = audit::read_snapshot(path).map_err(failed)?;
            if let Some(Live::Cluster { collected, .. }) = cluster {
                let names: Vec<&str> = collected.nodes.iter().map(|n| n.name.as_str()).collect();
                return Err(DiffError::usage(format!(
                    "{}: a cluster snapshot; diff compares one server: name a replica as {}#HOST (its replicas: {})",
                    path.display(),
                    path.display(),
                    names.join(", ")
                )));
            }
            let live = facts.collected(crate::facts::Source::Live).cloned().ok_or_else(|| {
                DiffError::usage(format!("{}: the snapshot holds no server facts (`live`)", path.display()))
            })?;
            let audited = audit::run(&request(None, Some(path.clone())), || Ok(None)).map_err(failed)?;
            Ok(live_state(path.display().to_string(), Kind::Snapshot, live, &audited.report, vec![path.clone()]))
        }
        Side::Replica(path, host) => {
            let node = replica(path, host).map_err(|e| match e {
                ReplicaError::Usage(message) => DiffError::usage(message),
                ReplicaError::Audit(e) => failed(e),
                ReplicaError::Unread(message) => DiffError { failure: Failure::Runtime, message },
            })?;
            let live = node.live.clone().into_value();
            let audited = audit::run(&request(None, None), || Ok(Some(Live::Node(Box::new(node))))).map_err(failed)?;
            let label = format!("{}#{host}", path.display());
            Ok(live_state(label, Kind::Snapshot, live, &audited.report, vec![path.clone()]))
        }
        Side::Server(dsn) => {
            let node = collect(dsn)?;
            let live = node.live.clone().into_value();
            let label = crate::facts::keys::live::ENDPOINT.text(&live).to_string();
            let audited = audit::run(&request(None, None), || Ok(Some(Live::Node(Box::new(node))))).map_err(failed)?;
            let label = if label.is_empty() { crate::mask::mask_url_credentials(dsn).into_owned() } else { label };
            Ok(live_state(label, Kind::Server, live, &audited.report, Vec::new()))
        }
    }
}

/// A side that gave a server's facts (a server, a snapshot, a replica of one), with its audit.
fn live_state(label: String, kind: Kind, live: Value, report: &crate::report::Report, inputs: Vec<PathBuf>) -> State {
    State {
        label,
        kind,
        config: None,
        elements: None,
        release: None,
        live: Some(live),
        findings: findings_of(report),
        judged: judged_by(report),
        inputs,
    }
}

/// A config error in one line, with the place it names.
pub(super) fn config_error(err: &crate::config::ConfigError) -> String {
    let mut text = err.to_string();
    if let Some(location) = crate::report::RunError::of(err).into_iter().find_map(|e| e.location) {
        text = format!("{}:{}: {text}", location.file, location.line);
    }
    crate::mask::shown(&text)
}

/// A main config, or the directory holding config.xml (config.yaml, config.yml); under a base,
/// a directory without one stands for the base's.
pub(super) fn main_config(path: &Path, based: bool) -> Result<PathBuf, String> {
    if !path.exists() {
        return Err(format!(
            "{}: no such file or directory (a side is a config, a snapshot .json file or an http(s):// server)",
            path.display()
        ));
    }
    crate::config::base::main_config(path, based)
}

pub(super) fn judged_by(report: &crate::report::Report) -> BTreeSet<String> {
    use crate::eval::OutcomeKind;
    report
        .outcomes
        .iter()
        .filter(|o| matches!(o.outcome, OutcomeKind::Fired | OutcomeKind::Passed))
        .map(|o| o.rule_id.clone())
        .collect()
}

pub(super) fn findings_of(report: &crate::report::Report) -> BTreeMap<String, FindingItem> {
    report
        .findings
        .iter()
        .filter(|f| f.suppressed.is_none())
        .map(|f| {
            let item = FindingItem {
                rule_id: f.rule_id.clone(),
                severity: f.severity,
                title: f.title.clone(),
                object: f.object.as_deref().map(crate::mask::shown),
                fingerprint: f.fingerprint.clone(),
            };
            (f.fingerprint.clone(), item)
        })
        .collect()
}

/// Why a replica of a cluster snapshot could not be read.
enum ReplicaError {
    /// The file is no cluster snapshot, or has no such replica: the user's to mend.
    Usage(String),
    Audit(AuditError),
    /// The replica was not read when the snapshot was collected.
    Unread(String),
}

/// The recorded facts of replica `host` (its `host:port` as the snapshot names it, or the
/// host alone when one replica has it) of the cluster snapshot at `path`, as one node's.
fn replica(path: &Path, host: &str) -> Result<NodeDocuments, ReplicaError> {
    let shown = path.display();
    let Some(Live::Cluster { collected, .. }) = audit::read_snapshot(path).map_err(ReplicaError::Audit)?.1 else {
        return Err(ReplicaError::Usage(format!("{shown}: not a cluster snapshot; name it without #{host}")));
    };
    let names: Vec<&str> = collected.nodes.iter().map(|n| n.name.as_str()).collect();
    let by_host: Vec<_> = collected
        .nodes
        .iter()
        .filter(|n| n.name == host || n.name.rsplit_once(':').is_some_and(|(h, _)| h == host))
        .collect();
    let node = match by_host.as_slice() {
        [node] => *node,
        [] => {
            return Err(ReplicaError::Usage(format!(
                "{shown}: no replica `{host}` (its replicas: {})",
                names.join(", ")
            )));
        }
        _ => {
            return Err(ReplicaError::Usage(format!(
                "{shown}: `{host}` names several replicas: give its port too ({})",
                names.join(", ")
            )));
        }
    };
    let Some(live) = node.live.clone() else {
        let why = node.error.as_deref().unwrap_or("not read");
        return Err(ReplicaError::Unread(format!("{shown}: replica {} was not read when collected: {why}", node.name)));
    };
    Ok(NodeDocuments { live, log: node.log.clone(), settings_changes: None })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sides_are_told_apart_by_their_syntax() {
        assert_eq!(Side::parse("http://h:8123"), Side::Server("http://h:8123".into()));
        assert_eq!(Side::parse("HTTPS://h"), Side::Server("HTTPS://h".into()));
        assert_eq!(Side::parse("/nonexistent/a.json"), Side::Config("/nonexistent/a.json".into()));
        assert_eq!(Side::parse("deploy/clickhouse"), Side::Config("deploy/clickhouse".into()));
    }
}
