//! `chaudit diff A B`: the drift between two states of a server, each a config tree, a
//! snapshot (`chaudit collect`) or a running server. The effective state is compared, not
//! text: the merged server settings, the settings of each profile and user, the users, their
//! grants, disks and storage policies, the version, and the findings of each side's audit.

pub mod render;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::audit::{self, AuditError, Live, ProjectSuppressions, Request, RulesRequest};
use crate::collect::NodeDocuments;
use crate::config::LoadOptions;
use crate::verdict::{Failure, Policy, Status};

/// One side of the comparison, as named on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Side {
    /// A main config (config.xml or the directory holding it).
    Config(PathBuf),
    /// A snapshot file written by `chaudit collect`.
    Snapshot(PathBuf),
    /// A server's DSN (`http://...` or `https://...`).
    Server(String),
}

impl Side {
    /// A value starting with http:// or https:// is a server; an existing `.json` file a
    /// snapshot; anything else a config (a file, or a directory holding config.xml).
    pub fn parse(text: &str) -> Side {
        let lower = text.to_ascii_lowercase();
        if lower.starts_with("http://") || lower.starts_with("https://") {
            return Side::Server(text.to_string());
        }
        let path = PathBuf::from(text);
        if path.is_file() && path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json")) {
            return Side::Snapshot(path);
        }
        Side::Config(path)
    }

    pub fn kind(&self) -> Kind {
        match self {
            Side::Config(_) => Kind::Config,
            Side::Snapshot(_) => Kind::Snapshot,
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
    fn is_live(self) -> bool {
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
    config: Option<serde_json::Map<String, Value>>,
    live: Option<Value>,
    findings: BTreeMap<String, FindingItem>,
    /// The rules its audit judged (fired or passed): a finding is compared only where both
    /// audits could judge its rule.
    judged: BTreeSet<String>,
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
        version: None,
        snapshot,
        host: None,
        rules: options.rules.clone(),
        suppressions: ProjectSuppressions::Default,
        baseline: None,
        write_baseline: None,
        output: None,
        policy: Policy { fail_on: None, allow_inconclusive: true },
    };
    let failed = |e: AuditError| DiffError { failure: e.class(), message: e.to_string() };
    match side {
        Side::Config(path) => {
            let main = main_config(path).map_err(DiffError::usage)?;
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
            let facts = crate::facts::config::facts(loaded, main.display().to_string(), None);
            let config = facts.typed.get(&crate::facts::Source::Config).map(|d| d.to_json());
            Ok(State {
                label: path.display().to_string(),
                kind: Kind::Config,
                config,
                live: None,
                findings: findings_of(&audited.report),
                judged: judged_by(&audited.report),
                inputs: loaded.inputs().map(|(_, p)| p.to_path_buf()).collect(),
            })
        }
        Side::Snapshot(path) => {
            let (facts, cluster) = audit::read_snapshot(path).map_err(failed)?;
            if cluster.is_some() {
                return Err(DiffError::usage(format!(
                    "{}: a cluster snapshot; diff compares one server's: collect each replica with its own --dsn",
                    path.display()
                )));
            }
            let live = facts.document.get("live").cloned().ok_or_else(|| {
                DiffError::usage(format!("{}: the snapshot holds no server facts (`live`)", path.display()))
            })?;
            let audited = audit::run(&request(None, Some(path.clone())), || Ok(None)).map_err(failed)?;
            Ok(State {
                label: path.display().to_string(),
                kind: Kind::Snapshot,
                config: None,
                live: Some(live),
                findings: findings_of(&audited.report),
                judged: judged_by(&audited.report),
                inputs: vec![path.clone()],
            })
        }
        Side::Server(dsn) => {
            let node = collect(dsn)?;
            let live = node.live.clone().into_value();
            let label = crate::facts::live_text(&live, "endpoint").to_string();
            let audited = audit::run(&request(None, None), || Ok(Some(Live::Node(Box::new(node))))).map_err(failed)?;
            Ok(State {
                label: if label.is_empty() { crate::mask::mask_url_credentials(dsn).into_owned() } else { label },
                kind: Kind::Server,
                config: None,
                live: Some(live),
                findings: findings_of(&audited.report),
                judged: judged_by(&audited.report),
                inputs: Vec::new(),
            })
        }
    }
}

/// A config error in one line, with the place it names.
fn config_error(err: &crate::config::ConfigError) -> String {
    let mut text = err.to_string();
    if let Some(location) = crate::report::RunError::of(err).into_iter().find_map(|e| e.location) {
        text = format!("{}:{}: {text}", location.file, location.line);
    }
    crate::mask::shown(&text)
}

/// A main config, or the directory holding config.xml (config.yaml, config.yml).
fn main_config(path: &Path) -> Result<PathBuf, String> {
    if !path.exists() {
        return Err(format!(
            "{}: no such file or directory (a side is a config, a snapshot .json file or an http(s):// server)",
            path.display()
        ));
    }
    if !path.is_dir() {
        return Ok(path.to_path_buf());
    }
    ["config.xml", "config.yaml", "config.yml"]
        .iter()
        .map(|name| path.join(name))
        .find(|p| p.is_file())
        .ok_or_else(|| format!("{} is a directory without config.xml, config.yaml or config.yml", path.display()))
}

fn judged_by(report: &crate::report::Report) -> BTreeSet<String> {
    use crate::eval::OutcomeKind;
    report
        .outcomes
        .iter()
        .filter(|o| matches!(o.outcome, OutcomeKind::Fired | OutcomeKind::Passed))
        .map(|o| o.rule_id.clone())
        .collect()
}

fn findings_of(report: &crate::report::Report) -> BTreeMap<String, FindingItem> {
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

/// A value of one side: its text (secrets masked) and, for a config, where it is written.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Value1 {
    pub value: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// A config that leaves the setting alone, against a server: the server's default.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub default: bool,
    /// The value compared: a secret's own, never shown.
    #[serde(skip)]
    compared: String,
}

/// One thing that differs: its name in the section, and each side's value (None: absent).
#[derive(Debug, Clone, Serialize)]
pub struct Difference {
    pub key: String,
    pub a: Option<Value1>,
    pub b: Option<Value1>,
}

/// A section compared.
#[derive(Debug, Clone, Serialize)]
pub struct SectionDiff {
    pub section: &'static str,
    /// How many names the two sides were compared on.
    pub compared: usize,
    pub differences: Vec<Difference>,
}

/// A section one side cannot give, and why.
#[derive(Debug, Clone, Serialize)]
pub struct NotCompared {
    pub section: &'static str,
    pub reason: String,
}

/// The findings of the two audits, by fingerprint.
#[derive(Debug, Clone, Serialize)]
pub struct FindingsDiff {
    /// In B, not in A.
    pub new: Vec<FindingItem>,
    /// In A, not in B.
    pub gone: Vec<FindingItem>,
    pub unchanged: usize,
}

/// A side as the report names it.
#[derive(Debug, Clone, Serialize)]
pub struct SideInfo {
    pub name: String,
    pub kind: Kind,
}

/// The drift between A and B.
#[derive(Debug, Clone, Serialize)]
pub struct Diff {
    pub a: SideInfo,
    pub b: SideInfo,
    pub status: Status,
    pub equal: bool,
    pub sections: Vec<SectionDiff>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub findings: Option<FindingsDiff>,
    pub not_compared: Vec<NotCompared>,
    /// Whether the values that differ by nature were compared (`--all`).
    pub all: bool,
}

type Items = BTreeMap<String, Value1>;

/// How one section reads a side (and, against the other kind, the other side).
type SectionOf = fn(&State, Option<&State>) -> Option<Items>;

/// Server settings that differ between replicas by nature: not drift unless `--all`.
const BY_NATURE: &[&str] = &["display_name", "interserver_http_host", "hostname", "uptime"];

/// Compares two sides.
pub fn compare(a: &State, b: &State, all: bool) -> Diff {
    let cross = a.kind.is_live() != b.kind.is_live();
    let mut sections = Vec::new();
    let mut not_compared = Vec::new();
    let sections_of: [(&'static str, SectionOf); 9] = [
        ("server settings", server_settings),
        ("merge_tree settings", merge_tree_settings),
        ("profiles", profiles),
        ("user settings", user_settings),
        ("users", users),
        ("grants", grants),
        ("disks", disks),
        ("storage policies", policies),
        ("version", version),
    ];
    for (section, items) in sections_of {
        let (other_a, other_b) = if cross { (Some(b), Some(a)) } else { (None, None) };
        match (items(a, other_a), items(b, other_b)) {
            (Some(x), Some(y)) => sections.push(differences(section, &x, &y, all)),
            (x, _) => {
                let missing = if x.is_none() { a } else { b };
                let why = unread(missing, section)
                    .map_or_else(|| "cannot give it".to_string(), |why| format!("could not read it: {why}"));
                not_compared.push(NotCompared {
                    section,
                    reason: format!("{} ({}) {why}", missing.label, missing.kind.name()),
                });
            }
        }
    }
    if all {
        match (macros(a), macros(b)) {
            (Some(x), Some(y)) => sections.push(differences("macros", &x, &y, true)),
            _ => not_compared
                .push(NotCompared { section: "macros", reason: "a server's facts do not hold its <macros>".into() }),
        }
    }
    let findings = (!cross).then(|| {
        // a rule one audit could not judge (query_log evidence in one snapshot only, a fact
        // one server denied) is not drift
        let both = |f: &FindingItem| a.judged.contains(&f.rule_id) && b.judged.contains(&f.rule_id);
        let only_in = |x: &State, y: &State| -> Vec<FindingItem> {
            x.findings.iter().filter(|(k, f)| !y.findings.contains_key(*k) && both(f)).map(|(_, f)| f.clone()).collect()
        };
        let unchanged = a.findings.keys().filter(|k| b.findings.contains_key(*k)).count();
        let unjudged: BTreeSet<&str> =
            a.findings.values().chain(b.findings.values()).filter(|f| !both(f)).map(|f| f.rule_id.as_str()).collect();
        if !unjudged.is_empty() {
            not_compared.push(NotCompared {
                section: "findings",
                reason: format!(
                    "the findings of {} rule(s) one side could not judge: {}",
                    unjudged.len(),
                    unjudged.into_iter().collect::<Vec<_>>().join(", ")
                ),
            });
        }
        FindingsDiff { new: only_in(b, a), gone: only_in(a, b), unchanged }
    });
    if cross {
        not_compared.push(NotCompared {
            section: "findings",
            reason: "a config and a server are audited by different rules".into(),
        });
    }
    let differs = sections.iter().any(|s| !s.differences.is_empty())
        || findings.as_ref().is_some_and(|f| !f.new.is_empty() || !f.gone.is_empty());
    Diff {
        a: SideInfo { name: a.label.clone(), kind: a.kind },
        b: SideInfo { name: b.label.clone(), kind: b.kind },
        status: if differs { Status::Failing } else { Status::Passed },
        equal: !differs,
        sections,
        findings,
        not_compared,
        all,
    }
}

/// Why a server could not give a section's facts (denied, past a cap), if it could not.
fn unread(state: &State, section: &str) -> Option<String> {
    let facts: &[&str] = match section {
        "server settings" => &["server_settings"],
        "merge_tree settings" => &["merge_tree_settings"],
        "profiles" => &["profile_settings"],
        "user settings" => &["user_settings", "profile_elements"],
        "users" => &["users", "user_profiles"],
        "grants" => &["grants"],
        "disks" => &["disks"],
        "storage policies" => &["storage_policies"],
        _ => &[],
    };
    let unavailable = state.live.as_ref()?.get("unavailable")?.as_object()?;
    facts.iter().find_map(|f| unavailable.get(*f)).map(|why| crate::mask::shown(&text(why)))
}

fn differences(section: &'static str, a: &Items, b: &Items, all: bool) -> SectionDiff {
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    let keys: Vec<&String> =
        keys.into_iter().filter(|k| all || !BY_NATURE.contains(&k.rsplit(['/', '.']).next().unwrap_or(k))).collect();
    let differences = keys
        .iter()
        .filter(|k| !same(a.get(**k).map(|v| v.compared.as_str()), b.get(**k).map(|v| v.compared.as_str())))
        .map(|k| Difference { key: (*k).clone(), a: a.get(*k).cloned(), b: b.get(*k).cloned() })
        .collect();
    SectionDiff { section, compared: keys.len(), differences }
}

/// Whether two values are the same setting value: `1` and `true`, `100` and `100.0`, `10Gi`
/// and `10737418240`, as ClickHouse reads a setting.
fn same(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => {
            let (x, y) = (crate::rules::expr::parse_number(a), crate::rules::expr::parse_number(b));
            a.trim() == b.trim() || (!x.is_nan() && x == y)
        }
        (None, None) => true,
        _ => false,
    }
}

/// A value as shown: a secret's masked, control characters written out, bounded.
fn item(name: &str, value: &str, at: Option<&Value>) -> Value1 {
    let shown = if crate::mask::is_secret_name(name) && !value.is_empty() {
        crate::mask::MASK.to_string()
    } else {
        crate::mask::shown(value)
    };
    Value1 {
        value: shown,
        at: at.and_then(Value::as_str).map(str::to_string),
        default: false,
        compared: value.to_string(),
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn list(v: Option<&Value>) -> impl Iterator<Item = &Value> {
    v.and_then(Value::as_array).into_iter().flatten()
}

fn server_settings(s: &State, other: Option<&State>) -> Option<Items> {
    if let Some(config) = &s.config {
        let values = config.get("server")?.as_object()?;
        let at = config.get("server_at").and_then(Value::as_object);
        let mut items: Items =
            values.iter().map(|(k, v)| (k.clone(), item(k, &text(v), at.and_then(|a| a.get(k))))).collect();
        // against a server: the settings the server has, a setting the config leaves alone at
        // the server's default
        if let Some(live) = other.and_then(|o| o.live.as_ref()) {
            let rows = live.get("server_settings")?.as_object()?;
            items.retain(|k, _| rows.contains_key(k));
            for (name, row) in rows {
                let changed = row.get("changed").and_then(Value::as_bool).unwrap_or(false);
                if changed && !items.contains_key(name) {
                    let default = text(row.get("default").unwrap_or(&Value::Null));
                    let mut value = item(name, &default, None);
                    value.default = true;
                    items.insert(name.clone(), value);
                }
            }
        }
        return Some(items);
    }
    let rows = s.live.as_ref()?.get("server_settings")?.as_object()?;
    let config_names: Option<BTreeSet<&String>> =
        other.and_then(|o| o.config.as_ref()).and_then(|c| c.get("server")?.as_object()).map(|m| m.keys().collect());
    Some(
        rows.iter()
            .filter(|(name, row)| {
                row.get("changed").and_then(Value::as_bool).unwrap_or(false)
                    || config_names.as_ref().is_some_and(|n| n.contains(name))
            })
            .map(|(name, row)| (name.clone(), item(name, &text(row.get("value").unwrap_or(&Value::Null)), None)))
            .collect(),
    )
}

fn merge_tree_settings(s: &State, _: Option<&State>) -> Option<Items> {
    if let Some(config) = &s.config {
        let values = config.get("merge_tree")?.as_object()?;
        let at = config.get("merge_tree_at").and_then(Value::as_object);
        return Some(values.iter().map(|(k, v)| (k.clone(), item(k, &text(v), at.and_then(|a| a.get(k))))).collect());
    }
    let rows = s.live.as_ref()?.get("merge_tree_settings")?.as_object()?;
    Some(
        rows.iter()
            .filter(|(_, row)| row.get("changed").and_then(Value::as_bool).unwrap_or(true))
            .map(|(name, row)| (name.clone(), item(name, &text(row.get("value").unwrap_or(&Value::Null)), None)))
            .collect(),
    )
}

/// `profile/setting` -> the value the profile itself sets.
fn profiles(s: &State, _: Option<&State>) -> Option<Items> {
    if let Some(config) = &s.config {
        let mut items = Items::new();
        for profile in list(config.get("profiles")) {
            let name = text(profile.get("name")?);
            let at = profile.get("settings_at").and_then(Value::as_object);
            for (setting, value) in profile.get("settings").and_then(Value::as_object).into_iter().flatten() {
                items.insert(format!("{name}/{setting}"), item(setting, &text(value), at.and_then(|a| a.get(setting))));
            }
        }
        return Some(items);
    }
    let live = s.live.as_ref()?;
    live.get("profile_settings")?;
    let mut items = Items::new();
    for row in list(live.get("profile_settings")) {
        let (profile, setting) = (text(row.get("profile_name")?), text(row.get("setting_name")?));
        items.insert(format!("{profile}/{setting}"), item(&setting, &text(row.get("value")?), None));
    }
    Some(items)
}

/// `user/setting` -> the value in effect for the user's sessions.
fn user_settings(s: &State, _: Option<&State>) -> Option<Items> {
    let mut items = Items::new();
    if let Some(config) = &s.config {
        config.get("users")?;
        // where each setting got its value: through the user's profile, else the default profile
        let effective_at = |profile: &str| {
            list(config.get("profiles"))
                .find(|p| p.get("name").and_then(Value::as_str) == Some(profile))
                .and_then(|p| p.get("effective_at"))
                .and_then(Value::as_object)
        };
        let default_profile = config.get("default_profile").and_then(Value::as_str).unwrap_or("default");
        for user in list(config.get("users")) {
            let name = text(user.get("name")?);
            let own = effective_at(user.get("profile").and_then(Value::as_str).unwrap_or(default_profile));
            let default = effective_at(default_profile);
            for (setting, value) in user.get("settings").and_then(Value::as_object).into_iter().flatten() {
                let at = own.and_then(|a| a.get(setting)).or_else(|| default.and_then(|a| a.get(setting)));
                items.insert(format!("{name}/{setting}"), item(setting, &text(value), at));
            }
        }
        return Some(items);
    }
    let live = s.live.as_ref()?;
    live.get("user_settings")?;
    for user in list(live.get("user_settings")) {
        let name = text(user.get("user")?);
        for (setting, value) in user.get("settings").and_then(Value::as_object).into_iter().flatten() {
            items.insert(format!("{name}/{setting}"), item(setting, &text(value), None));
        }
    }
    Some(items)
}

/// How a config's authentication reads in system.users.
fn auth_name(config: &str) -> &str {
    match config {
        "plaintext" => "plaintext_password",
        "sha256" => "sha256_password",
        "double_sha1" => "double_sha1_password",
        "bcrypt" => "bcrypt_password",
        "none" | "implicit_none" => "no_password",
        "ssl_certificates" => "ssl_certificate",
        "ssh_keys" => "ssh_key",
        other => other,
    }
}

/// A network as system.users shows it: the loopback addresses are `localhost`.
fn network(kind: &str, value: &str) -> String {
    match (kind, value) {
        ("ip", "127.0.0.1" | "::1" | "127.0.0.1/32" | "::1/128") | ("host", "localhost") => "localhost".into(),
        ("ip", "0.0.0.0/0") => "ip ::/0".into(),
        _ => format!("{kind} {value}"),
    }
}

/// `user.auth`, `user.networks`, `user.profile`.
fn users(s: &State, _: Option<&State>) -> Option<Items> {
    let mut items = Items::new();
    if let Some(config) = &s.config {
        config.get("users")?;
        for user in list(config.get("users")) {
            let name = text(user.get("name")?);
            let auth = auth_name(&text(user.get("auth").unwrap_or(&Value::Null))).to_string();
            items.insert(format!("{name}.auth"), item("auth", &auth, user.get("auth_at")));
            let networks = user.get("networks");
            let mut nets: BTreeSet<String> = BTreeSet::new();
            for (kind, field) in [("ip", "ip"), ("host", "host"), ("regexp", "host_regexp")] {
                for v in list(networks.and_then(|n| n.get(field))) {
                    nets.insert(network(kind, &text(v)));
                }
            }
            if nets.is_empty() {
                nets.insert("ip ::/0".into());
            }
            let nets = nets.into_iter().collect::<Vec<_>>().join(", ");
            items.insert(format!("{name}.networks"), item("networks", &nets, user.get("networks_at")));
            let profile = text(user.get("profile").unwrap_or(&Value::Null));
            items.insert(format!("{name}.profile"), item("profile", &profile, user.get("at")));
        }
        return Some(items);
    }
    let live = s.live.as_ref()?;
    live.get("users")?;
    for user in list(live.get("users")) {
        let name = text(user.get("name")?);
        let auth = text(user.get("auth_type").unwrap_or(&Value::Null));
        let auth = auth.trim_matches(['[', ']']).split(',').map(|a| a.trim().trim_matches('\'')).collect::<Vec<_>>();
        items.insert(format!("{name}.auth"), item("auth", &auth.join(", "), None));
        let mut nets: BTreeSet<String> = BTreeSet::new();
        for (kind, field) in
            [("ip", "host_ip"), ("host", "host_names"), ("regexp", "host_names_regexp"), ("like", "host_names_like")]
        {
            for v in list(user.get(field)) {
                nets.insert(network(kind, &text(v)));
            }
        }
        let nets = nets.into_iter().collect::<Vec<_>>().join(", ");
        items.insert(format!("{name}.networks"), item("networks", &nets, None));
    }
    let mut profiles: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for row in list(live.get("user_profiles")) {
        if let (Some(user), Some(profile)) = (row.get("user_name"), row.get("inherit_profile").filter(|p| !p.is_null()))
        {
            profiles.entry(text(user)).or_default().push(text(profile));
        }
    }
    for (user, given) in profiles {
        if items.contains_key(&format!("{user}.auth")) {
            items.insert(format!("{user}.profile"), item("profile", &given.join(", "), None));
        }
    }
    Some(items)
}

/// `user: ACCESS` (or `role ...`) -> granted, with or without the grant option.
fn grants(s: &State, _: Option<&State>) -> Option<Items> {
    let live = s.live.as_ref()?;
    live.get("grants")?;
    let mut items = Items::new();
    for row in list(live.get("grants")) {
        let who = match (row.get("user_name").filter(|v| !v.is_null()), row.get("role_name").filter(|v| !v.is_null())) {
            (Some(user), _) => text(user),
            (None, Some(role)) => format!("role {}", text(role)),
            _ => continue,
        };
        let option = row.get("grant_option").is_some_and(|v| v.as_u64() == Some(1) || v.as_bool() == Some(true));
        let value = if option { "granted with grant option" } else { "granted" };
        items.insert(format!("{who}: {}", text(row.get("access_type")?)), item("grant", value, None));
    }
    Some(items)
}

/// Disks: against the other kind, which exist; else each one's type and settings.
fn disks(s: &State, other: Option<&State>) -> Option<Items> {
    let cross = other.is_some();
    let mut items = Items::new();
    if let Some(config) = &s.config {
        for disk in list(config.get("disks")) {
            let name = text(disk.get("name")?);
            items.insert(name.clone(), item("disk", "declared", disk.get("at")));
            if cross {
                continue;
            }
            items.insert(format!("{name}.type"), item("type", &text(disk.get("type")?), disk.get("at")));
            for (k, v) in disk.get("settings").and_then(Value::as_object).into_iter().flatten() {
                items.insert(format!("{name}.{k}"), item(k, &text(v), disk.get("at")));
            }
        }
        if cross && !items.contains_key("default") {
            items.insert("default".into(), item("disk", "declared", None));
        }
        return Some(items);
    }
    let live = s.live.as_ref()?;
    live.get("disks")?;
    for disk in list(live.get("disks")) {
        let name = text(disk.get("name")?);
        items.insert(name.clone(), item("disk", "declared", None));
        if cross {
            continue;
        }
        for k in [
            "type",
            "object_storage_type",
            "metadata_type",
            "path",
            "cache_path",
            "keep_free_space",
            "is_encrypted",
            "is_read_only",
            "is_write_once",
        ] {
            if let Some(v) = disk.get(k) {
                items.insert(format!("{name}.{k}"), item(k, &text(v), None));
            }
        }
    }
    Some(items)
}

/// `policy/volume` -> its disks.
fn policies(s: &State, other: Option<&State>) -> Option<Items> {
    let mut items = Items::new();
    if let Some(config) = &s.config {
        for policy in list(config.get("policies")) {
            let name = text(policy.get("name")?);
            for volume in list(policy.get("volumes")) {
                let disks: Vec<String> = list(volume.get("disks")).map(text).collect();
                let key = format!("{name}/{}", text(volume.get("name")?));
                items.insert(key, item("disks", &disks.join(", "), volume.get("at")));
            }
        }
        if other.is_some() && !items.keys().any(|k| k.starts_with("default/")) {
            items.insert("default/default".into(), item("disks", "default", None));
        }
        return Some(items);
    }
    let live = s.live.as_ref()?;
    live.get("storage_policies")?;
    for row in list(live.get("storage_policies")) {
        let disks: Vec<String> = list(row.get("disks")).map(text).collect();
        let key = format!("{}/{}", text(row.get("policy_name")?), text(row.get("volume_name")?));
        items.insert(key, item("disks", &disks.join(", "), None));
    }
    Some(items)
}

fn version(s: &State, _: Option<&State>) -> Option<Items> {
    let live = s.live.as_ref()?;
    let version = crate::facts::live_text(live, "version");
    Some([("version".to_string(), item("version", version, None))].into())
}

fn macros(s: &State) -> Option<Items> {
    let config = s.config.as_ref()?;
    let values = config.get("macros")?.as_object()?;
    Some(values.iter().map(|(k, v)| (k.clone(), item(k, &text(v), None))).collect())
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

    #[test]
    fn values_compare_as_settings() {
        assert!(same(Some("1"), Some("true")));
        assert!(same(Some("100"), Some("100.0")));
        assert!(same(Some("10Gi"), Some("10737418240")));
        assert!(!same(Some("abc"), Some("abd")));
        assert!(!same(Some("100"), Some("200")));
        assert!(!same(Some("1"), None));
        assert!(same(None, None));
    }

    fn state(kind: Kind, config: Option<Value>, live: Option<Value>) -> State {
        State {
            label: kind.name().into(),
            kind,
            config: config.and_then(|c| c.as_object().cloned()),
            live,
            findings: BTreeMap::new(),
            judged: BTreeSet::new(),
            inputs: Vec::new(),
        }
    }

    #[test]
    fn a_config_against_a_server_compares_the_settings_the_server_has() {
        let config = state(
            Kind::Config,
            Some(serde_json::json!({
                "server": {"max_concurrent_queries": "100", "path": "/var/lib/clickhouse/", "keep_alive_timeout": "10"},
                "server_at": {"max_concurrent_queries": "config.xml:3:5", "keep_alive_timeout": "config.d/a.xml:2:5"},
            })),
            None,
        );
        let server = state(
            Kind::Server,
            None,
            Some(serde_json::json!({
                "version": "25.8.2.1",
                "server_settings": {
                    "max_concurrent_queries": {"value": "100", "default": "0", "changed": true},
                    "keep_alive_timeout": {"value": "30", "default": "30", "changed": false},
                    "max_connections": {"value": "2048", "default": "4096", "changed": true},
                },
            })),
        );
        let drift = compare(&config, &server, false);
        let settings = &drift.sections.iter().find(|s| s.section == "server settings").unwrap();
        // `path` is no server setting of this server: not compared
        assert_eq!(settings.compared, 3);
        let keys: Vec<&str> = settings.differences.iter().map(|d| d.key.as_str()).collect();
        assert_eq!(keys, ["keep_alive_timeout", "max_connections"]);
        let left_alone = &settings.differences[1];
        assert_eq!(left_alone.a.as_ref().unwrap().value, "4096");
        assert!(left_alone.a.as_ref().unwrap().default);
        assert_eq!(settings.differences[0].a.as_ref().unwrap().at.as_deref(), Some("config.d/a.xml:2:5"));
        assert_eq!(drift.status, Status::Failing);
        assert!(drift.findings.is_none());
        let not_compared: Vec<&str> = drift.not_compared.iter().map(|n| n.section).collect();
        assert!(not_compared.contains(&"grants") && not_compared.contains(&"findings"), "{not_compared:?}");
    }

    #[test]
    fn a_finding_of_a_rule_one_side_could_not_judge_is_no_drift() {
        let finding = |rule: &str, fingerprint: &str| FindingItem {
            rule_id: rule.into(),
            severity: crate::rules::Severity::Low,
            title: "t".into(),
            object: None,
            fingerprint: fingerprint.into(),
        };
        let live = serde_json::json!({"version": "25.8.2.1"});
        let mut a = state(Kind::Snapshot, None, Some(live.clone()));
        let mut b = state(Kind::Server, None, Some(live));
        a.findings.insert("f1".into(), finding("log-rule", "f1"));
        a.findings.insert("f2".into(), finding("live-rule", "f2"));
        a.judged = ["log-rule".to_string(), "live-rule".to_string()].into();
        b.judged = ["live-rule".to_string()].into();
        let drift = compare(&a, &b, false);
        let findings = drift.findings.as_ref().unwrap();
        assert_eq!(findings.gone.iter().map(|f| f.rule_id.as_str()).collect::<Vec<_>>(), ["live-rule"]);
        assert!(findings.new.is_empty());
        let note = drift.not_compared.iter().find(|n| n.section == "findings").unwrap();
        assert!(note.reason.contains("log-rule"), "{}", note.reason);
    }

    #[test]
    fn secrets_are_masked() {
        assert_eq!(item("secret_access_key", "abc", None).value, crate::mask::MASK);
        assert_eq!(item("max_threads", "8", None).value, "8");
    }
}
