//! The connection failures of chaudit's own earlier fan-outs. A fan-out through a node to a
//! replica that is down counts DistributedConnectionFailAtAll on that node, and the counter
//! runs since the server started: every later audit would report the earlier audit's
//! connections as the server's Distributed tables failing (measured on 25.8: all 22 failures
//! counted on a seed were chaudit's own queries, each listing them in query_log ProfileEvents).
//! So each audit takes out of the counts what chaudit's own queries counted since the server
//! started, as far as query_log holds them (the queries of an audit run a few seconds
//! earlier, not yet flushed to the log, still count).

use serde_json::{Map, Value};

use super::client::Session;
use super::combined::{Answer, Rows};
use super::plan::FAN_OUT_FAILURE_EVENTS;
use crate::facts::{keys, uint};

/// What `--dry-run` says of the query.
pub(crate) const PURPOSE: &str = "connection failures chaudit's own earlier fan-outs counted since the server started \
     (query_log), taken out of its connection-failure counts; only when those are not 0";

/// One row: each of [`FAN_OUT_FAILURE_EVENTS`] summed over chaudit's own queries since start.
pub(crate) fn sql() -> String {
    let sums: Vec<String> =
        FAN_OUT_FAILURE_EVENTS.iter().map(|e| format!("sum(ProfileEvents['{e}']) AS {e}")).collect();
    format!(
        "SELECT {} FROM system.query_log WHERE query_id LIKE 'chaudit-%' AND type != 'QueryStart' \
         AND event_time >= now() - uptime()",
        sums.join(", ")
    )
}

/// Whether any failure counter is above 0 in `events` (event -> count).
pub(crate) fn any_counted(events: &Map<String, Value>) -> bool {
    FAN_OUT_FAILURE_EVENTS.iter().any(|e| events.get(*e).is_some_and(|v| uint(v) > 0))
}

/// What chaudit's own queries counted since start, by event; None when query_log could not be
/// read (the counts then stay as the server gives them).
pub(crate) async fn counted(session: &Session) -> Option<Map<String, Value>> {
    let rows = session.rows(PURPOSE, &sql()).await.ok()?;
    rows.into_iter().next()?.as_object().cloned()
}

/// `events` without what chaudit's own queries counted; a counter that drops to 0 is left out,
/// as system.events lists only the events that happened.
pub(crate) fn subtract(events: &mut Map<String, Value>, own: &Map<String, Value>) {
    for event in FAN_OUT_FAILURE_EVENTS {
        let Some(total) = events.get(event).map(uint) else { continue };
        let left = total.saturating_sub(own.get(event).map_or(0, uint));
        if left == 0 {
            events.remove(event);
        } else {
            events.insert(event.to_string(), Value::from(left));
        }
    }
}

/// A node's `events` answer (rows of event and value) without what chaudit's own queries
/// counted, asked only when a failure counter is above 0.
pub(crate) async fn take_out(session: &Session, answers: &mut [Answer<'_>]) {
    let Some((_, Ok(rows))) = answers.iter_mut().find(|(name, _)| *name == keys::live::EVENTS.name()) else { return };
    let Ok(values) = rows.clone().into_values() else { return };
    let mut events: Map<String, Value> =
        values.iter().filter_map(|row| Some((row["event"].as_str()?.to_string(), row["value"].clone()))).collect();
    if !any_counted(&events) {
        return;
    }
    let Some(own) = counted(session).await else { return };
    subtract(&mut events, &own);
    *rows = Rows::Parsed(
        events.into_iter().map(|(event, value)| serde_json::json!({"event": event, "value": value})).collect(),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_own_failures_are_taken_out_and_a_counter_left_at_0_is_dropped() {
        let mut events = json!({"DistributedConnectionFailAtAll": "22", "DNSError": 3, "ZooKeeperInit": 1});
        let own = json!({"DistributedConnectionFailAtAll": "22", "DNSError": "1"});
        subtract(events.as_object_mut().unwrap(), own.as_object().unwrap());
        assert_eq!(events, json!({"DNSError": 2, "ZooKeeperInit": 1}));
        assert!(any_counted(events.as_object().unwrap()));
        assert!(!any_counted(json!({"ZooKeeperInit": 1}).as_object().unwrap()));
        assert!(
            sql().contains("sum(ProfileEvents['DistributedConnectionFailAtAll']) AS DistributedConnectionFailAtAll")
        );
    }
}
