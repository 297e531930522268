//! A node's `log` document as it is collected: each log query's rows by its name, the
//! window they cover, the plans of the candidate shapes, and why a query (or the plans)
//! could not be read. It becomes the facts' JSON once complete.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::explain::{self, Candidate};
use super::{Answer, Document, Rows, Session};
use crate::facts::derived::Plan;
use crate::facts::keys;
use crate::facts::typed::Facts;

#[derive(Debug, Default, Serialize)]
pub(crate) struct LogDocument {
    window_seconds: u64,
    /// Each log query's rows, by its name (`shapes`, `user_settings`, ...).
    #[serde(flatten)]
    answers: BTreeMap<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    plans: Option<Vec<Plan>>,
    /// Why a query, or the plans, could not be read.
    unavailable: BTreeMap<String, String>,
    /// A log a server that has just started has not written yet: no history to judge.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    absent: BTreeMap<String, String>,
}

/// A server up for less than this has had no time to create its log tables: each is
/// created at its first flush of entries (7.5 s after them, by default).
const FRESH_SECONDS: u64 = 60;

impl LogDocument {
    /// The document of the log queries' answers over the last `window_seconds`.
    pub fn new(window_seconds: u64, answers: Vec<Answer>) -> LogDocument {
        let mut log = LogDocument { window_seconds, ..LogDocument::default() };
        for (name, answer) in answers {
            match answer.and_then(Rows::into_values) {
                Ok(rows) => {
                    let mut rows = Value::Array(rows);
                    crate::facts::schema::type_fact("log", name, &mut rows);
                    log.answers.insert(name.to_string(), rows);
                }
                Err(why) => {
                    log.unavailable.insert(name.to_string(), why);
                }
            }
        }
        log
    }

    /// On a server up for less than a minute (`uptime_seconds`, from `live.release`) that
    /// has not flushed any of the logs chaudit reads, a log table that does not exist yet has
    /// written no entry: its queries are absent (their rules do not apply), not unread. Once
    /// one log is flushed, a missing one is a log the config turns off: unread. The plans go
    /// with the query shapes.
    pub fn settle_fresh(&mut self, live: &impl Facts) {
        let uptime = keys::live::RELEASE
            .read(live)
            .ok()
            .and_then(|rows| rows.first().and_then(|r| crate::facts::whole(r.uptime_seconds.0)));
        let Some(uptime) = uptime.filter(|&seconds| seconds < FRESH_SECONDS) else { return };
        // the log tables unknown (not read) say nothing: nothing is settled
        let Some(tables) = keys::live::LOG_TABLES.present(live).ok().flatten() else { return };
        if tables.iter().any(|t| ["query_log", "part_log", "metric_log"].contains(&t.name.as_ref())) {
            return;
        }
        let missing: Vec<String> = self
            .unavailable
            .iter()
            .filter(|(_, why)| super::Unread::of_reason(why) == Some(super::Unread::Missing))
            .map(|(name, _)| name.clone())
            .collect();
        for name in missing {
            self.unavailable.remove(&name);
            let why = format!(
                "the server has been up {uptime} s and has flushed none of its logs: it creates a log table at \
                 its first flush of entries (unless its config turns the log off), so there is no history to \
                 judge yet; audit again in a minute"
            );
            if name == keys::log::SHAPES.name() {
                self.absent.insert(keys::log::PLANS.name().to_string(), why.clone());
            }
            self.absent.insert(name, why);
        }
    }

    /// Records why the plans are not read.
    pub fn plans_unread(&mut self, why: String) {
        self.unavailable.insert(keys::log::PLANS.name().to_string(), why);
    }

    /// Reads each shape's Top-N limit and adds the server's plans of the candidate shapes
    /// (unavailable, with the reason, when the EXPLAIN query fails).
    pub async fn add_plans(&mut self, session: &Session, live: &Document) {
        self.settle_fresh(live);
        let plans = match self.candidates(live) {
            Some(Ok(candidates)) => explain::plans(session, &candidates).await,
            Some(Err(why)) => Err(why),
            None => return,
        };
        self.set_plans(plans);
    }

    /// Reads each shape's Top-N limit and gives the shapes worth an EXPLAIN; `None` without
    /// shapes (the plans are not asked then).
    pub fn candidates(&mut self, live: &Document) -> Option<Result<Vec<Candidate>, String>> {
        let Some(Value::Array(shapes)) = self.answers.get_mut(keys::log::SHAPES.name()) else { return None };
        explain::read_top_n(shapes);
        Some(keys::log::SHAPES.read(&*self).and_then(|shapes| explain::candidates(live, &shapes)))
    }

    /// The plans of the candidates, or why they could not be read.
    pub fn set_plans(&mut self, plans: Result<Vec<Plan>, String>) {
        match plans {
            Ok(plans) => self.plans = Some(plans),
            Err(why) => self.plans_unread(why),
        }
    }

    /// The document as the facts' `log`.
    pub fn into_value(self) -> Value {
        serde_json::to_value(self).expect("a log document serializes")
    }
}

impl Facts for LogDocument {
    fn fact(&self, name: &str) -> Option<&Value> {
        self.answers.get(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn settled(uptime: u64) -> Value {
        let missing =
            format!("{}: query_log: Unknown table expression identifier", super::super::Unread::Missing.label());
        let denied = format!("{}: metric_log", super::super::Unread::PermissionDenied.label());
        let mut log = LogDocument::new(3600, vec![("shapes", Err(missing)), ("lock_series", Err(denied))]);
        log.settle_fresh(&json!({"release": [{"age_days": 3.0, "uptime_seconds": uptime as f64}], "log_tables": []}));
        log.into_value()
    }

    #[test]
    fn a_log_table_a_fresh_server_has_not_created_is_absent_not_unread() {
        let fresh = settled(4);
        let absent = fresh["absent"].as_object().unwrap();
        assert_eq!(absent.keys().collect::<Vec<_>>(), ["plans", "shapes"]);
        assert!(absent["shapes"].as_str().unwrap().contains("up 4 s"));
        // a table the user may not read is unread, however fresh the server
        assert_eq!(fresh["unavailable"].as_object().unwrap().keys().collect::<Vec<_>>(), ["lock_series"]);
        // a server that has flushed another log has query_log turned off
        let mut log = LogDocument::new(
            3600,
            vec![("shapes", Err(format!("{}: query_log", super::super::Unread::Missing.label())))],
        );
        log.settle_fresh(
            &json!({"release": [{"uptime_seconds": 4.0}], "log_tables": [{"name": "metric_log", "engine_full": ""}]}),
        );
        assert!(log.into_value().get("absent").is_none());
        let running = settled(3_600);
        assert!(running.get("absent").is_none());
        assert_eq!(running["unavailable"].as_object().unwrap().len(), 2);
    }
}
