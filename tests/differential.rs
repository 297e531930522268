//! chaudit's merged config against the real ClickHouse engine's own reading of it.
//!
//! Each directory under tests/merge-cases/ is a config tree (config.xml with config.d/,
//! conf.d/, users.xml, ...; an optional `env` file of KEY=VALUE lines for from_env). The
//! engine loads it and reports system.server_settings, clusters, disks, storage_policies,
//! macros and settings_profile_elements; chaudit's tree must say the same. A directory
//! named in CHAUDIT_MERGE_CASES (colon-separated) adds held-out cases.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use chaudit::config::{self, LoadOptions, model};
use serde_json::{Value, json};

fn case_dirs() -> Vec<PathBuf> {
    let mut roots = vec![support::repo_root().join("tests/merge-cases")];
    if let Ok(extra) = std::env::var("CHAUDIT_MERGE_CASES") {
        roots.extend(extra.split(':').filter(|s| !s.is_empty()).map(PathBuf::from));
    }
    let mut dirs = Vec::new();
    for root in roots {
        let mut found: Vec<PathBuf> = std::fs::read_dir(&root)
            .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
            .map(|e| e.unwrap().path())
            .filter(|p| p.join("config.xml").is_file())
            .collect();
        found.sort();
        dirs.extend(found);
    }
    dirs
}

/// Names of the top-level elements any file of the case sets: the server settings to compare.
fn setting_names(loaded: &config::LoadedConfig) -> Vec<String> {
    let mut names = BTreeSet::new();
    for (id, _) in loaded.sources.files() {
        if let Ok(root) = config::files::parse(loaded.sources.file(id), id) {
            names.extend(root.elements().map(|e| e.name.to_string()));
        }
    }
    names.into_iter().collect()
}

fn rows(engine: &Value, key: &str, case: &Path) -> Vec<Value> {
    match &engine[key] {
        Value::Array(rows) => rows.clone(),
        other => panic!("{}: engine could not report {key}: {other}", case.display()),
    }
}

/// What chaudit's tree says, in the engine's row shapes.
fn chaudit_view(loaded: &config::LoadedConfig, settings: &[String], engine: &Value) -> BTreeMap<&'static str, Value> {
    let root = &loaded.server.root;
    let mut view = BTreeMap::new();

    // A setting present in the merged tree is "changed" with the first occurrence's value.
    let known: BTreeSet<String> = engine["server_settings"]
        .as_array()
        .map(|a| a.iter().map(|r| r["name"].as_str().unwrap_or_default().to_string()).collect())
        .unwrap_or_default();
    let server_settings: Vec<Value> = settings
        .iter()
        .filter(|n| known.contains(*n))
        .map(|n| match root.child(n) {
            Some(e) => json!({"name": n, "value": e.value(), "changed": 1}),
            None => json!({"name": n, "changed": 0}),
        })
        .collect();
    view.insert("server_settings", Value::Array(server_settings));

    let mut clusters = Vec::new();
    for c in model::clusters(root) {
        for (s, shard) in c.shards.iter().enumerate() {
            for (r, replica) in shard.iter().enumerate() {
                let mut row =
                    json!({"cluster": c.name, "shard_num": s + 1, "replica_num": r + 1, "host_name": replica.host});
                if let Some(port) = replica.port {
                    row["port"] = json!(port);
                }
                clusters.push(row);
            }
        }
    }
    clusters.sort_by_key(|r| {
        (r["cluster"].as_str().unwrap_or_default().to_string(), r["shard_num"].as_u64(), r["replica_num"].as_u64())
    });
    view.insert("clusters", Value::Array(clusters));

    let mut disks: BTreeSet<String> = model::disks(root).into_iter().map(|d| d.name).collect();
    disks.insert("default".into());
    view.insert("disks", json!(disks));

    let mut policies: Vec<Value> = Vec::new();
    let declared = model::storage_policies(root);
    if !declared.iter().any(|p| p.name == "default") {
        policies.push(
            json!({"policy_name": "default", "volume_name": "default", "volume_priority": 1, "disks": ["default"]}),
        );
    }
    for p in &declared {
        for (i, v) in p.volumes.iter().enumerate() {
            policies.push(
                json!({"policy_name": p.name, "volume_name": v.name, "volume_priority": i + 1, "disks": v.disks}),
            );
        }
    }
    policies
        .sort_by_key(|r| (r["policy_name"].as_str().unwrap_or_default().to_string(), r["volume_priority"].as_u64()));
    view.insert("storage_policies", Value::Array(policies));

    let mut macros: Vec<Value> =
        model::macros(root).into_iter().map(|(m, s)| json!({"macro": m, "substitution": s})).collect();
    macros.sort_by_key(|r| r["macro"].as_str().unwrap_or_default().to_string());
    view.insert("macros", Value::Array(macros));

    let profiles = loaded.users_root().map(model::profiles).unwrap_or_default();
    let mut settings_rows = Vec::new();
    let mut inherits = Vec::new();
    for p in &profiles {
        for s in &p.settings {
            settings_rows.push(json!({"profile_name": p.name, "setting_name": s.name, "value": s.value()}));
        }
        for parent in &p.inherits {
            inherits.push(json!({"profile_name": p.name, "inherit_profile": parent}));
        }
    }
    settings_rows.sort_by_key(|r| (r["profile_name"].to_string(), r["setting_name"].to_string()));
    inherits.sort_by_key(|r| r["profile_name"].to_string());
    view.insert("profile_settings", Value::Array(settings_rows));
    view.insert("profile_inherits", Value::Array(inherits));
    view
}

