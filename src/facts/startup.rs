//! What stops clickhouse-server at start-up, read offline from the merged trees: each check
//! mirrors a throw on the server's start path (users config parsing, server settings, storage
//! configuration, listening sockets), and its reason carries the server's own message and
//! error code. docs/coverage.md lists each check with the function in ClickHouse's source.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::catalog;
use super::config::is_true;
use super::typed::Location;
use crate::config::{ConfigError, Element, LoadedConfig, Origin, model};

/// One way the config stops the server: which check, what it is about, the server's
/// reason, and the element to fix.
pub struct StartProblem {
    pub check: &'static str,
    pub subject: String,
    /// Which of the subject's elements, when several of them can each fail (an `<ip>`, a
    /// setting, a quota limit); empty otherwise.
    pub part: String,
    pub reason: String,
    pub at: Origin,
}

/// The authentication elements of a user (UsersConfigAccessStorage's parseUser): exactly one
/// may be given.
const AUTH_ELEMENTS: &[&str] = &[
    "password",
    "password_sha256_hex",
    "password_double_sha1_hex",
    "password_bcrypt_hash",
    "no_password",
    "ldap",
    "kerberos",
    "ssl_certificates",
    "ssh_keys",
    "http_authentication",
];

/// Elements of a user that `<grants>` excludes (parseUser: "Any other access control
/// settings can't be specified with `grants`").
const GRANTS_EXCLUDE: &[&str] = &[
    "allow_databases",
    "allow_dictionaries",
    "access_management",
    "named_collection_control",
    "show_named_collections",
    "show_named_collections_secrets",
];

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

/// Ports the server parses as integers at start.
const PORTS: &[&str] = &[
    "http_port",
    "https_port",
    "tcp_port",
    "tcp_port_secure",
    "interserver_http_port",
    "interserver_https_port",
    "mysql_port",
    "postgresql_port",
    "grpc_port",
    "prometheus_port",
];

/// Parameters a system log section cannot have beside its own `<engine>`
/// (SystemLog's getDefaultEngine / the engine check of each *_log section).
const LOG_ENGINE_EXCLUSIVE: &[(&str, &str)] = &[
    ("partition_by", "PARTITION BY"),
    ("ttl", "TTL"),
    ("order_by", "ORDER BY"),
    ("storage_policy", "STORAGE POLICY"),
    ("settings", "SETTINGS"),
];

/// Every way the loaded config stops the server; `disks` are its disks (`model::disks`).
pub fn problems(loaded: &LoadedConfig, disks: &[model::Disk]) -> Vec<StartProblem> {
    let mut out = Vec::new();
    let root = &loaded.server.root;
    users_source(loaded, &mut out);
    if let Some(users_root) = loaded.users_root() {
        let profiles = model::profiles(users_root);
        users(root, users_root, &profiles, &mut out);
        profile_problems(root, &profiles, &mut out);
        quotas(users_root, &mut out);
        default_profile(loaded, root, users_root, &profiles, &mut out);
    }
    server(root, &mut out);
    disk_problems(disks, &mut out);
    system_logs(root, &mut out);
    log_levels(root, &mut out);
    clusters(root, &mut out);
    out
}

fn problem(out: &mut Vec<StartProblem>, check: &'static str, subject: impl Into<String>, reason: String, at: Origin) {
    problem_in(out, check, subject, String::new(), reason, at);
}

/// A problem with one of a subject's several elements (`part`).
fn problem_in(
    out: &mut Vec<StartProblem>,
    check: &'static str,
    subject: impl Into<String>,
    part: String,
    reason: String,
    at: Origin,
) {
    out.push(StartProblem { check, subject: subject.into(), part, reason, at });
}

/// users_config or user_directories/users_xml/path naming a file that does not exist
/// (AccessControl::addUsersConfigStorage reads it at start).
fn users_source(loaded: &LoadedConfig, out: &mut Vec<StartProblem>) {
    let root = &loaded.server.root;
    let named = match root.child("user_directories") {
        Some(dirs) => dirs.find("users_xml/path"),
        None => root.child("users_config"),
    };
    let missing = loaded.problems.iter().any(|p| matches!(p, ConfigError::UsersConfigMissing { .. }));
    if let (Some(element), true) = (named, missing) {
        let reason = format!(
            "Configuration file {} doesn't exist and there is no embedded config (FILE_DOESNT_EXIST, code 107, \
             while setting up access control)",
            element.value()
        );
        problem(out, "users-config-missing", element.value(), reason, element.value_origin());
    }
}

