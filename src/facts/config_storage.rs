//! The server config's disks, storage policies and clusters as Rust types (`config.disks`,
//! `config.policies`, `config.clusters` and their lookups), read as ClickHouse reads
//! `<storage_configuration>` and `<remote_servers>`. The catalog's entries of these facts are
//! generated from the types (typed/).

use std::collections::{BTreeMap, HashSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::config::leaf_values;
use super::typed::Location;
use crate::config::{Element, Origin, model};

/// A disk of `<storage_configuration><disks>`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ConfigDisk {
    pub name: String,
    /// its <type> (local when absent)
    #[serde(rename = "type")]
    pub kind: String,
    /// its leaf elements by name
    pub settings: BTreeMap<String, String>,
    pub at: Location,
    /// elements at most two letters off an element of the disk's type (ClickHouse ignores them)
    pub misspelled: Vec<MisspelledElement>,
}

/// An element of a disk that is no element of its type but a typo of one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MisspelledElement {
    /// the element as written
    pub name: String,
    /// the element of the disk's type it is a typo of
    pub suggestion: String,
    /// its text (a leaf's value)
    pub value: String,
    pub at: Location,
}

/// A disk with a misspelled element.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MisspelledDisk {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub at: Location,
    pub misspelled: Vec<MisspelledElement>,
}

/// A disk of type cache.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CacheDisk {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    /// its leaf elements by name (disk, max_size, cache_on_write_operations, ...)
    pub settings: BTreeMap<String, String>,
    pub at: Location,
}

/// A storage policy of `<storage_configuration><policies>`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ConfigPolicy {
    pub name: String,
    pub at: Location,
    /// the disks of all its volumes
    pub disks: Vec<String>,
    pub volumes: Vec<Volume>,
}

/// A volume of a storage policy, in priority order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Volume {
    pub name: String,
    pub disks: Vec<String>,
    pub at: Location,
}

/// A cluster of `<remote_servers>`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ConfigCluster {
    pub name: String,
    pub at: Location,
    /// each shard's replicas
    pub shards: Vec<Vec<Replica>>,
    /// it has a <secret> that is not empty: remote shards run a query as the user who sent it
    pub secret: bool,
    /// it names more than one host, one of them not a loopback address: queries go to other servers
    pub remote: bool,
}

/// A replica of a shard.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Replica {
    pub host: String,
    pub port: Option<u16>,
}

/// Elements of a disk definition by disk type (ClickHouse's storage docs), for spotting a
/// misspelled one, which ClickHouse ignores. Object-storage disks take the S3, Azure and
/// web keys alike (`type` object_storage names the kind in another element).
const DISK_COMMON: &[&str] =
    &["type", "object_storage_type", "metadata_type", "metadata_path", "skip_access_check", "readonly"];
const DISK_KEYS: &[(&str, &[&str])] = &[
    ("local", &["path", "keep_free_space_bytes", "keep_free_space_ratio"]),
    (
        "cache",
        &[
            "disk",
            "path",
            "max_size",
            "cache_on_write_operations",
            "max_file_segment_size",
            "cache_hits_threshold",
            "boundary_alignment",
            "background_download_threads",
            "background_download_queue_size_limit",
            "cache_policy",
            "slru_size_ratio",
            "enable_bypass_cache_with_threshold",
            "bypass_cache_threshold",
            "max_elements",
            "load_metadata_threads",
            "load_metadata_asynchronously",
            "enable_filesystem_query_cache_limit",
            "write_cache_per_user_id_directory",
            "max_size_ratio_to_total_space",
            "keep_free_space_size_ratio",
            "keep_free_space_elements_ratio",
            "keep_free_space_remove_batch",
            "allow_dynamic_cache_resize",
        ],
    ),
    ("encrypted", &["disk", "path", "key", "key_hex", "current_key_id", "algorithm"]),
    (
        "object",
        &[
            "endpoint",
            "access_key_id",
            "secret_access_key",
            "region",
            "use_environment_credentials",
            "use_insecure_imds_request",
            "expiration_window_seconds",
            "no_sign_request",
            "role_arn",
            "session_token",
            "server_side_encryption_customer_key_base64",
            "server_side_encryption_kms_key_id",
            "support_batch_delete",
            "connect_timeout_ms",
            "request_timeout_ms",
            "retry_attempts",
            "max_single_read_retries",
            "min_bytes_for_seek",
            "min_upload_part_size",
            "max_single_part_upload_size",
            "max_connections",
            "send_metadata",
            "thread_pool_size",
            "list_object_keys_size",
            "objects_chunk_size_to_delete",
            "header",
            "storage_account_url",
            "connection_string",
            "container_name",
            "account_name",
            "account_key",
            "container_already_exists",
            "max_single_download_retries",
            "endpoint_subpath",
        ],
    ),
];

/// Every disk, on every core: a config can declare thousands.
pub fn disks(disks: &[model::Disk], at: &(dyn Fn(Origin) -> Location + Sync)) -> Vec<ConfigDisk> {
    crate::parallel::on_every_core(disks, |d| ConfigDisk {
        name: d.name.clone(),
        kind: d.kind.clone(),
        settings: leaf_values(d.element),
        at: at(d.element.origin),
        misspelled: misspelled_elements(d, at),
    })
}

