//! Collecting facts from a running server: connect (read-only), run the fact plan once per
//! node, and put the answers in the facts document under `live`. A fact that cannot be
//! read is recorded as unavailable, and the rules that need it become inconclusive.

pub mod client;
pub mod cluster;
mod combined;
pub mod dsn;
mod empty_password;
pub mod explain;
mod guard;
pub mod host;
pub mod interned;
mod keeper;
mod log;
mod own_failures;
pub mod plan;
mod row_policy;
pub mod scopes;
mod table_visibility;
pub mod user_settings;

use std::sync::Mutex;

use futures_util::stream::{self, StreamExt};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::facts::{keys, typed};

pub use client::{CollectError, Limits, Session, Unread, WAIT_NOTICE_AFTER, Waiting};
pub(crate) use combined::{Answer, Combined, Rows};
use interned::{Document, Interner};
pub(crate) use log::LogDocument;

/// What one node gave: its `live` document, its `log` (when a window is asked for) and, for a
/// review, its own settings history when it is newer than the review's.
pub struct NodeDocuments {
    pub live: Document,
    pub log: Option<Value>,
    pub settings_changes: Option<Vec<Value>>,
}

/// Collects one node: every fact and every log query in one round trip after the connect
/// probe. `review_history`: the upgrade review is running with a settings history of that
/// version (the workload usage pass is added, and a newer server's own
/// system.settings_changes is read).
pub async fn node(
    session: &Session,
    log_window: Option<u64>,
    review_history: Option<crate::version::Version>,
) -> Result<NodeDocuments, CollectError> {
    node_in(session, log_window, review_history, &Mutex::default()).await
}

/// [`node`], its facts held once with `interner`'s for the nodes alike.
pub(crate) async fn node_in(
    session: &Session,
    log_window: Option<u64>,
    review_history: Option<crate::version::Version>,
    interner: &Mutex<Interner>,
) -> Result<NodeDocuments, CollectError> {
    let server: Option<crate::version::Version> = session.version.parse().ok();
    let (asked, mut fact_answers) = facts_for(server);
    let mut logs = log_window.map(plan::log_queries).unwrap_or_default();
    if let (Some(window), Some(_)) = (log_window, review_history) {
        logs.extend(plan::usage_queries(window));
    }
    let (answers, mut log_answers) = ask(session, &asked, &logs).await;
    fact_answers.extend(answers);
    keeper::ask(session, &mut fact_answers).await;
    own_failures::take_out(session, &mut fact_answers).await;
    empty_password::mark(session, &mut fact_answers).await;
    table_visibility::mark(&mut fact_answers, &session.user);
    let filtered = row_policy::filtered(&fact_answers, &session.user, &session.roles);
    row_policy::mark(&mut fact_answers, &filtered, &session.user, |name| {
        plan::FACTS.iter().find(|f| f.name == name).map(|f| f.sql)
    });
    row_policy::mark(&mut log_answers, &filtered, &session.user, |name| {
        logs.iter().find(|(n, _, _)| *n == name).map(|(_, _, sql)| sql.as_str())
    });
    let mut log = log_window.map(|window| LogDocument::new(window, log_answers));
    let live = {
        let mut interner = interner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let endpoint = session.endpoint().to_string();
        let (version, prefix) = (&session.version, session.query_id_prefix());
        let mut live = live_document(&mut interner, &endpoint, version, session.readonly, prefix, fact_answers);
        add_derived(&mut live, &mut interner, log.as_ref());
        live
    };
    if let Some(log) = &mut log {
        log.add_plans(session, &live).await;
    }
    let newer = matches!((server, review_history), (Some(v), Some(h)) if (v.major, v.minor) > (h.major, h.minor));
    let settings_changes = if newer {
        let (purpose, sql) = plan::SETTINGS_CHANGES;
        Some(session.rows(purpose, sql).await?)
    } else {
        None
    };
    Ok(NodeDocuments { live, log: log.map(LogDocument::into_value), settings_changes })
}