/// Where the server was when it threw: `while parsing user 'u' in users configuration file`,
/// written only into a problem's reason (2,000 users need none).
struct Parsing<'a>(&'static str, &'a str);

impl std::fmt::Display for Parsing<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "while parsing {} '{}' in users configuration file", self.0, self.1)
    }
}

/// The users of the users tree: profile, networks, authentication, grants.
fn users(server: &Element, users_root: &Element, profiles: &[model::Profile], out: &mut Vec<StartProblem>) {
    let Some(users) = users_root.child("users") else { return };
    let profile_names: HashSet<&str> = profiles.iter().map(|p| p.name.as_str()).collect();
    let allows = |name: &str| server.child(name).is_none_or(|e| is_true(&e.value()));
    for user in users.elements() {
        let name = user.name.as_str();
        let parsing = Parsing("user", name);
        if let Some(profile) = user.child("profile")
            && !profile_names.contains(profile.value().as_str())
        {
            let reason =
                format!("Profile {} was not found: {parsing} (THERE_IS_NO_PROFILE, code 180)", profile.value());
            problem(out, "user-profile-missing", name, reason, profile.value_origin());
        }
        if let Some(networks) = user.child("networks") {
            for ip in networks.children_named("ip") {
                if !is_subnet(&ip.value()) {
                    let reason = format!(
                        "Invalid address: {} in <networks><ip> of user '{name}' (CANNOT_LOAD_CONFIG, code 347)",
                        ip.value()
                    );
                    problem_in(out, "network-ip-invalid", name, ip.value(), reason, ip.value_origin());
                }
            }
        }
        let given: Vec<&Element> = AUTH_ELEMENTS.iter().filter_map(|tag| user.child(tag)).collect();
        match given.as_slice() {
            [] if !allows("allow_implicit_no_password") => {
                let reason = format!(
                    "Either 'password' or 'password_sha256_hex' or ... must be specified for user {name} \
                     (allow_implicit_no_password is 0): {parsing} (BAD_ARGUMENTS, code 36)"
                );
                problem(out, "user-auth-not-allowed", name, reason, user.origin);
            }
            [_, second, ..] => {
                let reason = format!(
                    "More than one field of 'password', 'password_sha256_hex', ..., 'no_password' are used to \
                     specify authentication info for user {name}: <{}> beside <{}> (BAD_ARGUMENTS, code 36)",
                    second.name, given[0].name
                );
                problem(out, "user-auth-ambiguous", name, reason, second.origin);
            }
            [auth] => {
                auth_element(name, auth, &parsing, &allows, out);
            }
            [] => {}
        }
        if let Some(grants) = user.child("grants")
            && let Some(other) = GRANTS_EXCLUDE.iter().find_map(|tag| user.child(tag))
        {
            let reason = format!(
                "Any other access control settings can't be specified with `grants` (user '{name}' has <{}>): \
                 {parsing} (BAD_ARGUMENTS, code 36)",
                other.name
            );
            problem(out, "user-grants-with-other-access", name, reason, grants.origin);
        }
    }
}

