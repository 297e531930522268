//! The fan-out path: every fact of every replica through the seed node's
//! `clusterAllReplicas`, one round trip per fact (or one union of them) for the whole cluster,
//! rows told apart by the replica's number; the seed's own connection failures kept out.

use super::*;

/// A replica's version, as the fan-out's version probe answers it.
#[derive(Deserialize)]
struct ReplicaVersion {
    #[serde(rename = "chaudit_node", deserialize_with = "typed::uint")]
    node: u64,
    version: String,
}

/// The seed's connection-failure counters before its fan-out, by event ([`plan::fan_out_failures`]);
/// none when they could not be read (the facts then keep what the server says).
async fn failures_before(seed: &Session) -> Option<serde_json::Map<String, Value>> {
    let (purpose, sql) = plan::fan_out_failures();
    let rows: Vec<crate::collect::CounterRow> = seed.typed_rows(purpose, &sql, &[]).await.ok()?;
    let mut before: serde_json::Map<String, Value> = rows.into_iter().map(|row| (row.name, row.value)).collect();
    // and without what earlier audits' fan-outs counted
    if crate::collect::own_failures::any_counted(&before)
        && let Some(own) = crate::collect::own_failures::counted(seed).await
    {
        crate::collect::own_failures::subtract(&mut before, &own);
    }
    Some(before)
}

/// A seed's `live.events` with its connection failures as they were before its fan-out: the
/// failures of the audit's own connections are not the server's Distributed tables failing.
fn without_own_failures(live: &mut Document, interner: &mut Interner, before: &serde_json::Map<String, Value>) {
    let Some(Value::Object(events)) = live.get("events") else { return };
    let mut events = events.clone();
    for event in plan::FAN_OUT_FAILURE_EVENTS {
        // system.events lists only the events that happened
        match before.get(event) {
            Some(count) => events.insert(event.to_string(), count.clone()),
            None => events.remove(event),
        };
    }
    live.set(interner, "events", Value::Object(events));
}

const SKIP_DEAD: [(&str, &str); 1] = [("skip_unavailable_shards", "1")];

/// Every fact of every replica through the seed node (needs a user that may send settings
/// and use clusterAllReplicas).
pub async fn fan_out(
    seed: &Session,
    cluster: &str,
    members: &[Member],
    log_window: Option<u64>,
    progress: Progress<'_>,
) -> Result<Collected, CollectError> {
    let logs = log_window.map(plan::log_queries).unwrap_or_default();
    seed.answers_of_replicas(members.len());
    let failures_before = failures_before(seed).await;
    // first, one round trip: the facts the seed's version has, the log queries and each
    // replica's version, from every replica at once
    let seed_asked = plan::for_fan_out(facts_for(seed.version.parse().ok()).0);
    let mut parts = plan::parts(&seed_asked, &logs);
    parts.push(plan::Part { name: "version", tag: "version".into(), sql: plan::VERSION_PROBE });
    let everyone: Vec<u64> = (1..=members.len() as u64).collect();
    let mut first = union(seed, cluster, &parts, &everyone).await.unwrap_or_default();
    let first_versions: BTreeMap<u64, String> = first
        .iter()
        .filter(|(_, answers)| answered(answers))
        .map(|(node, answers)| (*node, version_in(answers)))
        .collect();
    // a replica missing from it is down, or refused the union (too old for a fact, or
    // without query_log): the versions probe tells which
    let versions = if first_versions.len() == members.len() {
        first_versions.clone()
    } else {
        let probe = plan::fan_out(plan::VERSION_PROBE, cluster);
        let answered: Vec<ReplicaVersion> =
            seed.typed_rows("replica versions (clusterAllReplicas)", &probe, &SKIP_DEAD).await?;
        answered.into_iter().map(|r| (r.node, r.version)).collect()
    };
    // the oldest answering version decides which facts every replica can answer
    let oldest: Option<Version> = versions.values().filter_map(|v| v.parse().ok()).min();
    let (asked, not_asked) = facts_for(oldest);
    let asked = plan::for_fan_out(asked);
    let nodes: Vec<u64> = versions.keys().copied().collect();
    let mut live_answers: BTreeMap<u64, Vec<Answer>> = nodes.iter().map(|n| (*n, not_asked.clone())).collect();
    let mut log_answers: BTreeMap<u64, Vec<Answer>> = BTreeMap::new();
    let first_will_do = asked.len() == seed_asked.len() && nodes.iter().all(|n| first_versions.contains_key(n));
    if first_will_do {
        first.retain(|node, _| versions.contains_key(node));
        for answers in first.values_mut() {
            answers.pop(); // the version
        }
        distribute(first, asked.len(), &mut live_answers, &mut log_answers);
    } else {
        // every fact and log query in one round trip; else the facts' union (a replica
        // without query_log refuses the log queries) and each log query alone; else each
        // query alone
        let parts = plan::parts(&asked, &logs);
        let all = if logs.is_empty() { None } else { complete(union(seed, cluster, &parts, &nodes).await) };
        match all {
            Some(split) => distribute(split, asked.len(), &mut live_answers, &mut log_answers),
            None => {
                match complete(union(seed, cluster, &parts[..asked.len()], &nodes).await) {
                    Some(split) => distribute(split, asked.len(), &mut live_answers, &mut log_answers),
                    None => {
                        let each = asked.iter().map(|f| (f.name, f.purpose, f.sql.to_string())).collect();
                        spread(per_query(seed, cluster, each).await, versions.keys(), &mut live_answers);
                    }
                }
                spread(per_query(seed, cluster, logs.clone()).await, versions.keys(), &mut log_answers);
            }
        }
    }
    keeper_facts(seed, cluster, &mut live_answers).await;
    progress(1, 1);
    let mut interner = Interner::default();
    // each replica's documents; its plans are read after, for every replica at once
    let mut read: Vec<ReplicaRead> = members
        .iter()
        .enumerate()
        .map(|(i, member)| {
            let node = i as u64 + 1;
            let name = member.name();
            let Some(version) = versions.get(&node) else { return (name, None) };
            let mut live = live_document(
                &mut interner,
                &format!("{name} (via clusterAllReplicas from {})", seed.endpoint()),
                version,
                seed.readonly,
                seed.query_id_prefix(),
                live_answers.remove(&node).unwrap_or_default(),
            );
            // the seed's own replica (system.clusters' is_local): the others' counters
            // hold nothing of its fan-out
            if let (true, Some(before)) = (member.is_local, &failures_before) {
                without_own_failures(&mut live, &mut interner, before);
            }
            let mut answers = log_answers.remove(&node).unwrap_or_default();
            // skip_unavailable_shards also skips a replica that lacks the table: its
            // empty answer is no evidence
            for (name, answer) in &mut answers {
                let table = logs.iter().find(|(n, _, _)| n == name).map_or("", |(_, _, sql)| plan::log_table(sql));
                if crate::collect::lists_log_table(&live, table) == Some(false) {
                    *answer = Err(format!(
                        "{}: system.{table} is not in this replica's system.tables (absent, or hidden from this user)",
                        Unread::Missing.label()
                    ));
                }
            }
            let log = log_window.map(|w| LogDocument::new(w, answers));
            crate::collect::add_derived(&mut live, &mut interner, log.as_ref());
            (name, Some((live, log)))
        })
        .collect();
    add_plans(seed, cluster, &mut read).await;
    let nodes = read
        .into_iter()
        .map(|(name, read)| match read {
            Some((live, log)) => NodeFacts {
                live: Some(live),
                log: log.map(LogDocument::into_value),
                error: None,
                name,
                out_of_time: false,
            },
            None => NodeFacts {
                name,
                live: None,
                log: None,
                error: Some("did not answer through clusterAllReplicas (down or unreachable)".into()),
                out_of_time: false,
            },
        })
        .collect();
    Ok(Collected { path: Path::FanOut, nodes, round_trips: seed.round_trips() })
}

