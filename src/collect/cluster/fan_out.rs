//! The fan-out path: every fact of every replica through the seed node's
//! `clusterAllReplicas`, one round trip per fact (or one union of them) for the whole cluster,
//! rows told apart by the replica's number; the seed's own connection failures kept out.

use super::*;
use crate::facts::keys;

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
    let Some(Value::Object(events)) = keys::live::EVENTS.json(&*live) else { return };
    let mut events = events.clone();
    for event in plan::FAN_OUT_FAILURE_EVENTS {
        // system.events lists only the events that happened
        match before.get(event) {
            Some(count) => events.insert(event.to_string(), count.clone()),
            None => events.remove(event),
        };
    }
    live.set(interner, keys::live::EVENTS.name(), Value::Object(events));
}

/// The settings of every fan-out query: a dead replica skipped, not failing the rest; and no
/// hedged connections (each shard of clusterAllReplicas is one replica, none to hedge to),
/// which halves the --dsn node's file descriptors per replica (measured on 26.9: 12.6 with
/// hedging, its epolls and timers, 6.0 without), so that 2,000 replicas fit in 20,000.
const FAN_OUT_QUERY_SETTINGS: [(&str, &str); 2] = [("skip_unavailable_shards", "1"), ("use_hedged_requests", "0")];

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
    parts.push(plan::Part {
        name: keys::live::VERSION.name(),
        tag: keys::live::VERSION.name().into(),
        sql: plan::VERSION_PROBE,
    });
    let mut first = union(seed, cluster, &parts, None).await.unwrap_or_default();
    first.retain(|_, answers| answered(answers));
    let first_versions: BTreeMap<u64, String> =
        first.iter().map(|(node, answers)| (*node, version_in(answers))).collect();
    // a replica missing from it is down, or refused the union (too old for a fact, or
    // without query_log), or its answer did not come in time: the versions probe tells which
    let mut versions = if first_versions.len() == members.len() {
        first_versions.clone()
    } else {
        let probe = plan::fan_out(plan::VERSION_PROBE, cluster);
        let answered: Vec<ReplicaVersion> =
            seed.typed_rows("replica versions (clusterAllReplicas)", &probe, &FAN_OUT_QUERY_SETTINGS).await?;
        answered.into_iter().map(|r| (r.node, r.version)).collect()
    };
    // the oldest answering version decides which facts every replica can answer
    let oldest: Option<Version> = versions.values().filter_map(|v| v.parse().ok()).min();
    let (asked, not_asked) = facts_for(oldest);
    let asked = plan::for_fan_out(asked);
    // the replicas in the first union keep its answers to the facts every replica is asked;
    // only what it lacks is read again: the replicas missing from it, and the facts it did
    // not ask (the seed older than every replica)
    let (mut live_answers, mut log_answers) = kept(first, &versions, &asked, seed_asked.len());
    let extra: Vec<&plan::FactQuery> =
        asked.iter().copied().filter(|f| !seed_asked.iter().any(|s| s.name == f.name)).collect();
    let kept_nodes: Vec<u64> = live_answers.keys().copied().collect();
    if !extra.is_empty() && !kept_nodes.is_empty() {
        let again = again(seed, cluster, members.len(), &plan::parts(&extra, &[]), &kept_nodes, extra.len()).await;
        distribute(again, extra.len(), &mut live_answers, &mut log_answers);
    }
    let missing: Vec<u64> = versions.keys().copied().filter(|n| !first_versions.contains_key(n)).collect();
    if !missing.is_empty() {
        let again = again(seed, cluster, members.len(), &plan::parts(&asked, &logs), &missing, asked.len()).await;
        // a replica that answered none of it is not there after all
        versions.retain(|node, _| !missing.contains(node) || again.contains_key(node));
        distribute(again, asked.len(), &mut live_answers, &mut log_answers);
    }
    for answers in live_answers.values_mut() {
        answers.extend(not_asked.iter().cloned());
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
        log.settle_fresh(live);
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
        explain::fan_out_plans(seed, cluster, read.len(), &asked, &FAN_OUT_QUERY_SETTINGS).await
    };
    for (i, (_, read)) in read.iter_mut().enumerate() {
        if let (Some((_, Some(log))), Some(plans)) = (read, plans.remove(&(i as u64 + 1))) {
            log.set_plans(plans);
        }
    }
}

/// Answers by replica number, each in the order of the parts read.
type Split<'a> = BTreeMap<u64, Vec<Answer<'a>>>;

/// Every part from every replica in one fan-out query, or from the replicas `only` (the
/// others' rows are neither sent nor kept), split per replica; why not, when the query failed.
async fn union<'a>(
    seed: &Session,
    cluster: &str,
    parts: &[plan::Part<'a>],
    only: Option<&[u64]>,
) -> Result<Split<'a>, String> {
    let sql = plan::fan_out_combined_of(cluster, parts, only);
    let purpose = "every fact of every replica (clusterAllReplicas)";
    let mut combined =
        Combined::read(seed, purpose, &sql, &FAN_OUT_QUERY_SETTINGS, parts, true).await.map_err(|e| e.reason())?;
    Ok(match only {
        Some(nodes) => nodes.iter().map(|node| (*node, combined.take(*node, parts))).collect(),
        None => combined.take_all(parts),
    })
}

