//! What an audit produces: an outcome for every rule, and findings ranked by
//! severity x confidence x impact.

use serde::Serialize;

use crate::config::Location;
use crate::rules::{ConfigTree, FIX_FILE, Severity};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OutcomeKind {
    Fired,
    Passed,
    /// The rule does not apply: a version outside its range, or a source not collected.
    NotApplicable,
    /// The evidence could not be read; never reported as passed.
    Inconclusive,
    /// The rule itself is broken (an expression failed).
    Errored,
}

#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub rule_id: String,
    pub outcome: OutcomeKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Cluster audits: the outcome on each replica (the rule's outcome is the most telling).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<HostOutcome>,
}

#[derive(Debug, Clone, Serialize)]
pub struct HostOutcome {
    pub host: String,
    pub outcome: OutcomeKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Cluster audits: a replica where a finding holds, with its own evidence.
#[derive(Debug, Clone, Serialize)]
pub struct HostEvidence {
    pub host: String,
    pub evidence: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Remediation {
    pub restart: bool,
    /// The fragments as a person pastes them, each headed by the file it goes in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<String>,
    /// The same fragments, each with its tree: what `chaudit fix` writes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fragments: Vec<Fragment>,
    /// What only the user can do or choose: `chaudit fix` lists the finding as needing them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub manual: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sql: Option<String>,
}

/// A `<clickhouse>` document merged into one config tree.
#[derive(Debug, Clone, Serialize)]
pub struct Fragment {
    pub tree: ConfigTree,
    pub xml: String,
}

impl Remediation {
    /// The fragments with the file each goes in, as the reports print them.
    pub fn pasteable(fragments: &[Fragment]) -> Option<String> {
        let shown: Vec<String> = fragments
            .iter()
            .map(|f| {
                let file = format!("{}/{}", f.tree.fragment_dir(), FIX_FILE);
                format!(
                    "<!-- {file}: sorts after every other fragment (or run `chaudit fix`) -->\n{}",
                    f.xml.trim_end()
                )
            })
            .collect();
        (!shown.is_empty()).then(|| shown.join("\n"))
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub rule_id: String,
    pub severity: Severity,
    pub title: String,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    pub evidence: serde_json::Map<String, serde_json::Value>,
    pub remediation: Remediation,
    /// Stable across unrelated edits: rule, file and message, not the line.
    pub fingerprint: String,
    /// 1 = most important.
    pub rank: usize,
    /// severity weight x confidence x impact.
    pub score: f64,
    /// Set when an ignore comment or the project file suppresses it (it stays visible).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suppressed: Option<Suppression>,
    /// In the baseline given with `--baseline`: reported, not counted.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub baselined: bool,
    /// Cluster audits: the replicas where it holds (one finding, not one per replica).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<HostEvidence>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Suppression {
    /// `inline` (a comment before the element) or `project` (.chaudit.yaml).
    pub kind: &'static str,
    pub reason: String,
    /// Where the suppression is written, `file:line`.
    pub at: String,
}

impl Finding {
    /// Counts toward the exit code: neither suppressed nor in the baseline.
    pub fn is_active(&self) -> bool {
        self.suppressed.is_none() && !self.baselined
    }
}

/// A finding's identity across runs: its rule, its file and its message with every number
/// left out (`12 parts` and `40 parts` are the same problem growing; `disk2` keeps its
/// digit, part of a name), so a moving count never makes a known finding new.
pub fn identity(rule_id: &str, file: &str, message: &str) -> String {
    fingerprint(&[rule_id, file, &without_numbers(message)])
}

/// `message` with each standalone number (digits with their `.`/`,` separators, not part
/// of a word) as `#`.
fn without_numbers(message: &str) -> String {
    let chars: Vec<char> = message.chars().collect();
    let mut out = String::with_capacity(message.len());
    let mut i = 0;
    while i < chars.len() {
        let word_before = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
        if chars[i].is_ascii_digit() && !word_before {
            let mut j = i;
            while j < chars.len()
                && (chars[j].is_ascii_digit()
                    || (matches!(chars[j], '.' | ',') && chars.get(j + 1).is_some_and(char::is_ascii_digit)))
            {
                j += 1;
            }
            let word_after = chars.get(j).is_some_and(|c| c.is_alphabetic() || *c == '_');
            if !word_after {
                out.push('#');
                i = j;
                continue;
            }
            out.extend(&chars[i..j]);
            i = j;
            continue;
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

/// A 64-bit FNV-1a hash as hex: stable across platforms and releases.
pub fn fingerprint(parts: &[&str]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in part.bytes().chain(std::iter::once(0)) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{hash:016x}")
}

/// Orders findings by severity, then score (a critical is never after a high, whatever the
/// impact and confidence that weigh the score), then rule id and location for stable output,
/// and numbers them.
pub fn rank(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then_with(|| b.score.total_cmp(&a.score))
            .then_with(|| a.rule_id.cmp(&b.rule_id))
            .then_with(|| location_key(&a.location).cmp(&location_key(&b.location)))
    });
    for (i, f) in findings.iter_mut().enumerate() {
        f.rank = i + 1;
    }
}

fn location_key(l: &Option<Location>) -> (String, u32, u32) {
    l.as_ref().map_or((String::new(), 0, 0), |l| (l.file.clone(), l.line, l.column))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(rule_id: &str, severity: Severity, score: f64) -> Finding {
        Finding {
            rule_id: rule_id.into(),
            severity,
            title: String::new(),
            message: String::new(),
            location: None,
            evidence: serde_json::Map::new(),
            remediation: Remediation::default(),
            fingerprint: String::new(),
            rank: 0,
            score,
            suppressed: None,
            baselined: false,
            hosts: Vec::new(),
        }
    }

    #[test]
    fn severity_comes_before_score() {
        let mut findings = vec![
            finding("a", Severity::High, 4.0),
            finding("b", Severity::Critical, 3.5),
            finding("c", Severity::Medium, 4.5),
            finding("d", Severity::High, 4.2),
        ];
        rank(&mut findings);
        let order: Vec<&str> = findings.iter().map(|f| f.rule_id.as_str()).collect();
        assert_eq!(order, ["b", "d", "a", "c"]);
        assert_eq!(findings[0].rank, 1);
    }

    #[test]
    fn identities_leave_numbers_out_but_keep_names() {
        assert_eq!(without_numbers("12 parts (1,024.5 MiB) on disk2 of s3_1"), "# parts (# MiB) on disk2 of s3_1");
        assert_eq!(identity("r", "f", "42 queries"), identity("r", "f", "7 queries"));
        assert_ne!(identity("r", "f", "user a1"), identity("r", "f", "user a2"));
    }

    #[test]
    fn fingerprints_are_stable() {
        assert_eq!(fingerprint(&["a", "b"]), fingerprint(&["a", "b"]));
        assert_ne!(fingerprint(&["ab", ""]), fingerprint(&["a", "b"]));
    }
}
