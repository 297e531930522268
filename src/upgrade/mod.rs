//! The pre-upgrade review (`chaudit upgrade --to VERSION`): what changes going from the
//! running (or stated) version to the target, and what of it touches this server.
//!
//! Three answers, all from data the real engine produced: default changes (from
//! system.settings_changes) split by how this server meets them; settings this server sets
//! that the target no longer knows, ignores or renamed (from the target's setting catalog);
//! known issues (the version-gated rules, evaluated at both versions on this server's facts).

pub mod history;
pub mod releases;
pub mod workload;

use serde::Serialize;
use serde_json::Value;

use crate::eval::{self, Finding, OutcomeKind, Selection};
use crate::facts::Facts;
use crate::facts::catalog::{self, Catalog, SettingKind};
use crate::rules::RulePack;
use crate::version::Version;
use history::{DefaultChange, History};
use releases::ReleaseStatus;
use workload::{Usage, UsedBy};

#[derive(Debug, Clone, Serialize)]
pub struct Review {
    pub chaudit_version: &'static str,
    pub target: String,
    pub from: VersionInfo,
    pub to: VersionInfo,
    /// Where the change history came from.
    pub history_source: String,
    /// The query_log window the workload evidence covers, when there was any.
    pub workload: Option<WorkloadSummary>,
    /// Ranked: used by the workload first, then left at default, then set explicitly.
    pub default_changes: Vec<AffectedChange>,
    /// How to keep every old session default at once (`compatibility`).
    pub escape_hatch: String,
    pub breaking: Vec<BreakingSetting>,
    pub known_issues: Vec<KnownIssue>,
    /// What the review could not check, and why.
    pub notes: Vec<String>,
    pub summary: ReviewSummary,
}

#[derive(Debug, Clone, Serialize)]
pub struct VersionInfo {
    pub version: String,
    #[serde(flatten)]
    pub status: ReleaseStatus,
}

#[derive(Debug, Clone, Serialize)]
pub struct WorkloadSummary {
    pub window_seconds: u64,
    pub queries: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct AffectedChange {
    pub rank: usize,
    #[serde(flatten)]
    pub change: DefaultChange,
    #[serde(flatten)]
    pub exposure: Exposure,
    /// The target's tier for the setting (Production, Beta, Experimental), when known.
    pub tier: Option<String>,
    /// The running version does not have the setting: the old behaviour is `from_default`.
    pub new_setting: bool,
    /// How to keep the old default for this setting alone.
    pub keep_old: String,
}

/// How this server meets a default change.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "exposure", rename_all = "snake_case")]
pub enum Exposure {
    /// Left at default, and the workload runs queries the setting applies to.
    UsedByWorkload { used_by: UsedBy },
    /// Left at default; nothing in the evidence shows whether it is used.
    Default,
    /// Set here: the new default does not apply where it is set.
    Explicit { set_at: Vec<String> },
}

impl Exposure {
    pub fn group(&self) -> &'static str {
        match self {
            Exposure::UsedByWorkload { .. } => "used by this workload",
            Exposure::Default => "left at default",
            Exposure::Explicit { .. } => "set explicitly (unaffected where set)",
        }
    }
}

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

