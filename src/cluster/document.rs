//! The `cluster` document: what differs between the replicas (versions, server settings,
//! profile and session settings, disks and policies, query_log) and which replicas could not
//! be read. Computed once; the divergence rules only iterate over it. Its types generate the
//! catalog's `cluster.*` entries (facts/typed.rs).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::BuildHasher;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::collect::cluster::{Collected, NodeFacts};
use crate::collect::interned::Document;
use crate::facts::rows::{ProfileSetting, ServerSetting, SessionSetting};
use crate::facts::typed;

/// The `cluster` document.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct ClusterDocument {
    pub name: String,
    pub path: String,
    pub nodes: Vec<NodeSummary>,
    pub unreachable: Vec<Unreachable>,
    pub partial: BTreeMap<String, String>,
    pub versions: Vec<VersionHosts>,
    pub server_settings: Vec<Divergence>,
    pub session_settings: Vec<Divergence>,
    pub profile_settings: Vec<Divergence>,
    pub storage: Vec<StorageGap>,
    pub query_log: QueryLogPresence,
}

impl ClusterDocument {
    /// The document as the rules read it, each field a typed fact.
    pub fn into_document(self) -> crate::facts::document::Document {
        let mut document = crate::facts::document::Document::default();
        document.insert("name", Box::new(self.name));
        document.insert("path", Box::new(self.path));
        document.insert("nodes", Box::new(self.nodes));
        document.insert("unreachable", Box::new(self.unreachable));
        document.insert("partial", Box::new(self.partial));
        document.insert("versions", Box::new(self.versions));
        document.insert("server_settings", Box::new(self.server_settings));
        document.insert("session_settings", Box::new(self.session_settings));
        document.insert("profile_settings", Box::new(self.profile_settings));
        document.insert("storage", Box::new(self.storage));
        document.insert("query_log", Box::new(self.query_log));
        document
    }
}

crate::fact_object!(NodeSummary { host, reachable, version, error });
crate::fact_object!(Unreachable { host, error });
crate::fact_object!(VersionHosts { version, hosts });
crate::fact_object!(Divergence { name, shown, values });
crate::fact_object!(HostValue { host, value });
crate::fact_object!(StorageGap { kind, name, on, missing_on });
crate::fact_object!(QueryLogPresence { present_on, missing_on });

/// A replica, and whether it was read.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct NodeSummary {
    pub host: String,
    pub reachable: bool,
    pub version: Option<String>,
    pub error: Option<String>,
}

/// A replica that could not be read.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct Unreachable {
    pub host: String,
    pub error: String,
}

/// A version and the replicas running it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct VersionHosts {
    pub version: String,
    pub hosts: Vec<String>,
}

/// A setting whose value is not the same on every replica.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct Divergence {
    pub name: String,
    /// the values and their hosts, as a message shows them
    pub shown: String,
    pub values: Vec<HostValue>,
}

/// A replica's value of a setting ("(not set)" where it has none).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct HostValue {
    pub host: String,
    pub value: String,
}

/// A disk or storage policy that exists on some replicas only.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct StorageGap {
    /// disk or storage policy
    pub kind: String,
    pub name: String,
    pub on: Vec<String>,
    pub missing_on: Vec<String>,
}

/// Where system.query_log exists and where it does not (replicas whose tables could not be
/// listed are in neither list).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct QueryLogPresence {
    pub present_on: Vec<String>,
    pub missing_on: Vec<String>,
}

/// A live fact of a replica as its catalog type; a replica's facts have the catalog's shape
/// (collected so, or checked when a snapshot is read), so another shape reads as empty.
fn fact<'a, T: Deserialize<'a> + Default>(live: &'a Document, name: &str) -> T {
    typed::read(live, "live", name).unwrap_or_default()
}

