//! The server config's sections as Rust types: its system logs (`config.logs`,
//! `config.log_unknown_elements`), credentials written in files
//! (`config.plaintext_credentials`), `<backups>`, `<openSSL><client>` and `<logger>`. The
//! catalog's entries of these facts are generated from the types (typed/).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::config::leaf_values;
use super::typed::Location;
use crate::config::{Element, Origin};

/// A named element and where it is written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NamedAt {
    pub name: String,
    pub at: Location,
}

/// A system log section (`<query_log>`, `<metric_log>`, ...).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LogSection {
    pub present: bool,
    pub at: Location,
    /// the section's leaves by name
    pub settings: BTreeMap<String, String>,
    /// its <ttl>
    pub ttl: Option<String>,
    /// its <engine>
    pub engine: Option<String>,
}

/// An element of a system log section that the server does not read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LogUnknownElement {
    /// the section (query_log, ...)
    pub log: String,
    pub element: String,
    pub at: Location,
    /// the key it is a likely misspelling of
    pub suggestion: Option<String>,
}

/// A credential written in a config file rather than taken from the environment (its value
/// is never kept).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlaintextCredential {
    /// secret_access_key, account_key, a connection_string holding an AccountKey; password, sasl_password, sasl_oauthbearer_client_secret under <kafka>, <rabbitmq> or <nats>
    pub element: String,
    /// object-storage | integration
    pub kind: String,
    /// where it is, as a path of elements (storage_configuration/disks/s3/secret_access_key)
    pub path: String,
    pub at: Location,
}

/// `<openSSL><client>`: how the server checks the certificates of what it connects to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct OpenSslClient {
    /// <verificationMode>
    pub verification_mode: Option<String>,
    /// <invalidCertificateHandler><name>
    pub invalid_certificate_handler: Option<String>,
    /// its <verificationMode> (else the handler, else the section)
    pub at: Location,
}

/// `<interserver_http_credentials>`: what a replica must send to fetch this server's parts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InterserverCredentials {
    /// a request without credentials is accepted: <allow_empty> is on, or the user and its password are both empty
    pub accepts_none: bool,
    /// its <user> has an empty <password>: whoever names the user is accepted (the name is not kept: the report masks it as part of the credentials)
    pub empty_password: bool,
    /// the section
    pub at: Location,
}

/// `<logger>`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Logger {
    /// its <level>
    pub level: Option<String>,
    /// its <level> (the <logger> element without one)
    pub at: Location,
}

/// The system log sections by name (the first of each): present, where, their TTL. An
/// empty `<query_log/>` is a section: the server creates the log with its defaults.
pub fn logs(root: &Element, at: &dyn Fn(Origin) -> Location) -> BTreeMap<String, LogSection> {
    let mut out = BTreeMap::new();
    let section = |e: &Element| e.has_element_children() || e.value().trim().is_empty();
    for e in root.elements().filter(|e| SYSTEM_LOGS.contains(&e.name.as_str()) && section(e)) {
        out.entry(e.name.to_string()).or_insert_with(|| LogSection {
            present: true,
            at: at(e.origin),
            settings: leaf_values(e),
            ttl: e.child("ttl").map(Element::value),
            engine: e.child("engine").map(Element::value),
        });
    }
    out
}

