//! What an audit produces: an outcome for every rule, and findings ranked by
//! severity x confidence x impact.

use serde::Serialize;

use super::evidence::Evidence;
use crate::config::Location;
use crate::config::extra_config::{self, SERVER_KEY, USERS_KEY};
pub use crate::config::manifest_patch::ManifestFix;
use crate::config::manifest_patch::{Installation, files_snippet};
use crate::rules::{ConfigTree, FIX_FILE, OutcomeKind, Severity};

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

/// The reason a cluster audit gives the rules of a replica it could not read, before `: ` and
/// why (reports fold these rules into one line per replica).
pub const REPLICA_NOT_READ: &str = "replica not read";

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
    /// The ClickHouse version the replica runs: its rules used that version's catalog and gates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The replica's own message, when it says something else than the finding's (other numbers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub evidence: Evidence,
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
    /// A shell command to run on the server's host.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The change to a ClickHouseInstallation the config was rendered from, in its terms
    /// (boxed: most findings have none, and every byte of a finding counts 100,000 times).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub manifest: Option<Box<ManifestFix>>,
    /// The rule's step for the user in a manifest's terms: the audit makes it `manual` when
    /// the config is a ClickHouseInstallation.
    #[serde(skip)]
    pub manifest_manual: Option<String>,
    /// The rule's snippet and step in a ClickHouseCluster's terms: the audit makes them
    /// `manifest` and `manual` when the config is one.
    #[serde(skip)]
    pub cluster_manifest: Option<String>,
    #[serde(skip)]
    pub cluster_manual: Option<String>,
}

/// A `<clickhouse>` document merged into one config tree.
#[derive(Debug, Clone, Serialize)]
pub struct Fragment {
    pub tree: ConfigTree,
    pub xml: String,
}

impl Remediation {
    /// The fragments with the file each goes in, as the reports print them. Each finding
    /// names its own file (`zz-chaudit-fix-` and its fingerprint's first 8 digits): the
    /// snippets of several findings pasted as printed add up, and pasting one twice writes
    /// the same file.
    pub fn pasteable(fragments: &[Fragment], fingerprint: &str) -> Option<String> {
        // joined once at its exact length: one per finding, 100,000 for a large tree, each
        // kept for the whole run
        let mut parts = Vec::with_capacity(fragments.len() * 10);
        for f in fragments {
            if !parts.is_empty() {
                parts.push("\n");
            }
            parts.push("<!-- ");
            parts.extend(Self::snippet_file_parts(f.tree, fingerprint));
            parts.extend([": sorts after every other fragment (or run `chaudit fix`) -->\n", f.xml.trim_end()]);
        }
        (!fragments.is_empty()).then(|| parts.concat())
    }

    /// The file a printed fragment goes in: `config.d/zz-chaudit-fix-0123abcd.xml`.
    pub fn snippet_file(tree: ConfigTree, fingerprint: &str) -> String {
        Self::snippet_file_parts(tree, fingerprint).concat()
    }

    fn snippet_file_parts(tree: ConfigTree, fingerprint: &str) -> [&str; 6] {
        let short = fingerprint.get(..8).unwrap_or(fingerprint);
        let stem = FIX_FILE.strip_suffix(".xml").unwrap_or(FIX_FILE);
        [tree.fragment_dir(), "/", stem, "-", short, ".xml"]
    }

