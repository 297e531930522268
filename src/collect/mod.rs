//! Collecting facts from a running server: connect (read-only), run the fact plan once per
//! node, and put the answers in the facts document under `live`. A fact that cannot be
//! read is recorded as unavailable, and the rules that need it become inconclusive.

pub mod client;
pub mod dsn;
pub mod host;
pub mod plan;

use serde_json::{Map, Value, json};

pub use client::{CollectError, Session};

/// The `live` document of one node.
pub async fn collect(session: &Session) -> Value {
    let mut live = Map::new();
    let mut unavailable = Map::new();
    live.insert("endpoint".into(), json!(session.endpoint().to_string()));
    live.insert("version".into(), json!(session.version));
    live.insert("readonly".into(), json!(session.readonly));
    let version: Option<crate::version::Version> = session.version.parse().ok();
    for fact in plan::FACTS {
        if let (Some((major, minor)), Some(v)) = (fact.since, version)
            && (v.major, v.minor) < (major, minor)
        {
            unavailable.insert(fact.name.into(), json!(format!("not in ClickHouse {v} (from {major}.{minor})")));
            continue;
        }
        match session.rows(fact.purpose, fact.sql).await {
            Ok(rows) => {
                live.insert(fact.name.into(), keyed_by_name(fact.name, rows));
            }
            Err(e) => {
                unavailable.insert(fact.name.into(), json!(e.to_string()));
            }
        }
    }
    live.insert("unavailable".into(), Value::Object(unavailable));
    live.insert("query_id_prefix".into(), json!(session.query_id_prefix()));
    Value::Object(live)
}

/// The `log` document: workload evidence from query_log over the last `since_seconds`
/// (`plan::log_queries`, and for a review `plan::usage_queries` too).
pub async fn collect_log(session: &Session, since_seconds: u64, queries: Vec<(&str, &str, String)>) -> Value {
    let mut log = Map::new();
    let mut unavailable = Map::new();
    log.insert("window_seconds".into(), json!(since_seconds));
    for (name, purpose, sql) in queries {
        match session.rows(purpose, &sql).await {
            Ok(rows) => {
                log.insert(name.into(), Value::Array(rows));
            }
            Err(e) => {
                unavailable.insert(name.into(), json!(e.to_string()));
            }
        }
    }
    log.insert("unavailable".into(), Value::Object(unavailable));
    Value::Object(log)
}

/// Settings and errors are looked up by name; the rest stay lists of rows.
fn keyed_by_name(name: &str, rows: Vec<Value>) -> Value {
    match name {
        "settings" | "server_settings" | "merge_tree_settings" => {
            let map: Map<String, Value> = rows
                .into_iter()
                .filter_map(|mut r| {
                    let name = r.get("name")?.as_str()?.to_string();
                    r.as_object_mut()?.remove("name");
                    let changed = r["changed"].as_u64().unwrap_or(0) != 0 || r["changed"] == json!(true);
                    r["changed"] = json!(changed);
                    Some((name, r))
                })
                .collect();
            Value::Object(map)
        }
        "errors" => {
            let map: Map<String, Value> = rows
                .into_iter()
                .filter_map(|r| Some((r.get("name")?.as_str()?.to_string(), r["value"].clone())))
                .collect();
            Value::Object(map)
        }
        _ => Value::Array(rows),
    }
}
