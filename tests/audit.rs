//! Offline audits of real configurations: the findings an operator would agree with, and
//! no others.

mod support;

use std::path::Path;

use chaudit::config::{self, LoadOptions};
use chaudit::eval::{OutcomeKind, Selection, evaluate};
use chaudit::facts;
use chaudit::rules::RulePack;
use chaudit::rules::schema::Severity;

fn options() -> LoadOptions {
    LoadOptions {
        default_include_from: chaudit::config::DefaultInclude::None,
        env: Default::default(),
        env_origin: None,
        roots: Default::default(),
        base: None,
    }
}

fn audit(main: &Path) -> chaudit::eval::Evaluation {
    let loaded = config::load(main, &options()).unwrap_or_else(|e| panic!("{}: {e}", main.display()));
    let facts = facts::config::facts(&loaded, main.display().to_string(), None);
    // every fact the config gives is in the catalog rules are checked against
    if let Err(problems) = facts::schema::check_document(&facts.json_document()) {
        panic!("{}: facts not in src/facts/schema.txt: {problems:?}", main.display());
    }
    evaluate(&RulePack::load(true, &[]).unwrap_or_else(|e| panic!("{e:?}")), &facts, &Selection::default())
}

/// The findings at or above medium (the stock configs' system logs have no TTL: low
/// findings, checked by [`only_log_retention_is_low`]).
fn serious(evaluation: &chaudit::eval::Evaluation) -> Vec<&chaudit::eval::Finding> {
    evaluation.findings.iter().filter(|f| f.severity >= Severity::Medium).collect()
}

fn only_log_retention_is_low(evaluation: &chaudit::eval::Evaluation) {
    for f in evaluation.findings.iter().filter(|f| f.severity < Severity::Medium) {
        assert!(["query-log-without-ttl", "system-log-without-ttl"].contains(&f.rule_id.as_str()), "{}", f.rule_id);
    }
}

fn stock() -> std::path::PathBuf {
    support::repo_root().join("tests/corpus/real-configs/clickhouse-repo/programs/server")
}

#[test]
fn stock_config_and_users_xml_yield_only_the_open_default_user() {
    let dir = tempfile::tempdir().unwrap();
    for f in ["config.xml", "users.xml"] {
        std::fs::copy(stock().join(f), dir.path().join(f)).unwrap();
    }
    let evaluation = audit(&dir.path().join("config.xml"));
    only_log_retention_is_low(&evaluation);
    let found: Vec<(String, String)> = serious(&evaluation)
        .into_iter()
        .map(|f| (f.rule_id.clone(), f.location.as_ref().map_or(String::new(), |l| format!("{}:{}", l.file, l.line))))
        .collect();
    assert_eq!(found, [("default-user-open".to_string(), "users.xml:55".to_string())]);
    assert!(evaluation.outcomes.iter().all(|o| o.outcome != OutcomeKind::Errored));
}

#[test]
fn stock_tree_with_its_users_d_keeps_default_local_but_managing_access() {
    // users.d/allow_only_from_localhost.xml closes the networks; access_management stays.
    // The development tree's config.d/users.xml holds <profiles> and <users>, which a
    // server reading users.xml ignores
    let evaluation = audit(&stock().join("config.xml"));
    only_log_retention_is_low(&evaluation);
    let ids: Vec<&str> = serious(&evaluation).iter().map(|f| f.rule_id.as_str()).collect();
    assert_eq!(
        ids,
        ["users-section-in-server-config", "users-section-in-server-config", "default-user-access-management"]
    );
}

#[test]
fn debian_stock_yields_only_the_open_default_user() {
    let main = support::repo_root().join("tests/corpus/real-configs/debian-18.16/etc/clickhouse-server/config.xml");
    let evaluation = audit(&main);
    only_log_retention_is_low(&evaluation);
    let ids: Vec<&str> = serious(&evaluation).iter().map(|f| f.rule_id.as_str()).collect();
    assert_eq!(ids, ["default-user-open"]);
}

#[test]
fn every_corpus_file_audits_without_a_broken_rule() {
    let files: Vec<_> =
        support::corpus_files().into_iter().filter(|p| p.file_name().is_some_and(|n| n != "config_incl.xml")).collect();
    assert!(files.len() > 50);
    for file in files {
        let evaluation = audit(&file);
        let errored: Vec<_> = evaluation.outcomes.iter().filter(|o| o.outcome == OutcomeKind::Errored).collect();
        assert!(errored.is_empty(), "{}: {errored:?}", file.display());
    }
}

#[test]
fn the_bundled_example_reports_ranked_findings() {
    let evaluation = audit(&support::repo_root().join("examples/production/config.xml"));
    let ids: Vec<&str> = evaluation.findings.iter().map(|f| f.rule_id.as_str()).collect();
    assert_eq!(ids.first(), Some(&"default-user-open"), "{ids:?}");
    for expected in ["analyzer-disabled", "plaintext-password", "query-condition-cache-disabled"] {
        assert!(ids.contains(&expected), "{expected} missing from {ids:?}");
    }
    let ranks: Vec<usize> = evaluation.findings.iter().map(|f| f.rank).collect();
    assert_eq!(ranks, (1..=ranks.len()).collect::<Vec<_>>());
}

