//! The pre-upgrade review (`chaudit upgrade --to VERSION`): what changes going from the
//! running (or stated) version to the target, and what of it touches this server.
//!
//! Three answers, all from data the real engine produced: default changes (from
//! system.settings_changes) split by how this server meets them; settings this server sets
//! that the target no longer knows, ignores or renamed (from the target's setting catalog);
//! known issues (the version-gated rules, evaluated at both versions on this server's facts).

mod breaking;
mod defaults;
mod explicit;
pub mod history;
mod issues;
pub mod releases;
pub mod request;
pub mod risk;
mod server;
pub mod startup;
pub mod workload;

use serde::Serialize;

use crate::facts::catalog::{self, SettingKind};
use crate::facts::{Facts, Source, keys};
use crate::rules::RulePack;
use crate::version::Version;
pub use breaking::{BreakingSetting, Problem};
use breaking::{FromNames, breaking};
use defaults::{Defaults, same_value};
use explicit::ExplicitSettings;
use history::{DefaultChange, History};
use issues::known_issues;
pub use issues::{IssueChange, KnownIssue};
use releases::ReleaseStatus;
use server::ServerFacts;
use startup::RefusedKey;
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
    /// Top-level keys of the config the target refuses to start with (the running version
    /// ignores them).
    pub refused_at_startup: Vec<RefusedKey>,
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
    /// What the change can do to what runs now (its rank among changes met alike).
    pub risk: risk::Risk,
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
pub struct ReviewSummary {
    pub default_changes: usize,
    pub used_by_workload: usize,
    pub left_at_default: usize,
    pub set_explicitly: usize,
    pub breaking: usize,
    /// Top-level keys the target refuses to start with.
    pub refused_at_startup: usize,
    pub issues_fixed: usize,
    pub issues_remaining_or_introduced_here: usize,
    /// Known issues the target keeps or brings that could not be checked on this server
    /// (their facts not collected or not readable).
    pub issues_unchecked: usize,
    /// Whether the review should stop the upgrade (exit 1): a breaking setting, a key the
    /// target refuses to start with, or a known issue this server shows that the target does
    /// not fix.
    pub blocking: bool,
}

impl ReviewSummary {
    /// The review's verdict: a stop is a stop; otherwise a known issue that could not be
    /// checked leaves the review unjudged, unless inconclusive checks are let pass.
    pub fn status(&self, allow_inconclusive: bool) -> crate::verdict::Status {
        let unchecked = if allow_inconclusive { 0 } else { self.issues_unchecked };
        crate::verdict::of_counts(usize::from(self.blocking), unchecked)
    }
}

