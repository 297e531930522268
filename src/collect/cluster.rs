//! Collecting from every replica of a cluster. Two paths:
//! - fan-out: ClickHouse's own `clusterAllReplicas(NAME, system.x)` through one node, one
//!   round trip per fact for the whole cluster, rows told apart by `_shard_num`
//!   (`skip_unavailable_shards` keeps a dead replica from failing the rest);
//! - direct: one read-only session per node, in parallel (bounded), each with its own
//!   per-query timeout.
//!
//! A replica that does not answer is kept as a node with an error: its rules become
//! inconclusive for it, and the rest of the cluster is still audited.

use std::collections::BTreeMap;

use futures_util::stream::{self, StreamExt};
use serde::Deserialize;
use serde_json::{Value, json};

use super::dsn::Endpoint;
use super::interned::{Document, Interner};
use super::{
    Answer, CollectError, Combined, Limits, LogDocument, Rows, Session, Unread, explain, facts_for, live_document, plan,
};
use crate::facts::{typed, uint};
use crate::version::Version;

/// How the replicas are reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    FanOut,
    Direct,
}

impl Path {
    pub fn name(self) -> &'static str {
        match self {
            Path::FanOut => "clusterAllReplicas",
            Path::Direct => "direct connections",
        }
    }
}

/// One replica's facts, or why there are none.
#[derive(Debug, Clone)]
pub struct NodeFacts {
    /// `host:port` as system.clusters lists it (native port), or the endpoint for `--dsn`.
    pub name: String,
    /// Its facts held once for the replicas that have the same.
    pub live: Option<Document>,
    pub log: Option<Value>,
    pub error: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Collected {
    pub path: Path,
    pub nodes: Vec<NodeFacts>,
    pub round_trips: u32,
}

/// A replica as the seed node's system.clusters lists it.
#[derive(Debug, Clone, Deserialize)]
pub struct Member {
    pub host_name: String,
    #[serde(deserialize_with = "typed::uint")]
    pub port: u64,
    #[serde(deserialize_with = "typed::flag")]
    pub is_local: bool,
}

/// A replica's version, as the fan-out's version probe answers it.
#[derive(Deserialize)]
struct ReplicaVersion {
    #[serde(rename = "chaudit_node", deserialize_with = "typed::uint")]
    node: u64,
    version: String,
}

impl Member {
    pub fn name(&self) -> String {
        format!("{}:{}", self.host_name, self.port)
    }
}

/// The seed's connection-failure counters before its fan-out, by event ([`plan::fan_out_failures`]);
/// none when they could not be read (the facts then keep what the server says).
async fn failures_before(seed: &Session) -> Option<serde_json::Map<String, Value>> {
    let (purpose, sql) = plan::fan_out_failures();
    let rows: Vec<super::CounterRow> = seed.typed_rows(purpose, &sql, &[]).await.ok()?;
    let mut before: serde_json::Map<String, Value> = rows.into_iter().map(|row| (row.name, row.value)).collect();
    // and without what earlier audits' fan-outs counted
    if super::own_failures::any_counted(&before)
        && let Some(own) = super::own_failures::counted(seed).await
    {
        super::own_failures::subtract(&mut before, &own);
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

/// Told when a node or fact is done: (done, total).
pub type Progress<'a> = &'a (dyn Fn(usize, usize) + Sync);

/// The replicas of `cluster`, in the order clusterAllReplicas numbers them.
pub async fn members(seed: &Session, cluster: &str) -> Result<Vec<Member>, CollectError> {
    seed.typed_rows("cluster members (system.clusters)", &plan::members_sql(cluster), &[]).await
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
                if super::lists_log_table(&live, table) == Some(false) {
                    *answer = Err(format!(
                        "{}: system.{table} is not in this replica's system.tables (absent, or hidden from this user)",
                        Unread::Missing.label()
                    ));
                }
            }
            let log = log_window.map(|w| LogDocument::new(w, answers));
            super::add_derived(&mut live, &mut interner, log.as_ref());
            (name, Some((live, log)))
        })
        .collect();
    add_plans(seed, cluster, &mut read).await;
    let nodes = read
        .into_iter()
        .map(|(name, read)| match read {
            Some((live, log)) => {
                NodeFacts { live: Some(live), log: log.map(LogDocument::into_value), error: None, name }
            }
            None => NodeFacts {
                name,
                live: None,
                log: None,
                error: Some("did not answer through clusterAllReplicas (down or unreachable)".into()),
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
/// union (see [`super::keeper`]).
async fn keeper_facts(seed: &Session, cluster: &str, answers: &mut BTreeMap<u64, Vec<Answer<'_>>>) {
    use super::keeper::{QUERIES, keeper_session};
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

/// How each node is read over a direct connection.
#[derive(Debug, Clone, Copy)]
pub struct NodeOptions {
    pub limits: Limits,
    pub log_window: Option<u64>,
    /// Queries at once on one node.
    pub in_flight: usize,
}

/// Each node over its own session, `parallel` at a time.
pub async fn direct(
    nodes: Vec<(String, Endpoint)>,
    options: NodeOptions,
    parallel: usize,
    progress: Progress<'_>,
) -> Collected {
    let total = nodes.len();
    let finished = std::sync::atomic::AtomicUsize::new(0);
    // each replica's facts are held once for the replicas alike as soon as it is read
    let interner = std::sync::Mutex::new(Interner::default());
    let mut done: Vec<(usize, NodeFacts, u32)> = stream::iter(nodes.into_iter().enumerate())
        .map(|(i, (name, endpoint))| {
            let (finished, interner) = (&finished, &interner);
            async move {
                // the session's deadline bounds a replica that answers each query just in time
                let (node, trips) = one_node(name, endpoint, options, interner).await;
                progress(finished.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1, total);
                (i, node, trips)
            }
        })
        .buffer_unordered(parallel.max(1))
        .collect()
        .await;
    done.sort_by_key(|(i, _, _)| *i);
    let round_trips = done.iter().map(|(_, _, t)| t).sum();
    Collected { path: Path::Direct, nodes: done.into_iter().map(|(_, n, _)| n).collect(), round_trips }
}

async fn one_node(
    name: String,
    endpoint: Endpoint,
    options: NodeOptions,
    interner: &std::sync::Mutex<Interner>,
) -> (NodeFacts, u32) {
    let NodeOptions { limits, log_window, in_flight } = options;
    let session = match Session::connect(endpoint, limits).await {
        Ok(s) => s.with_in_flight(in_flight),
        Err(e) => return (NodeFacts { name, live: None, log: None, error: Some(e.to_string()) }, 1),
    };
    let node = match super::node_in(&session, log_window, None, interner).await {
        Ok(documents) => NodeFacts { name, live: Some(documents.live), log: documents.log, error: None },
        Err(e) => NodeFacts { name, live: None, log: None, error: Some(e.to_string()) },
    };
    (node, session.round_trips())
}

/// Where the replicas' HTTP interfaces are, for direct connections: system.clusters lists
/// native ports only, so the user says (the seed's credentials go to each).
#[derive(Debug, Clone, Default)]
pub struct ReplicaAddresses {
    /// `--replica-port`: every replica's HTTP(S) port, with the seed's scheme.
    pub port: Option<u16>,
    /// `--replica-dsn TEMPLATE`: a DSN with `{host}` (and `{port}`, the native port).
    pub template: Option<String>,
    /// `--replica-dsn HOST:PORT=DSN`: one replica, by its system.clusters name.
    pub by_name: Vec<(String, String)>,
}

impl ReplicaAddresses {
    /// `--replica-port` and each `--replica-dsn` (one template with `{host}`, or
    /// `HOST:PORT=DSN` for one replica); the error names the value it cannot read (its
    /// password hidden).
    pub fn parse(port: Option<u16>, given: &[String]) -> Result<ReplicaAddresses, String> {
        let mut replicas = ReplicaAddresses { port, ..Default::default() };
        for given in given {
            match given.split_once('=').filter(|(name, _)| !name.contains("://")) {
                Some((name, dsn)) => replicas.by_name.push((name.to_string(), dsn.to_string())),
                None if given.contains("{host}") && replicas.template.is_none() => {
                    replicas.template = Some(given.clone())
                }
                None => {
                    let shown = super::dsn::redact(given);
                    return Err(format!(
                        "--replica-dsn `{shown}`: one template with {{host}}, or HOST:PORT=DSN for one replica"
                    ));
                }
            }
        }
        Ok(replicas)
    }

    fn is_empty(&self) -> bool {
        self.port.is_none() && self.template.is_none() && self.by_name.is_empty()
    }
}

/// The endpoints of a cluster's replicas for direct connections, each with the seed's
/// credentials: the seed itself for its own entry, else as `addresses` say. Two replicas
/// at one endpoint are an error (the same server would be read for both).
pub fn direct_endpoints(
    seed: &Endpoint,
    members: &[Member],
    addresses: &ReplicaAddresses,
) -> Result<Vec<(String, Endpoint)>, CollectError> {
    let mut endpoints: Vec<(String, Endpoint)> = Vec::new();
    for m in members {
        let name = m.name();
        let dsn = match addresses.by_name.iter().find(|(n, _)| *n == name) {
            Some((_, dsn)) => Some(dsn.clone()),
            None => addresses
                .template
                .as_ref()
                .map(|t| t.replace("{host}", &m.host_name).replace("{port}", &m.port.to_string())),
        };
        let endpoint = match (dsn, addresses.port) {
            (Some(dsn), _) => {
                let given = super::dsn::resolve(&super::dsn::ConnectOptions { dsn: Some(dsn), ..Default::default() })
                    .map(|resolved| resolved.endpoint)
                    .map_err(|e| CollectError::Replicas(format!("replica {name}: {e}")))?;
                Endpoint {
                    secure: given.secure,
                    host: given.host,
                    port: given.port,
                    database: given.database,
                    ..seed.clone()
                }
            }
            (None, _) if m.is_local => seed.clone(),
            (None, Some(port)) => Endpoint { host: m.host_name.clone(), port, ..seed.clone() },
            (None, None) => {
                let why =
                    if addresses.is_empty() { "no HTTP port is known for it" } else { "no --replica-dsn names it" };
                return Err(CollectError::Replicas(format!(
                    "replica {name}: {why} (system.clusters lists native ports): give --replica-port PORT, \
                     --replica-dsn 'http://{{host}}:8123' or --replica-dsn '{name}=http://HOST:PORT'"
                )));
            }
        };
        if let Some((other, _)) = endpoints.iter().find(|(_, e)| e.url() == endpoint.url()) {
            return Err(CollectError::Replicas(format!(
                "replicas {other} and {name} both resolve to {}: the same server would be read twice",
                endpoint.url()
            )));
        }
        endpoints.push((name, endpoint));
    }
    Ok(endpoints)
}

impl Collected {
    /// The snapshot form (`chaudit collect` of a cluster): the path and every node's documents.
    pub fn to_json(&self) -> Value {
        json!({
            "path": self.path.name(),
            "nodes": self.nodes.iter().map(|n| json!({"host": n.name, "live": n.live, "log": n.log, "error": n.error})).collect::<Vec<_>>(),
        })
    }

    /// Back from a snapshot's `nodes`; why not, when they are not a recorded cluster.
    pub fn from_json(value: Value) -> Result<Collected, String> {
        let recorded: Recorded = serde_json::from_value(value).map_err(|e| e.to_string())?;
        let path = if recorded.path == Path::FanOut.name() { Path::FanOut } else { Path::Direct };
        let mut interner = Interner::default();
        let nodes = recorded
            .nodes
            .into_iter()
            .map(|n| NodeFacts {
                name: n.host,
                live: n.live.map(|live| interner.document(live)),
                log: n.log,
                error: n.error,
            })
            .collect();
        Ok(Collected { path, nodes, round_trips: 0 })
    }
}

/// A cluster as a snapshot records it (`Collected::to_json`).
#[derive(Deserialize)]
struct Recorded {
    #[serde(default)]
    path: String,
    nodes: Vec<RecordedNode>,
}

#[derive(Deserialize)]
struct RecordedNode {
    host: String,
    #[serde(default)]
    live: Option<Value>,
    #[serde(default)]
    log: Option<Value>,
    #[serde(default)]
    error: Option<String>,
}

/// How replicas are read, as the user chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FanOut {
    /// clusterAllReplicas when the user may send settings, else direct connections; direct
    /// connections too when clusterAllReplicas is refused.
    #[default]
    Auto,
    /// clusterAllReplicas(NAME, system.x) through the first node.
    Cluster,
    /// One read-only session per replica.
    Direct,
}

/// What a cluster audit reads: the replicas of `cluster` through `endpoints[0]`, or, without
/// a cluster name, each endpoint.
pub struct Plan {
    pub cluster: Option<String>,
    pub endpoints: Vec<Endpoint>,
    pub fan_out: FanOut,
    pub parallel: usize,
    pub node: NodeOptions,
    pub replicas: ReplicaAddresses,
}

/// Replicas by name and the endpoint each is reached at.
pub type Endpoints = [(String, Endpoint)];

/// Reads every replica of the plan. `warn` hears about a fallback from fan-out to direct
/// connections; `told` which endpoints receive the credentials over direct connections;
/// `waiting` how long the `--cluster` node has not answered its connect probe.
pub async fn collect(
    plan: Plan,
    progress: Progress<'_>,
    warn: &dyn Fn(String),
    told: &dyn Fn(&Endpoints),
    waiting: super::Waiting<'_>,
) -> Result<Collected, CollectError> {
    let Plan { cluster, endpoints, fan_out, parallel, node, replicas } = plan;
    let Some(name) = cluster else {
        let nodes: Vec<(String, Endpoint)> = endpoints.into_iter().map(|e| (e.to_string(), e)).collect();
        for (i, (_, endpoint)) in nodes.iter().enumerate() {
            if nodes[..i].iter().any(|(_, other)| other.url() == endpoint.url()) {
                let url = endpoint.url();
                return Err(CollectError::Replicas(format!(
                    "{url} is given twice: the same server would be read twice"
                )));
            }
        }
        return Ok(direct(nodes, node, parallel, progress).await);
    };
    let Some(seed_endpoint) = endpoints.into_iter().next() else {
        return Err(CollectError::UnknownCluster { endpoint: "(no --dsn)".into(), cluster: name });
    };
    let seed =
        Session::connect_waiting(seed_endpoint.clone(), node.limits, waiting).await?.with_in_flight(node.in_flight);
    let members = members(&seed, &name).await?;
    if members.is_empty() {
        return Err(CollectError::UnknownCluster { endpoint: seed.endpoint().to_string(), cluster: name });
    }
    // a readonly=1 user cannot send skip_unavailable_shards: one dead replica would fail the fan-out
    let through_cluster = match fan_out {
        FanOut::Cluster => true,
        FanOut::Direct => false,
        FanOut::Auto => seed.readonly != 1,
    };
    if through_cluster {
        match self::fan_out(&seed, &name, &members, node.log_window, progress).await {
            Ok(collected) => return Ok(collected),
            Err(e) if fan_out == FanOut::Auto => {
                warn(format!("clusterAllReplicas failed ({e}); reading each replica directly"));
            }
            Err(e) => return Err(e),
        }
    }
    let endpoints = direct_endpoints(&seed_endpoint, &members, &replicas)?;
    told(&endpoints);
    Ok(direct(endpoints, node, parallel, progress).await)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replica_addresses_are_one_template_and_named_replicas() {
        let given = ["http://{host}:8123".to_string(), "ch2:9000=http://10.0.0.2:8123".to_string()];
        let read = ReplicaAddresses::parse(Some(8443), &given).unwrap();
        assert_eq!(read.port, Some(8443));
        assert_eq!(read.template.as_deref(), Some("http://{host}:8123"));
        assert_eq!(read.by_name, [("ch2:9000".to_string(), "http://10.0.0.2:8123".to_string())]);
        // a second template, or a DSN without {host}, is a mistake that hides the password
        let wrong = ReplicaAddresses::parse(None, &["http://u:secret@ch1:8123".to_string()]).unwrap_err();
        assert!(wrong.contains("one template with {host}") && !wrong.contains("secret"), "{wrong}");
    }

    fn member(host: &str, port: u64, is_local: bool) -> Member {
        Member { host_name: host.into(), port, is_local }
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

    #[test]
    fn replicas_get_the_addresses_the_user_gives() {
        let options =
            super::super::dsn::ConnectOptions { dsn: Some("http://auditor:pw@ch1:18123".into()), ..Default::default() };
        let seed = super::super::dsn::resolve(&options).unwrap().endpoint;
        let members = [member("ch1", 9000, true), member("ch2", 9000, false), member("ch3", 9001, false)];
        // no address: an error naming the first replica that needs one (it was the seed's port)
        let err = direct_endpoints(&seed, &members, &ReplicaAddresses::default()).unwrap_err().to_string();
        assert!(err.contains("replica ch2:9000") && err.contains("--replica-port"), "{err}");
        let template = ReplicaAddresses { template: Some("https://{host}:8443".into()), ..Default::default() };
        let urls: Vec<String> =
            direct_endpoints(&seed, &members, &template).unwrap().iter().map(|(_, e)| e.to_string()).collect();
        assert_eq!(urls, ["auditor@https://ch1:8443", "auditor@https://ch2:8443", "auditor@https://ch3:8443"]);
        // the seed is kept for its own entry; one replica given by name
        let mixed = ReplicaAddresses {
            port: Some(8123),
            by_name: vec![("ch3:9001".into(), "http://ch3:28123".into())],
            ..Default::default()
        };
        let urls: Vec<String> =
            direct_endpoints(&seed, &members, &mixed).unwrap().iter().map(|(_, e)| e.url()).collect();
        assert_eq!(urls, ["http://ch1:18123", "http://ch2:8123", "http://ch3:28123"]);
        let clash = ReplicaAddresses { port: Some(18123), template: None, by_name: Vec::new() };
        let err = direct_endpoints(&seed, &[member("ch1", 9000, true), member("ch1", 9001, false)], &clash)
            .unwrap_err()
            .to_string();
        assert!(err.contains("both resolve to http://ch1:18123"), "{err}");
    }
}