    /// The fix in the terms of the ClickHouseInstallation the config was rendered from (none:
    /// the rule's manifest snippet is dropped). The operator writes the server's files, so
    /// the fix is a change to the manifest: the rule's own snippet (its manual step, written
    /// for config files, then goes), or the fragments as `spec.configuration.files` entries.
    /// `chaudit fix` writes no fragment beside a manifest.
    /// A rule's manual step in the manifest's terms replaces the one for config files; beside a
    /// snippet, the snippet is an example (the values are the user's) that `chaudit fix` does
    /// not write.
    pub fn in_manifest_terms(&mut self, fingerprint: &str, installation: Option<&Installation>) {
        let own_manual = self.manifest_manual.take();
        let (cluster_manifest, cluster_manual) = (self.cluster_manifest.take(), self.cluster_manual.take());
        let Some(installation) = installation else {
            self.manifest = None;
            return;
        };
        if installation.is_clickhouse_cluster() {
            return self.in_cluster_terms(installation, cluster_manifest, cluster_manual);
        }
        let merge = match self.manifest.take() {
            Some(own) => {
                self.manual = own_manual;
                own.merge
            }
            // a fragment holding a secret is not printed (see `manual`)
            None if self.config.is_some() => {
                let entries: Vec<(String, String)> =
                    self.fragments.iter().map(|f| (Self::snippet_file(f.tree, fingerprint), f.xml.clone())).collect();
                files_snippet(&entries)
            }
            None => {
                if own_manual.is_some() {
                    self.manual = own_manual;
                }
                return;
            }
        };
        match installation.fix(&merge) {
            Ok(fix) => {
                self.manifest = Some(Box::new(fix));
                self.config = None;
                self.fragments.clear();
            }
            Err(why) => self.manual = Some(format!("Change the {} `{}`: {why}.", installation.kind, installation.name)),
        }
    }
}