/// The engine's rows reduced to what chaudit can know offline.
fn engine_view(engine: &Value, chaudit: &BTreeMap<&'static str, Value>, case: &Path) -> BTreeMap<&'static str, Value> {
    let mut view = BTreeMap::new();
    let server_settings: Vec<Value> = rows(engine, "server_settings", case)
        .into_iter()
        .map(|r| match r["changed"].as_u64() {
            Some(1) => json!({"name": r["name"], "value": r["value"], "changed": 1}),
            _ => json!({"name": r["name"], "changed": 0}),
        })
        .collect();
    view.insert("server_settings", Value::Array(server_settings));

    // Ports are compared only where the config sets them (the default depends on the server).
    let ported: BTreeSet<String> = chaudit["clusters"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r.get("port").is_some())
        .map(|r| format!("{}/{}/{}", r["cluster"], r["shard_num"], r["replica_num"]))
        .collect();
    let clusters = rows(engine, "clusters", case)
        .into_iter()
        .map(|mut r| {
            let key = format!("{}/{}/{}", r["cluster"], r["shard_num"], r["replica_num"]);
            if !ported.contains(&key) {
                r.as_object_mut().map(|o| o.remove("port"));
            }
            r
        })
        .collect();
    view.insert("clusters", Value::Array(clusters));
    let disks: BTreeSet<String> =
        rows(engine, "disks", case).iter().map(|r| r["name"].as_str().unwrap_or_default().to_string()).collect();
    view.insert("disks", json!(disks));
    for key in ["storage_policies", "macros"] {
        view.insert(key, Value::Array(rows(engine, key, case)));
    }
    let has_profiles = chaudit["profile_settings"].as_array().is_some_and(|a| !a.is_empty())
        || chaudit["profile_inherits"].as_array().is_some_and(|a| !a.is_empty());
    for key in ["profile_settings", "profile_inherits"] {
        let value = match &engine[key] {
            Value::Array(rows) => Value::Array(rows.clone()),
            // The case's default user may not see profiles; then chaudit must have none to compare.
            _ if !has_profiles => json!([]),
            other => panic!("{}: engine could not report {key}: {other}", case.display()),
        };
        view.insert(key, value);
    }
    view
}

fn check_case(case: &Path) -> Result<(), String> {
    let options = LoadOptions::for_fixture(case);
    let env: Vec<(String, String)> = options.env.clone().into_iter().collect();
    let main = case.join("config.xml");
    let loaded = config::load(&main, &options);
    let settings = match &loaded {
        Ok(l) => setting_names(l),
        Err(_) => Vec::new(),
    };
    let engine = support::engine_probe(&main, &settings, &env);
    match (loaded, engine.get("error")) {
        (Err(ours), Some(theirs)) => {
            eprintln!("{}: both reject it\n  chaudit: {ours}\n  engine: {theirs}", case.display());
            Ok(())
        }
        (Err(ours), None) => Err(format!("{}: chaudit rejects what the engine loads: {ours}", case.display())),
        (Ok(_), Some(theirs)) => Err(format!("{}: the engine rejects what chaudit loads: {theirs}", case.display())),
        (Ok(loaded), None) => {
            let ours = chaudit_view(&loaded, &settings, &engine);
            let theirs = engine_view(&engine, &ours, case);
            let diffs: Vec<String> = ours
                .iter()
                .filter(|(k, v)| theirs.get(*k) != Some(*v))
                .map(|(k, v)| {
                    format!("  {k}:\n    chaudit: {v}\n    engine:  {}", theirs.get(k).unwrap_or(&Value::Null))
                })
                .collect();
            if diffs.is_empty() {
                Ok(())
            } else {
                Err(format!("{}: differs from the engine\n{}", case.display(), diffs.join("\n")))
            }
        }
    }
}

#[test]
fn chaudit_merges_every_case_as_the_engine_does() {
    let cases = case_dirs();
    assert!(cases.len() >= 10, "expected the merge cases in tests/merge-cases, found {}", cases.len());
    support::engine_python(); // install once before the parallel probes
    // Two probes at a time: one engine start per case, two cores.
    let failures: Vec<String> = std::thread::scope(|scope| {
        let chunks: Vec<&[PathBuf]> = cases.chunks(cases.len().div_ceil(2)).collect();
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| scope.spawn(move || chunk.iter().filter_map(|c| check_case(c).err()).collect::<Vec<_>>()))
            .collect();
        handles.into_iter().flat_map(|h| h.join().expect("probe thread")).collect()
    });
    assert!(failures.is_empty(), "{} of {} cases differ:\n{}", failures.len(), cases.len(), failures.join("\n"));
}

