//! Every rule's config fix, applied by `chaudit fix` to the rule's must-fire fixtures and
//! judged twice: by the re-audit (the finding is gone, no finding of medium or more came)
//! and by the real clickhouse-server 25.8 (the fixed tree starts when the original did, and
//! starts where the original was refused).

mod support;

use std::path::{Path, PathBuf};

use chaudit::audit::RulesRequest;
use chaudit::config::LoadOptions;
use chaudit::fix::{FixRequest, run};
use chaudit::rules::RulePack;
use chaudit::rules::schema::{Expectation, Severity};

/// A fixture copied to `dir/tree`, with its `env` file where the engine harness reads it.
/// Its object-storage disks (those with an endpoint) get `<skip_access_check>` (in the original and the fixed copy alike): their
/// endpoints do not resolve here, and the access check would stop every tree at start.
fn copy_fixture(fixture: &Path, dir: &Path) -> PathBuf {
    let tree = dir.join("tree");
    support::copy_tree(fixture, &tree);
    for file in walk(&tree).iter().filter(|p| p.extension().is_some_and(|e| e == "xml")) {
        let text = std::fs::read_to_string(file).unwrap();
        if text.contains("</endpoint>") {
            let amended = text.replace("</endpoint>", "</endpoint><skip_access_check>true</skip_access_check>");
            std::fs::write(file, amended).unwrap();
        }
    }
    if fixture.join("env").is_file() {
        std::fs::copy(fixture.join("env"), dir.join("env")).unwrap();
    }
    tree
}

fn main_config(tree: &Path) -> Option<PathBuf> {
    ["config.xml", "config.yaml", "config.yml"].iter().map(|m| tree.join(m)).find(|p| p.is_file())
}

/// The PyPI engines have no yaml-cpp: a tree with a YAML file cannot be started by them.
fn has_yaml(tree: &Path) -> bool {
    walk(tree).iter().any(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() { out.extend(walk(&path)) } else { out.push(path) }
    }
    out
}

#[test]
fn every_config_fix_clears_its_finding_and_the_fixed_tree_starts() {
    let pack = RulePack::load(false, &[support::repo_root().join("rules")]).expect("the rule pack loads");
    let (mut cases, mut cleared, mut started, mut engine_cases, mut rescued) = (0, 0, 0, 0, 0);
    let mut failures = Vec::new();
    let mut proven = std::collections::BTreeSet::new();
    for rule in pack.rules.iter().filter(|r| !r.remediation.config.is_empty()) {
        for test in rule.tests.iter().filter(|t| t.expect == Expectation::Fires) {
            let Some(_) = main_config(&test.fixture) else { continue };
            let dir = tempfile::tempdir().unwrap();
            let tree = copy_fixture(&test.fixture, dir.path());
            let main = main_config(&tree).unwrap();
            cases += 1;
            let request = FixRequest {
                config: main.clone(),
                load: LoadOptions::for_fixture(&tree),
                version: test.version,
                rules: RulesRequest {
                    builtin: false,
                    dirs: vec![support::repo_root().join("rules")],
                    ..Default::default()
                },
                dry_run: false,
                sql: None,
            };
            let case = format!("{} on {}", rule.id, test.fixture.display());
            let outcome = match run(&request) {
                Ok(outcome) => outcome,
                Err(e) => {
                    failures.push(format!("{case}: chaudit fix failed: {e}"));
                    continue;
                }
            };
            let mine_applied = outcome.applied.iter().any(|i| i.rule_id == rule.id);
            let mine_remaining: Vec<_> = outcome.remaining.iter().filter(|(i, _)| i.rule_id == rule.id).collect();
            if !mine_applied {
                failures.push(format!("{case}: the fix was not applied ({:?})", outcome.needs_user));
                continue;
            }
            if !mine_remaining.is_empty() || !outcome.introduced.is_empty() {
                failures.push(format!(
                    "{case}: the re-audit still fires ({mine_remaining:?}) or reports new findings ({:?})",
                    outcome.introduced
                ));
                continue;
            }
            cleared += 1;
            if has_yaml(&test.fixture) {
                continue;
            }
            engine_cases += 1;
            let original_dir = dir.path().join("original");
            std::fs::create_dir_all(&original_dir).unwrap();
            let original = support::engine_start(&copy_fixture(&test.fixture, &original_dir));
            let fixed = support::engine_start(&tree);
            if fixed.started {
                started += 1;
                if !original.started {
                    rescued += 1;
                }
                proven.insert(rule.id.clone());
            } else {
                failures.push(format!(
                    "{case}: the fixed tree does not start (the original {}): {:?}",
                    if original.started { "did" } else { "did not either" },
                    fixed.errors
                ));
            }
        }
    }
    eprintln!(
        "{cases} fixture(s) fixed; {cleared} cleared on re-audit; {started} of {engine_cases} fixed trees start on 25.8 \
         ({rescued} of them refused before the fix); rules proven: {}",
        proven.into_iter().collect::<Vec<_>>().join(", ")
    );
    assert!(failures.is_empty(), "{} failure(s):\n{}", failures.len(), failures.join("\n"));
}

