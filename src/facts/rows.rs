//! The rows of the server's system tables that chaudit's code reads, as the collection
//! records them (src/collect/plan.rs has their queries). A row is open: a newer server may
//! add columns, which are kept in the document for the rules and ignored here. A column a
//! trimmed snapshot leaves out reads as empty.

use std::borrow::Cow;

use schemars::JsonSchema;
use serde::Deserialize;

use super::typed::{Count, Flag};

/// A row of system.settings_profile_elements that sets a setting in a profile.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct ProfileSetting {
    pub profile_name: String,
    pub setting_name: String,
    pub value: Option<String>,
}

/// A row of system.settings_profile_elements of a user.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct UserProfile {
    pub user_name: String,
    pub inherit_profile: Option<String>,
    pub setting_name: Option<String>,
    pub value: Option<String>,
}

/// A row of system.settings_profile_elements: one element of a profile, user or role.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct ProfileElement {
    pub profile_name: Option<String>,
    pub user_name: Option<String>,
    pub role_name: Option<String>,
    #[serde(deserialize_with = "super::typed::uint")]
    pub index: u64,
    pub setting_name: Option<String>,
    pub value: Option<String>,
    pub min: Option<String>,
    pub max: Option<String>,
    /// WRITABLE, CONST or CHANGEABLE_IN_READONLY
    pub writability: Option<String>,
    pub inherit_profile: Option<String>,
}

/// A row of system.settings_profiles.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct ProfileTarget {
    pub name: String,
    pub apply_to_all: Flag,
    pub apply_to_list: Vec<String>,
    pub apply_to_except: Vec<String>,
}

/// A row of system.users.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct User {
    pub name: String,
    /// where it is defined: users_xml (config files), local_directory (SQL), replicated, ldap
    pub storage: String,
    /// how it authenticates as text (no_password, plaintext_password, sha256_password, ...; a list on servers with several methods)
    pub auth_type: String,
    /// addresses and subnets it may connect from (::/0: any)
    pub host_ip: Vec<String>,
    pub host_names: Vec<String>,
    pub host_names_regexp: Vec<String>,
    pub host_names_like: Vec<String>,
}

/// A row of system.role_grants: a role granted to a user or a role.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct RoleGrant {
    pub user_name: Option<String>,
    pub role_name: Option<String>,
    pub granted_role_name: String,
    pub with_admin_option: Flag,
}

/// A setting of system.server_settings, by name.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct ServerSetting<'a> {
    #[serde(borrow)]
    pub value: Cow<'a, str>,
    #[serde(borrow)]
    pub default: Cow<'a, str>,
    /// present in the config (not: differs from the default)
    pub changed: bool,
}

/// A setting of system.settings (the auditing user's session), by name.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct SessionSetting<'a> {
    // borrowed from the fact: a replica's 1,300 settings are read, not copied
    #[serde(borrow)]
    pub value: Cow<'a, str>,
    #[serde(borrow)]
    pub default: Cow<'a, str>,
    pub changed: bool,
}

/// A setting a user's queries ran with changed (query_log `Settings`), and how many did.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct WorkloadSetting {
    pub user: String,
    pub name: String,
    pub value: String,
    pub queries: Count,
}
