//! Settings this server sets that the target no longer knows, ignores or renamed: from the
//! target's setting catalog (made from a real server) and the change history's reasons.

use serde::Serialize;

use super::explicit::ExplicitSettings;
use super::history::History;
use super::server::ServerFacts;
use super::version_name;
use crate::facts::catalog::{Catalog, SettingKind};
use crate::facts::rows::SessionSetting;
use crate::facts::typed::Settings;
use crate::version::Version;

#[derive(Debug, Clone, Serialize)]
pub struct BreakingSetting {
    pub kind: SettingKind,
    pub name: String,
    pub problem: Problem,
    /// Where this server sets it.
    pub set_at: Vec<String>,
    pub detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Problem {
    /// The target does not know the name: a profile or query that sets it is refused.
    Unknown,
    /// The target keeps the name but ignores it (or refuses values other than its own).
    Obsolete,
    /// The name became an alias of another setting (it still works).
    Renamed,
}

impl Problem {
    pub fn name(self) -> &'static str {
        match self {
            Problem::Unknown => "unknown in the target",
            Problem::Obsolete => "obsolete in the target",
            Problem::Renamed => "renamed (alias kept)",
        }
    }
}

/// The setting names the running version knows: the live server's own lists, else the
/// catalog of that release.
pub(super) struct FromNames<'a> {
    /// The running server's system.settings (MergeTree names come from the catalog).
    live_settings: Option<&'a Settings<SessionSetting<'a>>>,
    catalog: Option<&'static Catalog>,
}

impl<'a> FromNames<'a> {
    pub(super) fn of(server: &'a ServerFacts<'a>, catalog: Option<&'static Catalog>) -> FromNames<'a> {
        let live_settings = Some(&server.settings).filter(|s| !s.0.is_empty());
        FromNames { live_settings, catalog }
    }

    /// Whether the running version knows the name; `None` when chaudit cannot tell.
    pub(super) fn knows(&self, kind: SettingKind, name: &str) -> Option<bool> {
        match (kind, self.live_settings, self.catalog) {
            (SettingKind::Session, Some(settings), _) => Some(settings.0.contains_key(name)),
            (_, _, Some(c)) => Some(c.of_kind(kind).contains_key(name)),
            _ => None,
        }
    }

    fn obsolete(&self, kind: SettingKind, name: &str) -> bool {
        self.catalog.and_then(|c| c.of_kind(kind).get(name)).is_some_and(|s| s.is_obsolete)
    }

    fn alias_for(&self, kind: SettingKind, name: &str) -> Option<String> {
        self.catalog.and_then(|c| c.of_kind(kind).get(name)).and_then(|s| s.alias_for.map(str::to_string))
    }
}

pub(super) fn breaking(
    explicit: &ExplicitSettings,
    from_names: &FromNames,
    target: Option<&Catalog>,
    history: &History,
    from: Version,
    to: Version,
) -> Vec<BreakingSetting> {
    let mut out = Vec::new();
    for (kind, name) in explicit.names() {
        let known_before = from_names.knows(kind, name);
        let found = |problem, detail: String| BreakingSetting {
            kind,
            name: name.to_string(),
            problem,
            set_at: explicit.places(kind, name),
            detail,
        };
        let obsoleted = history.obsoleted(kind, name, from, to);
        match target.map(|c| c.of_kind(kind).get(name)) {
            // a name both versions lack is a typo the audit reports, not an upgrade matter
            Some(None) if known_before != Some(false) => {
                let suggestion = (kind == SettingKind::Session).then(|| target.and_then(|c| c.suggest(name))).flatten();
                let detail = match suggestion {
                    Some(s) => format!(
                        "{} does not know it (closest: `{s}`); a profile or query that sets it is refused",
                        version_name(to)
                    ),
                    None => {
                        format!("{} does not know it; a profile or query that sets it is refused", version_name(to))
                    }
                };
                out.push(found(Problem::Unknown, detail));
            }
            Some(Some(setting)) if setting.is_obsolete && !from_names.obsolete(kind, name) => {
                let why = obsoleted.unwrap_or_else(|| "marked obsolete in the target's system.settings".into());
                out.push(found(Problem::Obsolete, format!("obsolete in {}: {why}", version_name(to))));
            }
            Some(Some(setting)) => {
                if let Some(canonical) =
                    setting.alias_for.as_ref().filter(|_| from_names.alias_for(kind, name).is_none())
                {
                    out.push(found(
                        Problem::Renamed,
                        format!("in {} `{name}` is an alias of `{canonical}`; it keeps working", version_name(to)),
                    ));
                }
            }
            None => {
                if let Some(why) = obsoleted {
                    out.push(found(Problem::Obsolete, format!("obsolete by {}: {why}", version_name(to))));
                }
            }
            Some(None) => {}
        }
    }
    out
}
