//! A user who may read the system tables but lacks `SHOW TABLES` sees no row of another
//! database's table in system.tables, system.parts, system.replicas, ...: every rule about
//! tables would pass on nothing (measured on 25.8 with `GRANT SELECT ON system.*` alone).
//! When the auditing user sees no table while the server has some (NumberOfTables), the facts
//! read from those system tables are unavailable, saying which grant is missing.

use super::{Answer, Unread};

/// The facts whose rows are the user tables the auditing user may see.
const PER_TABLE: [&str; 9] = [
    "tables",
    "parts",
    "partitions",
    "detached_parts",
    "mutations",
    "replicas",
    "replication_queue",
    "distribution_queue",
    "projections",
];

/// Makes the per-table answers unavailable when `tables` is empty while `table_count` says
/// the server has tables.
pub(crate) fn mark(answers: &mut [Answer<'_>], user: &str) {
    let count = |name: &str| answers.iter().find(|(n, _)| *n == name).and_then(|(_, a)| a.as_ref().ok());
    let Some(server_tables) = count("table_count")
        .and_then(|rows| rows.first())
        .and_then(|row| row["tables"].as_u64().or_else(|| row["tables"].as_str()?.parse().ok()))
    else {
        return;
    };
    let seen_none = count("tables").is_some_and(|rows| rows.is_empty());
    if server_tables == 0 || !seen_none {
        return;
    }
    let label = Unread::PermissionDenied.label();
    for (name, answer) in answers.iter_mut().filter(|(name, _)| PER_TABLE.contains(name)) {
        if answer.is_ok() {
            *answer = Err(format!(
                "{label}: chaudit's user `{user}` sees none of the server's {server_tables} tables in system.{name} \
                 (it needs `GRANT SHOW DATABASES, SHOW TABLES ON *.* TO {user}`, which shows tables, not their rows)"
            ));
        }
    }
}
