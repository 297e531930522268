//! What stops the server in the users config: where it is read from, users and their
//! authentication, settings profiles, quotas, the default profile.

use super::*;

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

/// users_config or user_directories/users_xml/path naming a file that does not exist
/// (AccessControl::addUsersConfigStorage reads it at start).
pub(super) fn users_source(loaded: &LoadedConfig, out: &mut Vec<StartProblem>) {
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
        problem(out, StartCheck::UsersConfigMissing, element.value(), reason, element.value_origin());
    }
}

/// The users of the users tree: profile, networks, authentication, grants.
pub(super) fn users(
    server: &Element,
    users_root: &Element,
    profiles: &[model::Profile],
    stock_profiles: &[&str],
    out: &mut Vec<StartProblem>,
) {
    let Some(users) = users_root.child("users") else { return };
    let profile_names: HashSet<&str> =
        profiles.iter().map(|p| p.name.as_str()).chain(stock_profiles.iter().copied()).collect();
    let allows = |name: &str| server.child(name).is_none_or(|e| is_true(&e.text()));
    for user in users.elements() {
        let name = user.name.as_str();
        let parsing = Parsing("user", name);
        if let Some(profile) = user.child("profile")
            && !profile_names.contains(profile.text().as_ref())
        {
            let reason =
                format!("Profile {} was not found: {parsing} (THERE_IS_NO_PROFILE, code 180)", profile.value());
            problem(out, StartCheck::UserProfileMissing, name, reason, profile.value_origin());
        }
        if let Some(networks) = user.child("networks") {
            // parseNetworks tells a pattern by its element's prefix: ip, host (host_regexp too)
            let unknown = networks.elements().filter(|e| !["ip", "host"].iter().any(|p| e.name.starts_with(p)));
            for element in unknown {
                let reason = format!(
                    "Unknown address pattern type: {} in <networks> of user '{name}' (UNKNOWN_ADDRESS_PATTERN_TYPE, \
                     code 196)",
                    element.name
                );
                problem_in(out, StartCheck::NetworkIpInvalid, name, element.name.to_string(), reason, element.origin);
            }
            for ip in networks.children_named("ip") {
                if !is_subnet(&ip.text()) {
                    let reason = format!(
                        "Invalid address: {} in <networks><ip> of user '{name}' (CANNOT_LOAD_CONFIG, code 347)",
                        ip.value()
                    );
                    problem_in(out, StartCheck::NetworkIpInvalid, name, ip.value(), reason, ip.value_origin());
                }
            }
        }
        let mut given = AUTH_ELEMENTS.iter().filter_map(|tag| user.child(tag));
        match (given.next(), given.next()) {
            // allow_implicit_no_password is about CREATE USER in SQL: the users config always
            // names one
            (None, _) => {
                let reason = format!(
                    "Either 'password' or 'password_sha256_hex' or ... or 'no_password' must be specified for user \
                     {name}: {parsing} (BAD_ARGUMENTS, code 36)"
                );
                problem(out, StartCheck::UserAuthMissing, name, reason, user.origin);
            }
            (Some(first), Some(second)) => {
                let reason = format!(
                    "More than one field of 'password', 'password_sha256_hex', ..., 'no_password' are used to \
                     specify authentication info for user {name}: <{}> beside <{}> (BAD_ARGUMENTS, code 36)",
                    second.name, first.name
                );
                problem(out, StartCheck::UserAuthAmbiguous, name, reason, second.origin);
            }
            (Some(auth), None) => {
                auth_element(name, auth, &parsing, &allows, out);
            }
        }
        if let Some(grants) = user.child("grants")
            && let Some(other) = GRANTS_EXCLUDE.iter().find_map(|tag| user.child(tag))
        {
            let reason = format!(
                "Any other access control settings can't be specified with `grants` (user '{name}' has <{}>): \
                 {parsing} (BAD_ARGUMENTS, code 36)",
                other.name
            );
            problem(out, StartCheck::UserGrantsWithOtherAccess, name, reason, grants.origin);
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
    let value = auth.text();
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
        problem(out, StartCheck::UserPasswordHashInvalid, user, reason, auth.value_origin());
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
        problem(out, StartCheck::UserAuthNotAllowed, user, reason, auth.origin);
    }
}

/// Settings profiles: parents that exist, settings and constraints the server knows, values
/// it can parse (UsersConfigAccessStorage's parseSettingsProfile).
/// `stock_profiles`: the profiles of files the config is merged over (the image's users.xml).
pub(super) fn profile_problems(
    server: &Element,
    profiles: &[model::Profile],
    stock_profiles: &[&str],
    out: &mut Vec<StartProblem>,
) {
    let prefixes = server.child("custom_settings_prefixes").map_or("custom_".to_string(), Element::value);
    let custom = |name: &str| prefixes.split(',').map(str::trim).any(|p| !p.is_empty() && name.starts_with(p));
    let names: HashSet<&str> = profiles.iter().map(|p| p.name.as_str()).chain(stock_profiles.iter().copied()).collect();
    let catalog = catalog::builtin();
    for p in profiles {
        let parsing = Parsing("profile", &p.name);
        for parent in p.element.children_named("profile") {
            if !names.contains(parent.text().as_ref()) {
                let reason = format!(
                    "Parent profile '{}' was not found: {parsing} (THERE_IS_NO_PROFILE, code 180)",
                    parent.value()
                );
                problem_in(
                    out,
                    StartCheck::ProfileParentMissing,
                    &p.name,
                    parent.value(),
                    reason,
                    parent.value_origin(),
                );
            }
        }
        for s in &p.settings {
            let kind = catalog.session.get(s.name.as_str()).and_then(|setting| setting.kind);
            if let Some(kind) = kind
                && !parses_as(kind, &s.text())
            {
                let reason = format!(
                    "Cannot parse input: while parsing value '{}' for setting '{}' ({kind}): {parsing} \
                     (CANNOT_PARSE_INPUT_ASSERTION_FAILED, code 27)",
                    s.value(),
                    s.name
                );
                problem_in(
                    out,
                    StartCheck::ProfileSettingUnparsable,
                    &p.name,
                    s.name.to_string(),
                    reason,
                    s.value_origin(),
                );
            }
        }
        for constrained in p.element.children_named("constraints").flat_map(Element::elements) {
            if !catalog.is_session(&constrained.name) && !custom(&constrained.name) {
                let reason = format!(
                    "Unknown setting '{}' (a constraint): {parsing} (UNKNOWN_SETTING, code 115)",
                    constrained.name
                );
                let part = constrained.name.to_string();
                problem_in(out, StartCheck::ProfileConstraintUnknownSetting, &p.name, part, reason, constrained.origin);
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

pub(super) fn quotas(users_root: &Element, out: &mut Vec<StartProblem>) {
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
                    problem_in(
                        out,
                        StartCheck::QuotaLimitUnparsable,
                        quota.name.as_str(),
                        part,
                        reason,
                        limit.value_origin(),
                    );
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
                problem_in(out, StartCheck::QuotaDurationInvalid, quota.name.as_str(), part, reason, at);
            }
        }
    }
}

/// The default profile (`<default_profile>`, else `default`) must exist in the users tree the
/// server reads (SettingsProfilesCache::setDefaultProfileName). Users read from the main
/// config while a users.xml lies beside it is its own check: the cause is elsewhere.
pub(super) fn default_profile(
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
            problem(out, StartCheck::UsersReadFromMainConfig, file, reason, root.origin);
        }
        (_, Some(element)) => problem(out, StartCheck::DefaultProfileMissing, name, reason, element.value_origin()),
        (_, None) => problem(out, StartCheck::DefaultProfileMissing, name, reason, users_root.origin),
    }
}
