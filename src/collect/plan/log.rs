//! The queries over the server's logs for the audit window (query_log, metric_log),
//! aggregated on the server, and the review's own pass over the workload.

use crate::facts::keys;

/// Workload evidence over system.query_log for the audit window, aggregated on the server:
/// one pass over the window per audit, whatever the number of rules. The audit's own
/// queries (query_id `chaudit-...`) are left out.
pub fn log_queries(since_seconds: u64) -> Vec<(&'static str, &'static str, String)> {
    let window = log_window(since_seconds);
    let step = series_step(since_seconds);
    vec![
        (
            keys::log::SHAPES.name(),
            "query_log: per query shape, runs, kind, user and its clients, limits, projections used, latency, rows, Context lock, cache bytes (top 50 by total time)",
            format!(
                "SELECT toString(normalized_query_hash) AS shape, any(query) AS example, any(tables) AS tables, count() AS runs, any(user) AS user, \
             toString(any(query_kind)) AS query_kind, groupUniqArray(4)(if(client_name != '', client_name, http_user_agent)) AS clients, \
             groupUniqArrayIf(4)(log_comment, log_comment != '') AS log_comments, \
             groupUniqArrayArray(projections) AS projections_used, groupUniqArray(16)(query) AS examples, \
             max(toFloat64OrZero(Settings['max_execution_time'])) AS max_execution_time, \
             max(toUInt64OrZero(Settings['max_concurrent_queries_for_user'])) AS max_concurrent_queries_for_user,              round(avg(query_duration_ms), 1) AS avg_ms, max(query_duration_ms) AS max_ms, sum(read_rows) AS read_rows, sum(result_rows) AS result_rows,              round(avg(ProfileEvents['ContextLock']), 1) AS context_locks,              round(avg(ProfileEvents['ContextLockWaitMicroseconds']), 1) AS lock_wait_us,              round(avg(ProfileEvents['OSCPUVirtualTimeMicroseconds']), 1) AS cpu_us,              sum(ProfileEvents['CachedReadBufferReadFromCacheBytes']) AS cache_bytes,              sum(ProfileEvents['CachedReadBufferReadFromSourceBytes']) AS source_bytes, \
             sum({OBJECT_STORE_BYTES}) AS object_store_bytes, round(avg({OBJECT_STORE_READS}), 1) AS object_store_reads, \
                           countIf(exception_code = 202) AS refused              FROM system.query_log WHERE {window} AND type IN ('QueryFinish', 'ExceptionBeforeStart', 'ExceptionWhileProcessing')              GROUP BY normalized_query_hash ORDER BY sum(query_duration_ms) DESC LIMIT 50"
            ),
        ),
        (
            keys::log::USER_SETTINGS.name(),
            "query_log: per user, the changed settings its queries ran with (profile, user and query level) and how many ran so (the server's own queries, without a user, left out)",
            format!(
                "SELECT user, name, value, count() AS queries FROM system.query_log \
                 ARRAY JOIN mapKeys(Settings) AS name, mapValues(Settings) AS value \
                 WHERE {window} AND type = 'QueryFinish' AND user != '' GROUP BY user, name, value ORDER BY queries DESC LIMIT 1000"
            ),
        ),
        // rows: {user, asked, coordinated, small_coordinated, small_avg_ms, without_analyzer}: the
        // SELECTs that ran with parallel replicas on, per user. A query that read across replicas
        // counts ParallelReplicasQueryCount; one the analyzer did not plan (off), or one under
        // parallel_replicas_min_number_of_rows_per_replica, counts no ParallelReplicas event
        // (measured on 25.8 with two replicas)
        (
            keys::log::PARALLEL_REPLICAS.name(),
            "query_log: per user, the SELECTs run with parallel replicas on, how many read across replicas (and of those, how many read under 100,000 rows), how many ran with the analyzer off",
            format!(
                "SELECT user, count() AS asked, countIf(ProfileEvents['ParallelReplicasQueryCount'] > 0) AS coordinated, \
                 countIf(ProfileEvents['ParallelReplicasQueryCount'] > 0 AND read_rows < 100000) AS small_coordinated, \
                 round(ifNotFinite(avgIf(query_duration_ms, ProfileEvents['ParallelReplicasQueryCount'] > 0 AND read_rows < 100000), 0), 1) AS small_avg_ms, \
                 countIf(ProfileEvents['ParallelReplicasQueryCount'] = 0 AND (Settings['enable_analyzer'] = '0' \
                 OR Settings['allow_experimental_analyzer'] = '0')) AS without_analyzer \
                 FROM system.query_log WHERE {window} AND type = 'QueryFinish' AND query_kind = 'Select' \
                 AND (toUInt64OrZero(Settings['enable_parallel_replicas']) >= 1 \
                 OR toUInt64OrZero(Settings['allow_experimental_parallel_reading_from_replicas']) >= 1) GROUP BY user"
            ),
        ),
        // rows: {target (the tables), inserts, rows, avg_rows}: synchronous INSERTs per target
        (
            keys::log::INSERTS.name(),
            "query_log: synchronous INSERTs per target table, with rows per INSERT (top 50 by count)",
            format!(
                "SELECT arrayStringConcat(arrayFilter(t -> NOT startsWith(t, '_table_function.'), tables), ',') AS target, count() AS inserts, sum(written_rows) AS rows, \
                 round(avg(written_rows), 1) AS avg_rows FROM system.query_log WHERE {window} AND type = 'QueryFinish' \
                 AND query_kind = 'Insert' AND ProfileEvents['AsyncInsertQuery'] = 0 GROUP BY target ORDER BY inserts DESC LIMIT 50"
            ),
        ),
        // rows: {code, name, errors, per_hour, peak_per_hour, example}: failed queries per error code
        (
            keys::log::QUERY_ERRORS.name(),
            "query_log: failed queries per error code, per hour and in the busiest hour (top 50)",
            format!(
                "SELECT exception_code AS code, errorCodeToName(exception_code) AS name, count() AS errors, \
                 sumMap(map(toStartOfHour(event_time), toUInt64(1))) AS per_hour, arrayMax(mapValues(per_hour)) AS peak_per_hour, \
                 substring(any(exception), 1, 300) AS example FROM system.query_log WHERE {window} \
                 AND type IN ('ExceptionBeforeStart', 'ExceptionWhileProcessing') GROUP BY exception_code \
                 ORDER BY errors DESC LIMIT 50"
            ),
        ),
        // rows: {database, table, event_type, error, events, per_hour, peak_per_hour, peak_partition_parts}
        (
            keys::log::PART_EVENTS.name(),
            "part_log: new parts, merges, mutations, fetches and moves per table and error code, per hour, with the busiest hour and partition",
            format!(
                "SELECT database, table, toString(event_type) AS event_type, error, count() AS events, \
                 sumMap(map(toStartOfHour(event_time), toUInt64(1))) AS per_hour, arrayMax(mapValues(per_hour)) AS peak_per_hour, \
                 arrayMax(mapValues(sumMap(map(partition_id, toUInt64(1))))) AS peak_partition_parts \
                 FROM system.part_log WHERE event_time >= now() - INTERVAL {since_seconds} SECOND \
                 AND toString(event_type) IN ('NewPart', 'MergeParts', 'MutatePart', 'DownloadPart', 'MovePart') \
                 GROUP BY database, table, event_type, error ORDER BY events DESC LIMIT 1000"
            ),
        ),
        // one row per node: the window's Context lock acquisitions and wait over all its queries (every
        // shape, not only the top 50) and the typical query's count, what a shape is compared
        // with. quantileTiming: bounded memory on any window, exact for counts under 1024 (a
        // typical query takes tens)
        (
            keys::log::LOCK_TOTALS.name(),
            "query_log: Context lock acquisitions and wait of all queries in the window, and the median query's acquisitions",
            format!(
                "SELECT hostName() AS host, count() AS queries, sum(ProfileEvents['ContextLock']) AS context_locks, \
                 sum(ProfileEvents['ContextLockWaitMicroseconds']) AS lock_wait_us, \
                 quantileTiming(0.5)(ProfileEvents['ContextLock']) AS median_context_locks FROM system.query_log \
                 WHERE {window} AND type IN ('QueryFinish', 'ExceptionBeforeStart', 'ExceptionWhileProcessing') GROUP BY host"
            ),
        ),
        (
            keys::log::LOCK_RATE.name(),
            "metric_log: Context lock acquisitions and wait per interval (1 s by default), threads waiting, and the peaks over the window in at most 60 steps",
            format!(
                "SELECT hostName() AS host, max(ProfileEvent_ContextLock) AS peak_locks_per_second, \
                 maxMap(map(toStartOfInterval(event_time, INTERVAL {step} SECOND), ProfileEvent_ContextLock)) AS locks_per_second, \
                 maxMap(map(toStartOfInterval(event_time, INTERVAL {step} SECOND), ProfileEvent_ContextLockWaitMicroseconds)) AS lock_wait_us_per_second, \
                 round(avg(ProfileEvent_ContextLock), 1) AS avg_locks_per_second, \
                 max(ProfileEvent_ContextLockWaitMicroseconds) AS peak_lock_wait_us_per_second, \
                 max(CurrentMetric_ContextLockWait) AS peak_lock_waiters, count() AS intervals \
                 FROM system.metric_log WHERE event_time >= now() - INTERVAL {since_seconds} SECOND GROUP BY host"
            ),
        ),
        // one row per node: the bytes read from the filesystem cache, and those fetched from
        // object storage (the cache's source; in a second without cache reads, the remote
        // reader's), per step of the window
        (
            keys::log::CACHE_RATE.name(),
            "metric_log: bytes read from the filesystem cache and fetched from object storage, over the window in at most 60 steps",
            format!(
                "SELECT hostName() AS host, \
                 sumMap(map(toStartOfInterval(event_time, INTERVAL {step} SECOND), ProfileEvent_CachedReadBufferReadFromCacheBytes)) AS cache_bytes, \
                 sumMap(map(toStartOfInterval(event_time, INTERVAL {step} SECOND), ProfileEvent_CachedReadBufferReadFromSourceBytes \
                 + if(ProfileEvent_CachedReadBufferReadFromCacheBytes + ProfileEvent_CachedReadBufferReadFromSourceBytes = 0, \
                 ProfileEvent_RemoteFSUnprefetchedBytes + ProfileEvent_RemoteFSPrefetchedBytes, 0))) AS object_store_bytes \
                 FROM system.metric_log WHERE event_time >= now() - INTERVAL {since_seconds} SECOND GROUP BY host"
            ),
        ),
    ]
}

