//! The users config's facts as Rust types (`config.users`, `config.profiles`,
//! `config.profile_settings`), read as ClickHouse reads users.xml: a profile's settings in
//! effect through `<profile>` inheritance, a user's through its profile over the default
//! profile. The catalog's entries of these facts are generated from the types (typed/).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::config::is_true;
use super::typed::{Location, Settings};
use crate::config::{Element, Origin, model};

/// A settings profile of the users config.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ConfigProfile {
    pub name: String,
    pub at: Location,
    /// the profiles it inherits (<profile> elements), in order
    pub inherits: Vec<String>,
    /// the settings written in the profile itself
    pub settings: Settings<String>,
    /// where each of them is written
    pub settings_at: Settings<Location>,
    /// the settings in effect after inheritance
    pub effective: Settings<String>,
    /// where each setting in effect got its winning value (the element, through inheritance and fragments)
    pub effective_at: Settings<Location>,
    /// the default profile, a user's, or inherited by one of them
    pub in_use: bool,
    /// the <default_profile>
    pub is_default: bool,
    /// it, or a profile it inherits, has <constraints>
    pub constrained: bool,
}

/// A user of the users config.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ConfigUser {
    pub name: String,
    /// the user's element
    pub at: Location,
    /// how it authenticates: plaintext, sha256, double_sha1, bcrypt, none, ldap, kerberos, ssl_certificates, ssh_keys, http, implicit_none (no element)
    pub auth: String,
    /// the authentication element (the user's element when there is none)
    pub auth_at: Location,
    /// no password at all (empty <password>, <no_password>, or none given)
    pub password_empty: bool,
    /// a non-empty <password> in plain text
    pub plaintext_password: bool,
    /// <networks>
    pub networks: Networks,
    pub networks_at: Location,
    /// reachable from any address (no <networks>, ::/0, 0.0.0.0/0, a match-all regexp)
    pub open_networks: bool,
    /// its <profile> (default: `default`)
    pub profile: String,
    /// the settings in effect through its profile, after inheritance
    pub settings: Settings<String>,
    /// <access_management> is on
    pub access_management: bool,
    pub access_management_at: Location,
    /// <named_collection_control> is on (create, alter and drop named collections)
    pub named_collection_control: bool,
    /// <show_named_collections_secrets> is on (read the secrets in named collections)
    pub show_named_collections_secrets: bool,
    /// its profile or the default profile (or one they inherit) has <constraints>
    pub constrained: bool,
    /// its <quota> (empty: none named)
    pub quota: String,
    /// the <quota> element (the user's element when there is none)
    pub quota_at: Location,
    /// its <quota> names a quota that <quotas> does not define: the server starts and the user runs under no quota
    pub quota_missing: bool,
}

/// The addresses a user may connect from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Networks {
    pub ip: Vec<String>,
    pub host: Vec<String>,
    pub host_regexp: Vec<String>,
    /// the user has a <networks> element
    pub declared: bool,
}

/// One setting written in a profile (rules iterate over them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WrittenSetting {
    /// the profile's name
    pub profile: String,
    /// the setting
    pub name: String,
    pub value: String,
    pub at: Location,
    /// its profile is in use
    pub in_use: bool,
    /// its profile is the default profile
    pub is_default: bool,
}

/// Authentication elements of a user and what they mean.
const AUTH_KINDS: &[(&str, &str)] = &[
    ("password", "plaintext"),
    ("password_sha256_hex", "sha256"),
    ("password_double_sha1_hex", "double_sha1"),
    ("password_bcrypt_hash", "bcrypt"),
    ("no_password", "none"),
    ("ldap", "ldap"),
    ("kerberos", "kerberos"),
    ("ssl_certificates", "ssl_certificates"),
    ("ssh_keys", "ssh_keys"),
    ("http_authentication", "http"),
];

/// The profiles (by name) and users of a users tree, its `model_profiles` as
/// `model::profiles` reads them; `at` locates an element. Read together: a profile is in use
/// when a user names it.
pub fn profiles_and_users(
    users_root: Option<&Element>,
    model_profiles: &[model::Profile],
    default_profile: &str,
    at: &dyn Fn(Origin) -> Location,
) -> (Vec<ConfigProfile>, Vec<ConfigUser>) {
    let Some(root) = users_root else { return Default::default() };
    let mut profiles = profiles(model_profiles, at);
    let users = users(root, &profiles, default_profile, at);
    mark_profiles_in_use(&mut profiles, default_profile, &users);
    (profiles, users)
}