/// A tree with `count` root elements no server reads, plus a users config.
fn unknown_elements(dir: &Path, count: usize) -> std::path::PathBuf {
    let body: String = (0..count).map(|n| format!("<app_metric_{n}>1</app_metric_{n}>\n")).collect();
    std::fs::write(dir.join("config.xml"), format!("<clickhouse>\n{body}</clickhouse>\n")).unwrap();
    dir.join("config.xml")
}

#[test]
fn many_findings_stay_readable_in_text_and_all_of_them_in_json() {
    let dir = tempfile::tempdir().unwrap();
    let main = unknown_elements(dir.path(), 30);
    let main = main.to_str().unwrap();
    let args = ["--config", main, "--select", "unknown-server-setting", "--fail-on", "never"];
    let (code, text, stderr) = support::chaudit(dir.path(), &args);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(text.matches("is read by no ClickHouse server code").count(), 20);
    assert!(text.contains("unknown-server-setting: 10 more finding(s) not shown (--all prints every one)"), "{text}");
    let (_, all, _) = support::chaudit(dir.path(), &[&args[..], &["--all"]].concat());
    assert_eq!(all.matches("is read by no ClickHouse server code").count(), 30);
    assert!(!all.contains("more finding(s) not shown"));
    let (_, json, _) = support::chaudit(dir.path(), &[&args[..], &["--format", "json"]].concat());
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["findings"].as_array().unwrap().len(), 30);
}

/// GitHub code scanning refuses a run of more than 25,000 results ("SARIF results exceed
/// limit" in its docs): the highest ranked are written, and a notification says so.
#[test]
fn sarif_stays_within_githubs_result_limit() {
    let dir = tempfile::tempdir().unwrap();
    let main = unknown_elements(dir.path(), 25_010);
    let main = main.to_str().unwrap();
    let args = ["--config", main, "--select", "unknown-server-setting", "--fail-on", "never", "--format", "sarif"];
    let (code, sarif, stderr) = support::chaudit(dir.path(), &args);
    assert_eq!(code, 0, "{stderr}");
    let sarif: serde_json::Value = serde_json::from_str(&sarif).unwrap();
    let run = &sarif["runs"][0];
    assert_eq!(run["results"].as_array().unwrap().len(), 25_000);
    let notes = run["invocations"][0]["toolExecutionNotifications"].as_array().unwrap();
    let note = notes.iter().find_map(|n| n["message"]["text"].as_str()).unwrap();
    assert!(note.starts_with("25000 of 25010 findings written"), "{note}");
}

/// The advice of both unset-variable rules, followed as printed: the `optional="true"` line
/// pasted over the element; then the server's config has the value when the variable is set,
/// and no element (nor finding) when it is not. The variable is named as it is, not as the
/// message's "environment variable X".
#[test]
fn the_unset_variable_advice_works_pasted_as_printed() {
    for (rule, fixture, element, variable) in [
        ("unset-environment-variable-left-empty", "macro", "shard", "CHAUDIT_FIXTURE_SHARD"),
        ("unset-environment-variable", "unset", "max_server_memory_usage", "CHAUDIT_FIXTURE_MEMORY"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        support::copy_tree(&support::repo_root().join("rules/config").join(rule).join(fixture), dir.path());
        let (_, stdout, stderr) = support::chaudit(dir.path(), &["--config", "config.xml", "--format", "json"]);
        let report: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
        let finding =
            support::findings_of(&report, rule).into_iter().next().unwrap_or_else(|| panic!("{rule}: {stdout}"));
        let manual = finding["remediation"]["manual"].as_str().unwrap();
        assert!(manual.contains(&format!("Environment={variable}=...")), "{manual}");
        let pasted = manual.lines().find(|l| l.trim_start().starts_with(&format!("<{element} "))).unwrap();
        let config = std::fs::read_to_string(dir.path().join("config.xml")).unwrap();
        let written = format!("<{element} from_env=\"{variable}\"/>");
        assert!(config.contains(&written), "{config}");
        std::fs::write(dir.path().join("config.xml"), config.replace(&written, pasted.trim())).unwrap();
        let (_, stdout, _) = support::chaudit(dir.path(), &["--config", "config.xml", "--format", "json"]);
        let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        assert!(support::findings_of(&report, rule).is_empty(), "{rule}: {stdout}");
        let shown = std::process::Command::new(env!("CARGO_BIN_EXE_chaudit"))
            .args(["config", "show", "--show-secrets", "--config", "config.xml"])
            .current_dir(dir.path())
            .env(variable, "4000000007")
            .output()
            .unwrap();
        let shown = String::from_utf8_lossy(&shown.stdout);
        assert!(shown.contains(&format!(">4000000007</{element}>")), "{rule}: {shown}");
        let (_, unset, _) = support::chaudit(dir.path(), &["config", "show", "--config", "config.xml"]);
        assert!(!unset.contains(&format!("<{element}")), "{rule}: {unset}");
    }
}
