//! Baselines: `--write-baseline FILE` records today's findings by fingerprint; with
//! `--baseline FILE` only findings not in it count toward the exit code. Fingerprints
//! hash rule, file and message, so moving lines does not make old findings new.

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::eval::Finding;

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
        Baseline { chaudit_baseline: 1, findings }
    }

    pub fn read(path: &Path) -> Result<Baseline, String> {
        let text = crate::regular_file::read_to_string(path)
            .map_err(|e| format!("cannot read baseline {}: {e}", path.display()))?;
        serde_json::from_str(&text)
            .map_err(|e| format!("{}:{}:{}: not a chaudit baseline: {e}", path.display(), e.line(), e.column()))
    }

    /// Writes to a temporary file beside `path`, then renames: never a partial baseline.
    /// Only an absent path or a regular file is replaced.
    pub fn write(&self, path: &Path) -> Result<(), crate::regular_file::WriteError> {
        let text = serde_json::to_string_pretty(self).expect("a baseline is plain JSON") + "\n";
        crate::regular_file::replace(path, text.as_bytes())
    }

    /// Marks the findings this baseline already knows.
    pub fn apply(&self, findings: &mut [Finding]) {
        let known: BTreeSet<&str> = self.findings.iter().map(|e| e.fingerprint.as_str()).collect();
        for f in findings {
            f.baselined = known.contains(f.fingerprint.as_str());
        }
    }
}
