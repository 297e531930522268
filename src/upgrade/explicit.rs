//! Where this server sets each setting (so that a default change does not reach it there).

use serde_json::Value;

use super::workload::Usage;
use crate::facts::Facts;
use crate::facts::catalog::{self, Catalog, SettingKind};
use crate::facts::config_users::WrittenSetting;
use crate::facts::typed;

/// Where this server sets each setting: profiles and <merge_tree> in the files, settings
/// the server reports as changed, settings the workload's queries ran with.
pub(super) struct ExplicitSettings {
    places: Vec<(SettingKind, String, String)>,
}

impl ExplicitSettings {
    /// `from_catalog`: the running release's setting catalog, when chaudit has it; what
    /// could not be read goes to `notes`.
    pub(super) fn of(
        facts: &Facts,
        usage: Option<&Usage>,
        from_catalog: Option<&'static Catalog>,
        notes: &mut Vec<String>,
    ) -> ExplicitSettings {
        let mut places = Vec::new();
        let config = facts.document.get("config");
        match config.map(|c| typed::read::<Vec<WrittenSetting>>(c, "config", "profile_settings")).transpose() {
            Ok(written) => places.extend(written.into_iter().flatten().map(|s| {
                let place = format!("profile `{}` = {} ({})", s.profile, s.value, s.at.0);
                (SettingKind::Session, s.name, place)
            })),
            Err(why) => notes.push(format!("the profiles' settings are not read ({why})")),
        }
        if let Some(merge_tree) = config.and_then(|c| c["merge_tree"].as_object()) {
            for (name, value) in merge_tree {
                let at = config.and_then(|c| c["merge_tree_at"][name].as_str()).unwrap_or_default();
                let value = value.as_str().unwrap_or_default();
                places.push((SettingKind::MergeTree, name.clone(), format!("<merge_tree> = {value} ({at})")));
            }
        }
        let live = facts.document.get("live");
        // system.settings lists an alias beside its setting, both changed: report the setting
        let catalog = from_catalog.unwrap_or_else(catalog::builtin);
        let is_alias =
            |kind: SettingKind, name: &str| catalog.of_kind(kind).get(name).is_some_and(|s| s.alias_for.is_some());
        for (kind, fact) in [(SettingKind::Session, "settings"), (SettingKind::MergeTree, "merge_tree_settings")] {
            for (name, row) in live.and_then(|l| l[fact].as_object()).into_iter().flatten() {
                if row["changed"] == Value::Bool(true) && !is_alias(kind, name) {
                    let value = row["value"].as_str().unwrap_or_default();
                    let user = live.and_then(|l| l["endpoint"].as_str()).unwrap_or("the server");
                    places.push((kind, name.clone(), format!("changed on {user} = {value} (system.{fact})")));
                }
            }
        }
        for (name, queries) in usage.map(|u| &u.changed_settings).into_iter().flatten() {
            places.push((
                SettingKind::Session,
                name.clone(),
                format!("changed in {queries} queries of the workload (query_log Settings)"),
            ));
        }
        ExplicitSettings { places }
    }

    pub(super) fn places(&self, kind: SettingKind, name: &str) -> Vec<String> {
        let mut out: Vec<String> =
            self.places.iter().filter(|(k, n, _)| *k == kind && n == name).map(|(_, _, at)| at.clone()).collect();
        out.dedup();
        out
    }

    pub(super) fn names(&self) -> Vec<(SettingKind, &str)> {
        let mut out: Vec<(SettingKind, &str)> = self.places.iter().map(|(k, n, _)| (*k, n.as_str())).collect();
        out.sort();
        out.dedup();
        out
    }
}