/// Every setting written in a profile, one item each. Not the profile's settings in effect:
/// a copy for each of its settings was most of the facts of 2,000 profiles (a rule finds
/// them in `config.profiles`).
pub fn profile_settings(profiles: &[ConfigProfile]) -> Vec<WrittenSetting> {
    let mut out = Vec::new();
    for p in profiles {
        for (name, value) in &p.settings.0 {
            out.push(WrittenSetting {
                profile: p.name.clone(),
                name: name.clone(),
                value: value.clone(),
                at: p.settings_at.0.get(name).cloned().unwrap_or_default(),
                in_use: p.in_use,
                is_default: p.is_default,
            });
        }
    }
    out
}

/// [`profile_settings`] by setting name: a rule about one setting reads its few items
/// instead of scanning every profile's settings (eight rules scanned 8,000 items each on
/// 2,000 profiles).
pub fn profile_settings_by_name(profiles: &[ConfigProfile]) -> Settings<Vec<WrittenSetting>> {
    let mut by_name: BTreeMap<String, Vec<WrittenSetting>> = BTreeMap::new();
    for setting in profile_settings(profiles) {
        // the name copied only for its first item
        match by_name.get_mut(&setting.name) {
            Some(items) => items.push(setting),
            None => {
                by_name.insert(setting.name.clone(), vec![setting]);
            }
        }
    }
    Settings(by_name)
}

/// Profiles in name order (the last of a name), with settings as written and as in effect
/// after inheritance.
fn profiles(profiles: &[model::Profile], at: &dyn Fn(Origin) -> Location) -> Vec<ConfigProfile> {
    let by_name: HashMap<&str, &Element> = profiles.iter().map(|p| (p.name.as_str(), p.element)).collect();
    let mut out = Vec::with_capacity(profiles.len());
    for p in profiles {
        // the profile's own settings in name order, each value and location read once: most
        // of them are also its settings in effect
        let mut own: Vec<(&str, &Element, String, Location)> =
            p.settings.iter().map(|s| (s.name.as_str(), *s, s.value(), at(s.origin))).collect();
        own.sort_unstable_by_key(|(name, ..)| *name);
        let winners = effective_settings(&by_name, p.element);
        let (mut effective, mut effective_at) = (Vec::with_capacity(winners.len()), Vec::with_capacity(winners.len()));
        let mut written = own.iter().peekable();
        for (&name, &element) in &winners {
            while written.next_if(|(n, ..)| *n < name).is_some() {}
            // where each value in effect was set: through inheritance, in whichever fragment
            let (value, location) = match written.peek() {
                Some((n, e, value, location)) if *n == name && std::ptr::eq(*e, element) => {
                    (value.clone(), location.clone())
                }
                _ => (element.value(), at(element.origin)),
            };
            effective.push((name.to_string(), value));
            effective_at.push((name.to_string(), location));
        }
        let (mut settings, mut settings_at) = (Vec::with_capacity(own.len()), Vec::with_capacity(own.len()));
        for (name, _, value, location) in own {
            settings.push((name.to_string(), value));
            settings_at.push((name.to_string(), location));
        }
        let profile = ConfigProfile {
            name: p.name.clone(),
            at: at(p.element.origin),
            inherits: p.inherits.clone(),
            settings: settings.into_iter().collect(),
            settings_at: settings_at.into_iter().collect(),
            effective: effective.into_iter().collect(),
            effective_at: effective_at.into_iter().collect(),
            constrained: constrained(&by_name, p.element),
            ..ConfigProfile::default()
        };
        out.push(Some(profile));
    }
    // put in name order by their indices: inserted into a map by name, each profile (a few
    // hundred bytes) would be moved about within its nodes
    let mut order: Vec<usize> = (0..out.len()).collect();
    let name = |i: usize| out[i].as_ref().map_or("", |p: &ConfigProfile| p.name.as_str());
    order.sort_by(|&a, &b| name(a).cmp(name(b)).then(b.cmp(&a)));
    order.dedup_by(|later, kept| name(*later) == name(*kept));
    order.into_iter().filter_map(|i| out[i].take()).collect()
}

