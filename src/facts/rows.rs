//! The rows of the server's system tables that chaudit's code reads, as the collection
//! records them (src/collect/plan.rs has their queries). A row is open: a newer server may
//! add columns, which are kept in the document for the rules and ignored here. A column a
//! trimmed snapshot leaves out reads as empty.

use std::borrow::Cow;

use schemars::JsonSchema;
use serde::Deserialize;

use super::typed::{Count, Flag, Number, SummedMap};

/// A row of system.settings_profile_elements that sets a setting in a profile.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct ProfileSetting {
    pub profile_name: String,
    pub setting_name: String,
    pub value: Option<String>,
}

/// A row of system.settings_profile_elements of a user.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct UserProfile {
    pub user_name: String,
    pub inherit_profile: Option<String>,
    pub setting_name: Option<String>,
    pub value: Option<String>,
}

/// A row of system.settings_profile_elements: one element of a profile, user or role.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct ProfileElement {
    pub profile_name: Option<String>,
    pub user_name: Option<String>,
    pub role_name: Option<String>,
    #[serde(deserialize_with = "super::typed::uint")]
    pub index: u64,
    pub setting_name: Option<String>,
    pub value: Option<String>,
    pub min: Option<String>,
    pub max: Option<String>,
    /// WRITABLE, CONST or CHANGEABLE_IN_READONLY
    pub writability: Option<String>,
    pub inherit_profile: Option<String>,
}

/// A row of system.settings_profiles.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct ProfileTarget {
    pub name: String,
    pub apply_to_all: Flag,
    pub apply_to_list: Vec<String>,
    pub apply_to_except: Vec<String>,
}

/// A row of system.users.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct User {
    pub name: String,
    /// where it is defined: users_xml (config files), local_directory (SQL), replicated, ldap
    pub storage: String,
    /// how it authenticates as text (no_password, plaintext_password, sha256_password, ...; a list on servers with several methods)
    pub auth_type: String,
    /// addresses and subnets it may connect from (::/0: any)
    pub host_ip: Vec<String>,
    pub host_names: Vec<String>,
    pub host_names_regexp: Vec<String>,
    pub host_names_like: Vec<String>,
    /// for a user with a plaintext password that accepts any address: whether the server let chaudit log in as it with an empty password (null: not tried)
    pub empty_password: Option<bool>,
}

/// A row of system.role_grants: a role granted to a user or a role.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct RoleGrant {
    pub user_name: Option<String>,
    pub role_name: Option<String>,
    pub granted_role_name: String,
    pub with_admin_option: Flag,
}

/// A setting of system.server_settings, by name.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct ServerSetting<'a> {
    #[serde(borrow)]
    pub value: Cow<'a, str>,
    #[serde(borrow)]
    pub default: Cow<'a, str>,
    /// present in the config (not: differs from the default)
    pub changed: bool,
}

/// A setting of system.settings (the auditing user's session), by name.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct SessionSetting<'a> {
    // borrowed from the fact: a replica's 1,300 settings are read, not copied
    #[serde(borrow)]
    pub value: Cow<'a, str>,
    #[serde(borrow)]
    pub default: Cow<'a, str>,
    pub changed: bool,
}

/// The changed settings of `live.settings`, in name order, read without keeping the others
/// (a replica has 1,300 settings, a few of them changed).
#[derive(Debug, Default)]
pub struct ChangedSettings<'a>(pub Vec<(&'a str, SessionSetting<'a>)>);

impl<'de> Deserialize<'de> for ChangedSettings<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Changed;
        impl<'de> serde::de::Visitor<'de> for Changed {
            type Value = ChangedSettings<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a map of settings by name")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut changed = Vec::new();
                while let Some((name, setting)) = map.next_entry::<&'de str, SessionSetting<'de>>()? {
                    if setting.changed {
                        changed.push((name, setting));
                    }
                }
                changed.sort_unstable_by_key(|(name, _)| *name);
                Ok(ChangedSettings(changed))
            }
        }
        deserializer.deserialize_map(Changed)
    }
}

/// A setting of system.merge_tree_settings changed in `<merge_tree>`, by name.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct MergeTreeSetting<'a> {
    #[serde(borrow)]
    pub value: Cow<'a, str>,
    pub changed: bool,
}

/// A system log table (system.tables, `*_log` in the system database).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct LogTable<'a> {
    #[serde(borrow)]
    pub name: Cow<'a, str>,
    /// its engine clause (TTL included)
    #[serde(borrow)]
    pub engine_full: Cow<'a, str>,
}