/// A MergeTree setting at the server config root does nothing on the engine (the tables keep
/// the default: system.merge_tree_settings has it unchanged); inside `<merge_tree>` it applies.
/// `merge-tree-setting-at-server-root` says so of its fixtures.
#[test]
fn a_merge_tree_setting_at_the_root_is_ignored_by_the_engine() {
    let fixtures = support::repo_root().join("rules/config/merge-tree-setting-at-server-root");
    let changed = |case: &str| {
        let engine = support::engine_probe(&fixtures.join(case).join("config.xml"), &[], &[]);
        let rows = engine["merge_tree_settings"].as_array().unwrap_or_else(|| panic!("{case}: {engine}")).clone();
        rows.iter().any(|r| r["name"] == "allow_nullable_key" && r["value"] == "1")
    };
    assert!(!changed("at-root"), "the engine applied a MergeTree setting written at the root");
    assert!(changed("in-merge-tree"), "the engine did not apply <merge_tree><allow_nullable_key>");
}

/// A user whose `<quota>` names no defined quota runs under none: the engine starts and
/// system.quotas applies no quota to the user; with the quota defined, it applies it.
/// `user-quota-missing` says so of its fixtures.
#[test]
fn a_user_naming_a_missing_quota_runs_under_none() {
    let fixtures = support::repo_root().join("rules/security/user-quota-missing");
    let quotas_of_bi = |case: &str| -> Vec<String> {
        let engine = support::engine_probe(&fixtures.join(case).join("config.xml"), &[], &[]);
        let rows = engine["quotas"].as_array().unwrap_or_else(|| panic!("{case}: {engine}")).clone();
        rows.iter()
            .filter(|r| r["apply_to_list"].as_array().is_some_and(|users| users.iter().any(|u| u == "bi")))
            .map(|r| r["name"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(quotas_of_bi("missing"), Vec::<String>::new(), "a missing quota applied");
    assert_eq!(quotas_of_bi("defined"), vec!["analysts".to_string()]);
}
