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

mod direct;
mod fan_out;

pub use direct::{NodeOptions, ReplicaAddresses, direct, direct_endpoints};
pub use fan_out::fan_out;

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
    /// Not read because the audit's own deadline passed first, not because the replica
    /// failed: its rules are inconclusive, and it is not called unreachable.
    pub out_of_time: bool,
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

impl Member {
    pub fn name(&self) -> String {
        format!("{}:{}", self.host_name, self.port)
    }
}

/// Told when a node or fact is done: (done, total).
pub type Progress<'a> = &'a (dyn Fn(usize, usize) + Sync);

/// The replicas of `cluster`, in the order clusterAllReplicas numbers them.
pub async fn members(seed: &Session, cluster: &str) -> Result<Vec<Member>, CollectError> {
    seed.typed_rows("cluster members (system.clusters)", &plan::members_sql(cluster), &[]).await
}

impl Collected {
    /// The snapshot form (`chaudit collect` of a cluster): the path and every node's documents.
    pub fn to_json(&self) -> Value {
        json!({
            "path": self.path.name(),
            "nodes": self.nodes.iter().map(|n| json!({"host": n.name, "live": n.live, "log": n.log, "error": n.error, "out_of_time": n.out_of_time})).collect::<Vec<_>>(),
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
                out_of_time: n.out_of_time,
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
    #[serde(default)]
    out_of_time: bool,
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
        let node = NodeOptions { limits: node.limits.for_fleet(nodes.len(), Some(parallel)), ..node };
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
        let seed = seed.with_limits(node.limits.for_fleet(members.len(), None));
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
    let node = NodeOptions { limits: node.limits.for_fleet(endpoints.len(), Some(parallel)), ..node };
    Ok(direct(endpoints, node, parallel, progress).await)
}
