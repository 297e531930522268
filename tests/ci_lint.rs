//! CI lint: SARIF that the SARIF 2.1.0 schema and Microsoft's official validator (with
//! GitHub's ingestion rules) accept, suppressions with reasons, baselines, JUnit.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

/// (python with jsonschema, Sarif.Multitool), installed under target/sarif on first use.
fn validators() -> &'static (PathBuf, PathBuf) {
    static TOOLS: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let out =
            Command::new("bash").arg(support::repo_root().join("tests/sarif/ensure-validators.sh")).output().unwrap();
        assert!(out.status.success(), "cannot install the SARIF validators:\n{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).unwrap();
        let mut lines = text.lines();
        (PathBuf::from(lines.next().unwrap()), PathBuf::from(lines.next().unwrap()))
    })
}

/// Fails the test unless both validators accept the SARIF file.
fn assert_valid_sarif(file: &Path) {
    let (python, multitool) = validators();
    let schema = support::repo_root().join("tests/sarif/sarif-2.1.0.json");
    let script = "import json,sys,jsonschema\njsonschema.Draft202012Validator(json.load(open(sys.argv[1]))).validate(json.load(open(sys.argv[2])))";
    let out = Command::new(python).args(["-c", script]).arg(&schema).arg(file).output().unwrap();
    assert!(out.status.success(), "schema validation failed:\n{}", String::from_utf8_lossy(&out.stderr));
    let out = Command::new(multitool).arg("validate").arg(file).args(["--rule-kind", "Sarif;Gh"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let errors: Vec<&str> = text.lines().filter(|l| l.contains(": error ")).collect();
    assert!(out.status.success() && errors.is_empty(), "Sarif.Multitool rejects {}:\n{text}", file.display());
}

fn scenario() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    support::copy_tree(&support::repo_root().join("examples/production"), &dir.path().join("deploy/clickhouse"));
    dir
}

fn sarif(dir: &Path, extra: &[&str]) -> (i32, Value) {
    let mut args = vec!["--config", "deploy/clickhouse/config.xml", "--format", "sarif"];
    args.extend_from_slice(extra);
    let (code, stdout, stderr) = support::chaudit(dir, &args);
    assert!(code == 0 || code == 1, "exit {code}: {stderr}");
    std::fs::write(dir.join("out.sarif"), &stdout).unwrap();
    assert_valid_sarif(&dir.join("out.sarif"));
    (code, serde_json::from_str(&stdout).unwrap())
}

fn results(sarif: &Value) -> Vec<&Value> {
    sarif["runs"][0]["results"].as_array().unwrap().iter().collect()
}

fn result_of<'a>(sarif: &'a Value, rule: &str) -> &'a Value {
    results(sarif).into_iter().find(|r| r["ruleId"] == rule).unwrap_or_else(|| panic!("no {rule} result"))
}

#[test]
fn sarif_validates_and_points_at_the_lines() {
    let dir = scenario();
    let (code, sarif) = sarif(dir.path(), &[]);
    assert_eq!(code, 1);
    let open = result_of(&sarif, "default-user-open");
    let location = &open["locations"][0]["physicalLocation"];
    assert_eq!(location["artifactLocation"]["uri"], "deploy/clickhouse/users.xml");
    assert_eq!(location["region"]["startLine"], 15);
    assert_eq!(open["level"], "error");
    let cache = result_of(&sarif, "cache-disk-not-in-policy");
    assert_eq!(
        cache["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "deploy/clickhouse/config.d/20-storage.xml"
    );
    assert_eq!(cache["locations"][0]["physicalLocation"]["region"]["startLine"], 10);
    // every rule that ran is described, security rules with a security-severity
    let rules = sarif["runs"][0]["tool"]["driver"]["rules"].as_array().unwrap();
    let (_, json, _) = support::chaudit(dir.path(), &["--config", "deploy/clickhouse/config.xml", "--format", "json"]);
    let ran = serde_json::from_str::<serde_json::Value>(&json).unwrap()["outcomes"].as_array().unwrap().len();
    assert_eq!(rules.len(), ran, "one SARIF rule per rule that ran");
    let rule = rules.iter().find(|r| r["id"] == "default-user-open").unwrap();
    assert_eq!(rule["properties"]["security-severity"], "9.5");
    assert!(rule["help"]["markdown"].as_str().unwrap().contains("users.d"));
}

#[test]
fn an_inline_ignore_with_a_reason_suppresses_and_stays_visible() {
    let dir = scenario();
    let users = dir.path().join("deploy/clickhouse/users.d/analysts.xml");
    let text = std::fs::read_to_string(&users).unwrap().replace(
        "            <password>changeme</password>",
        "            <!-- chaudit: ignore plaintext-password reason=\"lab account, rotated nightly\" -->\n            <password>changeme</password>",
    );
    std::fs::write(&users, text).unwrap();
    let (_, sarif) = sarif(dir.path(), &[]);
    let suppressed = result_of(&sarif, "plaintext-password");
    assert_eq!(suppressed["suppressions"][0]["kind"], "inSource");
    assert_eq!(suppressed["suppressions"][0]["justification"], "lab account, rotated nightly");
    let (_, json, _) = support::chaudit(dir.path(), &["--config", "deploy/clickhouse/config.xml", "--format", "json"]);
    let json: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["summary"]["suppressed"], 1);
}