/// A review that cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum UpgradeError {
    #[error("--to {to} is older than the running {from}: chaudit reviews upgrades, not downgrades")]
    Downgrade { from: Version, to: Version },
    #[error(
        "the settings history bundled with this chaudit ends at ClickHouse {history}: reviewing an upgrade to {to} needs a newer chaudit"
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
    let usage = facts.collected(Source::Log).map(|log| keys::log::USAGE.read(log));
    let (usage, misread) = match usage {
        Some(Ok(rows)) => (rows.into_iter().next().map(Usage::from_row), None),
        Some(Err(why)) => (None, Some(why)),
        None => (None, None),
    };
    if usage.is_none() {
        let why = misread
            .or_else(|| facts.unavailable(Source::Log, keys::log::USAGE.name()))
            .unwrap_or_else(|| "no --dsn, or --since 0".into());
        notes.push(format!(
            "no workload evidence from query_log ({why}): changes are split into set / left at default only"
        ));
    }
    let from_catalog = catalog::for_version(from);
    let server = ServerFacts::read(facts, &mut notes);
    let explicit = ExplicitSettings::of(&server, usage.as_ref(), from_catalog);
    let target_catalog = catalog::for_version(to);
    if target_catalog.is_none() {
        notes.push(format!(
            "chaudit has no setting catalog of {}.{}: obsolete settings come from the change history only, unknown ones are not checked",
            to.major, to.minor
        ));
    }
    let from_names = FromNames::of(&server, from_catalog);
    let defaults = Defaults { server: &server, from: from_catalog, to: target_catalog };
    // a MergeTree default applies to every MergeTree table that does not set it itself
    let merge_tree_tables = {
        let count = server.tables.iter().filter(|t| t.engine.ends_with("MergeTree")).count() as u64;
        (count > 0).then(|| UsedBy {
            what: "MergeTree tables (those without their own SETTINGS for it)".into(),
            count,
            scope: "on this server",
        })
    };
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
            let tier = target_catalog
                .and_then(|c| c.of_kind(change.kind).get(&change.name))
                .and_then(|s| s.tier.map(str::to_string));
            let new_setting = from_names.knows(change.kind, &change.name) == Some(false);
            let obsolete =
                target_catalog.is_some_and(|c| c.of_kind(change.kind).get(&change.name).is_some_and(|s| s.is_obsolete));
            let keep_old = keep_old(&change, Lifetime { new_setting, obsolete }, from, to);
            let risk = risk::Risk::of(&change);
            AffectedChange { rank: 0, keep_old, new_setting, change, exposure, risk, tier }
        })
        .collect();
    rank(&mut default_changes);
    let breaking = breaking(&explicit, &from_names, target_catalog, history, from, to);
    let refused_at_startup = match &server.root_elements {
        Some(elements) => startup::refused_keys(elements, from, to),
        None => {
            if startup::crosses_check(from, to) {
                notes.push(format!(
                    "the config's top-level keys were not checked (no --config): {} refuses to start with a key no \
                     code reads, which {} ignores",
                    version_name(to),
                    version_name(from)
                ));
            }
            Vec::new()
        }
    };
    let known_issues = known_issues(pack, facts, from, to);
    let count = |f: fn(&Exposure) -> bool| default_changes.iter().filter(|c| f(&c.exposure)).count();
    let summary = ReviewSummary {
        default_changes: default_changes.len(),
        used_by_workload: count(|e| matches!(e, Exposure::UsedByWorkload { .. })),
        left_at_default: count(|e| matches!(e, Exposure::Default)),
        set_explicitly: count(|e| matches!(e, Exposure::Explicit { .. })),
        breaking: breaking.iter().filter(|b| b.problem != Problem::Renamed).count(),
        refused_at_startup: refused_at_startup.len(),
        issues_fixed: known_issues.iter().filter(|i| i.change == IssueChange::FixedByTarget).count(),
        issues_remaining_or_introduced_here: known_issues
            .iter()
            .filter(|i| i.change != IssueChange::FixedByTarget && i.shows_here == Some(true))
            .count(),
        issues_unchecked: known_issues
            .iter()
            .filter(|i| i.change != IssueChange::FixedByTarget && i.shows_here.is_none())
            .count(),
        blocking: false,
    };
    let blocking =
        summary.breaking > 0 || summary.refused_at_startup > 0 || summary.issues_remaining_or_introduced_here > 0;
    let summary = ReviewSummary { blocking, ..summary };
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
        workload: usage.map(|u| WorkloadSummary { window_seconds: server.window_seconds, queries: u.queries }),
        default_changes,
        escape_hatch: format!(
            "<compatibility>{}.{}</compatibility> in a profile keeps the session defaults of {}.{} (except the changes it \
             does not revert); a MergeTree default is kept per setting in <merge_tree>",
            from.major, from.minor, from.major, from.minor
        ),
        breaking,
        refused_at_startup,
        known_issues,
        notes,
        summary,
    }
}

/// Most exposed first: used by the workload (by query count), then left at default, then set
/// explicitly; among those alike, what can refuse today's queries, then what changes
/// behaviour, then numbers, formats and new permissions (production settings before beta and
/// experimental ones).
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
        (group, std::cmp::Reverse(queries), c.risk, !production, c.change.kind, c.change.name.clone())
    };
    changes.sort_by_cached_key(key);
    for (i, c) in changes.iter_mut().enumerate() {
        c.rank = i + 1;
    }
}

/// Where a changed setting stands between the two versions.
#[derive(Clone, Copy)]
struct Lifetime {
    /// The running version does not know it.
    new_setting: bool,
    /// The target accepts it and ignores it.
    obsolete: bool,
}

/// How to keep the old default, as advice that holds on the version it is applied on: the
/// running server refuses a profile (or a `<merge_tree>`) naming a setting it does not know,
/// so such a line is for the upgrade itself; an obsolete setting keeps nothing.
fn keep_old(change: &DefaultChange, lifetime: Lifetime, from: Version, to: Version) -> String {
    let (name, old) = (&change.name, &change.from_default);
    if lifetime.obsolete {
        return format!("nothing: {} accepts {name} but ignores it (obsolete)", version_name(to));
    }
    let place = match change.kind {
        SettingKind::Session => format!("<{name}>{old}</{name}> in the profile"),
        SettingKind::MergeTree => {
            format!(
                "<merge_tree><{name}>{old}</{name}></merge_tree> in config.xml, or SETTINGS {name} = '{old}' per table"
            )
        }
    };
    if !lifetime.new_setting {
        return match change.kind {
            SettingKind::Session if !change.revertible => format!("{place} (`compatibility` does not revert this one)"),
            _ => place,
        };
    }
    let with_upgrade = format!(
        "with the upgrade, not before ({} does not know {name} and refuses a config that names it): {place}",
        version_name(from)
    );
    match change.kind {
        SettingKind::Session if change.revertible => format!(
            "<compatibility>{}.{}</compatibility> in the profile, before or with the upgrade (it reverts every \
             revertible default change); or {with_upgrade}",
            from.major, from.minor
        ),
        _ => with_upgrade,
    }
}

fn version_name(v: Version) -> String {
    format!("ClickHouse {}.{}", v.major, v.minor)
}
