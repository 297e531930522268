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

use serde_json::{Value, json};

/// The facts the scopes are derived from. The workload rows (log.user_settings) only add to
/// what the profiles and users say: a replica without query_log keeps its profile and user rows.
pub const INPUTS: [&str; 3] = ["user_profiles", "profile_settings", "settings"];

/// The scopes of the changed settings, from the `live` document and, when read, the `log`.
pub fn setting_scopes(live: &Value, log: Option<&Value>) -> Value {
    let rows = |doc: Option<&Value>, name: &str| doc.and_then(|d| d[name].as_array()).cloned().unwrap_or_default();
    let text = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
    let assigned = rows(Some(live), "user_profiles");
    let profile_rows = rows(Some(live), "profile_settings");
    let workload = rows(log, "user_settings");
    let profiles_of = |user: &str| -> Vec<String> {
        assigned
            .iter()
            .filter(|r| text(&r["user_name"]) == user && r["inherit_profile"].is_string())
            .map(|r| text(&r["inherit_profile"]))
            .collect()
    };
    let ran_with = |users: &[String], setting: &str, value: &str| -> Vec<String> {
        workload
            .iter()
            .filter(|q| users.contains(&text(&q["user"])) && text(&q["name"]) == setting && text(&q["value"]) == value)
            .map(|q| format!("{}: {}", text(&q["user"]), text(&q["queries"])))
            .collect()
    };
    let mut scopes = Vec::new();
    for row in &profile_rows {
        let (profile, setting, value) = (text(&row["profile_name"]), text(&row["setting_name"]), text(&row["value"]));
        let users: Vec<String> =
            assigned.iter().filter(|r| text(&r["inherit_profile"]) == profile).map(|r| text(&r["user_name"])).collect();
        let subject = if users.is_empty() {
            format!("settings profile `{profile}` (given to no user directly)")
        } else {
            format!("settings profile `{profile}` (user(s) {})", users.join(", "))
        };
        let queries = ran_with(&users, &setting, &value);
        scopes.push(scope(
            "profile",
            &profile,
            &setting,
            &value,
            &users,
            std::slice::from_ref(&profile),
            queries,
            subject,
        ));
    }
    for row in assigned.iter().filter(|r| r["setting_name"].is_string()) {
        let (user, setting, value) = (text(&row["user_name"]), text(&row["setting_name"]), text(&row["value"]));
        let profiles = profiles_of(&user);
        let queries = ran_with(std::slice::from_ref(&user), &setting, &value);
        let subject = format!("user `{user}`{}", of_profiles(&profiles));
        scopes.push(scope("user", &user, &setting, &value, std::slice::from_ref(&user), &profiles, queries, subject));
    }
    for query in &workload {
        let (user, setting, value) = (text(&query["user"]), text(&query["name"]), text(&query["value"]));
        let explained = scopes.iter().any(|s| {
            s["setting"] == setting.as_str()
                && s["value"] == value.as_str()
                && s["users"].as_array().is_some_and(|u| u.iter().any(|u| u == user.as_str()))
        });
        if !explained {
            let profiles = profiles_of(&user);
            let subject = format!("the queries of user `{user}`{}", of_profiles(&profiles));
            let queries = vec![format!("{user}: {}", text(&query["queries"]))];
            scopes.push(scope(
                "workload",
                &user,
                &setting,
                &value,
                std::slice::from_ref(&user),
                &profiles,
                queries,
                subject,
            ));
        }
    }
    let endpoint = text(&live["endpoint"]);
    if let Some(session) = live["settings"].as_object() {
        for (setting, entry) in session.iter().filter(|(_, e)| e["changed"] == true) {
            let value = text(&entry["value"]);
            if !scopes.iter().any(|s| s["setting"] == setting.as_str() && s["value"] == value.as_str()) {
                let subject = format!("the auditing session of {endpoint}");
                scopes.push(scope("session", &endpoint, setting, &value, &[], &[], Vec::new(), subject));
            }
        }
    }
    Value::Array(scopes)
}

fn of_profiles(profiles: &[String]) -> String {
    if profiles.is_empty() { String::new() } else { format!(" (profile {})", profiles.join(", ")) }
}

#[allow(clippy::too_many_arguments)] // one row's columns
fn scope(
    kind: &str,
    name: &str,
    setting: &str,
    value: &str,
    users: &[String],
    profiles: &[String],
    workload_queries: Vec<String>,
    subject: String,
) -> Value {
    json!({"scope": kind, "name": name, "setting": setting, "value": value, "users": users, "profiles": profiles,
           "workload_queries": workload_queries, "subject": subject})
}

#[cfg(test)]
mod tests {
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
        let scopes = setting_scopes(&live, Some(&log));
        let brief: Vec<(String, String, String)> = scopes
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["scope"].as_str().unwrap().into(),
                    s["name"].as_str().unwrap().into(),
                    s["setting"].as_str().unwrap().into(),
                )
            })
            .collect();
        let expected = [
            ("profile", "bench", "use_query_condition_cache"),
            ("profile", "readonly", "readonly"),
            ("user", "etl", "max_threads"),
            ("workload", "etl", "enable_filesystem_cache"),
            ("session", "auditor@http://h:8123", "max_threads"),
        ];
        assert_eq!(crate::collect::derived_unread(&live, "setting_scopes"), None);
        let mut denied = live.clone();
        denied["unavailable"] = json!({"profile_settings": "ACCESS_DENIED"});
        let why = crate::collect::derived_unread(&denied, "setting_scopes").unwrap();
        assert!(
            why.contains("live.profile_settings")
                && why.contains("auditor@http://h:8123")
                && why.contains("ACCESS_DENIED"),
            "{why}"
        );
        assert_eq!(brief, expected.map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string())));
        assert_eq!(scopes[0]["workload_queries"], json!(["bench: 42"]));
        assert_eq!(scopes[0]["subject"], "settings profile `bench` (user(s) bench)");
    }
}
