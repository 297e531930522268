//! Emitters of the upgrade review (`chaudit upgrade`): text, JSON and Markdown. Like the audit
//! emitters, they only format what [`crate::upgrade::Review`] holds.

pub mod json;
pub mod markdown;
pub mod text;

use crate::upgrade::{IssueChange, KnownIssue, VersionInfo};

/// "LTS, supported" / "monthly release, not supported as of 26.9 (supported: ...)"
fn status_line(v: &VersionInfo) -> String {
    let s = &v.status;
    let kind = if s.lts { "LTS" } else { "monthly release" };
    if s.supported {
        format!("{kind}, supported")
    } else {
        format!("{kind}, not supported as of {} (supported: {})", s.as_of, s.supported_releases.join(", "))
    }
}

fn issue_verdict(issue: &KnownIssue, to: &str) -> String {
    let change = match issue.change {
        IssueChange::FixedByTarget => format!("fixed by {to}"),
        IssueChange::IntroducedByTarget => format!("comes with {to}"),
        IssueChange::Remains => format!("not fixed by {to}"),
    };
    let here = match (issue.shows_here, issue.change) {
        (Some(true), IssueChange::FixedByTarget) => "this server shows it now".to_string(),
        (Some(true), _) => "this server's facts trigger it".to_string(),
        (Some(false), _) => "not seen on this server".to_string(),
        (None, _) => format!("not checked: {}", issue.unchecked_reason.as_deref().unwrap_or("no facts")),
    };
    format!("{change}; {here}")
}

/// "1,234"
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// "24h", "90m", "3600s"
fn window(seconds: u64) -> String {
    match seconds {
        s if s % 86_400 == 0 => format!("{}d", s / 86_400),
        s if s % 3600 == 0 => format!("{}h", s / 3600),
        s if s % 60 == 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn numbers_read_well() {
        assert_eq!(super::thousands(1234567), "1,234,567");
        assert_eq!(super::thousands(12), "12");
        assert_eq!(super::window(86_400), "1d");
        assert_eq!(super::window(5400), "90m");
    }
}
