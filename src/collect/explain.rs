//! The server's own plan for the query shapes the log cannot judge: query_log shows neither
//! lazy materialization nor a projection index at work, EXPLAIN does. One round trip for at
//! most [`MAX_PLANS`] candidate shapes, after the fact and log queries (one EXPLAIN per round
//! trip for a readonly=1 user: it may not read EXPLAIN as a subquery).

use futures_util::StreamExt;
use serde_json::{Value, json};

use super::Session;
use crate::sql;

/// At most this many EXPLAINs per audit, whatever the workload.
pub const MAX_PLANS: usize = 10;

/// What `--dry-run` says of this round (the shapes are known only from the log's answer).
pub const PURPOSE: &str = "plans of up to 10 candidate query shapes, in one query (one query each for a readonly=1 user; \
     only when the log shows candidates): `EXPLAIN` of a Top-N shape's text with its largest LIMIT, at LIMIT \
     query_plan_max_limit_for_lazy_materialization (does the plan read lazily there?), and `EXPLAIN indexes = 1, \
     projections = 1` of a shape that reads at least half of a table and filters on the leading key of one of its \
     projections (does the plan use one?)";

/// One EXPLAIN to send: the shape, what it checks (`lazy_at_limit`, `projections`), the SQL
/// and what the check is about (for `projections`: the table, the projection whose leading
/// key the shape filters on, and that key).
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub shape: String,
    pub check: &'static str,
    pub sql: String,
    pub about: Value,
}

/// Gives every shape its Top-N reading (`top_n_limit`: the largest LIMIT among its texts, -1
/// for none; `top_n_query`: the text with that LIMIT), since normalized_query_hash ignores
/// literals and `LIMIT 10` and `LIMIT 20000` are one shape.
pub fn read_top_n(shapes: &mut [Value]) {
    for shape in shapes {
        let examples = shape["examples"].as_array().cloned().unwrap_or_default();
        let largest = examples
            .iter()
            .filter_map(Value::as_str)
            .filter_map(|q| sql::top_n(q).map(|t| (t.limit, q)))
            .max_by_key(|(limit, _)| *limit);
        if let Some(object) = shape.as_object_mut() {
            let (limit, query) = largest.map_or((-1, Value::Null), |(l, q)| (i64::try_from(l).unwrap_or(-1), json!(q)));
            object.insert("top_n_limit".into(), json!(limit));
            object.insert("top_n_query".into(), query);
        }
    }
}

/// The shapes worth an EXPLAIN, at most [`MAX_PLANS`]: Top-N shapes above the session's
/// lazy materialization limit (at that limit: would the plan read lazily?), then shapes
/// that read at least half of a table and filter on the leading key of one of its
/// projections (does the plan use it?), by the log's order (total time).
pub fn candidates<Live>(live: &Live, shapes: &[Value]) -> Vec<Candidate>
where
    Live: for<'k> std::ops::Index<&'k str, Output = Value>,
{
    let mut out = Vec::new();
    let settings_allowed = live["readonly"].as_u64() != Some(1);
    let explainable = |q: &str| sql::explainable(q, settings_allowed);
    let lazy_limit = number(&live["settings"]["query_plan_max_limit_for_lazy_materialization"]["value"]);
    if lazy_limit > 0.0 {
        for shape in shapes {
            let Some(query) = shape["top_n_query"].as_str().and_then(explainable) else { continue };
            let Some(top_n) = sql::top_n(&query).filter(|t| t.limit as f64 > lazy_limit) else { continue };
            let at_limit = sql::with_limit(&query, &top_n, lazy_limit as u64);
            out.push(candidate(shape, "lazy_at_limit", format!("EXPLAIN {at_limit}")));
        }
    }
    let name =
        |row: &Value| format!("{}.{}", row["database"].as_str().unwrap_or(""), row["table"].as_str().unwrap_or(""));
    let table_rows = |table: &str| {
        live["parts"].as_array().and_then(|ps| ps.iter().find(|p| name(p) == table).map(|p| number(&p["total_rows"])))
    };
    let projections = live["projections"].as_array().cloned().unwrap_or_default();
    for shape in shapes {
        let Some(example) = shape["example"].as_str().and_then(explainable) else { continue };
        let per_call = number(&shape["read_rows"]) / number(&shape["runs"]).max(1.0);
        let filtered = sql::filter_columns(&example);
        let tables = shape["tables"].as_array().cloned().unwrap_or_default();
        let scanned = |t: &str| table_rows(t).is_some_and(|rows| rows > 0.0 && per_call >= 0.5 * rows);
        // a projection the shape's filter could use: its leading key is filtered on
        let usable = projections.iter().find_map(|p| {
            let table = name(p);
            let key = sql::projection_key(p["query"].as_str()?)?;
            (tables.iter().any(|t| t.as_str() == Some(table.as_str())) && scanned(&table) && filtered.contains(&key))
                .then(|| json!({"table": table, "projection": p["name"], "key": key}))
        });
        if let Some(about) = usable {
            let sql = format!("EXPLAIN indexes = 1, projections = 1 {example}");
            out.push(Candidate { about, ..candidate(shape, "projections", sql) });
        }
    }
    out.truncate(MAX_PLANS);
    out
}

