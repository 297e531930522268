//! Rows about storage: tables and system log tables, parts and partitions, projections,
//! disks and storage policies, detached parts, mutations, databases.

use super::*;

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

/// A row of system.databases.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct Database {
    pub name: String,
    pub engine: String,
}