/// Bytes a query read from object storage: with a cache disk in the read path, what the
/// cache fetched from its source; without one, everything the remote-disk reader read.
const OBJECT_STORE_BYTES: &str = "ProfileEvents['CachedReadBufferReadFromSourceBytes'] + \
    if(ProfileEvents['CachedReadBufferReadFromCacheBytes'] + ProfileEvents['CachedReadBufferReadFromSourceBytes'] = 0, \
    ProfileEvents['RemoteFSUnprefetchedBytes'] + ProfileEvents['RemoteFSPrefetchedBytes'], 0)";

/// Requests a query sent to object storage: GETs on S3 and Azure disks; on other object
/// storage (a local blob store) the reads that went past the cache to the remote disk.
const OBJECT_STORE_READS: &str = "greatest(ProfileEvents['S3GetObject'], ProfileEvents['DiskS3GetObject'], \
    ProfileEvents['AzureGetObject'], ProfileEvents['DiskAzureGetObject'], \
    if(ProfileEvents['CachedReadBufferReadFromCacheBytes'] + ProfileEvents['CachedReadBufferReadFromSourceBytes'] = 0, \
    ProfileEvents['RemoteFSUnprefetchedReads'] + ProfileEvents['RemoteFSPrefetchedReads'], ProfileEvents['CachedReadBufferReadFromCacheMisses']))";

