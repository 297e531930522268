//! The workload evidence read from a server's system logs.

use std::collections::BTreeMap;

use crate::facts::{derived, rows};

fact_keys! {
    Log "log", typed;
    WINDOW_SECONDS: u64 = "window_seconds", "the window";
    UNAVAILABLE: BTreeMap<String, String> = "unavailable", "log evidence that could not be read, and why";
    ABSENT: BTreeMap<String, String> = "absent",
        "log evidence a server that has just started has not written yet (its table not created), and why";
    SHAPES: Vec<rows::QueryShape> = "shapes",
        "query_log per normalized query shape, top 50 by total time (the audit's own queries left out)";
    USER_SETTINGS: Vec<rows::WorkloadSetting> = "user_settings",
        "query_log: per user, each changed setting its queries ran with";
    PARALLEL_REPLICAS: Vec<rows::ParallelReplicasUse> = "parallel_replicas",
        "query_log: per user, the SELECTs run with parallel replicas on and how many read across replicas";
    PLANS: Vec<derived::Plan> = "plans", "the server's EXPLAIN of up to 10 candidate shapes (src/collect/explain.rs)";
    LOCK_TOTALS: Vec<rows::LockTotals> = "lock_totals",
        "query_log: one row per node, the Context lock of all queries in the window and the median query's";
    LOCK_RATE: Vec<rows::LockRate> = "lock_rate", "metric_log: Context lock rate per interval, per host";
    CACHE_RATE: Vec<rows::CacheRate> = "cache_rate",
        "metric_log: bytes read from the filesystem cache and fetched from object storage over the window, per host";
    INSERTS: Vec<rows::InsertTarget> = "inserts", "query_log: synchronous INSERTs per target table, top 50 by count";
    QUERY_ERRORS: Vec<rows::QueryError> = "query_errors", "query_log: failed queries per error code, top 50";
    PART_EVENTS: Vec<rows::PartEvents> = "part_events",
        "part_log: new parts, merges, mutations, fetches, moves per table and error code";
    USAGE: Vec<rows::WorkloadUsage> = "usage",
        "`chaudit upgrade` only: the workload by protocol, INSERTs, JOINs, formats, table functions, storages";
}
