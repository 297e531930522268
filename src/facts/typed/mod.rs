//! Facts as Rust types: the rows of system tables that chaudit's own code reads, and the facts
//! it derives from them. Each type derives its serde form and its JSON schema; the catalog's
//! entries of a typed fact are generated from that schema (its doc comments are the meanings),
//! and a test holds schema.txt to them (`CHAUDIT_CATALOG=overwrite` rewrites the lines).
//!
//! The schema's JSON types give the catalog's (`string`, `uint`, `bool`, `list`, `map`, ...);
//! an `x-fact` extension names the catalog types JSON has no word for: `row` (a system
//! table's row, whose columns a newer server may add to), `location`, `flag`, `number` and
//! `dict:setting`.

use std::collections::BTreeMap;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::DeserializeOwned;
use serde::de::{Deserializer, Error as _};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::document::Fact;
use super::schema::Entry;
use crate::facts::value::ToCel;
use cel::common::value::Val;

/// The schema of a value the catalog calls by its own type name.
macro_rules! catalog_type {
    ($type:ident, $json:literal, $kind:literal) => {
        impl JsonSchema for $type {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($type).into()
            }

            fn inline_schema() -> bool {
                true
            }

            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                schemars::json_schema!({"type": $json, "x-fact": $kind})
            }
        }
    };
}

// after the macro, which they use
mod entries;
mod values;

pub use entries::entries;
pub use values::{Count, Flag, Location, Number, Settings, SummedMap, flag, uint};

/// A document whose facts are read by name: a JSON object, or a replica's document with its
/// facts held once for the replicas alike.
pub trait Facts {
    fn fact(&self, name: &str) -> Option<&Value>;
}

impl Facts for Value {
    fn fact(&self, name: &str) -> Option<&Value> {
        self.get(name)
    }
}

/// A fact of `document` as `T`; empty when the fact is absent (not read, or not in the
/// server's version). A fact of another shape is an error naming it.
pub fn read<'a, T: Deserialize<'a> + Default>(document: &'a impl Facts, source: &str, fact: &str) -> Result<T, String> {
    match document.fact(fact) {
        None | Some(Value::Null) => Ok(T::default()),
        Some(value) => T::deserialize(value).map_err(|e| format!("{source}.{fact} is not of the catalog's shape: {e}")),
    }
}

/// One entry of a fact that is a map by name (a setting of `live.settings`) as `T`, if
/// present: the other 1,300 rows are not read.
pub fn entry<'a, T: Deserialize<'a>>(
    document: &'a impl Facts,
    source: &str,
    fact: &str,
    name: &str,
) -> Result<Option<T>, String> {
    match document.fact(fact).and_then(|map| map.get(name)) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => T::deserialize(value)
            .map(Some)
            .map_err(|e| format!("{source}.{fact}.{name} is not of the catalog's shape: {e}")),
    }
}

/// A typed fact: its path in the documents, what it is, its type's schema and, for a fact
/// chaudit builds (the config's, the cluster comparison's), how a snapshot's JSON of it is read
/// back into its type.
pub struct TypedFact {
    pub path: &'static str,
    pub meaning: &'static str,
    pub schema: fn() -> Schema,
    pub read: Option<ReadFact>,
}

/// A built fact read from its JSON; an error names where in the fact (`[0].shards[0][0].port`).
pub type ReadFact = fn(Value) -> Result<Box<dyn Fact>, serde_path_to_error::Error<serde_json::Error>>;

/// A typed fact of type `T` (a collected one: its rows stay JSON, a newer server's columns kept).
fn typed<T: JsonSchema>(path: &'static str, meaning: &'static str) -> TypedFact {
    fn schema_of<T: JsonSchema>() -> Schema {
        schemars::generate::SchemaSettings::draft2020_12().into_generator().into_root_schema_for::<T>()
    }
    TypedFact { path, meaning, schema: schema_of::<T>, read: None }
}