#[derive(Debug, Clone, Serialize)]
pub struct KnownIssue {
    pub rule_id: String,
    pub title: String,
    /// The versions the rule describes.
    pub versions: String,
    pub change: IssueChange,
    /// Whether this server's facts show the issue (at the running version for a fix, at the
    /// target for one the target brings).
    pub shows_here: Option<bool>,
    /// Why it could not be checked, when `shows_here` is unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unchecked_reason: Option<String>,
    pub findings: Vec<Finding>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IssueChange {
    FixedByTarget,
    IntroducedByTarget,
    /// Applies to both versions: the upgrade does not fix it.
    Remains,
}

#[derive(Debug, Clone, Serialize)]
pub struct ReviewSummary {
    pub default_changes: usize,
    pub used_by_workload: usize,
    pub left_at_default: usize,
    pub set_explicitly: usize,
    pub breaking: usize,
    pub issues_fixed: usize,
    pub issues_remaining_or_introduced_here: usize,
    /// Whether the review should stop the upgrade (exit 1): a breaking setting, or a known
    /// issue this server shows that the target does not fix.
    pub blocking: bool,
}

/// A review that cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum UpgradeError {
    #[error("--to {to} is older than the running {from}: chaudit reviews upgrades, not downgrades")]
    Downgrade { from: Version, to: Version },
    #[error(
        "the setting history chaudit has ends at ClickHouse {history}; {to} is newer: regenerate data/ with scripts/gen-version-data.py from a {to} server"
    )]
    BeyondHistory { history: String, to: Version },
}

/// Whether `from` -> `to` can be reviewed with `history` (compared on major.minor).
pub fn check_versions(from: Version, to: Version, history: &History) -> Result<(), UpgradeError> {
    if (to.major, to.minor) < (from.major, from.minor) {
        return Err(UpgradeError::Downgrade { from, to });
    }
    let newest: Option<Version> = history.version.parse().ok();
    if newest.is_some_and(|n| (to.major, to.minor) > (n.major, n.minor)) {
        return Err(UpgradeError::BeyondHistory { history: history.version.clone(), to });
    }
    Ok(())
}

/// What a review is made from.
pub struct Inputs<'a> {
    pub facts: &'a Facts,
    pub from: Version,
    pub to: Version,
    pub history: &'a History,
    pub history_source: String,
    pub pack: &'a RulePack,
}