/// Elements of a system log section that the server does not read (createSystemLog and
/// the collectors of SystemLog.cpp), with the key a misspelling is closest to.
pub fn log_unknown_elements(root: &Element, at: &dyn Fn(Origin) -> Location) -> Vec<LogUnknownElement> {
    let mut out = Vec::new();
    for log in root.elements().filter(|e| SYSTEM_LOGS.contains(&e.name.as_str())) {
        let read = |name: &str| {
            LOG_SECTION_KEYS.contains(&name)
                || LOG_SECTION_EXTRA_KEYS.iter().any(|(l, key)| *l == log.name && *key == name)
        };
        let known: Vec<&str> = LOG_SECTION_KEYS
            .iter()
            .copied()
            .chain(LOG_SECTION_EXTRA_KEYS.iter().filter(|(l, _)| *l == log.name).map(|(_, key)| *key))
            .collect();
        for child in log.elements().filter(|c| !read(&c.name)) {
            // a misspelling, or a known key with a prefix (`table_ttl` for `ttl`)
            let suggestion = crate::suggest::typo_of(&child.name, known.iter().copied())
                .or_else(|| known.iter().copied().find(|key| child.name.ends_with(&format!("_{key}"))));
            out.push(LogUnknownElement {
                log: log.name.to_string(),
                element: child.name.to_string(),
                at: at(child.origin),
                suggestion: suggestion.map(str::to_string),
            });
        }
    }
    out
}

