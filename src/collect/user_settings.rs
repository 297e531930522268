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

use std::collections::HashMap;

use crate::facts::derived::UserSettings;
use crate::facts::keys;
use crate::facts::rows::{ProfileElement, ProfileTarget, RoleGrant, User};
use crate::facts::typed::Facts;

/// The profile every user starts from, as the stock config names it.
const DEFAULT_PROFILE: &str = "default";

/// Profiles inheriting deeper than this are a cycle or a mistake; ClickHouse refuses cycles.
const MAX_DEPTH: usize = 32;

/// Whose element a row of system.settings_profile_elements is.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Owner {
    Profile,
    User,
    Role,
}

/// The elements of each profile, user and role, in their order.
type Owned<'a> = HashMap<Owner, HashMap<&'a str, Vec<&'a ProfileElement>>>;

/// Every user's settings; an error when an input is not of the catalog's shape.
pub fn user_settings(live: &impl Facts) -> Result<Vec<UserSettings>, String> {
    let users: Vec<User> = keys::live::USERS.read(live)?;
    let elements: Vec<ProfileElement> = keys::live::PROFILE_ELEMENTS.read(live)?;
    let targets: Vec<ProfileTarget> = keys::live::PROFILE_TARGETS.read(live)?;
    let grants: Vec<RoleGrant> = keys::live::ROLE_GRANTS.read(live)?;
    // indexed once: a scan per lookup costs users x lookups x elements
    let mut owned: Owned = HashMap::new();
    for element in &elements {
        let owners = [
            (Owner::Profile, &element.profile_name),
            (Owner::User, &element.user_name),
            (Owner::Role, &element.role_name),
        ];
        for (owner, name) in owners {
            if let Some(name) = name {
                owned.entry(owner).or_default().entry(name.as_str()).or_default().push(element);
            }
        }
    }
    for list in owned.values_mut().flat_map(HashMap::values_mut) {
        list.sort_by_key(|e| e.index);
    }
    let given_to = |target: &ProfileTarget, names: &[&str]| {
        let listed = |list: &[String]| list.iter().any(|n| names.contains(&n.as_str()));
        (target.apply_to_all.0 || listed(&target.apply_to_list)) && !listed(&target.apply_to_except)
    };
    let resolved = users
        .iter()
        .filter(|u| !u.name.is_empty())
        .map(|user| {
            let user = user.name.as_str();
            let roles: Vec<&str> = grants
                .iter()
                .filter(|g| g.user_name.as_deref() == Some(user))
                .map(|g| g.granted_role_name.as_str())
                .collect();
            let holders: Vec<&str> = roles.iter().copied().chain([user]).collect();
            let mut state =
                Resolved { owned: &owned, found: UserSettings { user: user.to_string(), ..UserSettings::default() } };
            let given = targets.iter().filter(|t| given_to(t, &holders)).map(|t| t.name.as_str());
            for profile in std::iter::once(DEFAULT_PROFILE).chain(given) {
                state.inherit(profile, 0);
            }
            for role in roles {
                state.apply(state.of(Owner::Role, role), &format!("role `{role}`"), 0);
            }
            state.apply(state.of(Owner::User, user), &format!("user `{user}`"), 0);
            state.found
        })
        .collect();
    Ok(resolved)
}

/// One user's settings as they are resolved.
struct Resolved<'a> {
    owned: &'a Owned<'a>,
    found: UserSettings,
}

impl<'a> Resolved<'a> {
    fn of(&self, owner: Owner, name: &str) -> &'a [&'a ProfileElement] {
        self.owned.get(&owner).and_then(|by_name| by_name.get(name)).map(Vec::as_slice).unwrap_or_default()
    }

    fn inherit(&mut self, profile: &str, depth: usize) {
        if self.found.profiles.insert(profile.to_string()) && depth < MAX_DEPTH {
            self.apply(self.of(Owner::Profile, profile), &format!("profile `{profile}`"), depth + 1);
        }
    }

    fn apply(&mut self, elements: &[&ProfileElement], giver: &str, depth: usize) {
        for element in elements {
            if let Some(profile) = &element.inherit_profile {
                self.inherit(profile, depth);
                continue;
            }
            let Some(setting) = &element.setting_name else { continue };
            if let Some(value) = &element.value {
                self.found.settings.0.insert(setting.clone(), value.clone());
                self.found.from.0.insert(setting.clone(), giver.to_string());
            }
            if element.min.is_some() || element.max.is_some() || element.writability.is_some() {
                self.found.constrained = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

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

    fn row(rows: &[UserSettings], user: &str) -> Value {
        serde_json::to_value(rows.iter().find(|r| r.user == user).unwrap()).unwrap()
    }

    #[test]
    fn profiles_resolve_through_inheritance_and_bounds_anywhere_constrain() {
        let rows = user_settings(&live()).unwrap();
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
        let rows = user_settings(&live).unwrap();
        assert_eq!(row(&rows, "u3")["constrained"], true);
        assert_eq!(row(&rows, "u3")["from"]["readonly"], "user `u3`");
        live["profile_targets"][0]["apply_to_list"] = json!(["bounded"]);
        live["profile_targets"][0]["name"] = json!("bi");
        assert_eq!(row(&user_settings(&live).unwrap(), "r")["settings"]["readonly"], "2");
        live["profile_targets"][0] =
            json!({"name": "bi", "apply_to_all": 1, "apply_to_list": [], "apply_to_except": ["r"]});
        let rows = user_settings(&live).unwrap();
        assert!(row(&rows, "r")["settings"].get("readonly").is_none());
        assert_eq!(row(&rows, "u3")["settings"]["max_memory_usage"], "1000000");
    }

    #[test]
    fn an_inheritance_cycle_ends() {
        let live = json!({"users": [{"name": "u"}], "profile_elements": [
            {"profile_name": null, "user_name": "u", "index": 0, "inherit_profile": "a"},
            {"profile_name": "a", "user_name": null, "index": 0, "inherit_profile": "b"},
            {"profile_name": "b", "user_name": null, "index": 0, "inherit_profile": "a"}]});
        assert_eq!(row(&user_settings(&live).unwrap(), "u")["profiles"], json!(["a", "b", "default"]));
    }
}