/// The facts derived from a node's answers: `live.setting_scopes` (with the workload's `log`)
/// and `live.user_settings`.
/// A derived fact whose input is not of the catalog's shape is unavailable, with that reason.
pub(crate) fn add_derived(live: &mut Document, interner: &mut Interner, log: Option<&LogDocument>) {
    let derived = [
        (keys::live::SETTING_SCOPES.name(), scopes::setting_scopes(live, log).and_then(|rows| to_fact(&rows))),
        (keys::live::USER_SETTINGS.name(), user_settings::user_settings(live).and_then(|rows| to_fact(&rows))),
    ];
    for (fact, value) in derived {
        match value {
            Ok(value) => live.set(interner, fact, value),
            Err(why) => {
                // collected so: `unavailable` has the catalog's shape
                let mut unavailable = keys::live::UNAVAILABLE.read(&*live).unwrap_or_default();
                unavailable.insert(fact.to_string(), why);
                live.set(interner, keys::live::UNAVAILABLE.name(), json!(unavailable));
            }
        }
    }
}

/// Why facts could not be read (or are absent), by fact: a document's `unavailable` and `absent`.
type Reasons = std::collections::BTreeMap<String, String>;

fn to_fact(rows: &impl serde::Serialize) -> Result<Value, String> {
    serde_json::to_value(rows).map_err(|e| e.to_string())
}

/// The facts a server of `version` can answer, and the answers (why not) of those it cannot.
pub(crate) fn facts_for(
    version: Option<crate::version::Version>,
) -> (Vec<&'static plan::FactQuery>, Vec<Answer<'static>>) {
    let mut asked = Vec::new();
    let mut answers = Vec::new();
    for fact in plan::FACTS {
        match skipped(fact, version) {
            Some(why) => answers.push((fact.name, Err(why))),
            None => asked.push(fact),
        }
    }
    (asked, answers)
}

/// A log query: its name (the key under `log`), purpose and SQL.
pub(crate) type LogQuery = (&'static str, &'static str, String);

/// The facts' and the log queries' answers, in one round trip: the union of them all;
/// when it fails (a table the user may not read, a replica without query_log, a server
/// that stopped), the facts' union and each log query alone; when that fails too, one
/// query per fact, so that each stands or falls alone.
async fn ask<'a>(
    session: &Session,
    facts: &[&'a plan::FactQuery],
    logs: &'a [LogQuery],
) -> (Vec<Answer<'a>>, Vec<Answer<'a>>) {
    let parts = plan::parts(facts, logs);
    if !logs.is_empty()
        && let Ok(mut answers) = combined_answers(session, &parts).await
    {
        let log_answers = answers.split_off(facts.len());
        return (answers, log_answers);
    }
    let fact_parts = &parts[..facts.len()];
    let fact_answers = match combined_answers(session, fact_parts).await {
        Ok(answers) => answers,
        Err(_) => each_alone(session, facts.iter().map(|f| (f.name, f.purpose, f.sql.to_string())).collect()).await,
    };
    // each log query is sent even when system.tables does not list its table: a user denied
    // the table does not see it there either, and only the server's error tells which
    // (a fresh server has no query_log until its first flush: "missing table")
    let log_answers = each_alone(session, logs.to_vec()).await;
    (fact_answers, log_answers)
}

/// The answers of `parts` from one server, in one combined query.
async fn combined_answers<'a>(session: &Session, parts: &[plan::Part<'a>]) -> Result<Vec<Answer<'a>>, CollectError> {
    let sql = plan::combined(parts);
    let mut combined = Combined::read(session, plan::COMBINED_PURPOSE, &sql, &[], parts, false).await?;
    Ok(combined.take(0, parts))
}

/// Queries sent one by one (overlapping as the session allows): each name's rows or error.
async fn each_alone<'a>(session: &Session, queries: Vec<(&'a str, &'a str, String)>) -> Vec<Answer<'a>> {
    stream::iter(queries)
        .map(|(name, purpose, sql)| async move {
            (name, session.rows(purpose, &sql).await.map(Rows::Parsed).map_err(|e| e.reason()))
        })
        .buffered(session.in_flight)
        .collect()
        .await
}

