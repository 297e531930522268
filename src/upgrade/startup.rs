//! What the target refuses at startup that the running version ignores: a top-level key of
//! the server config that no code reads. ClickHouse before the check (PR 100332,
//! `ServerSettings::checkUnknownSettings`) starts and ignores such a key; from the first
//! release with it, the server stops with UNKNOWN_ELEMENT_IN_CONFIG naming the key, at
//! startup and on SYSTEM RELOAD CONFIG, unless `skip_check_for_incorrect_settings` is set
//! (in the config, or `--skip_check_for_incorrect_settings=1` on the command line).

use serde::Serialize;

use super::version_name;
use crate::facts::config::{RootElement, root_element_suggestion};
use crate::version::Version;

/// The first ClickHouse release with the check for unknown top-level keys (see
/// docs/upgrade.md: PR 100332 was merged after 2026-08-03, so 26.3 to 26.7 do not have it;
/// 26.8 is the first release branched after it).
pub const UNKNOWN_KEY_CHECK: Version = Version { major: 26, minor: 8, patch: 0, build: 0 };

/// A top-level key the target refuses to start with.
#[derive(Debug, Clone, Serialize)]
pub struct RefusedKey {
    pub name: String,
    /// Where it is written (file:line).
    pub at: String,
    /// A section (with child elements) rather than a scalar setting.
    pub section: bool,
    /// The known name a few letters off, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
    pub detail: String,
    pub fix: String,
}

/// Whether the upgrade crosses the first release with the check.
pub(super) fn crosses_check(from: Version, to: Version) -> bool {
    let minor = |v: Version| (v.major, v.minor);
    minor(from) < minor(UNKNOWN_KEY_CHECK) && minor(to) >= minor(UNKNOWN_KEY_CHECK)
}

/// The root elements the target's check rejects, when the upgrade crosses it: every element
/// no code reads and the config does not name itself, unless the config already sets the
/// escape hatch (then nothing is refused).
pub(super) fn refused_keys(elements: &[RootElement], from: Version, to: Version) -> Vec<RefusedKey> {
    if !crosses_check(from, to) || check_skipped(elements) {
        return Vec::new();
    }
    elements
        .iter()
        .filter(|e| !e.known && !e.referenced)
        .map(|e| {
            let suggestion = root_element_suggestion(&e.name).map(str::to_string);
            let what = if e.leaf { "no server setting" } else { "no config section" };
            let detail = format!(
                "{} ignores <{}> (read by no code); {} refuses to start with it: \
                 UNKNOWN_ELEMENT_IN_CONFIG, {what} of that name",
                version_name(from),
                e.name,
                version_name(to)
            );
            let rename = suggestion.as_ref().map(|s| format!(" or rename it to <{s}>")).unwrap_or_default();
            let fix = format!(
                "remove <{}>{rename} at {} before the upgrade; as a stopgap, \
                 <skip_check_for_incorrect_settings>1</skip_check_for_incorrect_settings> in config.xml \
                 lets the server start (it also turns off the check for query settings at the top level)",
                e.name, e.at.0
            );
            RefusedKey { name: e.name.clone(), at: e.at.0.clone(), section: !e.leaf, suggestion, detail, fix }
        })
        .collect()
}

/// Whether the config sets `<skip_check_for_incorrect_settings>` to a true value (Poco's
/// getBool: 1, true, yes, on, any case).
fn check_skipped(elements: &[RootElement]) -> bool {
    elements
        .iter()
        .rfind(|e| e.name == "skip_check_for_incorrect_settings")
        .is_some_and(|e| matches!(e.value.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::typed::Location;

    fn element(name: &str, value: &str, known: bool) -> RootElement {
        RootElement {
            name: name.into(),
            leaf: true,
            value: value.into(),
            at: Location(format!("config.d/{name}.xml:2")),
            known,
            ..RootElement::default()
        }
    }

    fn v(s: &str) -> Version {
        s.parse().unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn an_unknown_key_is_refused_only_when_the_upgrade_crosses_the_check() {
        let elements = [element("max_thred_pool_size", "100", false), element("max_thread_pool_size", "9", true)];
        let refused = refused_keys(&elements, v("25.8"), v("26.9"));
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert_eq!(refused[0].name, "max_thred_pool_size");
        assert_eq!(refused[0].at, "config.d/max_thred_pool_size.xml:2");
        assert_eq!(refused[0].suggestion.as_deref(), Some("max_thread_pool_size"));
        assert!(refused[0].fix.contains("skip_check_for_incorrect_settings"), "{}", refused[0].fix);
        for (from, to) in [("25.8", "25.8.9.1"), ("25.8", "26.7"), ("26.8", "26.9"), ("26.9", "26.9")] {
            assert!(refused_keys(&elements, v(from), v(to)).is_empty(), "{from} -> {to}");
        }
    }

    #[test]
    fn the_escape_hatch_and_the_configs_own_references_let_a_key_pass() {
        let mut payload = element("my_payload", "Hello", false);
        payload.referenced = true;
        assert!(refused_keys(&[payload], v("25.8"), v("26.9")).is_empty());
        for (value, refused) in [("1", 0), ("true", 0), ("On", 0), ("0", 1), ("", 1)] {
            let elements = [element("typo_key", "1", false), element("skip_check_for_incorrect_settings", value, true)];
            assert_eq!(refused_keys(&elements, v("25.8"), v("26.9")).len(), refused, "skip = {value:?}");
        }
    }
}
