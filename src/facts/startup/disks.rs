//! What stops the server in <storage_configuration>: disk types, local paths, cache and
//! encrypted disks.

use super::*;

/// Disk types DiskFactory knows (registerDisks: local, encrypted, cache, and the object
/// storages registered by registerObjectStorages / registerDiskObjectStorage).
const DISK_TYPES: &[&str] = &[
    "local",
    "encrypted",
    "cache",
    "object_storage",
    "s3",
    "s3_plain",
    "s3_plain_rewritable",
    "azure_blob_storage",
    "azure",
    "hdfs",
    "web",
    "local_blob_storage",
    "memory",
];

/// Disk types read through an object storage (a cache disk may wrap only these, or
/// another cache disk: caches stack, as ClickHouse's own test configs do).
const OBJECT_DISK_TYPES: &[&str] = &[
    "object_storage",
    "s3",
    "s3_plain",
    "s3_plain_rewritable",
    "azure_blob_storage",
    "azure",
    "hdfs",
    "web",
    "local_blob_storage",
    "cache",
];

/// The storage configuration (DiskSelector, DiskFactory, the disk registrations).
pub(super) fn disk_problems(disks: &[model::Disk], out: &mut Vec<StartProblem>) {
    let kinds: HashMap<&str, &str> = disks.iter().map(|d| (d.name.as_str(), d.kind.as_str())).collect();
    let mut paths: HashMap<String, &str> = HashMap::with_capacity_and_hasher(disks.len(), Default::default());
    for (index, d) in disks.iter().enumerate() {
        let name = d.name.as_str();
        let kind = d.kind.as_str();
        if !DISK_TYPES.contains(&kind) {
            let reason = format!(
                "DiskFactory: the disk '{name}' has unknown disk type: {kind} (UNKNOWN_ELEMENT_IN_CONFIG, code 137)"
            );
            problem(
                out,
                StartCheck::DiskTypeUnknown,
                name,
                reason,
                d.element.child("type").map_or(d.element.origin, |t| t.value_origin()),
            );
            continue;
        }
        if kind == "local" {
            local_disk(d, &mut paths, out);
        }
        if is_s3(d) {
            match d.element.child("endpoint") {
                None => {
                    let reason =
                        format!("Not found: storage_configuration.disks.{name}.endpoint (Poco::NotFoundException)");
                    problem(out, StartCheck::ObjectDiskEndpointMissing, name, reason, d.element.origin);
                }
                Some(endpoint) if endpoint.value().ends_with("//") => {
                    let reason = format!("Invalid S3 key: '/' ({}) (BAD_ARGUMENTS, code 36)", endpoint.value());
                    problem(out, StartCheck::S3EndpointEmptyKey, name, reason, endpoint.value_origin());
                }
                Some(_) => {}
            }
        }
        if kind == "cache" {
            cache_disk(d, index, disks, &kinds, out);
        }
        if kind == "encrypted" {
            encrypted_disk(d, out);
        }
    }
}

fn is_s3(d: &model::Disk) -> bool {
    matches!(d.kind.as_str(), "s3" | "s3_plain" | "s3_plain_rewritable")
        || (d.kind == "object_storage" && d.setting("object_storage_type").is_some_and(|t| t == "s3"))
}

/// A local disk: it has a path (the default disk takes none), ending with `/`, no two disks
/// share a path (loadDiskLocalConfig, registerDiskLocal).
fn local_disk<'a>(d: &'a model::Disk, paths: &mut HashMap<String, &'a str>, out: &mut Vec<StartProblem>) {
    let name = d.name.as_str();
    let path = d.element.child("path");
    if name != "default" && path.is_none_or(|p| p.value().is_empty()) {
        let reason = format!("Disk path can not be empty. Disk {name} (UNKNOWN_ELEMENT_IN_CONFIG, code 137)");
        problem(out, StartCheck::DiskPathMissing, name, reason, path.map_or(d.element.origin, |p| p.origin));
        return;
    }
    let Some(path) = path else { return };
    let value = path.value();
    if name == "default" {
        let reason = "\"default\" disk path should be provided in <path> not it <storage_configuration> \
                      (UNKNOWN_ELEMENT_IN_CONFIG, code 137)"
            .to_string();
        problem(out, StartCheck::DefaultDiskPath, name, reason, path.origin);
        return;
    }
    if !value.ends_with('/') {
        let reason = format!("Disk path must end with /. Disk {name} (UNKNOWN_ELEMENT_IN_CONFIG, code 137)");
        problem(out, StartCheck::DiskPathWithoutSlash, name, reason, path.value_origin());
        return;
    }
    if let Some(first) = paths.get(&value) {
        let reason =
            format!("Disk {name} and disk {first} cannot have the same path ({value}) (BAD_ARGUMENTS, code 36)");
        problem(out, StartCheck::DisksSamePath, name, reason, path.value_origin());
    } else {
        paths.insert(value, name);
    }
}

