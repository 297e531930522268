//! `chaudit fix` on a Kubernetes manifest: the fixes of a ClickHouseInstallation written into
//! the manifest file itself, re-read and audited, and the real engine started on the files
//! rendered from the fixed manifest. The manifests are the operator's examples and
//! `mistakes.yaml` (tests/manifests/SOURCE.md).

mod support;

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;

use serde_json::Value;

const MANIFESTS: [&str; 8] = [
    "01-simple-layout-02-1shard-2repl.yaml",
    "04-replication-zookeeper-02-detailed.yaml",
    "05-settings-01-overview.yaml",
    "21-secure-cluster-secret-02-plaintext.yaml",
    "50-CHIT-01-manual-template-simple.yaml",
    "99-clickhouseinstallation-max.yaml",
    "mistakes.yaml",
    // an installation with a Keeper installation beside it: that document is left as it is
    "keeper/chi-with-keeper.yaml",
];

/// Whether every line of `original` is in `edited`, in order: the fix only added lines.
fn only_added(original: &str, edited: &str) -> bool {
    let mut lines = edited.lines();
    original.lines().all(|line| lines.any(|l| l == line))
}

/// Each manifest fixed by `chaudit fix`: the findings it wrote a fix for are gone on
/// re-audit, nothing new at medium or more, the file only gained lines (its comments and
/// other documents kept), a second run changes nothing, the exit code is 1 exactly while a
/// finding at `high` or more remains, and the real clickhouse-server 25.8 starts on the
/// files rendered from the fixed manifest, `mistakes.yaml` included, which it refused before.
#[test]
fn chaudit_fix_writes_the_fixes_into_the_manifest() {
    let source = support::repo_root().join("tests/manifests");
    let (mut written, mut native) = (0, 0);
    for path in MANIFESTS {
        let manifest = path.rsplit('/').next().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let original = std::fs::read_to_string(source.join(path)).unwrap();
        std::fs::write(dir.path().join(manifest), &original).unwrap();
        // a manifest may hold Secrets: readable by its owner only, and kept so
        std::fs::set_permissions(dir.path().join(manifest), std::fs::Permissions::from_mode(0o600)).unwrap();
        let before = support::manifest::findings(dir.path(), manifest);
        let key = |f: &Value| format!("{} {}", f["rule_id"], f["object"]);
        let old: BTreeSet<String> = before.iter().map(key).collect();
        // what chaudit writes: a fix in the manifest's terms that needs no value of the user's
        let writable: Vec<&Value> = before
            .iter()
            .filter(|f| f["remediation"].get("manifest").is_some() && f["remediation"].get("manual").is_none())
            .collect();

        let (code, stdout, stderr) = support::chaudit(dir.path(), &["fix", "--config", manifest]);
        let fixed = std::fs::read_to_string(dir.path().join(manifest)).unwrap();
        let after = support::manifest::findings(dir.path(), manifest);
        for finding in &writable {
            written += 1;
            if !finding["remediation"]["manifest"]["merge"].as_str().unwrap().contains("files:") {
                native += 1;
            }
            assert!(
                !after.iter().any(|f| f["fingerprint"] == finding["fingerprint"]),
                "{manifest}: {} still reported after `chaudit fix`:\n{stdout}\n{fixed}",
                finding["rule_id"]
            );
        }
        for new in after.iter().filter(|f| !old.contains(&key(f))) {
            let severity = new["severity"].as_str().unwrap();
            assert!(!["medium", "high", "critical"].contains(&severity), "{manifest}: the fix brought {new}");
        }
        let high = after.iter().any(|f| ["high", "critical"].contains(&f["severity"].as_str().unwrap()));
        assert_eq!(code, i32::from(high), "{manifest}: {stdout}{stderr}");
        if writable.is_empty() {
            assert_eq!(fixed, original, "{manifest}: written with nothing to fix");
            continue;
        }
        assert!(stdout.contains(&format!("wrote {manifest} ({} fix(es)", writable.len())), "{manifest}: {stdout}");
        assert!(stdout.contains("re-audit: every fixed finding is gone"), "{manifest}: {stdout}");
        assert!(only_added(&original, &fixed), "{manifest}: lines changed or lost:\n{fixed}");
        let mode = std::fs::metadata(dir.path().join(manifest)).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{manifest}: its permissions changed");
        // a second run finds nothing more to write
        let (_, again, _) = support::chaudit(dir.path(), &["fix", "--config", manifest]);
        assert!(!again.contains("wrote "), "{manifest}: {again}");
        assert_eq!(std::fs::read_to_string(dir.path().join(manifest)).unwrap(), fixed);
        let verdict = support::manifest::start_rendered(dir.path(), manifest, support::manifest::beside_users_xml);
        assert!(verdict.started, "{manifest} fixed by chaudit fix: {verdict:?}");
    }
    eprintln!("{written} fix(es) written into the manifests, {native} in the manifest's own terms");
    assert!(written >= 12 && native >= 6, "{written} written, {native} native");
}

/// `--dry-run` shows the manifest's change as a diff and leaves the file as it was; a fix the
/// user must complete (the Keeper hosts, a password's hash) is listed in the manifest's terms.
#[test]
fn a_dry_run_shows_the_manifest_diff_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let original = std::fs::read_to_string(support::repo_root().join("tests/manifests/mistakes.yaml")).unwrap();
    std::fs::write(dir.path().join("mistakes.yaml"), &original).unwrap();
    let (code, stdout, _) = support::chaudit(dir.path(), &["fix", "--config", "mistakes.yaml", "--dry-run"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("--- a/mistakes.yaml\n+++ b/mistakes.yaml"), "{stdout}");
    assert!(stdout.contains("+        secret:\n+          auto: \"true\""), "{stdout}");
    assert!(stdout.contains("would write mistakes.yaml (5 fix(es)"), "{stdout}");
    assert!(stdout.contains("replace `analyst/password`"), "{stdout}");
    assert!(!stdout.contains("users.d/zz-chaudit-fix.xml"), "{stdout}");
    assert!(stdout.contains("spec.configuration.zookeeper.nodes"), "{stdout}");
    assert_eq!(std::fs::read_to_string(dir.path().join("mistakes.yaml")).unwrap(), original);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "a file was left beside the manifest");
}

/// A ClickHouseKeeperInstallation's fixes go into it as into a ClickHouseInstallation: the log
/// level's fragment as a `spec.configuration.files` entry (only lines added, the finding gone
/// on re-audit); the raft id and server id need the user, in the installation's terms.
#[test]
fn a_keeper_installation_takes_its_fixes() {
    let dir = tempfile::tempdir().unwrap();
    let original = std::fs::read_to_string(support::repo_root().join("tests/manifests/keeper/mistakes.yaml")).unwrap();
    std::fs::write(dir.path().join("mistakes.yaml"), &original).unwrap();
    let (code, stdout, _) = support::chaudit(dir.path(), &["fix", "--config", "mistakes.yaml"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("merged into the ClickHouseKeeperInstallation `mistakes`"), "{stdout}");
    assert!(stdout.contains("re-audit: every fixed finding is gone"), "{stdout}");
    assert!(stdout.contains("replicasCount: 3"), "{stdout}");
    let fixed = std::fs::read_to_string(dir.path().join("mistakes.yaml")).unwrap();
    assert!(only_added(&original, &fixed), "lines changed or lost:\n{fixed}");
    let left: Vec<String> = support::manifest::findings(dir.path(), "mistakes.yaml")
        .iter()
        .map(|f| f["rule_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(left, ["keeper-raft-duplicate-server", "keeper-server-id-not-in-raft"]);
}