#[test]
fn an_ignore_without_a_reason_is_rejected_and_a_stale_one_warns() {
    let dir = scenario();
    let users = dir.path().join("deploy/clickhouse/users.xml");
    let original = std::fs::read_to_string(&users).unwrap();
    std::fs::write(
        &users,
        original.replace("<password></password>", "<!-- chaudit: ignore default-user-open -->\n<password></password>"),
    )
    .unwrap();
    let (code, stdout, stderr) = support::chaudit(dir.path(), &["--config", "deploy/clickhouse/config.xml"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.is_empty());
    assert!(stderr.contains("users.xml:15") && stderr.contains("has no reason"), "{stderr}");

    std::fs::write(
        &users,
        original.replace("<quotas>", "<!-- chaudit: ignore plaintext-password reason=\"old\" -->\n    <quotas>"),
    )
    .unwrap();
    let (_, _, stderr) = support::chaudit(dir.path(), &["--config", "deploy/clickhouse/config.xml"]);
    assert!(stderr.contains("warning") && stderr.contains("matched no finding"), "{stderr}");
}

#[test]
fn project_file_suppressions_expire() {
    let dir = scenario();
    let write = |expires: &str| {
        std::fs::write(
            dir.path().join(".chaudit.yaml"),
            format!("ignore:\n  - rule: analyzer-disabled\n    element: profiles/analyst/allow_experimental_analyzer\n    reason: migrating the analyst dashboards\n    expires: {expires}\n"),
        )
        .unwrap();
    };
    write("2999-01-01");
    let (_, json, _) = support::chaudit(dir.path(), &["--config", "deploy/clickhouse/config.xml", "--format", "json"]);
    let json: Value = serde_json::from_str(&json).unwrap();
    let finding = json["findings"].as_array().unwrap().iter().find(|f| f["rule_id"] == "analyzer-disabled").unwrap();
    assert_eq!(finding["suppressed"]["kind"], "project");

    write("2020-01-01");
    let (_, json, stderr) =
        support::chaudit(dir.path(), &["--config", "deploy/clickhouse/config.xml", "--format", "json"]);
    let json: Value = serde_json::from_str(&json).unwrap();
    let finding = json["findings"].as_array().unwrap().iter().find(|f| f["rule_id"] == "analyzer-disabled").unwrap();
    assert!(finding.get("suppressed").is_none());
    assert!(stderr.contains("expired"), "{stderr}");

    std::fs::write(dir.path().join(".chaudit.yaml"), "ignore:\n  - rule: analyzer-disabled\n").unwrap();
    let (code, _, stderr) = support::chaudit(dir.path(), &["--config", "deploy/clickhouse/config.xml"]);
    assert_eq!(code, 2);
    assert!(stderr.contains(".chaudit.yaml:2") && stderr.contains("no reason"), "{stderr}");
}

#[test]
fn a_baseline_survives_moved_lines_and_catches_new_findings() {
    let dir = scenario();
    let args = ["--config", "deploy/clickhouse/config.xml", "--format", "json"];
    let (code, _, _) = support::chaudit(dir.path(), &[&args[..], &["--write-baseline", "baseline.json"]].concat());
    assert_eq!(code, 0);
    // unrelated edit: every line of users.xml moves down
    let users = dir.path().join("deploy/clickhouse/users.xml");
    let text = std::fs::read_to_string(&users).unwrap();
    std::fs::write(&users, text.replacen("<clickhouse>", "<clickhouse>\n\n    <!-- reviewed -->\n", 1)).unwrap();
    let (code, json, _) = support::chaudit(dir.path(), &[&args[..], &["--baseline", "baseline.json"]].concat());
    assert_eq!(code, 0, "{json}");
    let json: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["summary"]["failing"], 0);
    // a new problem counts
    let config = dir.path().join("deploy/clickhouse/config.d/40-new.xml");
    std::fs::write(&config, "<clickhouse>\n    <max_threads>64</max_threads>\n</clickhouse>\n").unwrap();
    let (code, json, _) = support::chaudit(
        dir.path(),
        &[
            "--config",
            "deploy/clickhouse/config.xml",
            "--format",
            "json",
            "--baseline",
            "baseline.json",
            "--fail-on",
            "medium",
        ],
    );
    assert_eq!(code, 1);
    let json: Value = serde_json::from_str(&json).unwrap();
    let new: Vec<&Value> =
        json["findings"].as_array().unwrap().iter().filter(|f| f.get("baselined").is_none()).collect();
    assert_eq!(new.len(), 1);
    assert_eq!(new[0]["rule_id"], "query-setting-at-server-root");
    // --new-only: the same verdict, only the new finding shown, the baselined ones counted in one line
    let baselined = json["summary"]["baselined"].as_u64().unwrap();
    assert!(baselined > 1, "{json}");
    let line = format!("{baselined} findings in the baseline not shown");
    let baselined_rules: Vec<&str> = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f.get("baselined").is_some())
        .map(|f| f["rule_id"].as_str().unwrap())
        .filter(|rule| *rule != "query-setting-at-server-root")
        .collect();
    for format in ["text", "json", "markdown", "html", "sarif", "junit", "openmetrics"] {
        let (code, out, stderr) = support::chaudit(
            dir.path(),
            &[
                "--config",
                "deploy/clickhouse/config.xml",
                "--format",
                format,
                "--baseline",
                "baseline.json",
                "--fail-on",
                "medium",
                "--new-only",
            ],
        );
        assert_eq!(code, 1, "{format}: {stderr}");
        assert!(out.contains("query-setting-at-server-root"), "{format}: {out}");
        match format {
            "json" => {
                let report: Value = serde_json::from_str(&out).unwrap();
                assert_eq!(report["findings"].as_array().unwrap().len(), 1, "{out}");
                assert_eq!(report["baselined_not_shown"], baselined, "{out}");
                assert_eq!(report["summary"]["baselined"], baselined, "{out}");
            }
            "sarif" => {
                let report: Value = serde_json::from_str(&out).unwrap();
                assert_eq!(report["runs"][0]["results"].as_array().unwrap().len(), 1, "{out}");
                assert!(out.contains(&line), "{out}");
                std::fs::write(dir.path().join("new-only.sarif"), &out).unwrap();
                assert_valid_sarif(&dir.path().join("new-only.sarif"));
            }
            // the metrics count the baselined findings, as without --new-only
            "openmetrics" => assert!(out.contains(&format!("chaudit_findings_baselined {baselined}")), "{out}"),
            _ => {
                assert_eq!(out.matches(&line).count(), 1, "{format}: {out}");
                // a baselined rule with no new finding is not named (markdown lists every rule's outcome)
                if format == "text" {
                    for rule in &baselined_rules {
                        assert!(!out.contains(rule), "{format}: {rule} shown:\n{out}");
                    }
                }
            }
        }
        if format == "junit" {
            let mut reader = quick_xml::Reader::from_str(&out);
            while !matches!(reader.read_event().expect("well-formed JUnit XML"), quick_xml::events::Event::Eof) {}
        }
    }
}