fn candidate(shape: &Value, check: &'static str, sql: String) -> Candidate {
    let shape = shape["shape"].as_str().map_or_else(|| shape["shape"].to_string(), str::to_string);
    Candidate { shape, check, sql, about: Value::Null }
}

/// Every candidate's plan in one query: each plan line a row, tagged with its candidate.
pub fn union_sql(candidates: &[Candidate]) -> String {
    let selects: Vec<String> = candidates
        .iter()
        .enumerate()
        .map(|(i, c)| format!("SELECT {i} AS candidate, explain AS line FROM ({})", c.sql))
        .collect();
    selects.join(" UNION ALL ")
}

/// The plans of `candidates`: each as `{shape, check, sql, plan: [lines]}`, in the
/// candidates' order. One more round trip when the user may run EXPLAIN as a subquery; a
/// readonly=1 user may not (error 164), so each EXPLAIN goes alone, overlapping as the
/// session allows (at most [`MAX_PLANS`] more), and one that fails keeps its error.
pub async fn plans(session: &Session, candidates: &[Candidate]) -> Result<Vec<Value>, String> {
    if candidates.is_empty() {
        return Ok(Vec::new());
    }
    if session.readonly != 1 {
        let rows = session.rows(PURPOSE, &union_sql(candidates)).await.map_err(|e| e.to_string())?;
        return Ok(assemble(candidates, &rows));
    }
    let alone = futures_util::stream::iter(candidates)
        .map(|c| async move { session.rows(PURPOSE, &c.sql).await })
        .buffered(session.in_flight);
    let answers: Vec<_> = alone.collect().await;
    let mut plans = Vec::new();
    for (candidate, answer) in candidates.iter().zip(answers) {
        let mut plan = assemble(std::slice::from_ref(candidate), &[]).remove(0);
        match answer {
            Ok(rows) => plan["plan"] = rows.iter().map(|r| r["explain"].clone()).collect(),
            Err(e) => plan["error"] = json!(e.to_string()),
        }
        plans.push(plan);
    }
    Ok(plans)
}

fn assemble(candidates: &[Candidate], rows: &[Value]) -> Vec<Value> {
    let mut lines: Vec<Vec<Value>> = vec![Vec::new(); candidates.len()];
    for row in rows {
        let index = row["candidate"].as_u64().or_else(|| row["candidate"].as_str()?.parse().ok());
        if let Some(plan) = index.and_then(|i| lines.get_mut(usize::try_from(i).ok()?)) {
            plan.push(row["line"].clone());
        }
    }
    candidates
        .iter()
        .zip(lines)
        .map(|(c, plan)| json!({"shape": c.shape, "check": c.check, "sql": c.sql, "about": c.about, "plan": plan}))
        .collect()
}

fn number(value: &Value) -> f64 {
    value.as_f64().or_else(|| value.as_str()?.parse().ok()).unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_limit_of_a_shape_is_explained_at_the_lazy_limit() {
        let mut shapes = vec![json!({
            "shape": "42", "runs": "4", "read_rows": "10", "tables": ["default.t"], "example": "SELECT * FROM t ORDER BY x LIMIT 10",
            "examples": ["SELECT * FROM t ORDER BY x LIMIT 10", "SELECT * FROM t ORDER BY x LIMIT 20000",
                         "EXPLAIN SELECT * FROM t ORDER BY x LIMIT 90000"]
        })];
        read_top_n(&mut shapes);
        assert_eq!(shapes[0]["top_n_limit"], 20000);
        let live = json!({"settings": {"query_plan_max_limit_for_lazy_materialization": {"value": "10000"}}});
        let found = candidates(&live, &shapes);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].sql, "EXPLAIN SELECT * FROM t ORDER BY x LIMIT 10000");
        let plans = assemble(&found, &[json!({"candidate": 0, "line": "JoinLazyColumnsStep"})]);
        assert_eq!(plans[0]["plan"], json!(["JoinLazyColumnsStep"]));
        assert_eq!(plans[0]["shape"], "42");
    }

    #[test]
    fn full_scans_of_tables_with_projections_are_explained_and_bounded() {
        let shape = |i: usize| {
            json!({"shape": i.to_string(), "runs": "2", "read_rows": "200", "tables": ["db.t"],
                   "example": format!("SELECT * FROM db.t WHERE u = {i}")})
        };
        let shapes: Vec<Value> = (0..20).map(shape).collect();
        let live = json!({"readonly": 1, "projections": [{"database": "db", "table": "t", "name": "by_u", "query": "SELECT _part_offset ORDER BY u"}],
                          "parts": [{"database": "db", "table": "t", "total_rows": "100"}]});
        let found = candidates(&live, &shapes);
        assert_eq!(found.len(), MAX_PLANS);
        assert!(found[0].sql.starts_with("EXPLAIN indexes = 1, projections = 1 SELECT"));
        assert_eq!(found[0].about["projection"], "by_u");
        // a filter the projection's key cannot serve is no candidate
        let mut other = shape(1);
        other["example"] = json!("SELECT * FROM db.t WHERE v = 1");
        assert!(candidates(&live, &[other]).is_empty());
        // SETTINGS would be refused to a readonly auditor; FORMAT cannot stand in a subquery
        let mut with_settings = shape(1);
        with_settings["example"] = json!("SELECT * FROM db.t WHERE u = 1 SETTINGS max_threads = 1");
        assert!(candidates(&live, &[with_settings]).is_empty());
    }
}
