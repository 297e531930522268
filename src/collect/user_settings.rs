//! The settings each user of the server runs with, resolved as ClickHouse resolves them
//! (`live.user_settings`; SettingsProfilesCache::mergeSettingsAndConstraintsFor): the default
//! profile (named `default`: the server's `default_profile` is not in any system table; on 25.8
//! its settings were in effect for SQL users with and without a profile of their own), then the profiles given TO the user or its roles
//! (system.settings_profiles), then the elements of its granted roles, then its own
//! (system.settings_profile_elements), each in order; an element that names a profile
//! (`inherit_profile`) brings in that profile's elements at its place, once per profile
//! (substituteProfiles); a later value of a setting replaces an earlier one. `constrained`
//! says whether any of those elements bounds a setting (`min`, `max`, or a writability such
//! as CONST): with `readonly = 2` and no bound, the user may change every limit its profile
//! sets.
//!
//! Each row: `user`, `settings` (setting → value), `from` (setting → the profile, role or
//! user that gave the value), `profiles` (every profile reached), `constrained`.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{Value, json};

/// The facts `user_settings` is derived from.
pub const INPUTS: [&str; 4] = ["users", "profile_elements", "profile_targets", "role_grants"];

/// The columns of system.settings_profile_elements that say whose element a row is.
const OWNERS: [&str; 3] = ["profile_name", "user_name", "role_name"];

/// The profile every user starts from, as the stock config names it.
const DEFAULT_PROFILE: &str = "default";

/// Profiles inheriting deeper than this are a cycle or a mistake; ClickHouse refuses cycles.
const MAX_DEPTH: usize = 32;

pub fn user_settings(live: &Value) -> Value {
    let rows = |fact: &str| live[fact].as_array().map(Vec::as_slice).unwrap_or_default();
    let text = |row: &Value, field: &str| row[field].as_str().map(str::to_string);
    // the elements of each profile, user and role in their order, indexed once
    let mut by_owner: HashMap<(&str, &str), Vec<&Value>> = HashMap::new();
    for row in rows("profile_elements") {
        for field in OWNERS {
            if let Some(name) = row[field].as_str() {
                by_owner.entry((field, name)).or_default().push(row);
            }
        }
    }
    for elements in by_owner.values_mut() {
        elements.sort_by_key(|r| crate::facts::uint(&r["index"]));
    }
    let owned = |field: &str, name: &str| -> Vec<&Value> { by_owner.get(&(field, name)).cloned().unwrap_or_default() };
    let users = rows("users").iter().filter_map(|u| text(u, "name"));
    let granted = |user: &str| -> Vec<String> {
        rows("role_grants")
            .iter()
            .filter(|g| g["user_name"].as_str() == Some(user))
            .filter_map(|g| text(g, "granted_role_name"))
            .collect()
    };
    let targets = rows("profile_targets");
    let given_to = |profile: &Value, names: &[String]| {
        let listed =
            |field: &str| profile[field].as_array().is_some_and(|l| l.iter().any(|n| names.iter().any(|m| n == m)));
        (profile["apply_to_all"] == 1 || profile["apply_to_all"] == true || listed("apply_to_list"))
            && !listed("apply_to_except")
    };
    let resolved: Vec<Value> = users
        .map(|user| {
            let mut state = Resolved::default();
            let roles = granted(&user);
            let holders: Vec<String> = roles.iter().cloned().chain([user.clone()]).collect();
            let mut profiles = vec![DEFAULT_PROFILE.to_string()];
            profiles.extend(targets.iter().filter(|p| given_to(p, &holders)).filter_map(|p| text(p, "name")));
            for profile in profiles {
                state.inherit(&profile, &owned, 0);
            }
            for role in roles {
                state.apply(&owned("role_name", &role), &format!("role `{role}`"), &owned, 0);
            }
            state.apply(&owned("user_name", &user), &format!("user `{user}`"), &owned, 0);
            json!({"user": user, "settings": state.settings, "from": state.from, "profiles": state.profiles,
                   "constrained": state.constrained})
        })
        .collect();
    Value::Array(resolved)
}

#[derive(Default)]
struct Resolved {
    settings: BTreeMap<String, String>,
    from: BTreeMap<String, String>,
    profiles: BTreeSet<String>,
    constrained: bool,
}