impl Remediation {
    /// The fix of a ClickHouseCluster (ClickHouse's operator): the rule's own in its terms
    /// (`own`, and `own_manual` for the values only the user chooses), else the fragments as
    /// keys of its `extraConfig` and `extraUsersConfig` (a rule's `manifest` speaks of a
    /// ClickHouseInstallation's keys, so it is not this cluster's).
    fn in_cluster_terms(&mut self, cluster: &Installation, own: Option<String>, own_manual: Option<String>) {
        self.manifest = None;
        if own_manual.is_some() {
            self.manual = own_manual;
        }
        if let Some(own) = own {
            match cluster.fix(&own) {
                Ok(fix) => {
                    self.manifest = Some(Box::new(fix));
                    self.config = None;
                    self.fragments.clear();
                }
                Err(why) => self.manual = Some(format!("Change the ClickHouseCluster `{}`: {why}.", cluster.name)),
            }
            return;
        }
        // a fragment holding a secret is not printed (see `manual`)
        if self.config.is_none() || self.fragments.is_empty() {
            return;
        }
        let fragments: Vec<(&str, &str)> = self
            .fragments
            .iter()
            .map(|f| (if f.tree == ConfigTree::Users { USERS_KEY } else { SERVER_KEY }, f.xml.as_str()))
            .collect();
        match extra_config::snippet(&fragments, &cluster.document).and_then(|merge| cluster.fix(&merge)) {
            Ok(fix) => {
                self.manifest = Some(Box::new(fix));
                self.config = None;
                self.fragments.clear();
            }
            Err(why) => {
                self.manual = Some(format!(
                    "Put this fix into the ClickHouseCluster `{}`'s spec.settings.{SERVER_KEY} (server) or \
                     {USERS_KEY} (users), written as YAML: {why}.",
                    cluster.name
                ))
            }
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub rule_id: String,
    pub severity: Severity,
    pub title: String,
    pub message: String,
    /// What the finding is about (a user, a table, a disk, a profile's setting), as the
    /// rule's `object:` names it; none for a rule about the server as a whole.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    pub evidence: Evidence,
    /// Boxed: the findings are moved as they are merged and ranked, and most of this is empty.
    pub remediation: Box<Remediation>,
    /// Stable across unrelated edits and changing numbers: rule, object and file (see
    /// [`identity`]).
    pub fingerprint: String,
    /// 1 = most important.
    pub rank: usize,
    /// severity weight x confidence x impact.
    pub score: f64,
    /// Set when an ignore comment or the project file suppresses it (it stays visible; boxed
    /// as `Remediation::manifest`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suppressed: Option<Box<Suppression>>,
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

/// A finding's identity across runs: its rule, its object and its file. Neither the line
/// (unrelated edits move it) nor the message (its numbers grow, its wording changes) is part
/// of it: `12 parts` and `40 parts` of one table are the same problem.
pub fn identity(rule_id: &str, object: Option<&str>, file: &str) -> String {
    fingerprint(&[rule_id, object.unwrap_or(""), file])
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

fn location_key(l: &Option<Location>) -> (&str, u32, u32) {
    l.as_ref().map_or(("", 0, 0), |l| (l.file.as_str(), l.line, l.column))
}

/// A finding of `rule_id` with only what a unit test sets (the rest empty, score 1).
#[cfg(test)]
pub fn example(rule_id: &str, severity: Severity, message: &str, object: Option<&str>) -> Finding {
    Finding {
        rule_id: rule_id.into(),
        severity,
        title: String::new(),
        message: message.into(),
        object: object.map(str::to_string),
        location: None,
        evidence: Evidence::new(),
        remediation: Box::default(),
        fingerprint: String::new(),
        rank: 0,
        score: 1.0,
        suppressed: None,
        baselined: false,
        hosts: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(rule_id: &str, severity: Severity, score: f64) -> Finding {
        Finding { score, ..example(rule_id, severity, "", None) }
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
    fn identities_are_rule_object_and_file() {
        assert_eq!(identity("r", Some("db.t"), "f"), identity("r", Some("db.t"), "f"));
        assert_ne!(identity("r", Some("db.t1"), "f"), identity("r", Some("db.t2"), "f"));
        assert_ne!(identity("r", Some("db.t"), "f"), identity("r", Some("db.t"), "g"));
        assert_ne!(identity("r", Some("db.t"), "f"), identity("s", Some("db.t"), "f"));
        // no object and an empty one are the same: the rule about the whole file
        assert_eq!(identity("r", None, "f"), identity("r", Some(""), "f"));
    }

    #[test]
    fn fingerprints_are_stable() {
        assert_eq!(fingerprint(&["a", "b"]), fingerprint(&["a", "b"]));
        assert_ne!(fingerprint(&["ab", ""]), fingerprint(&["a", "b"]));
    }

    fn cluster() -> Installation {
        let text = "kind: ClickHouseCluster\nmetadata: {name: shop}\nspec:\n  settings:\n    extraConfig:\n      max_threads: 8\n";
        Installation {
            kind: "ClickHouseCluster".into(),
            name: "shop".into(),
            document: crate::spanned_yaml::read_document(text, crate::source::FileId(0)).unwrap(),
        }
    }

    /// On a ClickHouseCluster the rule's ClickHouseInstallation snippet and step give way: its
    /// fragments become extraConfig keys, or its own snippet and step in the cluster's terms.
    #[test]
    fn a_clickhouse_clusters_fix_is_in_its_own_terms() {
        let fragments = vec![Fragment {
            tree: ConfigTree::Server,
            xml: "<clickhouse><max_threads remove=\"1\"/></clickhouse>".into(),
        }];
        let mut fix = Remediation {
            config: Some("<clickhouse/>".into()),
            fragments,
            manifest: Some(Box::new(ManifestFix::snippet("spec:\n  configuration:\n    files: {}\n".into()))),
            manifest_manual: Some("in spec.configuration".into()),
            ..Remediation::default()
        };
        fix.in_manifest_terms("0123abcd", Some(&cluster()));
        let manifest = fix.manifest.as_ref().unwrap();
        assert_eq!(manifest.merge, "spec:\n  settings:\n    extraConfig:\n      max_threads: null\n");
        assert_eq!(manifest.patches, "cluster");
        assert!(fix.config.is_none() && fix.fragments.is_empty() && fix.manual.is_none());

        let mut own = Remediation {
            manual: Some("for config files".into()),
            cluster_manifest: Some("spec:\n  settings:\n    tls:\n      enabled: \"true\"\n".into()),
            cluster_manual: Some("in spec.settings".into()),
            ..Remediation::default()
        };
        own.in_manifest_terms("0123abcd", Some(&cluster()));
        assert_eq!(own.manual.as_deref(), Some("in spec.settings"));
        let command = &own.manifest.as_ref().unwrap().command;
        assert!(command.starts_with("kubectl patch clickhousecluster shop --type merge -p '{"), "{command}");
    }
}