/// For `chaudit upgrade`: which kinds of queries the workload runs (protocol, INSERTs, JOINs,
/// formats, table functions, storages) and which settings its queries ran with changed.
/// One more pass over the window, made only by the review.
pub fn usage_queries(since_seconds: u64) -> Vec<(&'static str, &'static str, String)> {
    // Server-to-server queries (not initial) count for the native protocol only: they come
    // over it (their `interface` is the initial query's), and the network settings govern them.
    let window = format!("event_time >= now() - INTERVAL {since_seconds} SECOND AND query_id NOT LIKE 'chaudit-%'");
    let per_item = |column: &str| format!("sumMapIf({column}, arrayMap(x -> toUInt64(1), {column}), is_initial_query)");
    vec![(
        keys::log::USAGE.name(),
        "query_log: the workload by protocol, INSERTs, JOINs, formats, table functions, storages and changed settings",
        format!(
            "SELECT countIf(is_initial_query) AS queries, countIf(interface = 1 OR NOT is_initial_query) AS native_protocol, \
             countIf(is_initial_query AND interface = 2) AS http, \
             countIf(is_initial_query AND query_kind = 'Insert') AS inserts, \
             countIf(is_initial_query AND match(lower(query), '[^a-z_]join[^a-z_]') AND NOT match(lower(query), 'array[ \t\n]+join')) AS joins, \
             {} AS changed_settings, {} AS formats, {} AS table_functions, {} AS storages \
             FROM system.query_log WHERE {window} AND type = 'QueryFinish'",
            per_item("mapKeys(Settings)"),
            per_item("used_formats"),
            per_item("used_table_functions"),
            per_item("used_storages"),
        ),
    )]
}