impl Resolved {
    fn inherit<'a>(&mut self, profile: &str, owned: &dyn Fn(&str, &str) -> Vec<&'a Value>, depth: usize) {
        if self.profiles.insert(profile.to_string()) && depth < MAX_DEPTH {
            self.apply(&owned("profile_name", profile), &format!("profile `{profile}`"), owned, depth + 1);
        }
    }

    fn apply<'a>(
        &mut self,
        rows: &[&'a Value],
        giver: &str,
        owned: &dyn Fn(&str, &str) -> Vec<&'a Value>,
        depth: usize,
    ) {
        for row in rows {
            if let Some(profile) = row["inherit_profile"].as_str() {
                self.inherit(profile, owned, depth);
                continue;
            }
            let Some(setting) = row["setting_name"].as_str() else { continue };
            if let Some(value) = row["value"].as_str() {
                self.settings.insert(setting.to_string(), value.to_string());
                self.from.insert(setting.to_string(), giver.to_string());
            }
            if ["min", "max", "writability"].iter().any(|bound| !row[*bound].is_null()) {
                self.constrained = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows as the 25.8 server gives them after CREATE SETTINGS PROFILE bi SETTINGS readonly = 2,
    /// max_memory_usage = 1000000; bic the same with MAX 2000000; child INHERIT bic; users u1
    /// (PROFILE bi), u2 (PROFILE child, readonly = 2), u3 (readonly = 2 on the user).
    fn live() -> Value {
        let element = |profile: Option<&str>,
                       user: Option<&str>,
                       index: u64,
                       setting: Option<&str>,
                       value: Option<&str>,
                       max: Option<&str>,
                       inherit: Option<&str>| {
            json!({"profile_name": profile, "user_name": user, "role_name": null, "index": index, "setting_name": setting,
                   "value": value, "min": null, "max": max, "writability": null, "inherit_profile": inherit})
        };
        json!({
            "users": [{"name": "u1"}, {"name": "u2"}, {"name": "u3"}, {"name": "r"}],
            "role_grants": [{"user_name": "r", "role_name": null, "granted_role_name": "bounded", "with_admin_option": 0}],
            "profile_elements": [
                element(None, Some("u3"), 0, Some("readonly"), Some("2"), None, None),
                element(None, Some("u2"), 0, None, None, None, Some("child")),
                element(None, Some("u2"), 1, Some("readonly"), Some("2"), None, None),
                element(None, Some("u1"), 0, None, None, None, Some("bi")),
                element(Some("child"), None, 0, None, None, None, Some("bic")),
                element(Some("bic"), None, 0, Some("readonly"), Some("2"), None, None),
                element(Some("bic"), None, 1, Some("max_memory_usage"), Some("1000000"), Some("2000000"), None),
                element(Some("bi"), None, 1, Some("max_memory_usage"), Some("1000000"), None, None),
                element(Some("bi"), None, 0, Some("readonly"), Some("2"), None, None),
                json!({"profile_name": null, "user_name": null, "role_name": "bounded", "index": 0, "setting_name": "max_threads",
                       "value": null, "min": null, "max": null, "writability": "CONST", "inherit_profile": null}),
            ]
        })
    }

    fn row<'a>(rows: &'a Value, user: &str) -> &'a Value {
        rows.as_array().unwrap().iter().find(|r| r["user"] == user).unwrap()
    }

    #[test]
    fn profiles_resolve_through_inheritance_and_bounds_anywhere_constrain() {
        let rows = user_settings(&live());
        let u1 = row(&rows, "u1");
        assert_eq!(u1["settings"]["readonly"], "2");
        assert_eq!(u1["from"]["readonly"], "profile `bi`");
        assert_eq!(u1["constrained"], false);
        let u2 = row(&rows, "u2");
        assert_eq!(u2["profiles"], json!(["bic", "child", "default"]));
        assert_eq!(u2["from"]["readonly"], "user `u2`", "a later element wins");
        assert_eq!(u2["constrained"], true, "a MAX in an inherited profile bounds");
        assert_eq!(row(&rows, "u3")["constrained"], false);
        assert_eq!(row(&rows, "r")["constrained"], true, "a CONST on a granted role bounds");
    }

    #[test]
    fn a_profile_given_to_a_user_or_its_role_applies() {
        let mut live = live();
        live["profile_targets"] =
            json!([{"name": "bic", "apply_to_all": 0, "apply_to_list": ["u3"], "apply_to_except": []}]);
        let rows = user_settings(&live);
        assert_eq!(row(&rows, "u3")["constrained"], true);
        assert_eq!(row(&rows, "u3")["from"]["readonly"], "user `u3`");
        live["profile_targets"][0]["apply_to_list"] = json!(["bounded"]);
        live["profile_targets"][0]["name"] = json!("bi");
        assert_eq!(row(&user_settings(&live), "r")["settings"]["readonly"], "2");
        live["profile_targets"][0] =
            json!({"name": "bi", "apply_to_all": 1, "apply_to_list": [], "apply_to_except": ["r"]});
        let rows = user_settings(&live);
        assert!(row(&rows, "r")["settings"].get("readonly").is_none());
        assert_eq!(row(&rows, "u3")["settings"]["max_memory_usage"], "1000000");
    }

    #[test]
    fn an_inheritance_cycle_ends() {
        let live = json!({"users": [{"name": "u"}], "profile_elements": [
            {"profile_name": null, "user_name": "u", "index": 0, "inherit_profile": "a"},
            {"profile_name": "a", "user_name": null, "index": 0, "inherit_profile": "b"},
            {"profile_name": "b", "user_name": null, "index": 0, "inherit_profile": "a"}]});
        assert_eq!(row(&user_settings(&live), "u")["profiles"], json!(["a", "b", "default"]));
    }
}