pub fn document(cluster: Option<&str>, collected: &Collected) -> ClusterDocument {
    let reachable: Vec<(&str, &Document)> =
        collected.nodes.iter().filter_map(|n| Some((n.name.as_str(), n.live.as_ref()?))).collect();
    let changed = changed_server_settings(&reachable);
    ClusterDocument {
        name: cluster.unwrap_or_default().to_string(),
        path: collected.path.name().to_string(),
        nodes: collected
            .nodes
            .iter()
            .map(|n| NodeSummary {
                host: n.name.clone(),
                reachable: n.error.is_none(),
                version: n.live.as_ref().and_then(|live| fact::<Option<String>>(live, "version")),
                error: n.error.clone(),
            })
            .collect(),
        unreachable: collected
            .nodes
            .iter()
            .filter_map(|n| Some(Unreachable { host: n.name.clone(), error: n.error.clone()? }))
            .collect(),
        versions: grouped(reachable.iter().map(|(host, live)| (*host, fact::<String>(live, "version")))),
        server_settings: diverging(&reachable, "server_settings", server_values)
            .into_iter()
            .filter(|d| changed.contains(d.name.as_str()))
            .collect(),
        // system.settings through clusterAllReplicas carries the auditor's changed settings to
        // every replica: compared only over direct connections
        session_settings: if collected.path == crate::collect::cluster::Path::Direct {
            diverging(&reachable, "settings", named_values)
        } else {
            Vec::new()
        },
        profile_settings: diverging(&reachable, "profile_settings", profile_values),
        storage: storage(&reachable),
        query_log: query_log(&collected.nodes),
        partial: partial(&collected.nodes),
    }
}

/// Each comparison with the replicas it could not include and why: a divergence rule that
/// finds nothing in it is inconclusive, naming them, rather than comparing the others and
/// passing.
fn partial(nodes: &[NodeFacts]) -> BTreeMap<String, String> {
    let inputs: [(&str, &[&str]); 6] = [
        ("versions", &["version"]),
        ("server_settings", &["server_settings"]),
        ("session_settings", &["settings"]),
        ("profile_settings", &["profile_settings"]),
        ("storage", &["disks", "storage_policies"]),
        ("query_log", &["log_tables"]),
    ];
    let unavailable: Vec<BTreeMap<&str, &str>> =
        nodes.iter().map(|node| node.live.as_ref().map(|live| fact(live, "unavailable")).unwrap_or_default()).collect();
    let mut out = BTreeMap::new();
    for (fact_name, reads) in inputs {
        let unread: Vec<String> = nodes
            .iter()
            .zip(&unavailable)
            .filter_map(|(node, unavailable)| match &node.live {
                None => Some(format!("{} not read: {}", node.name, node.error.as_deref().unwrap_or("no answer"))),
                Some(live) => reads.iter().find_map(|input| {
                    let why = unavailable.get(*input).map(|why| why.to_string());
                    let why = why.or_else(|| live.get(input).is_none().then(|| "not collected".to_string()))?;
                    Some(format!("live.{input} not read on {}: {why}", node.name))
                }),
            })
            .collect();
        if !unread.is_empty() {
            out.insert(fact_name.to_string(), format!("leaves out replicas: {}", unread.join("; ")));
        }
    }
    out
}

/// version -> hosts, as a list (sorted by version text).
fn grouped<'a>(items: impl Iterator<Item = (&'a str, String)>) -> Vec<VersionHosts> {
    let mut by_value: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (host, value) in items {
        by_value.entry(value).or_default().push(host.to_string());
    }
    by_value.into_iter().map(|(version, hosts)| VersionHosts { version, hosts }).collect()
}

/// name -> value of the session settings.
fn named_values(settings: &Value) -> BTreeMap<String, String> {
    // a live document's facts have the catalog's shape (collected so, or checked in a snapshot)
    let settings = BTreeMap::<&str, SessionSetting>::deserialize(settings).unwrap_or_default();
    settings.into_iter().map(|(name, row)| (name.to_string(), row.value.into_owned())).collect()
}

/// The server settings a config sets on some replica: they are the ones compared (a value
/// the server derives from the host, max_server_memory_usage from RAM, differs by design).
/// Replicas alike share their fact, read once.
fn changed_server_settings<'a>(reachable: &[(&str, &'a Document)]) -> BTreeSet<&'a str> {
    let mut read: BTreeSet<*const Value> = BTreeSet::new();
    let mut changed = BTreeSet::new();
    for (_, live) in reachable {
        let Some(value) = live.get("server_settings") else { continue };
        if read.insert(std::ptr::from_ref(value)) {
            let settings = BTreeMap::<&str, ServerSetting>::deserialize(value).unwrap_or_default();
            changed.extend(settings.into_iter().filter(|(_, row)| row.changed).map(|(name, _)| name));
        }
    }
    changed
}

/// Server settings without host-local identity and file locations (ports, host names,
/// paths, logs), which differ between replicas by design.
fn server_values(server_settings: &Value) -> BTreeMap<String, String> {
    let host_local = |name: &str| {
        name.starts_with("logger.")
            || name.starts_with("interserver_")
            || name.ends_with("_port")
            || name.ends_with("_host")
            || name.ends_with("path")
            || name == "display_name"
    };
    let settings = BTreeMap::<&str, ServerSetting>::deserialize(server_settings).unwrap_or_default();
    settings
        .into_iter()
        .filter(|(name, _)| !host_local(name))
        .map(|(name, row)| (name.to_string(), row.value.into_owned()))
        .collect()
}