#[test]
fn junit_is_well_formed_xml_with_a_case_per_rule() {
    let dir = scenario();
    let (code, xml, _) =
        support::chaudit(dir.path(), &["--config", "deploy/clickhouse/config.xml", "--format", "junit"]);
    assert_eq!(code, 1);
    let mut reader = quick_xml::Reader::from_str(&xml);
    let (mut cases, mut failures) = (0, 0u64);
    loop {
        match reader.read_event().expect("well-formed JUnit XML") {
            quick_xml::events::Event::Start(e) | quick_xml::events::Event::Empty(e) => match e.name().as_ref() {
                "testcase" => cases += 1,
                "failure" => failures += 1,
                _ => {}
            },
            quick_xml::events::Event::Eof => break,
            _ => {}
        }
    }
    // a failure is an active finding at or above --fail-on: the findings the exit code counts
    let (_, json, _) = support::chaudit(dir.path(), &["--config", "deploy/clickhouse/config.xml", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(cases, report["outcomes"].as_array().unwrap().len(), "one test case per rule that ran");
    assert!(failures >= 1, "the tree has findings at or above --fail-on: {xml}");
    assert_eq!(failures, report["summary"]["failing"].as_u64().unwrap(), "{xml}");
}

#[test]
fn a_yaml_config_takes_ignore_comments_too() {
    let dir = scenario();
    // the YAML fragment of the example: silence the findings its profile setting causes
    std::fs::write(
        dir.path().join("deploy/clickhouse/users.d/tuning.yaml"),
        "profiles:\n  analyst:\n    # chaudit: ignore obsolete-setting-in-profile reason=\"kept for the 24.8 replicas until they upgrade\"\n    allow_experimental_map_type: 0\n",
    )
    .unwrap();
    let (_, json, stderr) =
        support::chaudit(dir.path(), &["--config", "deploy/clickhouse/config.xml", "--format", "json"]);
    let json: Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let finding = support::report_entry(&json, "findings", "obsolete-setting-in-profile").expect("the finding");
    assert_eq!(finding["location"]["file"], "users.d/tuning.yaml");
    assert_eq!(finding["suppressed"]["kind"], "inline");
    assert_eq!(finding["suppressed"]["reason"], "kept for the 24.8 replicas until they upgrade");
}

/// A config that cannot be processed is still a report in the CI formats: a SARIF result at
/// the error's file, line and column (it was a 0-byte file), a JUnit error, a JSON error
/// object; the exit code stays 2.
#[test]
fn a_config_that_cannot_be_processed_is_carried_by_every_ci_format() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("deploy")).unwrap();
    std::fs::write(dir.path().join("deploy/config.xml"), "<clickhouse>\n  <macros><shard>1</shard>\n</clickhouse>\n")
        .unwrap();
    let run = |format: &str, file: &str| {
        let (code, stdout, stderr) =
            support::chaudit(dir.path(), &["--config", "deploy/config.xml", "--format", format, "-o", file]);
        assert_eq!(code, 2, "{stderr}");
        assert!(stdout.is_empty());
        assert!(stderr.contains("ill-formed document"), "the error is still on stderr: {stderr}");
        std::fs::read_to_string(dir.path().join(file)).unwrap()
    };
    let sarif: Value = serde_json::from_str(&run("sarif", "x.sarif")).unwrap();
    assert_valid_sarif(&dir.path().join("x.sarif"));
    let result = &results(&sarif)[0];
    assert_eq!((result["ruleId"].as_str(), result["level"].as_str()), (Some("chaudit-error"), Some("error")));
    let location = &result["locations"][0]["physicalLocation"];
    assert_eq!(location["artifactLocation"]["uri"], "deploy/config.xml");
    assert_eq!(
        (location["region"]["startLine"].as_u64(), location["region"]["startColumn"].as_u64()),
        (Some(3), Some(1))
    );
    assert!(result["message"]["text"].as_str().unwrap().contains("expected `</macros>`"));
    assert_eq!(sarif["runs"][0]["invocations"][0]["executionSuccessful"], false);

    let junit = run("junit", "x.xml");
    assert!(junit.contains("errors=\"1\"") && junit.contains("<error type=\"chaudit::config::syntax\""), "{junit}");

    let json: Value = serde_json::from_str(&run("json", "x.json")).unwrap();
    let error = &json["errors"][0];
    assert_eq!(error["code"], "chaudit::config::syntax");
    assert_eq!((error["location"]["file"].as_str(), error["location"]["line"].as_u64()), (Some("config.xml"), Some(3)));
    assert_eq!(json["summary"]["status"], "not-audited");
}

