//! Where each changed setting comes from, for every profile and user of the server, not only
//! the auditor's session (system.settings shows only that): `live.setting_scopes`, one row
//! per (scope, setting, value):
//! - `profile`: a settings profile sets it (system.settings_profile_elements), with the users
//!   given that profile;
//! - `user`: set on a user directly;
//! - `workload`: the user's queries ran with it (query_log `Settings`) and neither its profiles
//!   nor the user set it (a query-level SETTINGS, a client default);
//! - `session`: changed in the auditor's own session and set by none of the above.
//!
//! Each row: `scope`, `name` (profile, user or endpoint), `setting`, `value`, `users`,
//! `profiles` (of those users), `workload_queries` (queries of the window that ran with this
//! value, by user: `["bench: 42"]`) and `subject` (how a message names it).

use crate::facts::derived::SettingScope;
use crate::facts::keys;
use crate::facts::rows::{ChangedSettings, ProfileSetting, UserProfile, WorkloadSetting};
use crate::facts::typed::Facts;

/// The scopes of the changed settings, from the `live` document and, when read, the `log`;
/// an error when an input is not of the catalog's shape.
pub fn setting_scopes(live: &impl Facts, log: Option<&impl Facts>) -> Result<Vec<SettingScope>, String> {
    let assigned: Vec<UserProfile> = keys::live::USER_PROFILES.read(live)?;
    let profile_rows: Vec<ProfileSetting> = keys::live::PROFILE_SETTINGS.read(live)?;
    let workload: Vec<WorkloadSetting> = match log {
        Some(log) => keys::log::USER_SETTINGS.read(log)?,
        None => Vec::new(),
    };
    let ChangedSettings(changed) = keys::live::SETTINGS.changed(live)?;
    let profiles_of = |user: &str| -> Vec<String> {
        assigned.iter().filter(|r| r.user_name == user).filter_map(|r| r.inherit_profile.clone()).collect()
    };
    let ran_with = |users: &[String], setting: &str, value: &str| -> Vec<String> {
        workload
            .iter()
            .filter(|q| users.contains(&q.user) && q.name == setting && q.value == value)
            .map(|q| format!("{}: {}", q.user, q.queries))
            .collect()
    };
    let mut scopes = Vec::new();
    // an element without a value (a constraint alone) sets nothing
    for row in &profile_rows {
        let Some(value) = row.value.clone() else { continue };
        let profile = &row.profile_name;
        let users: Vec<String> = assigned
            .iter()
            .filter(|r| r.inherit_profile.as_ref() == Some(profile))
            .map(|r| r.user_name.clone())
            .collect();
        let subject = if users.is_empty() {
            format!("settings profile `{profile}` (given to no user directly)")
        } else {
            format!("settings profile `{profile}` (user(s) {})", users.join(", "))
        };
        scopes.push(SettingScope {
            scope: "profile",
            name: profile.clone(),
            workload_queries: ran_with(&users, &row.setting_name, &value),
            setting: row.setting_name.clone(),
            value,
            users,
            profiles: vec![profile.clone()],
            subject,
        });
    }
    for row in &assigned {
        let (Some(setting), Some(value)) = (&row.setting_name, row.value.clone()) else { continue };
        let user = &row.user_name;
        let profiles = profiles_of(user);
        scopes.push(SettingScope {
            scope: "user",
            name: user.clone(),
            subject: format!("user `{user}`{}", of_profiles(&profiles)),
            workload_queries: ran_with(std::slice::from_ref(user), setting, &value),
            setting: setting.clone(),
            value,
            users: vec![user.clone()],
            profiles,
        });
    }
    for query in &workload {
        let explained =
            scopes.iter().any(|s| s.setting == query.name && s.value == query.value && s.users.contains(&query.user));
        if !explained {
            let profiles = profiles_of(&query.user);
            scopes.push(SettingScope {
                scope: "workload",
                name: query.user.clone(),
                setting: query.name.clone(),
                value: query.value.clone(),
                users: vec![query.user.clone()],
                subject: format!("the queries of user `{}`{}", query.user, of_profiles(&profiles)),
                profiles,
                workload_queries: vec![format!("{}: {}", query.user, query.queries)],
            });
        }
    }
    let endpoint = keys::live::ENDPOINT.text(live);
    for (setting, entry) in changed {
        if !scopes.iter().any(|s| s.setting == setting && s.value == entry.value) {
            scopes.push(SettingScope {
                scope: "session",
                name: endpoint.to_string(),
                setting: setting.to_string(),
                value: entry.value.to_string(),
                users: Vec::new(),
                profiles: Vec::new(),
                workload_queries: Vec::new(),
                subject: format!("the auditing session of {endpoint}"),
            });
        }
    }
    Ok(scopes)
}

fn of_profiles(profiles: &[String]) -> String {
    if profiles.is_empty() { String::new() } else { format!(" (profile {})", profiles.join(", ")) }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_profile_user_and_workload_setting_is_placed_once() {
        let live = json!({
            "endpoint": "auditor@http://h:8123",
            "settings": {"use_query_condition_cache": {"value": "1", "changed": false},
                         "readonly": {"value": "1", "changed": true},
                         "max_threads": {"value": "2", "changed": true}},
            "profile_settings": [{"profile_name": "bench", "setting_name": "use_query_condition_cache", "value": "0"},
                                 {"profile_name": "readonly", "setting_name": "readonly", "value": "1"}],
            "user_profiles": [{"user_name": "bench", "inherit_profile": "bench", "setting_name": null, "value": null},
                              {"user_name": "etl", "inherit_profile": null, "setting_name": "max_threads", "value": "8"}]
        });
        let log = json!({"user_settings": [
            {"user": "bench", "name": "use_query_condition_cache", "value": "0", "queries": "42"},
            {"user": "etl", "name": "enable_filesystem_cache", "value": "0", "queries": "7"}]});
        let scopes = setting_scopes(&live, Some(&log)).unwrap();
        let brief: Vec<(String, String, String)> =
            scopes.iter().map(|s| (s.scope.to_string(), s.name.clone(), s.setting.clone())).collect();
        let expected = [
            ("profile", "bench", "use_query_condition_cache"),
            ("profile", "readonly", "readonly"),
            ("user", "etl", "max_threads"),
            ("workload", "etl", "enable_filesystem_cache"),
            ("session", "auditor@http://h:8123", "max_threads"),
        ];
        assert_eq!(crate::facts::derived::derived_unread(&live, "setting_scopes"), None);
        let mut denied = live.clone();
        denied["unavailable"] = json!({"profile_settings": "ACCESS_DENIED"});
        let why = crate::facts::derived::derived_unread(&denied, "setting_scopes").unwrap();
        assert!(
            why.contains("live.profile_settings")
                && why.contains("auditor@http://h:8123")
                && why.contains("ACCESS_DENIED"),
            "{why}"
        );
        assert_eq!(brief, expected.map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string())));
        assert_eq!(scopes[0].workload_queries, ["bench: 42"]);
        assert_eq!(scopes[0].subject, "settings profile `bench` (user(s) bench)");
    }
}
