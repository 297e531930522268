//! The `cluster` document: what differs between the replicas (versions, server settings,
//! profile and session settings, disks and policies, query_log) and which replicas could not
//! be read. Computed once; the divergence rules only iterate over it.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::BuildHasher;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::collect::cluster::{Collected, NodeFacts};
use crate::collect::interned::Document;
use crate::facts::rows::{ProfileSetting, ServerSetting, SessionSetting};

pub fn document(cluster: Option<&str>, collected: &Collected) -> Value {
    let reachable: Vec<(&str, &Document)> =
        collected.nodes.iter().filter_map(|n| Some((n.name.as_str(), n.live.as_ref()?))).collect();
    json!({
        "name": cluster.unwrap_or_default(),
        "path": collected.path.name(),
        "nodes": crate::collect::cluster::node_summary(&collected.nodes),
        "unreachable": collected.nodes.iter().filter(|n| n.error.is_some())
            .map(|n| json!({"host": n.name, "error": n.error})).collect::<Vec<_>>(),
        "versions": grouped(reachable.iter().map(|(host, live)| (*host, live["version"].as_str().unwrap_or_default().to_string()))),
        "server_settings": diverging(&reachable, "server_settings", server_values)
            .into_iter()
            .filter(|d| changed_somewhere(&reachable, d["name"].as_str().unwrap_or_default()))
            .collect::<Vec<_>>(),
        // system.settings through clusterAllReplicas carries the auditor's changed settings to
        // every replica: compared only over direct connections
        "session_settings": if collected.path == crate::collect::cluster::Path::Direct {
            diverging(&reachable, "settings", named_values)
        } else {
            Vec::new()
        },
        "profile_settings": diverging(&reachable, "profile_settings", profile_values),
        "storage": storage(&reachable),
        "query_log": query_log(&collected.nodes),
        "partial": partial(&collected.nodes),
    })
}

/// Each comparison with the replicas it could not include and why: a divergence rule that
/// finds nothing in it is inconclusive, naming them, rather than comparing the others and
/// passing.
fn partial(nodes: &[NodeFacts]) -> serde_json::Map<String, Value> {
    let inputs: [(&str, &[&str]); 6] = [
        ("versions", &["version"]),
        ("server_settings", &["server_settings"]),
        ("session_settings", &["settings"]),
        ("profile_settings", &["profile_settings"]),
        ("storage", &["disks", "storage_policies"]),
        ("query_log", &["log_tables"]),
    ];
    let mut out = serde_json::Map::new();
    for (fact, reads) in inputs {
        let unread: Vec<String> = nodes
            .iter()
            .filter_map(|node| match &node.live {
                None => Some(format!("{} not read: {}", node.name, node.error.as_deref().unwrap_or("no answer"))),
                Some(live) => reads.iter().find_map(|input| {
                    let why = live["unavailable"]
                        .get(*input)
                        .map(|w| w.as_str().map_or_else(|| w.to_string(), str::to_string));
                    let why = why.or_else(|| live.get(input).is_none().then(|| "not collected".to_string()))?;
                    Some(format!("live.{input} not read on {}: {why}", node.name))
                }),
            })
            .collect();
        if !unread.is_empty() {
            out.insert(fact.to_string(), json!(format!("leaves out replicas: {}", unread.join("; "))));
        }
    }
    out
}

/// version -> hosts, as a list (sorted by version text).
fn grouped<'a>(items: impl Iterator<Item = (&'a str, String)>) -> Vec<Value> {
    let mut by_value: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for (host, value) in items {
        by_value.entry(value).or_default().push(host);
    }
    by_value.into_iter().map(|(value, hosts)| json!({"version": value, "hosts": hosts})).collect()
}

/// name -> value of the session settings.
fn named_values(settings: &Value) -> BTreeMap<String, String> {
    // a live document's facts have the catalog's shape (collected so, or checked in a snapshot)
    let settings = BTreeMap::<&str, SessionSetting>::deserialize(settings).unwrap_or_default();
    settings.into_iter().map(|(name, row)| (name.to_string(), row.value.into_owned())).collect()
}

/// Server settings are compared where a config sets them on some replica: a value the server
/// derives from the host (max_server_memory_usage from RAM) differs by design.
fn changed_somewhere(reachable: &[(&str, &Document)], name: &str) -> bool {
    reachable.iter().any(|(_, live)| live["server_settings"][name]["changed"] == Value::Bool(true))
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
) -> Vec<Value> {
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
        let per_host: Vec<(&str, &str)> = hosts.iter().map(|(host, group)| (*host, per_group[*group])).collect();
        let shown: Vec<String> = per_host.iter().map(|(h, v)| format!("{h} = {v}")).collect();
        out.push(json!({
            "name": name,
            "values": per_host.iter().map(|(h, v)| json!({"host": h, "value": v})).collect::<Vec<_>>(),
            "shown": shown.join(", "),
        }));
    }
    out
}

/// Disks and storage policies that exist on some replicas only.
fn storage(reachable: &[(&str, &Document)]) -> Vec<Value> {
    let mut out = Vec::new();
    for (kind, fact, column) in [("disk", "disks", "name"), ("storage policy", "storage_policies", "policy_name")] {
        let with_fact: Vec<(&str, BTreeSet<String>)> = reachable
            .iter()
            .filter_map(|(host, live)| {
                let rows = live[fact].as_array()?;
                Some((*host, rows.iter().filter_map(|r| r[column].as_str().map(str::to_string)).collect()))
            })
            .collect();
        let all: BTreeSet<&String> = with_fact.iter().flat_map(|(_, names)| names).collect();
        for name in all {
            let (on, missing): (Vec<_>, Vec<_>) = with_fact.iter().partition(|(_, names)| names.contains(name));
            if !missing.is_empty() {
                out.push(json!({
                    "kind": kind, "name": name,
                    "on": on.iter().map(|(h, _)| *h).collect::<Vec<_>>(),
                    "missing_on": missing.iter().map(|(h, _)| *h).collect::<Vec<_>>(),
                }));
            }
        }
    }
    out
}

/// Where system.query_log exists and where it does not (replicas whose tables could not be
/// listed are in neither list).
fn query_log(nodes: &[NodeFacts]) -> Value {
    let mut present = Vec::new();
    let mut missing = Vec::new();
    for node in nodes {
        let Some(live) = node.live.as_ref().filter(|l| l["log_tables"].is_array()) else { continue };
        if crate::collect::cluster::has_log_table(&live["log_tables"], "query_log") {
            present.push(node.name.as_str());
        } else {
            missing.push(node.name.as_str());
        }
    }
    json!({"present_on": present, "missing_on": missing})
}
