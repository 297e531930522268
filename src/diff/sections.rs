//! How each section reads a side: the items it compares (server settings, MergeTree
//! settings, profiles, users and their settings, grants, roles, quotas, disks, policies,
//! clusters, the version), each value as shown, secrets masked.

use super::*;

/// A value as shown: a secret's masked, control characters written out, bounded.
pub(super) fn item(name: &str, value: &str, at: Option<&Value>) -> Value1 {
    let shown = if crate::mask::is_secret_name(name) && !value.is_empty() {
        crate::mask::MASK.to_string()
    } else {
        crate::mask::shown(value)
    };
    Value1 {
        value: shown,
        at: at.and_then(Value::as_str).map(str::to_string),
        default: false,
        compared: value.to_string(),
    }
}

/// A value as the diff shows it: a count read as a double (`9000.0`) as the count it is.
pub(super) fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        Value::Number(n) => match n.as_f64().and_then(crate::facts::whole) {
            Some(whole) if n.is_f64() => whole.to_string(),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

pub(super) fn list(v: Option<&Value>) -> impl Iterator<Item = &Value> {
    v.and_then(Value::as_array).into_iter().flatten()
}

pub(super) fn server_settings(s: &State, other: Option<&State>) -> Option<Items> {
    if let Some(config) = &s.config {
        let values = keys::config::SERVER.json(config)?.as_object()?;
        let at = keys::config::SERVER_AT.json(config).and_then(Value::as_object);
        // an empty root element is a section, not a setting: config elements compares it
        let mut items: Items = values
            .iter()
            .filter(|(_, v)| other.is_some() || !text(v).trim().is_empty())
            .map(|(k, v)| (k.clone(), item(k, &text(v), at.and_then(|a| a.get(k)))))
            .collect();
        // against a server: the settings the server has, a setting the config leaves alone at
        // the server's default
        if let Some(live) = other.and_then(|o| o.live.as_ref()) {
            let rows = keys::live::SERVER_SETTINGS.json(live)?.as_object()?;
            items.retain(|k, _| rows.contains_key(k));
            for (name, row) in rows {
                let changed = row.get("changed").and_then(Value::as_bool).unwrap_or(false);
                if changed && !items.contains_key(name) {
                    let default = text(row.get("default").unwrap_or(&Value::Null));
                    let mut value = item(name, &default, None);
                    value.default = true;
                    items.insert(name.clone(), value);
                }
            }
        }
        return Some(items);
    }
    let rows = keys::live::SERVER_SETTINGS.json(s.live.as_ref()?)?.as_object()?;
    let config_names: Option<BTreeSet<&String>> = other
        .and_then(|o| o.config.as_ref())
        .and_then(|c| keys::config::SERVER.json(c)?.as_object())
        .map(|m| m.keys().collect());
    Some(
        rows.iter()
            .filter(|(name, row)| {
                row.get("changed").and_then(Value::as_bool).unwrap_or(false)
                    || config_names.as_ref().is_some_and(|n| n.contains(name))
            })
            .map(|(name, row)| (name.clone(), item(name, &text(row.get("value").unwrap_or(&Value::Null)), None)))
            .collect(),
    )
}

pub(super) fn merge_tree_settings(s: &State, _: Option<&State>) -> Option<Items> {
    if let Some(config) = &s.config {
        let values = keys::config::MERGE_TREE.json(config)?.as_object()?;
        let at = keys::config::MERGE_TREE_AT.json(config).and_then(Value::as_object);
        return Some(values.iter().map(|(k, v)| (k.clone(), item(k, &text(v), at.and_then(|a| a.get(k))))).collect());
    }
    let rows = keys::live::MERGE_TREE_SETTINGS.json(s.live.as_ref()?)?.as_object()?;
    Some(
        rows.iter()
            .filter(|(_, row)| row.get("changed").and_then(Value::as_bool).unwrap_or(true))
            .map(|(name, row)| (name.clone(), item(name, &text(row.get("value").unwrap_or(&Value::Null)), None)))
            .collect(),
    )
}

/// `profile/setting` -> the value the profile itself sets.
pub(super) fn profiles(s: &State, _: Option<&State>) -> Option<Items> {
    if let Some(config) = &s.config {
        let mut items = Items::new();
        for profile in list(keys::config::PROFILES.json(config)) {
            let name = text(profile.get("name")?);
            let at = profile.get("settings_at").and_then(Value::as_object);
            for (setting, value) in profile.get("settings").and_then(Value::as_object).into_iter().flatten() {
                items.insert(format!("{name}/{setting}"), item(setting, &text(value), at.and_then(|a| a.get(setting))));
            }
        }
        return Some(items);
    }
    let live = s.live.as_ref()?;
    keys::live::PROFILE_SETTINGS.json(live)?;
    let mut items = Items::new();
    for row in list(keys::live::PROFILE_SETTINGS.json(live)) {
        let (profile, setting) = (text(row.get("profile_name")?), text(row.get("setting_name")?));
        items.insert(format!("{profile}/{setting}"), item(&setting, &text(row.get("value")?), None));
    }
    Some(items)
}

/// `user/setting` -> the value in effect for the user's sessions.
pub(super) fn user_settings(s: &State, _: Option<&State>) -> Option<Items> {
    let mut items = Items::new();
    if let Some(config) = &s.config {
        keys::config::USERS.json(config)?;
        // where each setting got its value: through the user's profile, else the default profile
        let effective_at = |profile: &str| {
            list(keys::config::PROFILES.json(config))
                .find(|p| p.get("name").and_then(Value::as_str) == Some(profile))
                .and_then(|p| p.get("effective_at"))
                .and_then(Value::as_object)
        };
        let default_profile = keys::config::DEFAULT_PROFILE.json(config).and_then(Value::as_str).unwrap_or("default");
        for user in list(keys::config::USERS.json(config)) {
            let name = text(user.get("name")?);
            let own = effective_at(user.get("profile").and_then(Value::as_str).unwrap_or(default_profile));
            let default = effective_at(default_profile);
            for (setting, value) in user.get("settings").and_then(Value::as_object).into_iter().flatten() {
                let at = own.and_then(|a| a.get(setting)).or_else(|| default.and_then(|a| a.get(setting)));
                items.insert(format!("{name}/{setting}"), item(setting, &text(value), at));
            }
        }
        return Some(items);
    }
    let live = s.live.as_ref()?;
    keys::live::USER_SETTINGS.json(live)?;
    for user in list(keys::live::USER_SETTINGS.json(live)) {
        let name = text(user.get("user")?);
        for (setting, value) in user.get("settings").and_then(Value::as_object).into_iter().flatten() {
            items.insert(format!("{name}/{setting}"), item(setting, &text(value), None));
        }
    }
    Some(items)
}

/// How a config's authentication reads in system.users.
pub(super) fn auth_name(config: &str) -> &str {
    match config {
        "plaintext" => "plaintext_password",
        "sha256" => "sha256_password",
        "double_sha1" => "double_sha1_password",
        "bcrypt" => "bcrypt_password",
        "none" | "implicit_none" => "no_password",
        "ssl_certificates" => "ssl_certificate",
        "ssh_keys" => "ssh_key",
        other => other,
    }
}

/// A network as system.users shows it: the loopback addresses are `localhost`.
pub(super) fn network(kind: &str, value: &str) -> String {
    match (kind, value) {
        ("ip", "127.0.0.1" | "::1" | "127.0.0.1/32" | "::1/128") | ("host", "localhost") => "localhost".into(),
        ("ip", "0.0.0.0/0") => "ip ::/0".into(),
        _ => format!("{kind} {value}"),
    }
}

/// `user.auth`, `user.networks`, `user.profile`.
pub(super) fn users(s: &State, _: Option<&State>) -> Option<Items> {
    let mut items = Items::new();
    if let Some(config) = &s.config {
        keys::config::USERS.json(config)?;
        for user in list(keys::config::USERS.json(config)) {
            let name = text(user.get("name")?);
            let auth = auth_name(&text(user.get("auth").unwrap_or(&Value::Null))).to_string();
            items.insert(format!("{name}.auth"), item("auth", &auth, user.get("auth_at")));
            let networks = user.get("networks");
            let mut nets: BTreeSet<String> = BTreeSet::new();
            for (kind, field) in [("ip", "ip"), ("host", "host"), ("regexp", "host_regexp")] {
                for v in list(networks.and_then(|n| n.get(field))) {
                    nets.insert(network(kind, &text(v)));
                }
            }
            if nets.is_empty() {
                nets.insert("ip ::/0".into());
            }
            let nets = nets.into_iter().collect::<Vec<_>>().join(", ");
            items.insert(format!("{name}.networks"), item("networks", &nets, user.get("networks_at")));
            let profile = text(user.get("profile").unwrap_or(&Value::Null));
            items.insert(format!("{name}.profile"), item("profile", &profile, user.get("at")));
        }
        return Some(items);
    }
    let live = s.live.as_ref()?;
    keys::live::USERS.json(live)?;
    for user in list(keys::live::USERS.json(live)) {
        let name = text(user.get("name")?);
        let auth = text(user.get("auth_type").unwrap_or(&Value::Null));
        let auth = auth.trim_matches(['[', ']']).split(',').map(|a| a.trim().trim_matches('\'')).collect::<Vec<_>>();
        items.insert(format!("{name}.auth"), item("auth", &auth.join(", "), None));
        let mut nets: BTreeSet<String> = BTreeSet::new();
        for (kind, field) in
            [("ip", "host_ip"), ("host", "host_names"), ("regexp", "host_names_regexp"), ("like", "host_names_like")]
        {
            for v in list(user.get(field)) {
                nets.insert(network(kind, &text(v)));
            }
        }
        let nets = nets.into_iter().collect::<Vec<_>>().join(", ");
        items.insert(format!("{name}.networks"), item("networks", &nets, None));
    }
    let mut profiles: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for row in list(keys::live::USER_PROFILES.json(live)) {
        if let (Some(user), Some(profile)) = (row.get("user_name"), row.get("inherit_profile").filter(|p| !p.is_null()))
        {
            profiles.entry(text(user)).or_default().push(text(profile));
        }
    }
    for (user, given) in profiles {
        if items.contains_key(&format!("{user}.auth")) {
            items.insert(format!("{user}.profile"), item("profile", &given.join(", "), None));
        }
    }
    Some(items)
}

/// `user: ACCESS` (or `role ...`) -> granted, with or without the grant option.
pub(super) fn grants(s: &State, _: Option<&State>) -> Option<Items> {
    let live = s.live.as_ref()?;
    keys::live::GRANTS.json(live)?;
    let mut items = Items::new();
    for row in list(keys::live::GRANTS.json(live)) {
        let who = match (row.get("user_name").filter(|v| !v.is_null()), row.get("role_name").filter(|v| !v.is_null())) {
            (Some(user), _) => text(user),
            (None, Some(role)) => format!("role {}", text(role)),
            _ => continue,
        };
        let option = row.get("grant_option").is_some_and(|v| v.as_u64() == Some(1) || v.as_bool() == Some(true));
        let value = if option { "granted with grant option" } else { "granted" };
        items.insert(format!("{who}: {}", text(row.get("access_type")?)), item("grant", value, None));
    }
    Some(items)
}

/// `grantee: role R` -> granted, with or without the admin option (system.role_grants; a
/// config cannot give them).
pub(super) fn roles(s: &State, _: Option<&State>) -> Option<Items> {
    let live = s.live.as_ref()?;
    keys::live::ROLE_GRANTS.json(live)?;
    let mut items = Items::new();
    for row in list(keys::live::ROLE_GRANTS.json(live)) {
        let who = match (row.get("user_name").filter(|v| !v.is_null()), row.get("role_name").filter(|v| !v.is_null())) {
            (Some(user), _) => text(user),
            (None, Some(role)) => format!("role {}", text(role)),
            _ => continue,
        };
        let admin = row.get("with_admin_option").is_some_and(|v| v.as_u64() == Some(1) || v.as_bool() == Some(true));
        let value = if admin { "granted with admin option" } else { "granted" };
        items.insert(format!("{who}: role {}", text(row.get("granted_role_name")?)), item("role", value, None));
    }
    Some(items)
}

/// `quota` -> whom it applies to; between servers also `quota.limited` (whether an interval
/// bounds anything). A config gives the quota each user names; against a server, a quota that
/// applies to nobody is left out (a config names quotas through its users only).
pub(super) fn quotas(s: &State, other: Option<&State>) -> Option<Items> {
    let mut items = Items::new();
    if let Some(config) = &s.config {
        keys::config::USERS.json(config)?;
        let mut given: BTreeMap<String, (Vec<String>, Option<&Value>)> = BTreeMap::new();
        for user in list(keys::config::USERS.json(config)) {
            let quota = text(user.get("quota").unwrap_or(&Value::Null));
            if !quota.is_empty() {
                let entry = given.entry(quota).or_insert_with(|| (Vec::new(), user.get("quota_at")));
                entry.0.push(text(user.get("name")?));
            }
        }
        for (quota, (mut users, at)) in given {
            users.sort();
            items.insert(quota, item("applies to", &users.join(", "), at));
        }
        return Some(items);
    }
    let live = s.live.as_ref()?;
    keys::live::QUOTAS.json(live)?;
    let flag = |v: Option<&Value>| v.is_some_and(|v| v.as_u64() == Some(1) || v.as_bool() == Some(true));
    for row in list(keys::live::QUOTAS.json(live)) {
        let name = text(row.get("name")?);
        let mut to: Vec<String> = list(row.get("apply_to_list")).map(text).collect();
        to.sort();
        let mut applies = if flag(row.get("apply_to_all")) { vec!["all".to_string()] } else { to };
        let except: Vec<String> = list(row.get("apply_to_except")).map(text).collect();
        if !except.is_empty() {
            applies.push(format!("except {}", except.join(", ")));
        }
        if other.is_some() && applies.is_empty() {
            continue;
        }
        items.insert(name.clone(), item("applies to", &applies.join(", "), None));
        if other.is_none() {
            let limited = if flag(row.get("limited")) { "yes" } else { "no" };
            items.insert(format!("{name}.limited"), item("limited", limited, None));
        }
    }
    Some(items)
}

/// `cluster/shard N` -> its replicas as `host:port` (a config's replica without a port is on
/// the server's `tcp_port`; without one either, the server refuses to start, and the replica
/// is its host alone).
pub(super) fn clusters(s: &State, _: Option<&State>) -> Option<Items> {
    let mut items = Items::new();
    if let Some(config) = &s.config {
        let clusters = keys::config::CLUSTERS.json(config)?;
        let tcp_port = keys::config::SERVER.json(config).and_then(|s| s.get("tcp_port")).map(text);
        for cluster in list(Some(clusters)) {
            let name = text(cluster.get("name")?);
            for (i, shard) in list(cluster.get("shards")).enumerate() {
                let replicas: Vec<String> = list(Some(shard))
                    .map(|r| {
                        let host = text(r.get("host").unwrap_or(&Value::Null));
                        match r.get("port").filter(|p| !p.is_null()).map(text).or_else(|| tcp_port.clone()) {
                            Some(port) => format!("{host}:{port}"),
                            None => host,
                        }
                    })
                    .collect();
                items.insert(
                    format!("{name}/shard {}", i + 1),
                    item("replicas", &replicas.join(", "), cluster.get("at")),
                );
            }
        }
        return Some(items);
    }
    let live = s.live.as_ref()?;
    keys::live::CLUSTERS.json(live)?;
    let mut shards: BTreeMap<(String, u64), Vec<(u64, String)>> = BTreeMap::new();
    let number = |v: Option<&Value>| v.map_or(0, crate::facts::uint);
    for row in list(keys::live::CLUSTERS.json(live)) {
        let replica = format!("{}:{}", text(row.get("host_name")?), text(row.get("port")?));
        let key = (text(row.get("cluster")?), number(row.get("shard_num")));
        shards.entry(key).or_default().push((number(row.get("replica_num")), replica));
    }
    for ((cluster, shard), mut replicas) in shards {
        replicas.sort();
        let replicas: Vec<String> = replicas.into_iter().map(|(_, r)| r).collect();
        items.insert(format!("{cluster}/shard {shard}"), item("replicas", &replicas.join(", "), None));
    }
    Some(items)
}

/// Disks: against the other kind, which exist; else each one's type and settings.
pub(super) fn disks(s: &State, other: Option<&State>) -> Option<Items> {
    let cross = other.is_some();
    let mut items = Items::new();
    if let Some(config) = &s.config {
        for disk in list(keys::config::DISKS.json(config)) {
            let name = text(disk.get("name")?);
            items.insert(name.clone(), item("disk", "declared", disk.get("at")));
            if cross {
                continue;
            }
            items.insert(format!("{name}.type"), item("type", &text(disk.get("type")?), disk.get("at")));
            for (k, v) in disk.get("settings").and_then(Value::as_object).into_iter().flatten() {
                items.insert(format!("{name}.{k}"), item(k, &text(v), disk.get("at")));
            }
        }
        if cross && !items.contains_key("default") {
            items.insert("default".into(), item("disk", "declared", None));
        }
        return Some(items);
    }
    let live = s.live.as_ref()?;
    keys::live::DISKS.json(live)?;
    for disk in list(keys::live::DISKS.json(live)) {
        let name = text(disk.get("name")?);
        items.insert(name.clone(), item("disk", "declared", None));
        if cross {
            continue;
        }
        for k in [
            "type",
            "object_storage_type",
            "metadata_type",
            "path",
            "cache_path",
            "keep_free_space",
            "is_encrypted",
            "is_read_only",
            "is_write_once",
        ] {
            if let Some(v) = disk.get(k) {
                items.insert(format!("{name}.{k}"), item(k, &text(v), None));
            }
        }
    }
    Some(items)
}

/// `policy/volume` -> its disks.
pub(super) fn policies(s: &State, other: Option<&State>) -> Option<Items> {
    let mut items = Items::new();
    if let Some(config) = &s.config {
        for policy in list(keys::config::POLICIES.json(config)) {
            let name = text(policy.get("name")?);
            for volume in list(policy.get("volumes")) {
                let disks: Vec<String> = list(volume.get("disks")).map(text).collect();
                let key = format!("{name}/{}", text(volume.get("name")?));
                items.insert(key, item("disks", &disks.join(", "), volume.get("at")));
            }
        }
        if other.is_some() && !items.keys().any(|k| k.starts_with("default/")) {
            items.insert("default/default".into(), item("disks", "default", None));
        }
        return Some(items);
    }
    let live = s.live.as_ref()?;
    keys::live::STORAGE_POLICIES.json(live)?;
    for row in list(keys::live::STORAGE_POLICIES.json(live)) {
        let disks: Vec<String> = list(row.get("disks")).map(text).collect();
        let key = format!("{}/{}", text(row.get("policy_name")?), text(row.get("volume_name")?));
        items.insert(key, item("disks", &disks.join(", "), None));
    }
    Some(items)
}

pub(super) fn version(s: &State, _: Option<&State>) -> Option<Items> {
    let live = s.live.as_ref()?;
    let version = crate::facts::keys::live::VERSION.text(live);
    Some([("version".to_string(), item("version", version, None))].into())
}

pub(super) fn macros(s: &State) -> Option<Items> {
    let config = s.config.as_ref()?;
    let values = keys::config::MACROS.json(config)?.as_object()?;
    Some(values.iter().map(|(k, v)| (k.clone(), item(k, &text(v), None))).collect())
}
