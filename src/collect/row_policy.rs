//! Row policies on the system tables chaudit reads. A table a policy filters for the
//! auditing user does not show it every row: the facts read from it are unavailable (the
//! rules that read them inconclusive), never a pass on the rows the policy let through.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{Answer, Unread};
use crate::facts::keys;

/// A row of the `row_policies` fact (see collect/plan/).
#[derive(Deserialize)]
struct Policy {
    short_name: String,
    database: String,
    /// '' for every table of the database.
    #[serde(default)]
    table: String,
    #[serde(deserialize_with = "crate::facts::typed::flag")]
    apply_to_all: bool,
    #[serde(default)]
    apply_to_list: Vec<String>,
    #[serde(default)]
    apply_to_except: Vec<String>,
}

impl Policy {
    /// Whether it applies to `user` or one of its enabled `roles`.
    fn applies(&self, user: &str, roles: &[String]) -> bool {
        let named = |list: &[String]| list.iter().any(|n| n == user || roles.contains(n));
        named(&self.apply_to_list) || (self.apply_to_all && !named(&self.apply_to_except))
    }
}

/// The system tables (`''`: all of them) a row policy filters for `user`, with the
/// policies' names, from the `row_policies` answer among `answers` (none when it was not read).
pub(crate) fn filtered(answers: &[Answer], user: &str, roles: &[String]) -> BTreeMap<String, Vec<String>> {
    let mut tables: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let Some((_, Ok(rows))) = answers.iter().find(|(name, _)| *name == keys::live::ROW_POLICIES.name()) else {
        return tables;
    };
    let Ok(rows) = rows.clone().into_values() else { return tables };
    for policy in rows.into_iter().filter_map(|row| Policy::deserialize(row).ok()) {
        if policy.database == "system" && policy.applies(user, roles) {
            tables.entry(policy.table.clone()).or_default().push(policy.short_name);
        }
    }
    tables
}

/// Makes each answer read from a table in `filtered` unavailable, saying which policy;
/// `sql_of` gives an answer's SQL by its name.
pub(crate) fn mark<'a>(
    answers: &mut [Answer<'a>],
    filtered: &BTreeMap<String, Vec<String>>,
    user: &str,
    sql_of: impl Fn(&str) -> Option<&'a str>,
) {
    if filtered.is_empty() {
        return;
    }
    for (name, answer) in answers.iter_mut().filter(|(_, answer)| answer.is_ok()) {
        let Some(sql) = sql_of(name) else { continue };
        let hit = system_tables(sql).into_iter().find_map(|table| {
            let policies = filtered.get(table).or_else(|| filtered.get(""))?;
            Some((table, policies))
        });
        if let Some((table, policies)) = hit {
            let label = Unread::Filtered.label();
            *answer = Err(format!(
                "{label}: system.{table} has row policy {} for chaudit's user `{user}`: its rows are not all the \
                 server's (drop the policy for this user, or audit as a user it does not apply to)",
                policies.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", ")
            ));
        }
    }
}

/// The system tables `sql` reads (`system.NAME`).
pub(crate) fn system_tables(sql: &str) -> Vec<&str> {
    sql.match_indices("system.")
        .filter(|(at, _)| !sql[..*at].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_'))
        .map(|(at, found)| {
            let rest = &sql[at + found.len()..];
            &rest[..rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len())]
        })
        .filter(|table| !table.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::Rows;
    use super::*;

    #[test]
    fn a_policy_for_the_user_or_its_role_makes_the_facts_of_its_table_unavailable() {
        let policies = vec![
            json!({"short_name": "mine", "database": "system", "table": "parts", "is_restrictive": 0,
                   "apply_to_all": 0, "apply_to_list": ["auditors"], "apply_to_except": []}),
            json!({"short_name": "others", "database": "system", "table": "settings", "is_restrictive": 0,
                   "apply_to_all": 1, "apply_to_list": [], "apply_to_except": ["audit"]}),
            json!({"short_name": "app", "database": "app", "table": "t", "is_restrictive": 0,
                   "apply_to_all": 1, "apply_to_list": [], "apply_to_except": []}),
        ];
        let mut answers: Vec<Answer> = vec![
            ("row_policies", Ok(Rows::Parsed(policies))),
            ("parts", Ok(Rows::Parsed(vec![]))),
            ("partitions", Ok(Rows::Parsed(vec![]))),
            ("settings", Ok(Rows::Parsed(vec![]))),
        ];
        let filtered = filtered(&answers, "audit", &["auditors".to_string()]);
        assert_eq!(filtered, BTreeMap::from([("parts".to_string(), vec!["mine".to_string()])]));
        let sql = |name: &str| match name {
            "parts" | "partitions" => Some("SELECT count() FROM system.parts WHERE active"),
            "settings" => Some("SELECT name FROM system.settings"),
            _ => None,
        };
        mark(&mut answers, &filtered, "audit", sql);
        let why = answers[1].1.as_ref().unwrap_err();
        assert!(why.starts_with("filtered by a row policy: system.parts has row policy `mine`"), "{why}");
        assert!(answers[2].1.is_err() && answers[3].1.is_ok());
    }

    #[test]
    fn the_system_tables_a_query_reads() {
        let sql = "SELECT metric FROM system.metrics, (SELECT count() FROM system.processes) WHERE x = 'system'";
        assert_eq!(system_tables(sql), ["metrics", "processes"]);
        assert_eq!(system_tables("SELECT 1 FROM mysystem.t"), Vec::<&str>::new());
    }
}