/// A broken users config beside a good server config: the report of the server config,
/// with the users config's error as a SARIF result too.
#[test]
fn a_partly_broken_config_carries_its_error_beside_the_findings() {
    let dir = scenario();
    std::fs::write(dir.path().join("deploy/clickhouse/users.xml"), "<clickhouse>\n<users>\n</clickhouse>\n").unwrap();
    let (code, stdout, stderr) =
        support::chaudit(dir.path(), &["--config", "deploy/clickhouse/config.xml", "--format", "sarif"]);
    assert_eq!(code, 2, "{stderr}");
    std::fs::write(dir.path().join("out.sarif"), &stdout).unwrap();
    assert_valid_sarif(&dir.path().join("out.sarif"));
    let sarif: Value = serde_json::from_str(&stdout).unwrap();
    let error = result_of(&sarif, "chaudit-error");
    assert_eq!(error["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], "deploy/clickhouse/users.xml");
    assert!(results(&sarif).len() > 1, "the server config's findings are there too");
}

/// A checkout whose config names its files by their absolute paths on the server (the users
/// config through user_directories, include_from): refused without `--root` (exit 2, the
/// SARIF carries the error and stderr the root to give); with it, the SARIF validates, points
/// at the checkout's files, and every result has the fingerprint it has when the same tree
/// names its files relatively (baselines and suppressions carry over).
#[test]
fn a_checkout_naming_absolute_paths_is_linted_through_a_root() {
    let write_tree = |dir: &Path, users: &str, include: &str| {
        let main = dir.join("deploy/clickhouse/config.xml");
        let text =
            std::fs::read_to_string(&main).unwrap().replace("<path>users.xml</path>", &format!("<path>{users}</path>"));
        let text =
            text.replacen("<clickhouse>", &format!("<clickhouse>\n    <include_from>{include}</include_from>"), 1);
        std::fs::write(&main, text).unwrap();
        std::fs::write(
            dir.join("deploy/clickhouse/config.d/macros.xml"),
            "<clickhouse>\n    <macros><shard>01</shard><replica>ch-1</replica></macros>\n</clickhouse>\n",
        )
        .unwrap();
    };
    let relative = scenario();
    write_tree(relative.path(), "users.xml", "config.d/macros.xml");
    let (_, plain) = sarif(relative.path(), &[]);

    let dir = scenario();
    write_tree(dir.path(), "/etc/clickhouse-server/users.xml", "/etc/clickhouse-server/config.d/macros.xml");
    let (code, _, stderr) =
        support::chaudit(dir.path(), &["--config", "deploy/clickhouse/config.xml", "--format", "sarif"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--root /etc/clickhouse-server=DIR"), "{stderr}");

    let (code, rooted) = sarif(dir.path(), &["--root", "/etc/clickhouse-server=deploy/clickhouse"]);
    assert_eq!(code, 1);
    let open = result_of(&rooted, "default-user-open");
    assert_eq!(open["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], "deploy/clickhouse/users.xml");
    assert_eq!(open["locations"][0]["physicalLocation"]["region"]["startLine"], 15);
    let fingerprints = |sarif: &Value| {
        let mut all: Vec<(String, String)> = results(sarif)
            .iter()
            .map(|r| (r["ruleId"].as_str().unwrap().to_string(), r["partialFingerprints"].to_string()))
            .collect();
        all.sort();
        all
    };
    assert!(results(&rooted).len() >= 5);
    assert_eq!(fingerprints(&rooted), fingerprints(&plain));
}
