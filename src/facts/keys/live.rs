//! The facts collected from a server (src/collect/plan/ has their queries).

use std::collections::BTreeMap;

use crate::facts::typed::{Number, Settings};
use crate::facts::{derived, rows};

fact_keys! {
    Live "live", typed;
    ENDPOINT: String = "endpoint", "the server as user@url (no password)";
    VERSION: String = "version", "version()";
    READONLY: u64 = "readonly", "the auditing user's readonly level";
    QUERY_ID_PREFIX: String = "query_id_prefix", "the audit's own query ids start with it";
    UNAVAILABLE: BTreeMap<String, String> = "unavailable", "facts that could not be read, and why";
    ABSENT: BTreeMap<String, String> = "absent",
        "facts the server's version does not have, and why: their rules are not applicable";
    SETTINGS: Settings<rows::SessionSetting<'static>> = "settings", "system.settings of the auditing user's session";
    SERVER_SETTINGS: Settings<rows::ServerSetting<'static>> = "server_settings", "system.server_settings";
    MERGE_TREE_SETTINGS: Settings<rows::MergeTreeSetting<'static>> = "merge_tree_settings",
        "system.merge_tree_settings changed in <merge_tree>";
    PROFILE_SETTINGS: Vec<rows::ProfileSetting> = "profile_settings", "system.settings_profile_elements with a setting";
    USER_PROFILES: Vec<rows::UserProfile> = "user_profiles",
        "system.settings_profile_elements of each user: the profile it is given, or a setting set on it";
    PROFILE_ELEMENTS: Vec<rows::ProfileElement> = "profile_elements",
        "system.settings_profile_elements: every element of every profile, user and role, with its bounds and inheritance";
    PROFILE_TARGETS: Vec<rows::ProfileTarget> = "profile_targets", "system.settings_profiles given TO users or roles";
    USER_SETTINGS: Vec<derived::UserSettings> = "user_settings",
        "derived: the settings each user runs with, resolved from its profiles, roles and own elements as the server does (src/collect/user_settings.rs)";
    SETTING_SCOPES: Vec<derived::SettingScope> = "setting_scopes",
        "derived: where each changed setting comes from (profile, user, workload or the auditor's session; src/collect/scopes.rs)";
    USERS: Vec<rows::User> = "users", "system.users: every user, from the config files or SQL";
    GRANTS: Vec<rows::Grant> = "grants", "system.grants on every database (*.*), partial revokes left out";
    PRIVILEGES: Vec<rows::Privilege> = "privileges", "system.privileges: the privileges the release has";
    ROLE_GRANTS: Vec<rows::RoleGrant> = "role_grants", "system.role_grants";
    QUOTAS: Vec<rows::Quota> = "quotas", "system.quotas and whom each applies to";
    ROW_POLICIES: Vec<rows::RowPolicy> = "row_policies", "system.row_policies and whom each applies to";
    LOG_TABLES: Vec<rows::LogTable<'static>> = "log_tables", "the system *_log tables that exist";
    DISKS: Vec<rows::Disk> = "disks", "system.disks";
    STORAGE_POLICIES: Vec<rows::StoragePolicyVolume> = "storage_policies",
        "system.storage_policies, one row per volume";
    ERRORS: BTreeMap<String, Number> = "errors", "system.errors counters above 0, by error name";
    WARNINGS: Vec<rows::Warning> = "warnings", "system.warnings";
    CLUSTERS: Vec<rows::ClusterReplica> = "clusters", "system.clusters";
    MACROS: Vec<rows::Macro> = "macros", "system.macros: the server's macros and their values";
    TABLES: Vec<rows::Table> = "tables", "user tables (system.tables outside the system databases)";
    PARTS: Vec<rows::TableParts> = "parts", "active parts per table (system.parts)";
    PROJECTIONS: Vec<rows::Projection> = "projections", "projections of user tables (system.projections, 25.1+)";
    PARTITIONS: Vec<rows::Partition> = "partitions", "the 100 partitions with the most active parts (system.parts)";
    DETACHED_PARTS: Vec<rows::DetachedParts> = "detached_parts", "system.detached_parts per table and reason";
    MUTATIONS: Vec<rows::Mutation> = "mutations", "system.mutations not done, oldest first (1,000 at most)";
    REPLICAS: Vec<rows::Replica> = "replicas", "system.replicas";
    REPLICATION_QUEUE: Vec<rows::ReplicationQueueEntries> = "replication_queue",
        "system.replication_queue per table and entry type";
    DATABASES: Vec<rows::Database> = "databases", "system.databases";
    DISTRIBUTED_DDL_QUEUE: Vec<rows::DistributedDdlEntry> = "distributed_ddl_queue",
        "ON CLUSTER statements not finished on some host (system.distributed_ddl_queue; read from servers with a Keeper session)";
    KEEPER_CONNECTIONS: Vec<rows::KeeperConnection> = "keeper_connections",
        "system.zookeeper_connection: the Keeper connections in use, one per <zookeeper> and auxiliary Keeper";
    DISTRIBUTION_QUEUE: Vec<rows::DistributionQueue> = "distribution_queue",
        "system.distribution_queue with files waiting";
    METRICS: BTreeMap<String, Number> = "metrics",
        "system.metrics by name: Attached*, Background*Pool*, PartsActive, Query (chaudit's own queries left out), *Connection, ZooKeeperSession, MemoryTracking";
    EVENTS: BTreeMap<String, Number> = "events",
        "system.events since start by name: fault counters (DelayedInserts, RejectedInserts, ReplicatedDataLoss, ...), ZooKeeperInit";
    RELEASE: Vec<rows::Release> = "release", "one row: the running release's age and the server's uptime";
}
