//! `chaudit diff A B`: the drift between two states of a server, each a config tree, a
//! snapshot (`chaudit collect`) or a running server. The effective state is compared, not
//! text: the merged server settings, the settings of each profile and user, the users, their
//! grants, roles and quotas, disks and storage policies, clusters, the version, and the
//! findings of each side's audit.

mod elements;
pub mod render;
mod sections;
mod side;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::audit::{self, AuditError, Live, ProjectSuppressions, Request, RulesRequest};
use crate::collect::NodeDocuments;
use crate::config::LoadOptions;
use crate::facts::keys;
use crate::verdict::{Failure, Policy, Status};

use sections::*;
pub use side::{DiffError, FindingItem, Kind, Options, Side, State, load};

/// A value of one side: its text (secrets masked) and, for a config, where it is written.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Value1 {
    pub value: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// A config that leaves the setting alone, against a server: the server's default.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub default: bool,
    /// The value compared: a secret's own, never shown.
    #[serde(skip)]
    compared: String,
}

/// One thing that differs: its name in the section, and each side's value (None: absent).
#[derive(Debug, Clone, Serialize)]
pub struct Difference {
    pub key: String,
    pub a: Option<Value1>,
    pub b: Option<Value1>,
}

/// A section compared.
#[derive(Debug, Clone, Serialize)]
pub struct SectionDiff {
    pub section: &'static str,
    /// How many names the two sides were compared on.
    pub compared: usize,
    pub differences: Vec<Difference>,
}

/// A section one side cannot give, and why.
#[derive(Debug, Clone, Serialize)]
pub struct NotCompared {
    pub section: &'static str,
    pub reason: String,
}

/// The findings of the two audits, by fingerprint.
#[derive(Debug, Clone, Serialize)]
pub struct FindingsDiff {
    /// In B, not in A.
    pub new: Vec<FindingItem>,
    /// In A, not in B.
    pub gone: Vec<FindingItem>,
    pub unchanged: usize,
}

/// A side as the report names it.
#[derive(Debug, Clone, Serialize)]
pub struct SideInfo {
    pub name: String,
    pub kind: Kind,
}

/// The drift between A and B.
#[derive(Debug, Clone, Serialize)]
pub struct Diff {
    pub a: SideInfo,
    pub b: SideInfo,
    pub status: Status,
    pub equal: bool,
    pub sections: Vec<SectionDiff>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub findings: Option<FindingsDiff>,
    pub not_compared: Vec<NotCompared>,
    /// Whether the values that differ by nature were compared (`--all`).
    pub all: bool,
}

type Items = BTreeMap<String, Value1>;

/// How one section reads a side (and, against the other kind, the other side).
type SectionOf = fn(&State, Option<&State>) -> Option<Items>;

/// Server settings that differ between replicas by nature: not drift unless `--all`.
const BY_NATURE: &[&str] = &["display_name", "interserver_http_host", "hostname", "uptime"];