/// Object-storage credentials written in a config file (an `incl` file too), not taken
/// from the environment: a value substituted from `from_env` carries the origin of the
/// element it replaced. In path order.
pub fn plaintext_credentials(root: &Element, at: &dyn Fn(Origin) -> Location) -> Vec<PlaintextCredential> {
    // every element with elements as (its parent's index, the root's child it is under,
    // itself): a path is spelled only for a credential (a path string per element cost more
    // than the walk on 16,000 disks)
    let mut visited: Vec<(usize, &str, &Element)> = vec![(0, "", root)];
    let path_of = |visited: &[(usize, &str, &Element)], mut index: usize, name: &str| {
        let mut names = vec![name];
        while index != 0 {
            let (parent, _, e) = visited[index];
            names.push(e.name.as_str());
            index = parent;
        }
        names.reverse();
        names.join("/")
    };
    let mut out = Vec::new();
    let mut next = 0;
    while next < visited.len() {
        let (index, (_, top, e)) = (next, visited[next]);
        next += 1;
        let integration = INTEGRATIONS.contains(&top);
        for child in e.elements() {
            let kind = match child.name.as_str() {
                "secret_access_key" | "account_key" => Some("object-storage"),
                "connection_string" if child.value().contains("AccountKey=") => Some("object-storage"),
                "password" | "sasl_password" | "sasl_oauthbearer_client_secret" if integration => Some("integration"),
                _ => None,
            };
            if let Some(kind) = kind
                && !child.value().trim().is_empty()
                && child.value_origin() != child.origin
            {
                out.push(PlaintextCredential {
                    element: child.name.to_string(),
                    kind: kind.to_string(),
                    path: path_of(&visited, index, &child.name),
                    at: at(child.origin),
                });
            } else if child.has_element_children() {
                visited.push((index, if index == 0 { child.name.as_str() } else { top }, child));
            }
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// `<backups><allowed_disk>`: the disks BACKUP ... TO Disk(...) may write to, each where its
/// value is written.
pub fn backups_allowed_disks(root: &Element, at: &dyn Fn(Origin) -> Location) -> Vec<NamedAt> {
    let Some(backups) = root.find("backups") else { return Vec::new() };
    backups.children_named("allowed_disk").map(|d| NamedAt { name: d.value(), at: at(d.value_origin()) }).collect()
}

/// `<openSSL><client>`, if any.
pub fn openssl_client(root: &Element, at: &dyn Fn(Origin) -> Location) -> Option<OpenSslClient> {
    let client = root.find("openSSL/client")?;
    let mode = client.child("verificationMode");
    let handler = client.find("invalidCertificateHandler/name");
    Some(OpenSslClient {
        verification_mode: mode.map(Element::value),
        invalid_certificate_handler: handler.map(Element::value),
        at: at(mode.or(handler).map_or(client.origin, |e| e.origin)),
    })
}

/// `<interserver_http_credentials>`, if any. The server accepts its `<user>` with its
/// `<password>` and, with `<allow_empty>`, a request that sends no credentials
/// (ConfigInterserverCredentials in ClickHouse's src/Interpreters/InterserverCredentials.cpp),
/// which is also what an empty user with an empty password is.
pub fn interserver_credentials(root: &Element, at: &dyn Fn(Origin) -> Location) -> Option<InterserverCredentials> {
    let section = root.child("interserver_http_credentials")?;
    let text = |name: &str| section.child(name).map(Element::value).unwrap_or_default();
    let (user, password) = (text("user"), text("password"));
    let allow_empty = section.child("allow_empty").is_some_and(|a| super::config::is_true(&a.value()));
    Some(InterserverCredentials {
        accepts_none: allow_empty || (user.is_empty() && password.is_empty()),
        empty_password: !user.is_empty() && password.is_empty(),
        at: at(section.origin),
    })
}

/// `<logger>` and its `<level>`, if any.
pub fn logger(root: &Element, at: &dyn Fn(Origin) -> Location) -> Option<Logger> {
    let logger = root.child("logger")?;
    let level = logger.child("level");
    Some(Logger { level: level.map(Element::value), at: at(level.map_or(logger.origin, |e| e.origin)) })
}

/// What the server reads in every system log section (createSystemLog in ClickHouse's
/// src/Interpreters/SystemLog.cpp).
const LOG_SECTION_KEYS: &[&str] = &[
    "database",
    "table",
    "engine",
    "partition_by",
    "ttl",
    "order_by",
    "storage_policy",
    "settings",
    "flush_interval_milliseconds",
    "max_size_rows",
    "reserved_size_rows",
    "buffer_size_rows_flush_threshold",
    "flush_on_crash",
];

/// What the server reads in one log's section only: the collectors' intervals, text_log's
/// level, trace_log's symbolization.
const LOG_SECTION_EXTRA_KEYS: &[(&str, &str)] = &[
    ("metric_log", "collect_interval_milliseconds"),
    ("error_log", "collect_interval_milliseconds"),
    ("latency_log", "collect_interval_milliseconds"),
    ("query_metric_log", "collect_interval_milliseconds"),
    ("text_log", "level"),
    ("trace_log", "symbolize"),
];

/// Root sections holding the credentials of the message brokers the table engines connect
/// to (Kafka, RabbitMQ, NATS), with their per-topic / per-queue subsections.
const INTEGRATIONS: &[&str] = &["kafka", "rabbitmq", "nats"];

/// The system log tables a config section creates (LIST_OF_ALL_SYSTEM_LOGS in ClickHouse's
/// src/Interpreters/SystemLog.h, 24.8 to 26.9): another `*_log` element is no log table.
const SYSTEM_LOGS: &[&str] = &[
    "query_log",
    "query_thread_log",
    "part_log",
    "trace_log",
    "crash_log",
    "text_log",
    "metric_log",
    "latency_log",
    "filesystem_cache_log",
    "filesystem_read_prefetches_log",
    "s3queue_log",
    "azure_queue_log",
    "asynchronous_metric_log",
    "opentelemetry_span_log",
    "query_views_log",
    "zookeeper_log",
    "session_log",
    "transactions_info_log",
    "processors_profile_log",
    "asynchronous_insert_log",
    "backup_log",
    "blob_storage_log",
    "query_metric_log",
    "error_log",
    "iceberg_metadata_log",
    "delta_lake_metadata_log",
    "background_schedule_pool_log",
    "aggregated_zookeeper_log",
];

crate::fact_object!(NamedAt { name, at });
crate::fact_object!(LogSection { present, at, settings, ttl, engine });
crate::fact_object!(LogUnknownElement { log, element, at, suggestion });
crate::fact_object!(PlaintextCredential { element, kind, path, at });
crate::fact_object!(OpenSslClient { verification_mode, invalid_certificate_handler, at });
crate::fact_object!(InterserverCredentials { accepts_none, empty_password, at });
crate::fact_object!(Logger { level, at });