/// A user table (system.tables outside the system databases).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct Table {
    pub database: String,
    pub name: String,
    pub engine: String,
    /// its engine clause: arguments, keys, TTL and the table's SETTINGS
    pub engine_full: String,
    pub storage_policy: String,
    /// a hash of the CREATE query before its engine clause (columns, indexes, projections)
    pub structure_hash: String,
}

/// A user's SELECTs that ran with parallel replicas on (query_log).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct ParallelReplicasUse {
    pub user: String,
    /// SELECTs that ran with enable_parallel_replicas on
    pub asked: Count,
    /// those that read across replicas (ParallelReplicasQueryCount)
    pub coordinated: Count,
    /// those that read across replicas and read under 100,000 rows
    pub small_coordinated: Count,
    /// the average duration of those, in milliseconds (0 when none)
    pub small_avg_ms: Number,
    /// those that did not read across replicas and ran with the analyzer off
    pub without_analyzer: Count,
}

/// A setting a user's queries ran with changed (query_log `Settings`), and how many did.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct WorkloadSetting {
    pub user: String,
    pub name: String,
    pub value: String,
    pub queries: Count,
}

/// A row of system.parts summed per table (active parts).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct TableParts {
    pub database: String,
    pub table: String,
    /// active parts
    pub parts: Count,
    pub total_rows: Count,
    pub median_part_rows: Number,
    pub max_part_rows: Count,
    /// the largest active part on disk
    pub max_part_bytes: Count,
    /// rows of each part (the first 1,000)
    pub part_rows: Vec<Count>,
}

/// A row of system.projections.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct Projection {
    pub database: String,
    pub table: String,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub query: String,
}

/// query_log per normalized query shape (the log's `shapes` query), with the Top-N reading
/// chaudit adds (src/collect/explain.rs).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct QueryShape {
    /// normalized_query_hash
    pub shape: String,
    /// one query of the shape
    pub example: String,
    pub tables: Vec<String>,
    pub runs: Number,
    pub user: String,
    /// query_log.query_kind: Select, Insert, Create, System, ...
    pub query_kind: String,
    /// up to 4 clients that sent it: the native client's name, else the HTTP User-Agent
    pub clients: Vec<String>,
    /// up to 4 of its non-empty log_comment values
    pub log_comments: Vec<String>,
    /// query_log.projections (empty for projection indexes)
    pub projections_used: Vec<String>,
    /// the largest max_execution_time its queries ran with (0: unlimited)
    pub max_execution_time: Number,
    pub max_concurrent_queries_for_user: Number,
    pub avg_ms: Number,
    pub max_ms: Number,
    /// rows read, all runs
    pub read_rows: Number,
    pub result_rows: Number,
    /// ContextLock acquisitions per run
    pub context_locks: Number,
    /// ContextLockWaitMicroseconds per run
    pub lock_wait_us: Number,
    /// OSCPUVirtualTimeMicroseconds per run
    pub cpu_us: Number,
    /// CachedReadBufferReadFromCacheBytes, all runs
    pub cache_bytes: Number,
    /// CachedReadBufferReadFromSourceBytes, all runs
    pub source_bytes: Number,
    /// runs refused with TOO_MANY_SIMULTANEOUS_QUERIES (202)
    pub refused: Number,
    /// up to 16 distinct texts of the shape (normalized_query_hash ignores literals)
    pub examples: Vec<String>,
    /// bytes fetched from object storage, all runs (the cache's source bytes; the remote reader's without a cache)
    pub object_store_bytes: Number,
    /// object-store requests per run (S3/Azure GETs; else remote reads past the cache)
    pub object_store_reads: Number,
    /// derived: the largest LIMIT of a Top-N text of the shape (SQL parser), -1 for none
    pub top_n_limit: i64,
    /// derived: the text with that LIMIT
    pub top_n_query: Option<String>,
}

/// query_log's workload over the audit window, one row (`chaudit upgrade`).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct WorkloadUsage {
    pub queries: Count,
    pub native_protocol: Count,
    pub http: Count,
    pub inserts: Count,
    pub joins: Count,
    /// setting -> queries that changed it, as sumMap writes it: [[names], [counts]]
    pub changed_settings: SummedMap,
    /// format -> queries, [[names], [counts]]
    pub formats: SummedMap,
    /// table function -> queries, [[names], [counts]]
    pub table_functions: SummedMap,
    /// table engine -> queries, [[names], [counts]]
    pub storages: SummedMap,
}

/// A row of system.grants on every database (`*.*`), partial revokes left out.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct Grant {
    pub user_name: Option<String>,
    pub role_name: Option<String>,
    /// ALL, ACCESS MANAGEMENT, SELECT, ...
    pub access_type: String,
    pub grant_option: Flag,
}