pub fn review(inputs: &Inputs) -> Review {
    let Inputs { facts, from, to, history, pack, .. } = inputs;
    let (from, to) = (*from, *to);
    let mut notes = Vec::new();
    let usage = facts.document.get("log").and_then(|log| log["usage"].get(0)).map(Usage::from_row);
    if usage.is_none() {
        let why = facts.unavailable("usage").unwrap_or_else(|| "no --dsn, or --since 0".into());
        notes.push(format!(
            "no workload evidence from query_log ({why}): changes are split into set / left at default only"
        ));
    }
    let explicit = ExplicitSettings::of(facts, usage.as_ref(), from);
    let target_catalog = catalog::for_version(to);
    if target_catalog.is_none() {
        notes.push(format!(
            "chaudit has no setting catalog of {}.{}: obsolete settings come from the change history only, unknown ones are not checked",
            to.major, to.minor
        ));
    }
    let from_names = FromNames::of(facts, from);
    let defaults = Defaults { facts, from: catalog::for_version(from), to: target_catalog };
    // a MergeTree default applies to every MergeTree table that does not set it itself
    let merge_tree_tables = facts.document.get("live").and_then(|l| l["tables"].as_array()).and_then(|tables| {
        let count =
            tables.iter().filter(|t| t["engine"].as_str().is_some_and(|e| e.ends_with("MergeTree"))).count() as u64;
        (count > 0).then(|| UsedBy {
            what: "MergeTree tables (those without their own SETTINGS for it)".into(),
            count,
            scope: "on this server",
        })
    });
    let mut changes = Vec::new();
    let mut not_in_target = 0;
    for mut change in history.default_changes(from, to) {
        // the servers' own defaults win over the history's (which has slips, and builds
        // that differ); a change both servers agree away is no change here
        if let Some(old) = defaults.before(change.kind, &change.name) {
            change.from_default = old;
        }
        match defaults.after(change.kind, &change.name) {
            Some(new) => change.to_default = new,
            None if target_catalog.is_some() => {
                not_in_target += 1;
                continue;
            }
            None => {}
        }
        if !same_value(&change.from_default, &change.to_default) {
            changes.push(change);
        }
    }
    if not_in_target > 0 {
        notes.push(format!(
            "{not_in_target} change(s) of the history name settings {} does not have (later patch releases): left out",
            version_name(to)
        ));
    }
    changes.extend(defaults.unlisted_changes(&changes, to));
    let mut default_changes: Vec<AffectedChange> = changes
        .into_iter()
        .map(|change| {
            let set_at = explicit.places(change.kind, &change.name);
            let exposure = if !set_at.is_empty() {
                Exposure::Explicit { set_at }
            } else if let Some(used_by) = match change.kind {
                SettingKind::Session => usage.as_ref().and_then(|u| u.used_by(&change.name)),
                SettingKind::MergeTree => merge_tree_tables.clone(),
            } {
                Exposure::UsedByWorkload { used_by }
            } else {
                Exposure::Default
            };
            let tier =
                target_catalog.and_then(|c| c.of_kind(change.kind).get(&change.name)).and_then(|s| s.tier.clone());
            let new_setting = from_names.knows(change.kind, &change.name) == Some(false);
            AffectedChange { rank: 0, keep_old: keep_old(&change), new_setting, change, exposure, tier }
        })
        .collect();
    rank(&mut default_changes);
    let breaking = breaking(&explicit, &from_names, target_catalog, history, from, to);
    let known_issues = known_issues(pack, facts, from, to);
    let count = |f: fn(&Exposure) -> bool| default_changes.iter().filter(|c| f(&c.exposure)).count();
    let summary = ReviewSummary {
        default_changes: default_changes.len(),
        used_by_workload: count(|e| matches!(e, Exposure::UsedByWorkload { .. })),
        left_at_default: count(|e| matches!(e, Exposure::Default)),
        set_explicitly: count(|e| matches!(e, Exposure::Explicit { .. })),
        breaking: breaking.iter().filter(|b| b.problem != Problem::Renamed).count(),
        issues_fixed: known_issues.iter().filter(|i| i.change == IssueChange::FixedByTarget).count(),
        issues_remaining_or_introduced_here: known_issues
            .iter()
            .filter(|i| i.change != IssueChange::FixedByTarget && i.shows_here == Some(true))
            .count(),
        blocking: false,
    };
    let summary =
        ReviewSummary { blocking: summary.breaking > 0 || summary.issues_remaining_or_introduced_here > 0, ..summary };
    let known = history.releases();
    Review {
        chaudit_version: env!("CARGO_PKG_VERSION"),
        target: facts.target.clone(),
        from: VersionInfo {
            version: from.to_string(),
            status: releases::status(from, &[known.as_slice(), &[to]].concat()),
        },
        to: VersionInfo {
            version: to.to_string(),
            status: releases::status(to, &[known.as_slice(), &[from]].concat()),
        },
        history_source: inputs.history_source.clone(),
        workload: usage.map(|u| WorkloadSummary {
            window_seconds: facts.document["log"]["window_seconds"].as_u64().unwrap_or(0),
            queries: u.queries,
        }),
        default_changes,
        escape_hatch: format!(
            "<compatibility>{}.{}</compatibility> in a profile keeps the session defaults of {}.{} (except the changes it \
             does not revert); a MergeTree default is kept per setting in <merge_tree>",
            from.major, from.minor, from.major, from.minor
        ),
        breaking,
        known_issues,
        notes,
        summary,
    }
}

/// Defaults as the servers report them: the running server's own (live), else the catalog
/// of its release; the target's catalog.
struct Defaults<'a> {
    facts: &'a Facts,
    from: Option<&'static Catalog>,
    to: Option<&'static Catalog>,
}

