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
}

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

    /// Records why the plans are not read.
    pub fn plans_unread(&mut self, why: String) {
        self.unavailable.insert(keys::log::PLANS.name().to_string(), why);
    }

    /// Reads each shape's Top-N limit and adds the server's plans of the candidate shapes
    /// (unavailable, with the reason, when the EXPLAIN query fails).
    pub async fn add_plans(&mut self, session: &Session, live: &Document) {
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