/// Compares two sides.
pub fn compare(a: &State, b: &State, all: bool) -> Diff {
    let cross = a.kind.is_live() != b.kind.is_live();
    let mut sections = Vec::new();
    let mut not_compared = Vec::new();
    let sections_of: [(&'static str, SectionOf); 13] = [
        ("server settings", server_settings),
        ("merge_tree settings", merge_tree_settings),
        ("config elements", |s, _| s.elements.clone()),
        ("profiles", profiles),
        ("user settings", user_settings),
        ("users", users),
        ("grants", grants),
        ("roles", roles),
        ("quotas", quotas),
        ("disks", disks),
        ("storage policies", policies),
        ("clusters", clusters),
        ("version", version),
    ];
    for (section, items) in sections_of {
        let (other_a, other_b) = if cross { (Some(b), Some(a)) } else { (None, None) };
        match (items(a, other_a), items(b, other_b)) {
            (Some(x), Some(y)) => {
                let mut compared = differences(section, &x, &y, all);
                not_compared.extend(release_only(&mut compared, a, b));
                not_compared.extend(release_defaults(&mut compared, a, b));
                sections.push(compared);
            }
            // two servers have no config elements; against a config it is said once
            (None, None) if section == "config elements" => {}
            _ if section == "config elements" => not_compared.push(NotCompared {
                section,
                reason: "a server's facts hold its settings, not the other elements of its config".into(),
            }),
            (x, _) => {
                let missing = if x.is_none() { a } else { b };
                let why = unread(missing, section)
                    .map_or_else(|| "cannot give it".to_string(), |why| format!("could not read it: {why}"));
                not_compared.push(NotCompared {
                    section,
                    reason: format!("{} ({}) {why}", missing.label, missing.kind.name()),
                });
            }
        }
    }
    if all {
        match (macros(a), macros(b)) {
            (Some(x), Some(y)) => sections.push(differences("macros", &x, &y, true)),
            _ => not_compared
                .push(NotCompared { section: "macros", reason: "a server's facts do not hold its <macros>".into() }),
        }
    }
    let findings = (!cross).then(|| {
        // a rule one audit could not judge (query_log evidence in one snapshot only, a fact
        // one server denied) is not drift
        let both = |f: &FindingItem| a.judged.contains(&f.rule_id) && b.judged.contains(&f.rule_id);
        let only_in = |x: &State, y: &State| -> Vec<FindingItem> {
            x.findings.iter().filter(|(k, f)| !y.findings.contains_key(*k) && both(f)).map(|(_, f)| f.clone()).collect()
        };
        let unchanged = a.findings.keys().filter(|k| b.findings.contains_key(*k)).count();
        let unjudged: BTreeSet<&str> =
            a.findings.values().chain(b.findings.values()).filter(|f| !both(f)).map(|f| f.rule_id.as_str()).collect();
        if !unjudged.is_empty() {
            not_compared.push(NotCompared {
                section: "findings",
                reason: format!(
                    "the findings of {} rule(s) one side could not judge: {}",
                    unjudged.len(),
                    unjudged.into_iter().collect::<Vec<_>>().join(", ")
                ),
            });
        }
        FindingsDiff { new: only_in(b, a), gone: only_in(a, b), unchanged }
    });
    if cross {
        not_compared.push(NotCompared {
            section: "findings",
            reason: "a config and a server are audited by different rules".into(),
        });
    }
    let differs = sections.iter().any(|s| !s.differences.is_empty())
        || findings.as_ref().is_some_and(|f| !f.new.is_empty() || !f.gone.is_empty());
    Diff {
        a: SideInfo { name: a.label.clone(), kind: a.kind },
        b: SideInfo { name: b.label.clone(), kind: b.kind },
        status: if differs { Status::Failing } else { Status::Passed },
        equal: !differs,
        sections,
        findings,
        not_compared,
        all,
    }
}

/// Why a server could not give a section's facts (denied, past a cap), if it could not.
fn unread(state: &State, section: &str) -> Option<String> {
    let facts: Vec<&str> = match section {
        "server settings" => vec![keys::live::SERVER_SETTINGS.name()],
        "merge_tree settings" => vec![keys::live::MERGE_TREE_SETTINGS.name()],
        "profiles" => vec![keys::live::PROFILE_SETTINGS.name()],
        "user settings" => vec![keys::live::USER_SETTINGS.name(), keys::live::PROFILE_ELEMENTS.name()],
        "users" => vec![keys::live::USERS.name(), keys::live::USER_PROFILES.name()],
        "grants" => vec![keys::live::GRANTS.name()],
        "roles" => vec![keys::live::ROLE_GRANTS.name()],
        "quotas" => vec![keys::live::QUOTAS.name()],
        "disks" => vec![keys::live::DISKS.name()],
        "storage policies" => vec![keys::live::STORAGE_POLICIES.name()],
        "clusters" => vec![keys::live::CLUSTERS.name()],
        _ => Vec::new(),
    };
    let unavailable = keys::live::UNAVAILABLE.json(state.live.as_ref()?)?.as_object()?;
    facts.iter().find_map(|f| unavailable.get(*f)).map(|why| crate::mask::shown(&text(why)))
}

fn differences(section: &'static str, a: &Items, b: &Items, all: bool) -> SectionDiff {
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    let keys: Vec<&String> =
        keys.into_iter().filter(|k| all || !BY_NATURE.contains(&k.rsplit(['/', '.']).next().unwrap_or(k))).collect();
    let differences = keys
        .iter()
        .filter(|k| !same(a.get(**k).map(|v| v.compared.as_str()), b.get(**k).map(|v| v.compared.as_str())))
        .map(|k| Difference { key: (*k).clone(), a: a.get(*k).cloned(), b: b.get(*k).cloned() })
        .collect();
    SectionDiff { section, compared: keys.len(), differences }
}

/// Takes out of a section the names one side's release does not have (a server setting
/// its catalog lacks, a privilege its server does not list): two releases started from the
/// same files differ there by release, not by configuration. Said as one note.
fn release_only(section: &mut SectionDiff, a: &State, b: &State) -> Option<NotCompared> {
    let name = section.section;
    let unknown_to = |side: &State, key: &str| -> bool {
        let Some(live) = side.live.as_ref() else { return false };
        match name {
            "server settings" => crate::facts::live_version(live)
                .and_then(crate::facts::catalog::for_version)
                .is_some_and(|catalog| !catalog.is_server(key)),
            "grants" => {
                let privilege = key.split_once(": ").map_or(key, |(_, p)| p);
                keys::live::PRIVILEGES.json(live).is_some()
                    && !list(keys::live::PRIVILEGES.json(live))
                        .any(|row| row.get("privilege").and_then(Value::as_str) == Some(privilege))
            }
            _ => false,
        }
    };
    let mut release = BTreeMap::<String, Vec<String>>::new();
    section.differences.retain(|d| {
        let lacking = match (&d.a, &d.b) {
            (None, Some(_)) if unknown_to(a, &d.key) => a,
            (Some(_), None) if unknown_to(b, &d.key) => b,
            _ => return true,
        };
        let version = keys::live::VERSION.text(lacking.live.as_ref().expect("a side's release"));
        release.entry(version.to_string()).or_default().push(d.key.clone());
        false
    });
    (!release.is_empty()).then(|| NotCompared {
        section: name,
        reason: release
            .into_iter()
            .map(|(version, keys)| {
                let shown = keys.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
                let more = if keys.len() > 5 { format!(" and {} more", keys.len() - 5) } else { String::new() };
                format!("{} that ClickHouse {version} does not have ({shown}{more})", keys.len())
            })
            .collect::<Vec<_>>()
            .join("; "),
    })
}

/// A server or MergeTree setting one config side leaves unset, compared as its release's
/// default (`--clickhouse-version`, a manifest's image): `(absent) -> 16` is no drift when 16
/// is the default. Without a release the setting stays absent, said once.
fn release_defaults(section: &mut SectionDiff, a: &State, b: &State) -> Option<NotCompared> {
    let default_of = |side: &State, name: &str| {
        let catalog = crate::facts::catalog::for_version(side.release?)?;
        match section.section {
            "server settings" => catalog.server_default(name),
            _ => catalog.merge_tree.get(name)?.default,
        }
    };
    if !matches!(section.section, "server settings" | "merge_tree settings") {
        return None;
    }
    let mut unknown_default = false;
    section.differences.retain_mut(|d| {
        for (value, side) in [(&mut d.a, a), (&mut d.b, b)] {
            if value.is_some() || side.kind != Kind::Config {
                continue;
            }
            match default_of(side, &d.key) {
                Some(setting) => {
                    let mut default = item(&d.key, setting, None);
                    default.default = true;
                    *value = Some(default);
                }
                None => unknown_default |= side.release.is_none(),
            }
        }
        !same(d.a.as_ref().map(|v| v.compared.as_str()), d.b.as_ref().map(|v| v.compared.as_str()))
    });
    unknown_default.then(|| NotCompared {
        section: section.section,
        reason: "a setting a config leaves unset is shown (absent), not as its default: give \
                 --clickhouse-version VERSION to compare it with that release's default"
            .into(),
    })
}

/// Whether two values are the same setting value: `1` and `true`, `100` and `100.0`, `10Gi`
/// and `10737418240`, as ClickHouse reads a setting.
fn same(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => {
            let (x, y) = (crate::rules::expr::parse_number(a), crate::rules::expr::parse_number(b));
            a.trim() == b.trim() || (!x.is_nan() && x == y)
        }
        (None, None) => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_compare_as_settings() {
        assert!(same(Some("1"), Some("true")));
        assert!(same(Some("100"), Some("100.0")));
        assert!(same(Some("10Gi"), Some("10737418240")));
        assert!(!same(Some("abc"), Some("abd")));
        assert!(!same(Some("100"), Some("200")));
        assert!(!same(Some("1"), None));
        assert!(same(None, None));
    }

    fn state(kind: Kind, config: Option<Value>, live: Option<Value>) -> State {
        State {
            label: kind.name().into(),
            kind,
            config: config.and_then(|c| c.as_object().cloned()),
            elements: None,
            release: None,
            live,
            findings: BTreeMap::new(),
            judged: BTreeSet::new(),
            inputs: Vec::new(),
        }
    }

    #[test]
    fn a_config_against_a_server_compares_the_settings_the_server_has() {
        let config = state(
            Kind::Config,
            Some(serde_json::json!({
                "server": {"max_concurrent_queries": "100", "path": "/var/lib/clickhouse/", "keep_alive_timeout": "10"},
                "server_at": {"max_concurrent_queries": "config.xml:3:5", "keep_alive_timeout": "config.d/a.xml:2:5"},
            })),
            None,
        );
        let server = state(
            Kind::Server,
            None,
            Some(serde_json::json!({
                "version": "25.8.2.1",
                "server_settings": {
                    "max_concurrent_queries": {"value": "100", "default": "0", "changed": true},
                    "keep_alive_timeout": {"value": "30", "default": "30", "changed": false},
                    "max_connections": {"value": "2048", "default": "4096", "changed": true},
                },
            })),
        );
        let drift = compare(&config, &server, false);
        let settings = &drift.sections.iter().find(|s| s.section == "server settings").unwrap();
        // `path` is no server setting of this server: not compared
        assert_eq!(settings.compared, 3);
        let keys: Vec<&str> = settings.differences.iter().map(|d| d.key.as_str()).collect();
        assert_eq!(keys, ["keep_alive_timeout", "max_connections"]);
        let left_alone = &settings.differences[1];
        assert_eq!(left_alone.a.as_ref().unwrap().value, "4096");
        assert!(left_alone.a.as_ref().unwrap().default);
        assert_eq!(settings.differences[0].a.as_ref().unwrap().at.as_deref(), Some("config.d/a.xml:2:5"));
        assert_eq!(drift.status, Status::Failing);
        assert!(drift.findings.is_none());
        let not_compared: Vec<&str> = drift.not_compared.iter().map(|n| n.section).collect();
        assert!(not_compared.contains(&"grants") && not_compared.contains(&"findings"), "{not_compared:?}");
    }

    #[test]
    fn a_finding_of_a_rule_one_side_could_not_judge_is_no_drift() {
        let finding = |rule: &str, fingerprint: &str| FindingItem {
            rule_id: rule.into(),
            severity: crate::rules::Severity::Low,
            title: "t".into(),
            object: None,
            fingerprint: fingerprint.into(),
        };
        let live = serde_json::json!({"version": "25.8.2.1"});
        let mut a = state(Kind::Snapshot, None, Some(live.clone()));
        let mut b = state(Kind::Server, None, Some(live));
        a.findings.insert("f1".into(), finding("log-rule", "f1"));
        a.findings.insert("f2".into(), finding("live-rule", "f2"));
        a.judged = ["log-rule".to_string(), "live-rule".to_string()].into();
        b.judged = ["live-rule".to_string()].into();
        let drift = compare(&a, &b, false);
        let findings = drift.findings.as_ref().unwrap();
        assert_eq!(findings.gone.iter().map(|f| f.rule_id.as_str()).collect::<Vec<_>>(), ["live-rule"]);
        assert!(findings.new.is_empty());
        let note = drift.not_compared.iter().find(|n| n.section == "findings").unwrap();
        assert!(note.reason.contains("log-rule"), "{}", note.reason);
    }

    #[test]
    fn quotas_roles_and_clusters_compare_between_servers_and_against_a_config() {
        let config = state(
            Kind::Config,
            Some(serde_json::json!({
                "server": {"tcp_port": "9001"},
                "users": [
                    {"name": "default", "quota": "default", "quota_at": "users.xml:9:13"},
                    {"name": "analyst", "quota": "default", "quota_at": "users.d/a.xml:4:13"},
                    {"name": "etl", "quota": ""},
                ],
                "clusters": [{"name": "c", "at": "config.xml:20:9", "shards": [[{"host": "a", "port": 9000}, {"host": "b", "port": null}]]}],
            })),
            None,
        );
        let server = |applies: &[&str], limited: u64, port: u64, admin: u64| {
            state(
                Kind::Server,
                None,
                Some(serde_json::json!({
                    "version": "26.9.2.1",
                    "quotas": [
                        {"name": "default", "apply_to_all": 0, "apply_to_list": applies, "apply_to_except": [], "limited": limited},
                        {"name": "unused", "apply_to_all": 0, "apply_to_list": [], "apply_to_except": [], "limited": 0},
                    ],
                    "role_grants": [{"user_name": "analyst", "role_name": null, "granted_role_name": "reader", "with_admin_option": admin}],
                    "clusters": [
                        {"cluster": "c", "shard_num": 1, "replica_num": 2, "host_name": "b", "port": port},
                        {"cluster": "c", "shard_num": 1, "replica_num": 1, "host_name": "a", "port": 9000},
                    ],
                })),
            )
        };
        let section = |d: &Diff, name: &str| -> Vec<String> {
            let s = d.sections.iter().find(|s| s.section == name).unwrap_or_else(|| panic!("{name}: {d:?}"));
            s.differences
                .iter()
                .map(|x| {
                    let v = |v: &Option<Value1>| v.as_ref().map_or("-".to_string(), |v| v.value.clone());
                    format!("{}: {} -> {}", x.key, v(&x.a), v(&x.b))
                })
                .collect()
        };
        // the config against the server started from it: equal (the quota that applies to
        // nobody, and whether a quota is limited, are the server's alone)
        let same = compare(&config, &server(&["analyst", "default"], 1, 9001, 0), false);
        assert!(section(&same, "quotas").is_empty() && section(&same, "clusters").is_empty(), "{same:?}");
        assert!(same.not_compared.iter().any(|n| n.section == "roles"), "a config cannot give its roles");
        let moved = compare(&config, &server(&["default"], 1, 9440, 0), false);
        assert_eq!(section(&moved, "quotas"), ["default: analyst, default -> default"]);
        assert_eq!(section(&moved, "clusters"), ["c/shard 1: a:9000, b:9001 -> a:9000, b:9440"]);
        assert_eq!(
            moved.sections.iter().find(|s| s.section == "clusters").unwrap().differences[0]
                .a
                .as_ref()
                .unwrap()
                .at
                .as_deref(),
            Some("config.xml:20:9")
        );
        // two servers: the roles, and whether each quota bounds anything
        let drift = compare(&server(&["default"], 1, 9000, 0), &server(&["default"], 0, 9000, 1), false);
        assert_eq!(section(&drift, "quotas"), ["default.limited: yes -> no"]);
        assert_eq!(section(&drift, "roles"), ["analyst: role reader: granted -> granted with admin option"]);
        assert!(section(&drift, "clusters").is_empty());
        assert_eq!(drift.sections.iter().find(|s| s.section == "quotas").unwrap().compared, 4);
    }

    #[test]
    fn a_setting_a_config_leaves_unset_compares_as_its_release_default() {
        let set = serde_json::json!({"server": {"max_connections": "4096", "max_server_memory_usage_to_ram_ratio": "0.8",
            "background_pool_size": "16"}});
        let configs = |release: Option<&str>| {
            let mut unset = state(Kind::Config, Some(serde_json::json!({"server": {}})), None);
            unset.release = release.map(|r| r.parse().unwrap());
            compare(&unset, &state(Kind::Config, Some(set.clone()), None), false)
        };
        let shown = |drift: &Diff| {
            let settings = drift.sections.iter().find(|s| s.section == "server settings").unwrap();
            settings
                .differences
                .iter()
                .map(|d| (d.key.clone(), d.a.as_ref().map(|v| v.value.clone())))
                .collect::<Vec<_>>()
        };
        // 4096 is 25.8's default; the embedded engine's pool sizes are not the server's
        let known = configs(Some("25.8"));
        assert_eq!(
            shown(&known),
            [
                ("background_pool_size".into(), None),
                ("max_server_memory_usage_to_ram_ratio".into(), Some("0.9".into()))
            ]
        );
        assert!(known.not_compared.iter().all(|n| n.section != "server settings"));
        let unknown = configs(None);
        assert_eq!(shown(&unknown).len(), 3);
        assert!(unknown.not_compared.iter().any(|n| n.reason.contains("--clickhouse-version")));
    }

    #[test]
    fn secrets_are_masked() {
        assert_eq!(item("secret_access_key", "abc", None).value, crate::mask::MASK);
        assert_eq!(item("max_threads", "8", None).value, "8");
    }
}
