//! The distributed DDL queue (system.distributed_ddl_queue) lives in Keeper: a server without
//! `<zookeeper>` or `<distributed_ddl>` in its config refuses to read the table
//! (NO_ELEMENTS_IN_CONFIG, measured on 25.8), and one whose Keeper is away fails it. So it is
//! not part of the combined query, where it would fail every other fact with it: it is asked
//! after it, alone, of the servers whose metrics show a Keeper session.

use serde_json::Value;

use super::client::{CollectError, Session};
use super::combined::{Answer, Rows};
use super::{Unread, plan};

pub(crate) const NAME: &str = "distributed_ddl_queue";

/// What `--dry-run` says of the query.
pub(crate) const PURPOSE: &str = "ON CLUSTER statements some host has not finished (distributed DDL queue), \
     only of a server whose metrics show a Keeper session";

/// One row per entry not finished everywhere, oldest first.
pub(crate) const SQL: &str = "SELECT entry, cluster, substring(any(query), 1, 300) AS query, \
     any(ifNull(initiator_host, '')) AS initiator, dateDiff('second', min(query_create_time), now()) AS age_seconds, \
     count() AS hosts, arraySort(groupArrayIf(concat(ifNull(host, ''), ':', toString(ifNull(port, 0))), \
     isNull(status) OR status != 'Finished')) AS pending, \
     arraySort(groupUniqArrayIf(toString(ifNull(status, 'Unknown')), isNull(status) OR status != 'Finished')) AS statuses \
     FROM system.distributed_ddl_queue GROUP BY entry, cluster HAVING length(pending) > 0 ORDER BY entry LIMIT 100";

/// Whether a node's `metrics` answer shows a Keeper session; `Err` when it was not read.
pub(crate) fn keeper_session(answers: &[Answer<'_>]) -> Result<bool, String> {
    let Some((_, answer)) = answers.iter().find(|(name, _)| *name == "metrics") else {
        return Err(format!("{}: system.metrics was not read", Unread::QueryFailed.label()));
    };
    let rows = answer.clone().map_err(|why| format!("system.metrics was not read: {why}"))?.into_values()?;
    Ok(rows.iter().any(|row| row["metric"] == "ZooKeeperSession" && number(&row["value"]) > 0))
}

fn number(value: &Value) -> u64 {
    value.as_u64().or_else(|| value.as_str().and_then(|s| s.parse().ok())).unwrap_or(0)
}

/// Why there is no queue to read on a server without a Keeper session.
pub(crate) fn no_session() -> String {
    format!(
        "{}: no Keeper session (system.metrics ZooKeeperSession = 0): no distributed DDL queue",
        Unread::Missing.label()
    )
}

/// The reason of a failed read: a server configured without Keeper or without
/// `<distributed_ddl>` has no queue (the rules about it do not apply there).
pub(crate) fn reason(error: &CollectError) -> String {
    match error {
        CollectError::Query { code: Some(139), .. } => format!(
            "{}: no distributed DDL queue (the server config has no <distributed_ddl> or <zookeeper>): {error}",
            Unread::Missing.label()
        ),
        _ => error.reason(),
    }
}

/// Adds the queue's answer to one node's answers.
pub(crate) async fn ask(session: &Session, answers: &mut Vec<Answer<'_>>) {
    let answer = match keeper_session(answers) {
        Ok(true) => session.rows(PURPOSE, SQL).await.map(Rows::Parsed).map_err(|e| reason(&e)),
        Ok(false) => Err(no_session()),
        Err(why) => Err(why),
    };
    answers.push((NAME, answer));
}

/// The fan-out form of [`SQL`].
pub(crate) fn fan_out_sql(cluster: &str) -> String {
    plan::fan_out(SQL, cluster)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_server_without_the_config_has_no_queue_and_a_failure_is_a_failure() {
        let refused = CollectError::Query {
            purpose: PURPOSE.into(),
            message: "Code: 139. DB::Exception: There is no DistributedDDL configuration in server config. \
                      (NO_ELEMENTS_IN_CONFIG)"
                .into(),
            code: Some(139),
        };
        assert_eq!(Unread::of_reason(&reason(&refused)), Some(Unread::Missing));
        let lost = CollectError::Query { purpose: PURPOSE.into(), message: "Keeper".into(), code: Some(999) };
        assert_eq!(Unread::of_reason(&reason(&lost)), Some(Unread::QueryFailed));
        assert_eq!(Unread::of_reason(&no_session()), Some(Unread::Missing));
    }

    #[test]
    fn the_queue_is_asked_of_a_server_with_a_keeper_session() {
        let metrics = |value: Value| -> Vec<Answer<'static>> {
            vec![("metrics", Ok(Rows::Parsed(vec![json!({"metric": "ZooKeeperSession", "value": value})])))]
        };
        assert_eq!(keeper_session(&metrics(json!("1"))), Ok(true));
        assert_eq!(keeper_session(&metrics(json!(1))), Ok(true));
        assert_eq!(keeper_session(&metrics(json!("0"))), Ok(false));
        assert_eq!(keeper_session(&[("metrics", Ok(Rows::Parsed(vec![])))]), Ok(false));
        assert!(keeper_session(&[("metrics", Err("permission denied: ...".into()))]).is_err());
        assert!(keeper_session(&[]).is_err());
    }
}