/// The profile of this name in profiles in name order.
fn named<'p>(profiles: &'p [ConfigProfile], name: &str) -> Option<&'p ConfigProfile> {
    profiles.binary_search_by(|p| p.name.as_str().cmp(name)).ok().map(|at| &profiles[at])
}

/// Users; `settings` is what a session of the user runs with: its profile's settings over
/// the server's default profile, which applies beneath every user's profile.
fn users(
    users_root: &Element,
    profiles: &[ConfigProfile],
    default_profile: &str,
    at: &dyn Fn(Origin) -> Location,
) -> Vec<ConfigUser> {
    let Some(users) = users_root.child("users") else { return Vec::new() };
    let quotas: BTreeSet<&str> =
        users_root.child("quotas").map(|q| q.elements().map(|e| e.name.as_str()).collect()).unwrap_or_default();
    let effective = |name: &str| named(profiles, name).map(|p| &p.effective.0);
    let constrained = |name: &str| named(profiles, name).is_some_and(|p| p.constrained);
    users
        .elements()
        .map(|u| {
            // the user's element locates each element it lacks
            let user_at = at(u.origin);
            let at_or_user = |e: Option<&Element>| e.map_or_else(|| user_at.clone(), |e| at(e.origin));
            let auth = AUTH_KINDS.iter().find_map(|(tag, kind)| u.child(tag).map(|e| (*kind, e)));
            let (kind, auth_at) = match auth {
                Some((kind, e)) => (kind, at(e.origin)),
                None => ("implicit_none", user_at.clone()),
            };
            let password_empty = match auth {
                Some(("plaintext", e)) => e.value().is_empty(),
                Some(("none", _)) | None => true,
                _ => false,
            };
            let networks = u.child("networks");
            let list = |tag: &str| -> Vec<String> {
                networks.map(|n| n.children_named(tag).map(Element::value).collect()).unwrap_or_default()
            };
            let declared = Networks {
                ip: list("ip"),
                host: list("host"),
                host_regexp: list("host_regexp"),
                declared: networks.is_some(),
            };
            let open_networks = networks.is_none()
                || declared.ip.iter().any(|i| matches!(i.as_str(), "::/0" | "0.0.0.0/0" | "::" | "0.0.0.0"))
                || declared.host_regexp.iter().any(|r| matches!(r.as_str(), ".*" | "^.*$" | ".+"));
            let profile = u.child("profile").map_or("default".to_string(), Element::value);
            let access_management = u.child("access_management");
            let switch = |name: &str| u.child(name).is_some_and(|a| is_true(&a.value()));
            let quota = u.child("quota");
            let quota_name = quota.map(Element::value).unwrap_or_default();
            let settings = over(effective(default_profile), effective(&profile));
            ConfigUser {
                name: String::from(u.name.as_str()),
                auth: kind.to_string(),
                auth_at,
                password_empty,
                plaintext_password: kind == "plaintext" && !password_empty,
                networks: declared,
                networks_at: at_or_user(networks),
                open_networks,
                access_management: access_management.is_some_and(|a| is_true(&a.value())),
                access_management_at: at_or_user(access_management),
                named_collection_control: switch("named_collection_control"),
                show_named_collections_secrets: switch("show_named_collections_secrets"),
                constrained: constrained(default_profile) || constrained(&profile),
                settings: Settings(settings),
                profile,
                quota_missing: !quota_name.is_empty() && !quotas.contains(quota_name.as_str()),
                quota: quota_name,
                quota_at: at_or_user(quota),
                at: user_at,
            }
        })
        .collect()
}

