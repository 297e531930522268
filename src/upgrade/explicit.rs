//! Where this server sets each setting (so that a default change does not reach it there).

use super::server::ServerFacts;
use super::workload::Usage;
use crate::facts::catalog::{self, Catalog, SettingKind};

/// Where this server sets each setting: profiles and <merge_tree> in the files, settings
/// the server reports as changed, settings the workload's queries ran with.
pub(super) struct ExplicitSettings {
    places: Vec<(SettingKind, String, String)>,
}

impl ExplicitSettings {
    /// `from_catalog`: the running release's setting catalog, when chaudit has it.
    pub(super) fn of(
        server: &ServerFacts,
        usage: Option<&Usage>,
        from_catalog: Option<&'static Catalog>,
    ) -> ExplicitSettings {
        let mut places = Vec::new();
        places.extend(server.profile_settings.iter().map(|s| {
            let place = format!("profile `{}` = {} ({})", s.profile, s.value, s.at.0);
            (SettingKind::Session, s.name.clone(), place)
        }));
        for (name, value) in &server.merge_tree.0 {
            let at = server.merge_tree_at.0.get(name).map_or("", |l| l.0.as_str());
            places.push((SettingKind::MergeTree, name.clone(), format!("<merge_tree> = {value} ({at})")));
        }
        // system.settings lists an alias beside its setting, both changed: report the setting
        let catalog = from_catalog.unwrap_or_else(catalog::builtin);
        let is_alias =
            |kind: SettingKind, name: &str| catalog.of_kind(kind).get(name).is_some_and(|s| s.alias_for.is_some());
        let user = if server.endpoint.is_empty() { "the server" } else { server.endpoint.as_str() };
        let session = server.settings.0.iter().map(|(name, row)| (SettingKind::Session, name, row.changed, &row.value));
        let merge_tree = server
            .merge_tree_settings
            .0
            .iter()
            .map(|(name, row)| (SettingKind::MergeTree, name, row.changed, &row.value));
        for (kind, name, _, value) in
            session.chain(merge_tree).filter(|(kind, name, changed, _)| *changed && !is_alias(*kind, name))
        {
            let table = if kind == SettingKind::Session { "settings" } else { "merge_tree_settings" };
            places.push((kind, name.clone(), format!("changed on {user} = {value} (system.{table})")));
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
