//! Facts chaudit derives from what it read (their builders are in collect/): the settings
//! each user runs with, where each changed setting's value comes from, the plans of query
//! shapes, and the machine's routes and block devices. Their types generate the catalog's
//! entries (facts/typed/).

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::keys::live;
use super::typed::Settings;

/// The facts `user_settings` is derived from.
pub const USER_SETTINGS_INPUTS: [&str; 4] =
    [live::USERS.name(), live::PROFILE_ELEMENTS.name(), live::PROFILE_TARGETS.name(), live::ROLE_GRANTS.name()];

/// The facts the scopes are derived from. The workload rows (log.user_settings) only add to
/// what the profiles and users say: a replica without query_log keeps its profile and user rows.
pub const SETTING_SCOPES_INPUTS: [&str; 3] =
    [live::USER_PROFILES.name(), live::PROFILE_SETTINGS.name(), live::SETTINGS.name()];

/// Why a derived fact is not the server's whole truth, if it is not: one of the facts it is
/// derived from could not be read (named, with the server), so the rules that read it are
/// inconclusive rather than passing on nothing.
pub fn derived_unread(live: &Value, fact: &str) -> Option<String> {
    let inputs: &[&str] = if fact == live::SETTING_SCOPES.name() {
        &SETTING_SCOPES_INPUTS
    } else if fact == live::USER_SETTINGS.name() {
        &USER_SETTINGS_INPUTS
    } else {
        return None;
    };
    let endpoint = Some(live::ENDPOINT.text(live)).filter(|e| !e.is_empty()).unwrap_or("the server");
    inputs.iter().find_map(|input| {
        // a reason of another shape is said as its error
        let why = live::UNAVAILABLE.entry(live, input).unwrap_or_else(Some)?;
        Some(format!("derived from live.{input}, which could not be read on {endpoint}: {why}"))
    })
}

/// The settings one user runs with.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct UserSettings {
    pub user: String,
    /// setting → value in effect for the user's sessions
    pub settings: Settings<String>,
    /// setting → the profile, role or user that gives the value
    pub from: Settings<String>,
    /// every profile reached (`default`, profiles given TO it, inherited ones)
    pub profiles: BTreeSet<String>,
    /// one of those elements bounds a setting (min, max, CONST or CHANGEABLE_IN_READONLY)
    pub constrained: bool,
}

/// Where one changed setting's value comes from.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SettingScope {
    /// profile | user | workload | session
    pub scope: &'static str,
    /// the profile, the user, or the endpoint of the session
    pub name: String,
    pub setting: String,
    pub value: String,
    /// the users it applies to
    pub users: Vec<String>,
    /// the profiles of those users
    pub profiles: Vec<String>,
    /// queries of the window that ran with this value, as `user: count`
    pub workload_queries: Vec<String>,
    /// how a message names the scope
    pub subject: String,
}

/// The projection whose leading key a shape filters on: its table, name and that key.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProjectionUse {
    pub table: String,
    pub projection: String,
    pub key: String,
}

/// A candidate's plan (`log.plans`): its lines, or why the EXPLAIN failed.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Plan {
    pub shape: String,
    /// lazy_at_limit (the Top-N text at the lazy limit) | projections (indexes = 1, projections = 1)
    pub check: &'static str,
    /// the EXPLAIN sent
    pub sql: String,
    /// projections: {table, projection, key} the shape filters on; else null
    #[schemars(with = "Value", extend("x-fact" = "any"))]
    pub about: Option<ProjectionUse>,
    /// the plan's lines
    pub plan: Vec<String>,
    /// why this EXPLAIN failed (readonly=1: each sent alone)
    // absent, never null, when it did not
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub error: Option<String>,
}

/// A block device of /sys/block.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(extend("x-fact" = "map"))]
pub struct BlockDevice {
    pub name: String,
    pub rotational: bool,
    pub read_ahead_kb: Option<u64>,
}

crate::fact_object!(BlockDevice { name, rotational, read_ahead_kb });

/// A route of `ip route show`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Route {
    /// the route as printed
    pub route: String,
    pub destination: String,
    pub device: Option<String>,
    /// its initcwnd (none: the kernel default, 10)
    pub initcwnd: Option<u64>,
}

crate::fact_object!(Route { route, destination, device, initcwnd });