/// A user's settings: its profile's (`own`) over the default profile's (`base`). The two
/// maps are merged in name order and the result built at once, each setting copied once (not
/// the base cloned and each of its own inserted into it).
fn over(base: Option<&BTreeMap<String, String>>, own: Option<&BTreeMap<String, String>>) -> BTreeMap<String, String> {
    let (mut base, mut own) = (base.into_iter().flatten().peekable(), own.into_iter().flatten().peekable());
    let mut merged = Vec::new();
    loop {
        let next = match (base.peek(), own.peek()) {
            (Some((b, _)), Some((o, _))) if b < o => base.next(),
            (Some((b, _)), Some((o, _))) if b == o => {
                base.next();
                own.next()
            }
            (_, Some(_)) => own.next(),
            (Some(_), None) => base.next(),
            (None, None) => break,
        };
        merged.extend(next.map(|(name, value)| (name.clone(), value.clone())));
    }
    merged.into_iter().collect()
}

/// Marks the profiles that matter: the default profile, those assigned to users, and
/// everything they inherit.
fn mark_profiles_in_use(profiles: &mut [ConfigProfile], default_profile: &str, users: &[ConfigUser]) {
    let mut pending: Vec<&str> = users.iter().map(|u| u.profile.as_str()).collect();
    pending.push(default_profile);
    let mut seen = BTreeSet::new();
    while let Some(name) = pending.pop() {
        if seen.insert(name.to_string())
            && let Some(p) = named(profiles, name)
        {
            pending.extend(p.inherits.iter().map(String::as_str));
        }
    }
    for p in profiles.iter_mut() {
        p.in_use = seen.contains(p.name.as_str());
        p.is_default = p.name == default_profile;
    }
}

/// Whether a profile, or one it inherits, has `<constraints>` with anything in them
/// (ClickHouse merges constraints through inheritance as it does settings).
fn constrained(by_name: &HashMap<&str, &Element>, profile: &Element) -> bool {
    let mut seen = HashSet::default();
    let mut pending = vec![profile];
    while let Some(p) = pending.pop() {
        for child in p.elements() {
            match child.name.as_str() {
                "constraints" if child.has_element_children() => return true,
                "profile" => {
                    let parent = child.text();
                    if let Some(element) = by_name.get(parent.as_ref())
                        && seen.insert(parent)
                    {
                        pending.push(element);
                    }
                }
                _ => {}
            }
        }
    }
    false
}

/// A profile's settings in effect and the element that set each, as ClickHouse's
/// SettingsProfilesCache::substituteProfiles computes them: a `<profile>` parent's elements are
/// spliced in where it is named, in document order, each profile at most once (a repeated or
/// circular parent is skipped, not an error), and the last value of a setting wins. Iterative,
/// and linear in the elements reached: no cycle or fan-in makes it grow.
fn effective_settings<'a>(
    by_name: &HashMap<&str, &'a Element>,
    profile: &'a Element,
) -> BTreeMap<&'a str, &'a Element> {
    let mut winners = BTreeMap::new();
    let mut substituted: HashSet<Cow<'a, str>> = HashSet::default();
    // each frame: a profile's remaining children and the setting names it has set so far
    // (a profile's first element of a name is the one ClickHouse reads)
    let mut stack = vec![(profile.elements(), HashSet::default())];
    while let Some((children, seen)) = stack.last_mut() {
        let Some(child) = children.next() else {
            stack.pop();
            continue;
        };
        match child.name.as_str() {
            "constraints" => {}
            "profile" => {
                let parent = child.text();
                if let Some(element) = by_name.get(parent.as_ref())
                    && substituted.insert(parent)
                {
                    stack.push((element.elements(), HashSet::default()));
                }
            }
            name => {
                if seen.insert(name) {
                    winners.insert(name, child);
                }
            }
        }
    }
    winners
}

crate::fact_object!(ConfigProfile {
    name,
    at,
    inherits,
    settings,
    settings_at,
    effective,
    effective_at,
    in_use,
    is_default,
    constrained,
});
crate::fact_object!(ConfigUser {
    name,
    at,
    auth,
    auth_at,
    password_empty,
    plaintext_password,
    networks,
    networks_at,
    open_networks,
    profile,
    settings,
    access_management,
    access_management_at,
    named_collection_control,
    show_named_collections_secrets,
    constrained,
    quota,
    quota_at,
    quota_missing,
});
crate::fact_object!(Networks { ip, host, host_regexp, declared });
crate::fact_object!(WrittenSetting { profile, name, value, at, in_use, is_default });
