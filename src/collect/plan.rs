//! The facts collected from each node: one query per system table, whatever the number of
//! rules (round trips do not grow with the rule pack). `SELECT *` where the columns differ
//! between versions, so a 24.8 and a 26.9 server answer the same plan.

pub struct FactQuery {
    /// The key under `live` in the facts document.
    pub name: &'static str,
    pub purpose: &'static str,
    pub sql: &'static str,
    /// The first ClickHouse version that has what the query reads (major, minor).
    pub since: Option<(u32, u32)>,
}

/// What the settings fact is, on one server and through the fan-out alike.
const SETTINGS_PURPOSE: &str = "session settings in effect for this user (value, default, changed)";

pub const FACTS: &[FactQuery] = &[
    FactQuery {
        name: "settings",
        purpose: SETTINGS_PURPOSE,
        sql: "SELECT name, value, default, changed FROM system.settings",
        since: None,
    },
    FactQuery {
        name: "server_settings",
        purpose: "server settings in effect (value, default, changed)",
        sql: "SELECT name, value, default, changed FROM system.server_settings",
        since: None,
    },
    FactQuery {
        name: "merge_tree_settings",
        purpose: "MergeTree settings changed in <merge_tree> of the server config",
        sql: "SELECT name, value, changed FROM system.merge_tree_settings WHERE changed",
        since: None,
    },
    FactQuery {
        name: "profile_settings",
        purpose: "settings of each settings profile (compared across replicas)",
        sql: "SELECT profile_name, setting_name, value FROM system.settings_profile_elements \
              WHERE profile_name IS NOT NULL AND setting_name IS NOT NULL",
        since: None,
    },
    FactQuery {
        name: "user_profiles",
        purpose: "the profile and settings each user is given (the auditor's session shows only its own)",
        sql: "SELECT user_name, inherit_profile, setting_name, value FROM system.settings_profile_elements \
              WHERE user_name IS NOT NULL",
        since: None,
    },
    // rows: every element of every profile, user and role, with its bounds (user_settings.rs
    // resolves them per user)
    FactQuery {
        name: "profile_elements",
        purpose: "settings profiles' elements with their constraints and inheritance (readonly = 2 without bounds)",
        sql: "SELECT profile_name, user_name, role_name, index, setting_name, value, min, max, \
              toString(writability) AS writability, inherit_profile FROM system.settings_profile_elements",
        since: None,
    },
    FactQuery {
        name: "profile_targets",
        purpose: "settings profiles given TO users or roles",
        sql: "SELECT name, apply_to_all, apply_to_list, apply_to_except FROM system.settings_profiles \
              WHERE apply_to_all OR notEmpty(apply_to_list)",
        since: None,
    },
    FactQuery {
        name: "log_tables",
        purpose: "which system log tables exist (query_log, metric_log, ...) and their engine (its TTL)",
        sql: "SELECT name, engine_full FROM system.tables WHERE database = 'system' AND endsWith(name, '_log')",
        since: None,
    },
    FactQuery {
        name: "disks",
        purpose: "disks (type, paths, cache path)",
        sql: "SELECT * FROM system.disks",
        since: None,
    },
    FactQuery {
        name: "storage_policies",
        purpose: "storage policies and their volumes",
        sql: "SELECT * FROM system.storage_policies",
        since: None,
    },
    FactQuery {
        name: "errors",
        purpose: "error counters since start (e.g. TOO_MANY_SIMULTANEOUS_QUERIES)",
        sql: "SELECT name, code, value FROM system.errors WHERE value > 0",
        since: None,
    },
    FactQuery {
        name: "warnings",
        purpose: "the server's own start-up warnings",
        sql: "SELECT message FROM system.warnings",
        since: None,
    },
    FactQuery {
        name: "clusters",
        purpose: "clusters and their replicas",
        sql: "SELECT cluster, shard_num, replica_num, host_name, port FROM system.clusters",
        since: None,
    },
    FactQuery {
        name: "macros",
        purpose: "the server's macros (its replica and shard names, compared across replicas)",
        sql: "SELECT macro, substitution FROM system.macros",
        since: None,
    },
    FactQuery {
        name: "tables",
        purpose: "user tables (engine, its clause with the table's settings, storage policy, a hash of the \
                  columns and indexes; compared across replicas)",
        sql: "SELECT database, name, engine, engine_full, storage_policy, \
              toString(cityHash64(if(engine_full = '', create_table_query, \
              substring(create_table_query, 1, position(create_table_query, engine_full) - 1)))) AS structure_hash \
              FROM system.tables WHERE database NOT IN ('system', 'information_schema', 'INFORMATION_SCHEMA')",
        since: None,
    },
    FactQuery {
        name: "parts",
        purpose: "active parts per table (count, rows, median and largest part, largest on disk)",
        sql: "SELECT database, table, count() AS parts, sum(rows) AS total_rows, median(rows) AS median_part_rows, \
              max(rows) AS max_part_rows, max(bytes_on_disk) AS max_part_bytes, \
              arraySlice(groupArray(rows), 1, 1000) AS part_rows FROM system.parts WHERE active GROUP BY database, table",
        since: None,
    },
    // rows: {database, table, partition_id, parts, rows}, the 100 partitions with the most active parts
    FactQuery {
        name: "partitions",
        purpose: "the partitions with the most active parts (too many parts)",
        sql: "SELECT database, table, partition_id, count() AS parts, sum(rows) AS rows FROM system.parts WHERE active \
              GROUP BY database, table, partition_id ORDER BY parts DESC LIMIT 100",
        since: None,
    },
    // rows: {database, table, reason ('' = detached by a user), parts}
    FactQuery {
        name: "detached_parts",
        purpose: "detached parts per table and reason",
        sql: "SELECT database, table, ifNull(reason, '') AS reason, count() AS parts FROM system.detached_parts \
              GROUP BY database, table, reason",
        since: None,
    },
    // rows: {database, table, mutation_id, command, created, age_seconds, parts_to_do, latest_fail_reason}
    FactQuery {
        name: "mutations",
        purpose: "mutations not done (age, parts to do, latest failure)",
        sql: "SELECT database, table, mutation_id, substring(command, 1, 300) AS command, toString(create_time) AS created, \
              dateDiff('second', create_time, now()) AS age_seconds, parts_to_do, latest_fail_reason \
              FROM system.mutations WHERE NOT is_done ORDER BY create_time LIMIT 1000",
        since: None,
    },
    // rows: {database, table, is_readonly, is_session_expired, absolute_delay, queue_size, ...,
    // metadata_missing: read-only, the session alive, the replica's own name not among the
    // table's replicas in Keeper (measured on 25.8 with its replica node deleted: {} or the
    // other replicas only; a replica kept read-only for another reason is listed), zookeeper_path,
    // log_pointer, log_max_index, total_rows, active_parts: the rows and parts read in the same
    // query as the queue, compared between replicas only when each had run the whole log}
    FactQuery {
        name: "replicas",
        purpose: "replicated tables: read-only, delay, queue, metadata missing in Keeper, rows and parts",
        sql: "SELECT r.database AS database, r.table AS table, is_readonly, is_session_expired, absolute_delay, \
              queue_size, inserts_in_queue, merges_in_queue, active_replicas, total_replicas, \
              is_readonly AND NOT is_session_expired AND NOT has(mapKeys(replica_is_active), replica_name) \
              AS metadata_missing, zookeeper_path, log_pointer, log_max_index, \
              ifNull(p.total_rows, 0) AS total_rows, ifNull(p.active_parts, 0) AS active_parts \
              FROM system.replicas AS r LEFT JOIN (SELECT database, table, sum(rows) AS total_rows, \
              count() AS active_parts FROM system.parts WHERE active GROUP BY database, table) AS p \
              ON r.database = p.database AND r.table = p.table",
        since: None,
    },
    // rows: {database, table, type, entries, failing, max_tries, exception (one failing entry's)}
    FactQuery {
        name: "replication_queue",
        purpose: "replication queue entries per table and type, and those failing",
        sql: "SELECT database, table, type, count() AS entries, countIf(last_exception != '') AS failing, \
              max(num_tries) AS max_tries, anyIf(last_exception, last_exception != '') AS exception \
              FROM system.replication_queue GROUP BY database, table, type",
        since: None,
    },
    // rows: {name, engine}
    FactQuery {
        name: "databases",
        purpose: "databases and their engines (Ordinary is deprecated)",
        sql: "SELECT name, engine FROM system.databases",
        since: None,
    },
    // rows: {database, table, data_files, data_compressed_bytes, error_count, last_exception, is_blocked}
    FactQuery {
        name: "distribution_queue",
        purpose: "Distributed tables' pending sends (backlog, errors)",
        sql: "SELECT database, table, data_files, data_compressed_bytes, error_count, last_exception, is_blocked \
              FROM system.distribution_queue WHERE data_files > 0",
        since: None,
    },
    // keyed by metric name: value (AttachedTable, Query, MemoryTracking, BackgroundFetchesPoolTask, ...)
    FactQuery {
        name: "metrics",
        purpose: "current metrics: attached objects, active parts, running queries, connections, Keeper sessions, \
                  memory tracked, background pools' tasks and sizes",
        // `Query` without the audits' own queries (and their parts on other replicas): a
        // fan-out to 500 replicas of one server is no load of its users
        sql: "SELECT metric, if(metric = 'Query', greatest(value - toInt64(own.audit), toInt64(0)), value) AS value \
              FROM system.metrics, (SELECT count() AS audit FROM system.processes WHERE initial_query_id LIKE 'chaudit-%') AS own \
              WHERE metric LIKE 'Attached%' OR metric LIKE 'Background%Pool%' \
              OR metric IN ('PartsActive', 'Query', 'TCPConnection', 'HTTPConnection', 'MySQLConnection', \
              'PostgreSQLConnection', 'ZooKeeperSession', 'MemoryTracking')",
        since: None,
    },
    // keyed by event name: count since the server started (only the events rules read)
    FactQuery {
        name: "events",
        purpose: "fault counters since start: throttled inserts, replication, I/O, Distributed, Keeper, DNS errors; \
                  Keeper sessions established",
        sql: "SELECT event, value FROM system.events WHERE event IN ('DelayedInserts', 'RejectedInserts', \
              'ReplicatedPartFailedFetches', 'ReplicatedPartChecksFailed', 'ReplicatedDataLoss', \
              'DataAfterMergeDiffersFromReplica', 'DistributedConnectionFailAtAll', 'DistributedSyncInsertionTimeoutExceeded', \
              'StorageBufferErrorOnFlush', 'ReadBufferFromFileDescriptorReadFailed', 'WriteBufferFromFileDescriptorWriteFailed', \
              'SlowRead', 'DNSError', 'ZooKeeperHardwareExceptions', 'ZooKeeperInit')",
        since: None,
    },
    // one row: {age_days}: days since the first day of the release month the version names
    // (YY.M), by the server's clock
    FactQuery {
        name: "release",
        purpose: "the age of the running release (its version names its month)",
        sql: "SELECT dateDiff('day', makeDate(2000 + toUInt16OrZero(splitByChar('.', version())[1]), \
              toUInt8OrZero(splitByChar('.', version())[2]), 1), today()) AS age_days FROM system.one",
        since: None,
    },
    // rows: {name, storage, auth_type (as text: one method, or a list of them), host_ip[],
    // host_names[], host_names_regexp[], host_names_like[]}
    FactQuery {
        name: "users",
        purpose: "users, where each is defined, how it authenticates and where it may connect from",
        sql: "SELECT name, storage, toString(auth_type) AS auth_type, host_ip, host_names, host_names_regexp, \
              host_names_like FROM system.users",
        since: None,
    },
    // rows: {user_name, role_name, access_type, grant_option}: grants on every database (*.*)
    FactQuery {
        name: "grants",
        purpose: "privileges granted on every database (ALL, ACCESS MANAGEMENT, ... on *.*) and with GRANT OPTION",
        sql: "SELECT user_name, role_name, toString(access_type) AS access_type, grant_option FROM system.grants \
              WHERE database IS NULL AND NOT is_partial_revoke",
        since: None,
    },
    // rows: {user_name, role_name, granted_role_name, with_admin_option}
    FactQuery {
        name: "role_grants",
        purpose: "roles granted to users and roles",
        sql: "SELECT user_name, role_name, granted_role_name, with_admin_option FROM system.role_grants",
        since: None,
    },
    // rows: {name, storage, apply_to_all, apply_to_list[], apply_to_except[], limited}: limited
    // when an interval bounds something (0 or NULL: no bound; the authentication-failure
    // bound is not a resource limit)
    FactQuery {
        name: "quotas",
        purpose: "quotas, whom they apply to and whether they limit anything (users under no quota)",
        sql: "SELECT name, storage, apply_to_all, apply_to_list, apply_to_except, name IN (SELECT quota_name FROM system.quota_limits \
              WHERE greatest(ifNull(max_queries, 0), ifNull(max_query_selects, 0), ifNull(max_query_inserts, 0), ifNull(max_errors, 0), \
              ifNull(max_result_rows, 0), ifNull(max_result_bytes, 0), ifNull(max_read_rows, 0), ifNull(max_read_bytes, 0), \
              ifNull(max_written_bytes, 0), toUInt64(ifNull(max_execution_time, 0) > 0)) > 0) AS limited FROM system.quotas",
        since: None,
    },
    // rows: {short_name, database, table ('' for a whole database), is_restrictive,
    // apply_to_all, apply_to_list[], apply_to_except[]}
    FactQuery {
        name: "row_policies",
        purpose: "row policies and whom they apply to (users without a policy read every row)",
        sql: "SELECT short_name, database, table, is_restrictive, apply_to_all, apply_to_list, apply_to_except \
              FROM system.row_policies",
        since: None,
    },
    FactQuery {
        name: "projections",
        purpose: "projections of user tables (projection indexes read _part_offset)",
        sql: "SELECT database, table, name, type, query FROM system.projections \
              WHERE database NOT IN ('system', 'information_schema', 'INFORMATION_SCHEMA')",
        since: Some((25, 1)),
    },
];

