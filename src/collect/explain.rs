//! The server's own plan for the query shapes the log cannot judge: query_log shows neither
//! lazy materialization nor a projection index at work, EXPLAIN does. One round trip for at
//! most [`MAX_PLANS`] candidate shapes, after the fact and log queries (one EXPLAIN per round
//! trip for a readonly=1 user: it may not read EXPLAIN as a subquery).

use std::collections::BTreeMap;

use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};

use super::Session;
use crate::facts::derived::{Plan, ProjectionUse};
use crate::facts::keys;
use crate::facts::rows::QueryShape;
use crate::facts::typed::{Count, Facts};
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
/// and, for `projections`, the projection it is about.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub shape: String,
    pub check: &'static str,
    pub sql: String,
    pub about: Option<ProjectionUse>,
}

/// A line of EXPLAIN's answer, alone (`explain`) or in the union (tagged with its candidate).
#[derive(Debug, Deserialize)]
struct PlanLine {
    #[serde(default, deserialize_with = "crate::facts::typed::uint")]
    candidate: u64,
    #[serde(alias = "explain")]
    line: String,
}

/// Gives every shape its Top-N reading (`top_n_limit`: the largest LIMIT among its texts, -1
/// for none; `top_n_query`: the text with that LIMIT), since normalized_query_hash ignores
/// literals and `LIMIT 10` and `LIMIT 20000` are one shape. A shape of another form is left
/// as it is (reading the shapes says what is wrong with it).
pub fn read_top_n(shapes: &mut [Value]) {
    for shape in shapes {
        let Ok(read) = QueryShape::deserialize(&*shape) else { continue };
        let largest = read.examples.iter().filter_map(|q| sql::top_n(q).map(|t| (t.limit, q))).max_by_key(|(l, _)| *l);
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
/// projections (does the plan use it?), by the log's order (total time). A fact of another
/// shape than the catalog's is an error naming it.
pub fn candidates(live: &impl Facts, shapes: &[QueryShape]) -> Result<Vec<Candidate>, String> {
    let readonly = keys::live::READONLY.present(live)?;
    let lazy_limit = keys::live::SETTINGS.entry(live, "query_plan_max_limit_for_lazy_materialization")?;
    let parts = keys::live::PARTS.read(live)?;
    let projections = keys::live::PROJECTIONS.read(live)?;
    let settings_allowed = readonly != Some(Count(1));
    let explainable = |q: &str| sql::explainable(q, settings_allowed);
    let lazy_limit = lazy_limit.and_then(|s| s.value.parse::<f64>().ok()).unwrap_or(0.0);
    let mut out = Vec::new();
    if lazy_limit > 0.0 {
        for shape in shapes {
            let Some(query) = shape.top_n_query.as_deref().and_then(explainable) else { continue };
            let Some(top_n) = sql::top_n(&query).filter(|t| t.limit as f64 > lazy_limit) else { continue };
            let at_limit = sql::with_limit(&query, &top_n, lazy_limit as u64);
            out.push(candidate(shape, "lazy_at_limit", format!("EXPLAIN {at_limit}"), None));
        }
    }
    let table_rows = |table: &str| {
        parts.iter().find(|p| format!("{}.{}", p.database, p.table) == table).map(|p| p.total_rows.0 as f64)
    };
    for shape in shapes {
        let Some(example) = explainable(&shape.example) else { continue };
        let per_call = shape.read_rows.0 / shape.runs.0.max(1.0);
        let filtered = sql::filter_columns(&example);
        let scanned = |t: &str| table_rows(t).is_some_and(|rows| rows > 0.0 && per_call >= 0.5 * rows);
        // a projection the shape's filter could use: its leading key is filtered on
        let usable = projections.iter().find_map(|p| {
            let table = format!("{}.{}", p.database, p.table);
            let key = sql::projection_key(&p.query)?;
            (shape.tables.contains(&table) && scanned(&table) && filtered.contains(&key)).then(|| ProjectionUse {
                table,
                projection: p.name.clone(),
                key,
            })
        });
        if let Some(about) = usable {
            let sql = format!("EXPLAIN indexes = 1, projections = 1 {example}");
            out.push(candidate(shape, "projections", sql, Some(about)));
        }
    }
    out.truncate(MAX_PLANS);
    Ok(out)
}

fn candidate(shape: &QueryShape, check: &'static str, sql: String, about: Option<ProjectionUse>) -> Candidate {
    Candidate { shape: shape.shape.clone(), check, sql, about }
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

/// The plans of `candidates`, in their order. One more round trip when the user may run
/// EXPLAIN as a subquery; a readonly=1 user may not (error 164), so each EXPLAIN goes alone,
/// overlapping as the session allows (at most [`MAX_PLANS`] more), and one that fails keeps
/// its error.
pub async fn plans(session: &Session, candidates: &[Candidate]) -> Result<Vec<Plan>, String> {
    if candidates.is_empty() {
        return Ok(Vec::new());
    }
    if session.readonly != 1 {
        let lines: Vec<PlanLine> =
            session.typed_rows(PURPOSE, &union_sql(candidates), &[]).await.map_err(|e| e.to_string())?;
        return Ok(assemble(candidates, &lines));
    }
    let alone = futures_util::stream::iter(candidates)
        .map(|c| async move { session.typed_rows::<PlanLine>(PURPOSE, &c.sql, &[]).await })
        .buffered(session.in_flight);
    let answers: Vec<_> = alone.collect().await;
    let mut plans = Vec::new();
    for (candidate, answer) in candidates.iter().zip(answers) {
        let mut plan = plan_of(candidate, Vec::new());
        match answer {
            Ok(lines) => plan.plan = lines.into_iter().map(|l| l.line).collect(),
            Err(e) => plan.error = Some(e.to_string()),
        }
        plans.push(plan);
    }
    Ok(plans)
}

/// What `--dry-run --cluster` says of the plan round through the fan-out.
pub const FAN_OUT_PURPOSE: &str = "plans of each replica's candidate query shapes (up to 10 per replica, chosen from its \
     own log and tables as over a direct connection; only when some replica's log shows candidates): every distinct \
     EXPLAIN of the replicas run on every replica through clusterAllReplicas, up to 20 in one query (fewer over a big \
     fleet: each connects to every replica, up to 1,024 connections at once; beyond 512 replicas each EXPLAIN alone), \
     each replica keeping the plans of its own candidates; system.one tells which replicas answered (if the query \
     fails: each EXPLAIN alone)";

/// At most this many distinct EXPLAINs in one fan-out query.
pub const FAN_OUT_CHUNK: usize = 20;

/// A line of a fan-out plan query: the candidate (from 1; 0 is the replica answering at
/// all), the replica and the line.
#[derive(Debug, Deserialize)]
struct ReplicaPlanLine {
    #[serde(deserialize_with = "crate::facts::typed::uint")]
    candidate: u64,
    #[serde(rename = "chaudit_node", deserialize_with = "crate::facts::typed::uint")]
    node: u64,
    line: String,
}

/// The replicas of `cluster` that answer, each a line of candidate 0.
fn answering_sql(cluster: &str) -> String {
    let node = super::plan::NODE_COLUMN;
    format!(
        "SELECT 0 AS candidate, _shard_num AS {node}, '' AS line FROM clusterAllReplicas('{}', system.one)",
        super::plan::quoted(cluster)
    )
}

/// The EXPLAIN `sql` run on every replica of `cluster`, each plan line tagged with `candidate`.
fn explain_sql(cluster: &str, candidate: usize, sql: &str) -> String {
    format!(
        "SELECT {candidate} AS candidate, _shard_num AS {}, explain AS line \
         FROM clusterAllReplicas('{}', view(SELECT explain FROM ({sql})))",
        super::plan::NODE_COLUMN,
        super::plan::quoted(cluster)
    )
}

/// The EXPLAINs `sqls` run on every replica of `cluster` in one query: each plan line tagged
/// with its candidate (from 1) and replica (`_shard_num`), and a line of candidate 0 from
/// each replica that answered the query at all (an EXPLAIN that fails on a replica for want
/// of its table is skipped there with skip_unavailable_shards, like a dead replica).
pub fn fan_out_union_sql(cluster: &str, sqls: &[&str]) -> String {
    let explains = sqls.iter().enumerate().map(|(i, sql)| explain_sql(cluster, i + 1, sql));
    std::iter::once(answering_sql(cluster)).chain(explains).collect::<Vec<_>>().join(" UNION ALL ")
}

/// Each replica's plans through the fan-out: the plans of its own `candidates` (by replica
/// number), read on every replica at once. A replica that gave no answer to a plan query
/// (down since the facts were read) gets its plans unread, with the reason; a replica that
/// answered but gave no plan for one of its candidates (its table gone meanwhile) gets that
/// plan's error; a query that fails for all (one EXPLAIN alone fails for all) leaves the
/// plans of the replicas that asked it unread. Each clusterAllReplicas of a query connects
/// to all `replicas` at once: the EXPLAINs of a query and the queries in flight are as many
/// as keep the connections within [`plan::FAN_OUT_CONNECTIONS`](super::plan::FAN_OUT_CONNECTIONS).
pub async fn fan_out_plans(
    seed: &Session,
    cluster: &str,
    replicas: usize,
    asked: &BTreeMap<u64, Vec<Candidate>>,
    settings: &[(&str, &str)],
) -> BTreeMap<u64, Result<Vec<Plan>, String>> {
    let mut distinct: Vec<&str> = Vec::new();
    for candidate in asked.values().flatten() {
        if !distinct.contains(&candidate.sql.as_str()) {
            distinct.push(&candidate.sql);
        }
    }
    let per_query = explains_per_query(replicas);
    let answers: Vec<(&str, Result<Answered, String>)> = match per_query {
        0 => one_at_a_time(seed, cluster, replicas, &distinct, settings).await,
        _ => {
            let in_flight = super::plan::fan_out_in_flight(replicas, per_query + 1, seed.in_flight);
            let chunks: Vec<&[&str]> = distinct.chunks(per_query).collect();
            let answers: Vec<Vec<_>> = futures_util::stream::iter(chunks)
                .map(|chunk| async move { fan_out_chunk(seed, cluster, replicas, chunk, settings).await })
                .buffered(in_flight)
                .collect()
                .await;
            answers.into_iter().flatten().collect()
        }
    };
    assign(asked, &answers)
}

/// The EXPLAINs one fan-out plan query over `replicas` holds beside its system.one branch:
/// none beyond 512 replicas, where each EXPLAIN is a query of its own.
fn explains_per_query(replicas: usize) -> usize {
    (super::plan::FAN_OUT_CONNECTIONS / replicas.max(1)).saturating_sub(1).min(FAN_OUT_CHUNK)
}

/// Each replica's plans from the fan-out's answers (by EXPLAIN): its plans, or why they are
/// not read (its query failed, or the replica did not answer it).
fn assign(
    asked: &BTreeMap<u64, Vec<Candidate>>,
    answers: &[(&str, Result<Answered, String>)],
) -> BTreeMap<u64, Result<Vec<Plan>, String>> {
    let plans_of = |node: u64, candidates: &[Candidate]| {
        let mut plans = Vec::new();
        for candidate in candidates {
            let answered = match answers.iter().find(|(sql, _)| *sql == candidate.sql) {
                Some((_, Ok(answered))) => answered,
                Some((_, Err(why))) => return Err(why.clone()),
                None => return Err(format!("{} was not sent", candidate.sql)),
            };
            if !answered.replicas.contains(&node) {
                return Err(
                    "the replica did not answer the plan query through clusterAllReplicas (down, or unreachable)"
                        .into(),
                );
            }
            let mut plan = plan_of(candidate, answered.lines.get(&node).cloned().unwrap_or_default());
            if plan.plan.is_empty() {
                // skip_unavailable_shards skips a replica whose table is missing, nothing else
                plan.error =
                    Some("no plan from this replica: the EXPLAIN failed there (a table it does not have)".into());
            }
            plans.push(plan);
        }
        Ok(plans)
    };
    asked.iter().map(|(node, candidates)| (*node, plans_of(*node, candidates))).collect()
}

/// One distinct EXPLAIN's answer through the fan-out: its lines by replica, and the replicas
/// that answered its query.
#[derive(Debug, Default)]
struct Answered {
    lines: BTreeMap<u64, Vec<String>>,
    replicas: Vec<u64>,
}

/// The lines of one fan-out plan query, or why not.
async fn plan_lines(seed: &Session, sql: &str, settings: &[(&str, &str)]) -> Result<Vec<ReplicaPlanLine>, String> {
    seed.typed_rows(FAN_OUT_PURPOSE, sql, settings).await.map_err(|e| e.to_string())
}

/// A fan-out plan query's lines as its `count` EXPLAINs' answers (EXPLAIN i's lines carry
/// candidate i, from 1; others are left out), each by replica, all answered by `replicas`.
fn by_replica(lines: Vec<ReplicaPlanLine>, count: usize, replicas: &[u64]) -> Vec<Answered> {
    let mut answered: Vec<Answered> =
        (0..count).map(|_| Answered { replicas: replicas.to_vec(), ..Answered::default() }).collect();
    for line in lines {
        let Some(at) = usize::try_from(line.candidate).ok().and_then(|c| c.checked_sub(1)) else { continue };
        if let Some(answer) = answered.get_mut(at) {
            answer.lines.entry(line.node).or_default().push(line.line);
        }
    }
    answered
}

/// Why an EXPLAIN's plans are not read: its fan-out query failed.
fn failed(why: &str) -> String {
    format!("an EXPLAIN through clusterAllReplicas failed: {why}")
}

/// One fan-out plan query of up to [`FAN_OUT_CHUNK`] EXPLAINs; when it fails, each alone.
async fn fan_out_chunk<'a>(
    seed: &Session,
    cluster: &str,
    replicas: usize,
    chunk: &[&'a str],
    settings: &[(&str, &str)],
) -> Vec<(&'a str, Result<Answered, String>)> {
    let read = |sqls: Vec<&'a str>| async move {
        let lines = plan_lines(seed, &fan_out_union_sql(cluster, &sqls), settings).await?;
        let answering: Vec<u64> = lines.iter().filter(|l| l.candidate == 0).map(|l| l.node).collect();
        let answered = by_replica(lines, sqls.len(), &answering);
        Ok::<_, String>(sqls.into_iter().zip(answered).collect::<Vec<_>>())
    };
    match read(chunk.to_vec()).await {
        Ok(all) => all.into_iter().map(|(sql, answer)| (sql, Ok(answer))).collect(),
        Err(_) if chunk.len() > 1 => {
            let alone = futures_util::stream::iter(chunk.iter().copied())
                .map(|sql| async move {
                    match read(vec![sql]).await {
                        Ok(mut one) => one.pop().map_or((sql, Err("no answer".into())), |(s, a)| (s, Ok(a))),
                        Err(why) => (sql, Err(failed(&why))),
                    }
                })
                .buffered(super::plan::fan_out_in_flight(replicas, 2, seed.in_flight));
            alone.collect().await
        }
        Err(why) => chunk.iter().map(|sql| (*sql, Err(failed(&why)))).collect(),
    }
}

/// A big fleet's plans, each query one clusterAllReplicas: which replicas answer, then each
/// EXPLAIN alone (a replica that answered and gave no line for an EXPLAIN failed it there).
async fn one_at_a_time<'a>(
    seed: &Session,
    cluster: &str,
    replicas: usize,
    sqls: &[&'a str],
    settings: &[(&str, &str)],
) -> Vec<(&'a str, Result<Answered, String>)> {
    let answering: Vec<u64> = match plan_lines(seed, &answering_sql(cluster), settings).await {
        Ok(lines) => lines.into_iter().map(|l| l.node).collect(),
        Err(why) => return sqls.iter().map(|sql| (*sql, Err(failed(&why)))).collect(),
    };
    let answering = &answering;
    futures_util::stream::iter(sqls.iter().copied())
        .map(|sql| async move {
            let answer = plan_lines(seed, &explain_sql(cluster, 1, sql), settings).await.map_err(|why| failed(&why));
            (sql, answer.map(|lines| by_replica(lines, 1, answering).pop().unwrap_or_default()))
        })
        .buffered(super::plan::fan_out_in_flight(replicas, 1, seed.in_flight))
        .collect()
        .await
}

fn assemble(candidates: &[Candidate], lines: &[PlanLine]) -> Vec<Plan> {
    let mut plans: Vec<Vec<String>> = vec![Vec::new(); candidates.len()];
    for line in lines {
        if let Some(plan) = usize::try_from(line.candidate).ok().and_then(|i| plans.get_mut(i)) {
            plan.push(line.line.clone());
        }
    }
    candidates.iter().zip(plans).map(|(c, plan)| plan_of(c, plan)).collect()
}

fn plan_of(candidate: &Candidate, plan: Vec<String>) -> Plan {
    let Candidate { shape, check, sql, about } = candidate.clone();
    Plan { shape, check, sql, about, plan, error: None }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(shapes: &[Value]) -> Vec<QueryShape> {
        shapes.iter().map(|s| QueryShape::deserialize(s).unwrap()).collect()
    }

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
        let found = candidates(&live, &read(&shapes)).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].sql, "EXPLAIN SELECT * FROM t ORDER BY x LIMIT 10000");
        let plans = assemble(
            &found,
            &[serde_json::from_value(json!({"candidate": 0, "line": "JoinLazyColumnsStep"})).unwrap()],
        );
        let written = serde_json::to_value(&plans).unwrap();
        assert_eq!(
            written,
            json!([{"shape": "42", "check": "lazy_at_limit", "sql": found[0].sql, "about": null,
                                    "plan": ["JoinLazyColumnsStep"]}])
        );
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
        let found = candidates(&live, &read(&shapes)).unwrap();
        assert_eq!(found.len(), MAX_PLANS);
        assert!(found[0].sql.starts_with("EXPLAIN indexes = 1, projections = 1 SELECT"));
        assert_eq!(found[0].about.as_ref().map(|a| a.projection.as_str()), Some("by_u"));
        // a filter the projection's key cannot serve is no candidate
        let mut other = shape(1);
        other["example"] = json!("SELECT * FROM db.t WHERE v = 1");
        assert!(candidates(&live, &read(&[other])).unwrap().is_empty());
        // SETTINGS would be refused to a readonly auditor; FORMAT cannot stand in a subquery
        let mut with_settings = shape(1);
        with_settings["example"] = json!("SELECT * FROM db.t WHERE u = 1 SETTINGS max_threads = 1");
        assert!(candidates(&live, &read(&[with_settings])).unwrap().is_empty());
    }

    #[test]
    fn through_the_fan_out_each_replica_keeps_its_own_plans_and_a_silent_one_none() {
        let sql = fan_out_union_sql("it's", &["EXPLAIN SELECT 1", "EXPLAIN SELECT 2"]);
        assert_eq!(
            sql,
            "SELECT 0 AS candidate, _shard_num AS chaudit_node, '' AS line FROM clusterAllReplicas('it\\'s', system.one) \
             UNION ALL SELECT 1 AS candidate, _shard_num AS chaudit_node, explain AS line FROM clusterAllReplicas('it\\'s', \
             view(SELECT explain FROM (EXPLAIN SELECT 1))) UNION ALL SELECT 2 AS candidate, _shard_num AS chaudit_node, \
             explain AS line FROM clusterAllReplicas('it\\'s', view(SELECT explain FROM (EXPLAIN SELECT 2)))"
        );
        // a big fleet's: which replicas answer, then each EXPLAIN alone
        assert_eq!(
            [3, 50, 500, 512, 513, 2000].map(explains_per_query),
            [FAN_OUT_CHUNK, 19, 1, 1, 0, 0],
            "a query's connections within the bound"
        );
        assert!(sql.starts_with(&answering_sql("it's")));
        assert!(sql.ends_with(&explain_sql("it's", 2, "EXPLAIN SELECT 2")));
        let candidate = |sql: &str| Candidate { shape: "s".into(), check: "projections", sql: sql.into(), about: None };
        let (one, two, three) = (candidate("EXPLAIN one"), candidate("EXPLAIN two"), candidate("EXPLAIN three"));
        // replica 1 asked one; 2 asked one and two; 3 (down since its facts were read) asked
        // two; 4 asked three, whose query failed; 5 asked nothing
        let asked: BTreeMap<u64, Vec<Candidate>> = [
            (1, vec![one.clone()]),
            (2, vec![one.clone(), two.clone()]),
            (3, vec![two.clone()]),
            (4, vec![three.clone()]),
            (5, vec![]),
        ]
        .into();
        let lines = |pairs: &[(u64, &str)]| {
            let mut by_node: BTreeMap<u64, Vec<String>> = BTreeMap::new();
            for (node, line) in pairs {
                by_node.entry(*node).or_default().push(line.to_string());
            }
            by_node
        };
        let replicas = vec![1, 2, 4, 5];
        let answers = [
            (
                "EXPLAIN one",
                Ok(Answered {
                    lines: lines(&[(1, "ReadFromMergeTree (p)"), (2, "ReadFromMergeTree")]),
                    replicas: replicas.clone(),
                }),
            ),
            // replica 2's table is gone: skipped there, no line
            ("EXPLAIN two", Ok(Answered { lines: lines(&[]), replicas })),
            ("EXPLAIN three", Err("an EXPLAIN through clusterAllReplicas failed: UNKNOWN_SETTING".to_string())),
        ];
        let plans = assign(&asked, &answers);
        assert_eq!(plans[&1].as_ref().unwrap()[0].plan, ["ReadFromMergeTree (p)"]);
        let on_two = plans[&2].as_ref().unwrap();
        assert_eq!(on_two[0].plan, ["ReadFromMergeTree"]);
        assert!(on_two[1].plan.is_empty() && on_two[1].error.as_deref().unwrap().contains("a table it does not have"));
        assert!(plans[&3].as_ref().unwrap_err().contains("did not answer"), "a silent replica has no plans");
        assert!(plans[&4].as_ref().unwrap_err().contains("UNKNOWN_SETTING"));
        assert_eq!(plans[&5].as_ref().unwrap(), &Vec::<Plan>::new());
    }

    #[test]
    fn a_fact_of_another_shape_is_named_not_taken_for_none() {
        let live = json!({"parts": [{"database": "db", "table": "t", "total_rows": "many"}]});
        let error = candidates(&live, &read(&[json!({"example": "SELECT 1"})])).unwrap_err();
        assert!(error.starts_with("live.parts is not of the catalog's shape"), "{error}");
    }
}
