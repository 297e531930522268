//! Every fact and log query in one round trip: the union of the queries, each row a JSON
//! line tagged with its part.

use super::*;

/// One query of a combined query: the name of its answer, the tag of its rows (a log
/// query's is `log.` + its name, apart from the facts') and its SQL.
#[derive(Debug, Clone)]
pub struct Part<'a> {
    pub name: &'a str,
    pub tag: String,
    pub sql: &'a str,
}

/// The parts of a combined query: the facts, then the log queries.
pub fn parts<'a>(facts: &[&'a FactQuery], logs: &'a [(&'static str, &'static str, String)]) -> Vec<Part<'a>> {
    let facts = facts.iter().map(|f| Part { name: f.name, tag: f.name.to_string(), sql: f.sql });
    facts.chain(logs.iter().map(|(name, _, sql)| Part { name, tag: format!("log.{name}"), sql })).collect()
}

/// Every part in one round trip: the union of the queries, each row serialized as a JSON
/// line and tagged with its part. Read as [`COMBINED_FORMAT`].
pub fn combined(parts: &[Part]) -> String {
    format!("SELECT fact, row FROM ({})", union(parts))
}

pub(super) fn union(parts: &[Part]) -> String {
    let selects: Vec<String> = parts
        .iter()
        .map(|p| format!("SELECT '{}' AS fact, formatRowNoNewline('JSONEachRow', *) AS row FROM ({})", p.tag, p.sql))
        .collect();
    selects.join(" UNION ALL ")
}

/// The format combined queries are read in: one line per row, its columns tab-separated and
/// unescaped. The row's JSON holds no tab or line break (JSON escapes them), so it is the
/// line's last column as the server wrote it, parsed once, not a JSON string inside JSON.
pub const COMBINED_FORMAT: &str = "TabSeparatedRaw";

/// The purpose of the combined fact query (`--dry-run`, log_comment).
pub const COMBINED_PURPOSE: &str = "every fact and log query in one query (the queries above, each row as a JSON line)";