/// The disks with a misspelled element (rules look at these, not at every disk).
pub fn misspelled_disks(disks: &[model::Disk], at: &dyn Fn(Origin) -> Location) -> Vec<MisspelledDisk> {
    disks
        .iter()
        .filter_map(|d| {
            let misspelled = misspelled_elements(d, at);
            (!misspelled.is_empty()).then(|| MisspelledDisk {
                name: d.name.clone(),
                kind: d.kind.clone(),
                at: at(d.element.origin),
                misspelled,
            })
        })
        .collect()
}

/// Elements of a disk that are no element of its type but a typo of one (at most two
/// letters off); any other unknown name is left alone, it may be an option newer than this
/// list.
fn misspelled_elements(disk: &model::Disk, at: &dyn Fn(Origin) -> Location) -> Vec<MisspelledElement> {
    misspelled(disk)
        .map(|(e, suggestion)| MisspelledElement {
            name: e.name.to_string(),
            suggestion: suggestion.to_string(),
            value: e.value(),
            at: at(e.origin),
        })
        .collect()
}

/// Each misspelled element of a disk and the element of its type it is a typo of.
pub(crate) fn misspelled<'a>(disk: &model::Disk<'a>) -> impl Iterator<Item = (&'a Element, &'static str)> {
    let kind = match disk.kind.as_str() {
        "local" | "cache" | "encrypted" => disk.kind.as_str(),
        _ => "object",
    };
    let own = DISK_KEYS.iter().find(|(k, _)| *k == kind).map_or(&[][..], |(_, keys)| *keys);
    disk.element
        .elements()
        .filter(|e| !DISK_COMMON.contains(&e.name.as_str()) && !own.contains(&e.name.as_str()))
        .filter_map(move |e| {
            let typo_of = |known: &&&str| e.name.len() <= 256 && strsim::levenshtein(&e.name, known) <= 2;
            own.iter().chain(DISK_COMMON).find(typo_of).map(|known| (e, *known))
        })
}

/// The cache disks, as `disks` gives them (rules about caches iterate over these, not over
/// every disk).
pub fn cache_disks(disks: &[model::Disk], at: &dyn Fn(Origin) -> Location) -> Vec<CacheDisk> {
    disks
        .iter()
        .filter(|d| d.kind == "cache")
        .map(|d| CacheDisk {
            name: d.name.clone(),
            kind: d.kind.clone(),
            settings: leaf_values(d.element),
            at: at(d.element.origin),
        })
        .collect()
}

/// Every declared disk and the policies listing it (none: an empty list): `name in
/// config.disk_policies` and `config.disk_policies[name]` are lookups, not a scan of every
/// policy.
pub fn disk_policies(disks: &[model::Disk], policies: &[model::Policy]) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = disks.iter().map(|d| (d.name.clone(), Vec::new())).collect();
    for p in policies {
        for disk in p.volumes.iter().flat_map(|v| &v.disks) {
            let listed = out.entry(disk.clone()).or_default();
            if !listed.contains(&p.name) {
                listed.push(p.name.clone());
            }
        }
    }
    out
}

/// Every declared disk's type by its name: `name in config.declared_disks` is a lookup,
/// where a scan of config.disks for each disk a policy names costs policies x disks.
pub fn declared_disks(disks: &[model::Disk]) -> BTreeMap<String, String> {
    disks.iter().map(|d| (d.name.clone(), d.kind.clone())).collect()
}

/// Every storage policy, on every core.
pub fn policies(policies: &[model::Policy], at: &(dyn Fn(Origin) -> Location + Sync)) -> Vec<ConfigPolicy> {
    crate::parallel::on_every_core(policies, |p| ConfigPolicy {
        name: p.name.clone(),
        at: at(p.element.origin),
        disks: p.volumes.iter().flat_map(|v| v.disks.iter().cloned()).collect(),
        volumes: p
            .volumes
            .iter()
            .map(|v| Volume { name: v.name.clone(), disks: v.disks.clone(), at: at(v.element.origin) })
            .collect(),
    })
}

/// The clusters of `<remote_servers>`.
pub fn clusters(clusters: &[model::Cluster], at: &dyn Fn(Origin) -> Location) -> Vec<ConfigCluster> {
    clusters
        .iter()
        .map(|c| {
            // another server: a cluster of one host is this server (prefer_localhost_replica)
            let hosts: HashSet<&str> = c.shards.iter().flatten().map(|r| r.host.as_str()).collect();
            ConfigCluster {
                name: c.name.clone(),
                at: at(c.element.origin),
                shards: c
                    .shards
                    .iter()
                    .map(|s| s.iter().map(|r| Replica { host: r.host.clone(), port: r.port }).collect())
                    .collect(),
                // an empty secret is none (Cluster.cpp reads it as "", Connection.cpp sends the
                // user's credentials then): a from_env variable unset leaves it empty
                secret: c.element.child("secret").is_some_and(|s| !s.value().is_empty()),
                remote: hosts.len() > 1 && hosts.iter().any(|h| !is_loopback(h)),
            }
        })
        .collect()
}

fn is_loopback(host: &str) -> bool {
    matches!(host, "localhost" | "::1" | "[::1]") || host.starts_with("127.")
}

crate::fact_object!(ConfigDisk { name, kind = "type", settings, at, misspelled });
crate::fact_object!(MisspelledElement { name, suggestion, value, at });
crate::fact_object!(MisspelledDisk { name, kind = "type", at, misspelled });
crate::fact_object!(CacheDisk { name, kind = "type", settings, at });
crate::fact_object!(ConfigPolicy { name, at, disks, volumes });
crate::fact_object!(Volume { name, disks, at });
crate::fact_object!(ConfigCluster { name, at, shards, secret, remote });
crate::fact_object!(Replica { host, port });