/// One authentication element: its hash readable, its type allowed by the server.
fn auth_element(
    user: &str,
    auth: &Element,
    parsing: &Parsing,
    allows: &dyn Fn(&str) -> bool,
    out: &mut Vec<StartProblem>,
) {
    let hex_len = match auth.name.as_str() {
        "password_sha256_hex" => Some(64),
        "password_double_sha1_hex" => Some(40),
        _ => None,
    };
    let value = auth.value();
    if let Some(len) = hex_len
        && (value.len() != len || !value.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        let message = if value.bytes().all(|b| b.is_ascii_hexdigit()) && value.len().is_multiple_of(2) {
            format!("Password hash has length {} but must be exactly {} bytes", value.len() / 2, len / 2)
        } else {
            "Cannot read password hash in hex, check for valid characters [0-9a-fA-F] and length".to_string()
        };
        let reason = format!(
            "{message} (<{}> of user '{user}' is {len} hex digits): {parsing} (BAD_ARGUMENTS, code 36)",
            auth.name
        );
        problem(out, "user-password-hash-invalid", user, reason, auth.value_origin());
    }
    let refused = match auth.name.as_str() {
        "password" if !value.is_empty() && !allows("allow_plaintext_password") => {
            Some(("PLAINTEXT_PASSWORD", "allow_plaintext_password"))
        }
        "password" if value.is_empty() && !allows("allow_no_password") => Some(("NO_PASSWORD", "allow_no_password")),
        "no_password" if !allows("allow_no_password") => Some(("NO_PASSWORD", "allow_no_password")),
        _ => None,
    };
    if let Some((kind, setting)) = refused {
        let reason = format!(
            "Authentication type {kind} is not allowed, check the setting {setting} in the server configuration: \
             {parsing} (BAD_ARGUMENTS, code 36)"
        );
        problem(out, "user-auth-not-allowed", user, reason, auth.origin);
    }
}

/// Settings profiles: parents that exist, settings and constraints the server knows, values
/// it can parse (UsersConfigAccessStorage's parseSettingsProfile).
fn profile_problems(server: &Element, profiles: &[model::Profile], out: &mut Vec<StartProblem>) {
    let prefixes = server.child("custom_settings_prefixes").map_or("custom_".to_string(), Element::value);
    let custom = |name: &str| prefixes.split(',').map(str::trim).any(|p| !p.is_empty() && name.starts_with(p));
    let names: HashSet<&str> = profiles.iter().map(|p| p.name.as_str()).collect();
    let catalog = catalog::builtin();
    for p in profiles {
        let parsing = Parsing("profile", &p.name);
        for parent in p.element.children_named("profile") {
            if !names.contains(parent.value().as_str()) {
                let reason = format!(
                    "Parent profile '{}' was not found: {parsing} (THERE_IS_NO_PROFILE, code 180)",
                    parent.value()
                );
                problem_in(out, "profile-parent-missing", &p.name, parent.value(), reason, parent.value_origin());
            }
        }
        for s in &p.settings {
            let kind = catalog.session.get(s.name.as_str()).and_then(|setting| setting.kind);
            if let Some(kind) = kind
                && !parses_as(kind, &s.value())
            {
                let reason = format!(
                    "Cannot parse input: while parsing value '{}' for setting '{}' ({kind}): {parsing} \
                     (CANNOT_PARSE_INPUT_ASSERTION_FAILED, code 27)",
                    s.value(),
                    s.name
                );
                problem_in(out, "profile-setting-unparsable", &p.name, s.name.to_string(), reason, s.value_origin());
            }
        }
        for constrained in p.element.children_named("constraints").flat_map(Element::elements) {
            if !catalog.is_session(&constrained.name) && !custom(&constrained.name) {
                let reason = format!(
                    "Unknown setting '{}' (a constraint): {parsing} (UNKNOWN_SETTING, code 115)",
                    constrained.name
                );
                let part = constrained.name.to_string();
                problem_in(out, "profile-constraint-unknown-setting", &p.name, part, reason, constrained.origin);
            }
        }
    }
}

/// Quota intervals: `<duration>` is an integer number of seconds (parseQuota).
/// The limits of a quota interval (QuotaTypeInfo's names): execution_time is seconds as a
/// number, the others whole counts (parseQuota reads each with the type's stringToValue).
const QUOTA_LIMITS: &[&str] = &[
    "queries",
    "query_selects",
    "query_inserts",
    "errors",
    "result_rows",
    "result_bytes",
    "read_rows",
    "read_bytes",
    "execution_time",
    "written_bytes",
    "failed_sequential_authentications",
];

