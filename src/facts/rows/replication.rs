//! Rows about clusters and replication: a cluster's replicas, macros, replicated tables and
//! their queues, ON CLUSTER statements, Distributed tables' queues, Keeper connections.

use super::*;

/// A row of system.clusters: one replica of a cluster's shard.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct ClusterReplica {
    pub cluster: String,
    #[serde(deserialize_with = "super::super::typed::uint")]
    pub shard_num: u64,
    #[serde(deserialize_with = "super::super::typed::uint")]
    pub replica_num: u64,
    pub host_name: String,
    #[serde(deserialize_with = "super::super::typed::uint")]
    pub port: u64,
}

/// A row of system.macros.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct Macro {
    #[serde(rename = "macro")]
    pub name: String,
    pub substitution: String,
}

/// A row of system.replicas: a replicated table.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct Replica {
    pub database: String,
    pub table: String,
    pub is_readonly: Flag,
    pub is_session_expired: Flag,
    /// seconds behind the newest part of another replica
    pub absolute_delay: Count,
    pub queue_size: Count,
    pub inserts_in_queue: Count,
    pub merges_in_queue: Count,
    pub active_replicas: Count,
    pub total_replicas: Count,
    /// read-only, its Keeper session alive, its name not among the table's replicas in Keeper
    pub metadata_missing: Flag,
    /// the table's path in Keeper: the replicas of one shard share it
    pub zookeeper_path: String,
    /// the next entry of the table's replication log this replica will copy to its queue
    pub log_pointer: Count,
    /// the last entry of the table's replication log
    pub log_max_index: Count,
    /// rows of its active parts (read in the same query as the queue)
    pub total_rows: Count,
    /// its active parts
    pub active_parts: Count,
}

/// system.replication_queue counted per table and entry type.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct ReplicationQueueEntries {
    pub database: String,
    pub table: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub entries: Count,
    /// entries whose last attempt threw
    pub failing: Count,
    pub max_tries: Count,
    /// one failing entry's last exception
    pub exception: String,
}

/// An ON CLUSTER statement of system.distributed_ddl_queue that some host has not finished.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct DistributedDdlEntry {
    /// its node in Keeper (`query-0000000001`)
    pub entry: String,
    pub cluster: String,
    /// the statement (its first 300 characters)
    pub query: String,
    /// the host that issued it
    pub initiator: String,
    /// seconds since it was queued
    pub age_seconds: Count,
    /// hosts it was queued for
    pub hosts: Count,
    /// `host:port` of each host that has not finished it
    pub pending: Vec<String>,
    /// their statuses (Inactive: the host is not running its DDL worker; Active: executing)
    pub statuses: Vec<String>,
}

/// A row of system.distribution_queue: a Distributed table's files waiting to be sent.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct DistributionQueue {
    pub database: String,
    pub table: String,
    pub data_files: Count,
    pub data_compressed_bytes: Count,
    pub error_count: Count,
    pub last_exception: String,
    pub is_blocked: Flag,
}

/// A row of system.zookeeper_connection: a Keeper connection the server uses.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct KeeperConnection {
    /// `default` (the `<zookeeper>` section) or an auxiliary Keeper's name
    pub name: String,
    pub host: String,
    pub port: Count,
}
