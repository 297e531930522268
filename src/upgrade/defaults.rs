//! Defaults as the servers report them, and when two printed values are the same.

use super::history::{self, DefaultChange};
use super::server::ServerFacts;
use crate::facts::catalog::{Catalog, SettingKind};
use crate::version::Version;

/// Defaults as the servers report them: the running server's own (live), else the catalog
/// of its release; the target's catalog.
pub(super) struct Defaults<'a> {
    pub(super) server: &'a ServerFacts<'a>,
    pub(super) from: Option<&'static Catalog>,
    pub(super) to: Option<&'static Catalog>,
}

impl Defaults<'_> {
    pub(super) fn before(&self, kind: SettingKind, name: &str) -> Option<String> {
        let live = match kind {
            SettingKind::Session => self.server.settings.0.get(name).map(|row| row.default.as_ref()),
            // the live fact lists changed MergeTree settings only
            SettingKind::MergeTree => None,
        };
        live.map(str::to_string).or_else(|| self.from?.of_kind(kind).get(name)?.default.map(str::to_string))
    }

    pub(super) fn after(&self, kind: SettingKind, name: &str) -> Option<String> {
        self.to?.of_kind(kind).get(name)?.default.map(str::to_string)
    }

    /// Defaults that differ between the two servers although the history does not list them
    /// (found only when both sides are known).
    pub(super) fn unlisted_changes(&self, listed: &[DefaultChange], to: Version) -> Vec<DefaultChange> {
        let Some(target) = self.to else { return Vec::new() };
        let mut out = Vec::new();
        for kind in [SettingKind::Session, SettingKind::MergeTree] {
            for (name, setting) in target.of_kind(kind).iter() {
                if setting.alias_for.is_some() || setting.is_obsolete {
                    continue;
                }
                let (Some(old), Some(new)) = (self.before(kind, name), setting.default) else { continue };
                if same_value(&old, new) || listed.iter().any(|c| c.kind == kind && c.name == name) {
                    continue;
                }
                out.push(DefaultChange {
                    kind,
                    name: name.to_string(),
                    from_default: old.clone(),
                    to_default: new.to_string(),
                    steps: vec![history::Step {
                        version: format!("{}.{}", to.major, to.minor),
                        previous_value: old,
                        new_value: new.to_string(),
                        reason: "the two versions' defaults differ (system.settings); system.settings_changes does not list it".into(),
                    }],
                    // `compatibility` follows the history, which does not know this one
                    revertible: false,
                });
            }
        }
        out
    }
}

/// Defaults compare as ClickHouse prints them in different places: quoted or not, booleans
/// as true/1, floats at Float32 precision.
pub(super) fn same_value(a: &str, b: &str) -> bool {
    let norm = |v: &str| {
        let v = v.trim().trim_matches('\'');
        match v.to_ascii_lowercase().as_str() {
            "true" => "1".to_string(),
            "false" => "0".to_string(),
            _ => v.to_string(),
        }
    };
    let (a, b) = (norm(a), norm(b));
    a == b
        || matches!((a.parse::<f64>(), b.parse::<f64>()), (Ok(x), Ok(y)) if (x - y).abs() <= 1e-6 * x.abs().max(y.abs()))
}