/// "profile.setting" -> value, from system.settings_profile_elements.
fn profile_values(profile_settings: &Value) -> BTreeMap<String, String> {
    let rows = Vec::<ProfileSetting>::deserialize(profile_settings).unwrap_or_default();
    rows.into_iter().map(|r| (format!("{}.{}", r.profile_name, r.setting_name), r.value.unwrap_or_default())).collect()
}

/// The names whose value is not the same on every replica that has the fact; a replica
/// without the name shows "(not set)". Each distinct fact is read once (replicas alike share
/// it) and the names are compared between the distinct values, not between every replica.
fn diverging(
    reachable: &[(&str, &Document)],
    fact: &str,
    values: impl Fn(&Value) -> BTreeMap<String, String>,
) -> Vec<Divergence> {
    let mut distinct: Vec<BTreeMap<String, String>> = Vec::new();
    let mut by_hash: HashMap<u64, Vec<usize>> = HashMap::new();
    let mut read: HashMap<*const Value, usize> = HashMap::new();
    let mut hosts: Vec<(&str, usize)> = Vec::new();
    for (host, live) in reachable {
        let Some(value) = live.get(fact).filter(|f| !f.is_null()) else { continue };
        let group = *read.entry(std::ptr::from_ref(value)).or_insert_with(|| {
            let named = values(value);
            let alike = by_hash.entry(rustc_hash::FxBuildHasher.hash_one(&named)).or_default();
            alike.iter().copied().find(|i| distinct[*i] == named).unwrap_or_else(|| {
                distinct.push(named);
                alike.push(distinct.len() - 1);
                distinct.len() - 1
            })
        });
        hosts.push((host, group));
    }
    if hosts.len() < 2 {
        return Vec::new();
    }
    let names: BTreeSet<&String> = distinct.iter().flat_map(|v| v.keys()).collect();
    let mut out = Vec::new();
    for name in names {
        let per_group: Vec<&str> = distinct.iter().map(|v| v.get(name).map_or("(not set)", String::as_str)).collect();
        if per_group.iter().all(|v| *v == per_group[0]) {
            continue;
        }
        let values: Vec<HostValue> = hosts
            .iter()
            .map(|(host, group)| HostValue { host: host.to_string(), value: per_group[*group].to_string() })
            .collect();
        let shown: Vec<String> = values.iter().map(|v| format!("{} = {}", v.host, v.value)).collect();
        out.push(Divergence { name: name.clone(), shown: shown.join(", "), values });
    }
    out
}

/// A row of system.disks or system.storage_policies, by its name.
#[derive(Deserialize)]
struct NamedRow {
    #[serde(alias = "policy_name")]
    name: String,
}

/// Disks and storage policies that exist on some replicas only.
fn storage(reachable: &[(&str, &Document)]) -> Vec<StorageGap> {
    let mut out = Vec::new();
    for (kind, fact_name) in [("disk", "disks"), ("storage policy", "storage_policies")] {
        let with_fact: Vec<(&str, BTreeSet<String>)> = reachable
            .iter()
            .filter_map(|(host, live)| {
                // a replica whose list could not be read is in neither list
                let rows = Vec::<NamedRow>::deserialize(live.get(fact_name).filter(|f| f.is_array())?).ok()?;
                Some((*host, rows.into_iter().map(|r| r.name).collect()))
            })
            .collect();
        let all: BTreeSet<&String> = with_fact.iter().flat_map(|(_, names)| names).collect();
        for name in all {
            let (on, missing): (Vec<_>, Vec<_>) = with_fact.iter().partition(|(_, names)| names.contains(name));
            if !missing.is_empty() {
                out.push(StorageGap {
                    kind: kind.to_string(),
                    name: name.clone(),
                    on: on.iter().map(|(h, _)| h.to_string()).collect(),
                    missing_on: missing.iter().map(|(h, _)| h.to_string()).collect(),
                });
            }
        }
    }
    out
}

/// Where system.query_log exists and where it does not.
fn query_log(nodes: &[NodeFacts]) -> QueryLogPresence {
    let mut presence = QueryLogPresence::default();
    for node in nodes {
        let Some(listed) = node.live.as_ref().and_then(|l| crate::collect::lists_log_table(l, "query_log")) else {
            continue;
        };
        if listed {
            presence.present_on.push(node.name.clone());
        } else {
            presence.missing_on.push(node.name.clone());
        }
    }
    presence
}
