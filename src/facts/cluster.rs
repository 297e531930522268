//! The `cluster` document: what differs between the replicas (versions, server settings,
//! profile and session settings, disks and policies, tables, query_log) and which replicas
//! could not be read, as the rules read it (built by cluster/document.rs). Its types generate
//! the catalog's `cluster.*` entries (facts/typed/).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The `cluster` document.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct ClusterDocument {
    pub name: String,
    pub path: String,
    pub nodes: Vec<NodeSummary>,
    pub unreachable: Vec<Unreachable>,
    pub partial: BTreeMap<String, String>,
    pub versions: Vec<VersionHosts>,
    pub server_settings: Vec<Divergence>,
    pub merge_tree_settings: Vec<Divergence>,
    pub session_settings: Vec<Divergence>,
    pub profile_settings: Vec<Divergence>,
    pub storage: Vec<StorageGap>,
    pub tables: Vec<TableDivergence>,
    pub replica_data: Vec<DataDivergence>,
    pub shared_replica_names: Vec<SharedReplicaName>,
    pub query_log: QueryLogPresence,
}

impl ClusterDocument {
    /// The document as the rules read it, each field a typed fact.
    pub fn into_document(self) -> crate::facts::document::Document {
        use crate::facts::keys::cluster as keys;
        let mut document = crate::facts::document::Document::default();
        keys::NAME.put(&mut document, self.name);
        keys::PATH.put(&mut document, self.path);
        keys::NODES.put(&mut document, self.nodes);
        keys::UNREACHABLE.put(&mut document, self.unreachable);
        keys::PARTIAL.put(&mut document, self.partial);
        keys::VERSIONS.put(&mut document, self.versions);
        keys::SERVER_SETTINGS.put(&mut document, self.server_settings);
        keys::MERGE_TREE_SETTINGS.put(&mut document, self.merge_tree_settings);
        keys::SESSION_SETTINGS.put(&mut document, self.session_settings);
        keys::PROFILE_SETTINGS.put(&mut document, self.profile_settings);
        keys::STORAGE.put(&mut document, self.storage);
        keys::TABLES.put(&mut document, self.tables);
        keys::REPLICA_DATA.put(&mut document, self.replica_data);
        keys::SHARED_REPLICA_NAMES.put(&mut document, self.shared_replica_names);
        keys::QUERY_LOG.put(&mut document, self.query_log);
        document
    }
}

crate::fact_object!(NodeSummary { host, reachable, version, error });
crate::fact_object!(Unreachable { host, error });
crate::fact_object!(VersionHosts { version, hosts });
crate::fact_object!(Divergence { name, shown, values });
crate::fact_object!(HostValue { host, value });
crate::fact_object!(StorageGap { kind, name, on, missing_on });
crate::fact_object!(DataDivergence { table, path, rows_differ, fewest_rows_on, shown, values });
crate::fact_object!(SharedReplicaName { replica, shard, hosts });
crate::fact_object!(QueryLogPresence { present_on, missing_on });
crate::fact_object!(TableDivergence { table, kind, setting, shown, on, missing_on, values });

/// A replica, and whether it was read.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct NodeSummary {
    pub host: String,
    pub reachable: bool,
    pub version: Option<String>,
    pub error: Option<String>,
}

/// A replica that could not be read.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct Unreachable {
    pub host: String,
    pub error: String,
}

/// A version and the replicas running it.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct VersionHosts {
    pub version: String,
    pub hosts: Vec<String>,
}

/// A setting whose value is not the same on every replica.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct Divergence {
    pub name: String,
    /// the values and their hosts, as a message shows them
    pub shown: String,
    pub values: Vec<HostValue>,
}

/// A replica's value of a setting ("(not set)" where it has none).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct HostValue {
    pub host: String,
    pub value: String,
}

/// A disk or storage policy that exists on some replicas only.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct StorageGap {
    /// disk or storage policy
    pub kind: String,
    pub name: String,
    pub on: Vec<String>,
    pub missing_on: Vec<String>,
}

/// A user table the replicas disagree on: present on some only, or defined differently.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct TableDivergence {
    /// database.table
    pub table: String,
    /// missing, engine (without settings, Keeper path, replica name), structure or setting
    pub kind: String,
    /// the table-level setting that differs (kind setting), else empty
    pub setting: String,
    /// what differs and where, as a message shows it
    pub shown: String,
    /// the replicas that have the table
    pub on: Vec<String>,
    /// the replicas that lack it (kind missing)
    pub missing_on: Vec<String>,
    /// each replica's value (engine and setting; "(not set)": the table does not set it)
    pub values: Vec<HostValue>,
}

/// A replicated table whose replicas of one shard hold different rows or parts although each
/// has run the whole replication log.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct DataDivergence {
    /// database.table
    pub table: String,
    /// the table's path in Keeper, shared by the replicas compared
    pub path: String,
    /// rows differ (else only the number of parts does)
    pub rows_differ: bool,
    /// the replicas holding the fewest rows
    pub fewest_rows_on: Vec<String>,
    /// each replica's rows and parts, as a message shows them
    pub shown: String,
    /// each replica's "N rows in M parts"
    pub values: Vec<HostValue>,
}

/// A replica name (the `replica` macro) that several replicas of one shard (the `shard` macro)
/// use.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct SharedReplicaName {
    pub replica: String,
    /// the `shard` macro they share (empty when they have none)
    pub shard: String,
    pub hosts: Vec<String>,
}

/// Where system.query_log exists and where it does not (replicas whose tables could not be
/// listed are in neither list).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct QueryLogPresence {
    pub present_on: Vec<String>,
    pub missing_on: Vec<String>,
}
