//! Builds the `cluster` document (its types: facts/cluster.rs) from what each replica gave:
//! what differs between the replicas and which could not be read. Computed once; the
//! divergence rules only iterate over it.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::BuildHasher;

use serde::Deserialize;
use serde_json::Value;

use crate::collect::cluster::{Collected, NodeFacts};
use crate::collect::interned::Document;
use crate::facts::cluster::{
    ClusterDocument, Divergence, HostValue, NodeSummary, QueryLogPresence, StorageGap, TableDivergence, Unreachable,
    VersionHosts,
};
use crate::facts::keys::live;
use crate::facts::rows::{ProfileSetting, ServerSetting, SessionSetting};
use crate::facts::typed::{FactKey, FactType};

/// A live fact of a replica as its catalog type; a replica's facts have the catalog's shape
/// (collected so, or checked when a snapshot is read), so another shape reads as empty.
pub(super) fn fact<T: FactType>(live: &Document, key: FactKey<T>) -> T::Read<'_> {
    key.read(live).unwrap_or_default()
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
                version: n.live.as_ref().and_then(|live| live::VERSION.present(live).ok().flatten()),
                error: n.error.clone(),
            })
            .collect(),
        unreachable: collected
            .nodes
            .iter()
            // a replica the audit's deadline cut off is not read, and not said to be unreachable
            .filter(|n| !n.out_of_time)
            .filter_map(|n| Some(Unreachable { host: n.name.clone(), error: n.error.clone()? }))
            .collect(),
        versions: grouped(reachable.iter().map(|(host, live)| (*host, fact(live, live::VERSION)))),
        server_settings: diverging(&reachable, live::SERVER_SETTINGS, server_values)
            .into_iter()
            .filter(|d| changed.contains(d.name.as_str()))
            .collect(),
        merge_tree_settings: diverging(&reachable, live::MERGE_TREE_SETTINGS, merge_tree_values),
        // system.settings through clusterAllReplicas carries the auditor's changed settings to
        // every replica: compared only over direct connections
        session_settings: if collected.path == crate::collect::cluster::Path::Direct {
            diverging(&reachable, live::SETTINGS, named_values)
        } else {
            Vec::new()
        },
        profile_settings: diverging(&reachable, live::PROFILE_SETTINGS, profile_values),
        storage: storage(&reachable),
        tables: tables(&reachable),
        replica_data: super::data::divergent(&reachable),
        shared_replica_names: super::data::shared_replica_names(&reachable),
        query_log: query_log(&collected.nodes),
        partial: partial(&collected.nodes),
    }
}