fn quotas(users_root: &Element, out: &mut Vec<StartProblem>) {
    let Some(quotas) = users_root.child("quotas") else { return };
    for quota in quotas.elements() {
        // intervals are told apart by their order (each is usually `<interval>`)
        for (number, interval) in quota.elements().filter(|i| i.name.starts_with("interval")).enumerate() {
            for limit in interval.elements().filter(|l| QUOTA_LIMITS.contains(&l.name.as_str())) {
                let value = limit.value();
                let value = value.trim();
                let parses = if limit.name == "execution_time" {
                    value.parse::<f64>().is_ok_and(f64::is_finite)
                } else {
                    value.parse::<u64>().is_ok()
                };
                if !parses {
                    let reason = format!(
                        "Cannot parse input: <{}>{value}</{}> of quota '{}' is not a number (CANNOT_PARSE, code 27, \
                         while parsing quota '{}' in users configuration file)",
                        limit.name, limit.name, quota.name, quota.name
                    );
                    let part = format!("interval {}/{}", number + 1, limit.name);
                    problem_in(out, "quota-limit-unparsable", quota.name.as_str(), part, reason, limit.value_origin());
                }
            }
        }
        let intervals = quota.elements().filter(|i| i.name.starts_with("interval"));
        for (number, duration) in intervals.enumerate().filter_map(|(n, i)| Some((n, i.child("duration")?))) {
            if duration.value().parse::<i64>().is_err() {
                let reason = format!(
                    "Syntax error: Not a valid integer: '{}' (<duration> of quota '{}') (CANNOT_LOAD_CONFIG, code 347)",
                    duration.value(),
                    quota.name
                );
                let (part, at) = (format!("interval {}", number + 1), duration.value_origin());
                problem_in(out, "quota-duration-invalid", quota.name.as_str(), part, reason, at);
            }
        }
    }
}

/// The default profile (`<default_profile>`, else `default`) must exist in the users tree the
/// server reads (SettingsProfilesCache::setDefaultProfileName). Users read from the main
/// config while a users.xml lies beside it is its own check: the cause is elsewhere.
fn default_profile(
    loaded: &LoadedConfig,
    root: &Element,
    users_root: &Element,
    profiles: &[model::Profile],
    out: &mut Vec<StartProblem>,
) {
    let written = root.child("default_profile");
    let name = written.map_or("default".to_string(), Element::value);
    if profiles.iter().any(|p| p.name == name) {
        return;
    }
    let reason = format!("Settings profile `{name}` not found (THERE_IS_NO_PROFILE, code 180)");
    match (&loaded.unread_users_file, written) {
        (Some(beside), _) if loaded.users_in_main => {
            let file = beside.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
            let reason = format!(
                "{reason}: with neither <users_config> nor <user_directories> the server reads users from the \
                 main config itself, not from the {file} beside it"
            );
            problem(out, "users-read-from-main-config", file, reason, root.origin);
        }
        (_, Some(element)) => problem(out, "default-profile-missing", name, reason, element.value_origin()),
        (_, None) => problem(out, "default-profile-missing", name, reason, users_root.origin),
    }
}

/// Server settings, MergeTree settings, ports, interserver and listen hosts (Server::main).
fn server(root: &Element, out: &mut Vec<StartProblem>) {
    let catalog = catalog::builtin();
    for e in root.elements().filter(|e| !e.has_element_children()) {
        if let Some(kind) = catalog.server.get(e.name.as_str()).and_then(|s| s.kind)
            && !PORTS.contains(&e.name.as_str())
            && !parses_as(kind, &e.value())
        {
            let reason = format!(
                "Cannot parse input: while parsing setting '{}' value '{}' ({kind}) \
                 (CANNOT_PARSE_INPUT_ASSERTION_FAILED, code 27)",
                e.name,
                e.value()
            );
            problem(out, "server-setting-unparsable", e.name.as_str(), reason, e.value_origin());
        }
    }
    for merge_tree in root.children_named("merge_tree") {
        for s in merge_tree.elements() {
            match catalog.merge_tree.get(s.name.as_str()) {
                None => {
                    let reason =
                        format!("Unknown setting '{}': in MergeTree config (UNKNOWN_SETTING, code 115)", s.name);
                    problem(out, "merge-tree-unknown-setting", s.name.as_str(), reason, s.origin);
                }
                Some(setting) => {
                    let kind = setting.kind.unwrap_or_default();
                    if !parses_as(kind, &s.value()) {
                        let reason = format!(
                            "Cannot parse input: value '{}' of MergeTree setting '{}' ({kind}) \
                             (CANNOT_PARSE_INPUT_ASSERTION_FAILED, code 27)",
                            s.value(),
                            s.name
                        );
                        problem(out, "merge-tree-setting-unparsable", s.name.as_str(), reason, s.value_origin());
                    }
                }
            }
        }
    }
    for port in PORTS.iter().filter_map(|p| root.child(p)) {
        let value = port.value();
        let reason = match value.parse::<i64>() {
            Err(_) => format!("Syntax error: Not a valid integer: '{value}' (<{}>)", port.name),
            Ok(n) if !(0..=65535).contains(&n) => {
                format!("Out of range '{}': {value} (ARGUMENT_OUT_OF_BOUND, code 69)", port.name)
            }
            Ok(_) => continue,
        };
        problem(out, "port-invalid", port.name.as_str(), reason, port.value_origin());
    }
    if let (Some(_), Some(https)) = (root.child("interserver_http_port"), root.child("interserver_https_port")) {
        let reason =
            "Both http and https interserver ports are specified (EXCESSIVE_ELEMENT_IN_CONFIG, code 138)".to_string();
        problem(out, "interserver-both-ports", "interserver_https_port", reason, https.origin);
    }
    listen_hosts(root, out);
}

