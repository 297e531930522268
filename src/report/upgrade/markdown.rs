//! `chaudit upgrade --format markdown`: a review document to attach to a change request,
//! every default change listed.

use std::fmt::Write;

use super::{issue_verdict, status_line, thousands, window};
use crate::upgrade::{Exposure, Review};

pub fn render(review: &Review) -> String {
    let mut out = String::new();
    let (from, to) = (&review.from, &review.to);
    let _ = writeln!(out, "# ClickHouse upgrade review: {} → {}\n", from.version, to.version);
    let _ = writeln!(out, "| | |\n|---|---|");
    if !review.target.is_empty() {
        let _ = writeln!(out, "| server | `{}` |", review.target);
    }
    let _ = writeln!(out, "| running | {} ({}) |", from.version, status_line(from));
    let _ = writeln!(out, "| target | {} ({}) |", to.version, status_line(to));
    let _ = writeln!(out, "| change history | {} |", review.history_source);
    if let Some(w) = &review.workload {
        let _ = writeln!(
            out,
            "| workload | {} queries in the last {} (query_log) |",
            thousands(w.queries),
            window(w.window_seconds)
        );
    }
    let _ = writeln!(out, "| chaudit | {} |\n", review.chaudit_version);
    let s = &review.summary;
    let same_release = review.from.status.release == review.to.status.release && s.default_changes == 0;
    let verdict = match (s.blocking, s.issues_unchecked > 0, same_release) {
        (true, _, _) if s.refused_at_startup > 0 => {
            "**The upgrade is blocked**: the target will not start with this config (refused keys below)."
        }
        (true, _, _) => "**Review needed before upgrading.**",
        (false, true, _) => {
            "**Not judged**: known issues the target keeps or brings could not be checked on this server."
        }
        (false, false, true) => "Nothing to upgrade: the target is the release this server runs.",
        (false, false, false) => "Nothing blocks this upgrade.",
    };
    let _ = writeln!(
        out,
        "{verdict} {} breaking setting(s), {} known issue(s) this server shows that the target does not fix, {} known issue(s) fixed by the target; {} default change(s): {} used by this workload, {} left at default, {} set explicitly.\n",
        s.breaking,
        s.issues_remaining_or_introduced_here,
        s.issues_fixed,
        s.default_changes,
        s.used_by_workload,
        s.left_at_default,
        s.set_explicitly
    );
    if !review.refused_at_startup.is_empty() {
        let _ = writeln!(out, "## Refused at startup\n");
        let _ = writeln!(out, "{} will not start with these top-level keys.\n", to.status.release);
        let _ = writeln!(out, "| key | at | detail | fix |\n|---|---|---|---|");
        for k in &review.refused_at_startup {
            let _ = writeln!(out, "| `{}` | {} | {} | {} |", k.name, cell(&k.at), cell(&k.detail), cell(&k.fix));
        }
        out.push('\n');
    }
    let _ = writeln!(out, "## Breaking settings\n");
    if review.breaking.is_empty() {
        let _ = writeln!(out, "None.\n");
    } else {
        let _ = writeln!(out, "| setting | problem | set | detail |\n|---|---|---|---|");
        for b in &review.breaking {
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} |",
                b.name,
                b.problem.name(),
                cell(&b.set_at.join("; ")),
                cell(&b.detail)
            );
        }
        out.push('\n');
    }
    let _ = writeln!(out, "## Known issues\n");
    if review.known_issues.is_empty() {
        let _ = writeln!(out, "None of chaudit's version-gated rules changes verdict between these versions.\n");
    }
    for issue in &review.known_issues {
        let _ = writeln!(
            out,
            "- `{}` {} (ClickHouse {}): {}",
            issue.rule_id,
            issue.title,
            issue.versions,
            issue_verdict(issue, &to.status.release)
        );
        for f in &issue.findings {
            let _ = writeln!(out, "  - {}", crate::report::markdown::text(&f.message));
        }
    }
    if !review.known_issues.is_empty() {
        out.push('\n');
    }
    if s.default_changes > 0 {
        let _ = writeln!(out, "Escape hatch: {}\n", cell(&review.escape_hatch));
    }
    for (title, matches) in [
        (
            "Default changes used by this workload",
            (|e: &Exposure| matches!(e, Exposure::UsedByWorkload { .. })) as fn(&Exposure) -> bool,
        ),
        ("Default changes left at default", |e| matches!(e, Exposure::Default)),
        ("Default changes set explicitly (unaffected where set)", |e| matches!(e, Exposure::Explicit { .. })),
    ] {
        let rows: Vec<_> = review.default_changes.iter().filter(|c| matches(&c.exposure)).collect();
        let _ = writeln!(out, "## {title} ({})\n", rows.len());
        if rows.is_empty() {
            let _ = writeln!(out, "None.\n");
            continue;
        }
        let _ = writeln!(
            out,
            "| # | setting | {} → {} | in | here | why | keep the old default |\n|---|---|---|---|---|---|---|",
            from.status.release, to.status.release
        );
        for c in rows {
            let ch = &c.change;
            let here = match &c.exposure {
                Exposure::UsedByWorkload { used_by } => {
                    format!("{}: {} {}", used_by.what, thousands(used_by.count), used_by.scope)
                }
                Exposure::Explicit { set_at } => set_at.join("; "),
                Exposure::Default => "-".into(),
            };
            let mut kind =
                if ch.kind == crate::facts::catalog::SettingKind::MergeTree { " (MergeTree)" } else { "" }.to_string();
            if c.new_setting {
                kind.push_str(" (new setting)");
            }
            kind.push_str(&format!(" ({})", c.risk.label()));
            let versions: Vec<&str> = ch.steps.iter().map(|s| s.version.as_str()).collect();
            let why = ch.steps.last().map_or("", |s| s.reason.as_str());
            let _ = writeln!(
                out,
                "| {} | `{}`{kind} | `{}` → `{}` | {} | {} | {} | {} |",
                c.rank,
                ch.name,
                ch.from_default,
                ch.to_default,
                versions.join(", "),
                cell(&here),
                cell(why),
                cell(&c.keep_old)
            );
        }
        out.push('\n');
    }
    if !review.notes.is_empty() {
        let _ = writeln!(out, "## Notes\n");
        for n in &review.notes {
            let _ = writeln!(out, "- {}", crate::report::markdown::text(n));
        }
    }
    out
}

/// Table cells: no pipes, no line breaks, XML tags shown as code, never raw HTML.
fn cell(text: &str) -> String {
    crate::report::markdown::cell(text)
}