/// A replica read through the fan-out: its name, and its documents when it answered.
type ReplicaRead = (String, Option<(Document, Option<LogDocument>)>);

/// The plans of each replica's candidate shapes (read from its own log and facts), every
/// distinct EXPLAIN run on every replica through the fan-out: each replica's plans are its
/// own server's, as over a direct connection.
async fn add_plans(seed: &Session, cluster: &str, read: &mut [ReplicaRead]) {
    let mut asked: BTreeMap<u64, Vec<explain::Candidate>> = BTreeMap::new();
    for (i, (_, read)) in read.iter_mut().enumerate() {
        let Some((live, Some(log))) = read else { continue };
        match log.candidates(live) {
            Some(Ok(candidates)) => {
                asked.insert(i as u64 + 1, candidates);
            }
            Some(Err(why)) => log.set_plans(Err(why)),
            None => {}
        }
    }
    let mut plans = if asked.values().all(Vec::is_empty) {
        asked.keys().map(|node| (*node, Ok(Vec::new()))).collect()
    } else {
        explain::fan_out_plans(seed, cluster, &asked, &SKIP_DEAD).await
    };
    for (i, (_, read)) in read.iter_mut().enumerate() {
        if let (Some((_, Some(log))), Some(plans)) = (read, plans.remove(&(i as u64 + 1))) {
            log.set_plans(plans);
        }
    }
}

/// Every part from every replica of `nodes` in one fan-out query, split per replica (a
/// replica that did not answer has empty answers); `None` when the query failed.
async fn union<'a>(
    seed: &Session,
    cluster: &str,
    parts: &[plan::Part<'a>],
    nodes: &[u64],
) -> Option<BTreeMap<u64, Vec<Answer<'a>>>> {
    let sql = plan::fan_out_combined(cluster, parts);
    let purpose = "every fact of every replica (clusterAllReplicas)";
    let mut combined = Combined::read(seed, purpose, &sql, &SKIP_DEAD, parts, true).await.ok()?;
    Some(nodes.iter().map(|node| (*node, combined.take(*node, parts))).collect())
}

