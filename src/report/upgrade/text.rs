//! `chaudit upgrade` for a terminal: breaking settings and known issues first, then the
//! default changes by how this server meets them (the long tail of untouched defaults cut).

use std::fmt::Write;

use super::{issue_verdict, status_line, thousands, window};
use crate::upgrade::{AffectedChange, Exposure, Review};

/// Changes left at default shown in full; the rest are counted (JSON and Markdown list all).
const DEFAULTS_SHOWN: usize = 20;

pub fn render(review: &Review) -> String {
    let mut out = String::new();
    let (from, to) = (&review.from, &review.to);
    let _ = writeln!(out, "ClickHouse upgrade review: {} -> {}", from.version, to.version);
    if !review.target.is_empty() {
        let _ = writeln!(out, "  server    {}", review.target);
    }
    let _ = writeln!(out, "  running   {}  {}", from.version, status_line(from));
    let _ = writeln!(out, "  target    {}  {}", to.version, status_line(to));
    let _ = writeln!(out, "  history   {}", review.history_source);
    if let Some(w) = &review.workload {
        let _ = writeln!(
            out,
            "  workload  {} queries in the last {} (query_log)",
            thousands(w.queries),
            window(w.window_seconds)
        );
    }
    let _ = writeln!(out, "\nBreaking settings ({})", review.breaking.len());
    if review.breaking.is_empty() {
        let _ =
            writeln!(out, "  none: nothing this server sets is unknown, obsolete or renamed in {}", to.status.release);
    }
    for b in &review.breaking {
        let _ = writeln!(out, "  {}  {}", b.name, b.problem.name());
        for at in &b.set_at {
            let _ = writeln!(out, "      set: {at}");
        }
        let _ = writeln!(out, "      {}", b.detail);
    }
    if !review.refused_at_startup.is_empty() {
        let _ = writeln!(
            out,
            "\nRefused at startup ({}): {} will not start with these top-level keys",
            review.refused_at_startup.len(),
            to.status.release
        );
        for k in &review.refused_at_startup {
            let _ = writeln!(out, "  <{}>  {}", k.name, k.at);
            let _ = writeln!(out, "      {}", k.detail);
            let _ = writeln!(out, "      fix: {}", k.fix);
        }
    }
    let _ = writeln!(out, "\nKnown issues ({})", review.known_issues.len());
    if review.known_issues.is_empty() {
        let _ = writeln!(out, "  none of chaudit's version-gated rules changes verdict between these versions");
    }
    for issue in &review.known_issues {
        let _ = writeln!(out, "  {}  {} [{}]", issue.rule_id, issue.title, issue.versions);
        let _ = writeln!(out, "      {}", issue_verdict(issue, &to.status.release));
        for f in &issue.findings {
            let _ = writeln!(out, "      - {}", f.message);
        }
    }
    let s = &review.summary;
    let _ = writeln!(
        out,
        "\nDefault changes ({}): {} used by this workload, {} left at default, {} set explicitly",
        s.default_changes, s.used_by_workload, s.left_at_default, s.set_explicitly
    );
    if s.default_changes > 0 {
        let _ = writeln!(out, "  escape hatch: {}", review.escape_hatch);
    }
    let mut group = "";
    let mut defaults_shown = 0;
    for c in &review.default_changes {
        if c.exposure.group() != group {
            group = c.exposure.group();
            let _ = writeln!(
                out,
                "\n  {}{}",
                capitalized(group),
                if group == "left at default" && s.left_at_default > DEFAULTS_SHOWN {
                    format!(" (first {DEFAULTS_SHOWN} of {})", s.left_at_default)
                } else {
                    String::new()
                }
            );
        }
        if matches!(c.exposure, Exposure::Default) {
            defaults_shown += 1;
            if defaults_shown > DEFAULTS_SHOWN {
                continue;
            }
        }
        change(&mut out, c);
    }
    if s.left_at_default > DEFAULTS_SHOWN {
        let _ = writeln!(
            out,
            "\n  ... {} more left at default: --format markdown or json lists them all",
            s.left_at_default - DEFAULTS_SHOWN
        );
    }
    if !review.notes.is_empty() {
        let _ = writeln!(out, "\nNotes");
        for n in &review.notes {
            let _ = writeln!(out, "  - {n}");
        }
    }
    let verdict = if s.blocking {
        if s.refused_at_startup > 0 {
            "the upgrade is blocked: the target will not start with this config (refused keys above)".to_string()
        } else {
            "review needed before upgrading: breaking settings or known issues above".to_string()
        }
    } else if s.issues_unchecked > 0 {
        format!(
            "not judged: {} known issue(s) the target keeps or brings could not be checked on this server (above); \
             audit the server itself (--dsn) to know whether they block",
            s.issues_unchecked
        )
    } else if from.status.release == to.status.release && s.default_changes == 0 {
        format!("nothing to upgrade: {} is already the {} release", from.version, to.status.release)
    } else if s.used_by_workload > 0 {
        "nothing blocks this upgrade; read the default changes used by this workload".to_string()
    } else if s.default_changes > 0 {
        "nothing blocks this upgrade; read the default changes above".to_string()
    } else {
        "nothing blocks this upgrade".to_string()
    };
    let _ = writeln!(out, "\n{verdict}");
    out
}

fn change(out: &mut String, c: &AffectedChange) {
    let ch = &c.change;
    let versions: Vec<&str> = ch.steps.iter().map(|s| s.version.as_str()).collect();
    let kind = match ch.kind {
        crate::facts::catalog::SettingKind::Session => "",
        crate::facts::catalog::SettingKind::MergeTree => " (MergeTree)",
    };
    let mut tags: Vec<&str> = vec![c.risk.label()];
    tags.extend(c.tier.as_deref().filter(|t| *t != "Production"));
    if c.new_setting {
        tags.push("new setting");
    }
    let tier = if tags.is_empty() { String::new() } else { format!(" [{}]", tags.join(", ")) };
    let _ = writeln!(
        out,
        "  {:>3}. {}{kind}{tier}  {} -> {}  ({})",
        c.rank,
        ch.name,
        shown(&ch.from_default),
        shown(&ch.to_default),
        versions.join(", ")
    );
    match &c.exposure {
        Exposure::UsedByWorkload { used_by } => {
            let _ = writeln!(out, "       applies to {}: {} {}", used_by.what, thousands(used_by.count), used_by.scope);
        }
        Exposure::Explicit { set_at } => {
            for at in set_at {
                let _ = writeln!(out, "       set: {at}");
            }
        }
        Exposure::Default => {}
    }
    if let Some(last) = ch.steps.last() {
        let _ = writeln!(out, "       {}", shortened(&last.reason, 160));
    }
    if !matches!(c.exposure, Exposure::Explicit { .. }) {
        let _ = writeln!(out, "       keep the old default: {}", c.keep_old);
    }
}

fn shown(value: &str) -> String {
    if value.is_empty() { "''".into() } else { value.to_string() }
}

fn shortened(text: &str, max: usize) -> String {
    let line = text.replace('\n', " ");
    match line.char_indices().nth(max) {
        Some((cut, _)) => format!("{}...", &line[..cut]),
        None => line,
    }
}

fn capitalized(s: &str) -> String {
    let mut chars = s.chars();
    chars.next().map(|c| c.to_uppercase().collect::<String>() + chars.as_str()).unwrap_or_default()
}
