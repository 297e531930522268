//! Rows read from the server's logs over the audit window (query_log, metric_log, part_log):
//! query shapes, the workload, Context locks, INSERT targets, errors, part events.

use std::collections::BTreeMap;

use super::*;

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

/// metric_log's Context lock rate over the window, per host.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct LockRate {
    pub host: String,
    pub peak_locks_per_second: Count,
    /// the peak acquisitions per second of each step of the window (at most 60 steps), by the step's start
    pub locks_per_second: BTreeMap<String, Count>,
    /// the peak wait per second of each step, by the step's start
    pub lock_wait_us_per_second: BTreeMap<String, Count>,
    pub avg_locks_per_second: Number,
    pub peak_lock_wait_us_per_second: Count,
    pub peak_lock_waiters: Number,
    pub intervals: Count,
}

/// metric_log's filesystem-cache reads over the window, per host.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct CacheRate {
    pub host: String,
    /// bytes read from the filesystem cache in each step of the window (at most 60 steps), by the step's start
    pub cache_bytes: BTreeMap<String, Count>,
    /// bytes fetched from object storage in each step (by the cache; in a second without cache reads, by the remote reader), by the step's start
    pub object_store_bytes: BTreeMap<String, Count>,
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
    /// failures per hour, by the hour's start (hours without one left out)
    pub per_hour: BTreeMap<String, Count>,
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
    /// events per hour, by the hour's start (hours without one left out)
    pub per_hour: BTreeMap<String, Count>,
    /// events in the busiest hour
    pub peak_per_hour: Count,
    /// events in the partition with the most of them
    pub peak_partition_parts: Count,
}