/// A union's answers, per replica, into its fact answers (the first `facts`) and its log
/// answers (the rest).
fn distribute<'a>(
    split: BTreeMap<u64, Vec<Answer<'a>>>,
    facts: usize,
    live_answers: &mut BTreeMap<u64, Vec<Answer<'a>>>,
    log_answers: &mut BTreeMap<u64, Vec<Answer<'a>>>,
) {
    for (node, mut answers) in split {
        log_answers.entry(node).or_default().extend(answers.split_off(facts));
        live_answers.entry(node).or_default().extend(answers);
    }
}

/// The split when every replica in it answered (a replica that refused the union is skipped
/// like a dead one, so every replica that answered the probe must be in it).
fn complete<'a>(split: Option<BTreeMap<u64, Vec<Answer<'a>>>>) -> Option<BTreeMap<u64, Vec<Answer<'a>>>> {
    split.filter(|split| split.values().all(|answers| answered(answers)))
}

/// Whether a replica answered a union: its settings are in it (every server has some).
fn answered(answers: &[Answer]) -> bool {
    answers.iter().any(|(name, answer)| *name == "settings" && answer.as_ref().is_ok_and(|rows| !rows.is_empty()))
}

/// The version a replica gave in the first union (its last part).
fn version_in(answers: &[Answer]) -> String {
    match answers.last() {
        Some(("version", Ok(rows))) => {
            rows.first().map(|row| crate::facts::live_text(&row, "version").to_string()).unwrap_or_default()
        }
        _ => String::new(),
    }
}

/// Fan-out queries one by one (overlapping as the session allows): (name, rows or error).
async fn per_query<'a>(
    seed: &Session,
    cluster: &str,
    queries: Vec<(&'a str, &'a str, String)>,
) -> Vec<(&'a str, Result<Vec<Value>, String>)> {
    stream::iter(queries)
        .map(|(name, purpose, sql)| async move {
            let result =
                seed.rows_with(purpose, &plan::fan_out(&sql, cluster), &SKIP_DEAD).await.map_err(|e| e.reason());
            (name, result)
        })
        .buffered(seed.in_flight)
        .collect()
        .await
}

/// The Keeper facts of the replicas with a Keeper session, one fan-out query each after the
/// union (see [`crate::collect::keeper`]).
async fn keeper_facts(seed: &Session, cluster: &str, answers: &mut BTreeMap<u64, Vec<Answer<'_>>>) {
    use crate::collect::keeper::{QUERIES, keeper_session};
    let sessions: BTreeMap<u64, Result<bool, String>> =
        answers.iter().map(|(node, answers)| (*node, keeper_session(answers))).collect();
    let any_session = sessions.values().any(|s| matches!(s, Ok(true)));
    for query in &QUERIES {
        let result = match any_session {
            true => Some(
                seed.rows_with(query.purpose, &query.fan_out_sql(cluster), &SKIP_DEAD)
                    .await
                    .map_err(|e| query.reason(&e)),
            ),
            false => None,
        };
        for (node, session) in &sessions {
            let rows = result
                .as_ref()
                .map(|r| r.as_ref().map(|rows| Rows::Parsed(rows_of(rows, *node))).map_err(Clone::clone));
            answers.entry(*node).or_default().push((query.name, query.answer(session.clone(), rows.as_ref())));
        }
    }
}

/// Each query's rows split per replica into the replicas' answers.
fn spread<'a>(
    results: Vec<(&'a str, Result<Vec<Value>, String>)>,
    nodes: impl Iterator<Item = &'a u64> + Clone,
    answers: &mut BTreeMap<u64, Vec<Answer<'a>>>,
) {
    for (name, result) in results {
        for node in nodes.clone() {
            let answer = match &result {
                Ok(rows) => Ok(Rows::Parsed(rows_of(rows, *node))),
                Err(why) => Err(why.clone()),
            };
            answers.entry(*node).or_default().push((name, answer));
        }
    }
}

/// The rows of one replica, without the node column.
fn rows_of(rows: &[Value], node: u64) -> Vec<Value> {
    rows.iter()
        .filter(|r| uint(&r[plan::NODE_COLUMN]) == node)
        .map(|r| {
            let mut r = r.clone();
            if let Some(object) = r.as_object_mut() {
                object.remove(plan::NODE_COLUMN);
            }
            r
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seeds_events_keep_its_failures_from_before_the_fan_out() {
        let mut interner = Interner::default();
        let events = json!({"DistributedConnectionFailAtAll": 7, "DNSError": 2, "DelayedInserts": 3});
        let mut live = interner.document(json!({ "events": events }));
        let before = json!({"DistributedConnectionFailAtAll": "4"}).as_object().cloned().unwrap();
        without_own_failures(&mut live, &mut interner, &before);
        // a count kept as the server wrote it; an event it had not counted before is gone
        assert_eq!(live["events"], json!({"DistributedConnectionFailAtAll": "4", "DelayedInserts": 3}));
        // without events (denied) there is nothing to amend
        let mut denied = interner.document(json!({"unavailable": {"events": "ACCESS_DENIED"}}));
        without_own_failures(&mut denied, &mut interner, &before);
        assert!(denied.get("events").is_none());
    }
}
