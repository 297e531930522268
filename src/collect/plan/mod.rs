//! The facts collected from each node: one query per system table, whatever the number of
//! rules (round trips do not grow with the rule pack). `SELECT *` where the columns differ
//! between versions, so a 24.8 and a 26.9 server answer the same plan.

mod combined;
mod describe;
mod fan_out;
mod log;

use crate::facts::keys;
use combined::union;
pub use combined::{COMBINED_FORMAT, COMBINED_PURPOSE, Part, combined, parts};
pub use describe::{describe, describe_fan_out};
pub use fan_out::{
    FAN_OUT_CONNECTIONS, FAN_OUT_FAILURE_EVENTS, NODE_COLUMN, VERSION_PROBE, fan_out, fan_out_combined,
    fan_out_combined_of, fan_out_failures, fan_out_in_flight, for_fan_out, members_sql,
};
pub use log::{SETTINGS_CHANGES, log_queries, log_table, usage_queries};

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
        name: keys::live::SETTINGS.name(),
        purpose: SETTINGS_PURPOSE,
        sql: "SELECT name, value, default, changed FROM system.settings",
        since: None,
    },
    FactQuery {
        name: keys::live::SERVER_SETTINGS.name(),
        purpose: "server settings in effect (value, default, changed)",
        sql: "SELECT name, value, default, changed FROM system.server_settings",
        since: None,
    },
    FactQuery {
        name: keys::live::MERGE_TREE_SETTINGS.name(),
        purpose: "MergeTree settings changed in <merge_tree> of the server config",
        sql: "SELECT name, value, changed FROM system.merge_tree_settings WHERE changed",
        since: None,
    },
    FactQuery {
        name: keys::live::PROFILE_SETTINGS.name(),
        purpose: "settings of each settings profile (compared across replicas)",
        sql: "SELECT profile_name, setting_name, value FROM system.settings_profile_elements \
              WHERE profile_name IS NOT NULL AND setting_name IS NOT NULL",
        since: None,
    },
    FactQuery {
        name: keys::live::USER_PROFILES.name(),
        purpose: "the profile and settings each user is given (the auditor's session shows only its own)",
        sql: "SELECT user_name, inherit_profile, setting_name, value FROM system.settings_profile_elements \
              WHERE user_name IS NOT NULL",
        since: None,
    },
    // rows: every element of every profile, user and role, with its bounds (user_settings.rs
    // resolves them per user)
    FactQuery {
        name: keys::live::PROFILE_ELEMENTS.name(),
        purpose: "settings profiles' elements with their constraints and inheritance (readonly = 2 without bounds)",
        sql: "SELECT profile_name, user_name, role_name, index, setting_name, value, min, max, \
              toString(writability) AS writability, inherit_profile FROM system.settings_profile_elements",
        since: None,
    },
    FactQuery {
        name: keys::live::PROFILE_TARGETS.name(),
        purpose: "settings profiles given TO users or roles",
        sql: "SELECT name, apply_to_all, apply_to_list, apply_to_except FROM system.settings_profiles \
              WHERE apply_to_all OR notEmpty(apply_to_list)",
        since: None,
    },
    FactQuery {
        name: keys::live::LOG_TABLES.name(),
        purpose: "which system log tables exist (query_log, metric_log, ...) and their engine (its TTL)",
        sql: "SELECT name, engine_full FROM system.tables WHERE database = 'system' AND endsWith(name, '_log')",
        since: None,
    },
    FactQuery {
        name: keys::live::DISKS.name(),
        purpose: "disks (type, paths, cache path)",
        sql: "SELECT * FROM system.disks",
        since: None,
    },
    FactQuery {
        name: keys::live::STORAGE_POLICIES.name(),
        purpose: "storage policies and their volumes",
        sql: "SELECT * FROM system.storage_policies",
        since: None,
    },
    FactQuery {
        name: keys::live::ERRORS.name(),
        purpose: "error counters since start (e.g. TOO_MANY_SIMULTANEOUS_QUERIES)",
        sql: "SELECT name, code, value FROM system.errors WHERE value > 0",
        since: None,
    },
    FactQuery {
        name: keys::live::WARNINGS.name(),
        purpose: "the server's own start-up warnings",
        sql: "SELECT message FROM system.warnings",
        since: None,
    },
    FactQuery {
        name: keys::live::CLUSTERS.name(),
        purpose: "clusters and their replicas",
        sql: "SELECT cluster, shard_num, replica_num, host_name, port FROM system.clusters",
        since: None,
    },
    FactQuery {
        name: keys::live::MACROS.name(),
        purpose: "the server's macros (its replica and shard names, compared across replicas)",
        sql: "SELECT macro, substitution FROM system.macros",
        since: None,
    },
    FactQuery {
        name: keys::live::TABLES.name(),
        purpose: "user tables (engine, its clause with the table's settings, storage policy, a hash of the \
                  columns and indexes; compared across replicas)",
        sql: "SELECT database, name, engine, engine_full, storage_policy, \
              toString(cityHash64(if(engine_full = '', create_table_query, \
              substring(create_table_query, 1, position(create_table_query, engine_full) - 1)))) AS structure_hash \
              FROM system.tables WHERE database NOT IN ('system', 'information_schema', 'INFORMATION_SCHEMA')",
        since: None,
    },
    FactQuery {
        name: keys::live::PARTS.name(),
        purpose: "active parts per table (count, rows, median and largest part, largest on disk)",
        sql: "SELECT database, table, count() AS parts, sum(rows) AS total_rows, median(rows) AS median_part_rows, \
              max(rows) AS max_part_rows, max(bytes_on_disk) AS max_part_bytes, \
              arraySlice(groupArray(rows), 1, 1000) AS part_rows FROM system.parts WHERE active GROUP BY database, table",
        since: None,
    },
    // rows: {database, table, partition_id, parts, rows}, the 100 partitions with the most active parts
    FactQuery {
        name: keys::live::PARTITIONS.name(),
        purpose: "the partitions with the most active parts (too many parts)",
        sql: "SELECT database, table, partition_id, count() AS parts, sum(rows) AS rows FROM system.parts WHERE active \
              GROUP BY database, table, partition_id ORDER BY parts DESC LIMIT 100",
        since: None,
    },
    // rows: {database, table, reason ('' = detached by a user), parts}
    FactQuery {
        name: keys::live::DETACHED_PARTS.name(),
        purpose: "detached parts per table and reason",
        sql: "SELECT database, table, ifNull(reason, '') AS reason, count() AS parts FROM system.detached_parts \
              GROUP BY database, table, reason",
        since: None,
    },
    // rows: {database, table, mutation_id, command, created, age_seconds, parts_to_do, latest_fail_reason}
    FactQuery {
        name: keys::live::MUTATIONS.name(),
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
        name: keys::live::REPLICAS.name(),
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
        name: keys::live::REPLICATION_QUEUE.name(),
        purpose: "replication queue entries per table and type, and those failing",
        sql: "SELECT database, table, type, count() AS entries, countIf(last_exception != '') AS failing, \
              max(num_tries) AS max_tries, anyIf(last_exception, last_exception != '') AS exception \
              FROM system.replication_queue GROUP BY database, table, type",
        since: None,
    },
    // rows: {name, engine}
    FactQuery {
        name: keys::live::DATABASES.name(),
        purpose: "databases and their engines (Ordinary is deprecated)",
        sql: "SELECT name, engine FROM system.databases",
        since: None,
    },
    // rows: {database, table, data_files, data_compressed_bytes, error_count, last_exception, is_blocked}
    FactQuery {
        name: keys::live::DISTRIBUTION_QUEUE.name(),
        purpose: "Distributed tables' pending sends (backlog, errors)",
        sql: "SELECT database, table, data_files, data_compressed_bytes, error_count, last_exception, is_blocked \
              FROM system.distribution_queue WHERE data_files > 0",
        since: None,
    },
    // keyed by metric name: value (AttachedTable, Query, MemoryTracking, BackgroundFetchesPoolTask, ...)
    FactQuery {
        name: keys::live::METRICS.name(),
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
        name: keys::live::EVENTS.name(),
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
    // (YY.M), by the server's clock; {uptime_seconds}: since the server started
    FactQuery {
        name: keys::live::RELEASE.name(),
        purpose: "the age of the running release (its version names its month) and the server's uptime",
        sql: "SELECT dateDiff('day', makeDate(2000 + toUInt16OrZero(splitByChar('.', version())[1]), \
              toUInt8OrZero(splitByChar('.', version())[2]), 1), today()) AS age_days, \
              uptime() AS uptime_seconds FROM system.one",
        since: None,
    },
    // rows: {name, storage, auth_type (as text: one method, or a list of them), host_ip[],
    // host_names[], host_names_regexp[], host_names_like[]}
    FactQuery {
        name: keys::live::USERS.name(),
        purpose: "users, where each is defined, how it authenticates and where it may connect from",
        sql: "SELECT name, storage, toString(auth_type) AS auth_type, host_ip, host_names, host_names_regexp, \
              host_names_like FROM system.users",
        since: None,
    },
    // rows: {user_name, role_name, access_type, grant_option}: grants on every database (*.*)
    FactQuery {
        name: keys::live::GRANTS.name(),
        purpose: "privileges granted on every database (ALL, ACCESS MANAGEMENT, ... on *.*) and with GRANT OPTION",
        sql: "SELECT user_name, role_name, toString(access_type) AS access_type, grant_option FROM system.grants \
              WHERE database IS NULL AND NOT is_partial_revoke",
        since: None,
    },
    // rows: {privilege}
    FactQuery {
        name: keys::live::PRIVILEGES.name(),
        purpose: "the privileges the release has (a grant only one release knows is not drift)",
        sql: "SELECT toString(privilege) AS privilege FROM system.privileges",
        since: None,
    },
    // rows: {user_name, role_name, granted_role_name, with_admin_option}
    FactQuery {
        name: keys::live::ROLE_GRANTS.name(),
        purpose: "roles granted to users and roles",
        sql: "SELECT user_name, role_name, granted_role_name, with_admin_option FROM system.role_grants",
        since: None,
    },
    // rows: {name, storage, apply_to_all, apply_to_list[], apply_to_except[], limited}: limited
    // when an interval bounds something (0 or NULL: no bound; the authentication-failure
    // bound is not a resource limit)
    FactQuery {
        name: keys::live::QUOTAS.name(),
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
        name: keys::live::ROW_POLICIES.name(),
        purpose: "row policies and whom they apply to (users without a policy read every row)",
        sql: "SELECT short_name, database, table, is_restrictive, apply_to_all, apply_to_list, apply_to_except \
              FROM system.row_policies",
        since: None,
    },
    FactQuery {
        name: keys::live::PROJECTIONS.name(),
        purpose: "projections of user tables (projection indexes read _part_offset)",
        sql: "SELECT database, table, name, type, query FROM system.projections \
              WHERE database NOT IN ('system', 'information_schema', 'INFORMATION_SCHEMA')",
        since: Some((25, 1)),
    },
];

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

/// `text` as the inside of a ClickHouse string literal.
pub fn quoted(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\'', "\\'")
}
