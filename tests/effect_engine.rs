//! What each config rule says ClickHouse does with the problem (`effect:`), proven on the real
//! clickhouse-server 25.8: on every must-fire fixture, `refuses-to-start` means the server
//! does not start, any other effect means it starts.

mod support;

use std::path::{Path, PathBuf};

use chaudit::rules::RulePack;
use chaudit::rules::schema::{Effect, Expectation};

/// The PyPI engines are built without NuRaft: an embedded Keeper stops them whatever the
/// config (Code 344, SUPPORT_IS_DISABLED), so they cannot judge a rule about one.
const NEEDS_NURAFT: &[&str] = &["keeper-in-server", "keeper-raft-duplicate-server", "keeper-server-id-not-in-raft"];

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() { out.extend(walk(&path)) } else { out.push(path) }
    }
    out
}

/// The fixture in `dir/tree` (its `env` beside it, where the harness reads it), with
/// `<skip_access_check>` on object-storage disks: their endpoints do not resolve here.
fn engine_tree(fixture: &Path, dir: &Path) -> PathBuf {
    let tree = dir.join("tree");
    support::copy_tree(fixture, &tree);
    if fixture.join("env").is_file() {
        std::fs::copy(fixture.join("env"), dir.join("env")).unwrap();
    }
    for file in walk(&tree).iter().filter(|p| p.extension().is_some_and(|e| e == "xml")) {
        let text = std::fs::read_to_string(file).unwrap();
        if text.contains("</endpoint>") {
            let amended = text.replace("</endpoint>", "</endpoint><skip_access_check>true</skip_access_check>");
            std::fs::write(file, amended).unwrap();
        }
    }
    tree
}

#[test]
fn every_config_rule_effect_holds_on_the_engine() {
    let pack = RulePack::load(false, &[support::repo_root().join("rules")]).expect("the rule pack loads");
    let (mut judged, mut refused, mut yaml) = (0, 0, 0);
    let mut failures: Vec<String> = pack
        .rules
        .iter()
        .filter(|r| r.sources == [chaudit::facts::Source::Config] && r.effect.is_none())
        .map(|r| format!("{}: a config rule without `effect:`", r.id))
        .collect();
    for rule in &pack.rules {
        let Some(effect) = rule.effect else { continue };
        if NEEDS_NURAFT.contains(&rule.id.as_str()) {
            continue;
        }
        for test in rule.tests.iter().filter(|t| t.expect == Expectation::Fires) {
            if walk(&test.fixture).iter().any(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml")) {
                yaml += 1; // no yaml-cpp in the PyPI engines
                continue;
            }
            let dir = tempfile::tempdir().unwrap();
            let verdict = support::engine_start(&engine_tree(&test.fixture, dir.path()));
            judged += 1;
            let expected_start = effect != Effect::RefusesToStart;
            if !verdict.started {
                refused += 1;
            }
            if verdict.started != expected_start {
                failures.push(format!(
                    "{} ({effect:?}) on {}: started = {}, {:?}",
                    rule.id,
                    test.fixture.display(),
                    verdict.started,
                    verdict.errors
                ));
            }
        }
    }
    eprintln!("{judged} fixture(s) judged by the engine ({refused} refused), {yaml} YAML fixture(s) left out");
    assert!(judged >= 30, "only {judged} fixtures judged");
    assert!(failures.is_empty(), "{} effect(s) not what the rule says:\n{}", failures.len(), failures.join("\n"));
}

/// A misspelled `<endpoint>` is not ignored: the disk has none and the server stops, and the
/// rule's message says so.
#[test]
fn a_misspelled_endpoint_stops_the_server_and_the_finding_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::write(
        tree.join("config.xml"),
        "<clickhouse><storage_configuration><disks><s3_disk>\
         <type>s3</type><endpiont>https://bucket.s3.amazonaws.com/data/</endpiont>\
         <skip_access_check>true</skip_access_check>\
         </s3_disk></disks></storage_configuration>\
         <users_config>users.xml</users_config></clickhouse>",
    )
    .unwrap();
    std::fs::write(tree.join("users.xml"), support::users_xml("admin", "")).unwrap();
    let verdict = support::engine_start(&tree);
    assert!(!verdict.started, "{verdict:?}");
    assert!(verdict.errors.iter().any(|e| e.contains("storage_configuration.disks.s3_disk.endpoint")), "{verdict:?}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_chaudit"))
        .args(["--select", "misspelled-disk-element", "--format", "json", "--config"])
        .arg(tree.join("config.xml"))
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let message = report["findings"][0]["message"].as_str().unwrap_or_default();
    assert!(message.contains("server will not start"), "{message}");
}
