//! Which default changes this server's workload meets, from one aggregate over query_log
//! (`log.usage`, see collect::plan::upgrade_queries). A claim is made only with a count
//! behind it: "applies to queries over the native protocol: 1,234 in the window".

use std::collections::BTreeMap;

use serde::Serialize;

use crate::facts::rows::WorkloadUsage;

/// The workload over the audit window, as counts.
#[derive(Debug, Clone, Default)]
pub struct Usage {
    pub queries: u64,
    pub native_protocol: u64,
    pub http: u64,
    pub inserts: u64,
    pub joins: u64,
    /// Settings changed in the queries' context (profile, session or query), by query count.
    pub changed_settings: BTreeMap<String, u64>,
    pub formats: BTreeMap<String, u64>,
    pub table_functions: BTreeMap<String, u64>,
    pub storages: BTreeMap<String, u64>,
}

/// Why a default change matters to this workload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UsedBy {
    /// e.g. "queries over the native protocol", "MergeTree tables"
    pub what: String,
    pub count: u64,
    /// "in the window" (query_log) or "on this server" (system.tables).
    pub scope: &'static str,
}

impl Usage {
    /// From the `log.usage` row.
    pub fn from_row(row: WorkloadUsage) -> Usage {
        Usage {
            queries: row.queries.0,
            native_protocol: row.native_protocol.0,
            http: row.http.0,
            inserts: row.inserts.0,
            joins: row.joins.0,
            changed_settings: row.changed_settings.0,
            formats: row.formats.0,
            table_functions: row.table_functions.0,
            storages: row.storages.0,
        }
    }

    /// Queries that ran with `name` changed from its default (they keep their value).
    pub fn changed(&self, name: &str) -> u64 {
        self.changed_settings.get(name).copied().unwrap_or(0)
    }

    /// The kind of queries a session setting applies to, when its name says so and the
    /// workload has them; `None` when nothing in the workload shows it is used.
    pub fn used_by(&self, name: &str) -> Option<UsedBy> {
        let found = |what: String, count: u64| (count > 0).then_some(UsedBy { what, count, scope: "in the window" });
        if name.starts_with("network_compression") || name.starts_with("network_zstd") {
            return found(
                "queries over the native protocol (clients and server-to-server)".into(),
                self.native_protocol,
            );
        }
        for prefix in ["iceberg", "delta_lake", "s3", "azure", "hdfs", "parquet", "kafka"] {
            if name.starts_with(prefix) {
                let token = prefix.replace('_', "");
                let table_function = matching(&self.table_functions, &token);
                let storage = matching(&self.storages, &token);
                return table_function.or(storage).and_then(|(used, n)| found(format!("queries reading {used}"), n));
            }
        }
        if name.contains("async_insert") || name.starts_with("insert_") || name.contains("_insert_") {
            return found("INSERT queries".into(), self.inserts);
        }
        if let Some(rest) = name.strip_prefix("input_format_").or_else(|| name.strip_prefix("output_format_")) {
            let token = rest.split('_').next().unwrap_or_default();
            return matching(&self.formats, token)
                .and_then(|(format, n)| found(format!("queries in format {format}"), n));
        }
        let join = name.contains("join") && !name.contains("array_join") && !name.starts_with("correlated_subqueries");
        if join {
            return found("queries with a JOIN".into(), self.joins);
        }
        if name.starts_with("http_") || name == "enable_http_compression" {
            return found("queries over HTTP".into(), self.http);
        }
        if name.contains("distributed") || name.contains("parallel_replicas") || name == "prefer_localhost_replica" {
            return self.storages.get("Distributed").and_then(|n| found("queries over Distributed tables".into(), *n));
        }
        // Planner settings (query_plan_*, optimize_*) apply to query shapes query_log does
        // not describe: no claim.
        None
    }
}

/// The most used entry whose name, lower-cased without underscores, starts with `token`.
fn matching(used: &BTreeMap<String, u64>, token: &str) -> Option<(String, u64)> {
    if token.is_empty() {
        return None;
    }
    used.iter()
        .filter(|(name, _)| name.to_ascii_lowercase().replace('_', "").starts_with(token))
        .max_by_key(|(_, n)| **n)
        .map(|(name, n)| (name.clone(), *n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn usage() -> Usage {
        Usage::from_row(
            serde_json::from_value(json!({
                "queries": "10", "native_protocol": 4, "http": 6, "selects": 7, "inserts": 3, "joins": 0,
                "changed_settings": [["max_threads"], ["5"]],
                "formats": [["Parquet", "JSONEachRow"], [2, 1]],
                "table_functions": [["s3"], [1]], "storages": [["MergeTree"], [9]],
            }))
            .unwrap(),
        )
    }

    #[test]
    fn claims_need_counts() {
        let u = usage();
        assert_eq!(u.used_by("network_compression_method").unwrap().count, 4);
        assert_eq!(u.used_by("async_insert").unwrap().what, "INSERT queries");
        assert_eq!(u.used_by("output_format_parquet_compression_method").unwrap().count, 2);
        assert_eq!(
            u.used_by("input_format_json_read_objects_as_strings").unwrap().what,
            "queries in format JSONEachRow"
        );
        assert_eq!(u.used_by("output_format_arrow_record_batch_size"), None);
        assert_eq!(u.used_by("s3_upload_checksum_algorithm").unwrap().what, "queries reading s3");
        assert_eq!(u.used_by("enable_hash_join_row_store"), None, "no JOIN ran");
        assert_eq!(u.used_by("query_plan_fuse_filter_into_array_join"), None, "ARRAY JOIN is no JOIN");
        assert_eq!(u.used_by("query_plan_aggregation_bucket_top_k"), None, "no claim for planner settings");
        assert_eq!(u.used_by("iceberg_insert_max_bytes_in_data_file"), None, "Iceberg, not every INSERT");
        assert_eq!(u.used_by("ai_function_max_retries"), None);
        assert_eq!(u.used_by("http_max_fields").unwrap().count, 6);
        assert_eq!(u.changed("max_threads"), 5);
    }
}