impl Defaults<'_> {
    fn before(&self, kind: SettingKind, name: &str) -> Option<String> {
        let live = match kind {
            SettingKind::Session => {
                self.facts.document.get("live").and_then(|l| l["settings"][name]["default"].as_str())
            }
            // the live fact lists changed MergeTree settings only
            SettingKind::MergeTree => None,
        };
        live.map(str::to_string).or_else(|| self.from?.of_kind(kind).get(name)?.default.clone())
    }

    fn after(&self, kind: SettingKind, name: &str) -> Option<String> {
        self.to?.of_kind(kind).get(name)?.default.clone()
    }

    /// Defaults that differ between the two servers although the history does not list them
    /// (found only when both sides are known).
    fn unlisted_changes(&self, listed: &[DefaultChange], to: Version) -> Vec<DefaultChange> {
        let Some(target) = self.to else { return Vec::new() };
        let mut out = Vec::new();
        for kind in [SettingKind::Session, SettingKind::MergeTree] {
            for (name, setting) in target.of_kind(kind) {
                if setting.alias_for.is_some() || setting.is_obsolete != 0 {
                    continue;
                }
                let (Some(old), Some(new)) = (self.before(kind, name), setting.default.clone()) else { continue };
                if same_value(&old, &new) || listed.iter().any(|c| c.kind == kind && &c.name == name) {
                    continue;
                }
                out.push(DefaultChange {
                    kind,
                    name: name.clone(),
                    from_default: old.clone(),
                    to_default: new.clone(),
                    steps: vec![history::Step {
                        version: format!("{}.{}", to.major, to.minor),
                        previous_value: old,
                        new_value: new,
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
fn same_value(a: &str, b: &str) -> bool {
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

/// Most exposed first: used by the workload (by query count), then left at default
/// (production settings before beta and experimental ones), then set explicitly.
fn rank(changes: &mut [AffectedChange]) {
    let key = |c: &AffectedChange| {
        let group = match &c.exposure {
            Exposure::UsedByWorkload { .. } => 0,
            Exposure::Default => 1,
            Exposure::Explicit { .. } => 2,
        };
        let queries = match &c.exposure {
            Exposure::UsedByWorkload { used_by } => used_by.count,
            _ => 0,
        };
        let production = c.tier.as_deref().is_none_or(|t| t == "Production");
        (group, std::cmp::Reverse(queries), !production, c.change.kind, c.change.name.clone())
    };
    changes.sort_by_cached_key(key);
    for (i, c) in changes.iter_mut().enumerate() {
        c.rank = i + 1;
    }
}

fn keep_old(change: &DefaultChange) -> String {
    let old = &change.from_default;
    match change.kind {
        SettingKind::Session if change.revertible => {
            format!("<{name}>{old}</{name}> in the profile", name = change.name)
        }
        SettingKind::Session => {
            format!(
                "<{name}>{old}</{name}> in the profile (`compatibility` does not revert this one)",
                name = change.name
            )
        }
        SettingKind::MergeTree => format!(
            "<merge_tree><{name}>{old}</{name}></merge_tree> in config.xml, or SETTINGS {name} = '{old}' per table",
            name = change.name
        ),
    }
}

/// Where this server sets each setting: profiles and <merge_tree> in the files, settings
/// the server reports as changed, settings the workload's queries ran with.
struct ExplicitSettings {
    places: Vec<(SettingKind, String, String)>,
}

impl ExplicitSettings {
    fn of(facts: &Facts, usage: Option<&Usage>, from: Version) -> ExplicitSettings {
        let mut places = Vec::new();
        let config = facts.document.get("config");
        for item in config.and_then(|c| c["profile_settings"].as_array()).into_iter().flatten() {
            if let (Some(name), Some(profile)) = (item["name"].as_str(), item["profile"].as_str()) {
                let at = item["at"].as_str().unwrap_or_default();
                let value = item["value"].as_str().unwrap_or_default();
                places.push((SettingKind::Session, name.to_string(), format!("profile `{profile}` = {value} ({at})")));
            }
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
        let catalog = catalog::for_version(from).unwrap_or_else(catalog::builtin);
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

    fn places(&self, kind: SettingKind, name: &str) -> Vec<String> {
        let mut out: Vec<String> =
            self.places.iter().filter(|(k, n, _)| *k == kind && n == name).map(|(_, _, at)| at.clone()).collect();
        out.dedup();
        out
    }

    fn names(&self) -> Vec<(SettingKind, &str)> {
        let mut out: Vec<(SettingKind, &str)> = self.places.iter().map(|(k, n, _)| (*k, n.as_str())).collect();
        out.sort();
        out.dedup();
        out
    }
}

/// The setting names the running version knows: the live server's own lists, else the
/// catalog of that release.
struct FromNames<'a> {
    /// The running server's system.settings (MergeTree names come from the catalog).
    live_settings: Option<&'a serde_json::Map<String, Value>>,
    catalog: Option<&'static Catalog>,
}

impl<'a> FromNames<'a> {
    fn of(facts: &'a Facts, from: Version) -> FromNames<'a> {
        let live_settings =
            facts.document.get("live").and_then(|l| l["settings"].as_object()).filter(|s| !s.is_empty());
        FromNames { live_settings, catalog: catalog::for_version(from) }
    }

    /// Whether the running version knows the name; `None` when chaudit cannot tell.
    fn knows(&self, kind: SettingKind, name: &str) -> Option<bool> {
        match (kind, self.live_settings, self.catalog) {
            (SettingKind::Session, Some(settings), _) => Some(settings.contains_key(name)),
            (_, _, Some(c)) => Some(c.of_kind(kind).contains_key(name)),
            _ => None,
        }
    }

    fn obsolete(&self, kind: SettingKind, name: &str) -> bool {
        self.catalog.and_then(|c| c.of_kind(kind).get(name)).is_some_and(|s| s.is_obsolete != 0)
    }

    fn alias_for(&self, kind: SettingKind, name: &str) -> Option<String> {
        self.catalog.and_then(|c| c.of_kind(kind).get(name)).and_then(|s| s.alias_for.clone())
    }
}

fn breaking(
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
            Some(Some(setting)) if setting.is_obsolete != 0 && !from_names.obsolete(kind, name) => {
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

fn version_name(v: Version) -> String {
    format!("ClickHouse {}.{}", v.major, v.minor)
}

/// The version-gated rules whose verdict differs between the two versions (or that apply to
/// both and fire here), evaluated on this server's facts at each version.
fn known_issues(pack: &RulePack, facts: &Facts, from: Version, to: Version) -> Vec<KnownIssue> {
    let at = |version: Version| {
        let mut facts = facts.clone();
        facts.version = Some(version);
        facts
    };
    let (facts_from, facts_to) = (at(from), at(to));
    let (vars_from, vars_to) = (eval::Variables::of(&facts_from), eval::Variables::of(&facts_to));
    let mut out = Vec::new();
    for rule in pack.rules.iter().filter(|r| Selection::default().includes(r)) {
        let Some(range) = &rule.versions else { continue };
        let (before, after) = (range.contains(from), range.contains(to));
        let (change, facts, variables) = match (before, after) {
            (true, false) => (IssueChange::FixedByTarget, &facts_from, &vars_from),
            (false, true) => (IssueChange::IntroducedByTarget, &facts_to, &vars_to),
            (true, true) => (IssueChange::Remains, &facts_to, &vars_to),
            (false, false) => continue,
        };
        let (outcome, findings) = eval::evaluate_rule(rule, facts, variables);
        let shows_here = match outcome.outcome {
            OutcomeKind::Fired => Some(true),
            OutcomeKind::Passed => Some(false),
            _ => None,
        };
        // an issue of both versions is worth a line only where this server shows it
        if change == IssueChange::Remains && shows_here != Some(true) {
            continue;
        }
        out.push(KnownIssue {
            rule_id: rule.id.clone(),
            title: rule.title.clone(),
            versions: range.to_string(),
            change,
            shows_here,
            unchecked_reason: shows_here.is_none().then(|| outcome.reason.unwrap_or_default()),
            findings,
        });
    }
    out.sort_by_key(|i| (i.change != IssueChange::Remains, i.shows_here != Some(true), i.rule_id.clone()));
    out
}