/// Of the first union, what the replicas that answered it keep: their answers to the facts
/// in `asked` (the first `facts` of each are the facts it asked, then the log queries, then
/// the version), as (fact answers, log answers) per replica.
fn kept<'a>(
    first: Split<'a>,
    versions: &BTreeMap<u64, String>,
    asked: &[&plan::FactQuery],
    facts: usize,
) -> (Split<'a>, Split<'a>) {
    let (mut live, mut log) = (Split::new(), Split::new());
    for (node, mut answers) in first {
        if !versions.contains_key(&node) {
            continue;
        }
        answers.pop(); // the version
        log.insert(node, answers.split_off(facts.min(answers.len())));
        answers.retain(|(name, _)| asked.iter().any(|f| f.name == *name));
        live.insert(node, answers);
    }
    (live, log)
}

/// How many times the union is sent again for the replicas still missing from it, while
/// each time brings some of them back.
const UNION_AGAIN: usize = 3;

/// `parts` (the first `facts` of them facts, the rest log queries) of the replicas `nodes`
/// only, read again: their union, again while it brings replicas back; for the replicas
/// still missing, the union of the facts (a replica without query_log refuses the log
/// queries) and each log query alone; then each part alone. A replica that answered none of
/// it is left out. Without settings among the parts (facts the first union did not ask),
/// each part alone for every replica in `nodes`. Each query connects to every one of the
/// cluster's `replicas`: no more are in flight than keep that within
/// [`plan::FAN_OUT_CONNECTIONS`].
async fn again<'a>(
    seed: &Session,
    cluster: &str,
    replicas: usize,
    parts: &[plan::Part<'a>],
    nodes: &[u64],
    facts: usize,
) -> Split<'a> {
    let facts = facts.min(parts.len());
    let mut read = Split::new();
    let mut pending: Vec<u64> = nodes.to_vec();
    let with_settings = parts[..facts].iter().any(|p| p.name == keys::live::SETTINGS.name());
    for _ in 0..UNION_AGAIN {
        if !with_settings {
            break;
        }
        let Ok(mut split) = union(seed, cluster, parts, Some(&pending)).await else { break };
        let before = pending.len();
        pending.retain(|node| !take_answered(&mut split, *node, &mut read));
        if pending.is_empty() || pending.len() == before {
            break;
        }
    }
    // the facts' union, then their log queries alone
    let mut without_logs: Vec<u64> = Vec::new();
    if with_settings
        && !pending.is_empty()
        && facts < parts.len()
        && let Ok(mut split) = union(seed, cluster, &parts[..facts], Some(&pending)).await
    {
        pending.retain(|node| match take_answered(&mut split, *node, &mut read) {
            true => {
                without_logs.push(*node);
                false
            }
            false => true,
        });
    }
    // each part alone: the log queries for the replicas that answered the facts' union, every
    // part for the rest
    let asked: Vec<(usize, Vec<u64>)> = (0..parts.len())
        .map(|i| match i < facts {
            true => (i, pending.clone()),
            false => (i, pending.iter().chain(&without_logs).copied().collect()),
        })
        .filter(|(_, nodes)| !nodes.is_empty())
        .collect();
    let mut each: Vec<(usize, Vec<u64>, Result<Split<'a>, String>)> = stream::iter(asked)
        .map(|(i, nodes)| async move {
            let result = union(seed, cluster, std::slice::from_ref(&parts[i]), Some(&nodes)).await;
            (i, nodes, result)
        })
        .buffered(plan::fan_out_in_flight(replicas, 1, seed.in_flight))
        .collect()
        .await;
    for (i, nodes, result) in &mut each {
        for node in nodes.iter() {
            let answer = match result {
                Ok(split) => {
                    split.remove(node).and_then(|mut a| a.pop()).map_or(Ok(Rows::Lines(Vec::new())), |(_, a)| a)
                }
                Err(why) => Err(why.clone()),
            };
            read.entry(*node).or_default().push((parts[*i].name, answer));
        }
    }
    // every part alone for a replica: it answered when it gave its settings, or when the
    // settings could not be read of any replica (the reason is then each replica's)
    read.retain(|node, answers| {
        !with_settings
            || !pending.contains(node)
            || answered(answers)
            || answers.iter().any(|(n, a)| *n == keys::live::SETTINGS.name() && a.is_err())
    });
    read
}

/// Moves `node`'s answers from `split` into `read` when it answered; whether it did.
fn take_answered<'a>(split: &mut Split<'a>, node: u64, read: &mut Split<'a>) -> bool {
    match split.remove(&node) {
        Some(answers) if answered(&answers) => {
            read.insert(node, answers);
            true
        }
        _ => false,
    }
}

