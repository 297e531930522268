//! Fixes of a ClickHouseCluster (ClickHouse's operator) in its own terms: each finding's
//! config fix is a change of `spec.settings.extraConfig` / `extraUsersConfig`, printed as a
//! merge patch and written into the manifest by `chaudit fix`. Proven on the operator's
//! examples and `mistakes.yaml` (tests/manifests/clickhouse-operator/): the printed patch
//! applied as kubectl applies it, and the same fix written by `chaudit fix`, each re-audited
//! and the real clickhouse-server 25.8 started on the files rendered from the fixed manifest.

mod support;

use std::collections::BTreeSet;

use serde_json::Value;
use support::manifest::{apply, documents, on_this_machine, start_rendered, write_manifest};

const MANIFESTS: [&str; 6] = [
    "aws_eks_gp3.yaml",
    "cluster_with_ssl.yaml",
    "custom_configuration.yaml",
    "gcp_gke_ssd.yaml",
    "minimal.yaml",
    "mistakes.yaml",
];

fn key(finding: &Value) -> String {
    format!("{} {}", finding["rule_id"], finding["object"])
}

/// The findings of `after` that were not in `before`, at medium or more.
fn new_serious(before: &[Value], after: &[Value]) -> Vec<Value> {
    let old: BTreeSet<String> = before.iter().map(key).collect();
    after
        .iter()
        .filter(|f| !old.contains(&key(f)) && ["medium", "high", "critical"].contains(&f["severity"].as_str().unwrap()))
        .cloned()
        .collect()
}

