//! The comparison of a cluster's replicas (src/cluster/ builds it).

use std::collections::BTreeMap;

use crate::facts::cluster;

fact_keys! {
    Cluster "cluster", built;
    NAME: String = "name", "the cluster (empty for a list of nodes)";
    PATH: String = "path", "fan-out or direct";
    NODES: Vec<cluster::NodeSummary> = "nodes", "";
    UNREACHABLE: Vec<cluster::Unreachable> = "unreachable", "replicas that could not be read";
    PARTIAL: BTreeMap<String, String> = "partial",
        "comparisons that leave out replicas (not read, or a fact denied), and which";
    VERSIONS: Vec<cluster::VersionHosts> = "versions", "version -> replicas running it";
    SERVER_SETTINGS: Vec<cluster::Divergence> = "server_settings",
        "server settings whose value differs between replicas";
    MERGE_TREE_SETTINGS: Vec<cluster::Divergence> = "merge_tree_settings",
        "MergeTree settings of <merge_tree> whose value differs between replicas";
    SESSION_SETTINGS: Vec<cluster::Divergence> = "session_settings",
        "session settings that differ (direct connections only)";
    PROFILE_SETTINGS: Vec<cluster::Divergence> = "profile_settings", "profile settings that differ";
    STORAGE: Vec<cluster::StorageGap> = "storage", "disks and policies on some replicas only";
    TABLES: Vec<cluster::TableDivergence> = "tables",
        "user tables on some replicas only, or defined differently (engine, structure, a table setting)";
    SHARED_REPLICA_NAMES: Vec<cluster::SharedReplicaName> = "shared_replica_names",
        "replica names (the `replica` macro) that several replicas of one shard use";
    REPLICA_DATA: Vec<cluster::DataDivergence> = "replica_data",
        "replicated tables whose replicas of one shard hold different rows or parts, each having run the whole log";
    QUERY_LOG: cluster::QueryLogPresence = "query_log",
        "where system.query_log exists and where not (a replica whose tables could not be listed is in neither)";
}