/// A union's answers, per replica, into its fact answers (the first `facts`) and its log
/// answers (the rest).
fn distribute<'a>(split: Split<'a>, facts: usize, live_answers: &mut Split<'a>, log_answers: &mut Split<'a>) {
    for (node, mut answers) in split {
        log_answers.entry(node).or_default().extend(answers.split_off(facts.min(answers.len())));
        live_answers.entry(node).or_default().extend(answers);
    }
}

/// Whether a replica answered a union: its settings are in it (every server has some).
fn answered(answers: &[Answer]) -> bool {
    answers.iter().any(|(name, answer)| {
        *name == keys::live::SETTINGS.name() && answer.as_ref().is_ok_and(|rows| !rows.is_empty())
    })
}

/// The version a replica gave in the first union (its last part).
fn version_in(answers: &[Answer]) -> String {
    match answers.last() {
        Some((name, Ok(rows))) if *name == keys::live::VERSION.name() => {
            rows.first().map(|row| keys::live::VERSION.text(&row).to_string()).unwrap_or_default()
        }
        _ => String::new(),
    }
}

/// The Keeper facts of the replicas with a Keeper session, one fan-out query each after the
/// union (see [`crate::collect::keeper`]).
async fn keeper_facts(seed: &Session, cluster: &str, answers: &mut Split<'_>) {
    use crate::collect::keeper::{QUERIES, keeper_session};
    let sessions: BTreeMap<u64, Result<bool, String>> =
        answers.iter().map(|(node, answers)| (*node, keeper_session(answers))).collect();
    let any_session = sessions.values().any(|s| matches!(s, Ok(true)));
    for query in &QUERIES {
        let mut result = match any_session {
            true => Some(
                seed.rows_with(query.purpose, &query.fan_out_sql(cluster), &FAN_OUT_QUERY_SETTINGS)
                    .await
                    .map(by_node)
                    .map_err(|e| query.reason(&e)),
            ),
            false => None,
        };
        for (node, session) in &sessions {
            let rows = result.as_mut().map(|r| match r {
                Ok(split) => Ok(Rows::Parsed(split.remove(node).unwrap_or_default())),
                Err(why) => Err(why.clone()),
            });
            answers.entry(*node).or_default().push((query.name, query.answer(session.clone(), rows.as_ref())));
        }
    }
}

/// Fanned-out rows per replica, in one pass, each without the node column.
fn by_node(rows: Vec<Value>) -> BTreeMap<u64, Vec<Value>> {
    let mut split: BTreeMap<u64, Vec<Value>> = BTreeMap::new();
    for mut row in rows {
        let node = uint(&row[plan::NODE_COLUMN]);
        if let Some(object) = row.as_object_mut() {
            object.remove(plan::NODE_COLUMN);
        }
        split.entry(node).or_default().push(row);
    }
    split
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replica_of_the_first_union_keeps_its_answers_to_the_facts_asked_of_every_replica() {
        let rows = |line: &str| Ok(Rows::Lines(vec![line.into()]));
        let answers = || -> Vec<Answer<'static>> {
            vec![
                ("settings", rows(r#"{"name":"max_threads","value":"8"}"#)),
                ("projections", rows("{}")),
                ("shapes", rows(r#"{"hash":1}"#)),
                ("version", rows(r#"{"version":"26.9.1.1"}"#)),
            ]
        };
        let first: Split = [(1, answers()), (2, answers())].into_iter().collect();
        // replica 2 is not in the versions probe's answer; projections are not asked (an older
        // replica answered the probe)
        let versions: BTreeMap<u64, String> = [(1, "26.9.1.1".to_string()), (3, "25.8.1.1".to_string())].into();
        let settings = plan::FACTS.iter().find(|f| f.name == "settings").unwrap();
        let (live, log) = kept(first, &versions, &[settings], 2);
        assert_eq!(live.keys().collect::<Vec<_>>(), [&1]);
        assert_eq!(live[&1].iter().map(|(name, _)| *name).collect::<Vec<_>>(), ["settings"]);
        assert_eq!(log[&1].iter().map(|(name, _)| *name).collect::<Vec<_>>(), ["shapes"]);
        assert!(answered(&live[&1]) && !answered(&log[&1]));
    }

    #[test]
    fn fanned_out_rows_are_split_per_replica_in_one_pass() {
        let rows = vec![
            json!({"chaudit_node": 2, "path": "/a"}),
            json!({"chaudit_node": "1", "path": "/b"}),
            json!({"chaudit_node": 2, "path": "/c"}),
        ];
        let split = by_node(rows);
        assert_eq!(split[&1], [json!({"path": "/b"})]);
        assert_eq!(split[&2], [json!({"path": "/a"}), json!({"path": "/c"})]);
    }

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
