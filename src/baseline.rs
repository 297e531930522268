//! Baselines: `--write-baseline FILE` records today's findings by fingerprint; with
//! `--baseline FILE` only findings not in it count toward the exit code. A finding is known
//! by its rule, file and message without its numbers (see [`identity`]), so neither moving
//! lines nor a changing count makes an old finding new. A run that did not judge every rule
//! keeps the old entries of the rules it did not judge.

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::eval::Finding;
use crate::eval::finding::identity;

/// The baseline format this chaudit reads and writes (`chaudit_baseline`).
pub const FORMAT: u32 = 1;

#[derive(Debug, Serialize, Deserialize)]
pub struct Baseline {
    pub chaudit_baseline: u32,
    pub findings: Vec<Entry>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Entry {
    pub fingerprint: String,
    pub rule_id: String,
    #[serde(default)]
    pub file: Option<String>,
    pub message: String,
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
                file: f.location.as_ref().map(|l| l.file.clone()),
                message: f.message.clone(),
            })
            .collect();
        Baseline { chaudit_baseline: FORMAT, findings }
    }

    pub fn read(path: &Path) -> Result<Baseline, String> {
        let text = crate::regular_file::read_to_string(path)
            .map_err(|e| format!("cannot read baseline {}: {e}", path.display()))?;
        let baseline: Baseline = serde_json::from_str(&text)
            .map_err(|e| format!("{}:{}:{}: not a chaudit baseline: {e}", path.display(), e.line(), e.column()))?;
        if baseline.chaudit_baseline != FORMAT {
            return Err(format!(
                "{}: baseline format {}; this chaudit reads format {FORMAT} (write it again with --write-baseline)",
                path.display(),
                baseline.chaudit_baseline
            ));
        }
        Ok(baseline)
    }

    /// Keeps the entries of `old` that `keep` selects (rules this run did not judge), beside
    /// this run's own.
    pub fn keeping(mut self, old: Baseline, keep: impl Fn(&Entry) -> bool) -> Baseline {
        let known: BTreeSet<String> = self.findings.iter().map(Entry::identity).collect();
        self.findings.extend(old.findings.into_iter().filter(|e| keep(e) && !known.contains(&e.identity())));
        self
    }

    /// Writes to a temporary file beside `path`, then renames: never a partial baseline.
    /// Only an absent path or a regular file is replaced.
    pub fn write(&self, path: &Path) -> Result<(), crate::regular_file::WriteError> {
        let text = serde_json::to_string_pretty(self).expect("a baseline is plain JSON") + "\n";
        crate::regular_file::replace(path, text.as_bytes())
    }

    /// Marks the findings this baseline already knows.
    pub fn apply(&self, findings: &mut [Finding]) {
        let known: BTreeSet<String> = self.findings.iter().map(Entry::identity).collect();
        for f in findings {
            f.baselined = known.contains(&f.fingerprint);
        }
    }
}

impl Entry {
    /// Recomputed from rule, file and message: a baseline written when fingerprints still
    /// held the numbers matches as well.
    fn identity(&self) -> String {
        identity(&self.rule_id, self.file.as_deref().unwrap_or(""), &self.message)
    }
}
