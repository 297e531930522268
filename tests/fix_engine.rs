//! Every rule's config fix, applied by `chaudit fix` to the rule's must-fire fixtures and
//! judged twice: by the re-audit (the finding is gone, no finding of medium or more came)
//! and by the real clickhouse-server 25.8 (the fixed tree starts when the original did, and
//! starts where the original was refused).

mod support;

use std::path::{Path, PathBuf};

use chaudit::audit::RulesRequest;
use chaudit::config::{Base, LoadOptions};
use chaudit::fix::{FixOutcome, FixRequest, run};
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

/// `chaudit fix` of `config` with the rules of this checkout, written (not a dry run).
fn fix_request(config: PathBuf, load: LoadOptions, version: Option<chaudit::version::Version>) -> FixRequest {
    FixRequest {
        config,
        load,
        version,
        rules: RulesRequest { builtin: false, dirs: vec![support::repo_root().join("rules")], ..Default::default() },
        dry_run: false,
        sql: None,
    }
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

/// `chaudit fix` run on a copy of one rule's must-fire fixture.
struct Fixed {
    rule_id: String,
    fixture: PathBuf,
    /// The fixed copy (`tree`) lives here.
    _dir: tempfile::TempDir,
    tree: PathBuf,
    /// The rule and the fixture, as a failure names them.
    case: String,
    outcome: FixOutcome,
}

/// How a fixture is laid out for `chaudit fix`.
#[derive(Clone, Copy, PartialEq)]
enum Layout {
    /// As it is.
    Alone,
    /// Its files over the official image's (`--base image`), replacing config.xml and users.xml.
    OverImage,
    /// Its config.xml as the first config.d/ fragment over the image's files, without its
    /// users.xml: the image's users and the users file its entrypoint writes stay.
    FragmentOverImage,
}

/// `chaudit fix` on a copy of every must-fire fixture of every rule with a config fix, laid
/// out as `layout` says; and the runs that failed, as failures.
fn fix_every_fixture(layout: Layout) -> (Vec<Fixed>, Vec<String>) {
    let pack = RulePack::load(false, &[support::repo_root().join("rules")]).expect("the rule pack loads");
    let (mut fixed, mut failed) = (Vec::new(), Vec::new());
    for rule in pack.rules.iter().filter(|r| !r.remediation.config.is_empty()) {
        for test in rule.tests.iter().filter(|t| t.expect == Expectation::Fires) {
            let Some(_) = main_config(&test.fixture) else { continue };
            let dir = tempfile::tempdir().unwrap();
            let tree = copy_fixture(&test.fixture, dir.path());
            let mut main = main_config(&tree).unwrap();
            if layout == Layout::FragmentOverImage {
                if !main.ends_with("config.xml") {
                    continue;
                }
                std::fs::create_dir_all(tree.join("config.d")).unwrap();
                std::fs::rename(&main, tree.join("config.d/00-fixture.xml")).unwrap();
                let _ = std::fs::remove_file(tree.join("users.xml"));
                main = tree.join("config.xml");
            }
            let base = (layout != Layout::Alone).then_some(Base::Image);
            let load = LoadOptions { base, ..LoadOptions::for_fixture(&tree) };
            let over = match layout {
                Layout::Alone => "",
                Layout::OverImage => " over the image",
                Layout::FragmentOverImage => " as a fragment over the image",
            };
            let case = format!("{} on {}{over}", rule.id, test.fixture.display());
            match run(&fix_request(main, load, test.version)) {
                Ok(outcome) => fixed.push(Fixed {
                    rule_id: rule.id.clone(),
                    fixture: test.fixture.clone(),
                    case,
                    outcome,
                    _dir: dir,
                    tree,
                }),
                Err(e) => failed.push(format!("{case}: chaudit fix failed: {e}")),
            }
        }
    }
    (fixed, failed)
}

#[test]
fn every_config_fix_clears_its_finding_and_the_fixed_tree_starts() {
    let (mut cleared, mut started, mut engine_cases, mut rescued, mut yours) = (0, 0, 0, 0, 0);
    let (fixed, mut failures) = fix_every_fixture(Layout::Alone);
    let cases = fixed.len() + failures.len();
    let mut proven = std::collections::BTreeSet::new();
    for Fixed { rule_id, fixture, tree, case, outcome, .. } in fixed {
        let mine_applied = outcome.applied.iter().any(|i| i.rule_id == rule_id);
        let mine_remaining: Vec<_> = outcome.remaining.iter().filter(|(i, _)| i.rule_id == rule_id).collect();
        // a fixture whose fix is the user's (the rule renders no fragment for it) is told so
        if !mine_applied && outcome.needs_user.iter().any(|(i, _)| i.rule_id == rule_id) {
            yours += 1;
            continue;
        }
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
        if has_yaml(&fixture) {
            continue;
        }
        engine_cases += 1;
        let original_dir = tempfile::tempdir().unwrap();
        let original = support::engine_start(&copy_fixture(&fixture, original_dir.path()));
        let fixed = support::engine_start(&tree);
        if fixed.started {
            started += 1;
            if !original.started {
                rescued += 1;
            }
            proven.insert(rule_id);
        } else {
            failures.push(format!(
                "{case}: the fixed tree does not start (the original {}): {:?}",
                if original.started { "did" } else { "did not either" },
                fixed.errors
            ));
        }
    }
    eprintln!(
        "{cases} fixture(s) fixed; {cleared} cleared on re-audit; {yours} left to the user; {started} of {engine_cases} \
         fixed trees start on 25.8 ({rescued} of them refused before the fix); rules proven: {}",
        proven.into_iter().collect::<Vec<_>>().join(", ")
    );
    assert!(failures.is_empty(), "{} failure(s):\n{}", failures.len(), failures.join("\n"));
}

/// Every rule's config fix where its must-fire fixture is a container's /etc/clickhouse-server
/// over the official image (`--base image`, the image's entrypoint writing its users file
/// from an empty environment), its files mounted over the image's or its config.xml a
/// config.d/ fragment: wherever the rule fires there, its fix clears it and brings no new
/// finding. (A users fix that changes `default` ends the entrypoint's restriction of
/// it to the container; the fix must keep it there itself.)
#[test]
fn every_config_fix_over_the_image_clears_its_finding_and_brings_nothing() {
    let (over, mut failures) = fix_every_fixture(Layout::OverImage);
    let (fragments, fragment_failures) = fix_every_fixture(Layout::FragmentOverImage);
    failures.extend(fragment_failures);
    let (cases, mut fired) = (over.len() + fragments.len() + failures.len(), 0);
    for Fixed { rule_id, case, outcome, .. } in over.into_iter().chain(fragments) {
        // over the image's files and entrypoint the rule need not fire
        if !outcome.applied.iter().any(|i| i.rule_id == rule_id) {
            continue;
        }
        fired += 1;
        let mine_remaining: Vec<_> = outcome.remaining.iter().filter(|(i, _)| i.rule_id == rule_id).collect();
        if !mine_remaining.is_empty() || !outcome.introduced.is_empty() {
            failures.push(format!(
                "{case}: the re-audit still fires ({mine_remaining:?}) or reports new findings ({:?})",
                outcome.introduced
            ));
        }
    }
    eprintln!("{cases} fixture layout(s) over the image; {fired} with the rule's finding, fixed");
    assert!(fired > 0, "no fixture's rule fires over the image");
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
    let request = fix_request(tree.join("config.xml"), LoadOptions::for_fixture(&tree), None);
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

/// Every config fix as a user applies it from the report: the snippet printed for each
/// finding, saved as printed to the file its first line names (the text report prints the
/// same lines as the JSON's `remediation.config`, and SARIF's `fixes` write the same files:
/// checked here too). The re-audit no longer
/// reports the finding and adds none of medium or more, and the pasted tree starts on 25.8
/// when the original did or was refused for this finding.
#[test]
fn every_printed_config_fix_pasted_as_printed_clears_its_finding() {
    let pack = RulePack::load(false, &[support::repo_root().join("rules")]).expect("the rule pack loads");
    let chaudit = env!("CARGO_BIN_EXE_chaudit");
    let audit = |tree: &Path, rule: &str, version: Option<&str>, format: &str| -> String {
        let mut command = std::process::Command::new(chaudit);
        command.arg("--config").arg(tree.join("config.xml")).args(["--format", format, "--color", "never", "-q"]);
        command.args(["--default-include-from", "none"]);
        if !rule.is_empty() {
            command.args(["--select", rule]);
        }
        if let Some(v) = version {
            command.args(["--clickhouse-version", v]);
        }
        if tree.parent().unwrap().join("env").is_file() {
            command.arg("--env-file").arg(tree.parent().unwrap().join("env"));
        }
        String::from_utf8_lossy(&command.output().unwrap().stdout).into_owned()
    };
    let findings = |json: &str| -> Vec<serde_json::Value> {
        let report: serde_json::Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {json}"));
        report["findings"].as_array().cloned().unwrap_or_default()
    };
    let (mut pasted, mut started, mut sarif_fixes) = (0, 0, 0);
    let mut failures = Vec::new();
    for rule in pack.rules.iter().filter(|r| !r.remediation.config.is_empty()) {
        for test in rule.tests.iter().filter(|t| t.expect == Expectation::Fires) {
            if main_config(&test.fixture).is_none_or(|m| !m.ends_with("config.xml")) {
                continue;
            }
            let case = format!("{} on {}", rule.id, test.fixture.display());
            let dir = tempfile::tempdir().unwrap();
            let tree = copy_fixture(&test.fixture, dir.path());
            let version = test.version.map(|v| v.to_string());
            let before = findings(&audit(&tree, "", version.as_deref(), "json"));
            let text = audit(&tree, &rule.id, version.as_deref(), "text");
            let sarif: serde_json::Value =
                serde_json::from_str(&audit(&tree, &rule.id, version.as_deref(), "sarif")).unwrap();
            let mut written: Vec<String> = Vec::new();
            let mut fixed_objects = Vec::new();
            for (i, finding) in before.iter().filter(|f| f["rule_id"] == rule.id.as_str()).enumerate() {
                let snippet = finding["remediation"]["config"].as_str().unwrap_or_default();
                // the text report prints the first finding of a kind in full, the others by line
                if i == 0 && !snippet.lines().all(|line| line.is_empty() || text.contains(line)) {
                    failures.push(format!("{case}: the text report does not print the JSON's snippet:\n{snippet}"));
                }
                if snippet.is_empty() && finding["remediation"]["manual"].is_null() {
                    failures.push(format!("{case}: a finding with neither a printed fix nor what to do"));
                }
                if !snippet.is_empty() {
                    fixed_objects.push(finding["object"].clone());
                }
                for (file, block) in printed_files(snippet) {
                    if written.contains(&file) {
                        failures.push(format!(
                            "{case}: two snippets name {file}: pasted as printed, the second replaces the first"
                        ));
                    }
                    let path = tree.join(&file);
                    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                    std::fs::write(&path, block).unwrap();
                    written.push(file);
                }
            }
            // the SARIF fixes of the same findings write the same files, each holding its
            // fragment (the printed block without its header line)
            let mut from_sarif: Vec<(String, String)> = Vec::new();
            for change in sarif["runs"][0]["results"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|r| r["fixes"].as_array().cloned().unwrap_or_default())
                .flat_map(|f| f["artifactChanges"].as_array().cloned().unwrap())
            {
                let uri = change["artifactLocation"]["uri"].as_str().unwrap();
                let path = uri.strip_prefix("file://").unwrap_or(uri);
                let file =
                    Path::new(path).strip_prefix(&tree).unwrap_or_else(|_| panic!("{case}: {uri} outside the tree"));
                let text = change["replacements"][0]["insertedContent"]["text"].as_str().unwrap().to_string();
                from_sarif.push((file.display().to_string(), text));
            }
            let printed: Vec<(String, String)> = written
                .iter()
                .map(|file| {
                    let block = std::fs::read_to_string(tree.join(file)).unwrap();
                    (file.clone(), block.split_once('\n').map_or("", |(_, rest)| rest).to_string())
                })
                .collect();
            let (mut from_sarif, mut printed) = (from_sarif, printed);
            from_sarif.sort();
            printed.sort();
            if from_sarif != printed {
                failures.push(format!("{case}: the SARIF fixes {from_sarif:?} are not the printed ones {printed:?}"));
            }
            sarif_fixes += from_sarif.len();
            if written.is_empty() {
                continue; // only the user can write this fix (a password): it prints how
            }
            pasted += 1;
            let after = findings(&audit(&tree, "", version.as_deref(), "json"));
            if after.iter().any(|f| f["rule_id"] == rule.id.as_str() && fixed_objects.contains(&f["object"])) {
                failures.push(format!("{case}: pasted as printed, the finding stays"));
            }
            let at_least_medium =
                |f: &&serde_json::Value| matches!(f["severity"].as_str(), Some("medium" | "high" | "critical"));
            let key = |f: &serde_json::Value| (f["rule_id"].to_string(), f["object"].to_string());
            let old: std::collections::BTreeSet<_> = before.iter().map(key).collect();
            let new: Vec<String> = after
                .iter()
                .filter(at_least_medium)
                .filter(|f| !old.contains(&key(f)))
                .map(|f| format!("{} {}", f["rule_id"], f["message"]))
                .collect();
            if !new.is_empty() {
                failures.push(format!("{case}: pasted as printed, new findings: {new:?}"));
            }
            if has_yaml(&tree) {
                continue;
            }
            if support::engine_start(&tree).started {
                started += 1;
            } else {
                failures.push(format!("{case}: the pasted tree does not start"));
            }
        }
    }
    eprintln!(
        "{pasted} fixture(s) fixed by pasting the printed snippets; {started} pasted trees start on 25.8; \
         {sarif_fixes} SARIF file change(s), each the printed one"
    );
    assert!(pasted >= 20 && sarif_fixes >= pasted, "{pasted} pasted, {sarif_fixes} SARIF changes");
    assert!(failures.is_empty(), "{} failure(s):\n{}", failures.len(), failures.join("\n"));
}

/// The files a printed fix names (its `<!-- PATH: ... -->` lines) and the lines under each.
fn printed_files(snippet: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in snippet.lines() {
        let header = line.strip_prefix("<!-- ").and_then(|rest| rest.split_once(": ")).map(|(file, _)| file);
        match (header, out.last_mut()) {
            (Some(file), _) if file.ends_with(".xml") || file.ends_with(".yaml") => {
                out.push((file.to_string(), format!("{line}\n")))
            }
            (_, Some((_, block))) => {
                block.push_str(line);
                block.push('\n');
            }
            (_, None) => {}
        }
    }
    out
}

/// `chaudit fix` on the third-party trees of tests/engine-cases (trees nobody here wrote):
/// what it writes the re-audit no longer reports, it brings no finding of medium or more,
/// and a tree clickhouse-server 25.8 started still starts once fixed. Every fourth tree in
/// `cargo test`; all of them with `CHAUDIT_FIX_TREES=all`.
#[test]
fn chaudit_fix_on_third_party_trees_holds_on_the_engine() {
    let all = std::env::var("CHAUDIT_FIX_TREES").is_ok_and(|v| v == "all");
    let root = support::repo_root().join("tests/engine-cases");
    let mut trees: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|case| case.join("tree/config.xml").is_file())
        .collect();
    trees.sort();
    let (mut fixed, mut applied, mut started) = (0, 0, 0);
    let (mut failures, mut refused) = (Vec::new(), Vec::new());
    for case in trees.iter().enumerate().filter(|(i, _)| all || i % 4 == 1).map(|(_, c)| c) {
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("tree");
        support::copy_tree(&case.join("tree"), &tree);
        if case.join("env").is_file() {
            std::fs::copy(case.join("env"), dir.path().join("env")).unwrap();
        }
        let original = support::engine_start(&tree);
        let mut load = LoadOptions::for_fixture(dir.path());
        load.default_include_from = chaudit::config::DefaultInclude::None;
        let request = fix_request(tree.join("config.xml"), load, Some("25.8".parse().unwrap()));
        let outcome = match run(&request) {
            Ok(outcome) => outcome,
            // a users config the server refuses too (ill-formed, a missing include) cannot take
            // a fragment: chaudit fix says so and exits 2
            Err(e) if !original.started => {
                refused.push(format!("{name}: {e}"));
                continue;
            }
            Err(e) => {
                failures.push(format!("{name}: chaudit fix failed: {e}"));
                continue;
            }
        };
        if outcome.applied.is_empty() {
            continue;
        }
        fixed += 1;
        applied += outcome.applied.len();
        // on a tree the server refused, a fix may reveal what the first refusal hid (the next
        // start-up error): only a tree that started must bring nothing new
        if !outcome.remaining.is_empty() || (original.started && !outcome.introduced.is_empty()) {
            failures.push(format!(
                "{name}: the re-audit still reports {:?} or reports new {:?}",
                outcome.remaining.iter().map(|(i, why)| format!("{} {why}", i.rule_id)).collect::<Vec<_>>(),
                outcome.introduced.iter().map(|i| &i.rule_id).collect::<Vec<_>>()
            ));
        }
        let after = support::engine_start(&tree);
        if after.started {
            started += 1;
        } else if original.started {
            failures.push(format!("{name}: started before the fix, not after: {:?}", after.errors));
        }
    }
    eprintln!(
        "{fixed} third-party trees fixed ({applied} findings), {started} of them start on 25.8 once fixed; \
         not fixable, refused by the server too: {refused:?}"
    );
    assert!(fixed >= 5, "{fixed}");
    assert!(failures.is_empty(), "{} failure(s):\n{}", failures.len(), failures.join("\n"));
}