/// Whether a `live` document's `log_tables` name the system table `name`; `None` when
/// they are unknown (not read, or not rows).
pub(crate) fn lists_log_table(live: &impl typed::Facts, name: &str) -> Option<bool> {
    let tables = keys::live::LOG_TABLES.present(live).ok()?;
    Some(tables?.iter().any(|t| t.name == name))
}

/// Why a fact is not asked of a server of `version` (its table is newer), if so.
pub(crate) fn skipped(fact: &plan::FactQuery, version: Option<crate::version::Version>) -> Option<String> {
    let ((major, minor), v) = (fact.since?, version?);
    ((v.major, v.minor) < (major, minor))
        .then(|| format!("{}: not in ClickHouse {v} (from {major}.{minor})", Unread::Missing.label()))
}

/// A node's `live` document from the answers to the fact plan, each fact held (and built)
/// once with `interner` for the nodes alike: an error makes the fact unavailable (the rules
/// that need it inconclusive); a table the server does not have makes it absent (the rules
/// that need it do not apply there).
pub(crate) fn live_document(
    interner: &mut Interner,
    endpoint: &str,
    version: &str,
    readonly: u8,
    query_id_prefix: &str,
    answers: Vec<Answer>,
) -> Document {
    let mut live = Document::default();
    let mut unavailable = Reasons::new();
    let mut absent = Reasons::new();
    live.set(interner, keys::live::ENDPOINT.name(), json!(endpoint));
    live.set(interner, keys::live::VERSION.name(), json!(version));
    live.set(interner, keys::live::READONLY.name(), json!(readonly));
    for (name, answer) in answers {
        // every ClickHouse server has settings: none is an answer of something else
        let answer = answer.and_then(|rows| match rows.is_empty() && name == keys::live::SETTINGS.name() {
            true => Err(format!(
                "{}: no row of system.settings: not a ClickHouse server's answer",
                Unread::BadResponse.label()
            )),
            false => Ok(rows),
        });
        let built = answer.and_then(|rows| match rows {
            Rows::Lines(lines) => interner.built(name, lines, |lines| keyed_by_name(name, combined::values(lines)?)),
            Rows::Parsed(rows) => keyed_by_name(name, rows).map(|value| interner.field(value)),
        });
        match built {
            Ok(field) => live.insert(name, field),
            Err(why) if Unread::of_reason(&why) == Some(Unread::Missing) => {
                absent.insert(name.into(), why);
            }
            Err(why) => {
                unavailable.insert(name.into(), why);
            }
        }
    }
    live.set(interner, keys::live::UNAVAILABLE.name(), json!(unavailable));
    live.set(interner, keys::live::ABSENT.name(), json!(absent));
    live.set(interner, keys::live::QUERY_ID_PREFIX.name(), json!(query_id_prefix));
    live
}

/// What a `live` or `log` document asked for and could not read (its `unavailable`, whose
/// key is given), as `name: reason`: every unavailable fact but those whose table is missing
/// (absent, or too new for the server).
pub fn unread(document: &impl typed::Facts, unavailable: keys::Reasons) -> Vec<String> {
    // a document's `unavailable` has the catalog's shape (collected so): another is empty
    let unavailable = unavailable.read(document).unwrap_or_default();
    unavailable
        .into_iter()
        .filter(|(_, why)| Unread::of_reason(why) != Some(Unread::Missing))
        .map(|(name, why)| format!("{name}: {why}"))
        .collect()
}

/// Settings, errors, metrics and events are looked up by name; the rest stay lists of rows.
/// A row of another shape than its query's fails the fact. Values are read as the catalog
/// types them: numbers the server quoted are numbers.
fn keyed_by_name(name: &str, rows: Vec<Value>) -> Result<Value, String> {
    use keys::live;
    let settings = [live::SETTINGS.name(), live::SERVER_SETTINGS.name(), live::MERGE_TREE_SETTINGS.name()];
    let counters = [live::ERRORS.name(), live::METRICS.name(), live::EVENTS.name()];
    let mut fact = if settings.contains(&name) {
        Value::Object(by_name::<SettingRow>(rows)?)
    } else if counters.contains(&name) {
        Value::Object(by_name::<CounterRow>(rows)?)
    } else {
        Value::Array(rows)
    };
    crate::facts::schema::type_fact(crate::facts::Source::Live.name(), name, &mut fact);
    Ok(fact)
}