/// Listen hosts: a wildcard bound beside an address it covers fails the second bind
/// (Address already in use) unless listen_try or listen_reuse_port; a dotted quad that is no
/// IPv4 address fails to resolve.
fn listen_hosts(root: &Element, out: &mut Vec<StartProblem>) {
    let hosts: Vec<&Element> = root.children_named("listen_host").collect();
    for h in &hosts {
        let v = h.value();
        if v.bytes().all(|b| b.is_ascii_digit() || b == b'.') && v.contains('.') && v.parse::<Ipv4Addr>().is_err() {
            let reason = format!("Listen [{v}] failed: DNS error while resolving: {v} (NETWORK_ERROR, code 210)");
            problem(out, "listen-host-invalid", v, reason, h.value_origin());
        }
    }
    let tolerant =
        ["listen_try", "listen_reuse_port"].iter().any(|s| root.child(s).is_some_and(|e| is_true(&e.value())));
    if tolerant {
        return;
    }
    // `::` binds IPv4 too (dual stack): it covers every other host; 0.0.0.0 covers IPv4 ones
    let covers = |wildcard: &str, other: &str| match wildcard {
        "::" => true,
        "0.0.0.0" => other.parse::<Ipv4Addr>().is_ok(),
        _ => false,
    };
    for (i, wildcard) in hosts.iter().enumerate() {
        for (j, other) in hosts.iter().enumerate() {
            let (w, o) = (wildcard.value(), other.value());
            if i != j && w != o && covers(&w, &o) {
                let (first, second) = if i < j { (&w, *other) } else { (&o, *wildcard) };
                let second_value = second.value();
                let reason = format!(
                    "Listen [{second_value}] failed: Address already in use (NETWORK_ERROR, code 210): \
                     listen_host {first} already binds it, and neither listen_try nor listen_reuse_port is set"
                );
                problem(out, "listen-host-overlap", second_value, reason, second.value_origin());
                return;
            }
        }
    }
}