/// A row of system.quotas, and whether it limits anything.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct Quota {
    pub name: String,
    pub storage: String,
    pub apply_to_all: Flag,
    pub apply_to_list: Vec<String>,
    pub apply_to_except: Vec<String>,
    /// one of its intervals bounds queries, errors, rows, bytes or execution time
    pub limited: Flag,
}

/// A row of system.row_policies.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct RowPolicy {
    pub short_name: String,
    pub database: String,
    /// empty for a policy on a whole database (ON db.*)
    pub table: String,
    pub is_restrictive: Flag,
    pub apply_to_all: Flag,
    pub apply_to_list: Vec<String>,
    pub apply_to_except: Vec<String>,
}

/// A row of system.disks (the columns chaudit's catalog names; the query reads them all).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct Disk {
    pub name: String,
    pub path: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub object_storage_type: String,
    pub metadata_type: String,
    /// set on a cache disk
    pub cache_path: String,
    pub free_space: Count,
    pub total_space: Count,
    pub unreserved_space: Count,
    pub keep_free_space: Count,
    pub is_remote: Flag,
    pub is_broken: Flag,
    pub is_encrypted: Flag,
    pub is_read_only: Flag,
    pub is_write_once: Flag,
}

/// A row of system.storage_policies: one volume of a policy.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct StoragePolicyVolume {
    pub policy_name: String,
    pub volume_name: String,
    pub volume_priority: Count,
    pub volume_type: String,
    pub disks: Vec<String>,
    pub max_data_part_size: Count,
    pub move_factor: Number,
    pub prefer_not_to_merge: Flag,
    pub perform_ttl_move_on_insert: Flag,
    pub load_balancing: String,
}

/// A row of system.warnings.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct Warning {
    pub message: String,
}

/// A row of system.clusters: one replica of a cluster's shard.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct ClusterReplica {
    pub cluster: String,
    pub shard_num: Count,
    pub replica_num: Count,
    pub host_name: String,
    pub port: Count,
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

/// A partition's active parts (system.parts summed per partition).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct Partition {
    pub database: String,
    pub table: String,
    pub partition_id: String,
    /// active parts
    pub parts: Count,
    pub rows: Count,
}

/// system.detached_parts counted per table and reason.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct DetachedParts {
    pub database: String,
    pub table: String,
    /// broken, unexpected, ignored, ... (empty: detached by a user)
    pub reason: String,
    pub parts: Count,
}

/// A row of system.mutations that is not done.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct Mutation {
    pub database: String,
    pub table: String,
    pub mutation_id: String,
    /// its first 300 characters
    pub command: String,
    /// create_time
    pub created: String,
    /// since create_time
    pub age_seconds: Number,
    pub parts_to_do: Number,
    /// empty unless its last attempt failed
    pub latest_fail_reason: String,
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

/// A row of system.databases.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct Database {
    pub name: String,
    pub engine: String,
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

/// The running release's age, one row.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct Release {
    /// days since the first day of the month its version (YY.M) names
    pub age_days: Number,
}

/// metric_log's Context lock rate over the window, per host.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct LockRate {
    pub host: String,
    pub peak_locks_per_second: Count,
    pub avg_locks_per_second: Number,
    pub peak_lock_wait_us_per_second: Count,
    pub peak_lock_waiters: Number,
    pub intervals: Count,
}

/// query_log's Context lock over the window, all queries (the audit's own left out), one row
/// per node (none when the window has no query).
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct LockTotals {
    pub host: String,
    pub queries: Count,
    /// ContextLock acquisitions, all queries
    pub context_locks: Count,
    /// ContextLockWaitMicroseconds, all queries
    pub lock_wait_us: Count,
    /// the median query's ContextLock acquisitions
    pub median_context_locks: Number,
}

/// query_log's synchronous INSERTs into one target.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct InsertTarget {
    /// the tables written (table functions left out)
    pub target: String,
    pub inserts: Count,
    pub rows: Count,
    /// rows per INSERT
    pub avg_rows: Number,
}

/// query_log's failed queries of one error code.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct QueryError {
    pub code: Number,
    pub name: String,
    pub errors: Count,
    /// failures in the busiest hour
    pub peak_per_hour: Count,
    pub example: String,
}

/// part_log's events of one type and error code on one table.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct PartEvents {
    pub database: String,
    pub table: String,
    /// NewPart, MergeParts, MutatePart, DownloadPart or MovePart
    pub event_type: String,
    /// the error code (0: succeeded)
    pub error: Count,
    pub events: Count,
    /// events in the busiest hour
    pub peak_per_hour: Count,
    /// events in the partition with the most of them
    pub peak_partition_parts: Count,
}
