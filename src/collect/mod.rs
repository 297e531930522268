//! Collecting facts from a running server: connect (read-only), run the fact plan once per
//! node, and put the answers in the facts document under `live`. A fact that cannot be
//! read is recorded as unavailable, and the rules that need it become inconclusive.

pub mod client;
pub mod cluster;
pub mod dsn;
pub mod host;
pub mod plan;

use futures_util::stream::{self, StreamExt};
use serde_json::{Map, Value, json};

pub use client::{CollectError, Session};

/// The `live` document of one node.
pub async fn collect(session: &Session) -> Value {
    let version: Option<crate::version::Version> = session.version.parse().ok();
    let mut answers: Vec<Answer> = Vec::new();
    let mut asked = Vec::new();
    for fact in plan::FACTS {
        match skipped(fact, version) {
            Some(why) => answers.push((fact.name, Err(why))),
            None => asked.push(fact),
        }
    }
    // every fact in one round trip; one query per fact when the union fails (a table the
    // user may not read, a server that stopped): then each fact stands or falls alone
    match session.rows(plan::COMBINED_PURPOSE, &plan::combined(&asked)).await {
        Ok(rows) => answers.extend(split_combined(&rows, &asked, &[0], |_| 0).remove(&0).unwrap_or_default()),
        Err(_) => {
            let alone: Vec<Answer> = stream::iter(asked)
                .map(|fact| async move {
                    (fact.name, session.rows(fact.purpose, fact.sql).await.map_err(|e| e.to_string()))
                })
                .buffered(session.in_flight)
                .collect()
                .await;
            answers.extend(alone);
        }
    }
    live_document(
        &session.endpoint().to_string(),
        &session.version,
        session.readonly,
        session.query_id_prefix(),
        answers,
    )
}

/// One fact's answer: its rows, or why it could not be read.
pub(crate) type Answer<'a> = (&'a str, Result<Vec<Value>, String>);

/// What one node gave: its `live` document, its `log` (when a window is asked for) and, for a
/// review, its own settings history when it is newer than the review's.
pub struct NodeDocuments {
    pub live: Value,
    pub log: Option<Value>,
    pub settings_changes: Option<Vec<Value>>,
}

/// Collects one node. `review_history`: the upgrade review is running with a settings
/// history of that version (the workload usage pass is added, and a newer server's own
/// system.settings_changes is read).
pub async fn node(
    session: &Session,
    log_window: Option<u64>,
    review_history: Option<crate::version::Version>,
) -> Result<NodeDocuments, CollectError> {
    let live = collect(session).await;
    let log = match log_window {
        Some(window) => {
            let mut queries = plan::log_queries(window);
            if review_history.is_some() {
                queries.extend(plan::usage_queries(window));
            }
            Some(collect_log(session, window, queries).await)
        }
        None => None,
    };
    let server: Option<crate::version::Version> = session.version.parse().ok();
    let newer = matches!((server, review_history), (Some(v), Some(h)) if (v.major, v.minor) > (h.major, h.minor));
    let settings_changes = if newer {
        let (purpose, sql) = plan::SETTINGS_CHANGES;
        Some(session.rows(purpose, sql).await?)
    } else {
        None
    };
    Ok(NodeDocuments { live, log, settings_changes })
}

/// The rows of a combined fact query (`plan::combined`, `plan::fan_out_combined`) as the
/// answers of each of `nodes`, in one pass over the rows; `node_of` tells a row's node. A
/// fact without rows is an empty answer; a row that is not JSON fails its fact.
pub(crate) fn split_combined<'a>(
    rows: &[Value],
    facts: &[&'a plan::FactQuery],
    nodes: &[u64],
    node_of: impl Fn(&Value) -> u64,
) -> std::collections::BTreeMap<u64, Vec<Answer<'a>>> {
    let mut by_fact: std::collections::HashMap<(u64, &str), Result<Vec<Value>, String>> =
        std::collections::HashMap::new();
    for row in rows {
        let (Some(fact), Some(line)) = (row["fact"].as_str(), row["row"].as_str()) else { continue };
        let entry = by_fact.entry((node_of(row), fact)).or_insert_with(|| Ok(Vec::new()));
        if let Ok(parsed) = entry {
            match serde_json::from_str(line) {
                Ok(value) => parsed.push(value),
                Err(e) => *entry = Err(e.to_string()),
            }
        }
    }
    nodes
        .iter()
        .map(|node| {
            let answers = facts
                .iter()
                .map(|f| (f.name, by_fact.remove(&(*node, f.name)).unwrap_or_else(|| Ok(Vec::new()))))
                .collect();
            (*node, answers)
        })
        .collect()
}

/// Why a fact is not asked of a server of `version` (its table is newer), if so.
pub(crate) fn skipped(fact: &plan::FactQuery, version: Option<crate::version::Version>) -> Option<String> {
    let ((major, minor), v) = (fact.since?, version?);
    ((v.major, v.minor) < (major, minor)).then(|| format!("not in ClickHouse {v} (from {major}.{minor})"))
}

/// A node's `live` document from the answers to the fact plan (an error makes the fact
/// unavailable, and the rules that need it inconclusive).
pub(crate) fn live_document(
    endpoint: &str,
    version: &str,
    readonly: u8,
    query_id_prefix: &str,
    answers: Vec<Answer>,
) -> Value {
    let mut live = Map::new();
    let mut unavailable = Map::new();
    live.insert("endpoint".into(), json!(endpoint));
    live.insert("version".into(), json!(version));
    live.insert("readonly".into(), json!(readonly));
    for (name, answer) in answers {
        match answer {
            Ok(rows) => live.insert(name.into(), keyed_by_name(name, rows)),
            Err(why) => unavailable.insert(name.into(), json!(why)),
        };
    }
    live.insert("unavailable".into(), Value::Object(unavailable));
    live.insert("query_id_prefix".into(), json!(query_id_prefix));
    Value::Object(live)
}

/// A `log` document from the answers to the log queries.
pub(crate) fn log_document(since_seconds: u64, answers: Vec<Answer>) -> Value {
    let mut log = Map::new();
    let mut unavailable = Map::new();
    log.insert("window_seconds".into(), json!(since_seconds));
    for (name, answer) in answers {
        match answer {
            Ok(rows) => log.insert(name.into(), Value::Array(rows)),
            Err(why) => unavailable.insert(name.into(), json!(why)),
        };
    }
    log.insert("unavailable".into(), Value::Object(unavailable));
    Value::Object(log)
}

/// The `log` document: workload evidence from query_log over the last `since_seconds`
/// (`plan::log_queries`, and for a review `plan::usage_queries` too).
pub async fn collect_log(session: &Session, since_seconds: u64, queries: Vec<(&str, &str, String)>) -> Value {
    let answers: Vec<Answer> = stream::iter(queries)
        .map(|(name, purpose, sql)| async move { (name, session.rows(purpose, &sql).await.map_err(|e| e.to_string())) })
        .buffered(session.in_flight)
        .collect()
        .await;
    log_document(since_seconds, answers)
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