/// Rows of `R` as a JSON object: each row's value under its name.
fn by_name<R: for<'de> Deserialize<'de> + Named>(rows: Vec<Value>) -> Result<Map<String, Value>, String> {
    rows.into_iter()
        .map(|row| {
            let row = R::deserialize(row).map_err(|e| format!("{}: {e}", Unread::BadResponse.label()))?;
            Ok(row.keyed())
        })
        .collect()
}

/// A row read by its name.
trait Named {
    /// The row's name and what is kept of it under that name.
    fn keyed(self) -> (String, Value);
}

/// A row of system.settings, system.server_settings or system.merge_tree_settings (which has
/// no default), as its query reads it.
#[derive(Deserialize)]
struct SettingRow {
    name: String,
    value: String,
    default: Option<String>,
    #[serde(deserialize_with = "typed::flag")]
    changed: bool,
}

impl Named for SettingRow {
    fn keyed(self) -> (String, Value) {
        let mut kept = json!({"value": self.value, "changed": self.changed});
        if let Some(default) = self.default {
            kept["default"] = json!(default);
        }
        (self.name, kept)
    }
}

/// A row of system.errors, system.metrics or system.events: its name and value (a number, or
/// text when the server quotes 64-bit integers, kept as the server wrote it).
#[derive(Deserialize)]
pub(crate) struct CounterRow {
    #[serde(alias = "metric", alias = "event")]
    pub(crate) name: String,
    pub(crate) value: Value,
}

impl Named for CounterRow {
    fn keyed(self) -> (String, Value) {
        (self.name, self.value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn document(answers: Vec<Answer>) -> Document {
        live_document(&mut Interner::default(), "default@http://h:8123", "26.9.2.1", 0, "chaudit-1", answers)
    }

    #[test]
    fn settings_and_counters_are_looked_up_by_name() {
        let settings = vec![json!({"name": "max_threads", "value": "8", "default": "auto(2)", "changed": 1})];
        let merge_tree = vec![json!({"name": "parts_to_throw_insert", "value": "600", "changed": 1})];
        let metrics = vec![json!({"metric": "Query", "value": "3"})];
        let live = document(vec![
            ("settings", Ok(Rows::Parsed(settings))),
            ("merge_tree_settings", Ok(Rows::Parsed(merge_tree))),
            ("metrics", Ok(Rows::Parsed(metrics))),
        ]);
        assert_eq!(live["settings"], json!({"max_threads": {"value": "8", "default": "auto(2)", "changed": true}}));
        assert_eq!(live["merge_tree_settings"], json!({"parts_to_throw_insert": {"value": "600", "changed": true}}));
        assert_eq!(live["metrics"], json!({"Query": 3.0}), "a quoted 64-bit count is read as a number");
        assert_eq!(live["unavailable"], json!({}));
    }

    #[test]
    fn a_row_of_another_shape_makes_its_fact_unavailable() {
        let bad_row = vec![json!({"name": "max_threads", "value": 8})];
        let missing = format!("{}: no such table", Unread::Missing.label());
        let live = document(vec![("settings", Ok(Rows::Parsed(bad_row))), ("projections", Err(missing.clone()))]);
        assert!(live.get("settings").is_none());
        let why = live["unavailable"]["settings"].as_str().unwrap();
        assert!(why.starts_with(Unread::BadResponse.label()), "{why}");
        assert_eq!(live["absent"], json!({"projections": missing}), "a missing table is an absence");
    }

    #[test]
    fn a_derived_fact_is_as_unread_as_its_inputs() {
        let mut interner = Interner::default();
        let mut live = live_document(
            &mut interner,
            "default@http://h:8123",
            "26.9.2.1",
            0,
            "chaudit-1",
            vec![("user_profiles", Err("ACCESS_DENIED: not allowed".to_string()))],
        );
        add_derived(&mut live, &mut interner, None);
        let why = crate::facts::derived::derived_unread(&live.to_value(), "setting_scopes").unwrap();
        assert!(why.contains("live.user_profiles") && why.contains("ACCESS_DENIED"), "{why}");
    }
}