/// Each comparison with the replicas it could not include and why: a divergence rule that
/// finds nothing in it is inconclusive, naming them, rather than comparing the others and
/// passing.
fn partial(nodes: &[NodeFacts]) -> BTreeMap<String, String> {
    use crate::facts::keys::cluster;
    let inputs: [(&str, &[&str]); 10] = [
        (cluster::VERSIONS.name(), &[live::VERSION.name()]),
        (cluster::SERVER_SETTINGS.name(), &[live::SERVER_SETTINGS.name()]),
        (cluster::MERGE_TREE_SETTINGS.name(), &[live::MERGE_TREE_SETTINGS.name()]),
        (cluster::SESSION_SETTINGS.name(), &[live::SETTINGS.name()]),
        (cluster::PROFILE_SETTINGS.name(), &[live::PROFILE_SETTINGS.name()]),
        (cluster::STORAGE.name(), &[live::DISKS.name(), live::STORAGE_POLICIES.name()]),
        (cluster::TABLES.name(), &[live::TABLES.name()]),
        (cluster::REPLICA_DATA.name(), &[live::REPLICAS.name()]),
        (cluster::SHARED_REPLICA_NAMES.name(), &[live::MACROS.name()]),
        (cluster::QUERY_LOG.name(), &[live::LOG_TABLES.name()]),
    ];
    let unavailable: Vec<BTreeMap<String, String>> = nodes
        .iter()
        .map(|node| node.live.as_ref().map(|live| fact(live, live::UNAVAILABLE)).unwrap_or_default())
        .collect();
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
        let Some(value) = live::SERVER_SETTINGS.json(*live) else { continue };
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

/// name -> value of the MergeTree settings a config changed (`<merge_tree>`); a replica where
/// the config leaves one at its default shows "(not set)".
fn merge_tree_values(merge_tree_settings: &Value) -> BTreeMap<String, String> {
    let settings =
        BTreeMap::<&str, crate::facts::rows::MergeTreeSetting>::deserialize(merge_tree_settings).unwrap_or_default();
    settings.into_iter().map(|(name, row)| (name.to_string(), row.value.into_owned())).collect()
}

/// "profile.setting" -> value, from system.settings_profile_elements.
fn profile_values(profile_settings: &Value) -> BTreeMap<String, String> {
    let rows = Vec::<ProfileSetting>::deserialize(profile_settings).unwrap_or_default();
    rows.into_iter().map(|r| (format!("{}.{}", r.profile_name, r.setting_name), r.value.unwrap_or_default())).collect()
}

/// The names whose value is not the same on every replica that has the fact; a replica
/// without the name shows "(not set)". Each distinct fact is read once (replicas alike share
/// it) and the names are compared between the distinct values, not between every replica.
fn diverging<T>(
    reachable: &[(&str, &Document)],
    fact: FactKey<T>,
    values: impl Fn(&Value) -> BTreeMap<String, String>,
) -> Vec<Divergence> {
    let mut distinct: Vec<BTreeMap<String, String>> = Vec::new();
    let mut by_hash: HashMap<u64, Vec<usize>> = HashMap::new();
    let mut read: HashMap<*const Value, usize> = HashMap::new();
    let mut hosts: Vec<(&str, usize)> = Vec::new();
    for (host, live) in reachable {
        let Some(value) = fact.json(*live).filter(|f| !f.is_null()) else { continue };
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
    for (kind, fact) in [("disk", live::DISKS.name()), ("storage policy", live::STORAGE_POLICIES.name())] {
        let with_fact: Vec<(&str, BTreeSet<String>)> = reachable
            .iter()
            .filter_map(|(host, live)| {
                // a replica whose list could not be read is in neither list
                let rows = Vec::<NamedRow>::deserialize(live.get(fact).filter(|f| f.is_array())?).ok()?;
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

/// A table as the comparison reads it: its engine clause without the settings (and without
/// the Keeper path and replica name of a replicated engine), its settings, its structure.
#[derive(Clone)]
struct TableShape {
    engine: String,
    settings: BTreeMap<String, String>,
    structure: String,
}

/// Tables that are not compared: a materialized view's inner table is named after the view's
/// UUID (`.inner_id.UUID`), which each replica draws for itself.
fn compared(table: &crate::facts::rows::Table) -> bool {
    !table.name.starts_with(".inner") && !table.database.starts_with("_temporary_and_external_tables")
}

/// The user tables the replicas disagree on. Presence is compared across every replica that
/// listed its tables; definitions between replicas of one version (another version may print
/// the same table otherwise).
fn tables(reachable: &[(&str, &Document)]) -> Vec<TableDivergence> {
    use crate::facts::rows::Table;
    // each distinct fact read once (replicas alike share it)
    let mut distinct: Vec<BTreeMap<String, TableShape>> = Vec::new();
    let mut read: HashMap<*const Value, usize> = HashMap::new();
    let mut hosts: Vec<(&str, String, usize)> = Vec::new();
    for (host, live) in reachable {
        // a replica whose tables could not be read is in no list
        let Some(value) = live::TABLES.json(*live).filter(|f| f.is_array()) else { continue };
        let group = *read.entry(std::ptr::from_ref(value)).or_insert_with(|| {
            let rows = Vec::<Table>::deserialize(value).unwrap_or_default();
            let shapes =
                rows.iter().filter(|t| compared(t)).map(|t| (format!("{}.{}", t.database, t.name), shape(t))).collect();
            distinct.push(shapes);
            distinct.len() - 1
        });
        hosts.push((host, fact(live, live::VERSION), group));
    }
    let mut out = Vec::new();
    // one list for every replica (the usual case): nothing differs
    if hosts.len() < 2 || distinct.len() < 2 {
        return out;
    }
    let listed: Vec<(&str, &String, &BTreeMap<String, TableShape>)> =
        hosts.iter().map(|(host, version, group)| (*host, version, &distinct[*group])).collect();
    let names: BTreeSet<&String> = listed.iter().flat_map(|(_, _, shapes)| shapes.keys()).collect();
    for name in names {
        let (on, missing): (Vec<_>, Vec<_>) = listed.iter().partition(|(_, _, shapes)| shapes.contains_key(name));
        let on_hosts: Vec<String> = on.iter().map(|(h, _, _)| h.to_string()).collect();
        if !missing.is_empty() {
            let missing_on: Vec<String> = missing.iter().map(|(h, _, _)| h.to_string()).collect();
            out.push(TableDivergence {
                table: name.clone(),
                kind: "missing".to_string(),
                setting: String::new(),
                shown: format!("exists on {} but not on {}", on_hosts.join(", "), missing_on.join(", ")),
                on: on_hosts.clone(),
                missing_on,
                values: Vec::new(),
            });
        }
        // definitions, between the replicas of one version that have the table
        let versions: BTreeSet<&String> = on.iter().map(|(_, v, _)| *v).collect();
        for version in versions {
            let group: Vec<(&str, &TableShape)> =
                on.iter().filter(|(_, v, _)| *v == version).map(|(h, _, shapes)| (*h, &shapes[name])).collect();
            if group.len() < 2 {
                continue;
            }
            let hosts: Vec<String> = group.iter().map(|(h, _)| h.to_string()).collect();
            let differ = |kind: &str, setting: &str, values: Vec<HostValue>, shown: String| TableDivergence {
                table: name.clone(),
                kind: kind.to_string(),
                setting: setting.to_string(),
                shown,
                on: hosts.clone(),
                missing_on: Vec::new(),
                values,
            };
            let shown = |values: &[HostValue]| {
                values.iter().map(|v| format!("{} = {}", v.host, v.value)).collect::<Vec<_>>().join(", ")
            };
            if group.iter().any(|(_, s)| s.engine != group[0].1.engine) {
                let values: Vec<HostValue> =
                    group.iter().map(|(h, s)| HostValue { host: h.to_string(), value: s.engine.clone() }).collect();
                let text = format!("its engine differs: {}", shown(&values));
                out.push(differ("engine", "", values, text));
            }
            if group.iter().any(|(_, s)| s.structure != group[0].1.structure) {
                let mut alike: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
                for (h, s) in &group {
                    alike.entry(s.structure.as_str()).or_default().push(h);
                }
                let mut groups: Vec<String> = alike.values().map(|hosts| hosts.join(", ")).collect();
                groups.sort();
                let text = format!("its columns, indexes or projections differ: {}", groups.join(" | "));
                out.push(differ("structure", "", Vec::new(), text));
            }
            let settings: BTreeSet<&String> = group.iter().flat_map(|(_, s)| s.settings.keys()).collect();
            for setting in settings {
                let value = |s: &TableShape| s.settings.get(setting).map_or("(not set)", String::as_str).to_string();
                if group.iter().all(|(_, s)| value(s) == value(group[0].1)) {
                    continue;
                }
                let values: Vec<HostValue> =
                    group.iter().map(|(h, s)| HostValue { host: h.to_string(), value: value(s) }).collect();
                let text = format!("its setting {setting} differs: {}", shown(&values));
                out.push(differ("setting", setting, values, text));
            }
        }
    }
    out
}

/// A table's engine clause split into its settings and the rest, the replicated engine's
/// Keeper path and replica name left out (written literally, they differ between replicas
/// and shards by design).
fn shape(table: &crate::facts::rows::Table) -> TableShape {
    let full = table.engine_full.as_str();
    let (engine, settings) = match top_level_find(full, " SETTINGS ") {
        Some(at) => (&full[..at], settings_of(&full[at + " SETTINGS ".len()..])),
        None => (full, BTreeMap::new()),
    };
    let engine =
        if table.engine.starts_with("Replicated") { without_replication_args(engine) } else { engine.to_string() };
    TableShape { engine, settings, structure: table.structure_hash.clone() }
}

/// The byte offset of the last `needle` outside quotes and parentheses.
fn top_level_find(text: &str, needle: &str) -> Option<usize> {
    let mut found = None;
    unquoted(text, |i, c, depth| {
        if depth == 0 && !matches!(c, b'(' | b'[' | b')' | b']') && text[i..].starts_with(needle) {
            found = Some(i);
        }
        true
    });
    found
}

/// Calls `each` with the offset, byte and parenthesis depth (before it) of every byte of
/// `text` outside quotes, until `each` returns false.
fn unquoted(text: &str, mut each: impl FnMut(usize, u8, i32) -> bool) {
    let (mut depth, mut quote) = (0i32, None::<u8>);
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        match quote {
            Some(_) if c == b'\\' => i += 1,
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if matches!(c, b'\'' | b'"' | b'`') => quote = Some(c),
            None => {
                if !each(i, c, depth) {
                    return;
                }
                match c {
                    b'(' | b'[' => depth += 1,
                    b')' | b']' => depth -= 1,
                    _ => {}
                }
            }
        }
        i += 1;
    }
}

/// Splits `text` at the commas outside quotes and parentheses.
fn top_level_split(text: &str) -> Vec<&str> {
    let (mut parts, mut start) = (Vec::new(), 0);
    unquoted(text, |i, c, depth| {
        if c == b',' && depth == 0 {
            parts.push(&text[start..i]);
            start = i + 1;
        }
        true
    });
    parts.push(&text[start..]);
    parts
}

/// `a = 1, b = 'x'` as name -> value.
fn settings_of(text: &str) -> BTreeMap<String, String> {
    top_level_split(text)
        .into_iter()
        .filter_map(|item| {
            let (name, value) = item.split_once('=')?;
            Some((name.trim().to_string(), value.trim().to_string()))
        })
        .collect()
}

/// `ReplicatedMergeTree('/path', 'r1', ver) ORDER BY k` with its first two arguments (the
/// Keeper path and the replica name) shown as `?`.
fn without_replication_args(engine: &str) -> String {
    let Some(open) = engine.find('(') else { return engine.to_string() };
    let rest = &engine[open + 1..];
    let Some(close) = closing(rest).map(|at| open + 1 + at) else { return engine.to_string() };
    let args = top_level_split(&engine[open + 1..close]);
    let kept: Vec<&str> = args
        .iter()
        .enumerate()
        .map(|(i, a)| if i < 2 && a.trim().starts_with('\'') { "?" } else { a.trim() })
        .collect();
    format!("{}({}){}", &engine[..open], kept.join(", "), &engine[close + 1..])
}

/// The offset of the `)` closing a parenthesis opened just before `text`.
fn closing(text: &str) -> Option<usize> {
    let mut found = None;
    unquoted(text, |i, c, depth| {
        if c == b')' && depth == 0 {
            found = Some(i);
        }
        found.is_none()
    });
    found
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::rows::Table;

    fn table(engine: &str, engine_full: &str) -> Table {
        Table {
            database: "default".into(),
            name: "t".into(),
            engine: engine.into(),
            engine_full: engine_full.into(),
            ..Table::default()
        }
    }

    #[test]
    fn tables_are_compared_for_presence_everywhere_and_definitions_within_a_version() {
        let mut interner = crate::collect::interned::Interner::default();
        let row = |name: &str, full: &str, hash: &str| {
            serde_json::json!({"database": "default", "name": name, "engine": "ReplicatedMergeTree",
                "engine_full": full, "storage_policy": "default", "structure_hash": hash})
        };
        let t = "ReplicatedMergeTree('/clickhouse/tables/{shard}/default/t', '{replica}') ORDER BY k SETTINGS index_granularity = 8192";
        let r1 = interner.document(serde_json::json!({"version": "25.8.2.1", "tables": [
            row("t", &format!("{t}, min_bytes_for_wide_part = 1"), "1"),
            row(".inner_id.0d3c5a4e-0000-0000-0000-000000000001", "MergeTree ORDER BY k", "2"),
            row("only_here", "MergeTree ORDER BY k", "3"),
        ]}));
        let r2 = interner.document(serde_json::json!({"version": "25.8.2.1", "tables": [
            row("t", t, "1"),
            row(".inner_id.0d3c5a4e-0000-0000-0000-000000000002", "MergeTree ORDER BY k", "2"),
        ]}));
        // another version prints the table otherwise: present, not compared with the others
        let r3 = interner.document(serde_json::json!({"version": "26.9.2.1", "tables": [
            row("t", "ReplicatedMergeTree('/p', 'r3') ORDER BY k", "9"),
        ]}));
        let found = tables(&[("r1", &r1), ("r2", &r2), ("r3", &r3)]);
        let shown: Vec<(&str, &str, &str)> =
            found.iter().map(|d| (d.table.as_str(), d.kind.as_str(), d.shown.as_str())).collect();
        assert_eq!(
            shown,
            [
                ("default.only_here", "missing", "exists on r1 but not on r2, r3"),
                ("default.t", "setting", "its setting min_bytes_for_wide_part differs: r1 = 1, r2 = (not set)"),
            ]
        );
    }

    #[test]
    fn a_table_shape_splits_its_settings_and_leaves_out_the_replica() {
        let t = table(
            "ReplicatedMergeTree",
            "ReplicatedMergeTree('/clickhouse/tables/1/default/t', 'r1', ver) PARTITION BY f(a, 'x, y') ORDER BY k \
             SETTINGS index_granularity = 8192, storage_policy = 'p, q', min_bytes_for_wide_part = 1",
        );
        let s = shape(&t);
        assert_eq!(s.engine, "ReplicatedMergeTree(?, ?, ver) PARTITION BY f(a, 'x, y') ORDER BY k");
        assert_eq!(s.settings.get("storage_policy").unwrap(), "'p, q'");
        assert_eq!(s.settings.get("min_bytes_for_wide_part").unwrap(), "1");
        assert_eq!(s.settings.len(), 3);
        let plain = shape(&table("MergeTree", "MergeTree ORDER BY k"));
        assert_eq!(plain.engine, "MergeTree ORDER BY k");
        assert!(plain.settings.is_empty());
        // a literal replica name is no difference; a SETTINGS inside a string is no clause
        let r2 = shape(&table(
            "ReplicatedMergeTree",
            "ReplicatedMergeTree('/clickhouse/tables/1/default/t', 'r2') ORDER BY k",
        ));
        let r1 = shape(&table(
            "ReplicatedMergeTree",
            "ReplicatedMergeTree('/clickhouse/tables/1/default/t', 'r1') ORDER BY k",
        ));
        assert_eq!(r1.engine, r2.engine);
        let quoted = shape(&table("MergeTree", "MergeTree ORDER BY k COMMENT ' SETTINGS a = 1'"));
        assert!(quoted.settings.is_empty(), "{:?}", quoted.settings);
    }
}
