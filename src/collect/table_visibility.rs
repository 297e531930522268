//! A user who may read the system tables but not show the other databases (`SHOW
//! DATABASES, SHOW TABLES`) sees no row of their tables in system.tables, system.parts,
//! system.replicas, ...: every rule about tables would pass on nothing. Measured on 25.8 with
//! `GRANT SELECT ON system.*` alone: system.databases shows it `system` only, not even
//! `default`, which every server has. When the auditing user sees no database but the system
//! ones, the facts read from those system tables are unavailable, saying which grant is missing.

use super::{Answer, Unread};
use crate::facts::keys::live;

/// The facts whose rows are the user tables the auditing user may see.
const PER_TABLE: [&str; 9] = [
    live::TABLES.name(),
    live::PARTS.name(),
    live::PARTITIONS.name(),
    live::DETACHED_PARTS.name(),
    live::MUTATIONS.name(),
    live::REPLICAS.name(),
    live::REPLICATION_QUEUE.name(),
    live::DISTRIBUTION_QUEUE.name(),
    live::PROJECTIONS.name(),
];

const SYSTEM_DATABASES: [&str; 3] = ["system", "information_schema", "INFORMATION_SCHEMA"];

/// Makes the per-table answers unavailable when the `databases` answer holds no database
/// but the system ones.
pub(crate) fn mark(answers: &mut [Answer<'_>], user: &str) {
    let Some((_, Ok(rows))) = answers.iter().find(|(name, _)| *name == live::DATABASES.name()) else { return };
    let Ok(rows) = rows.clone().into_values() else { return };
    let sees_a_user_database =
        rows.iter().any(|row| row["name"].as_str().is_some_and(|name| !SYSTEM_DATABASES.contains(&name)));
    if sees_a_user_database {
        return;
    }
    let label = Unread::PermissionDenied.label();
    for (name, answer) in answers.iter_mut().filter(|(name, _)| PER_TABLE.contains(name)) {
        if answer.is_ok() {
            *answer = Err(format!(
                "{label}: chaudit's user `{user}` sees no database but the system ones (not even `default`), so \
                 system.{name} shows it no table (it needs `GRANT SHOW DATABASES, SHOW TABLES ON *.* TO {user}`, \
                 which shows tables, not their rows)"
            ));
        }
    }
}
