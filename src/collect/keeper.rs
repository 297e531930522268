//! Facts that live in Keeper or exist only with it, asked after the combined query, alone, of
//! the servers whose metrics show a Keeper session: in the combined query a failure of one
//! would fail every other fact with it.
//! - the distributed DDL queue (system.distributed_ddl_queue): a server without `<zookeeper>`
//!   or `<distributed_ddl>` in its config refuses to read the table (NO_ELEMENTS_IN_CONFIG,
//!   measured on 25.8), and one whose Keeper is away fails it;
//! - the Keeper connections in use (system.zookeeper_connection), which builds without Keeper
//!   lack (clickhouse-local 26.9 has no such table). A server without a session has none.

use super::client::{CollectError, Session};
use super::combined::{Answer, Rows};
use super::{Unread, plan};
use crate::facts::keys;

/// One query asked of a server with a Keeper session.
pub(crate) struct KeeperQuery {
    pub name: &'static str,
    /// What `--dry-run` says of the query.
    pub purpose: &'static str,
    pub sql: &'static str,
    /// The fact on a server without a Keeper session.
    without_session: fn() -> Result<Rows, String>,
    /// Why the fact is missing when the server refuses the query for want of its config
    /// (NO_ELEMENTS_IN_CONFIG, 139).
    refused: &'static str,
}

pub(crate) const QUERIES: [KeeperQuery; 2] = [
    KeeperQuery {
        name: keys::live::DISTRIBUTED_DDL_QUEUE.name(),
        purpose: "ON CLUSTER statements some host has not finished (distributed DDL queue), \
                  only of a server whose metrics show a Keeper session",
        // one row per entry not finished everywhere, oldest first
        sql: "SELECT entry, cluster, substring(any(query), 1, 300) AS query, \
              any(ifNull(initiator_host, '')) AS initiator, dateDiff('second', min(query_create_time), now()) AS age_seconds, \
              count() AS hosts, arraySort(groupArrayIf(concat(ifNull(host, ''), ':', toString(ifNull(port, 0))), \
              isNull(status) OR status != 'Finished')) AS pending, \
              arraySort(groupUniqArrayIf(toString(ifNull(status, 'Unknown')), isNull(status) OR status != 'Finished')) AS statuses \
              FROM system.distributed_ddl_queue GROUP BY entry, cluster HAVING length(pending) > 0 ORDER BY entry LIMIT 100",
        without_session: || Err(no_session()),
        refused: "no distributed DDL queue (the server config has no <distributed_ddl> or <zookeeper>)",
    },
    KeeperQuery {
        name: keys::live::KEEPER_CONNECTIONS.name(),
        purpose: "the Keeper connections in use (one per <zookeeper> and auxiliary Keeper), \
                  only of a server whose metrics show a Keeper session",
        sql: "SELECT name, host, port FROM system.zookeeper_connection",
        without_session: || Ok(Rows::Parsed(Vec::new())),
        refused: "no Keeper connection to list (the server config has no <zookeeper>)",
    },
];

/// Whether a node's `metrics` answer shows a Keeper session; `Err` when it was not read.
pub(crate) fn keeper_session(answers: &[Answer<'_>]) -> Result<bool, String> {
    let Some((_, answer)) = answers.iter().find(|(name, _)| *name == keys::live::METRICS.name()) else {
        return Err(format!("{}: system.metrics was not read", Unread::QueryFailed.label()));
    };
    let rows = answer.clone().map_err(|why| format!("system.metrics was not read: {why}"))?.into_values()?;
    Ok(rows.iter().any(|row| row["metric"] == "ZooKeeperSession" && crate::facts::uint(&row["value"]) > 0))
}

/// Why there is no queue to read on a server without a Keeper session.
pub(crate) fn no_session() -> String {
    format!(
        "{}: no Keeper session (system.metrics ZooKeeperSession = 0): no distributed DDL queue",
        Unread::Missing.label()
    )
}

impl KeeperQuery {
    /// The reason of a failed read: a server configured without what the query reads has
    /// nothing to read (the rules about it do not apply there).
    pub(crate) fn reason(&self, error: &CollectError) -> String {
        match error {
            CollectError::Query { code: Some(139), .. } => {
                format!("{}: {}: {error}", Unread::Missing.label(), self.refused)
            }
            _ => error.reason(),
        }
    }

    /// The fact of a node whose session state is `session`, from the query's `result` (None:
    /// not asked, no node had a session).
    pub(crate) fn answer(
        &self,
        session: Result<bool, String>,
        result: Option<&Result<Rows, String>>,
    ) -> Result<Rows, String> {
        match (session, result) {
            (Ok(true), Some(result)) => result.clone(),
            (Ok(_), _) => (self.without_session)(),
            (Err(why), _) => Err(why),
        }
    }

    /// The fan-out form of its SQL.
    pub(crate) fn fan_out_sql(&self, cluster: &str) -> String {
        plan::fan_out(self.sql, cluster)
    }
}

/// Adds the Keeper facts to one node's answers.
pub(crate) async fn ask(session: &Session, answers: &mut Vec<Answer<'_>>) {
    let has_session = keeper_session(answers);
    for query in &QUERIES {
        let result = match has_session {
            Ok(true) => {
                Some(session.rows(query.purpose, query.sql).await.map(Rows::Parsed).map_err(|e| query.reason(&e)))
            }
            _ => None,
        };
        answers.push((query.name, query.answer(has_session.clone(), result.as_ref())));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn a_server_without_the_config_has_no_queue_and_a_failure_is_a_failure() {
        let refused = CollectError::Query {
            purpose: QUERIES[0].purpose.into(),
            message: "Code: 139. DB::Exception: There is no DistributedDDL configuration in server config. \
                      (NO_ELEMENTS_IN_CONFIG)"
                .into(),
            code: Some(139),
        };
        assert_eq!(Unread::of_reason(&QUERIES[0].reason(&refused)), Some(Unread::Missing));
        assert!(QUERIES[0].reason(&refused).contains("no distributed DDL queue"));
        assert!(QUERIES[1].reason(&refused).contains("no Keeper connection"));
        let lost =
            CollectError::Query { purpose: QUERIES[0].purpose.into(), message: "Keeper".into(), code: Some(999) };
        assert_eq!(Unread::of_reason(&QUERIES[0].reason(&lost)), Some(Unread::QueryFailed));
        assert_eq!(Unread::of_reason(&no_session()), Some(Unread::Missing));
    }

    #[test]
    fn without_a_session_there_is_no_queue_and_no_connection() {
        let [queue, connections] = &QUERIES;
        assert_eq!(Unread::of_reason(&queue.answer(Ok(false), None).unwrap_err()), Some(Unread::Missing));
        assert!(connections.answer(Ok(false), None).unwrap().is_empty());
        assert!(connections.answer(Err("not read".into()), None).is_err());
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