/// Every printed fix of a ClickHouseCluster is a merge patch under `spec.settings` (no
/// config.d file, which the operator would never deploy); applied as `kubectl patch --type
/// merge` applies it, each alone clears its finding and brings nothing at medium or more, and
/// all of them together clear every one. `chaudit fix` writes the same change into the file:
/// the manifest it leaves reads as the patched one, its comments and other documents kept; a
/// second run writes nothing; and the real clickhouse-server 25.8 starts on the files rendered
/// from it, `mistakes.yaml` included, which it refused before.
#[test]
fn every_clickhouse_cluster_fix_clears_its_finding_printed_and_written() {
    let source = support::repo_root().join("tests/manifests/clickhouse-operator");
    let (mut fixes_seen, mut changes_made) = (0, 0);
    for manifest in MANIFESTS {
        let dir = tempfile::tempdir().unwrap();
        let original = std::fs::read_to_string(source.join(manifest)).unwrap();
        std::fs::write(dir.path().join(manifest), &original).unwrap();
        let before = support::manifest::findings(dir.path(), manifest);
        for f in &before {
            assert!(f["remediation"].get("config").is_none(), "{manifest}: {} prints config.d files", f["rule_id"]);
        }
        let fixes: Vec<&Value> = before
            .iter()
            .filter(|f| f["remediation"].get("manifest").is_some() && f["remediation"].get("manual").is_none())
            .collect();
        assert!(!fixes.is_empty(), "{manifest}: no fix in the cluster's terms");

        // the printed patches, applied as kubectl applies them, in a directory of their own
        let patched_dir = tempfile::tempdir().unwrap();
        let reaudit = |docs: &[Value]| {
            write_manifest(patched_dir.path(), manifest, docs);
            support::manifest::findings(patched_dir.path(), manifest)
        };
        let mut all = documents(&original);
        for finding in &fixes {
            fixes_seen += 1;
            let fix = &finding["remediation"]["manifest"];
            // a key of the user's extraConfig deleted (null) or a value of theirs replaced
            let merge = fix["merge"].as_str().unwrap();
            if merge.contains(": null\n") || merge.contains("\"information\"") {
                changes_made += 1;
            }
            assert_eq!(fix["patch_type"], "merge", "{manifest}: {fix}");
            assert!(fix["merge"].as_str().unwrap().starts_with("spec:\n  settings:\n"), "{manifest}: {fix}");
            let command = fix["command"].as_str().unwrap();
            assert!(command.starts_with("kubectl patch clickhousecluster "), "{command}");
            assert!(command.contains(" --type merge -p '"), "{command}");
            let mut docs = documents(&original);
            apply(&mut docs, fix);
            let after = reaudit(&docs);
            assert!(
                !after.iter().any(|f| f["fingerprint"] == finding["fingerprint"]),
                "{manifest}: {} still reported after its patch:\n{}",
                finding["rule_id"],
                fix["merge"]
            );
            let brought = new_serious(&before, &after);
            assert!(brought.is_empty(), "{manifest}: the fix of {} brought {brought:?}", finding["rule_id"]);
            apply(&mut all, fix);
        }
        let after_all = reaudit(&all);
        for finding in &fixes {
            assert!(
                !after_all.iter().any(|f| f["fingerprint"] == finding["fingerprint"]),
                "{manifest}: with every patch, {} remains",
                finding["rule_id"]
            );
        }

        // the same fixes written by `chaudit fix`
        let (code, stdout, stderr) = support::chaudit(dir.path(), &["fix", "--config", manifest]);
        let fixed = std::fs::read_to_string(dir.path().join(manifest)).unwrap();
        assert!(stdout.contains(&format!("wrote {manifest} ({} fix(es)", fixes.len())), "{manifest}: {stdout}");
        assert!(stdout.contains("re-audit: every fixed finding is gone"), "{manifest}: {stdout}");
        assert_eq!(documents(&fixed), all, "{manifest}: chaudit fix and the printed patches differ:\n{fixed}");
        let comments = |text: &str| text.lines().filter(|l| l.trim_start().starts_with('#')).count();
        assert_eq!(comments(&fixed), comments(&original), "{manifest}: comments lost:\n{fixed}");
        let after = support::manifest::findings(dir.path(), manifest);
        for finding in &fixes {
            assert!(!after.iter().any(|f| f["fingerprint"] == finding["fingerprint"]), "{manifest}: {stdout}");
        }
        let brought = new_serious(&before, &after);
        assert!(brought.is_empty(), "{manifest}: chaudit fix brought {brought:?}");
        let high = after.iter().any(|f| ["high", "critical"].contains(&f["severity"].as_str().unwrap()));
        assert_eq!(code, i32::from(high), "{manifest}: {stdout}{stderr}");
        let (_, again, _) = support::chaudit(dir.path(), &["fix", "--config", manifest]);
        assert!(!again.contains("wrote "), "{manifest}: {again}");
        assert_eq!(std::fs::read_to_string(dir.path().join(manifest)).unwrap(), fixed);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "{manifest}: a file was left beside it");

        let verdict = start_rendered(dir.path(), manifest, on_this_machine);
        assert!(verdict.started, "{manifest} fixed by chaudit fix: {verdict:?}");
    }
    eprintln!("{fixes_seen} ClickHouseCluster fix(es) printed and written; {changes_made} change what the user wrote");
    assert!(fixes_seen >= 20 && changes_made >= 2, "{fixes_seen} fixes, {changes_made} changing the user's");
}

/// mistakes.yaml's fixes where they meet the user's own extraConfig: the query setting the
/// user put at the server's root is deleted there and set in the default profile, the
/// logger's level replaced, each written where the user wrote the key.
#[test]
fn a_fix_meeting_the_users_extra_config_changes_it_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let source = support::repo_root().join("tests/manifests/clickhouse-operator/mistakes.yaml");
    std::fs::copy(source, dir.path().join("mistakes.yaml")).unwrap();
    let (_, stdout, _) = support::chaudit(dir.path(), &["fix", "--config", "mistakes.yaml", "--dry-run"]);
    assert!(stdout.contains("-      max_threads: 8\n"), "{stdout}");
    assert!(stdout.contains("-        level: test\n+        level: \"information\"\n"), "{stdout}");
    assert!(stdout.contains("+      profiles:\n+        default:\n+          max_threads: \"8\"\n"), "{stdout}");
    // the user `bi` without a password is theirs to fix, in the manifest's users config
    assert!(stdout.contains("needs you"), "{stdout}");
}
