//! Rows of the settings tables: server settings, the session's settings (the changed ones
//! read alone), MergeTree settings.

use super::*;
use crate::facts::typed::{FactKey, Facts, Settings};

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

/// The changed settings of `live.settings`, in name order, read without keeping the others
/// (a replica has 1,300 settings, a few of them changed).
#[derive(Debug, Default)]
pub struct ChangedSettings<'a>(pub Vec<(&'a str, SessionSetting<'a>)>);

impl<'de> Deserialize<'de> for ChangedSettings<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Changed;
        impl<'de> serde::de::Visitor<'de> for Changed {
            type Value = ChangedSettings<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a map of settings by name")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut changed = Vec::new();
                while let Some((name, setting)) = map.next_entry::<&'de str, SessionSetting<'de>>()? {
                    if setting.changed {
                        changed.push((name, setting));
                    }
                }
                changed.sort_unstable_by_key(|(name, _)| *name);
                Ok(ChangedSettings(changed))
            }
        }
        deserializer.deserialize_map(Changed)
    }
}

impl FactKey<Settings<SessionSetting<'static>>> {
    /// The changed settings of a session's settings fact (`live.settings`), without reading
    /// the others; an error names a fact of another shape.
    pub fn changed<'a>(&self, document: &'a impl Facts) -> Result<ChangedSettings<'a>, String> {
        match self.json(document) {
            None | Some(serde_json::Value::Null) => Ok(ChangedSettings::default()),
            Some(value) => ChangedSettings::deserialize(value)
                .map_err(|e| format!("{} is not of the catalog's shape: {e}", self.path())),
        }
    }
}

/// A setting of system.merge_tree_settings changed in `<merge_tree>`, by name.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct MergeTreeSetting<'a> {
    #[serde(borrow)]
    pub value: Cow<'a, str>,
    pub changed: bool,
}