/// The bundled example: `chaudit fix` fixes every finding that has a config fix, the re-audit
/// proves it, and the engine judges the result. Its YAML fragment is written as XML in the
/// copy (the PyPI engines have no yaml-cpp); the example keeps it, as the README shows it.
#[test]
fn the_bundled_example_is_fixed_and_judged_by_the_engine() {
    let dir = tempfile::tempdir().unwrap();
    let tree = copy_fixture(&support::repo_root().join("examples/production"), dir.path());
    std::fs::remove_file(tree.join("config.d/30-replicas.yaml")).unwrap();
    std::fs::write(
        tree.join("config.d/30-replicas.xml"),
        "<clickhouse><remote_servers><events><shard>\
         <replica><host>ch-events-1c</host><port>9000</port></replica>\
         </shard></events></remote_servers></clickhouse>",
    )
    .unwrap();
    let request = FixRequest {
        config: tree.join("config.xml"),
        load: LoadOptions::for_fixture(&tree),
        version: None,
        rules: RulesRequest { builtin: false, dirs: vec![support::repo_root().join("rules")], ..Default::default() },
        dry_run: false,
        sql: None,
    };
    let outcome = run(&request).expect("chaudit fix runs on the example");
    assert!(outcome.applied.len() >= 7, "{:?}", outcome.applied);
    assert!(
        outcome.remaining.is_empty() && outcome.introduced.is_empty(),
        "remaining {:?}, introduced {:?}",
        outcome.remaining,
        outcome.introduced
    );
    // the passwords and the secret are still for the user: the run does not pass at high
    let unresolved: Vec<&str> =
        outcome.unresolved(Some(Severity::High)).iter().map(|(i, _)| i.rule_id.as_str()).collect();
    assert_eq!(unresolved, ["default-user-open"], "what a `chaudit fix && deploy` would deploy");
    let needs: Vec<&str> = outcome.needs_user.iter().map(|(i, _)| i.rule_id.as_str()).collect();
    // what only the user can choose: passwords, the cluster's secret
    assert_eq!(
        needs,
        ["default-user-open", "plaintext-password", "cluster-without-secret"],
        "only secrets are left to the user"
    );

    // (copy_fixture turned the S3 disk's access check off: its endpoint does not resolve here)
    let started = support::engine_start(&tree);
    // the listen_host overlap ("Address already in use", exit 210) is fixed; the replicas'
    // names not resolving here (DNS_ERROR) is only logged
    assert!(started.started, "{started:?}");
    assert!(!started.errors.iter().any(|e| e.contains("Address already in use")), "{started:?}");
    // and the example as shipped is refused: the fix is what makes it start
    let original = dir.path().join("original");
    let original = copy_fixture(&support::repo_root().join("examples/production"), &original);
    std::fs::remove_file(original.join("config.d/30-replicas.yaml")).unwrap();
    let refused = support::engine_start(&original);
    assert!(!refused.started && refused.errors.iter().any(|e| e.contains("Address already in use")), "{refused:?}");
}
