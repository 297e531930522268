//! The config's facts (src/facts/config*.rs builds them).

use std::collections::BTreeMap;

use crate::facts::config_keeper as keeper;
use crate::facts::config_sections as sections;
use crate::facts::config_storage as storage;
use crate::facts::typed::{Location, Settings};
use crate::facts::{config_users, startup};

fact_keys! {
    Config "config", built;
    AT: Location = "at", "the root element of the main config";
    UNAVAILABLE: BTreeMap<String, String> = "unavailable",
        "config facts that could not be built, and why (the users facts of a users config ClickHouse refuses)";
    ABSENT: BTreeMap<String, String> = "absent",
        "config facts whose input is absent, and why (the users facts without a users config): their rules are not applicable";
    SERVER: Settings<String> = "server",
        "each leaf element at the root of the server config, by name: its text as merged (first occurrence)";
    SERVER_AT: Settings<Location> = "server_at", "where each leaf at the root of the server config is written";
    MERGE_TREE: Settings<String> = "merge_tree", "the leaves of <merge_tree> by name";
    MERGE_TREE_AT: Settings<Location> = "merge_tree_at", "where each leaf of <merge_tree> is written";
    ROOT_ELEMENTS: Vec<crate::facts::config::RootElement> = "root_elements",
        "every element at the root of the server config, in order";
    LOGS: BTreeMap<String, sections::LogSection> = "logs",
        "the system log sections (query_log, metric_log, ...) by name";
    LOG_UNKNOWN_ELEMENTS: Vec<sections::LogUnknownElement> = "log_unknown_elements",
        "elements of a system log section the server does not read (SystemLog.cpp)";
    INTERSERVER_EXPOSED: bool = "interserver_exposed",
        "the interserver port is set and listens on every interface (interserver_listen_host, else listen_host)";
    INTERSERVER_CREDENTIALS: Option<sections::InterserverCredentials> = "interserver_credentials",
        "<interserver_http_credentials>: what a replica must send to fetch this server's parts (null without one)";
    OPENSSL_CLIENT: Option<sections::OpenSslClient> = "openssl_client",
        "<openSSL><client>: how the server checks the certificates of what it connects to (null without one)";
    PLAINTEXT_CREDENTIALS: Vec<sections::PlaintextCredential> = "plaintext_credentials",
        "object-storage keys and message-broker passwords written in a config file rather than taken from the environment (values never shown)";
    PROBLEMS: Vec<crate::facts::config::LoaderProblem> = "problems",
        "problems ClickHouse starts with (an unset from_env, a missing incl, a merge attribute on a root it ignores)";
    USERS_FILE_SECTIONS: Vec<sections::NamedAt> = "users_file_sections",
        "elements of users.xml / users.d that belong in the server config (ClickHouse ignores them there)";
    USERS_IN_MAIN: bool = "users_in_main",
        "users come from the main config itself (it names neither users_config nor user_directories)";
    ENTRYPOINT_KEEPS_DEFAULT_LOCAL: bool = "entrypoint_keeps_default_local",
        "the image's entrypoint keeps `default` to the container (::1, 127.0.0.1), the mounted files leaving it as users.xml has it (--base image): a users.d file that changes `default` ends this at the next start";
    OVER_IMAGE_FILES: bool = "over_image_files",
        "the files sit over the official image's stock config.xml and users.xml, which are not among them (a Kubernetes manifest): what those define, such as the quota `default`, is there";
    UNREAD_USERS_FILE: Option<String> = "unread_users_file",
        "a users.xml beside the main config that the server does not read (users come from the main config)";
    BACKUPS_ALLOWED_DISKS: Vec<sections::NamedAt> = "backups_allowed_disks",
        "<backups><allowed_disk>: the disks BACKUP may write to";
    START_PROBLEMS: Vec<startup::StartProblemFact> = "start_problems",
        "what stops the server at start-up, each with the server's own reason (see docs/startup.md)";
    LOGGER: Option<sections::Logger> = "logger", "<logger> (null without one)";
    ZOOKEEPER: Option<keeper::KeeperClient> = "zookeeper",
        "<zookeeper> (or <keeper>, its other name): the Keeper or ZooKeeper the server connects to (null without either)";
    KEEPER_SERVER: Option<keeper::KeeperServer> = "keeper_server",
        "<keeper_server>: the ClickHouse Keeper node this config runs (null without one)";
    DISTRIBUTED_DDL: Option<keeper::DistributedDdl> = "distributed_ddl",
        "<distributed_ddl>: the queue of ON CLUSTER statements (null without one)";
    DISKS: Vec<storage::ConfigDisk> = "disks", "<storage_configuration><disks>";
    MISSPELLED_DISKS: Vec<storage::MisspelledDisk> = "misspelled_disks",
        "the disks with an element that is a typo of one of their type's (the items of config.disks with `misspelled`)";
    CACHE_DISKS: Vec<storage::CacheDisk> = "cache_disks", "the disks of type cache (the items of config.disks)";
    DISK_POLICIES: BTreeMap<String, Vec<String>> = "disk_policies",
        "every declared disk (and every disk a policy names) -> the policies listing it, empty when none";
    DECLARED_DISKS: BTreeMap<String, String> = "declared_disks",
        "every disk of <storage_configuration><disks> -> its type (a lookup, not a scan of config.disks)";
    POLICY_NAMES: Vec<String> = "policy_names", "the storage policies' names";
    POLICIES: Vec<storage::ConfigPolicy> = "policies", "<storage_configuration><policies>";
    CLUSTERS: Vec<storage::ConfigCluster> = "clusters", "<remote_servers>";
    MACROS: BTreeMap<String, String> = "macros", "<macros>: name -> value";
    UNDEFINED_REPLICA_MACROS: Vec<crate::facts::config::UndefinedMacro> = "undefined_replica_macros",
        "macros default_replica_path and default_replica_name use that <macros> does not define (database, table and uuid are the server's own)";
    LISTEN_HOSTS: Vec<String> = "listen_hosts", "the <listen_host> values";
    EXPOSED: bool = "exposed", "a listen_host is 0.0.0.0 or :: (every interface)";
    DEFAULT_PROFILE: String = "default_profile", "<default_profile> (default: `default`)";
    CUSTOM_SETTINGS_PREFIXES: Vec<String> = "custom_settings_prefixes",
        "<custom_settings_prefixes> split (default: custom_)";
    USERS: Vec<config_users::ConfigUser> = "users", "the users of the users config (users.xml + users.d)";
    PROFILES: Vec<config_users::ConfigProfile> = "profiles", "the settings profiles of the users config";
    PROFILE_SETTINGS: Vec<config_users::WrittenSetting> = "profile_settings",
        "every setting written in a profile, one item each";
    PROFILE_SETTINGS_BY_NAME: Settings<Vec<config_users::WrittenSetting>> = "profile_settings_by_name",
        "config.profile_settings by setting name: the items of one setting, without scanning every profile's";
}
