//! The elements at the root of a config as the server knows them: its sections, the other
//! root elements it reads, the names the config itself refers to (`config.root_elements`).

use rustc_hash::FxHashSet;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::catalog;
use super::typed::Location;
use crate::config::Element;

/// Sections of the server config that are not settings but belong only there.
const SERVER_SECTIONS: &[&str] = &[
    "logger",
    "listen_host",
    "remote_servers",
    "storage_configuration",
    "macros",
    "zookeeper",
    "keeper_server",
    "openSSL",
    "user_directories",
    "users_config",
    "include_from",
    "path",
    "tmp_path",
    "http_port",
    "tcp_port",
    "https_port",
    "tcp_port_secure",
    "interserver_http_port",
    "mysql_port",
    "postgresql_port",
    "query_log",
    "query_thread_log",
    "part_log",
    "metric_log",
    "trace_log",
    "text_log",
    "merge_tree",
    "compression",
    "distributed_ddl",
    "prometheus",
    "graphite",
    "query_masking_rules",
    "encryption_codecs",
    "named_collections",
];

/// Root elements ClickHouse reads that are not in system.server_settings (ports, paths,
/// access-control switches, sections): a name neither here, in SERVER_SECTIONS, among the
/// server settings nor ending in `_log` is unknown to the server.
const OTHER_ROOT_ELEMENTS: &[&str] = &[
    "access_control_improvements",
    "access_control_path",
    "allow_implicit_no_password",
    "allow_no_password",
    "allow_plaintext_password",
    "auxiliary_zookeepers",
    "backups",
    "bcrypt_workfactor",
    "builtin_dictionaries_reload_interval",
    "core_dump",
    "custom_cached_disks_base_directory",
    "custom_settings_prefixes",
    "default_password_type",
    "default_profile",
    "default_session_timeout",
    "dictionaries_config",
    "encryption",
    "format_schema_path",
    "graphite_rollup",
    "grpc",
    "grpc_port",
    "hdfs",
    "http_options_response",
    "http_server_default_response",
    "interserver_http_credentials",
    "interserver_http_host",
    "interserver_https_host",
    "interserver_https_port",
    "interserver_listen_host",
    "jdbc_bridge",
    "kafka",
    "ldap_servers",
    "listen_backlog",
    "listen_reuse_port",
    "listen_try",
    "local_disk_check_period_ms",
    "max_session_timeout",
    "mlock_executable",
    "mysql",
    "odbc_bridge",
    "placement",
    "postgresql",
    "profiles",
    "query_cache",
    "quotas",
    "rabbitmq",
    "remap_executable",
    "roles",
    "s3",
    "send_crash_reports",
    "skip_check_for_incorrect_settings",
    "ssh_server",
    "tcp_with_proxy_port",
    "top_level_domains_lists",
    "top_level_domains_path",
    "url_scheme_mappers",
    "user_defined_executable_functions_config",
    "user_defined_path",
    "user_defined_zookeeper_path",
    "user_files_path",
    "user_scripts_path",
    "users",
    "workload_path",
    "workload_zookeeper_path",
    "zookeeper_log",
];

/// An element at the root of the server config (`config.root_elements`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RootElement {
    /// its tag
    pub name: String,
    /// has no child elements
    pub leaf: bool,
    /// its text (a leaf's value)
    pub value: String,
    pub at: Location,
    /// a section that belongs in the server config only (logger, remote_servers, ...)
    pub server_section: bool,
    /// ClickHouse reads it: a server or query setting, a section, a port, path or access switch, a *_log section
    pub known: bool,
    /// written in a conf.d/ fragment, which ClickHouse merges into the users config too
    pub in_conf_d: bool,
    /// named by the config itself, not by code: a static HTTP handler's `config://` payload, a protocol's `<handlers>`, a section of the `<include_from>` file (an `incl` source), or a GraphiteMergeTree rollup (shaped as one; a table names it)
    pub referenced: bool,
}

crate::fact_object!(RootElement { name, leaf, value, at, server_section, known, in_conf_d, referenced });

/// [`SERVER_SECTIONS`] and [`OTHER_ROOT_ELEMENTS`] as a set: each of 100,000 root elements
/// is looked up, not compared with every name.
pub(super) fn root_names() -> &'static FxHashSet<&'static str> {
    static NAMES: std::sync::OnceLock<FxHashSet<&'static str>> = std::sync::OnceLock::new();
    NAMES.get_or_init(|| SERVER_SECTIONS.iter().chain(OTHER_ROOT_ELEMENTS).copied().collect())
}

/// Whether `name` is one of [`SERVER_SECTIONS`] (most names are no root name at all: the
/// set answers them without a scan of the list).
pub(super) fn is_server_section(name: &str) -> bool {
    root_names().contains(name) && SERVER_SECTIONS.contains(&name)
}

/// The server setting, section or other root element closest to `name`, for "did you
/// mean"; asked by rules only for the elements they report.
pub fn root_element_suggestion(name: &str) -> Option<&'static str> {
    static NAMES: std::sync::OnceLock<crate::suggest::Index> = std::sync::OnceLock::new();
    NAMES
        .get_or_init(|| {
            let sections = SERVER_SECTIONS.iter().chain(OTHER_ROOT_ELEMENTS).copied();
            let settings = catalog::builtin().server.keys();
            crate::suggest::Index::of_typos(settings.chain(sections))
        })
        .closest(name)
}

/// Sections that make up a users config.
pub(super) const USERS_SECTIONS: &[&str] =
    &["profiles", "users", "quotas", "roles", "settings_profiles", "include_from"];

/// Whether an element at the root of a config is a known section (not a setting): rule
/// expressions may name it.
pub fn is_known_section(name: &str) -> bool {
    is_server_section(name) || USERS_SECTIONS.contains(&name) || name.ends_with("_log")
}

/// The root elements the config names itself (ClickHouse's check for unknown top-level keys,
/// PR 100332, lets these pass): the payload of a static HTTP handler
/// (`<response_content>config://NAME</response_content>`) and a protocol's handler section
/// (`<protocols><NAME><handlers>SECTION</handlers>`), each by its first path component.
pub(super) fn referenced_root_names(root: &Element) -> FxHashSet<String> {
    let top = |path: &str| path.split(['.', '[']).next().unwrap_or_default().to_string();
    let mut out = FxHashSet::default();
    let mut stack: Vec<&Element> = vec![root];
    while let Some(e) = stack.pop() {
        if e.name == "handler"
            && e.child("type").is_some_and(|t| t.value().trim() == "static")
            && let Some(payload) = e.child("response_content").map(Element::value)
            && let Some(path) = payload.trim().strip_prefix("config://")
        {
            out.insert(top(path));
        }
        stack.extend(e.elements());
    }
    for protocol in root.children_named("protocols").flat_map(|p| p.elements()) {
        for handlers in protocol.children_named("handlers") {
            out.insert(top(handlers.value().trim()));
        }
    }
    out
}

/// A section shaped as a GraphiteMergeTree rollup (named by a table's engine, not by code):
/// every child one a rollup section has.
pub(super) fn is_graphite_rollup(e: &Element) -> bool {
    const ROLLUP: [&str; 6] =
        ["pattern", "default", "path_column_name", "time_column_name", "value_column_name", "version_column_name"];
    e.has_element_children() && e.elements().all(|c| ROLLUP.contains(&c.name.as_str()))
}
