//! Rows of the access tables: settings profiles and their elements, users, role grants,
//! grants, quotas, row policies.

use super::*;

/// A row of system.privileges: a privilege the release has.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct Privilege {
    pub privilege: String,
}

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
    #[serde(deserialize_with = "crate::facts::typed::uint")]
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
    /// for a user with a plaintext password that accepts any address: whether the server let chaudit log in as it with an empty password (null: not tried)
    pub empty_password: Option<bool>,
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

/// A row of system.grants on every database (`*.*`), partial revokes left out.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct Grant {
    pub user_name: Option<String>,
    pub role_name: Option<String>,
    /// ALL, ACCESS MANAGEMENT, SELECT, ...
    pub access_type: String,
    pub grant_option: Flag,
}

/// A row of system.quotas, and whether it limits anything.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct Quota {
    pub name: String,
    pub storage: String,
    pub apply_to_all: Flag,
    pub apply_to_list: Vec<String>,
    pub apply_to_except: Vec<String>,
    /// one of its intervals bounds queries, errors, rows, bytes or execution time
    pub limited: Flag,
}

/// A row of system.row_policies.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct RowPolicy {
    pub short_name: String,
    pub database: String,
    /// empty for a policy on a whole database (ON db.*)
    pub table: String,
    pub is_restrictive: Flag,
    pub apply_to_all: Flag,
    pub apply_to_list: Vec<String>,
    pub apply_to_except: Vec<String>,
}