/// A live server's own history of setting defaults, for a review when it is newer than
/// chaudit's data.
pub const SETTINGS_CHANGES: (&str, &str) =
    ("settings_changes: default changes per release", "SELECT * FROM system.settings_changes");

/// The seconds of one step of a series over the window: at most 60 steps, none under a second.
pub fn series_step(since_seconds: u64) -> u64 {
    since_seconds.div_ceil(60).max(1)
}

fn log_window(since_seconds: u64) -> String {
    format!(
        "event_time >= now() - INTERVAL {since_seconds} SECOND AND is_initial_query AND query_id NOT LIKE 'chaudit-%'"
    )
}

/// The system table a log query reads (`query_log`, `metric_log`).
pub fn log_table(sql: &str) -> &str {
    sql.split("FROM system.").nth(1).and_then(|rest| rest.split_whitespace().next()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use crate::collect::plan::*;

    #[test]
    fn log_queries_name_their_table_and_tag_apart_from_facts() {
        let logs: Vec<_> = log_queries(60).into_iter().chain(usage_queries(60)).collect();
        let tables: Vec<&str> = logs.iter().map(|(_, _, sql)| log_table(sql)).collect();
        assert_eq!(
            tables,
            [
                "query_log",
                "query_log",
                "query_log",
                "query_log",
                "query_log",
                "part_log",
                "query_log",
                "metric_log",
                "metric_log",
                "query_log"
            ]
        );
        let facts: Vec<&FactQuery> = FACTS.iter().collect();
        let parts = parts(&facts, &logs);
        let mut tags: Vec<&str> = parts.iter().map(|p| p.tag.as_str()).collect();
        tags.sort_unstable();
        tags.dedup();
        assert_eq!(tags.len(), FACTS.len() + logs.len());
    }
}