/// A fact chaudit builds, of type `T`: a snapshot's JSON of it is read back as `T`.
fn built<T: JsonSchema + DeserializeOwned + Fact>(path: &'static str, meaning: &'static str) -> TypedFact {
    fn read<T: DeserializeOwned + Fact>(
        json: Value,
    ) -> Result<Box<dyn Fact>, serde_path_to_error::Error<serde_json::Error>> {
        serde_path_to_error::deserialize::<_, T>(json).map(|fact| Box::new(fact) as Box<dyn Fact>)
    }
    TypedFact { read: Some(read::<T>), ..typed::<T>(path, meaning) }
}

/// Every typed fact, by source.
pub fn facts() -> Vec<TypedFact> {
    use crate::facts::cluster;
    use crate::facts::config_keeper as keeper;
    use crate::facts::config_sections as sections;
    use crate::facts::config_storage as storage;
    use crate::facts::derived;
    use crate::facts::{config_users, rows};
    vec![
        built::<Location>("config.at", "the root element of the main config"),
        built::<BTreeMap<String, String>>(
            "config.unavailable",
            "config facts that could not be built, and why (the users facts of a users config ClickHouse refuses)",
        ),
        built::<BTreeMap<String, String>>(
            "config.absent",
            "config facts whose input is absent, and why (the users facts without a users config): their rules are not applicable",
        ),
        built::<Settings<String>>(
            "config.server",
            "each leaf element at the root of the server config, by name: its text as merged (first occurrence)",
        ),
        built::<Settings<Location>>("config.server_at", "where each leaf at the root of the server config is written"),
        built::<Settings<String>>("config.merge_tree", "the leaves of <merge_tree> by name"),
        built::<Settings<Location>>("config.merge_tree_at", "where each leaf of <merge_tree> is written"),
        built::<Vec<crate::facts::config::RootElement>>(
            "config.root_elements",
            "every element at the root of the server config, in order",
        ),
        built::<BTreeMap<String, sections::LogSection>>(
            "config.logs",
            "the system log sections (query_log, metric_log, ...) by name",
        ),
        built::<Vec<sections::LogUnknownElement>>(
            "config.log_unknown_elements",
            "elements of a system log section the server does not read (SystemLog.cpp)",
        ),
        built::<bool>(
            "config.interserver_exposed",
            "the interserver port is set and listens on every interface (interserver_listen_host, else listen_host)",
        ),
        built::<Option<sections::OpenSslClient>>(
            "config.openssl_client",
            "<openSSL><client>: how the server checks the certificates of what it connects to (null without one)",
        ),
        built::<Vec<sections::PlaintextCredential>>(
            "config.plaintext_credentials",
            "object-storage keys and message-broker passwords written in a config file rather than taken from the environment (values never shown)",
        ),
        built::<Vec<crate::facts::config::LoaderProblem>>(
            "config.problems",
            "problems ClickHouse starts with (an unset from_env, a missing incl, a merge attribute on a root it ignores)",
        ),
        built::<Vec<sections::NamedAt>>(
            "config.users_file_sections",
            "elements of users.xml / users.d that belong in the server config (ClickHouse ignores them there)",
        ),
        built::<bool>(
            "config.users_in_main",
            "users come from the main config itself (it names neither users_config nor user_directories)",
        ),
        built::<bool>(
            "config.over_image_files",
            "the files sit over the official image's stock config.xml and users.xml, which are not among them (a Kubernetes manifest): what those define, such as the quota `default`, is there",
        ),
        built::<Option<String>>(
            "config.unread_users_file",
            "a users.xml beside the main config that the server does not read (users come from the main config)",
        ),
        built::<Vec<sections::NamedAt>>(
            "config.backups_allowed_disks",
            "<backups><allowed_disk>: the disks BACKUP may write to",
        ),
        built::<Vec<crate::facts::startup::StartProblemFact>>(
            "config.start_problems",
            "what stops the server at start-up, each with the server's own reason (see docs/startup.md)",
        ),
        built::<Option<sections::Logger>>("config.logger", "<logger> (null without one)"),
        built::<Option<keeper::KeeperClient>>(
            "config.zookeeper",
            "<zookeeper> (or <keeper>, its other name): the Keeper or ZooKeeper the server connects to (null without either)",
        ),
        built::<Option<keeper::KeeperServer>>(
            "config.keeper_server",
            "<keeper_server>: the ClickHouse Keeper node this config runs (null without one)",
        ),
        built::<Option<keeper::DistributedDdl>>(
            "config.distributed_ddl",
            "<distributed_ddl>: the queue of ON CLUSTER statements (null without one)",
        ),
        built::<Vec<storage::ConfigDisk>>("config.disks", "<storage_configuration><disks>"),
        built::<Vec<storage::MisspelledDisk>>(
            "config.misspelled_disks",
            "the disks with an element that is a typo of one of their type's (the items of config.disks with `misspelled`)",
        ),
        built::<Vec<storage::CacheDisk>>("config.cache_disks", "the disks of type cache (the items of config.disks)"),
        built::<BTreeMap<String, Vec<String>>>(
            "config.disk_policies",
            "every declared disk (and every disk a policy names) -> the policies listing it, empty when none",
        ),
        built::<BTreeMap<String, String>>(
            "config.declared_disks",
            "every disk of <storage_configuration><disks> -> its type (a lookup, not a scan of config.disks)",
        ),
        built::<Vec<String>>("config.policy_names", "the storage policies' names"),
        built::<Vec<storage::ConfigPolicy>>("config.policies", "<storage_configuration><policies>"),
        built::<Vec<storage::ConfigCluster>>("config.clusters", "<remote_servers>"),
        built::<BTreeMap<String, String>>("config.macros", "<macros>: name -> value"),
        built::<Vec<crate::facts::config::UndefinedMacro>>(
            "config.undefined_replica_macros",
            "macros default_replica_path and default_replica_name use that <macros> does not define (database, table and uuid are the server's own)",
        ),
        built::<Vec<String>>("config.listen_hosts", "the <listen_host> values"),
        built::<bool>("config.exposed", "a listen_host is 0.0.0.0 or :: (every interface)"),
        built::<String>("config.default_profile", "<default_profile> (default: `default`)"),
        built::<Vec<String>>("config.custom_settings_prefixes", "<custom_settings_prefixes> split (default: custom_)"),
        built::<Vec<config_users::ConfigUser>>("config.users", "the users of the users config (users.xml + users.d)"),
        built::<Vec<config_users::ConfigProfile>>("config.profiles", "the settings profiles of the users config"),
        built::<Vec<config_users::WrittenSetting>>(
            "config.profile_settings",
            "every setting written in a profile, one item each",
        ),
        built::<Settings<Vec<config_users::WrittenSetting>>>(
            "config.profile_settings_by_name",
            "config.profile_settings by setting name: the items of one setting, without scanning every profile's",
        ),
        typed::<String>("live.endpoint", "the server as user@url (no password)"),
        typed::<String>("live.version", "version()"),
        typed::<u64>("live.readonly", "the auditing user's readonly level"),
        typed::<String>("live.query_id_prefix", "the audit's own query ids start with it"),
        typed::<BTreeMap<String, String>>("live.unavailable", "facts that could not be read, and why"),
        typed::<BTreeMap<String, String>>(
            "live.absent",
            "facts the server's version does not have, and why: their rules are not applicable",
        ),
        typed::<Settings<rows::SessionSetting<'static>>>(
            "live.settings",
            "system.settings of the auditing user's session",
        ),
        typed::<Settings<rows::ServerSetting<'static>>>("live.server_settings", "system.server_settings"),
        typed::<Settings<rows::MergeTreeSetting<'static>>>(
            "live.merge_tree_settings",
            "system.merge_tree_settings changed in <merge_tree>",
        ),
        typed::<Vec<rows::ProfileSetting>>("live.profile_settings", "system.settings_profile_elements with a setting"),
        typed::<Vec<rows::UserProfile>>(
            "live.user_profiles",
            "system.settings_profile_elements of each user: the profile it is given, or a setting set on it",
        ),
        typed::<Vec<rows::ProfileElement>>(
            "live.profile_elements",
            "system.settings_profile_elements: every element of every profile, user and role, with its bounds and inheritance",
        ),
        typed::<Vec<rows::ProfileTarget>>("live.profile_targets", "system.settings_profiles given TO users or roles"),
        typed::<Vec<derived::UserSettings>>(
            "live.user_settings",
            "derived: the settings each user runs with, resolved from its profiles, roles and own elements as the server does (src/collect/user_settings.rs)",
        ),
        typed::<Vec<derived::SettingScope>>(
            "live.setting_scopes",
            "derived: where each changed setting comes from (profile, user, workload or the auditor's session; src/collect/scopes.rs)",
        ),
        typed::<Vec<rows::User>>("live.users", "system.users: every user, from the config files or SQL"),
        typed::<Vec<rows::Grant>>("live.grants", "system.grants on every database (*.*), partial revokes left out"),
        typed::<Vec<rows::RoleGrant>>("live.role_grants", "system.role_grants"),
        typed::<Vec<rows::Quota>>("live.quotas", "system.quotas and whom each applies to"),
        typed::<Vec<rows::RowPolicy>>("live.row_policies", "system.row_policies and whom each applies to"),
        typed::<Vec<rows::LogTable<'static>>>("live.log_tables", "the system *_log tables that exist"),
        typed::<Vec<rows::Disk>>("live.disks", "system.disks"),
        typed::<Vec<rows::StoragePolicyVolume>>("live.storage_policies", "system.storage_policies, one row per volume"),
        typed::<BTreeMap<String, Number>>("live.errors", "system.errors counters above 0, by error name"),
        typed::<Vec<rows::Warning>>("live.warnings", "system.warnings"),
        typed::<Vec<rows::ClusterReplica>>("live.clusters", "system.clusters"),
        typed::<Vec<rows::Macro>>("live.macros", "system.macros: the server's macros and their values"),
        typed::<Vec<rows::Table>>("live.tables", "user tables (system.tables outside the system databases)"),
        typed::<Vec<rows::TableParts>>("live.parts", "active parts per table (system.parts)"),
        typed::<Vec<rows::Projection>>("live.projections", "projections of user tables (system.projections, 25.1+)"),
        typed::<Vec<rows::Partition>>(
            "live.partitions",
            "the 100 partitions with the most active parts (system.parts)",
        ),
        typed::<Vec<rows::DetachedParts>>("live.detached_parts", "system.detached_parts per table and reason"),
        typed::<Vec<rows::Mutation>>("live.mutations", "system.mutations not done, oldest first (1,000 at most)"),
        typed::<Vec<rows::Replica>>("live.replicas", "system.replicas"),
        typed::<Vec<rows::ReplicationQueueEntries>>(
            "live.replication_queue",
            "system.replication_queue per table and entry type",
        ),
        typed::<Vec<rows::Database>>("live.databases", "system.databases"),
        typed::<Vec<rows::DistributedDdlEntry>>(
            "live.distributed_ddl_queue",
            "ON CLUSTER statements not finished on some host (system.distributed_ddl_queue; read from servers with a Keeper session)",
        ),
        typed::<Vec<rows::KeeperConnection>>(
            "live.keeper_connections",
            "system.zookeeper_connection: the Keeper connections in use, one per <zookeeper> and auxiliary Keeper",
        ),
        typed::<Vec<rows::DistributionQueue>>(
            "live.distribution_queue",
            "system.distribution_queue with files waiting",
        ),
        typed::<BTreeMap<String, Number>>(
            "live.metrics",
            "system.metrics by name: Attached*, Background*Pool*, PartsActive, Query (chaudit's own queries left out), *Connection, ZooKeeperSession, MemoryTracking",
        ),
        typed::<BTreeMap<String, Number>>(
            "live.events",
            "system.events since start by name: fault counters (DelayedInserts, RejectedInserts, ReplicatedDataLoss, ...), ZooKeeperInit",
        ),
        typed::<Vec<rows::Release>>("live.release", "one row: the running release's age"),
        typed::<u64>("log.window_seconds", "the window"),
        typed::<BTreeMap<String, String>>("log.unavailable", "log evidence that could not be read, and why"),
        typed::<BTreeMap<String, String>>(
            "log.absent",
            "log evidence a server that has just started has not written yet (its table not created), and why",
        ),
        typed::<Vec<rows::QueryShape>>(
            "log.shapes",
            "query_log per normalized query shape, top 50 by total time (the audit's own queries left out)",
        ),
        typed::<Vec<rows::WorkloadSetting>>(
            "log.user_settings",
            "query_log: per user, each changed setting its queries ran with",
        ),
        typed::<Vec<rows::ParallelReplicasUse>>(
            "log.parallel_replicas",
            "query_log: per user, the SELECTs run with parallel replicas on and how many read across replicas",
        ),
        typed::<Vec<derived::Plan>>(
            "log.plans",
            "the server's EXPLAIN of up to 10 candidate shapes (src/collect/explain.rs)",
        ),
        typed::<Vec<rows::LockTotals>>(
            "log.lock_totals",
            "query_log: one row per node, the Context lock of all queries in the window and the median query's",
        ),
        typed::<Vec<rows::LockRate>>("log.lock_rate", "metric_log: Context lock rate per interval, per host"),
        typed::<Vec<rows::CacheRate>>(
            "log.cache_rate",
            "metric_log: bytes read from the filesystem cache and fetched from object storage over the window, per host",
        ),
        typed::<Vec<rows::InsertTarget>>(
            "log.inserts",
            "query_log: synchronous INSERTs per target table, top 50 by count",
        ),
        typed::<Vec<rows::QueryError>>("log.query_errors", "query_log: failed queries per error code, top 50"),
        typed::<Vec<rows::PartEvents>>(
            "log.part_events",
            "part_log: new parts, merges, mutations, fetches, moves per table and error code",
        ),
        typed::<Vec<rows::WorkloadUsage>>(
            "log.usage",
            "`chaudit upgrade` only: the workload by protocol, INSERTs, JOINs, formats, table functions, storages",
        ),
        built::<String>("cluster.name", "the cluster (empty for a list of nodes)"),
        built::<String>("cluster.path", "fan-out or direct"),
        built::<Vec<cluster::NodeSummary>>("cluster.nodes", ""),
        built::<Vec<cluster::Unreachable>>("cluster.unreachable", "replicas that could not be read"),
        built::<BTreeMap<String, String>>(
            "cluster.partial",
            "comparisons that leave out replicas (not read, or a fact denied), and which",
        ),
        built::<Vec<cluster::VersionHosts>>("cluster.versions", "version -> replicas running it"),
        built::<Vec<cluster::Divergence>>(
            "cluster.server_settings",
            "server settings whose value differs between replicas",
        ),
        built::<Vec<cluster::Divergence>>(
            "cluster.merge_tree_settings",
            "MergeTree settings of <merge_tree> whose value differs between replicas",
        ),
        built::<Vec<cluster::Divergence>>(
            "cluster.session_settings",
            "session settings that differ (direct connections only)",
        ),
        built::<Vec<cluster::Divergence>>("cluster.profile_settings", "profile settings that differ"),
        built::<Vec<cluster::StorageGap>>("cluster.storage", "disks and policies on some replicas only"),
        built::<Vec<cluster::TableDivergence>>(
            "cluster.tables",
            "user tables on some replicas only, or defined differently (engine, structure, a table setting)",
        ),
        built::<Vec<cluster::SharedReplicaName>>(
            "cluster.shared_replica_names",
            "replica names (the `replica` macro) that several replicas of one shard use",
        ),
        built::<Vec<cluster::DataDivergence>>(
            "cluster.replica_data",
            "replicated tables whose replicas of one shard hold different rows or parts, each having run the whole log",
        ),
        built::<cluster::QueryLogPresence>(
            "cluster.query_log",
            "where system.query_log exists and where not (a replica whose tables could not be listed is in neither)",
        ),
        built::<BTreeMap<String, String>>("host.unavailable", "host facts that could not be read, and why"),
        built::<Option<String>>("host.tcp_slow_start_after_idle", "net.ipv4.tcp_slow_start_after_idle"),
        built::<Vec<derived::Route>>("host.routes", "`ip route show`"),
        built::<String>("host.thp_enabled", "transparent huge pages: the selected mode (always, madvise, never)"),
        built::<String>("host.thp_defrag", "transparent huge page defrag: the selected mode"),
        built::<u64>("host.overcommit_memory", "vm.overcommit_memory"),
        built::<u64>("host.zone_reclaim_mode", "vm.zone_reclaim_mode"),
        built::<String>("host.clock_source", "the current clock source"),
        built::<Option<String>>("host.cpu_governor", "cpu0's frequency governor (null: no frequency scaling)"),
        built::<u64>("host.pid_max", "kernel.pid_max"),
        built::<u64>("host.threads_max", "kernel.threads-max"),
        built::<u64>("host.file_max", "fs.file-max"),
        built::<u64>("host.task_delayacct", "kernel.task_delayacct"),
        built::<u64>("host.swap_total_kb", "SwapTotal of /proc/meminfo"),
        built::<Option<String>>("host.data_path_filesystem", "the filesystem type of /var/lib/clickhouse/'s mount"),
        built::<u64>("host.server_max_processes", "RLIMIT_NPROC (soft) of the running clickhouse-server"),
        built::<u64>("host.mem_total_kb", "MemTotal of /proc/meminfo"),
        built::<String>("host.kernel_release", "kernel.osrelease"),
        built::<u64>("host.kernel_version_number", "major * 1,000,000 + minor * 1,000 + patch"),
        built::<Vec<derived::BlockDevice>>("host.block_devices", "/sys/block (loop, ram and zram left out)"),
        built::<Option<u64>>(
            "host.thermal_throttle_events",
            "core_throttle_count summed over the CPUs (null: no counters)",
        ),
        built::<Option<u64>>("host.ecc_corrected_errors", "EDAC ce_count summed (null: no EDAC)"),
        built::<Option<u64>>("host.ecc_uncorrected_errors", "EDAC ue_count summed (null: no EDAC)"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_setting_or_the_changed_ones_are_read_alone() {
        let live = serde_json::json!({"settings": {
            "max_threads": {"value": "8", "default": "auto", "changed": true},
            "readonly": {"value": "0", "default": "0", "changed": false},
            "log_queries": {"value": "1", "default": "1", "changed": true},
            "bad": {"value": 5},
        }});
        let threads: Option<crate::facts::rows::SessionSetting> =
            entry(&live, "live", "settings", "max_threads").unwrap();
        assert_eq!(threads.map(|s| s.value.into_owned()), Some("8".to_string()));
        let absent: Option<crate::facts::rows::SessionSetting> = entry(&live, "live", "settings", "nope").unwrap();
        assert!(absent.is_none());
        let bad = entry::<crate::facts::rows::SessionSetting>(&live, "live", "settings", "bad").unwrap_err();
        assert!(bad.starts_with("live.settings.bad is not of the catalog's shape"), "{bad}");
        let mut live = live;
        live["settings"].as_object_mut().unwrap().remove("bad");
        let crate::facts::rows::ChangedSettings(changed) = read(&live, "live", "settings").unwrap();
        assert_eq!(changed.iter().map(|(name, _)| *name).collect::<Vec<_>>(), ["log_queries", "max_threads"]);
    }

    #[test]
    fn a_row_of_another_shape_is_named() {
        let live = serde_json::json!({"role_grants": [{"user_name": "u", "granted_role_name": 7}]});
        let error = read::<Vec<crate::facts::rows::RoleGrant>>(&live, "live", "role_grants").unwrap_err();
        assert!(
            error.starts_with("live.role_grants is not of the catalog's shape: invalid type: integer `7`"),
            "{error}"
        );
        assert!(read::<Vec<crate::facts::rows::RoleGrant>>(&live, "live", "absent").unwrap().is_empty());
    }
}