/// The storage configuration (DiskSelector, DiskFactory, the disk registrations).
fn disk_problems(disks: &[model::Disk], out: &mut Vec<StartProblem>) {
    let kinds: HashMap<&str, &str> = disks.iter().map(|d| (d.name.as_str(), d.kind.as_str())).collect();
    let mut paths: HashMap<String, &str> = HashMap::with_capacity(disks.len());
    for (index, d) in disks.iter().enumerate() {
        let name = d.name.as_str();
        let kind = d.kind.as_str();
        if !DISK_TYPES.contains(&kind) {
            let reason = format!(
                "DiskFactory: the disk '{name}' has unknown disk type: {kind} (UNKNOWN_ELEMENT_IN_CONFIG, code 137)"
            );
            problem(
                out,
                "disk-type-unknown",
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
                    problem(out, "object-disk-endpoint-missing", name, reason, d.element.origin);
                }
                Some(endpoint) if endpoint.value().ends_with("//") => {
                    let reason = format!("Invalid S3 key: '/' ({}) (BAD_ARGUMENTS, code 36)", endpoint.value());
                    problem(out, "s3-endpoint-empty-key", name, reason, endpoint.value_origin());
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

/// A local disk: its path ends with `/`, the default disk takes none, no two disks share a
/// path (loadDiskLocalConfig, registerDiskLocal).
fn local_disk<'a>(d: &'a model::Disk, paths: &mut HashMap<String, &'a str>, out: &mut Vec<StartProblem>) {
    let name = d.name.as_str();
    let Some(path) = d.element.child("path") else { return };
    let value = path.value();
    if name == "default" {
        let reason = "\"default\" disk path should be provided in <path> not it <storage_configuration> \
                      (UNKNOWN_ELEMENT_IN_CONFIG, code 137)"
            .to_string();
        problem(out, "default-disk-path", name, reason, path.origin);
        return;
    }
    if !value.ends_with('/') {
        let reason = format!("Disk path must end with /. Disk {name} (UNKNOWN_ELEMENT_IN_CONFIG, code 137)");
        problem(out, "disk-path-without-slash", name, reason, path.value_origin());
        return;
    }
    if let Some(first) = paths.get(&value) {
        let reason =
            format!("Disk {name} and disk {first} cannot have the same path ({value}) (BAD_ARGUMENTS, code 36)");
        problem(out, "disks-same-path", name, reason, path.value_origin());
    } else {
        paths.insert(value, name);
    }
}

/// A cache disk wraps an object-storage disk declared before it, and has a size
/// (registerDiskCache).
fn cache_disk(
    d: &model::Disk,
    index: usize,
    disks: &[model::Disk],
    kinds: &HashMap<&str, &str>,
    out: &mut Vec<StartProblem>,
) {
    let name = d.name.as_str();
    if let Some(wrapped) = d.element.child("disk") {
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
        if let Some(reason) = reason {
            problem(out, "cache-disk-target-invalid", name, reason, wrapped.value_origin());
        }
    }
    if d.element.child("max_size").is_none() && d.element.child("max_size_ratio_to_total_space").is_none() {
        let reason = "Either `max_size` or `max_size_ratio_to_total_space` must be defined in cache configuration \
                      (BAD_ARGUMENTS, code 36)"
            .to_string();
        problem(out, "cache-disk-without-size", name, reason, d.element.origin);
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
        problem(out, "encrypted-disk-key-invalid", name, reason, d.element.origin);
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
            problem_in(out, "encrypted-disk-key-invalid", name, part, reason, key.value_origin());
        }
    }
}

/// A system log section with its own `<engine>` takes no engine parameters beside it.
fn system_logs(root: &Element, out: &mut Vec<StartProblem>) {
    for log in root.elements().filter(|e| e.name.ends_with("_log") && e.child("engine").is_some()) {
        if let Some((tag, clause)) = LOG_ENGINE_EXCLUSIVE.iter().find(|(tag, _)| log.child(tag).is_some()) {
            let reason = format!(
                "If 'engine' is specified for system table, {clause} parameters should be specified directly \
                 inside 'engine' and '{tag}' setting doesn't make sense (BAD_ARGUMENTS, code 36)"
            );
            problem(
                out,
                "system-log-engine-with-parameters",
                log.name.as_str(),
                reason,
                log.child(tag).map_or(log.origin, |e| e.origin),
            );
        }
    }
}

/// The log levels Poco's Logger::parseLevel reads (any case), or a number from 1 to 9.
const LOG_LEVELS: &[&str] =
    &["none", "fatal", "critical", "error", "warning", "notice", "information", "debug", "trace", "test"];

/// `<logger><level>` and `<text_log><level>` name a log level (Poco's Logger::parseLevel:
/// the server stops on anything else, an empty level included).
fn log_levels(root: &Element, out: &mut Vec<StartProblem>) {
    for section in ["logger", "text_log"] {
        let Some(level) = root.child(section).and_then(|s| s.child("level")) else { continue };
        let value = level.value();
        let value = value.trim();
        let known = LOG_LEVELS.iter().any(|l| l.eq_ignore_ascii_case(value))
            || value.parse::<u8>().is_ok_and(|n| (1..=9).contains(&n));
        if !known {
            let shown = if value.is_empty() { "(empty)".to_string() } else { value.to_string() };
            let reason = format!(
                "Invalid argument: Not a valid log level: <{section}><level> is {shown}; it takes none, fatal, \
                 critical, error, warning, notice, information, debug, trace or test"
            );
            problem(out, "log-level-invalid", section, reason, level.origin);
        }
    }
}

/// Every replica of a cluster has a `<host>` (Cluster's constructor reads it with getString).
fn clusters(root: &Element, out: &mut Vec<StartProblem>) {
    for cluster in model::clusters(root) {
        for (shard_number, shard) in cluster.shards.iter().enumerate() {
            for (number, replica) in shard.iter().enumerate().filter(|(_, r)| r.element.child("host").is_none()) {
                let reason = format!(
                    "Not found: remote_servers.{}...{}.host (CANNOT_LOAD_CONFIG, code 347)",
                    cluster.name, replica.element.name
                );
                let part = format!("shard {}/replica {}", shard_number + 1, number + 1);
                let at = replica.element.origin;
                problem_in(out, "cluster-replica-without-host", cluster.name.as_str(), part, reason, at);
            }
        }
    }
}

/// An address or subnet as AllowedClientHosts reads `<ip>`: `addr`, `addr/prefix` or
/// `addr/mask`.
fn is_subnet(value: &str) -> bool {
    let (addr, suffix) = match value.split_once('/') {
        Some((a, s)) => (a, Some(s)),
        None => (value, None),
    };
    let Ok(addr) = addr.parse::<IpAddr>() else { return false };
    let bits = if addr.is_ipv4() { 32 } else { 128 };
    match suffix {
        None => true,
        Some(s) => s.parse::<u32>().map_or_else(|_| s.parse::<IpAddr>().is_ok(), |n| n <= bits),
    }
}

/// Whether ClickHouse parses `value` as a setting of type `kind`. Only what is certainly
/// refused is flagged: a number type given no digit at all, a Bool that is no boolean word.
fn parses_as(kind: &str, value: &str) -> bool {
    let v = value.trim().to_ascii_lowercase();
    let numeric = ["UInt", "Int", "Float", "Seconds", "Milliseconds", "NonZeroUInt", "MaxThreads", "Double"]
        .iter()
        .any(|prefix| kind.starts_with(prefix));
    if kind == "Bool" {
        return matches!(v.as_str(), "0" | "1" | "true" | "false" | "yes" | "no" | "on" | "off" | "enable" | "disable");
    }
    if numeric {
        return v.bytes().any(|b| b.is_ascii_digit()) || matches!(v.as_str(), "auto" | "inf" | "-inf" | "nan" | "");
    }
    true
}

/// A start-up problem as the rules read it (`config.start_problems`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StartProblemFact {
    /// which check (the rule under rules/startup/ of that name)
    pub check: String,
    /// the user, profile, disk, setting or file it is about
    pub subject: String,
    /// which of the subject's elements, when several can each fail (an <ip>, a setting, a quota interval's limit, a replica); empty otherwise
    pub part: String,
    /// the server's error message and code
    pub reason: String,
    /// the element to fix
    pub at: Location,
}

crate::fact_object!(StartProblemFact { check, subject, part, reason, at });

/// The facts of the problems, each located by `at`.
pub fn facts(loaded: &LoadedConfig, disks: &[model::Disk], at: impl Fn(Origin) -> Location) -> Vec<StartProblemFact> {
    problems(loaded, disks)
        .into_iter()
        .map(|p| StartProblemFact {
            check: p.check.to_string(),
            subject: p.subject,
            part: p.part,
            reason: p.reason,
            at: at(p.at),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subnets_read_as_the_server_reads_them() {
        for ok in ["::1", "127.0.0.1", "10.0.0.0/8", "::/0", "192.168.0.0/255.255.0.0", "2001:db8::/32"] {
            assert!(is_subnet(ok), "{ok}");
        }
        for bad in ["localhost", "10.0.0.0/33", "::/129", "300.1.1.1", "10.0.0.0/x", ""] {
            assert!(!is_subnet(bad), "{bad}");
        }
    }

    #[test]
    fn only_values_certainly_refused_are_unparsable() {
        assert!(parses_as("UInt64", "10G"));
        assert!(parses_as("MaxThreads", "auto"));
        assert!(parses_as("Float", "0.9"));
        assert!(!parses_as("UInt64", "many"));
        assert!(!parses_as("Bool", "maybe"));
        assert!(parses_as("String", "anything"));
    }
}
