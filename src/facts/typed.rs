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

/// A ClickHouse UInt8 used as a bool: `0`/`1`, or a bool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Flag(pub bool);

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Flag, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::Bool(b) => Ok(Flag(b)),
            Value::Number(n) if n.as_u64().is_some_and(|n| n <= 1) => Ok(Flag(n.as_u64() == Some(1))),
            other => Err(D::Error::custom(format!("expected 0, 1 or a bool, found {other}"))),
        }
    }
}

catalog_type!(Flag, "integer", "flag");

/// Where a fact was read: `file:line:column` in the user's config.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Location(pub String);

catalog_type!(Location, "string", "location");

impl ToCel for Location {
    fn cel(&self) -> Box<dyn Val + '_> {
        self.0.cel()
    }
}

/// A ClickHouse count: a number, or a string when the server quotes 64-bit integers
/// (`output_format_json_quote_64bit_integers`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Count(pub u64);

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Count, D::Error> {
        number_or_text(deserializer, serde_json::Number::as_u64, "a count").map(Count)
    }
}

catalog_type!(Count, "integer", "number");

impl std::fmt::Display for Count {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// A measure that may have a fraction (an average, a median), or a count: a number, or a
/// string when the server quotes 64-bit integers.
#[derive(Debug, Clone, Copy, Default, PartialEq, PartialOrd, Serialize)]
pub struct Number(pub f64);

impl<'de> Deserialize<'de> for Number {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Number, D::Error> {
        number_or_text(deserializer, serde_json::Number::as_f64, "a number").map(Number)
    }
}

catalog_type!(Number, "number", "number");

/// A JSON number read as `T`, or text holding one (the server quotes 64-bit integers);
/// `what` names `T` in the error.
fn number_or_text<'de, D: Deserializer<'de>, T: std::str::FromStr>(
    deserializer: D,
    of_number: fn(&serde_json::Number) -> Option<T>,
    what: &str,
) -> Result<T, D::Error> {
    let value = Value::deserialize(deserializer)?;
    let read = match &value {
        Value::Number(n) => of_number(n),
        Value::String(s) => s.parse().ok(),
        _ => None,
    };
    read.ok_or_else(|| D::Error::custom(format!("expected {what}, found {value}")))
}

/// A `sumMap` result as the server writes it, a pair of lists (`[[names], [counts]]`), read
/// as counts by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SummedMap(pub BTreeMap<String, u64>);

impl<'de> Deserialize<'de> for SummedMap {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<SummedMap, D::Error> {
        let (names, counts) = <(Vec<String>, Vec<Count>)>::deserialize(deserializer)?;
        if names.len() != counts.len() {
            return Err(D::Error::custom(format!("{} names but {} counts", names.len(), counts.len())));
        }
        Ok(SummedMap(names.into_iter().zip(counts.into_iter().map(|c| c.0)).collect()))
    }
}

impl JsonSchema for SummedMap {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "SummedMap".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        // the names' list, then the counts' list
        schemars::json_schema!({"type": "array", "items": {"x-fact": "any"}})
    }
}

/// A UInt8 flag column: 0/1 (or a JSON bool).
pub fn flag<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    Flag::deserialize(deserializer).map(|flag| flag.0)
}

/// A UInt64 column: a number, or a string when the server quotes 64-bit integers.
pub fn uint<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    Count::deserialize(deserializer).map(|count| count.0)
}

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

/// A map by setting (or section) name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Settings<T>(pub BTreeMap<String, T>);

impl<T: ToCel> ToCel for Settings<T> {
    fn cel(&self) -> Box<dyn Val + '_> {
        self.0.cel()
    }
}

impl<T> Default for Settings<T> {
    fn default() -> Settings<T> {
        Settings(BTreeMap::new())
    }
}

impl<T> FromIterator<(String, T)> for Settings<T> {
    fn from_iter<I: IntoIterator<Item = (String, T)>>(items: I) -> Settings<T> {
        Settings(items.into_iter().collect())
    }
}

impl<T: JsonSchema> JsonSchema for Settings<T> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("Settings_of_{}", T::schema_name()).into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let mut schema = BTreeMap::<String, T>::json_schema(generator);
        schema.insert("x-fact".into(), "dict:setting".into());
        schema
    }
}

/// The catalog entries of a typed fact, parents before children.
pub fn entries(fact: &TypedFact) -> Result<Vec<Entry>, String> {
    let root = (fact.schema)();
    let mut out = Vec::new();
    describe(&root, root.as_value(), fact.path, fact.meaning, &mut out)?;
    Ok(out)
}

fn describe(root: &Schema, schema: &Value, path: &str, meaning: &str, out: &mut Vec<Entry>) -> Result<(), String> {
    // a field's own doc comment (a type's describes the Rust type, not the fact)
    let own = schema["description"].as_str().unwrap_or_default().to_string();
    let meaning = if meaning.is_empty() { own.as_str() } else { meaning };
    let (schema, nullable) = resolve(root, schema)?;
    let json_type = schema["type"].as_str().unwrap_or_default();
    let extension = schema["x-fact"].as_str();
    let kind = match (extension, json_type) {
        (Some(kind), _) => kind,
        (None, "object") if schema.get("additionalProperties").is_some() => "dict",
        (None, "object") => "map",
        (None, "array") => "list",
        (None, "string") => "string",
        (None, "boolean") => "bool",
        (None, "integer") if schema["minimum"] == 0 => "uint",
        (None, "integer") => "int",
        (None, "number") => "float",
        (None, other) => return Err(format!("{path}: a schema of type `{other}` has no catalog type")),
    };
    let shown = if nullable { format!("{kind}?") } else { kind.to_string() };
    out.push(Entry { path: path.to_string(), kind: shown, meaning: meaning.to_string() });
    if let Some(items) = schema.get("items") {
        describe(root, items, &format!("{path}[]"), "", out)?;
    } else if let Some(value) = schema.get("additionalProperties") {
        describe(root, value, &format!("{path}{{}}"), "", out)?;
    } else if let Some(fields) = schema["properties"].as_object() {
        for (name, field) in fields {
            describe(root, field, &format!("{path}.{name}"), "", out)?;
        }
    }
    Ok(())
}

