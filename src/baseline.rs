//! Baselines: `--write-baseline FILE` records today's findings by fingerprint; with
//! `--baseline FILE` only findings not in it count toward the exit code. A finding is known
//! by its rule, object and file (see [`identity`]), so neither moving lines nor a changing
//! count nor a reworded message makes an old finding new. A run that did not judge every
//! rule keeps the old entries of the rules it did not judge.
//!
//! Format 1 fingerprints hashed the message with its numbers left out: a format 1 file is
//! still read, its entries matched that way (and kept so when a baseline is written anew).
//!
//! [`identity`]: crate::eval::finding::identity

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::eval::Finding;
use crate::eval::finding::fingerprint;

/// The baseline format this chaudit writes (`chaudit_baseline`).
pub const FORMAT: u32 = 2;
/// The format whose fingerprints came from the message: still read.
const FORMAT_BY_MESSAGE: u32 = 1;

#[derive(Debug, Serialize, Deserialize)]
pub struct Baseline {
    pub chaudit_baseline: u32,
    pub findings: Vec<Entry>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Entry {
    pub fingerprint: String,
    pub rule_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    #[serde(default)]
    pub file: Option<String>,
    /// For the reader of the file; matched only in entries of format 1.
    pub message: String,
    /// Recorded in format 1: matched by rule, file and message without its numbers.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub by_message: bool,
}

impl Baseline {
    /// The active (unsuppressed) findings.
    pub fn of(findings: &[Finding]) -> Baseline {
        let findings = findings
            .iter()
            .filter(|f| f.suppressed.is_none())
            .map(|f| Entry {
                fingerprint: f.fingerprint.clone(),
                rule_id: f.rule_id.clone(),
                object: f.object.clone(),
                file: f.location.as_ref().map(|l| l.file.clone()),
                message: f.message.clone(),
                by_message: false,
            })
            .collect();
        Baseline { chaudit_baseline: FORMAT, findings }
    }

    pub fn read(path: &Path) -> Result<Baseline, String> {
        let text = crate::regular_file::read_to_string(path)
            .map_err(|e| format!("cannot read baseline {}: {e}", path.display()))?;
        let mut baseline: Baseline =
            serde_json::from_str(&text).map_err(|e| crate::regular_file::json_error(path, "a chaudit baseline", &e))?;
        match baseline.chaudit_baseline {
            FORMAT => {}
            FORMAT_BY_MESSAGE => {
                for entry in &mut baseline.findings {
                    entry.by_message = true;
                }
                baseline.chaudit_baseline = FORMAT;
            }
            other => {
                return Err(format!(
                    "{}: baseline format {other}; this chaudit reads formats {FORMAT_BY_MESSAGE} and {FORMAT} (write it again with --write-baseline)",
                    path.display(),
                ));
            }
        }
        Ok(baseline)
    }

    /// Keeps the entries of `old` that `keep` selects (rules this run did not judge), beside
    /// this run's own.
    pub fn keeping(mut self, old: Baseline, keep: impl Fn(&Entry) -> bool) -> Baseline {
        let known: BTreeSet<String> = self
            .findings
            .iter()
            .flat_map(|e| [e.fingerprint.clone(), by_message(&e.rule_id, e.file.as_deref(), &e.message)])
            .collect();
        self.findings.extend(old.findings.into_iter().filter(|e| keep(e) && !known.contains(&e.key())));
        self
    }

    /// Writes to a temporary file beside `path`, then renames: never a partial baseline.
    /// Only an absent path or a regular file is replaced.
    pub fn write(&self, path: &Path) -> Result<(), crate::regular_file::WriteError> {
        crate::regular_file::replace(path, self.to_text().as_bytes())
    }

    /// The baseline file's text.
    pub fn to_text(&self) -> String {
        serde_json::to_string_pretty(self).expect("a baseline is plain JSON") + "\n"
    }

    /// Marks the findings this baseline already knows.
    pub fn apply(&self, findings: &mut [Finding]) {
        let (old, new): (Vec<&Entry>, Vec<&Entry>) = self.findings.iter().partition(|e| e.by_message);
        let fingerprints: BTreeSet<&str> = new.iter().map(|e| e.fingerprint.as_str()).collect();
        let messages: BTreeSet<String> = old.iter().map(|e| e.key()).collect();
        for f in findings {
            f.baselined = fingerprints.contains(f.fingerprint.as_str())
                || (!messages.is_empty() && messages.contains(&by_message_of(f)));
        }
    }
}

impl Entry {
    /// What the entry is matched by: its fingerprint, or for a format 1 entry its rule, file
    /// and message (recomputed, so one written when fingerprints still held the numbers
    /// matches as well).
    fn key(&self) -> String {
        if self.by_message {
            by_message(&self.rule_id, self.file.as_deref(), &self.message)
        } else {
            self.fingerprint.clone()
        }
    }
}

fn by_message_of(f: &Finding) -> String {
    by_message(&f.rule_id, f.location.as_ref().map(|l| l.file.as_str()), &f.message)
}

/// The format 1 identity: the rule, the file and the message with every number left out
/// (`12 parts` and `40 parts` are the same problem growing; `disk2` keeps its digit).
fn by_message(rule_id: &str, file: Option<&str>, message: &str) -> String {
    fingerprint(&[rule_id, file.unwrap_or(""), &without_numbers(message)])
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::finding::identity;
    use crate::rules::Severity;

    fn finding(object: &str, message: &str) -> Finding {
        let rule = "too-many-parts-in-partition";
        Finding {
            fingerprint: identity(rule, Some(object), ""),
            ..crate::eval::finding::example(rule, Severity::High, message, Some(object))
        }
    }

    #[test]
    fn format_1_identities_leave_numbers_out_but_keep_names() {
        assert_eq!(without_numbers("12 parts (1,024.5 MiB) on disk2 of s3_1"), "# parts (# MiB) on disk2 of s3_1");
        assert_eq!(by_message("r", None, "42 queries"), by_message("r", None, "7 queries"));
        assert_ne!(by_message("r", None, "user a1"), by_message("r", None, "user a2"));
    }

    #[test]
    fn a_baselined_object_stays_known_whatever_its_message_says() {
        let baseline = Baseline::of(&[finding("db.t.2024", "db.t has 310 parts in partition 2024")]);
        let mut now = [
            finding("db.t.2024", "partition 2024 of db.t: 480 active parts"),
            finding("db.u.2024", "db.u has 310 parts in partition 2024"),
        ];
        baseline.apply(&mut now);
        assert!(now[0].baselined);
        assert!(!now[1].baselined);
    }

    #[test]
    fn format_1_entries_match_by_message_and_are_kept_so() {
        let old = Baseline {
            chaudit_baseline: FORMAT,
            findings: vec![Entry {
                fingerprint: "0123456789abcdef".into(),
                rule_id: "too-many-parts-in-partition".into(),
                object: None,
                file: None,
                message: "db.t has 12 parts in partition 2024".into(),
                by_message: true,
            }],
        };
        let mut now = [finding("db.t.2024", "db.t has 310 parts in partition 2024")];
        old.apply(&mut now);
        assert!(now[0].baselined);
        // written anew by a run that did not judge the rule: the entry stays, still matched by message
        let kept = Baseline::of(&[]).keeping(old, |_| true);
        assert!(kept.findings[0].by_message);
    }
}