/// Workload evidence over system.query_log for the audit window, aggregated on the server:
/// one pass over the window per audit, whatever the number of rules. The audit's own
/// queries (query_id `chaudit-...`) are left out.
pub fn log_queries(since_seconds: u64) -> Vec<(&'static str, &'static str, String)> {
    let window = log_window(since_seconds);
    vec![
        (
            "shapes",
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
            "user_settings",
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
            "parallel_replicas",
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
            "inserts",
            "query_log: synchronous INSERTs per target table, with rows per INSERT (top 50 by count)",
            format!(
                "SELECT arrayStringConcat(arrayFilter(t -> NOT startsWith(t, '_table_function.'), tables), ',') AS target, count() AS inserts, sum(written_rows) AS rows, \
                 round(avg(written_rows), 1) AS avg_rows FROM system.query_log WHERE {window} AND type = 'QueryFinish' \
                 AND query_kind = 'Insert' AND ProfileEvents['AsyncInsertQuery'] = 0 GROUP BY target ORDER BY inserts DESC LIMIT 50"
            ),
        ),
        // rows: {code, name, errors, peak_per_hour, example}: failed queries per error code
        (
            "query_errors",
            "query_log: failed queries per error code, with the busiest hour (top 50)",
            format!(
                "SELECT exception_code AS code, errorCodeToName(exception_code) AS name, count() AS errors, \
                 arrayMax(mapValues(sumMap(map(toStartOfHour(event_time), toUInt64(1))))) AS peak_per_hour, \
                 substring(any(exception), 1, 300) AS example FROM system.query_log WHERE {window} \
                 AND type IN ('ExceptionBeforeStart', 'ExceptionWhileProcessing') GROUP BY exception_code \
                 ORDER BY errors DESC LIMIT 50"
            ),
        ),
        // rows: {database, table, event_type, error, events, peak_per_hour, peak_partition_parts}
        (
            "part_events",
            "part_log: new parts, merges, mutations, fetches and moves per table and error code, with the busiest hour and partition",
            format!(
                "SELECT database, table, toString(event_type) AS event_type, error, count() AS events, \
                 arrayMax(mapValues(sumMap(map(toStartOfHour(event_time), toUInt64(1))))) AS peak_per_hour, \
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
            "lock_totals",
            "query_log: Context lock acquisitions and wait of all queries in the window, and the median query's acquisitions",
            format!(
                "SELECT hostName() AS host, count() AS queries, sum(ProfileEvents['ContextLock']) AS context_locks, \
                 sum(ProfileEvents['ContextLockWaitMicroseconds']) AS lock_wait_us, \
                 quantileTiming(0.5)(ProfileEvents['ContextLock']) AS median_context_locks FROM system.query_log \
                 WHERE {window} AND type IN ('QueryFinish', 'ExceptionBeforeStart', 'ExceptionWhileProcessing') GROUP BY host"
            ),
        ),
        (
            "lock_rate",
            "metric_log: Context lock acquisitions and wait per interval (1 s by default), threads waiting",
            format!(
                "SELECT hostName() AS host, max(ProfileEvent_ContextLock) AS peak_locks_per_second, \
                 round(avg(ProfileEvent_ContextLock), 1) AS avg_locks_per_second, \
                 max(ProfileEvent_ContextLockWaitMicroseconds) AS peak_lock_wait_us_per_second, \
                 max(CurrentMetric_ContextLockWait) AS peak_lock_waiters, count() AS intervals \
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
        "usage",
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

fn log_window(since_seconds: u64) -> String {
    format!(
        "event_time >= now() - INTERVAL {since_seconds} SECOND AND is_initial_query AND query_id NOT LIKE 'chaudit-%'"
    )
}

/// The first query of every session: the server's version and the user's readonly level.
pub const CONNECT_PROBE: (&str, &str) = (
    "connect: version, readonly level, user and roles, and the limits that could cut an answer short",
    "SELECT version() AS version, toUInt8(getSetting('readonly')) AS readonly, currentUser() AS user, \
     enabledRoles() AS roles, toUInt64(getSetting('max_result_rows')) AS max_result_rows, \
     toUInt64(getSetting('max_result_bytes')) AS max_result_bytes, \
     toString(getSetting('result_overflow_mode')) AS result_overflow_mode, \
     toUInt64(getSetting('max_rows_to_read')) AS max_rows_to_read, \
     toUInt64(getSetting('max_bytes_to_read')) AS max_bytes_to_read, \
     toString(getSetting('read_overflow_mode')) AS read_overflow_mode, \
     toFloat64(getSetting('max_execution_time')) AS max_execution_time, \
     toString(getSetting('timeout_overflow_mode')) AS timeout_overflow_mode",
);

fn describe_connect() -> String {
    let (purpose, sql) = CONNECT_PROBE;
    format!("-- {purpose}\n{sql};\n")
}

/// What `--dry-run` prints: every query with its purpose; nothing is sent.
pub fn describe(log_window: Option<u64>, review: bool) -> String {
    let mut out = describe_connect();
    let mut logs = log_window.map(log_queries).unwrap_or_default();
    if let (Some(since), true) = (log_window, review) {
        logs.extend(usage_queries(since));
    }
    let all: Vec<&FactQuery> = FACTS.iter().collect();
    describe_parts(&mut out, &all, &logs);
    out.push_str(&format!("-- {COMBINED_PURPOSE}\n{};\n", combined(&parts(&all, &logs))));
    for query in &super::keeper::QUERIES {
        out.push_str(&format!("-- {}\n{};\n", query.purpose, query.sql));
    }
    out.push_str(&format!("-- {}\n{};\n", super::own_failures::PURPOSE, super::own_failures::sql()));
    out.push_str(&format!("-- {}\n{};\n", super::empty_password::PURPOSE, super::empty_password::SQL));
    if log_window.is_some() {
        let example =
            super::explain::Candidate { shape: String::new(), check: "", sql: "EXPLAIN ...".into(), about: None };
        out.push_str(&format!("-- {}\n--   {};\n", super::explain::PURPOSE, super::explain::union_sql(&[example])));
    }
    if review {
        let (purpose, sql) = SETTINGS_CHANGES;
        out.push_str(&format!("-- {purpose} (only when the server is newer than chaudit's data)\n{sql};\n"));
    }
    out
}

/// Each fact and log query with its purpose, as sent alone when the combined query fails.
fn describe_parts(out: &mut String, facts: &[&FactQuery], logs: &[(&str, &str, String)]) {
    let facts = facts.iter().map(|q| (q.name.to_string(), q.purpose, q.sql));
    let logs = logs.iter().map(|(name, purpose, sql)| (format!("log.{name}"), *purpose, sql.as_str()));
    for (name, purpose, sql) in facts.chain(logs) {
        out.push_str(&format!(
            "-- {name}: {purpose} (sent alone only if the combined query below fails)\n--   {sql};\n"
        ));
    }
}

/// What `--dry-run --cluster NAME` prints: the fan-out path's queries (all sent through the
/// --dsn node with skip_unavailable_shards = 1); over direct connections each replica gets
/// the plan of [`describe`].
pub fn describe_fan_out(cluster: &str, log_window: Option<u64>) -> String {
    let mut out = describe_connect();
    out.push_str(&format!("-- cluster members (system.clusters)\n{};\n", members_sql(cluster)));
    let (purpose, sql) = fan_out_failures();
    out.push_str(&format!("-- {purpose}\n{sql};\n"));
    out.push_str(&format!("-- {}\n{};\n", super::own_failures::PURPOSE, super::own_failures::sql()));
    let logs = log_window.map(log_queries).unwrap_or_default();
    let all = for_fan_out(FACTS.iter().collect());
    describe_parts(&mut out, &all, &logs);
    let mut parts = parts(&all, &logs);
    parts.push(Part { name: "version", tag: "version".into(), sql: VERSION_PROBE });
    out.push_str(&format!(
        "-- every fact and log query of every replica, and its version, in one round trip (the facts of the --dsn node's version)\n{};\n",
        fan_out_combined(cluster, &parts)
    ));
    out.push_str(&format!(
        "-- only when a replica is missing from it: the replicas' versions, then the union again with the facts the oldest \
         has (if a replica refuses it: the facts' union, then each query alone, through clusterAllReplicas)\n{};\n",
        fan_out(VERSION_PROBE, cluster)
    ));
    for query in &super::keeper::QUERIES {
        out.push_str(&format!("-- {}\n{};\n", query.purpose, query.fan_out_sql(cluster)));
    }
    if log_window.is_some() {
        let example = super::explain::fan_out_union_sql(cluster, &["EXPLAIN ..."]);
        out.push_str(&format!(
            "-- {}
--   {example};
",
            super::explain::FAN_OUT_PURPOSE
        ));
    }
    out
}

/// The system table a log query reads (`query_log`, `metric_log`).
pub fn log_table(sql: &str) -> &str {
    sql.split("FROM system.").nth(1).and_then(|rest| rest.split_whitespace().next()).unwrap_or_default()
}

/// One query of a combined query: the name of its answer, the tag of its rows (a log
/// query's is `log.` + its name, apart from the facts') and its SQL.
#[derive(Debug, Clone)]
pub struct Part<'a> {
    pub name: &'a str,
    pub tag: String,
    pub sql: &'a str,
}

/// The parts of a combined query: the facts, then the log queries.
pub fn parts<'a>(facts: &[&'a FactQuery], logs: &'a [(&'static str, &'static str, String)]) -> Vec<Part<'a>> {
    let facts = facts.iter().map(|f| Part { name: f.name, tag: f.name.to_string(), sql: f.sql });
    facts.chain(logs.iter().map(|(name, _, sql)| Part { name, tag: format!("log.{name}"), sql })).collect()
}

/// The session settings read through clusterAllReplicas: without the one a replica shows
/// with a value of the fan-out's own making, another on each replica and in each query
/// (measured on 26.9: `interactive_delay`, the remote query's progress interval). No rule
/// reads it, and it would make every replica's settings a copy of its own.
static FAN_OUT_SETTINGS: FactQuery = FactQuery {
    name: "settings",
    purpose: SETTINGS_PURPOSE,
    sql: "SELECT name, value, default, changed FROM system.settings WHERE name != 'interactive_delay'",
    since: None,
};

/// The fact queries as sent through clusterAllReplicas.
pub fn for_fan_out(facts: Vec<&'static FactQuery>) -> Vec<&'static FactQuery> {
    facts.into_iter().map(|f| if f.name == FAN_OUT_SETTINGS.name { &FAN_OUT_SETTINGS } else { f }).collect()
}

/// Every part from every replica of `cluster` in one round trip: each replica runs the
/// union of the queries, each row serialized as a JSON line, tagged with its part;
/// `_shard_num` tells the replicas apart. Read as [`COMBINED_FORMAT`].
pub fn fan_out_combined(cluster: &str, parts: &[Part]) -> String {
    format!(
        "SELECT _shard_num AS {NODE_COLUMN}, fact, row FROM clusterAllReplicas('{}', view({}))",
        quoted(cluster),
        union(parts)
    )
}

/// Every part in one round trip: the union of the queries, each row serialized as a JSON
/// line and tagged with its part. Read as [`COMBINED_FORMAT`].
pub fn combined(parts: &[Part]) -> String {
    format!("SELECT fact, row FROM ({})", union(parts))
}

fn union(parts: &[Part]) -> String {
    let selects: Vec<String> = parts
        .iter()
        .map(|p| format!("SELECT '{}' AS fact, formatRowNoNewline('JSONEachRow', *) AS row FROM ({})", p.tag, p.sql))
        .collect();
    selects.join(" UNION ALL ")
}

/// The format combined queries are read in: one line per row, its columns tab-separated and
/// unescaped. The row's JSON holds no tab or line break (JSON escapes them), so it is the
/// line's last column as the server wrote it, parsed once, not a JSON string inside JSON.
pub const COMBINED_FORMAT: &str = "TabSeparatedRaw";

/// The purpose of the combined fact query (`--dry-run`, log_comment).
pub const COMBINED_PURPOSE: &str = "every fact and log query in one query (the queries above, each row as a JSON line)";

/// The replicas of `cluster` in the order clusterAllReplicas numbers them.
pub fn members_sql(cluster: &str) -> String {
    format!(
        "SELECT host_name, port, is_local FROM system.clusters WHERE cluster = '{}' ORDER BY shard_num, replica_num",
        quoted(cluster)
    )
}

/// The `--dsn` node's connection-failure counters that its fan-out raises: clusterAllReplicas
/// counts its own connections to an unreachable replica in them (a stopped replica raised
/// DistributedConnectionFailAtAll on a 26.9 seed), and a host name that does not resolve in
/// DNSError.
pub const FAN_OUT_FAILURE_EVENTS: [&str; 2] = ["DistributedConnectionFailAtAll", "DNSError"];

/// The query of [`FAN_OUT_FAILURE_EVENTS`], read alone before the fan-out so that the facts
/// keep the server's own failures only: (purpose, SQL).
pub fn fan_out_failures() -> (&'static str, String) {
    let events: Vec<String> = FAN_OUT_FAILURE_EVENTS.iter().map(|e| format!("'{e}'")).collect();
    (
        "the --dsn node's connection failures before the fan-out (its own connections to a down replica count in them)",
        format!("SELECT event, value FROM system.events WHERE event IN ({})", events.join(", ")),
    )
}

/// Each replica's version, through the fan-out (which replicas answer, too).
pub const VERSION_PROBE: &str = "SELECT version() AS version FROM system.one";

/// `text` as the inside of a ClickHouse string literal.
pub fn quoted(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\'', "\\'")
}

/// The column that says which replica a fanned-out row came from: `_shard_num` of
/// clusterAllReplicas, where every replica is a shard, numbered in system.clusters order.
pub const NODE_COLUMN: &str = "chaudit_node";

/// One fact query for every replica of `cluster` at once (ClickHouse's own fan-out):
/// `FROM system.x` read through clusterAllReplicas, the node number as the first column,
/// and grouping and `LIMIT n` per node.
pub fn fan_out(sql: &str, cluster: &str) -> String {
    let quoted = quoted(cluster);
    let mut out = sql.replacen("SELECT ", &format!("SELECT _shard_num AS {NODE_COLUMN}, "), 1);
    if let Some(at) = out.find("FROM system.") {
        let table_end = out[at + 5..].find(|c: char| c.is_whitespace()).map_or(out.len(), |i| at + 5 + i);
        let table = out[at + 5..table_end].to_string();
        out.replace_range(at..table_end, &format!("FROM clusterAllReplicas('{quoted}', {table})"));
    }
    out = out.replacen("GROUP BY ", &format!("GROUP BY {NODE_COLUMN}, "), 1);
    if let Some(at) = out.rfind(" LIMIT ") {
        let rest = &out[at + 7..];
        if rest.chars().all(|c| c.is_ascii_digit()) {
            out.push_str(&format!(" BY {NODE_COLUMN}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fan_out_reads_every_replica_per_node() {
        assert_eq!(
            fan_out("SELECT name, value FROM system.settings", "c3"),
            "SELECT _shard_num AS chaudit_node, name, value FROM clusterAllReplicas('c3', system.settings)"
        );
        let parts = fan_out(FACTS.iter().find(|f| f.name == "parts").unwrap().sql, "it's");
        assert!(
            parts.contains(
                "FROM clusterAllReplicas('it\\'s', system.parts) WHERE active GROUP BY chaudit_node, database"
            )
        );
        let (_, _, shapes) = log_queries(3600).remove(0);
        let shapes = fan_out(&shapes, "c");
        assert!(shapes.contains("GROUP BY chaudit_node, normalized_query_hash"), "{shapes}");
        assert!(shapes.ends_with("LIMIT 50 BY chaudit_node"), "{shapes}");
        let (_, _, totals) = log_queries(3600).into_iter().find(|(name, _, _)| *name == "lock_totals").unwrap();
        assert!(fan_out(&totals, "c").ends_with("GROUP BY chaudit_node, host"), "{totals}");
    }

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