/// A schema with its `$ref` followed and `null` taken out of its types: (schema, nullable).
/// A field's own description and extension win over its type's.
fn resolve(root: &Schema, schema: &Value) -> Result<(Value, bool), String> {
    let mut schema = schema.clone();
    let mut nullable = false;
    if let Some(options) = schema.get("anyOf").and_then(Value::as_array).cloned() {
        let (nulls, others): (Vec<&Value>, Vec<&Value>) = options.iter().partition(|o| o["type"] == "null");
        let [only] = others.as_slice() else { return Err(format!("a union of {} types", others.len())) };
        nullable = !nulls.is_empty();
        let own = schema.as_object().cloned().unwrap_or_default();
        schema = (*only).clone();
        merge_own(&mut schema, own);
    }
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str).map(str::to_string) {
        let name = reference.trim_start_matches("#/$defs/");
        let target = root.as_value()["$defs"][name].clone();
        if target.is_null() {
            return Err(format!("no definition of `{reference}`"));
        }
        let own = schema.as_object().cloned().unwrap_or_default();
        schema = target;
        merge_own(&mut schema, own);
    }
    if let Some(types) = schema["type"].as_array().cloned() {
        let others: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
        nullable |= others.len() < types.len();
        let [only] = others.as_slice() else { return Err(format!("a union of {} types", others.len())) };
        schema["type"] = (*only).clone();
    }
    Ok((schema, nullable))
}

fn merge_own(schema: &mut Value, own: serde_json::Map<String, Value>) {
    for key in ["description", "x-fact"] {
        if let Some(value) = own.get(key) {
            schema[key] = value.clone();
        }
    }
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

    /// Whether `path` is `fact` or a fact below it.
    fn under(path: &str, fact: &str) -> bool {
        path == fact || path.strip_prefix(fact).is_some_and(|rest| rest.starts_with(['.', '[', '{']))
    }

    /// `text` (schema.txt) with the lines of `fact` and the facts below it replaced by `entries`,
    /// written in the file's columns.
    fn replace_block(text: &str, fact: &str, entries: &[Entry]) -> String {
        let within = |line: &str| under(line.split_whitespace().next().unwrap_or_default(), fact);
        let lines: Vec<&str> = text.lines().collect();
        let Some(first) = lines.iter().position(|l| within(l)) else { return text.to_string() };
        let end = lines[first..].iter().position(|l| !within(l)).map_or(lines.len(), |n| first + n);
        let written = entries.iter().map(|e| {
            let mut line = format!("{:<39} ", e.path);
            line.push_str(&e.kind);
            if !e.meaning.is_empty() {
                let column = 54.max(line.len() + 1);
                line = format!("{line:<column$}{}", e.meaning);
            }
            line
        });
        let kept = lines[..first]
            .iter()
            .map(|l| l.to_string())
            .chain(written)
            .chain(lines[end..].iter().map(|l| l.to_string()));
        kept.collect::<Vec<_>>().join("\n") + "\n"
    }

    #[test]
    fn the_catalog_says_what_the_types_say() {
        let catalog = super::super::schema::catalog();
        let overwrite = std::env::var("CHAUDIT_CATALOG").as_deref() == Ok("overwrite");
        let mut text = super::super::schema::CATALOG.to_string();
        let mut differ = Vec::new();
        for fact in facts() {
            let generated = entries(&fact).unwrap();
            let mut expected: Vec<(&str, &str, &str)> =
                generated.iter().map(|e| (e.path.as_str(), e.kind.as_str(), e.meaning.as_str())).collect();
            let mut listed: Vec<(&str, &str, &str)> = catalog
                .entries
                .iter()
                .filter(|e| under(&e.path, fact.path))
                .map(|e| (e.path.as_str(), e.kind.as_str(), e.meaning.as_str()))
                .collect();
            expected.sort();
            listed.sort();
            if expected != listed {
                differ.push(fact.path);
                // the lines keep the order they have (JSON schema's fields are sorted)
                let mut generated = generated.clone();
                let place = |e: &Entry| catalog.entries.iter().position(|c| c.path == e.path).unwrap_or(usize::MAX);
                generated.sort_by_key(place);
                text = replace_block(&text, fact.path, &generated);
            }
        }
        if overwrite && !differ.is_empty() {
            let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/facts/schema.txt");
            std::fs::write(path, text).unwrap();
        } else {
            assert!(differ.is_empty(), "schema.txt differs from the types of {differ:?} (CHAUDIT_CATALOG=overwrite)");
        }
    }

    #[test]
    fn flags_and_counts_read_as_the_server_writes_them() {
        let flags: Vec<Flag> = serde_json::from_str("[0, 1, true, false]").unwrap();
        assert_eq!(flags, [Flag(false), Flag(true), Flag(true), Flag(false)]);
        assert!(serde_json::from_str::<Flag>("2").is_err());
        let counts: Vec<Count> = serde_json::from_str(r#"[42, "18446744073709551615"]"#).unwrap();
        assert_eq!(counts, [Count(42), Count(u64::MAX)]);
        assert!(serde_json::from_str::<Count>(r#""many""#).is_err());
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