/// A cache disk wraps an object-storage disk declared before it, takes only the cache's
/// settings, and has a path and a size (registerDiskCache, FileCacheSettings).
fn cache_disk(
    d: &model::Disk,
    index: usize,
    disks: &[model::Disk],
    kinds: &HashMap<&str, &str>,
    out: &mut Vec<StartProblem>,
) {
    let name = d.name.as_str();
    let reason = match d.element.child("disk") {
        None => Some((
            format!("Disk Cache requires `disk` field in config: disk {name} (BAD_ARGUMENTS, code 36)"),
            d.element.origin,
        )),
        Some(wrapped) => {
            let target = wrapped.value();
            let before = disks[..index].iter().any(|other| other.name == target);
            let reason = if !before {
                Some(format!(
                    "Cannot wrap disk `{target}` with cache layer `{name}`: there is no such disk (it should be \
                     initialized before cache disk) (BAD_ARGUMENTS, code 36)"
                ))
            } else if kinds.get(target.as_str()).is_some_and(|k| !OBJECT_DISK_TYPES.contains(k)) {
                Some(format!(
                    "Cannot wrap disk `{target}` with cache layer `{name}`: cached disk is allowed only on top of \
                     object storage (BAD_ARGUMENTS, code 36)"
                ))
            } else {
                None
            };
            reason.map(|r| (r, wrapped.value_origin()))
        }
    };
    if let Some((reason, at)) = reason {
        problem(out, StartCheck::CacheDiskTargetInvalid, name, reason, at);
    }
    // the cache's settings are read before its path and size are checked: an unknown one
    // stops the server first
    if let Some((element, known)) = super::super::config_storage::misspelled(d).next() {
        let reason = format!(
            "Unknown setting '{}' (UNKNOWN_SETTING, code 115): a cache disk takes no <{}> (did you mean <{known}>?)",
            element.name, element.name
        );
        problem(out, StartCheck::CacheDiskSettingUnknown, name, reason, element.origin);
        return;
    }
    if d.element.child("path").is_none() {
        let reason = format!(
            "`path` was not normalized to absolute: the cache disk {name} has no <path> (LOGICAL_ERROR, code 49)"
        );
        problem(out, StartCheck::DiskPathMissing, name, reason, d.element.origin);
    }
    if d.element.child("max_size").is_none() && d.element.child("max_size_ratio_to_total_space").is_none() {
        let reason = "Either `max_size` or `max_size_ratio_to_total_space` must be defined in cache configuration \
                      (BAD_ARGUMENTS, code 36)"
            .to_string();
        problem(out, StartCheck::CacheDiskWithoutSize, name, reason, d.element.origin);
    }
}

/// An encrypted disk has a key of the algorithm's size (DiskEncrypted's settings check):
/// 16, 24 or 32 bytes for AES_128_CTR (the default), AES_192_CTR, AES_256_CTR.
fn encrypted_disk(d: &model::Disk, out: &mut Vec<StartProblem>) {
    let name = d.name.as_str();
    let keys: Vec<&Element> =
        d.element.elements().filter(|e| e.name.starts_with("key") && e.name != "key_id").collect();
    if keys.is_empty() {
        let reason = format!("No encryption keys found: Disk {name} (BAD_ARGUMENTS, code 36)");
        problem(out, StartCheck::EncryptedDiskKeyInvalid, name, reason, d.element.origin);
        return;
    }
    // the algorithm's name in any case, as ClickHouse's own configs write it (aes_192_ctr)
    let size = match d.setting("algorithm").map(|a| a.trim().to_ascii_uppercase()).as_deref() {
        Some("AES_192_CTR") => 24,
        Some("AES_256_CTR") => 32,
        _ => 16,
    };
    for key in keys {
        // a hex key is read as bytes first; one from the environment cannot be judged here
        if key.attribute("from_env").is_some() || key.has_attribute("from_zk") {
            continue;
        }
        let bytes = if key.name.starts_with("key_hex") { key.value().len() / 2 } else { key.value().len() };
        if bytes != size {
            let reason = format!(
                "Got an encryption key with unexpected size {bytes}, the size should be {size}: Disk {name} \
                 (BAD_ARGUMENTS, code 36)"
            );
            let part = key.attribute("id").map_or_else(|| key.name.to_string(), |id| format!("{} {id}", key.name));
            problem_in(out, StartCheck::EncryptedDiskKeyInvalid, name, part, reason, key.value_origin());
        }
    }
}
